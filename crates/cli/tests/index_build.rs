//! CREATE INDEX through a real server: a build that spills (small maintenance_work_mem) shows
//! its progress in pg_stat_progress_create_index, and a SIGKILL in the middle of it leaves no
//! temp file and no index; after the restart the same build succeeds and its index agrees
//! with a full scan.

use crate::server_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use server_support::TestServer;

const ROWS: i64 = 300_000;
/// How long the poller waits for the build to reach its sorting or loading phase.
const PROGRESS_TIMEOUT: Duration = Duration::from_secs(120);
const BUILD: &str = "CREATE INDEX big_grp ON big (grp, label)";

/// The files in the server's temp space (`<data_dir>/tier/temp`).
fn temp_files(data_dir: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(data_dir.join("tier").join("temp")) {
        Ok(entries) => entries.map(|entry| entry.expect("temp dir entry").path()).collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => panic!("read temp dir: {error}"),
    }
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.expect(sql).get(0)
}

async fn plan(client: &tokio_postgres::Client, sql: &str) -> String {
    let rows = client.query(&format!("EXPLAIN {sql}"), &[]).await.expect("explain");
    rows.iter().map(|row| row.get::<_, String>(0)).collect::<Vec<_>>().join("\n")
}

/// Polls the progress view until the build `pid` runs reaches sorting or loading; returns
/// the phase seen.
async fn wait_for_sort_or_load(client: &tokio_postgres::Client, pid: i32) -> String {
    let started = Instant::now();
    loop {
        let rows = client
            .query(
                "SELECT pid, phase, tuples_done, command, datname FROM pg_stat_progress_create_index",
                &[],
            )
            .await
            .expect("progress view");
        if let Some(row) = rows.first() {
            assert_eq!(row.get::<_, i32>(0), pid, "the building session's pid");
            assert_eq!(row.get::<_, &str>(3), "CREATE INDEX");
            assert_eq!(row.get::<_, &str>(4), "tierdb");
            let phase: String = row.get(1);
            let tuples_done: i64 = row.get(2);
            if phase != "building index: scanning table" || tuples_done > 0 {
                return phase;
            }
        }
        assert!(started.elapsed() < PROGRESS_TIMEOUT, "the build never reached sorting");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_during_create_index_leaves_no_temp_file_and_no_index() {
    let server = TestServer::start(&[]);
    let client = server.connect().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE big (id int PRIMARY KEY, grp int, label text);
             INSERT INTO big SELECT g, g % 1000, 'label number ' || g FROM generate_series(1, {ROWS}) g;"
        ))
        .await
        .expect("populate");

    let builder = server.connect().await;
    let pid: i32 = builder.query_one("SELECT pg_backend_pid()", &[]).await.expect("pid").get(0);
    builder.batch_execute("SET maintenance_work_mem = '1MB'").await.expect("set");
    let build = tokio::spawn(async move { builder.batch_execute(BUILD).await });
    let phase = wait_for_sort_or_load(&client, pid).await;
    assert!(!build.is_finished(), "killed during the build (phase {phase})");
    let data_dir = server.kill();
    assert!(build.await.expect("join").is_err(), "the build did not complete");
    assert_eq!(temp_files(data_dir.path()), Vec::<PathBuf>::new(), "temp files after SIGKILL");

    let server = TestServer::start_in(data_dir, &[]);
    let client = server.connect().await;
    let indexes = "SELECT count(*) FROM pg_indexes WHERE indexname = 'big_grp'";
    assert_eq!(count(&client, indexes).await, 0, "no partial index after the crash");
    assert!(client
        .query("SELECT * FROM pg_stat_progress_create_index", &[])
        .await
        .unwrap()
        .is_empty());
    client.batch_execute("SET maintenance_work_mem = '1MB'").await.expect("set");
    client.batch_execute(BUILD).await.expect("the same build after the restart");
    assert_eq!(count(&client, indexes).await, 1);
    assert_eq!(
        temp_files(server.data_dir.path()),
        Vec::<PathBuf>::new(),
        "temp files after the build"
    );

    // The index and a full scan agree (grp + 0 cannot use the index).
    for group in [0, 7, 999] {
        let through_index = format!("SELECT count(*) FROM big WHERE grp = {group}");
        assert!(plan(&client, &through_index).await.contains("Index Scan using big_grp"));
        let full_scan = format!("SELECT count(*) FROM big WHERE grp + 0 = {group}");
        assert!(!plan(&client, &full_scan).await.contains("Index Scan"));
        assert_eq!(count(&client, &through_index).await, ROWS / 1000);
        assert_eq!(count(&client, &full_scan).await, ROWS / 1000);
    }
    let all = "SELECT count(*) FROM big WHERE grp >= 0";
    assert!(plan(&client, all).await.contains("big_grp"), "{}", plan(&client, all).await);
    assert_eq!(count(&client, all).await, ROWS);
}
