//! UPDATE ... FROM and DELETE ... USING under READ COMMITTED, as PostgreSQL's EvalPlanQual
//! does it: a target row that a concurrent transaction changed and committed while the
//! statement waited is re-checked against the WHERE clause with its latest version and the
//! same joined row of the other tables, and SET is recomputed from the latest version. The
//! results without concurrency are compared with PostgreSQL in tests/slt/update_from.slt.

use crate::support;

use std::time::Duration;

use support::{rows, run, session_as, setup, with_session, CONNECTION_STACK_BYTES};
use tierdb_sql::{Datum, Output};

fn table(session: &mut tierdb_sql::Session) -> Vec<(i64, i64)> {
    rows(session, "SELECT id, v FROM t ORDER BY id")
        .unwrap()
        .into_iter()
        .map(|row| match (&row[0], &row[1]) {
            (Datum::Int(id), Datum::Int(v)) => (*id, *v),
            other => panic!("row {other:?}"),
        })
        .collect()
}

fn affected(output: Output) -> u64 {
    match output {
        Output::Command { rows, .. } => rows,
        other => panic!("expected a command tag, got {other:?}"),
    }
}

/// Runs `sql` in `session` on another thread while this one commits `blocker`'s change.
fn run_blocked(
    mut session: tierdb_sql::Session,
    sql: &'static str,
    blocker: &mut tierdb_sql::Session,
) -> (tierdb_sql::Session, u64) {
    let waiting = std::thread::Builder::new()
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(move || {
            let count = affected(run(&mut session, sql).unwrap());
            (session, count)
        })
        .unwrap();
    // The statement now waits for the blocker's row lock (it cannot finish before COMMIT).
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiting.is_finished(), "{sql} waits for the uncommitted update");
    setup(blocker, &["COMMIT"]);
    waiting.join().unwrap()
}

/// t (id, v) with rows 1..3 and u (id, w) filled by `fill_u`.
fn create_tables(session: &mut tierdb_sql::Session, fill_u: &str) {
    setup(
        session,
        &[
            "CREATE TABLE t (id int PRIMARY KEY, v int)",
            "CREATE TABLE u (id int, w int)",
            "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)",
            fill_u,
        ],
    );
}

#[test]
fn update_from_rechecks_and_recomputes_a_concurrently_updated_row() {
    with_session(|session| {
        create_tables(session, "INSERT INTO u VALUES (1, 1), (2, 2), (3, 3)");
        let other = session_as(session, "tierdb");
        // Row 1 moves out of the WHERE clause, row 2 changes but stays in it.
        setup(
            session,
            &["BEGIN", "UPDATE t SET v = 99 WHERE id = 1", "UPDATE t SET v = 21 WHERE id = 2"],
        );
        let sql = "UPDATE t SET v = t.v + u.w * 100 FROM u WHERE u.id = t.id AND t.v < 50";
        let (mut other, count) = run_blocked(other, sql, session);
        assert_eq!(count, 2, "row 1 no longer passes WHERE and is skipped");
        // Row 2 is recomputed from its latest version (21), not the one first read (20).
        assert_eq!(table(&mut other), [(1, 99), (2, 221), (3, 330)]);
    });
}

#[test]
fn delete_using_rechecks_a_concurrently_updated_row() {
    with_session(|session| {
        create_tables(session, "INSERT INTO u VALUES (1, 10), (2, 20), (3, 30)");
        let other = session_as(session, "tierdb");
        setup(session, &["BEGIN", "UPDATE t SET v = 11 WHERE id = 1"]);
        let sql = "DELETE FROM t USING u WHERE u.id = t.id AND t.v = u.w";
        let (mut other, count) = run_blocked(other, sql, session);
        assert_eq!(count, 2, "row 1 no longer joins and stays");
        assert_eq!(table(&mut other), [(1, 11)]);
    });
}
