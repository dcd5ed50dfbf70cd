//! Observability through the SQL interface and the metrics endpoint: EXPLAIN (ANALYZE,
//! BUFFERS) per-node buffer lines, `tierdb_stat_tier_cache()`, `tierdb_stat_statements`,
//! Prometheus `/metrics`, and the estimates autoanalyze gives EXPLAIN.

use crate::server_support;

use std::io::{Read, Write};

use server_support::{connect, TestServer};
use tokio_postgres::{Client, SimpleQueryMessage};

async fn rows(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    client
        .simple_query(sql)
        .await
        .expect(sql)
        .into_iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => {
                Some((0..row.len()).map(|index| row.get(index).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_analyze_buffers_and_statistics_views() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client
        .batch_execute(
            "CREATE TABLE obs (id int PRIMARY KEY, v text);
             INSERT INTO obs SELECT g, 'value ' || g FROM generate_series(1, 5000) AS g;",
        )
        .await
        .expect("load");
    let plan =
        rows(&client, "EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM obs WHERE id > 10").await;
    let lines: Vec<String> = plan.into_iter().filter_map(|row| row[0].clone()).collect();
    let text = lines.join("\n");
    assert!(text.contains("Index Scan using obs_pkey on obs"), "{text}");
    assert!(text.contains("actual time="), "{text}");
    assert!(text.contains("rows=4990"), "{text}");
    let buffer_lines: Vec<&String> =
        lines.iter().filter(|line| line.contains("Buffers: shared hit=")).collect();
    assert_eq!(buffer_lines.len(), 2, "one Buffers line per node: {text}");
    assert!(
        buffer_lines.iter().all(|line| line.contains(" read=") && line.contains(" tier_hit=")),
        "{text}"
    );
    // The scan touched pages: its hit count is positive.
    let scan_hits: u64 = buffer_lines[1]
        .split("hit=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|hits| hits.parse().ok())
        .expect("hit count");
    assert!(scan_hits > 0, "{text}");

    let tier = rows(&client, "SELECT total_size, used_size, hits, misses, writes, invalidations, hit_ratio FROM tierdb_stat_tier_cache()").await;
    assert_eq!(tier.len(), 1);
    assert_eq!(tier[0][0].as_deref(), Some("67108864"), "64 MB tier as configured: {tier:?}");

    for id in 1..=7 {
        client.query_one("SELECT v FROM obs WHERE id = $1", &[&id]).await.expect("point select");
    }
    let statements = rows(
        &client,
        "SELECT query, calls, rows, shared_blks_hit FROM tierdb_stat_statements WHERE query LIKE '%FROM obs WHERE id = $1%'",
    )
    .await;
    assert_eq!(statements.len(), 1, "{statements:?}");
    assert_eq!(statements[0][1].as_deref(), Some("7"), "{statements:?}");
    assert_eq!(statements[0][2].as_deref(), Some("7"), "{statements:?}");
    let hits: u64 = statements[0][3].as_deref().and_then(|hits| hits.parse().ok()).expect("hits");
    assert!(hits >= 7, "{statements:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn prometheus_metrics_endpoint() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    rows(&client, "SELECT 1").await;
    let mut socket =
        std::net::TcpStream::connect(("127.0.0.1", server.metrics_port)).expect("metrics");
    socket.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("request");
    let mut reply = String::new();
    socket.read_to_string(&mut reply).expect("reply");
    assert!(reply.starts_with("HTTP/1.1 200 OK"), "{reply}");
    for metric in [
        "tierdb_buffer_pool_hits_total",
        "tierdb_tier_hits_total",
        "tierdb_tier_capacity_bytes 67108864",
        "tierdb_volume_get_requests_total",
        "tierdb_wal_syncs_total",
        "tierdb_connections 1",
    ] {
        assert!(reply.contains(metric), "missing {metric}: {reply}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn past_work_mem_sort_hash_aggregate_and_join_spill_and_agree_with_memory() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    client
        .batch_execute(
            "CREATE TABLE wm (id int PRIMARY KEY, g int, v text);
             INSERT INTO wm SELECT i, i % 1000, repeat('x', 100) || i FROM generate_series(1, 20000) AS i;",
        )
        .await
        .expect("load");
    // Within the default 4 MB: fine.
    let sorted =
        rows(&client, "SELECT count(*) FROM (SELECT v FROM wm ORDER BY v LIMIT 5) AS s").await;
    assert_eq!(sorted[0][0].as_deref(), Some("5"));
    client.batch_execute("SET work_mem = '64kB'").await.expect("set");
    let shown = rows(&client, "SHOW work_mem").await;
    assert_eq!(shown[0][0].as_deref(), Some("64kB"));
    // Past 64kB each of these spills to the temp space; the same queries with 64MB are the
    // reference.
    let queries = [
        "SELECT md5(string_agg(v, ',')) FROM (SELECT v FROM wm ORDER BY v) s",
        "SELECT count(*), sum(c) FROM (SELECT v, count(*) c FROM wm GROUP BY v) s",
        "SELECT count(*) FROM wm a JOIN (SELECT g, v FROM wm) b ON a.v = b.v",
    ];
    let mut spilled = Vec::new();
    for sql in queries {
        spilled.push(rows(&client, sql).await);
    }
    // ORDER BY ... LIMIT keeps only the top rows (a bounded sort): it fits the small budget.
    let top = rows(&client, "SELECT substr(v, 101) FROM wm ORDER BY v DESC LIMIT 3 OFFSET 1").await;
    let top: Vec<Option<String>> = top.into_iter().map(|row| row[0].clone()).collect();
    assert_eq!(
        top,
        vec![Some("9998".to_string()), Some("9997".to_string()), Some("9996".to_string())]
    );
    client.batch_execute("SET work_mem = '64MB'").await.expect("set");
    for (sql, spilled) in queries.iter().zip(spilled) {
        assert_eq!(rows(&client, sql).await, spilled, "{sql}");
    }
    let all = rows(&client, "SELECT count(*) FROM (SELECT v FROM wm ORDER BY v) AS s").await;
    assert_eq!(all[0][0].as_deref(), Some("20000"));
}

/// A server with autoanalyze on gathers a loaded table's statistics by itself: EXPLAIN's
/// estimate turns from the default (1,000 rows for a table never analyzed) to the rows
/// loaded, with no ANALYZE run.
#[tokio::test(flavor = "multi_thread")]
async fn autoanalyze_gathers_statistics_of_a_loaded_table() {
    let server = TestServer::start(&["--autoanalyze-interval-ms", "200"]);
    let client = connect(&server).await;
    client
        .batch_execute(
            "CREATE TABLE loaded (id int PRIMARY KEY, k int); \
             INSERT INTO loaded SELECT g, g % 10 FROM generate_series(1, 4321) g",
        )
        .await
        .expect("load");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let plan = rows(&client, "EXPLAIN SELECT * FROM loaded WHERE k = 3").await;
        let first = plan[0][0].clone().expect("a plan line");
        if first.contains("rows=432)") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no statistics after 60 s: {first}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
