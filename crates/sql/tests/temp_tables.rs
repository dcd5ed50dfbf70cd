//! Temporary tables across sessions (docs/design/019-temp-tables.md): another session never
//! sees one (name resolution, pg_class, information_schema), two sessions hold independent
//! temp tables of one name, and a session's end drops them with their engine tables. One
//! session's behaviour is tests/slt/temp_tables.slt (PostgreSQL 15's answers); the crash
//! case is crates/cli/tests/server_crash.rs `temp_tables_are_gone_after_sigkill`.

use crate::support;

use support::{message, rows, session_as, setup, sqlstate, value, with_session};
use tierdb_sql::{Datum, Session};

fn count(session: &mut Session, sql: &str) -> i64 {
    match value(session, sql).unwrap() {
        Datum::Int(count) => count,
        other => panic!("{sql}: {other:?}"),
    }
}

/// The engine's tables whose name is a temp table's (`pg_temp_N.t`).
fn engine_temp_tables(session: &Session) -> Vec<String> {
    let names = session.catalog().engine().table_names();
    names.into_iter().filter(|name| name.starts_with("pg_temp_")).collect()
}

#[test]
fn another_session_never_sees_a_temp_table() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        setup(session, &["CREATE TEMP TABLE private (id int PRIMARY KEY, note text)"]);
        setup(session, &["INSERT INTO private VALUES (1, 'mine')"]);
        assert_eq!(count(session, "SELECT count(*) FROM private"), 1);
        assert_eq!(sqlstate(&mut other, "SELECT * FROM private"), "42P01");
        assert_eq!(sqlstate(&mut other, "SELECT * FROM pg_temp.private"), "42P01");
        assert_eq!(sqlstate(&mut other, "INSERT INTO private VALUES (2, 'x')"), "42P01");
        assert_eq!(sqlstate(&mut other, "DROP TABLE private"), "42P01");
        let in_class = "SELECT count(*) FROM pg_class WHERE relname LIKE 'private%'";
        assert_eq!(count(&mut other, in_class), 0);
        let in_tables =
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'private'";
        assert_eq!(count(&mut other, in_tables), 0);
        assert_eq!(count(session, in_class), 2, "the table and its primary key");
        // The catalog name is not a name another session can write either.
        let internal = engine_temp_tables(session).pop().expect("the engine table");
        let quoted = format!("SELECT * FROM \"{internal}\"");
        assert_eq!(sqlstate(&mut other, &quoted), "42P01");
        assert_eq!(sqlstate(&mut other, &format!("CREATE TABLE \"{internal}\" (a int)")), "0A000");
    });
}

#[test]
fn two_sessions_hold_independent_temp_tables_of_one_name() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        setup(
            session,
            &["CREATE TABLE shared (id int PRIMARY KEY)", "INSERT INTO shared VALUES (0)"],
        );
        setup(session, &["CREATE TEMP TABLE shared (id int PRIMARY KEY)"]);
        setup(&mut other, &["CREATE TEMP TABLE shared (id int PRIMARY KEY, extra text)"]);
        setup(session, &["INSERT INTO shared VALUES (1), (2)"]);
        setup(&mut other, &["INSERT INTO shared VALUES (10, 'x')"]);
        assert_eq!(count(session, "SELECT sum(id) FROM shared"), 3);
        assert_eq!(count(&mut other, "SELECT sum(id) FROM shared"), 10);
        assert_eq!(count(&mut other, "SELECT sum(id) FROM public.shared"), 0);
        assert_eq!(rows(session, "SELECT * FROM shared ORDER BY id").unwrap().len(), 2);
        assert_eq!(engine_temp_tables(session).len(), 2);
        // Each session's ON COMMIT and DROP touch only its own table.
        setup(session, &["DROP TABLE shared"]);
        assert_eq!(count(&mut other, "SELECT count(*) FROM shared"), 1);
        assert_eq!(count(session, "SELECT count(*) FROM shared"), 1, "the permanent table");
    });
}

#[test]
fn session_end_drops_its_temp_tables() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        setup(&mut other, &["CREATE TEMP TABLE going (id int PRIMARY KEY, note text)"]);
        setup(&mut other, &["CREATE INDEX ON going (note)", "INSERT INTO going VALUES (1, 'a')"]);
        setup(&mut other, &["BEGIN", "CREATE TEMP TABLE half (id int)"]);
        assert_eq!(engine_temp_tables(session).len(), 2);
        // The server calls terminate when the connection goes, however it goes.
        other.terminate();
        drop(other);
        assert!(engine_temp_tables(session).is_empty(), "{:?}", engine_temp_tables(session));
        let temp = "SELECT count(*) FROM pg_class WHERE relpersistence = 't'";
        assert_eq!(count(session, temp), 0);
        // A new session reuses nothing of it.
        let mut next = session_as(session, "tierdb");
        assert_eq!(sqlstate(&mut next, "SELECT * FROM going"), "42P01");
    });
}

