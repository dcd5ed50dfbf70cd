//! Sessions for tests that run the SQL layer without a server: an engine on a temporary
//! directory, one session on a thread with a connection's stack.

#![allow(dead_code)] // Each test file uses its own part of the helpers.

use std::sync::Arc;

use tierdb_engine::Engine;
use tierdb_sql::{Catalog, Datum, Output, Session, SqlError};
use tierdb_storage::{PageStore, StoreConfig};

/// The server's connection-thread stack (crates/server/src/server.rs CONNECTION_STACK_BYTES).
pub const CONNECTION_STACK_BYTES: usize = 64 << 20;

/// Runs `body` with a fresh session on a thread with a connection's stack.
pub fn with_session(body: impl FnOnce(&mut Session) + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(move || {
            let directory = tempfile::tempdir().unwrap();
            let mut session = open_session(directory.path(), 1);
            body(&mut session);
        })
        .unwrap()
        .join()
        .expect("the session thread ends without a panic or an overflow");
}

/// An engine, catalog and session (backend id `id`) on `directory`, opened as the server
/// opens them: at its first start the session's user is made the superuser.
pub fn open_session(directory: &std::path::Path, id: i32) -> Session {
    let config = StoreConfig::local(directory).unwrap();
    let engine = Engine::open(Arc::new(PageStore::open(config).unwrap())).unwrap();
    let catalog = Catalog::open(engine).unwrap();
    catalog.bootstrap_superuser("tierdb", None).unwrap();
    let statistics = Arc::clone(catalog.statement_stats());
    Session::new(catalog, statistics, "tierdb", "tierdb", id)
}

/// The output of a single statement.
pub fn run(session: &mut Session, sql: &str) -> Result<Output, SqlError> {
    let mut outputs = session.execute(sql);
    assert_eq!(outputs.len(), 1, "one statement: {}", &sql[..sql.len().min(80)]);
    outputs.pop().unwrap()
}

/// The rows of a query.
pub fn rows(session: &mut Session, sql: &str) -> Result<Vec<Vec<Datum>>, SqlError> {
    match run(session, sql)? {
        Output::Rows { rows, .. } => Ok(rows),
        other => panic!("expected rows from {sql}, got {other:?}"),
    }
}

/// The lines of `EXPLAIN sql`, trimmed.
pub fn explain_lines(session: &mut Session, sql: &str) -> Vec<String> {
    rows(session, &format!("EXPLAIN (COSTS OFF) {sql}"))
        .unwrap_or_else(|error| panic!("EXPLAIN {sql}: {error}"))
        .into_iter()
        .map(|row| match &row[..] {
            [Datum::Text(line)] => line.trim().to_string(),
            other => panic!("a plan line: {other:?}"),
        })
        .collect()
}

/// The single value of a one-row, one-column query.
pub fn value(session: &mut Session, sql: &str) -> Result<Datum, SqlError> {
    let mut rows = rows(session, sql)?;
    assert_eq!(rows.len(), 1, "one row");
    let mut row = rows.pop().unwrap();
    assert_eq!(row.len(), 1, "one column");
    Ok(row.pop().unwrap())
}

/// Runs statements that must succeed (setup).
pub fn setup(session: &mut Session, statements: &[&str]) {
    for sql in statements {
        run(session, sql).unwrap_or_else(|error| panic!("{sql}: {error}"));
    }
}

/// The SQLSTATE a statement fails with.
pub fn sqlstate(session: &mut Session, sql: &str) -> &'static str {
    match run(session, sql) {
        Ok(output) => panic!("{sql} succeeded: {output:?}"),
        Err(error) => error.sqlstate,
    }
}

/// Another session on the same catalog (and statement statistics), as role `user`.
pub fn session_as(session: &Session, user: &str) -> Session {
    let statistics = Arc::clone(session.catalog().statement_stats());
    Session::new(Arc::clone(session.catalog()), statistics, "tierdb", user, 2)
}

/// The error of a statement that must fail: (SQLSTATE, message).
pub fn message(session: &mut Session, sql: &str) -> (&'static str, String) {
    let error = run(session, sql).expect_err(sql);
    (error.sqlstate, error.message)
}

/// EXPLAIN's lines of `sql`, joined.
pub fn explain(session: &mut Session, sql: &str) -> String {
    let rows = rows(session, &format!("EXPLAIN {sql}")).unwrap();
    rows.iter()
        .map(|row| match &row[0] {
            Datum::Text(line) => line.clone(),
            other => panic!("plan line {other:?}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first column of `sql`'s rows, integers.
pub fn ids(session: &mut Session, sql: &str) -> Vec<i64> {
    rows(session, sql)
        .unwrap()
        .into_iter()
        .map(|row| match row[0] {
            Datum::Int(id) => id,
            ref other => panic!("id {other:?}"),
        })
        .collect()
}
