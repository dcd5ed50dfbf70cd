//! Data-modifying statements in WITH where the slt files cannot reach: COPY (query) TO
//! under READ ONLY (PostgreSQL 15's 25006 naming the main statement's command, checked with
//! psql), COPY (query) TO running the parts once outside it, and a FOREIGN KEY chain whose
//! checks wait for the end of the whole statement.

use crate::support;

use support::{message, rows, run, setup, value, with_session};
use tierdb_sql::{Datum, Output};

const READ_ONLY: &str = "25006";

#[test]
fn copy_of_a_writing_query_is_refused_in_a_read_only_transaction() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (a int)", "BEGIN READ ONLY"]);
        let copy_with = "COPY (WITH x AS (INSERT INTO t VALUES (1) RETURNING a) SELECT * FROM x) \
                         TO STDOUT";
        let expected = (READ_ONLY, "cannot execute SELECT in a read-only transaction".into());
        assert_eq!(message(session, copy_with), expected);
        setup(session, &["ROLLBACK", "BEGIN READ ONLY"]);
        let copy_insert = "COPY (INSERT INTO t VALUES (2) RETURNING a) TO STDOUT";
        let expected = (READ_ONLY, "cannot execute INSERT in a read-only transaction".into());
        assert_eq!(message(session, copy_insert), expected);
        setup(session, &["ROLLBACK", "SET default_transaction_read_only = on"]);
        assert_eq!(message(session, copy_with).0, READ_ONLY);
        setup(session, &["RESET default_transaction_read_only"]);
        assert_eq!(value(session, "SELECT count(*) FROM t").unwrap(), Datum::Int(0));
        match run(session, copy_with).expect("COPY runs the part") {
            Output::CopyOut { .. } | Output::Command { .. } => {}
            other => panic!("COPY's output: {other:?}"),
        }
        assert_eq!(rows(session, "SELECT a FROM t").unwrap(), [[Datum::Int(1)]]);
    });
}

/// A chain parent <- middle <- leaf, filled leaf first by one statement: every check waits
/// for the end of the statement; one row left dangling still fails it (23503), whole.
#[test]
fn foreign_key_checks_of_every_part_run_at_the_end_of_the_statement() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE parent (id int PRIMARY KEY)",
                "CREATE TABLE middle (id int PRIMARY KEY, parent int REFERENCES parent)",
                "CREATE TABLE leaf (id int PRIMARY KEY, middle int REFERENCES middle \
                 ON DELETE CASCADE)",
            ],
        );
        let fill = "WITH l AS (INSERT INTO leaf VALUES (100, 10) RETURNING id), \
                    m AS (INSERT INTO middle VALUES (10, 1) RETURNING id) \
                    INSERT INTO parent VALUES (1)";
        setup(session, &[fill]);
        let dangling = "WITH l AS (INSERT INTO leaf VALUES (200, 20) RETURNING id), \
                        m AS (INSERT INTO middle VALUES (20, 2) RETURNING id) \
                        SELECT count(*) FROM l";
        assert_eq!(message(session, dangling).0, "23503");
        assert_eq!(value(session, "SELECT count(*) FROM leaf").unwrap(), Datum::Int(1));
        // The cascade from middle runs after the main query, which still sees the leaf.
        let cascade = "WITH d AS (DELETE FROM middle WHERE id = 10 RETURNING id), \
                       p AS (DELETE FROM parent WHERE id = 1 RETURNING id) \
                       SELECT count(*) FROM leaf";
        assert_eq!(value(session, cascade).unwrap(), Datum::Int(1));
        assert_eq!(value(session, "SELECT count(*) FROM leaf").unwrap(), Datum::Int(0));
    });
}