#[test]
fn refused_temporary_objects_name_the_feature() {
    with_session(|session| {
        assert_eq!(sqlstate(session, "CREATE TEMP VIEW v AS SELECT 1"), "0A000");
        assert_eq!(sqlstate(session, "CREATE TEMP SEQUENCE s"), "0A000");
        assert_eq!(sqlstate(session, "CREATE GLOBAL TEMPORARY TABLE g (a int)"), "0A000");
        setup(session, &["CREATE TEMP TABLE kept (a int)", "ANALYZE kept", "VACUUM kept"]);
        setup(session, &["BEGIN"]);
        assert_eq!(sqlstate(session, "DISCARD TEMP"), "0A000");
        setup(session, &["ROLLBACK"]);
        assert_eq!(count(session, "SELECT count(*) FROM kept"), 0);
    });
}

#[test]
fn a_temp_table_hides_the_permanent_one_from_pg_table_is_visible() {
    with_session(|session| {
        setup(session, &["CREATE TABLE seen (a int)", "CREATE TEMP TABLE seen (b int)"]);
        let sql = "SELECT c.relpersistence FROM pg_class c WHERE c.relname = 'seen' AND pg_table_is_visible(c.oid)";
        assert_eq!(rows(session, sql).unwrap(), vec![vec![Datum::Text("t".into())]]);
        assert_eq!(
            value(session, "SELECT 'seen'::regclass::text").unwrap(),
            Datum::Text("seen".into())
        );
        setup(session, &["DROP TABLE seen"]);
        assert_eq!(rows(session, sql).unwrap(), vec![vec![Datum::Text("p".into())]]);
    });
}

/// A temp table's rows are not WAL-logged and live in the temp space (design 019, "Unlogged
/// storage"): loading 20,000 rows of 200 bytes into one adds only the transaction's commit
/// record to the WAL, while the same load into a permanent table logs more than the rows'
/// bytes; its pages are in the temp tables' store, not the main store's pool, and once
/// written they are counted in tierdb_stat_temp.table_bytes. The last temp table's drop
/// takes the store (and its directory) with it.
#[test]
fn a_temp_table_load_writes_no_wal_and_lives_in_the_temp_space() {
    const ROWS: i64 = 20_000;
    const PAYLOAD_BYTES: i64 = 200;
    with_session(|session| {
        setup(
            session,
            &[
                "CREATE TEMP TABLE loaded (id int PRIMARY KEY, payload text)",
                "CREATE TABLE kept (id int PRIMARY KEY, payload text)",
            ],
        );
        let engine = std::sync::Arc::clone(session.catalog().engine());
        let wal_bytes = || i64::try_from(engine.store().wal_stats().bytes.get()).unwrap();
        let load = |table: &str| {
            format!(
                "INSERT INTO {table} SELECT g, repeat('x', {PAYLOAD_BYTES}) \
                 FROM generate_series(1, {ROWS}) g"
            )
        };
        let main_pages_before = engine.store().stats().mtr_commits.get();
        let before = wal_bytes();
        setup(session, &[&load("loaded")]);
        let temp_wal_bytes = wal_bytes() - before;
        let main_mtrs = engine.store().stats().mtr_commits.get() - main_pages_before;
        let before = wal_bytes();
        setup(session, &[&load("kept")]);
        let kept_wal_bytes = wal_bytes() - before;
        let data_bytes = ROWS * PAYLOAD_BYTES;
        assert!(kept_wal_bytes > data_bytes, "a permanent load logs its rows: {kept_wal_bytes}");
        assert!(temp_wal_bytes < 1024, "a temp load logs its commit only: {temp_wal_bytes}");
        assert!(main_mtrs < 10, "the main store's pages are not changed: {main_mtrs} mtrs");
        let id = session.session_id();
        let temp_store = engine.temp_table_store(id).expect("opened by CREATE TEMP TABLE");
        assert!(temp_store.stats().mtr_commits.get() > 0, "the rows went to the temp store");
        temp_store.flush_all().unwrap();
        let table_bytes = count(session, "SELECT table_bytes FROM tierdb_stat_temp");
        assert!(table_bytes > data_bytes, "the pages are in the temp space: {table_bytes}");
        let in_use = count(session, "SELECT bytes_in_use FROM tierdb_stat_temp");
        assert!(in_use >= table_bytes, "under the temp space's quota: {in_use}");
        let read = "SELECT count(*) FROM loaded WHERE length(payload) = 200";
        assert_eq!(count(session, read), ROWS);
        drop(temp_store);
        setup(session, &["DROP TABLE loaded"]);
        assert!(engine.temp_table_store(id).is_none(), "the last temp table took the store");
    });
}

/// The `tierdb-tables-*` directories (temp tables' stores) in the temp space's directory.
fn store_directories(session: &Session) -> usize {
    let dir = session.catalog().engine().store().temp_space().dir().to_path_buf();
    let entries = std::fs::read_dir(dir).unwrap();
    let stores = entries.filter(|entry| {
        entry.as_ref().unwrap().file_name().to_string_lossy().starts_with("tierdb-tables-")
    });
    stores.count()
}

