//! Temporary objects through the server (design 011): spilling operators use files in the
//! temp directory that have no name (so SIGKILL leaves nothing), leftovers of a crashed
//! process are removed at start, EXPLAIN ANALYZE and the statistics show what spilled, and
//! the server-wide operator memory bound makes queries spill instead of fail.

use crate::server_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use server_support::TestServer;

fn temp_dir(server: &TestServer) -> PathBuf {
    server.data_dir.path().join("tier").join("temp")
}

fn names_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default()
}

/// Descriptors of `pid` open on files in `dir` that were unlinked.
fn deleted_files_open(pid: u32, dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return 0 };
    let prefix = dir.to_string_lossy().into_owned();
    entries
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.starts_with(&prefix) && target.ends_with("(deleted)"))
        .count()
}

async fn load(client: &tokio_postgres::Client, rows: u32) {
    client
        .batch_execute(&format!(
            "CREATE TABLE t (id int PRIMARY KEY, g int, s text);
             INSERT INTO t SELECT i, i % 1000, 'value-' || (i * 7919 % {rows}) FROM generate_series(1, {rows}) i;"
        ))
        .await
        .expect("load");
}

async fn text_rows(client: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    let messages = client.simple_query(sql).await.expect(sql);
    messages
        .into_iter()
        .filter_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => {
                Some(row.get(0).unwrap_or("").to_string())
            }
            _ => None,
        })
        .collect()
}

