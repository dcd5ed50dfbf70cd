//! FOREIGN KEY constraints beyond what the differential suite (tests/slt/foreign_keys.slt)
//! can show: the races between a referencing insert and a referenced delete under READ
//! COMMITTED (each waits for the other's row lock and then sees its committed outcome, so
//! no orphan is ever committed), loads whose checks spill past work_mem, transactional
//! ADD CONSTRAINT, and what tierdb refuses instead of ignoring (DEFERRABLE, NOT VALID).

use crate::support;

use std::time::Duration;

use support::{message, rows, run, session_as, setup, value, with_session, CONNECTION_STACK_BYTES};
use tierdb_sql::{Datum, Output, Session, SqlError};

fn parent_and_child(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE parent (id int PRIMARY KEY, label text)",
            "CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent)",
            "INSERT INTO parent VALUES (1, 'one'), (2, 'two')",
        ],
    );
}

/// Runs `sql` in `session` on another thread while `blocker` ends its transaction with
/// `end` (COMMIT or ROLLBACK); the statement must wait for it first.
fn run_blocked(
    mut session: Session,
    sql: &'static str,
    blocker: &mut Session,
    end: &str,
) -> (Session, Result<Output, SqlError>) {
    let waiting = std::thread::Builder::new()
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(move || {
            let outcome = run(&mut session, sql);
            (session, outcome)
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiting.is_finished(), "{sql} waits for the other transaction");
    setup(blocker, &[end]);
    waiting.join().unwrap()
}

fn sqlstate(outcome: &Result<Output, SqlError>) -> Option<&'static str> {
    outcome.as_ref().err().map(|error| error.sqlstate)
}

#[test]
fn a_referenced_delete_waits_for_an_uncommitted_referencing_insert_and_then_fails() {
    with_session(|session| {
        parent_and_child(session);
        let other = session_as(session, "tierdb");
        // The insert's check locks parent 1 (FOR SHARE) until its transaction ends.
        setup(session, &["BEGIN", "INSERT INTO child VALUES (10, 1)"]);
        let (mut other, outcome) =
            run_blocked(other, "DELETE FROM parent WHERE id = 1", session, "COMMIT");
        // The delete's check sees the child committed after its statement began.
        assert_eq!(sqlstate(&outcome), Some("23503"), "{outcome:?}");
        let parents = value(&mut other, "SELECT count(*) FROM parent").unwrap();
        assert_eq!(parents, Datum::Int(2), "the delete was undone");
    });
}

#[test]
fn a_referenced_delete_proceeds_when_the_referencing_insert_rolls_back() {
    with_session(|session| {
        parent_and_child(session);
        let other = session_as(session, "tierdb");
        setup(session, &["BEGIN", "INSERT INTO child VALUES (10, 1)"]);
        let (mut other, outcome) =
            run_blocked(other, "DELETE FROM parent WHERE id = 1", session, "ROLLBACK");
        assert!(outcome.is_ok(), "{outcome:?}");
        assert_eq!(value(&mut other, "SELECT count(*) FROM parent").unwrap(), Datum::Int(1));
    });
}

#[test]
fn a_referencing_insert_waits_for_an_uncommitted_referenced_delete() {
    with_session(|session| {
        parent_and_child(session);
        let other = session_as(session, "tierdb");
        setup(session, &["BEGIN", "DELETE FROM parent WHERE id = 2"]);
        let (mut other, outcome) =
            run_blocked(other, "INSERT INTO child VALUES (20, 2)", session, "COMMIT");
        assert_eq!(sqlstate(&outcome), Some("23503"), "{outcome:?}");
        assert_eq!(value(&mut other, "SELECT count(*) FROM child").unwrap(), Datum::Int(0));
        // And when the delete rolls back, the insert goes through.
        setup(&mut other, &["BEGIN", "DELETE FROM parent WHERE id = 1"]);
        let (mut session_again, outcome) = {
            let waiting_session = session_as(&other, "tierdb");
            run_blocked(waiting_session, "INSERT INTO child VALUES (21, 1)", &mut other, "ROLLBACK")
        };
        assert!(outcome.is_ok(), "{outcome:?}");
        let children = rows(&mut session_again, "SELECT id, parent_id FROM child").unwrap();
        assert_eq!(children, vec![vec![Datum::Int(21), Datum::Int(1)]]);
    });
}

#[test]
fn loads_check_every_row_past_work_mem_and_load_nothing_on_a_violation() {
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TABLE parent (id int PRIMARY KEY)",
                "CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent ON DELETE CASCADE)",
                "INSERT INTO parent SELECT g FROM generate_series(1, 500) AS g",
                "SET work_mem = '64kB'",
            ],
        );
        let bad = "INSERT INTO child SELECT g, g % 501 + 1 FROM generate_series(1, 20000) AS g";
        assert_eq!(message(session, bad).0, "23503");
        assert_eq!(value(session, "SELECT count(*) FROM child").unwrap(), Datum::Int(0));
        let good = "INSERT INTO child SELECT g, g % 500 + 1 FROM generate_series(1, 20000) AS g";
        setup(session, &[good]);
        // A cascade of many rows per key, also past work_mem.
        setup(session, &["DELETE FROM parent WHERE id <= 250"]);
        let left = value(session, "SELECT count(*) FROM child").unwrap();
        assert_eq!(left, Datum::Int(10_000));
        let orphans = "SELECT count(*) FROM child c WHERE NOT EXISTS (SELECT 1 FROM parent p WHERE p.id = c.parent_id)";
        assert_eq!(value(session, orphans).unwrap(), Datum::Int(0));
    });
}

#[test]
fn add_foreign_key_rolls_back_with_its_block() {
    with_session(|session| {
        parent_and_child(session);
        setup(
            session,
            &[
                "ALTER TABLE child DROP CONSTRAINT child_parent_id_fkey",
                "BEGIN",
                "ALTER TABLE child ADD CONSTRAINT fk FOREIGN KEY (parent_id) REFERENCES parent",
                "ROLLBACK",
                "INSERT INTO child VALUES (1, 99)",
            ],
        );
        let named = "SELECT count(*) FROM pg_constraint WHERE contype = 'f'";
        assert_eq!(value(session, named).unwrap(), Datum::Int(0));
        let add = "ALTER TABLE child ADD CONSTRAINT fk FOREIGN KEY (parent_id) REFERENCES parent";
        assert_eq!(message(session, add).0, "23503", "the orphan row is found");
    });
}

#[test]
fn options_tierdb_does_not_build_are_refused_not_ignored() {
    with_session(|session| {
        setup(session, &["CREATE TABLE parent (id int PRIMARY KEY)"]);
        let refused = [
            "CREATE TABLE c (p int REFERENCES parent DEFERRABLE)",
            "CREATE TABLE c (p int REFERENCES parent DEFERRABLE INITIALLY DEFERRED)",
            "CREATE TABLE c (p int REFERENCES parent INITIALLY DEFERRED)",
            "CREATE TABLE c (p int REFERENCES parent MATCH PARTIAL)",
        ];
        for sql in refused {
            assert_eq!(message(session, sql).0, "0A000", "{sql}");
        }
        setup(
            session,
            &["CREATE TABLE c (p int REFERENCES parent NOT DEFERRABLE INITIALLY IMMEDIATE)"],
        );
        let not_valid = "ALTER TABLE c ADD FOREIGN KEY (p) REFERENCES parent NOT VALID";
        assert_eq!(message(session, not_valid).0, "0A000");
    });
}
