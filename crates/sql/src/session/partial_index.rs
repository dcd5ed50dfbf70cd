//! Partial indexes (CREATE INDEX ... WHERE, docs/design/017-constraints.md): the predicate
//! bound at CREATE INDEX and stored with the index's definition; bound again when the first
//! session opens and registered with the engine, which indexes only the rows it accepts.

use std::sync::Arc;

use crate::bind::{bind_stored_predicate, predicate_meta, Binder, Namespace};
use crate::catalog::{Catalog, IndexMeta, PredicateMeta, TableMeta};
use crate::error::Result;
use crate::exec::BoundIndexPredicate;
use crate::types::SqlType;
use sqlparser::ast;

/// Registers every partial index's predicate with the engine, once per catalog (the first
/// session does it, before any statement can write a table).
pub(super) fn register_all(catalog: &Arc<Catalog>) {
    catalog.index_predicates_registered().call_once(|| {
        for table in catalog.tables() {
            for index in table.indexes.iter().filter(|index| index.predicate.is_some()) {
                register(catalog, &table, index);
            }
        }
    });
}

/// Registers the predicate of `index` (of `table`) with the engine; for an index without
/// one, removes any left under its name (a dropped partial index's). A predicate that no
/// longer binds is registered as its error, so writes fail rather than index every row.
pub(super) fn register(catalog: &Arc<Catalog>, table: &TableMeta, index: &IndexMeta) {
    let Some(predicate) = &index.predicate else {
        catalog.engine().set_index_predicate(&index.name, None);
        return;
    };
    let mut binder = Binder::new(catalog, Namespace::new("", "public"), Vec::new());
    let expr = bind_stored_predicate(&mut binder, table, predicate).map_err(|error| {
        format!("predicate of index \"{}\" does not bind: {}", index.name, error.message)
    });
    let types: Vec<SqlType> = table.columns.iter().map(|column| column.ty.clone()).collect();
    let bound = BoundIndexPredicate { expr, types, catalog: Arc::downgrade(catalog) };
    catalog.engine().set_index_predicate(&index.name, Some(Arc::new(bound)));
}

/// The predicate of a new index on `table` (its PostgreSQL errors now).
pub(super) fn new_predicate(
    catalog: &Catalog,
    namespace: Namespace,
    table: &TableMeta,
    expr: &ast::Expr,
) -> Result<PredicateMeta> {
    let mut binder = Binder::new(catalog, namespace, Vec::new());
    predicate_meta(&mut binder, table, expr)
}

/// 0A000 for ALTER TABLE ... `what` (RENAME or DROP COLUMN) on a table with a partial
/// index: its stored predicate names columns and its bound filter reads them by position,
/// and neither is rewritten yet.
pub(super) fn refuse_column_change(catalog: &Catalog, table: &str, what: &str) -> Result<()> {
    let Some(meta) = catalog.table(table) else { return Ok(()) };
    match meta.indexes.iter().find(|index| index.predicate.is_some()) {
        Some(index) => Err(crate::error::SqlError::unsupported(format!(
            "ALTER TABLE ... {what} on a table with a partial index is not supported (index \"{}\")",
            index.name
        ))),
        None => Ok(()),
    }
}