/// Each session's temp tables are in its own store, whose buffer pool is the session's
/// temp_buffers at its first temp table (PostgreSQL's local buffers); SET temp_buffers is
/// PostgreSQL's 22023 from then on unless it keeps the value, and works before.
#[test]
fn each_session_has_its_own_temp_store_sized_by_its_temp_buffers() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        let engine = std::sync::Arc::clone(session.catalog().engine());
        setup(session, &["SET temp_buffers = 200", "SET temp_buffers = '2MB'"]);
        assert_eq!(value(session, "SHOW temp_buffers").unwrap(), Datum::Text("2MB".into()));
        setup(session, &["CREATE TEMP TABLE mine (id int PRIMARY KEY)"]);
        setup(&mut other, &["CREATE TEMP TABLE theirs (id int PRIMARY KEY)"]);
        let (id, other_id) = (session.session_id(), other.session_id());
        let mine = engine.temp_table_store(id).expect("the session's store");
        let theirs = engine.temp_table_store(other_id).expect("the other session's store");
        assert!(!std::sync::Arc::ptr_eq(&mine, &theirs), "one store per session");
        assert_eq!(engine.temp_table_store_count(), 2);
        assert_eq!(store_directories(session), 2);
        // 2MB is 256 buffers of 8 kB; the other session has PostgreSQL's default 1024.
        assert_eq!(mine.buffer_pool_frames().1, 256);
        assert_eq!(theirs.buffer_pool_frames().1, 1024);
        let (state, text) = message(session, "SET temp_buffers = 300");
        assert_eq!(
            (state, text.as_str()),
            ("22023", "invalid value for parameter \"temp_buffers\": 300")
        );
        assert_eq!(sqlstate(session, "SELECT set_config('temp_buffers', '4MB', false)"), "22023");
        setup(session, &["SET temp_buffers = 256", "RESET temp_buffers"]);
        assert_eq!(value(session, "SHOW temp_buffers").unwrap(), Datum::Text("8MB".into()));
        // Out of PostgreSQL's range, before any use.
        let mut fresh = session_as(session, "tierdb");
        let (state, text) = message(&mut fresh, "SET temp_buffers = 99");
        assert_eq!(state, "22023");
        assert!(text.contains("(100 .. 1073741823)"), "{text}");
        // PostgreSQL's largest allowance (8 TB) costs only the frames pages come into.
        setup(&mut fresh, &["SET temp_buffers = 1073741823", "CREATE TEMP TABLE wide (id int)"]);
        setup(&mut fresh, &["INSERT INTO wide SELECT g FROM generate_series(1, 1000) g"]);
        let wide = engine.temp_table_store(fresh.session_id()).expect("its store");
        let (allocated, target) = wide.buffer_pool_frames();
        assert_eq!(target, 1_073_741_823);
        assert!(allocated < 100, "frames as pages come in: {allocated}");
        drop(wide);
        fresh.terminate();
        // A later store of the session keeps the pool its first temp table fixed.
        setup(session, &["DROP TABLE mine", "CREATE TEMP TABLE again (id int)"]);
        let again = engine.temp_table_store(id).expect("a new store");
        assert_eq!(again.buffer_pool_frames().1, 256);
    });
}

/// A session's store and its directory go with its last temp table (DROP) and at its end,
/// and the temp space's table bytes go back down to the other sessions' share.
#[test]
fn dropped_temp_tables_free_their_sessions_store() {
    with_session(|session| {
        let mut other = session_as(session, "tierdb");
        let engine = std::sync::Arc::clone(session.catalog().engine());
        let table_bytes =
            |session: &mut Session| count(session, "SELECT table_bytes FROM tierdb_stat_temp");
        setup(&mut other, &["CREATE TEMP TABLE theirs (id int PRIMARY KEY)"]);
        let others_bytes = table_bytes(session);
        setup(session, &["SET temp_buffers = 100", "CREATE TEMP TABLE mine (id int, note text)"]);
        let load = "INSERT INTO mine SELECT g, repeat('x', 200) FROM generate_series(1, 5000) g";
        setup(session, &[load]);
        engine.temp_table_store(session.session_id()).unwrap().flush_all().unwrap();
        let loaded = table_bytes(session);
        assert!(loaded > others_bytes + 1_000_000, "{loaded} against {others_bytes}");
        assert_eq!(store_directories(session), 2);
        setup(session, &["DROP TABLE mine"]);
        // What is left is the other session's small store (its background writer may have
        // written a manifest since).
        let left = table_bytes(session);
        assert!(left < others_bytes + 100_000, "the session's pages are freed: {left}");
        assert_eq!(store_directories(session), 1);
        assert!(engine.temp_table_store(session.session_id()).is_none());
        other.terminate();
        assert_eq!(table_bytes(session), 0, "the other session's end freed its store");
        assert_eq!(store_directories(session), 0);
        assert_eq!(engine.temp_table_store_count(), 0);
    });
}
