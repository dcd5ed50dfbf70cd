//! Crash safety through the server: clients commit rows (single-row autocommit INSERTs and
//! multi-row transactions, with a secondary index) while the server process is killed with
//! SIGKILL at a random moment; after each restart every acknowledged commit is present
//! (through the primary key and through the index), nothing unacknowledged is half applied,
//! and the SQL catalog (tables, index, serial sequence) is intact.

mod server_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use server_support::TestServer;
use tokio_postgres::NoTls;

/// Kill/restart cycles (TIERDB_SERVER_CRASH_CYCLES overrides).
fn cycles() -> usize {
    std::env::var("TIERDB_SERVER_CRASH_CYCLES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(8)
}

#[tokio::test(flavor = "multi_thread")]
async fn acknowledged_commits_survive_sigkill() {
    let mut server = TestServer::start(&[]);
    {
        let (client, connection) =
            tokio_postgres::connect(&server.connection_string(), NoTls).await.expect("connect");
        tokio::spawn(connection);
        client
            .batch_execute(
                "CREATE TABLE acked (id bigserial PRIMARY KEY, worker int NOT NULL, n int NOT NULL, batch int NOT NULL);
                 CREATE INDEX acked_worker ON acked (worker, n);",
            )
            .await
            .expect("schema");
    }
    // (worker, n, rows in that commit) for every acknowledged commit.
    let acknowledged: Arc<Mutex<Vec<(i32, i32, i64)>>> = Arc::new(Mutex::new(Vec::new()));
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for cycle in 0..cycles() {
        let mut workers = Vec::new();
        for worker in 0..4i32 {
            let connection_string = server.connection_string();
            let acknowledged = Arc::clone(&acknowledged);
            let start = i32::try_from(cycle).expect("fits") * 1_000_000;
            workers.push(tokio::spawn(async move {
                let Ok((client, connection)) = tokio_postgres::connect(&connection_string, NoTls).await else { return };
                tokio::spawn(connection);
                for n in start.. {
                    let batch = if n % 3 == 0 { 5 } else { 1 };
                    let outcome = if batch == 1 {
                        client.execute("INSERT INTO acked (worker, n, batch) VALUES ($1, $2, 1)", &[&worker, &n]).await.map(|_| ())
                    } else {
                        client
                            .batch_execute(&format!(
                                "BEGIN; INSERT INTO acked (worker, n, batch) SELECT {worker}, {n}, 5 FROM generate_series(1, 5); COMMIT;"
                            ))
                            .await
                    };
                    match outcome {
                        Ok(()) => acknowledged.lock().expect("lock").push((worker, n, batch)),
                        Err(_) => return,
                    }
                }
            }));
        }
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokio::time::sleep(Duration::from_millis(200 + seed % 600)).await;
        let data_dir = server.kill();
        for worker in workers {
            let _ = worker.await;
        }
        server = TestServer::start_in(data_dir, &[]);
        let (client, connection) = tokio_postgres::connect(&server.connection_string(), NoTls)
            .await
            .expect("reconnect after crash");
        tokio::spawn(connection);
        let expected = acknowledged.lock().expect("lock").clone();
        for (worker, n, batch) in &expected {
            let by_index = client
                .query_one("SELECT count(*) FROM acked WHERE worker = $1 AND n = $2", &[worker, n])
                .await
                .expect("lookup");
            assert_eq!(
                by_index.get::<_, i64>(0),
                *batch,
                "cycle {cycle}: commit ({worker}, {n}) lost or partial"
            );
        }
        // Nothing half applied: every (worker, n) group has its full batch.
        let partial = client
            .query("SELECT worker, n, count(*), max(batch) FROM acked GROUP BY worker, n HAVING count(*) <> max(batch)", &[])
            .await
            .expect("partial check");
        assert!(
            partial.is_empty(),
            "cycle {cycle}: partially applied transactions: {}",
            partial.len()
        );
        let total_expected: i64 = expected.iter().map(|(_, _, batch)| batch).sum();
        let total = client
            .query_one("SELECT count(*) FROM acked", &[])
            .await
            .expect("count")
            .get::<_, i64>(0);
        assert!(
            total >= total_expected,
            "cycle {cycle}: {total} rows < {total_expected} acknowledged"
        );
        // Serial values never repeat across crashes.
        let duplicates = client
            .query_one("SELECT count(*) - count(DISTINCT id) FROM acked", &[])
            .await
            .expect("ids")
            .get::<_, i64>(0);
        assert_eq!(duplicates, 0);
        eprintln!("cycle {cycle}: {} acknowledged commits verified ({total} rows)", expected.len());
    }
}

/// DDL of a transaction that never committed is gone after SIGKILL and restart, whatever the
/// engine had made durably before the kill: a table created in the open block (with rows),
/// an index and a UNIQUE constraint added to a committed table, a CREATE TABLE AS. The
/// committed table keeps its rows, its names are free to use again, and the committed DDL
/// of a block in the same run stays.
#[tokio::test(flavor = "multi_thread")]
async fn uncommitted_ddl_is_gone_after_sigkill() {
    let mut server = TestServer::start(&[]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE base (id int PRIMARY KEY, k int, s text);
             INSERT INTO base SELECT g, g % 7, 's' || g FROM generate_series(1, 2000) g;
             BEGIN; CREATE TABLE committed_in_block (id int); CREATE INDEX base_s ON base (s); COMMIT;
             BEGIN;
             CREATE TABLE doomed (id serial PRIMARY KEY, note text);
             INSERT INTO doomed (note) SELECT 'n' || g FROM generate_series(1, 500) g;
             CREATE INDEX base_k ON base (k);
             ALTER TABLE base ADD UNIQUE (s, k);
             CREATE TABLE doomed_copy AS SELECT * FROM base;",
        )
        .await
        .expect("DDL in an open block");
    let data_dir = server.kill();
    drop(client);
    server = TestServer::start_in(data_dir, &[]);
    let client = server.connect().await;
    let names = |rows: Vec<tokio_postgres::Row>| -> Vec<String> {
        rows.iter().map(|row| row.get::<_, String>(0)).collect()
    };
    let tables = client
        .query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", &[])
        .await
        .expect("tables");
    assert_eq!(names(tables), ["base", "committed_in_block"]);
    let indexes = client
        .query("SELECT indexname::text FROM pg_indexes WHERE tablename = 'base' ORDER BY 1", &[])
        .await
        .expect("indexes");
    assert_eq!(names(indexes), ["base_pkey", "base_s"]);
    let count: i64 =
        client.query_one("SELECT count(*) FROM base WHERE k = 3", &[]).await.expect("count").get(0);
    assert_eq!(count, 286);
    // The names are free again, and the same DDL now commits.
    client
        .batch_execute(
            "CREATE TABLE doomed (id serial PRIMARY KEY, note text);
             INSERT INTO doomed (note) VALUES ('again');
             CREATE INDEX base_k ON base (k);
             ALTER TABLE base ADD UNIQUE (s, k);
             CREATE TABLE doomed_copy AS SELECT * FROM base;",
        )
        .await
        .expect("the names are free");
    let id: i32 = client.query_one("SELECT id FROM doomed", &[]).await.expect("id").get(0);
    assert!(id >= 1, "serial restarts or skips, never fails: {id}");
    let copied: i64 =
        client.query_one("SELECT count(*) FROM doomed_copy", &[]).await.expect("copy").get(0);
    assert_eq!(copied, 2000);
}

/// ADD COLUMN and DROP COLUMN (of an indexed column) in a block cut by SIGKILL: after the
/// restart the table has its committed columns, rows and indexes (the engine layout and the
/// dropped index come back from the committed definition), and a later ADD COLUMN of another
/// type reads NULLs, never the killed transaction's values.
#[tokio::test(flavor = "multi_thread")]
async fn uncommitted_add_drop_column_is_gone_after_sigkill() {
    let mut server = TestServer::start(&[]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE wide (id int PRIMARY KEY, k int, s text);
             CREATE UNIQUE INDEX wide_k ON wide (k);
             INSERT INTO wide SELECT g, g, 's' || g FROM generate_series(1, 300) g;
             ALTER TABLE wide ADD COLUMN kept int DEFAULT 5;
             BEGIN;
             ALTER TABLE wide ADD COLUMN doomed text DEFAULT 'gone';
             UPDATE wide SET doomed = 'killed' WHERE id <= 100;
             ALTER TABLE wide DROP COLUMN k;
             INSERT INTO wide VALUES (301, 's301', 6, 'killed');",
        )
        .await
        .expect("ADD and DROP COLUMN in an open block");
    let data_dir = server.kill();
    drop(client);
    server = TestServer::start_in(data_dir, &[]);
    let client = server.connect().await;
    let columns: Vec<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns WHERE table_name = 'wide' ORDER BY ordinal_position",
            &[],
        )
        .await
        .expect("columns")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(columns, ["id", "k", "s", "kept"]);
    let row = client
        .query_one("SELECT count(*), sum(k)::bigint, sum(kept)::bigint FROM wide", &[])
        .await
        .expect("rows");
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, i64>(1), row.get::<_, i64>(2)),
        (300, 45150, 1500)
    );
    let s: String =
        client.query_one("SELECT s FROM wide WHERE k = 77", &[]).await.expect("by index").get(0);
    assert_eq!(s, "s77");
    let duplicate = client.execute("INSERT INTO wide VALUES (302, 77, 'dup')", &[]).await;
    let code = duplicate.expect_err("the unique index is back").code().cloned();
    assert_eq!(code, Some(tokio_postgres::error::SqlState::UNIQUE_VIOLATION));
    client.batch_execute("ALTER TABLE wide ADD COLUMN doomed int").await.expect("add again");
    let nulls: i64 = client
        .query_one("SELECT count(*) FROM wide WHERE doomed IS NULL", &[])
        .await
        .expect("nulls")
        .get(0);
    assert_eq!(nulls, 300);
}

