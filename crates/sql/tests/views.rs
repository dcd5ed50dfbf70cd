//! Views as transactional DDL (docs/design/018): CREATE VIEW and DROP VIEW roll back with
//! their transaction (whole and to a savepoint) and a view created by an open transaction
//! is hidden from other sessions; a view's definition row survives a restart of the catalog
//! (decoded again, with its dependencies); privileges on a view; the RowDescription of a
//! view's columns names the view.

use crate::support;

use std::sync::Arc;

use support::{rows, session_as, setup, sqlstate, value, with_session};
use tierdb_sql::{Datum, Output, Session};

fn count(session: &mut Session, sql: &str) -> i64 {
    match value(session, sql).unwrap() {
        Datum::Int(count) => count,
        other => panic!("{sql}: {other:?}"),
    }
}

fn base(session: &mut Session) {
    setup(
        session,
        &[
            "CREATE TABLE base (id int PRIMARY KEY, note text, amount int)",
            "INSERT INTO base VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)",
        ],
    );
}

#[test]
fn create_view_rolls_back_and_is_hidden_until_commit() {
    with_session(|session| {
        base(session);
        let mut other = session_as(session, "tierdb");
        setup(session, &["BEGIN", "CREATE VIEW fresh AS SELECT id FROM base WHERE amount > 10"]);
        assert_eq!(count(session, "SELECT count(*) FROM fresh"), 2);
        assert_eq!(sqlstate(&mut other, "SELECT * FROM fresh"), "42P01");
        assert_eq!(count(&mut other, "SELECT count(*) FROM pg_views WHERE viewname = 'fresh'"), 0);
        setup(session, &["ROLLBACK"]);
        assert_eq!(sqlstate(session, "SELECT * FROM fresh"), "42P01");
        assert_eq!(count(session, "SELECT count(*) FROM pg_class WHERE relname = 'fresh'"), 0);
        // Committed: every session sees it.
        setup(session, &["BEGIN", "CREATE VIEW fresh AS SELECT id FROM base", "COMMIT"]);
        assert_eq!(count(&mut other, "SELECT count(*) FROM fresh"), 3);
    });
}

#[test]
fn drop_view_and_replace_roll_back_to_a_savepoint() {
    with_session(|session| {
        base(session);
        setup(session, &["CREATE VIEW kept AS SELECT id, note FROM base"]);
        setup(
            session,
            &[
                "BEGIN",
                "SAVEPOINT s",
                "CREATE OR REPLACE VIEW kept AS SELECT id, note, amount FROM base WHERE id = 1",
            ],
        );
        assert_eq!(count(session, "SELECT count(*) FROM kept"), 1);
        setup(session, &["ROLLBACK TO SAVEPOINT s"]);
        assert_eq!(count(session, "SELECT count(*) FROM kept"), 3);
        let columns = "SELECT count(*) FROM pg_attribute WHERE attrelid = 'kept'::regclass";
        assert_eq!(count(session, columns), 2);
        setup(session, &["DROP VIEW kept"]);
        assert_eq!(sqlstate(session, "SELECT * FROM kept"), "42P01");
        setup(session, &["ROLLBACK"]);
        assert_eq!(count(session, "SELECT count(*) FROM kept"), 3);
        // DROP TABLE ... CASCADE in a rolled-back block keeps the view too.
        setup(session, &["BEGIN", "DROP TABLE base CASCADE"]);
        assert_eq!(sqlstate(session, "SELECT * FROM kept"), "42P01");
        setup(session, &["ROLLBACK"]);
        assert_eq!(count(session, "SELECT count(*) FROM kept"), 3);
    });
}

#[test]
fn views_survive_a_restart_of_the_catalog() {
    with_session(|session| {
        base(session);
        setup(
            session,
            &[
                "CREATE VIEW \"Mixed\" (k, \"Note\") AS SELECT id, note FROM base WHERE amount >= 20",
                "CREATE VIEW on_view AS SELECT count(*) AS n FROM \"Mixed\"",
            ],
        );
        let engine = Arc::clone(session.catalog().engine());
        let reopened = tierdb_sql::Catalog::open(engine).unwrap();
        let statistics = Arc::clone(reopened.statement_stats());
        let mut restarted = Session::new(reopened, statistics, "tierdb", "tierdb", 2);
        let found = rows(&mut restarted, "SELECT k, \"Note\" FROM \"Mixed\" ORDER BY k").unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(count(&mut restarted, "SELECT n FROM on_view"), 2);
        assert_eq!(sqlstate(&mut restarted, "DROP TABLE base"), "2BP01");
        assert_eq!(sqlstate(&mut restarted, "ALTER TABLE base DROP COLUMN note"), "2BP01");
        // amount is read by the WHERE clause only; id through the view's column k.
        assert_eq!(sqlstate(&mut restarted, "ALTER TABLE base RENAME COLUMN amount TO a"), "0A000");
        assert_eq!(sqlstate(&mut restarted, "DROP VIEW \"Mixed\""), "2BP01");
        setup(&mut restarted, &["DROP VIEW \"Mixed\" CASCADE"]);
        assert_eq!(count(&mut restarted, "SELECT count(*) FROM pg_views"), 0);
    });
}

#[test]
fn a_view_needs_select_on_what_it_reads_when_created_and_on_itself_when_used() {
    with_session(|session| {
        base(session);
        setup(session, &["CREATE ROLE alice LOGIN", "GRANT CREATE ON SCHEMA public TO alice"]);
        let mut alice = session_as(session, "alice");
        assert_eq!(sqlstate(&mut alice, "CREATE VIEW mine AS SELECT * FROM base"), "42501");
        setup(session, &["CREATE VIEW shared AS SELECT id FROM base"]);
        assert_eq!(sqlstate(&mut alice, "SELECT * FROM shared"), "42501");
        setup(session, &["GRANT SELECT ON shared TO alice"]);
        // The view reads base as its owner: alice needs no privilege on base.
        assert_eq!(count(&mut alice, "SELECT count(*) FROM shared"), 3);
        assert_eq!(sqlstate(&mut alice, "SELECT * FROM base"), "42501");
        assert_eq!(sqlstate(&mut alice, "DROP VIEW shared"), "42501");
    });
}

#[test]
fn a_view_columns_name_the_view_in_the_row_description() {
    with_session(|session| {
        base(session);
        setup(session, &["CREATE VIEW described AS SELECT note, id FROM base"]);
        let oid = match value(session, "SELECT 'described'::regclass::oid").unwrap() {
            Datum::Int(oid) => u32::try_from(oid).unwrap(),
            other => panic!("{other:?}"),
        };
        let Output::Rows { columns, .. } =
            support::run(session, "SELECT * FROM described").unwrap()
        else {
            panic!("rows")
        };
        let origins: Vec<(u32, i16)> =
            columns.iter().map(|column| (column.table_oid, column.attribute)).collect();
        assert_eq!(origins, vec![(oid, 1), (oid, 2)]);
    });
}
