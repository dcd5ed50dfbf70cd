//! Partial indexes (CREATE INDEX ... WHERE, docs/design/017-constraints.md): rows enter the
//! index only when the predicate is true, through INSERT, UPDATE (moving in and out), DELETE
//! and the build on a populated table; a UNIQUE partial index constrains only those rows;
//! plans read the index only when the query's WHERE contains the predicate; the predicate
//! survives a restart of the engine (bound again at load); PostgreSQL's errors for what a
//! predicate may not hold.

use crate::support;

use support::{
    explain_lines, ids, message, open_session, setup, with_session, CONNECTION_STACK_BYTES,
};
use tierdb_sql::Session;

fn uses_index(session: &mut Session, sql: &str, index: &str) -> bool {
    explain_lines(session, sql).iter().any(|line| line.contains(&format!("using {index}")))
}

#[test]
fn rows_enter_and_leave_the_index_with_the_predicate() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE t (id int PRIMARY KEY, email text, deleted boolean, n int)",
                "INSERT INTO t SELECT i, 'e' || (i % 50), i % 3 = 0, i FROM generate_series(1, 300) i",
                "CREATE INDEX t_n_live ON t (n) WHERE NOT deleted",
                "CREATE UNIQUE INDEX t_email_live ON t (email) WHERE id > 250",
                "ANALYZE t",
            ],
        );
        let live = "SELECT id FROM t WHERE n < 10 AND NOT deleted ORDER BY id";
        assert!(uses_index(session, live, "t_n_live"), "{:?}", explain_lines(session, live));
        assert_eq!(ids(session, live), vec![1, 2, 4, 5, 7, 8]);
        // Without the predicate among its conjuncts a query must not read the index.
        let all = "SELECT id FROM t WHERE n < 10 ORDER BY id";
        assert!(!uses_index(session, all, "t_n_live"));
        assert_eq!(ids(session, all), (1..10).collect::<Vec<i64>>());
        // UPDATE moves rows out of and into the predicate; DELETE removes them.
        setup(
            session,
            &[
                "UPDATE t SET deleted = true WHERE id = 1",
                "UPDATE t SET deleted = false WHERE id = 3",
                "DELETE FROM t WHERE id = 2",
                "INSERT INTO t VALUES (1000, 'x', false, 5), (1001, 'y', true, 6)",
            ],
        );
        assert_eq!(ids(session, live), vec![3, 4, 5, 7, 8, 1000]);
        // Uniqueness only among rows with id > 250: 'e1' is taken there by id 251.
        setup(session, &["INSERT INTO t VALUES (2, 'e1', false, 2)"]);
        let (state, text) = message(session, "INSERT INTO t VALUES (2000, 'e1', false, 2)");
        assert_eq!(state, "23505");
        assert_eq!(text, "duplicate key value violates unique constraint \"t_email_live\"");
        // Moving the holder out of the predicate frees the value.
        setup(
            session,
            &["DELETE FROM t WHERE id = 251", "INSERT INTO t VALUES (2000, 'e1', false, 2)"],
        );
        let (state, _) = message(session, "UPDATE t SET email = 'e1' WHERE id = 252");
        assert_eq!(state, "23505");
        // ON CONFLICT without a target treats the partial unique index as an arbiter; a
        // column list does not infer it (PostgreSQL's 42P10).
        setup(session, &["INSERT INTO t VALUES (3000, 'e1', false, 2) ON CONFLICT DO NOTHING"]);
        assert_eq!(ids(session, "SELECT id FROM t WHERE id = 3000"), Vec::<i64>::new());
        let (state, _) = message(
            session,
            "INSERT INTO t VALUES (3000, 'e1', false, 2) ON CONFLICT (email) DO NOTHING",
        );
        assert_eq!(state, "42P10");
    });
}

#[test]
fn predicates_get_postgres_errors() {
    with_session(|session| {
        setup(session, &["CREATE TABLE t (id int PRIMARY KEY, n int, at timestamp)"]);
        let cases = [
            ("(SELECT 1) = 1", "0A000", "cannot use subquery in index predicate"),
            ("count(*) > 1", "42803", "aggregate functions are not allowed in index predicates"),
            ("random() > 0.5", "42P17", "functions in index predicate must be marked IMMUTABLE"),
            ("now() > at", "42P17", "functions in index predicate must be marked IMMUTABLE"),
            ("n", "42804", "argument of WHERE must be type boolean, not type integer"),
            ("nosuch > 1", "42703", "column \"nosuch\" does not exist"),
        ];
        for (predicate, state, text) in cases {
            let (got_state, got_text) =
                message(session, &format!("CREATE INDEX e ON t (n) WHERE {predicate}"));
            assert_eq!((got_state, got_text.as_str()), (state, text), "{predicate}");
        }
        // Column changes the stored predicate would not follow are refused.
        setup(
            session,
            &["CREATE INDEX t_n ON t (n) WHERE n > 0", "ALTER TABLE t ADD COLUMN m int"],
        );
        assert_eq!(message(session, "ALTER TABLE t DROP COLUMN at").0, "0A000");
        assert_eq!(message(session, "ALTER TABLE t RENAME COLUMN n TO k").0, "0A000");
        // A full index made under a dropped partial index's name indexes every row.
        setup(
            session,
            &[
                "DROP INDEX t_n",
                "CREATE UNIQUE INDEX t_n ON t (n)",
                "INSERT INTO t VALUES (1, -1, NULL, NULL)",
            ],
        );
        assert_eq!(message(session, "INSERT INTO t VALUES (2, -1, NULL, NULL)").0, "23505");
    });
}

#[test]
fn the_predicate_survives_a_restart() {
    std::thread::Builder::new()
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(|| {
            let directory = tempfile::tempdir().unwrap();
            let mut session = open_session(directory.path(), 1);
            setup(
                &mut session,
                &[
                    "CREATE TABLE t (id int PRIMARY KEY, email text, deleted_at date)",
                    "INSERT INTO t VALUES (1, 'a', NULL), (2, 'a', '2024-01-01')",
                    "CREATE UNIQUE INDEX t_email ON t (email) WHERE deleted_at IS NULL",
                ],
            );
            drop(session);
            let mut session = open_session(directory.path(), 2);
            // Rows outside the predicate still do not conflict; rows inside it do.
            setup(&mut session, &["INSERT INTO t VALUES (3, 'a', '2024-02-01')"]);
            let (state, _) = message(&mut session, "INSERT INTO t VALUES (4, 'a', NULL)");
            assert_eq!(state, "23505");
            let definition = "SELECT id FROM t WHERE email = 'a' AND deleted_at IS NULL";
            assert!(uses_index(&mut session, definition, "t_email"));
            assert_eq!(ids(&mut session, definition), vec![1]);
        })
        .unwrap()
        .join()
        .expect("no panic");
}
