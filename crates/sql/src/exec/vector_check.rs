//! `tierdb_check_vector_index(regclass)`: the engine's check of an HNSW index against its
//! table (`Transaction::check_vector_index`) under the statement's snapshot, as one jsonb
//! object of counts and the violations found (an empty array for a sound index), so that
//! a client sees the whole report rather than the first problem as an error.

use std::sync::Arc;

use tierdb_engine::{Transaction, VectorIndexCheck};

use crate::catalog::{IndexKind, Privilege};
use crate::error::{Result, SqlError};
use crate::system::SessionInfo;
use crate::types::{Datum, Jsonb};

/// Runs the check of the HNSW index with OID `oid`: 42P01 for no relation with that OID,
/// 42809 for a relation that is not an HNSW index.
pub fn check_vector_index(
    oid: i64,
    session: &SessionInfo<'_>,
    txn: &mut Transaction,
) -> Result<Datum> {
    let no_relation = || SqlError::new("42P01", format!("could not open relation with OID {oid}"));
    let oid = u32::try_from(oid).map_err(|_| no_relation())?;
    let tables = session.catalog.tables();
    for table in tables.iter().filter(|table| !session.hidden_tables.contains(&table.name)) {
        if table.oid == oid {
            return Err(not_hnsw(&table.name));
        }
        let Some(index) = table.indexes.iter().find(|index| index.oid == oid) else { continue };
        if !matches!(index.kind, IndexKind::Hnsw(options) if !options.ivfflat) {
            return Err(not_hnsw(&index.name));
        }
        require_select(session, &table.name)?;
        let check = txn.check_vector_index(table.name.as_str(), &index.name)?;
        return Ok(Datum::Jsonb(Arc::new(report(&check))));
    }
    Err(no_relation())
}

/// The check reads every row of the table (violations name row keys): the session's user
/// needs SELECT on it (42501), as a query of the table does; a superuser has it.
fn require_select(session: &SessionInfo<'_>, table: &str) -> Result<()> {
    let role = session.catalog.role(session.user);
    if role.as_ref().is_some_and(|role| role.superuser) {
        return Ok(());
    }
    let oid = role.map_or(u32::MAX, |role| role.oid);
    if session.catalog.table_acl(table).allows(oid, Privilege::Select) {
        return Ok(());
    }
    Err(SqlError::new("42501", format!("permission denied for table {table}")))
}

fn not_hnsw(name: &str) -> SqlError {
    SqlError::new("42809", format!("\"{name}\" is not an hnsw index"))
}

fn number(value: u64) -> Jsonb {
    Jsonb::Number(value.to_string())
}

/// The report as jsonb: the engine's counts, the graph's, and the violations' texts.
fn report(check: &VectorIndexCheck) -> Jsonb {
    let graph = &check.graph;
    let violations = check.violations.iter().map(|text| Jsonb::String(text.clone())).collect();
    Jsonb::object(vec![
        ("node_count".into(), number(graph.node_count)),
        ("nodes_reached".into(), number(graph.nodes_reached)),
        ("free_pages".into(), number(graph.free_pages)),
        ("nodes_reached_layer0".into(), number(graph.nodes_reached_layer0)),
        ("top_level".into(), number(u64::from(graph.top_level))),
        ("links".into(), number(graph.links)),
        ("rows_indexed".into(), number(check.rows_indexed)),
        ("rows_missing".into(), number(check.rows_missing)),
        ("entries_live".into(), number(check.entries_live)),
        ("entries_dead".into(), number(check.entries_dead)),
        ("violation_count".into(), number(check.violation_count)),
        ("violations".into(), Jsonb::Array(violations)),
    ])
}