async fn single_i64(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.expect(sql).get(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn spill_files_have_no_name_and_vanish_with_a_killed_server() {
    let server = TestServer::start(&["--work-mem", "64kB"]);
    let client = server.connect().await;
    load(&client, 200_000).await;
    let dir = temp_dir(&server);
    let pid = server.child.id();
    // A long spilling query on its own connection.
    let connection_string = server.connection_string();
    let query = tokio::spawn(async move {
        let (client, connection) =
            tokio_postgres::connect(&connection_string, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client
            .simple_query(
                "SELECT count(*) FROM (SELECT a.s FROM t a JOIN t b ON a.s = b.s JOIN t c ON b.s = c.s ORDER BY 1) x",
            )
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = 0;
    while seen == 0 && Instant::now() < deadline && !query.is_finished() {
        seen = deleted_files_open(pid, &dir);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        seen > 0,
        "the query spilled to {} (open descriptors of unlinked files)",
        dir.display()
    );
    // A file has a name only between its create and its unlink, a few microseconds: a name
    // seen now is gone a moment later.
    let named = names_in(&dir);
    std::thread::sleep(Duration::from_millis(50));
    let lasting: Vec<&String> = named.iter().filter(|name| dir.join(name).exists()).collect();
    assert!(lasting.is_empty(), "temporary files have no lasting name: {lasting:?}");
    let data_dir = server.kill();
    let _ = query.await;
    // A kill inside that window can leave one name (the start below removes it).
    let temp = data_dir.path().join("tier").join("temp");
    assert!(names_in(&temp).len() <= 1, "{:?}", names_in(&temp));

    // A file a process left between create and unlink is removed at start.
    let leftover = temp.join("tierdb-temp-999999-0");
    std::fs::write(&leftover, b"left by a crash").unwrap();
    let server = TestServer::start_in(data_dir, &["--work-mem", "64kB"]);
    assert!(!leftover.exists(), "leftover removed at start");
    assert_eq!(names_in(&temp_dir(&server)), Vec::<String>::new(), "nothing left after start");
    let client = server.connect().await;
    let joined = single_i64(&client, "SELECT count(*) FROM t a JOIN t b ON a.s = b.s").await;
    let distinct = single_i64(&client, "SELECT count(DISTINCT s) FROM t").await;
    assert!(joined >= distinct && distinct > 100_000, "joined={joined} distinct={distinct}");
    let in_use = text_rows(
        &client,
        "SELECT files_open || '/' || bytes_in_use || '/' || temp_files FROM tierdb_stat_temp",
    )
    .await;
    let parts: Vec<i64> = in_use[0].split('/').map(|part| part.parse().unwrap()).collect();
    assert_eq!((parts[0], parts[1]), (0, 0), "files are removed at statement end: {in_use:?}");
    assert!(parts[2] > 0, "the join spilled: {in_use:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_analyze_and_statistics_show_what_spilled() {
    let server = TestServer::start(&[]);
    let client = server.connect().await;
    load(&client, 60_000).await;
    let before = single_i64(&client, "SELECT temp_files FROM pg_stat_database").await;

    client.batch_execute("SET work_mem = '64MB'").await.unwrap();
    let plan = text_rows(&client, "EXPLAIN ANALYZE SELECT * FROM t ORDER BY s").await.join("\n");
    assert!(plan.contains("Sort Method: quicksort  Memory: "), "{plan}");
    let plan =
        text_rows(&client, "EXPLAIN ANALYZE SELECT s, count(*) FROM t GROUP BY s").await.join("\n");
    assert!(plan.contains("Batches: 1  Memory Usage: ") && !plan.contains("Disk Usage"), "{plan}");
    let plan =
        text_rows(&client, "EXPLAIN ANALYZE SELECT * FROM t ORDER BY s LIMIT 10").await.join("\n");
    assert!(plan.contains("Sort Method: top-N heapsort  Memory: "), "{plan}");
    assert_eq!(single_i64(&client, "SELECT temp_files FROM pg_stat_database").await, before);

    client.batch_execute("SET work_mem = '64kB'").await.unwrap();
    let plan = text_rows(&client, "EXPLAIN ANALYZE SELECT * FROM t ORDER BY s").await.join("\n");
    assert!(plan.contains("Sort Method: external merge  Disk: "), "{plan}");
    let plan =
        text_rows(&client, "EXPLAIN ANALYZE SELECT s, count(*) FROM t GROUP BY s").await.join("\n");
    assert!(plan.contains("Disk Usage: ") && !plan.contains("Batches: 1 "), "{plan}");
    let plan = text_rows(&client, "EXPLAIN ANALYZE SELECT count(*) FROM t a JOIN t b ON a.s = b.s")
        .await
        .join("\n");
    assert!(plan.contains("Hash Join") && plan.contains("Disk Usage: "), "{plan}");
    let after = single_i64(&client, "SELECT temp_files FROM pg_stat_database").await;
    let bytes = single_i64(&client, "SELECT temp_bytes FROM pg_stat_database").await;
    assert!(
        after > before && bytes > 1_000_000,
        "temp_files {before} -> {after}, temp_bytes {bytes}"
    );

    let metrics = metrics_text(server.metrics_port);
    let line =
        metrics.lines().find(|line| line.starts_with("tierdb_temp_files_total ")).expect(&metrics);
    let files: u64 = line.split(' ').nth(1).unwrap().parse().unwrap();
    assert_eq!(files, u64::try_from(after).unwrap());
}

/// `/metrics` over a plain TCP request.
fn metrics_text(port: u16) -> String {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut body = String::new();
    socket.read_to_string(&mut body).unwrap();
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spent_operator_memory_pool_makes_queries_spill_not_fail() {
    // Generous work_mem, but 1 MB for every operator of the server together.
    let server = TestServer::start(&["--work-mem", "256MB", "--operator-memory", "1MB"]);
    let client = server.connect().await;
    load(&client, 60_000).await;
    let plan =
        text_rows(&client, "EXPLAIN ANALYZE SELECT s, count(*) FROM t GROUP BY s").await.join("\n");
    assert!(plan.contains("Disk Usage: "), "the pool, not work_mem, made it spill: {plan}");
    let groups =
        single_i64(&client, "SELECT count(*) FROM (SELECT s, count(*) FROM t GROUP BY s) x").await;
    let distinct = single_i64(&client, "SELECT count(DISTINCT s) FROM t").await;
    assert_eq!(groups, distinct);
    let sorted = text_rows(&client, "SELECT s FROM t ORDER BY s DESC LIMIT 1 OFFSET 59999").await;
    let smallest = text_rows(&client, "SELECT min(s) FROM t").await;
    assert_eq!(sorted, smallest);
    let used = single_i64(&client, "SELECT operator_memory_bytes FROM tierdb_stat_temp").await;
    assert_eq!(used, 0, "grants are given back at statement end");
}
