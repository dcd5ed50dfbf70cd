//! Schemas tierdb does not have are refused, never accepted and ignored: CREATE SCHEMA of a
//! new schema and DROP SCHEMA are 0A000 (PostgreSQL would create or drop it), COPY resolves
//! qualified names like every other statement, and a prepared statement binds its names
//! anew when search_path changes. tests/slt/schemas.slt holds what matches PostgreSQL.

use crate::support;

use support::{rows, run, setup, sqlstate, with_session};
use tierdb_sql::{Datum, Session};

fn message(session: &mut Session, sql: &str) -> String {
    match run(session, sql) {
        Ok(output) => panic!("{sql} succeeded: {output:?}"),
        Err(error) => format!("{} {}", error.sqlstate, error.message),
    }
}

#[test]
fn new_schemas_are_refused_and_never_created() {
    with_session(|session| {
        let refused = message(session, "CREATE SCHEMA tenant1");
        assert!(refused.starts_with("0A000 CREATE SCHEMA is not supported"), "{refused}");
        assert_eq!(sqlstate(session, "CREATE SCHEMA IF NOT EXISTS tenant1"), "0A000");
        // Nothing was created: the tenant's tables cannot land in public under its name.
        assert_eq!(sqlstate(session, "CREATE TABLE tenant1.users (id int)"), "3F000");
        assert_eq!(sqlstate(session, "SELECT * FROM tenant1.users"), "42P01");
        let refused = message(session, "DROP SCHEMA public");
        assert!(refused.starts_with("0A000 DROP SCHEMA is not supported"), "{refused}");
        assert_eq!(sqlstate(session, "DROP SCHEMA IF EXISTS pg_catalog"), "0A000");
        assert_eq!(sqlstate(session, "CREATE TABLE information_schema.t (x int)"), "0A000");
        let namespaces =
            rows(session, "SELECT nspname FROM pg_namespace ORDER BY nspname").unwrap();
        let names: Vec<Datum> = namespaces.into_iter().flatten().collect();
        assert_eq!(
            names,
            ["information_schema", "pg_catalog", "public"].map(|name| Datum::Text(name.into()))
        );
    });
}

#[test]
fn copy_resolves_qualified_names() {
    with_session(|session| {
        setup(session, &["CREATE TABLE c (id int PRIMARY KEY)"]);
        assert_eq!(sqlstate(session, "COPY nosuch.c FROM STDIN"), "3F000");
        assert_eq!(sqlstate(session, "COPY nosuch.c TO STDOUT"), "3F000");
        assert_eq!(sqlstate(session, "COPY other.public.c TO STDOUT"), "0A000");
        run(session, "COPY public.c TO STDOUT").expect("public.c is c");
    });
}

#[test]
fn prepared_statements_bind_anew_when_search_path_changes() {
    with_session(|session| {
        setup(session, &["CREATE TABLE p (id int PRIMARY KEY)", "INSERT INTO p VALUES (1)"]);
        let mut prepared = session.prepare("SELECT count(*) FROM p", &[]).unwrap();
        session.execute_prepared(&mut prepared, &[]).expect("p is on the path");
        run(session, "SET search_path = nosuch").unwrap();
        let error = session.execute_prepared(&mut prepared, &[]).unwrap_err();
        assert_eq!(error.sqlstate, "42P01", "{error:?}");
        run(session, "RESET search_path").unwrap();
        session.execute_prepared(&mut prepared, &[]).expect("public is back on the path");
    });
}

/// DROP TABLE in a block drops at COMMIT and is undone by ROLLBACK; DROP then CREATE of one
/// name in a block (a migration that recreates a table) works, the drop then happening at
/// the CREATE. TRUNCATE in a block rolls back. (tests/slt/transactions.slt checks the same
/// against PostgreSQL.)
#[test]
fn drop_and_truncate_in_a_block_roll_back() {
    with_session(|session| {
        setup(session, &["CREATE TABLE k (id int PRIMARY KEY)", "INSERT INTO k VALUES (1), (2)"]);
        let count = |session: &mut Session| rows(session, "SELECT count(*) FROM k").unwrap();
        let two = vec![vec![Datum::Int(2)]];
        setup(session, &["BEGIN", "DROP TABLE k"]);
        assert_eq!(sqlstate(session, "INSERT INTO k VALUES (3)"), "42P01");
        setup(session, &["ROLLBACK"]);
        assert_eq!(count(session), two);
        setup(session, &["BEGIN", "TRUNCATE k", "ROLLBACK"]);
        assert_eq!(count(session), two);
        setup(session, &["BEGIN", "DROP TABLE k", "CREATE TABLE k (id int, note text)"]);
        setup(session, &["INSERT INTO k VALUES (7, 'new')", "COMMIT"]);
        assert_eq!(
            rows(session, "SELECT id, note FROM k").unwrap(),
            vec![vec![Datum::Int(7), Datum::Text("new".into())]]
        );
        setup(session, &["BEGIN", "DROP TABLE k", "COMMIT"]);
        assert_eq!(sqlstate(session, "SELECT * FROM k"), "42P01");
    });
}
