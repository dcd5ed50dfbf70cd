//! ALTER TABLE ... ADD / DROP COLUMN against other sessions (docs/design/016): while a
//! transaction that changed a table's columns is open, other sessions' INSERT, UPDATE and
//! COPY FROM on that table wait (lock_timeout ends the wait with 55P03), so that no committed
//! row is written under columns a rollback takes back: after a rolled-back DROP COLUMN every
//! row still has its value. The session's own writes in its block do not wait. The SQL
//! results themselves are tests/slt/add_drop_column.slt; the crash case is
//! crates/cli/tests/server_crash.rs `uncommitted_add_drop_column_is_gone_after_sigkill`.

use crate::support;

use support::{session_as, setup, sqlstate, value, with_session};
use tierdb_sql::{Datum, Session};

fn count(session: &mut Session, sql: &str) -> i64 {
    match value(session, sql).unwrap() {
        Datum::Int(count) => count,
        other => panic!("{sql}: {other:?}"),
    }
}

#[test]
fn writers_wait_for_an_open_column_change_and_keep_their_values() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        setup(session, &["CREATE TABLE cw (id int PRIMARY KEY, a int NOT NULL, b text)"]);
        setup(session, &["INSERT INTO cw VALUES (1, 10, 'x'), (2, 20, 'y')"]);
        setup(session, &["BEGIN", "ALTER TABLE cw DROP COLUMN a"]);
        setup(&mut other, &["SET lock_timeout = '100ms'"]);
        assert_eq!(sqlstate(&mut other, "INSERT INTO cw VALUES (3, 'z')"), "55P03");
        assert_eq!(sqlstate(&mut other, "INSERT INTO cw VALUES (3, 30, 'z')"), "55P03");
        assert_eq!(sqlstate(&mut other, "UPDATE cw SET b = 'u' WHERE id = 1"), "55P03");
        // Reads do not wait.
        assert_eq!(count(&mut other, "SELECT count(*) FROM cw"), 2);
        setup(session, &["ROLLBACK"]);
        setup(
            &mut other,
            &["UPDATE cw SET b = 'u' WHERE id = 1", "INSERT INTO cw VALUES (3, 30, 'z')"],
        );
        assert_eq!(count(&mut other, "SELECT sum(a) FROM cw"), 60, "no row lost its a");
        assert_eq!(count(&mut other, "SELECT count(*) FROM cw WHERE b = 'u'"), 1);

        setup(session, &["BEGIN", "ALTER TABLE cw ADD COLUMN c int DEFAULT 7"]);
        assert_eq!(sqlstate(&mut other, "INSERT INTO cw (id, a) VALUES (4, 40)"), "55P03");
        setup(session, &["COMMIT"]);
        setup(&mut other, &["INSERT INTO cw (id, a) VALUES (4, 40)"]);
        assert_eq!(count(&mut other, "SELECT sum(c) FROM cw"), 28);

        // The session's own writes in its block do not wait, and a committed change frees
        // the table for everyone.
        setup(session, &["BEGIN", "ALTER TABLE cw DROP COLUMN b"]);
        setup(session, &["INSERT INTO cw VALUES (5, 50, 5)", "COMMIT"]);
        setup(&mut other, &["INSERT INTO cw VALUES (6, 60, 6)"]);
        assert_eq!(count(session, "SELECT sum(c) FROM cw"), 39);
        assert_eq!(count(session, "SELECT sum(a) FROM cw"), 210);
    });
}
