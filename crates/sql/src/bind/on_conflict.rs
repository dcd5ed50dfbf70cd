//! INSERT ... ON CONFLICT binding: the arbiters (PostgreSQL's unique index inference from a
//! column list, or a constraint named by ON CONSTRAINT) and the DO UPDATE SET / WHERE over
//! the existing row and EXCLUDED, the row proposed for insertion.

use super::assignments::bind_assignments;
use super::*;
use crate::catalog::{IndexKind, IndexMeta};
use crate::plan::{ConflictAction, OnConflictPlan};
use tierdb_engine::ConflictArbiters;

pub(crate) fn bind_on_conflict(
    binder: &mut Binder<'_>,
    table: &BoundTable,
    alias: Option<&str>,
    on_conflict: &ast::OnConflict,
) -> Result<OnConflictPlan> {
    let (arbiters, arbiter_names) = match &on_conflict.conflict_target {
        None => {
            if matches!(on_conflict.action, ast::OnConflictAction::DoUpdate(_)) {
                return Err(SqlError::syntax(
                    "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                ));
            }
            (ConflictArbiters::Every, Vec::new())
        }
        Some(ast::ConflictTarget::Columns(columns)) => infer_arbiters(table, columns)?,
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let name = object_name(name)?;
            let index =
                unique_indexes(table).find(|index| index.name == name).ok_or_else(|| {
                    SqlError::new(
                        "42704",
                        format!(
                            "constraint \"{name}\" for table \"{}\" does not exist",
                            table.name
                        ),
                    )
                })?;
            arbiters_of([index])
        }
    };
    let action = match &on_conflict.action {
        ast::OnConflictAction::DoNothing => ConflictAction::Nothing,
        ast::OnConflictAction::DoUpdate(update) => {
            // The existing row under the target's name (or alias), then EXCLUDED.
            let (scan, existing) = binder.table_scope(table, alias);
            let scope = existing.concat(&Scope::from_plan(&scan, Some("excluded")));
            let assignments = bind_assignments(binder, table, &update.assignments, &scope)?;
            let filter = match &update.selection {
                Some(selection) => Some(binder.coerced(selection, &scope, &SqlType::Bool)?),
                None => None,
            };
            ConflictAction::Update { assignments, filter }
        }
    };
    Ok(OnConflictPlan { arbiters, arbiter_names, action })
}

/// The unique indexes whose columns are exactly the target's (PostgreSQL's inference: any
/// order, every such index is an arbiter); 42P10 if there is none.
fn infer_arbiters(
    table: &BoundTable,
    columns: &[ast::Ident],
) -> Result<(ConflictArbiters, Vec<String>)> {
    let mut positions = Vec::with_capacity(columns.len());
    for column in columns {
        let name = ident(column);
        let position = table
            .column_index(&name)
            .ok_or_else(|| SqlError::new("42703", format!("column \"{name}\" does not exist")))?;
        if !positions.contains(&position) {
            positions.push(position);
        }
    }
    positions.sort_unstable();
    let matching: Vec<&IndexMeta> = unique_indexes(table)
        .filter(|index| {
            let mut columns = index.columns.clone();
            columns.sort_unstable();
            columns.dedup();
            columns == positions
        })
        .collect();
    if matching.is_empty() {
        return Err(SqlError::new(
            "42P10",
            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
        ));
    }
    Ok(arbiters_of(matching))
}

/// The unique indexes an ON CONFLICT target may name or infer. A partial unique index is
/// not one of them: PostgreSQL infers it only from `ON CONFLICT (columns) WHERE predicate`,
/// which tierdb's parser does not read (without the WHERE, PostgreSQL's 42P10 too).
fn unique_indexes(table: &BoundTable) -> impl Iterator<Item = &IndexMeta> {
    table.indexes.iter().filter(|index| {
        index.unique
            && index.predicate.is_none()
            && matches!(index.kind, IndexKind::Clustered | IndexKind::Secondary)
    })
}

/// The engine's arbiters for these unique indexes (the clustered one is the engine's primary
/// key, the others are engine indexes of the same name), and all their names.
fn arbiters_of<'a>(
    indexes: impl IntoIterator<Item = &'a IndexMeta>,
) -> (ConflictArbiters, Vec<String>) {
    let mut primary_key = false;
    let mut names = Vec::new();
    let mut all = Vec::new();
    for index in indexes {
        all.push(index.name.clone());
        match index.kind {
            IndexKind::Clustered => primary_key = true,
            _ => names.push(index.name.clone()),
        }
    }
    (ConflictArbiters::Named { primary_key, indexes: names }, all)
}
