//! information_schema's views: tables, columns (information_columns.rs), the constraint
//! views and schemata, after the pg_catalog views of views.rs (system/mod.rs `all_views`,
//! whose order numbers the views' OIDs).

use super::values::{columns, text};
use super::views::{constraints, count, Constraint, NAMESPACE_PUBLIC};
use super::{SystemView, ViewType};
use crate::catalog::TableMeta;
use crate::types::Datum;

/// The views, after `VIEWS`.
pub(super) static INFORMATION_VIEWS: &[SystemView] = &[
    view!(&["tables"], |c| c.tables.iter().map(|table| (c.session, table)), |(session, table)| {
        table_catalog: Text = text(session.database),
        table_schema: Text = text(&crate::catalog::relation_schema(&table.name)),
        table_name: Text = text(crate::catalog::relation_name(&table.name)),
        table_type: Text = text(match (table.is_view(), crate::catalog::split_temp_name(&table.name)) {
            (true, _) => "VIEW",
            (false, Some(_)) => "LOCAL TEMPORARY",
            (false, None) => "BASE TABLE",
        }),
    }),
    super::information_columns::COLUMNS,
    // PostgreSQL 15 lists each NOT NULL column as a CHECK constraint in these two, named
    // `<namespace oid>_<table oid>_<attnum>_not_null`.
    view!(&["table_constraints"], |c| information_constraints(&c.tables).into_iter().map(|row| (c.session, row)), |(session, (name, table, constraint_type, _))| {
        constraint_catalog: Text = text(session.database),
        constraint_schema: Text = text("public"),
        constraint_name: Text = text(&name),
        table_catalog: Text = text(session.database),
        table_schema: Text = text("public"),
        table_name: Text = text(&table.name),
        constraint_type: Text = text(constraint_type),
        is_deferrable: Text = text("NO"),
        initially_deferred: Text = text("NO"),
        enforced: Text = text("YES"),
        nulls_distinct: Text = if constraint_type == "UNIQUE" { text("YES") } else { Datum::Null },
    }),
    view!(&["check_constraints"], |c| information_constraints(&c.tables).into_iter().filter_map(|(name, _, _, clause)| clause.map(|clause| (c.session, name, clause))), |(session, name, clause)| {
        constraint_catalog: Text = text(session.database),
        constraint_schema: Text = text("public"),
        constraint_name: Text = text(&name),
        check_clause: Text = text(&clause),
    }),
    view!(&["key_column_usage"], |c| key_columns(&c.tables).into_iter().map(|row| (c.session, row)), |(session, (constraint, table, column, ordinal, unique_position))| {
        constraint_catalog: Text = text(session.database),
        constraint_schema: Text = text("public"),
        constraint_name: Text = text(constraint),
        table_catalog: Text = text(session.database),
        table_schema: Text = text("public"),
        table_name: Text = text(&table.name),
        column_name: Text = text(&table.columns[column].name),
        ordinal_position: Int4 = count(ordinal),
        position_in_unique_constraint: Int4 = unique_position.map_or(Datum::Null, count),
    }),
    view!(&["referential_constraints"], |c| constraints(&c.tables).into_iter().filter_map(|constraint| constraint.foreign().map(|(key, referenced)| (c.session, key, referenced))), |(session, key, referenced)| {
        constraint_catalog: Text = text(session.database),
        constraint_schema: Text = text("public"),
        constraint_name: Text = text(&key.name),
        unique_constraint_catalog: Text = text(session.database),
        unique_constraint_schema: Text = text("public"),
        unique_constraint_name: Text = referenced.and_then(|referenced| referenced.referenced_index(&key.referenced_columns)).map_or(Datum::Null, |index| text(&index.name)),
        match_option: Text = text(if key.match_full { "FULL" } else { "NONE" }),
        update_rule: Text = text(key.on_update.words()),
        delete_rule: Text = text(key.on_delete.words()),
    }),
    view!(&["schemata"], |c| ["pg_catalog", "public", "information_schema"].map(|schema| (c.session, schema)), |(session, schema)| {
        catalog_name: Text = text(session.database),
        schema_name: Text = text(schema),
        schema_owner: Text = text(session.user),
    }),
];

/// information_schema's constraints: name, table, constraint_type and, for a CHECK, its
/// check_clause; NOT NULL columns included as PostgreSQL 15 includes them.
fn information_constraints(
    tables: &[std::sync::Arc<TableMeta>],
) -> Vec<(String, &TableMeta, &'static str, Option<String>)> {
    let mut rows: Vec<(String, &TableMeta, &'static str, Option<String>)> = constraints(tables)
        .into_iter()
        .map(|constraint| {
            let clause = constraint.check().map(|check| format!("({})", check.definition));
            (constraint.name().to_string(), constraint.table(), constraint.type_name(), clause)
        })
        .collect();
    for (table, position, column) in columns(tables).filter(|(_, _, column)| !column.nullable) {
        let name = format!("{NAMESPACE_PUBLIC}_{}_{}_not_null", table.oid, position + 1);
        let clause =
            format!("{} IS NOT NULL", crate::plan::deparse::quote_identifier(&column.name));
        rows.push((name, table, "CHECK", Some(clause)));
    }
    rows
}

/// information_schema.key_column_usage's rows: each column of a primary key, UNIQUE or
/// FOREIGN KEY constraint (constraint, table, column position, 1-based ordinal, and for a
/// FOREIGN KEY the referenced column's ordinal in the unique key it relies on).
fn key_columns(tables: &[std::sync::Arc<TableMeta>]) -> KeyColumnRows<'_> {
    let mut rows = Vec::new();
    for constraint in constraints(tables) {
        let table = constraint.table();
        match &constraint {
            Constraint::Key(_, index) => {
                for (ordinal, &column) in index.columns.iter().enumerate() {
                    rows.push((constraint.name(), table, column, ordinal + 1, None));
                }
            }
            Constraint::Foreign(_, key, referenced) => {
                let unique = referenced
                    .and_then(|referenced| referenced.referenced_index(&key.referenced_columns));
                for (ordinal, (&column, target)) in
                    key.columns.iter().zip(&key.referenced_columns).enumerate()
                {
                    let position = unique.and_then(|index| {
                        index.columns.iter().position(|known| known == target).map(|at| at + 1)
                    });
                    rows.push((constraint.name(), table, column, ordinal + 1, position));
                }
            }
            Constraint::Check(..) => {}
        }
    }
    rows
}

type KeyColumnRows<'a> = Vec<(&'a str, &'a TableMeta, usize, usize, Option<usize>)>;
