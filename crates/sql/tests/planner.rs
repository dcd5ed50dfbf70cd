//! The planner's choices as EXPLAIN shows them: the access path of a scan (clustering key,
//! the index with the longest equality prefix, or a full scan) and the join strategy (index
//! lookups when the inner side has a usable key, else a hash join on equalities, else a
//! nested loop). Runs without a server.

mod support;

use support::{rows, setup, with_session};
use tierdb_sql::{Datum, Session};

fn tables(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE t (id int PRIMARY KEY, a int, b int, c text)",
            "CREATE INDEX t_a ON t (a)",
            "CREATE INDEX t_a_b ON t (a, b)",
            "CREATE TABLE u (id int PRIMARY KEY, t_id int, c text)",
            "INSERT INTO t VALUES (1, 1, 1, 'x'), (2, 1, 2, 'y')",
            "INSERT INTO u VALUES (1, 1, 'x'), (2, 2, 'z')",
        ],
    );
}

/// The plan's first line (the top node) and whether some line contains `node`.
fn plan(session: &mut Session, sql: &str) -> Vec<String> {
    rows(session, &format!("EXPLAIN {sql}"))
        .unwrap_or_else(|error| panic!("EXPLAIN {sql}: {error}"))
        .into_iter()
        .map(|row| match &row[..] {
            [Datum::Text(line)] => line.trim().to_string(),
            other => panic!("a plan line: {other:?}"),
        })
        .collect()
}

fn assert_node(session: &mut Session, sql: &str, node: &str) {
    let lines = plan(session, sql);
    assert!(
        lines.iter().any(|line| line.starts_with(node)),
        "{sql}: expected {node} in {lines:#?}"
    );
}

#[test]
fn scans_choose_the_key_that_pins_most_columns() {
    with_session(|session| {
        tables(session);
        assert_node(session, "SELECT * FROM t WHERE id = 2", "Index Scan using t_pkey on t");
        assert_node(session, "SELECT * FROM t WHERE id > 1", "Index Scan using t_pkey on t");
        assert_node(session, "SELECT * FROM t WHERE a = 1", "Index Scan using t_a");
        assert_node(
            session,
            "SELECT * FROM t WHERE a = 1 AND b = 2",
            "Index Scan using t_a_b on t",
        );
        assert_node(session, "SELECT * FROM t WHERE c = 'x'", "Seq Scan on t");
        assert_node(session, "SELECT * FROM t WHERE b = 2", "Seq Scan on t");
        // The key prefers the clustering key on a tie.
        assert_node(
            session,
            "SELECT * FROM t WHERE id = 1 AND a = 1",
            "Index Scan using t_pkey on t",
        );
    });
}

#[test]
fn joins_choose_index_lookups_then_hash_then_nested_loop() {
    with_session(|session| {
        tables(session);
        assert_node(
            session,
            "SELECT * FROM u JOIN t ON t.id = u.t_id",
            "Nested Loop (index lookup)",
        );
        assert_node(session, "SELECT * FROM u JOIN t ON t.c = u.c", "Hash Join");
        assert_node(session, "SELECT * FROM u JOIN t ON t.c < u.c", "Nested Loop");
        let joined = rows(session, "SELECT u.id, t.c FROM u JOIN t ON t.id = u.t_id ORDER BY u.id");
        assert_eq!(
            joined.unwrap(),
            vec![
                vec![Datum::Int(1), Datum::Text("x".into())],
                vec![Datum::Int(2), Datum::Text("y".into())]
            ]
        );
    });
}

#[test]
fn a_filter_the_key_range_guarantees_is_not_tested_again() {
    with_session(|session| {
        tables(session);
        let lines = plan(session, "SELECT * FROM t WHERE id >= 1 AND id < 2");
        assert!(!lines.iter().any(|line| line.starts_with("Filter")), "{lines:#?}");
        let lines = plan(session, "SELECT * FROM t WHERE id >= 1 AND c = 'x'");
        assert!(lines.iter().any(|line| line.starts_with("Filter")), "{lines:#?}");
    });
}
