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