/// A bulk load (INSERT ... SELECT, the bulk insert path) killed with SIGKILL midway, several
/// times: after each restart none of its rows is visible, through the table or through its
/// index, the rows committed before it are intact, and the same keys then load and commit.
#[tokio::test(flavor = "multi_thread")]
async fn a_load_killed_midway_leaves_nothing_visible() {
    const LOAD_ROWS: i64 = 400_000;
    let mut server = TestServer::start(&[]);
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    {
        let client = server.connect().await;
        client
            .batch_execute(
                "CREATE TABLE loaded (id bigint PRIMARY KEY, v int NOT NULL, s text);
                 CREATE INDEX loaded_v ON loaded (v);
                 INSERT INTO loaded SELECT i, i % 7, 'kept' FROM generate_series(1, 1000) AS i;",
            )
            .await
            .expect("schema and committed rows");
    }
    for cycle in 0..cycles().min(4) {
        let connection_string = server.connection_string();
        let load = tokio::spawn(async move {
            let Ok((client, connection)) = tokio_postgres::connect(&connection_string, NoTls).await
            else {
                return;
            };
            tokio::spawn(connection);
            let sql = format!(
                "INSERT INTO loaded SELECT i, i % 7, 'loading' FROM generate_series(1001, {LOAD_ROWS}) AS i"
            );
            let _ = client.batch_execute(&sql).await;
        });
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokio::time::sleep(Duration::from_millis(150 + seed % 500)).await;
        let data_dir = server.kill();
        let _ = load.await;
        server = TestServer::start_in(data_dir, &[]);
        let client = server.connect().await;
        let count = |sql: &'static str| {
            let client = &client;
            async move { client.query_one(sql, &[]).await.expect(sql).get::<_, i64>(0) }
        };
        assert_eq!(count("SELECT count(*) FROM loaded").await, 1000, "cycle {cycle}: table");
        assert_eq!(count("SELECT count(*) FROM loaded WHERE v = 3").await, 143, "cycle {cycle}");
        assert_eq!(count("SELECT count(*) FROM loaded WHERE s = 'loading'").await, 0);
        eprintln!("cycle {cycle}: the killed load left nothing visible");
    }
    let client = server.connect().await;
    client
        .batch_execute(
            "INSERT INTO loaded SELECT i, i % 7, 'loaded' FROM generate_series(1001, 5000) AS i",
        )
        .await
        .expect("the killed loads' keys are free");
    let total = client.query_one("SELECT count(*) FROM loaded", &[]).await.expect("count");
    assert_eq!(total.get::<_, i64>(0), 5000);
}

