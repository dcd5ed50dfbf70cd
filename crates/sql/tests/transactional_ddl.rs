//! DDL commits and rolls back with its transaction, as in PostgreSQL: CREATE TABLE, CREATE
//! INDEX, ALTER TABLE ... ADD, CREATE TABLE AS and DROP INDEX inside a block, whole or to a
//! savepoint, and in the implicit block of a multi-statement string. A table created by an
//! open transaction is invisible to other sessions; their DDL on a table an open transaction
//! changed waits for it (lock_timeout ends the wait with 55P03). The engine's objects follow
//! the catalog: after a rollback no table or index is left behind. The crash case (SIGKILL
//! before COMMIT) is crates/cli/tests/server_crash.rs `uncommitted_ddl_is_gone_after_sigkill`.

use crate::support;

use support::{rows, run, session_as, setup, sqlstate, value, with_session};
use tierdb_sql::{Datum, Session};

fn count(session: &mut Session, sql: &str) -> i64 {
    match value(session, sql).unwrap() {
        Datum::Int(count) => count,
        other => panic!("{sql}: {other:?}"),
    }
}

fn indexes_of(session: &mut Session, table: &str) -> Vec<String> {
    let sql = format!("SELECT indexname FROM pg_indexes WHERE tablename = '{table}' ORDER BY 1");
    rows(session, &sql)
        .unwrap()
        .into_iter()
        .map(|row| match &row[0] {
            Datum::Text(name) => name.clone(),
            other => panic!("index name {other:?}"),
        })
        .collect()
}

fn engine_indexes(session: &Session, table: &str) -> Vec<String> {
    let engine = session.catalog().engine();
    let def = engine.table_def(table).unwrap();
    let vectors = engine.vector_index_defs(table).unwrap();
    def.indexes
        .into_iter()
        .map(|index| index.name)
        .chain(vectors.into_iter().map(|v| v.name))
        .collect()
}

fn engine_has_table(session: &Session, table: &str) -> bool {
    session.catalog().engine().table_names().iter().any(|name| name == table)
}

#[test]
fn create_table_rolls_back_with_its_rows_and_is_hidden_until_commit() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        setup(session, &["BEGIN", "CREATE TABLE fresh (id int PRIMARY KEY, note text)"]);
        setup(session, &["INSERT INTO fresh VALUES (1, 'a'), (2, 'b')"]);
        assert_eq!(count(session, "SELECT count(*) FROM fresh"), 2);
        // Not there for another session until the block commits.
        assert_eq!(sqlstate(&mut other, "SELECT * FROM fresh"), "42P01");
        assert_eq!(count(&mut other, "SELECT count(*) FROM pg_class WHERE relname = 'fresh'"), 0);
        setup(session, &["ROLLBACK"]);
        assert_eq!(sqlstate(session, "SELECT * FROM fresh"), "42P01");
        assert!(!engine_has_table(session, "fresh"), "the engine table went with the rollback");
        // The name is free again, and a committed CREATE is seen by everyone.
        setup(session, &["BEGIN", "CREATE TABLE fresh (id int)", "INSERT INTO fresh VALUES (7)"]);
        setup(session, &["COMMIT"]);
        assert_eq!(count(&mut other, "SELECT sum(id) FROM fresh"), 7);
    });
}

#[test]
fn create_index_and_add_constraint_roll_back_while_others_write() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        setup(session, &["CREATE TABLE t (id int PRIMARY KEY, k int, s text)"]);
        setup(
            session,
            &["INSERT INTO t SELECT g, g % 10, 's' || g FROM generate_series(1, 500) g"],
        );
        setup(session, &["BEGIN", "CREATE INDEX t_k ON t (k)", "ALTER TABLE t ADD UNIQUE (s)"]);
        assert_eq!(indexes_of(session, "t"), ["t_k", "t_pkey", "t_s_key"]);
        // Another session's writes meanwhile keep every index complete.
        setup(&mut other, &["INSERT INTO t VALUES (501, 3, 'x501')", "DELETE FROM t WHERE id = 2"]);
        assert_eq!(count(session, "SELECT count(*) FROM t WHERE k = 3"), 51);
        setup(session, &["ROLLBACK"]);
        assert_eq!(indexes_of(session, "t"), ["t_pkey"]);
        assert!(engine_indexes(session, "t").is_empty(), "{:?}", engine_indexes(session, "t"));
        assert_eq!(count(&mut other, "SELECT count(*) FROM t"), 500);
        // Committed, the same statements stay.
        setup(session, &["BEGIN", "CREATE INDEX t_k ON t (k)", "COMMIT"]);
        assert_eq!(indexes_of(&mut other, "t"), ["t_k", "t_pkey"]);
        assert_eq!(count(&mut other, "SELECT count(*) FROM t WHERE k = 1"), 50);
    });
}

#[test]
fn rollback_to_savepoint_undoes_only_later_ddl() {
    with_session(|session| {
        setup(session, &["CREATE TABLE base (id int PRIMARY KEY, v int)"]);
        setup(session, &["BEGIN", "CREATE TABLE kept (id int)", "SAVEPOINT s"]);
        setup(session, &["CREATE TABLE undone (id int)", "CREATE INDEX base_v ON base (v)"]);
        setup(session, &["INSERT INTO kept VALUES (1)", "ROLLBACK TO SAVEPOINT s"]);
        // (A failing statement would end the block: the catalog says what exists.)
        assert_eq!(count(session, "SELECT count(*) FROM pg_class WHERE relname = 'undone'"), 0);
        assert!(!engine_has_table(session, "undone"));
        assert_eq!(indexes_of(session, "base"), ["base_pkey"]);
        assert!(engine_indexes(session, "base").is_empty());
        // The savepoint's own work is gone, the block's stays and commits.
        assert_eq!(count(session, "SELECT count(*) FROM kept"), 0);
        setup(session, &["INSERT INTO kept VALUES (2)", "COMMIT"]);
        assert_eq!(count(session, "SELECT sum(id) FROM kept"), 2);
    });
}

