//! The planner's choices as EXPLAIN shows them: the access path of a scan (clustering key,
//! the index with the longest equality prefix, a list of keys, or a full scan) and the join
//! strategy (index lookups or a hash join on equalities, by cost; else a nested loop). Runs
//! without a server.

use crate::support;

use support::{explain_lines, rows, setup, sqlstate, with_session};
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

/// The plan's lines.
fn plan(session: &mut Session, sql: &str) -> Vec<String> {
    explain_lines(session, sql)
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

/// An IN list or an OR of equalities on a key's leading columns is read as one lookup per
/// distinct listed key (PostgreSQL's `= ANY` index scan), never a full scan; a repeated or
/// NULL list value adds no row.
#[test]
fn key_lists_read_each_listed_key_once() {
    with_session(|session| {
        tables(session);
        setup(
            session,
            &[
                "INSERT INTO t SELECT g, g % 7, g % 3, 'r' || g FROM generate_series(3, 500) g",
                "CREATE TABLE k (tenant int, id int, v text, PRIMARY KEY (tenant, id))",
                "INSERT INTO k SELECT g % 4, g, 'v' || g FROM generate_series(1, 200) g",
            ],
        );
        for (sql, node) in [
            ("SELECT * FROM t WHERE id IN (5, 1, 5, NULL, 900)", "Index Scan using t_pkey on t"),
            ("SELECT * FROM t WHERE id = 7 OR id = 3 OR id = 7", "Index Scan using t_pkey on t"),
            ("SELECT * FROM t WHERE a IN (2, 3) AND id > 400", "Index Scan using t_a"),
            ("SELECT * FROM k WHERE tenant = 1 AND id IN (5, 9, 13)", "Index Scan using k_pkey"),
            (
                "SELECT * FROM k WHERE (tenant = 1 AND id = 5) OR (tenant = 2 AND id = 6)",
                "Index Scan using k_pkey",
            ),
        ] {
            assert_node(session, sql, node);
            let lines = plan(session, sql);
            assert!(lines.iter().any(|line| line.contains("listed keys")), "{sql}: {lines:#?}");
        }
        let ids = |session: &mut Session, sql: &str| -> Vec<i64> {
            let rows = rows(session, sql).unwrap_or_else(|error| panic!("{sql}: {error}"));
            rows.into_iter()
                .map(|row| match row[0] {
                    Datum::Int(id) => id,
                    ref other => panic!("an id: {other:?}"),
                })
                .collect()
        };
        assert_eq!(ids(session, "SELECT id FROM t WHERE id IN (5, 1, 5, NULL, 900)"), [1, 5]);
        assert_eq!(ids(session, "SELECT id FROM t WHERE id = 7 OR id = 3 OR id = 7"), [3, 7]);
        let expected: Vec<i64> = (401..=500).filter(|id| [2, 3].contains(&(id % 7))).collect();
        let mut found = ids(session, "SELECT id FROM t WHERE a IN (2, 3) AND id > 400");
        found.sort_unstable();
        assert_eq!(found, expected);
        assert_eq!(
            ids(session, "SELECT id FROM k WHERE tenant = 1 AND id IN (5, 9, 13)"),
            [5, 9, 13]
        );
        assert_eq!(
            ids(
                session,
                "SELECT id FROM k WHERE (tenant = 1 AND id = 5) OR (tenant = 2 AND id = 6)"
            ),
            [5, 6]
        );
        // `= ANY (array)`, as drivers send a batch of keys; wider integers than the key's.
        for sql in [
            "SELECT id FROM t WHERE id = ANY ('{9,4,9,NULL}'::int[]) ORDER BY id",
            "SELECT id FROM t WHERE id = ANY ('{4,9}'::bigint[]) ORDER BY id",
            "SELECT id FROM t WHERE id IN (4::bigint, 9, 5000000000) ORDER BY id",
        ] {
            let lines = plan(session, sql);
            assert!(lines.iter().any(|line| line.contains("listed keys")), "{sql}: {lines:#?}");
            assert_eq!(ids(session, sql), [4, 9], "{sql}");
        }
        assert_eq!(ids(session, "SELECT count(*) FROM t WHERE id = ANY (NULL::int[])"), [0]);
        assert_eq!(
            ids(session, "SELECT id FROM k WHERE tenant = 2 AND id = ANY ('{2,6,7}') ORDER BY id"),
            [2, 6]
        );
        // A branch that pins no key column leaves the OR to the filter of a full scan.
        assert_node(session, "SELECT * FROM t WHERE id = 1 OR c = 'x'", "Seq Scan on t");
        assert_node(session, "SELECT * FROM t WHERE id NOT IN (1, 2)", "Seq Scan on t");
        // UPDATE and DELETE find their rows the same way.
        setup(session, &["UPDATE t SET c = 'listed' WHERE id IN (10, 20, 10)"]);
        assert_eq!(ids(session, "SELECT id FROM t WHERE c = 'listed' ORDER BY id"), [10, 20]);
        setup(session, &["DELETE FROM t WHERE id IN (10, 20) OR id = 30"]);
        assert_eq!(ids(session, "SELECT count(*) FROM t WHERE id IN (10, 20, 30)"), [0]);
    });
}

#[test]
fn joins_choose_index_lookups_then_hash_then_nested_loop() {
    with_session(|session| {
        tables(session);
        // Joins are ordered by cost (design 020): a few outer rows (one, by its key) look
        // the inner table up by its key rather than hashing all of it.
        assert_node(
            session,
            "SELECT * FROM u JOIN t ON t.id = u.t_id WHERE u.id = 1",
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

/// INSERT, UPDATE and DELETE show their own node above the source plan, and INSERT ... ON
/// CONFLICT its resolution and arbiter indexes, in PostgreSQL's layout.
#[test]
fn data_modifying_statements_show_their_node_and_arbiters() {
    with_session(|session| {
        tables(session);
        setup(session, &["CREATE UNIQUE INDEX t_c ON t (c)"]);
        let lines = plan(
            session,
            "INSERT INTO t VALUES (3, 1, 1, 'q') ON CONFLICT (id) DO UPDATE SET a = t.a + 1",
        );
        assert_eq!(
            lines[..3],
            ["Insert on t", "Conflict Resolution: UPDATE", "Conflict Arbiter Indexes: t_pkey"]
        );
        assert!(lines[3].starts_with("->  Values Scan"), "{lines:#?}");
        let lines = plan(session, "INSERT INTO t VALUES (3, 1, 1, 'q') ON CONFLICT DO NOTHING");
        assert_eq!(lines[..2], ["Insert on t", "Conflict Resolution: NOTHING"]);
        let lines = plan(session, "INSERT INTO t VALUES (3, 1, 1, 'q') ON CONFLICT (c) DO NOTHING");
        assert_eq!(lines[2], "Conflict Arbiter Indexes: t_c");
        assert_eq!(
            plan(session, "UPDATE t SET a = 2 WHERE id = 1")[..2],
            ["Update on t", "->  Index Scan using t_pkey on t"]
        );
        assert_eq!(plan(session, "DELETE FROM t WHERE id = 1")[0], "Delete on t");
        // EXPLAIN ANALYZE of an upsert runs it.
        rows(session, "EXPLAIN ANALYZE INSERT INTO t VALUES (1, 9, 9, 'z') ON CONFLICT (id) DO UPDATE SET b = 7")
            .unwrap();
        assert_eq!(
            rows(session, "SELECT b FROM t WHERE id = 1").unwrap(),
            vec![vec![Datum::Int(7)]]
        );
    });
}

/// EXPLAIN options: the ones that only change details tierdb's text does not have are
/// accepted, FORMAT other than TEXT is 0A000, an unknown option is PostgreSQL's 42601.
#[test]
fn explain_options_are_checked() {
    with_session(|session| {
        tables(session);
        for sql in ["EXPLAIN (COSTS OFF, VERBOSE) SELECT 1", "EXPLAIN (FORMAT TEXT) SELECT 1"] {
            rows(session, sql).unwrap_or_else(|error| panic!("{sql}: {error}"));
        }
        let error = rows(session, "EXPLAIN (FORMAT JSON) SELECT 1").unwrap_err();
        assert_eq!(error.sqlstate, "0A000", "{error}");
        assert!(error.message.contains("FORMAT JSON"), "{error}");
        assert_eq!(sqlstate(session, "EXPLAIN (FOO) SELECT 1"), "42601");
    });
}