/// setval is durable when it returns, whatever nextval had reserved in memory: after
/// SIGKILL the next value follows the one setval set (is_called true and false), and a value
/// nextval handed out before a kill is never handed out again.
#[tokio::test(flavor = "multi_thread")]
async fn setval_survives_sigkill() {
    let mut server = TestServer::start(&[]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE numbered (id serial PRIMARY KEY, big bigserial);
             INSERT INTO numbered DEFAULT VALUES; INSERT INTO numbered DEFAULT VALUES;",
        )
        .await
        .expect("setup");
    let value = |row: tokio_postgres::Row| row.get::<_, i64>(0);
    let set: i64 = value(
        client.query_one("SELECT setval('numbered_id_seq', 1000)", &[]).await.expect("setval"),
    );
    assert_eq!(set, 1000);
    client
        .query_one("SELECT setval('numbered_big_seq', 9223372036854775806, false)", &[])
        .await
        .expect("setval is_called false");
    let data_dir = server.kill();
    drop(client);
    server = TestServer::start_in(data_dir, &[]);
    let client = server.connect().await;
    let next = |sql: &'static str| {
        let client = &client;
        async move { value(client.query_one(sql, &[]).await.expect(sql)) }
    };
    assert_eq!(next("SELECT nextval('numbered_id_seq')").await, 1001);
    assert_eq!(next("SELECT nextval('numbered_big_seq')").await, 9223372036854775806);
    assert_eq!(next("SELECT nextval('numbered_big_seq')").await, i64::MAX);
    let past_maximum = client.query_one("SELECT nextval('numbered_big_seq')", &[]).await;
    let error = past_maximum.expect_err("past the maximum");
    assert_eq!(error.code().map(|code| code.code()), Some("2200H"));
    let handed_out = next("SELECT nextval('numbered_id_seq')").await;
    let data_dir = server.kill();
    drop(client);
    server = TestServer::start_in(data_dir, &[]);
    let client = server.connect().await;
    let after: i64 =
        value(client.query_one("SELECT nextval('numbered_id_seq')", &[]).await.expect("nextval"));
    assert!(after > handed_out, "{after} repeats a value at or below {handed_out}");
}