#[test]
fn drop_index_in_a_block_waits_for_commit() {
    with_session(|session| {
        setup(
            session,
            &["CREATE TABLE d (id int PRIMARY KEY, k int)", "CREATE INDEX d_k ON d (k)"],
        );
        setup(session, &["BEGIN", "DROP INDEX d_k", "ROLLBACK"]);
        assert_eq!(indexes_of(session, "d"), ["d_k", "d_pkey"]);
        assert_eq!(engine_indexes(session, "d"), ["d_k"]);
        setup(session, &["BEGIN"]);
        assert_eq!(sqlstate(session, "DROP INDEX d_pkey"), "2BP01");
        setup(session, &["ROLLBACK", "BEGIN", "DROP INDEX d_k", "COMMIT"]);
        assert_eq!(indexes_of(session, "d"), ["d_pkey"]);
        assert!(engine_indexes(session, "d").is_empty());
        setup(session, &["BEGIN"]);
        assert_eq!(sqlstate(session, "DROP INDEX nosuch"), "42704");
        setup(session, &["ROLLBACK"]);
    });
}

#[test]
fn create_table_as_is_atomic() {
    with_session(|session| {
        // The query fails after rows were inserted: no table is left, autocommit or block.
        let failing = "CREATE TABLE c AS SELECT 10 / (5 - g) AS x FROM generate_series(1, 9) g";
        assert_eq!(sqlstate(session, failing), "22012");
        assert_eq!(sqlstate(session, "SELECT * FROM c"), "42P01");
        assert!(!engine_has_table(session, "c"));
        setup(session, &["BEGIN", "CREATE TABLE c AS SELECT g FROM generate_series(1, 3) g"]);
        setup(session, &["ROLLBACK"]);
        assert!(!engine_has_table(session, "c"));
        setup(session, &["CREATE TABLE c AS SELECT g FROM generate_series(1, 3) g"]);
        assert_eq!(count(session, "SELECT sum(g) FROM c"), 6);
    });
}

#[test]
fn a_multi_statement_string_is_one_transaction_for_ddl() {
    with_session(|session| {
        setup(session, &["CREATE TABLE gone (id int)"]);
        let outputs =
            session.execute("CREATE TABLE m (id int); INSERT INTO m VALUES (1); SELECT 1 / 0");
        assert_eq!(outputs.last().unwrap().as_ref().unwrap_err().sqlstate, "22012");
        assert_eq!(sqlstate(session, "SELECT * FROM m"), "42P01");
        assert!(!engine_has_table(session, "m"));
        // A DROP in such a string happens when it commits.
        let outputs = session.execute("DROP TABLE gone; SELECT 1");
        assert!(outputs.iter().all(Result::is_ok), "{outputs:?}");
        assert_eq!(sqlstate(session, "SELECT * FROM gone"), "42P01");
        assert!(!engine_has_table(session, "gone"));
    });
}

#[test]
fn ddl_on_a_table_another_transaction_changed_waits() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        setup(session, &["CREATE TABLE w (id int PRIMARY KEY, k int)"]);
        setup(session, &["BEGIN", "CREATE INDEX w_k ON w (k)"]);
        setup(&mut other, &["SET lock_timeout = '100ms'"]);
        assert_eq!(sqlstate(&mut other, "CREATE INDEX w_id_k ON w (id, k)"), "55P03");
        assert_eq!(sqlstate(&mut other, "DROP TABLE w"), "55P03");
        assert_eq!(sqlstate(&mut other, "TRUNCATE w"), "55P03");
        // The name of a table being created is claimed too.
        setup(session, &["CREATE TABLE pending_name (id int)"]);
        assert_eq!(sqlstate(&mut other, "CREATE TABLE pending_name (x text)"), "55P03");
        // Reads and writes do not wait.
        setup(&mut other, &["INSERT INTO w VALUES (1, 1)"]);
        setup(session, &["COMMIT"]);
        run(&mut other, "CREATE INDEX w_id_k ON w (id, k)").unwrap();
        assert_eq!(sqlstate(&mut other, "CREATE TABLE pending_name (x text)"), "42P07");
        assert_eq!(indexes_of(&mut other, "w"), ["w_id_k", "w_k", "w_pkey"]);
    });
}

#[test]
fn alter_column_changes_roll_back_with_their_transaction() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        setup(session, &["CREATE TABLE ac (id int PRIMARY KEY, v int NOT NULL DEFAULT 1)"]);
        setup(session, &["BEGIN", "ALTER TABLE ac ALTER COLUMN v DROP NOT NULL"]);
        setup(session, &["SAVEPOINT s", "ALTER TABLE ac RENAME COLUMN v TO w"]);
        assert_eq!(sqlstate(session, "SELECT v FROM ac"), "42703");
        setup(session, &["ROLLBACK TO SAVEPOINT s"]);
        // The rename is undone, the DROP NOT NULL before the savepoint stays.
        setup(session, &["INSERT INTO ac VALUES (1, NULL)", "ROLLBACK"]);
        // Rolled back: NOT NULL holds again, although the engine was loosened.
        assert_eq!(sqlstate(&mut other, "INSERT INTO ac VALUES (2, NULL)"), "23502");
        assert_eq!(sqlstate(session, "INSERT INTO ac (id, v) VALUES (3, NULL)"), "23502");
        setup(session, &["INSERT INTO ac (id) VALUES (4)"]);
        assert_eq!(count(session, "SELECT sum(v) FROM ac"), 1);
    });
}
