//! The catalogs of sequences: pg_sequence's rows (views.rs), pg_sequences and
//! information_schema.sequences, over both kinds of sequence: those of serial and identity
//! columns (start 1, step 1, their column type's range) and those of CREATE SEQUENCE.

use std::sync::Arc;

use super::values::text;
use super::{SystemView, ViewContext, ViewType};
use crate::catalog::{SequenceMeta, TableMeta};
use crate::types::{Datum, ObjectReference, SqlType};

/// One sequence as the catalogs show it.
pub struct SequenceRow {
    pub oid: u32,
    pub name: String,
    pub options: SequenceMeta,
    /// The table whose owner owns the sequence (its own name for CREATE SEQUENCE's).
    pub owner_table: String,
}

/// Every sequence the session sees, in OID order.
pub fn sequence_rows(c: &ViewContext<'_>) -> Vec<SequenceRow> {
    let mut rows = Vec::new();
    for table in &c.tables {
        for (position, column, sequence) in crate::catalog::column_sequences(table) {
            let Some(oid) = crate::catalog::sequence_oid(table.oid, position) else { continue };
            let owner = Some((table.name.clone(), column.name.clone()));
            let options = SequenceMeta::implicit(&column.ty, owner);
            rows.push(SequenceRow {
                oid,
                name: sequence.to_string(),
                options,
                owner_table: table.name.clone(),
            });
        }
    }
    for sequence in visible_sequences(c) {
        let Some(options) = sequence.sequence.clone() else { continue };
        let (oid, name) = (sequence.oid, sequence.name.clone());
        rows.push(SequenceRow { oid, owner_table: name.clone(), name, options });
    }
    rows.sort_by_key(|row| row.oid);
    rows
}

/// The sequences made by CREATE SEQUENCE that the session sees.
pub fn visible_sequences(c: &ViewContext<'_>) -> Vec<Arc<TableMeta>> {
    let mut sequences = c.catalog.sequence_objects();
    sequences.retain(|sequence| !c.session.hidden_tables.contains(&sequence.name));
    sequences
}

fn type_name(ty: &SqlType) -> &'static str {
    match ty {
        SqlType::Int2 => "smallint",
        SqlType::Int4 => "integer",
        _ => "bigint",
    }
}

/// The sequences' catalogs, after the user views' (system/mod.rs `all_views`).
pub static SEQUENCE_CATALOG: &[SystemView] = &[
    view!(&["pg_sequences"], |c| sequence_rows(c).into_iter().map(|row| (c, row)), |(c, row)| {
        schemaname: Name = text("public"),
        sequencename: Name = text(&row.name),
        sequenceowner: Name = owner_name(c, &row.owner_table),
        data_type: Regtype = Datum::Object(ObjectReference {
            oid: row.options.ty.oid(),
            text: Some(Arc::from(type_name(&row.options.ty))),
        }),
        start_value: Int8 = Datum::Int(row.options.start),
        min_value: Int8 = Datum::Int(row.options.minimum),
        max_value: Int8 = Datum::Int(row.options.maximum),
        increment_by: Int8 = Datum::Int(row.options.increment),
        cycle: Bool = Datum::Bool(row.options.cycle),
        cache_size: Int8 = Datum::Int(row.options.cache),
        last_value: Int8 = last_value(c, &row),
    }),
    view!(&["sequences"], |c| sequence_rows(c).into_iter().map(|row| (c, row)), |(c, row)| {
        sequence_catalog: Text = text(c.session.database),
        sequence_schema: Text = text("public"),
        sequence_name: Text = text(&row.name),
        data_type: Text = text(type_name(&row.options.ty)),
        numeric_precision: Int4 = Datum::Int(match row.options.ty { SqlType::Int2 => 16, SqlType::Int4 => 32, _ => 64 }),
        numeric_precision_radix: Int4 = Datum::Int(2),
        numeric_scale: Int4 = Datum::Int(0),
        start_value: Text = text(&row.options.start.to_string()),
        minimum_value: Text = text(&row.options.minimum.to_string()),
        maximum_value: Text = text(&row.options.maximum.to_string()),
        increment: Text = text(&row.options.increment.to_string()),
        cycle_option: Text = text(if row.options.cycle { "YES" } else { "NO" }),
    }),
];

/// pg_sequences.last_value: the last value nextval returned, NULL before the first call.
fn last_value(c: &ViewContext<'_>, row: &SequenceRow) -> Datum {
    if c.catalog.sequence_object(&row.name).is_some() {
        return match c.catalog.sequence_state(&row.name) {
            Ok(state) if state.is_called => Datum::Int(state.last_value),
            _ => Datum::Null,
        };
    }
    match c.catalog.sequence_last_value(&row.name) {
        Ok(Some(value)) => Datum::Int(value),
        _ => Datum::Null,
    }
}

/// The name of the role owning `table`'s sequence (views.rs `owner_name`, which this module
/// does not use: views.rs reads this one).
fn owner_name(c: &ViewContext<'_>, table: &str) -> Datum {
    let owner = c.catalog.table_acl(table).owner;
    let role = c.catalog.roles().into_iter().find(|role| role.oid == owner);
    role.map_or(Datum::Null, |role| text(&role.name))
}