/// A sequence of CREATE SEQUENCE keeps serial's property: a value nextval handed out before
/// SIGKILL is never handed out again (ascending and descending, past a reservation block),
/// and setval is durable when it returns.
#[tokio::test(flavor = "multi_thread")]
async fn created_sequences_survive_sigkill() {
    let mut server = TestServer::start(&[]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE SEQUENCE up_by_three INCREMENT BY 3 START 10;
             CREATE SEQUENCE down INCREMENT BY -1 MAXVALUE 0;
             CREATE SEQUENCE set_here;",
        )
        .await
        .expect("setup");
    let value = |row: tokio_postgres::Row| row.get::<_, i64>(0);
    let mut up = Vec::new();
    for _ in 0..40 {
        up.push(value(client.query_one("SELECT nextval('up_by_three')", &[]).await.expect("up")));
    }
    assert_eq!(up[0], 10);
    assert_eq!(up[39], 10 + 39 * 3);
    let down = value(client.query_one("SELECT nextval('down')", &[]).await.expect("down"));
    assert_eq!(down, 0);
    client.query_one("SELECT setval('set_here', 500, false)", &[]).await.expect("setval");
    let data_dir = server.kill();
    drop(client);
    server = TestServer::start_in(data_dir, &[]);
    let client = server.connect().await;
    let after = value(client.query_one("SELECT nextval('up_by_three')", &[]).await.expect("up"));
    assert!(after > up[39] && (after - 10) % 3 == 0, "{after} after {}", up[39]);
    let after = value(client.query_one("SELECT nextval('down')", &[]).await.expect("down"));
    assert!(after < down, "{after} repeats a value at or above {down}");
    let after = value(client.query_one("SELECT nextval('set_here')", &[]).await.expect("set"));
    assert_eq!(after, 500);
}

/// The catalog names of the engine tables of temp tables (`pg_temp_N.t`, design 019) in a
/// stopped server's data directory (run without a tier: `--tier-size 0`).
fn engine_temp_tables(data_dir: &std::path::Path) -> Vec<String> {
    let config = tierdb_storage::StoreConfig::local(data_dir).expect("store config");
    let store = Arc::new(tierdb_storage::PageStore::open(config).expect("page store"));
    let engine = tierdb_engine::Engine::open(store).expect("engine");
    let names = engine.table_names();
    names.into_iter().filter(|name| name.starts_with("pg_temp_")).collect()
}

/// The unlogged stores of temp tables (`tierdb-tables-<pid>-<n>`) in a server's temp space
/// (`--tier-size 0`: `<data dir>/tier/temp`).
fn temp_table_stores(data_dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(data_dir.join("tier").join("temp")) else {
        return Vec::new();
    };
    let names = entries.map(|entry| entry.expect("entry").file_name().to_string_lossy().into());
    names.filter(|name: &String| name.starts_with(tierdb_storage::TABLE_STORE_PREFIX)).collect()
}

/// Temp tables of two sessions alive at SIGKILL (one committed with rows and an index, one
/// created by an open block, another session's): their rows were in each session's
/// unlogged store in the temp space, which the restart removes; their definitions are dropped at startup before any session runs, so
/// nothing of them is visible, and the engine catalog never named them.
#[tokio::test(flavor = "multi_thread")]
async fn temp_tables_are_gone_after_sigkill() {
    let no_tier = ["--tier-size", "0"];
    let server = TestServer::start(&no_tier);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TEMP TABLE tmp_crash (id int PRIMARY KEY, note text);
             CREATE INDEX ON tmp_crash (note);
             INSERT INTO tmp_crash SELECT g, 'n' || g FROM generate_series(1, 3000) g;",
        )
        .await
        .expect("a temp table");
    client
        .batch_execute(
            "BEGIN; CREATE TEMP TABLE tmp_open (a int); INSERT INTO tmp_open VALUES (1);",
        )
        .await
        .expect("a temp table in an open block");
    let other = server.connect().await;
    other
        .batch_execute("CREATE TEMP TABLE tmp_other (a int); INSERT INTO tmp_other VALUES (1);")
        .await
        .expect("another session's temp table");
    let data_dir = server.kill();
    drop((client, other));
    let stores = temp_table_stores(data_dir.path());
    assert_eq!(stores.len(), 2, "each session's store is there before the restart: {stores:?}");
    let server = TestServer::start_in(data_dir, &no_tier);
    let stores = temp_table_stores(server.data_dir.path());
    assert_eq!(stores, Vec::<String>::new(), "the restart removed the dead process's store");
    let client = server.connect().await;
    let temp: i64 = client
        .query_one("SELECT count(*) FROM pg_class WHERE relpersistence = 't'", &[])
        .await
        .expect("pg_class")
        .get(0);
    assert_eq!(temp, 0);
    let error = client.query("SELECT * FROM tmp_crash", &[]).await.expect_err("gone");
    assert_eq!(server_support::sqlstate(&error), "42P01");
    client
        .batch_execute("CREATE TEMP TABLE tmp_crash (id int PRIMARY KEY, note text)")
        .await
        .expect("the name is free");
    let rows: i64 =
        client.query_one("SELECT count(*) FROM tmp_crash", &[]).await.expect("count").get(0);
    assert_eq!(rows, 0, "a fresh temp table, none of the old rows");
    client.batch_execute("DROP TABLE tmp_crash").await.expect("drop");
    drop(client);
    let data_dir = server.stop();
    let stores = temp_table_stores(data_dir.path());
    assert_eq!(stores, Vec::<String>::new(), "no temp table left: the store went with the last");
    assert_eq!(engine_temp_tables(data_dir.path()), Vec::<String>::new());
}
