//! Elastic capacity over the wire (design 015): a server with small capacity units grows
//! under load, shrinks after the configured delay once the load stops, loses no query while
//! it resizes, and shows it all in `tierdb_stat_capacity()` and `/metrics`; a superuser
//! changes min and max at run time, another role gets 42501.

use crate::server_support;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use server_support::{connect, sqlstate, TestServer};
use tokio_postgres::Client;

/// 8 MiB units: 5 MiB (640 pages) of buffer pool and room for 2 connections each.
const FLAGS: &[&str] = &[
    "--min-capacity",
    "0.5",
    "--max-capacity",
    "8",
    "--capacity-unit",
    "8MB",
    "--scale-down-delay-ms",
    "1500",
];
const ROWS: i64 = 100_000;
const LOAD_CLIENTS: usize = 4;

/// (current, target, last_decision, last_reason, decisions, capacity_unit_seconds)
async fn capacity(client: &Client) -> (f64, f64, String, String, i64, f64) {
    let row = client
        .query_one(
            "SELECT current_capacity, target_capacity, last_decision, last_reason, decisions,
                    capacity_unit_seconds FROM tierdb_stat_capacity()",
            &[],
        )
        .await
        .expect("tierdb_stat_capacity()");
    (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5))
}

/// Polls until `wanted` holds for the current capacity, or `limit` passes.
async fn wait_for(client: &Client, limit: Duration, wanted: impl Fn(f64) -> bool) -> f64 {
    let started = Instant::now();
    loop {
        let current = capacity(client).await.0;
        if wanted(current) || started.elapsed() > limit {
            return current;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Scans, point reads and updates until `stop`; counts queries and failures.
async fn load(
    client: Client,
    seed: i64,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
) {
    let mut step = seed;
    while !stop.load(Ordering::Relaxed) {
        step += 7919;
        let key = step % ROWS + 1;
        let outcome = match step % 3 {
            0 => {
                client.simple_query("SELECT count(*), sum(length(v)) FROM elastic").await.map(drop)
            }
            1 => client
                .simple_query(&format!("SELECT v FROM elastic WHERE id = {key}"))
                .await
                .map(drop),
            _ => client
                .simple_query(&format!("UPDATE elastic SET n = n + 1 WHERE id = {key}"))
                .await
                .map(drop),
        };
        done.fetch_add(1, Ordering::Relaxed);
        if let Err(error) = outcome {
            eprintln!("load query failed: {error:?}");
            failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `LOAD_CLIENTS` connections running `load`.
struct Load {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    async fn start(server: &TestServer) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let mut workers = Vec::new();
        for seed in 0..LOAD_CLIENTS {
            let worker = connect(server).await;
            let seed = i64::try_from(seed).expect("fits");
            let task = load(worker, seed, stop.clone(), done.clone(), failed.clone());
            workers.push(tokio::spawn(task));
        }
        Load { stop, done, failed, workers }
    }

    async fn stop_without_failures(self) {
        self.stop.store(true, Ordering::Relaxed);
        for worker in self.workers {
            worker.await.expect("load task");
        }
        let queries = self.done.load(Ordering::Relaxed);
        assert!(queries > 0, "no load ran");
        let failed = self.failed.load(Ordering::Relaxed);
        assert_eq!(failed, 0, "queries failed while resizing ({queries} run)");
    }
}

async fn create_table(client: &Client) {
    // About 12 MB: some 1,500 pages, five times the buffer pool at 0.5 units.
    client
        .batch_execute(&format!(
            "CREATE TABLE elastic (id int PRIMARY KEY, n int, v text);
             INSERT INTO elastic SELECT g, 0, repeat('x', 100) || g FROM generate_series(1, {ROWS}) AS g;"
        ))
        .await
        .expect("load");
}

#[tokio::test(flavor = "multi_thread")]
async fn capacity_grows_under_load_and_shrinks_after_the_delay_without_failed_queries() {
    let server = TestServer::start(FLAGS);
    let client = connect(&server).await;
    let (current, _, _, _, _, _) = capacity(&client).await;
    assert_eq!(current, 0.5, "starts at min capacity");
    create_table(&client).await;
    let load = Load::start(&server).await;
    let grown = wait_for(&client, Duration::from_secs(30), |current| current >= 2.0).await;
    let (_, _, decision, reason, decisions, _) = capacity(&client).await;
    assert!(grown >= 2.0, "capacity did not grow under load: {grown}");
    assert!(decisions >= 1, "no decision counted");
    assert!(!reason.is_empty() && decision != "hold", "{decision} {reason}");
    // Keep the load on for a while: the controller may resize during it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    load.stop_without_failures().await;
    let during = capacity(&client).await.0;
    // Idle: the working set ages out of the 4 s window, then the 1.5 s delay passes.
    let shrunk =
        wait_for(&client, Duration::from_secs(40), |current| current < during.min(2.0)).await;
    assert!(shrunk < during.min(2.0), "capacity did not shrink after the load stopped: {shrunk}");
    let (_, _, decision, _, _, unit_seconds) = capacity(&client).await;
    assert_eq!(decision, "shrink");
    assert!(unit_seconds > 0.0, "capacity_unit_seconds={unit_seconds}");
    // The data is intact after growing and shrinking.
    let row =
        client.query_one("SELECT count(*), sum(n)::int8 FROM elastic", &[]).await.expect("count");
    assert_eq!(row.get::<_, i64>(0), ROWS);
    let mut socket =
        std::net::TcpStream::connect(("127.0.0.1", server.metrics_port)).expect("metrics");
    socket.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("request");
    let mut reply = String::new();
    socket.read_to_string(&mut reply).expect("reply");
    for metric in [
        "tierdb_capacity_enabled 1",
        "tierdb_capacity_current_units",
        "tierdb_capacity_max_units 8",
        "tierdb_capacity_working_set_pages",
        "tierdb_capacity_unit_seconds_total",
    ] {
        assert!(reply.contains(metric), "missing {metric}: {reply}");
    }
}

/// Lowering max shrinks at once (no delay applies to the bounds) and raising it lets the
/// load grow capacity again: many resizes of both directions under reads and writes.
#[tokio::test(flavor = "multi_thread")]
async fn resizing_back_and_forth_under_load_fails_no_query() {
    const CYCLES: usize = 15;
    let server = TestServer::start(FLAGS);
    let client = connect(&server).await;
    create_table(&client).await;
    let load = Load::start(&server).await;
    let before = capacity(&client).await.4;
    let mut grown = 0;
    for _ in 0..CYCLES {
        client.batch_execute("SET tierdb.max_capacity = 0.5").await.expect("lower max");
        wait_for(&client, Duration::from_secs(10), |current| current <= 0.5).await;
        client.batch_execute("SET tierdb.max_capacity = 8").await.expect("raise max");
        let current = wait_for(&client, Duration::from_secs(5), |current| current > 0.5).await;
        grown += usize::from(current > 0.5);
    }
    load.stop_without_failures().await;
    let decisions = capacity(&client).await.4 - before;
    assert!(grown >= CYCLES / 2, "the load grew capacity again in only {grown} of {CYCLES} cycles");
    assert!(decisions >= i64::try_from(CYCLES).expect("fits"), "decisions={decisions}");
    let row = client.query_one("SELECT count(*) FROM elastic", &[]).await.expect("count");
    assert_eq!(row.get::<_, i64>(0), ROWS);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_superuser_changes_min_and_max_at_run_time() {
    let server = TestServer::start(FLAGS);
    let client = connect(&server).await;
    client.batch_execute("SET tierdb.min_capacity = 2").await.expect("raise min");
    let show = client.query_one("SHOW tierdb.min_capacity", &[]).await.expect("show");
    assert_eq!(show.get::<_, String>(0), "2");
    // Raising min grows at the next evaluation, without waiting for any load.
    let current = wait_for(&client, Duration::from_secs(10), |current| current >= 2.0).await;
    assert_eq!(current, 2.0);
    client.batch_execute("SET tierdb.max_capacity = '2.5'").await.expect("lower max");
    for (sql, wanted) in [
        ("SET tierdb.max_capacity = 1", "22023"),
        ("SET tierdb.min_capacity = 0.25", "22023"),
        ("SET tierdb.max_capacity = 'lots'", "22023"),
    ] {
        let error = client.batch_execute(sql).await.expect_err(sql);
        assert_eq!(sqlstate(&error), wanted, "{sql}: {error:?}");
    }
    let row = client
        .query_one("SELECT min_capacity, max_capacity FROM tierdb_stat_capacity()", &[])
        .await
        .expect("bounds");
    assert_eq!((row.get::<_, f64>(0), row.get::<_, f64>(1)), (2.0, 2.5));
    client.batch_execute("CREATE ROLE plain LOGIN").await.expect("role");
    let connection = format!("host=127.0.0.1 port={} user=plain dbname=tierdb", server.port);
    let (plain, connection) =
        tokio_postgres::connect(&connection, tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(connection);
    let error =
        plain.batch_execute("SET tierdb.max_capacity = 4").await.expect_err("not superuser");
    assert_eq!(sqlstate(&error), "42501", "{error:?}");
    let message = error.as_db_error().map(|error| error.message().to_string()).unwrap_or_default();
    assert_eq!(message, "permission denied to set parameter \"tierdb.max_capacity\"");
}

#[tokio::test(flavor = "multi_thread")]
async fn fixed_capacity_refuses_runtime_changes_and_bad_flags_are_refused() {
    let server = TestServer::start(&[]);
    let client = connect(&server).await;
    let error = client.batch_execute("SET tierdb.max_capacity = 4").await.expect_err("fixed");
    assert_eq!(sqlstate(&error), "55000", "{error:?}");
    let row =
        client.query_one("SELECT enabled FROM tierdb_stat_capacity()", &[]).await.expect("row");
    assert!(!row.get::<_, bool>(0));
    drop(server);
    for (flags, wanted) in [
        (&["--max-capacity", "0.3"][..], "invalid capacity"),
        (&["--min-capacity", "2", "--max-capacity", "1"][..], "is above max_capacity"),
        (&["--min-capacity", "1"][..], "needs max_capacity"),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_tierdb"))
            .arg("serve")
            .args(flags)
            .output()
            .expect("run tierdb serve");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flags:?} accepted");
        assert!(stderr.contains(wanted), "{flags:?}: {stderr}");
    }
}

/// (min, max) as `tierdb_stat_capacity()` shows them.
async fn bounds(client: &Client) -> (f64, f64) {
    let row = client
        .query_one("SELECT min_capacity, max_capacity FROM tierdb_stat_capacity()", &[])
        .await
        .expect("bounds");
    (row.get(0), row.get(1))
}

#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_min_and_max_from_the_config_file() {
    let file = tempfile::NamedTempFile::new().expect("config file");
    let write = |text: &str| std::fs::write(file.path(), text).expect("write config");
    write("min_capacity = 0.5\nmax_capacity = 8\ncapacity_unit_bytes = 8388608\n");
    let path = file.path().to_str().expect("utf-8 path");
    let server = TestServer::start(&["--config", path]);
    let client = connect(&server).await;
    assert_eq!(bounds(&client).await, (0.5, 8.0));
    let hangup = || {
        let pid = i32::try_from(server.child.id()).expect("pid fits");
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(pid, libc::SIGHUP) };
    };
    write("min_capacity = 1\nmax_capacity = 2.5\ncapacity_unit_bytes = 8388608\n");
    hangup();
    let started = Instant::now();
    while bounds(&client).await != (1.0, 2.5) && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(bounds(&client).await, (1.0, 2.5));
    // A bad file changes nothing, and the server keeps serving.
    write("min_capacity = 3\nmax_capacity = 2\n");
    hangup();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(bounds(&client).await, (1.0, 2.5));
}

/// The metrics text of `server`.
fn metrics(server: &TestServer) -> String {
    let mut socket =
        std::net::TcpStream::connect(("127.0.0.1", server.metrics_port)).expect("metrics");
    socket.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("request");
    let mut reply = String::new();
    socket.read_to_string(&mut reply).expect("reply");
    reply
}

/// With min 0 and no connection, the server goes down to capacity 0 (the buffer pool at its
/// 16-frame minimum, no operator memory), keeps listening, and serves the next connection.
#[tokio::test(flavor = "multi_thread")]
async fn min_zero_idles_down_to_zero_and_resumes_on_the_next_connection() {
    let flags = ["--min-capacity", "0", "--max-capacity", "4", "--capacity-unit", "8MB"];
    let server = TestServer::start(&[&flags[..], &["--scale-down-delay-ms", "500"]].concat());
    {
        let client = connect(&server).await;
        create_table(&client).await;
    }
    let started = Instant::now();
    let idle = |reply: &str| reply.contains("tierdb_capacity_current_units 0\n");
    while !idle(&metrics(&server)) && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reply = metrics(&server);
    assert!(idle(&reply), "did not reach capacity 0 when idle: {reply}");
    assert!(reply.contains("tierdb_buffer_pool_frames 16\n"), "{reply}");
    eprintln!("idle release after {:?} (includes the 4 s working-set window)", started.elapsed());
    let resumed = Instant::now();
    let client = connect(&server).await;
    let row = client.query_one("SELECT count(*) FROM elastic", &[]).await.expect("count");
    eprintln!("resume from capacity 0 to first row: {:?}", resumed.elapsed());
    assert_eq!(row.get::<_, i64>(0), ROWS);
    let current = wait_for(&client, Duration::from_secs(5), |current| current > 0.0).await;
    assert!(current > 0.0, "a connection did not bring capacity back");
}

/// Idle release (design 015): with min 0, an idle connection open and a shrink delay far
/// longer than the test, the server releases its memory after --idle-release-ms without a
/// statement; the next statement on that connection resumes it, is counted with its time
/// to first row, and gets its share of capacity in tierdb_stat_statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_release_frees_memory_and_the_next_statement_resumes() {
    let flags = ["--min-capacity", "0", "--max-capacity", "4", "--capacity-unit", "8MB"];
    let idle = ["--scale-down-delay-ms", "600000", "--idle-release-ms", "1500"];
    let server = TestServer::start(&[&flags[..], &idle[..]].concat());
    let client = connect(&server).await;
    create_table(&client).await;
    let started = Instant::now();
    let released = |reply: &str| reply.contains("tierdb_capacity_idle_released 1\n");
    while !released(&metrics(&server)) && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reply = metrics(&server);
    assert!(released(&reply), "not released with a connection idle: {reply}");
    assert!(reply.contains("tierdb_capacity_current_units 0\n"), "{reply}");
    assert!(reply.contains("tierdb_buffer_pool_frames 16\n"), "{reply}");
    assert!(reply.contains("tierdb_capacity_idle_releases_total 1\n"), "{reply}");
    eprintln!("idle release {:?} after the last statement", started.elapsed());
    let row = client.query_one("SELECT count(*) FROM elastic", &[]).await.expect("resume");
    assert_eq!(row.get::<_, i64>(0), ROWS, "the resuming statement sees every row");
    let current = wait_for(&client, Duration::from_secs(5), |current| current > 0.0).await;
    assert!(current > 0.0, "the resume did not bring capacity back");
    let row = client
        .query_one(
            "SELECT idle_released, idle_releases, resumes, resume_last_ms, resume_p95_ms
             FROM tierdb_stat_capacity()",
            &[],
        )
        .await
        .expect("resume statistics");
    let (idle_released, releases, resumes): (bool, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let (last_ms, p95_ms): (f64, f64) = (row.get(3), row.get(4));
    eprintln!("resume to first row: {last_ms} ms");
    assert!(
        !idle_released && releases == 1 && resumes == 1,
        "{idle_released} {releases} {resumes}"
    );
    assert!(last_ms > 0.0 && p95_ms == last_ms, "{last_ms} {p95_ms}");
    let reply = metrics(&server);
    assert!(reply.contains("tierdb_capacity_resumes_total 1\n"), "{reply}");
    let share: f64 = client
        .query_one(
            "SELECT capacity_unit_seconds FROM tierdb_stat_statements
             WHERE query LIKE 'INSERT INTO elastic%'",
            &[],
        )
        .await
        .expect("statement share")
        .get(0);
    assert!(share > 0.0, "the load ran at capacity 0.5: {share}");
    // The same share on /metrics, labelled with the role and the statement's text.
    let reply = metrics(&server);
    let line = reply
        .lines()
        .find(|line| {
            line.starts_with("tierdb_statement_capacity_unit_seconds{userid=\"")
                && line.contains(",query=\"INSERT INTO elastic")
        })
        .unwrap_or_else(|| panic!("no statement share on /metrics: {reply}"));
    let value: f64 = line.rsplit(' ').next().and_then(|value| value.parse().ok()).expect(line);
    assert!(value >= share, "{line} against {share}");
}

/// Connections count against max capacity's connection share (1/8 of a unit, 512 KiB
/// each: 2 per 8 MB unit): beyond it a new connection gets 53300 as at max_connections,
/// and raising max capacity makes room.
#[tokio::test(flavor = "multi_thread")]
async fn connections_beyond_the_share_of_max_capacity_are_refused_with_53300() {
    let server = TestServer::start(&[
        "--min-capacity",
        "0.5",
        "--max-capacity",
        "1",
        "--capacity-unit",
        "8MB",
    ]);
    let admin = connect(&server).await;
    let _second = connect(&server).await;
    let refused = tokio_postgres::connect(&server.connection_string(), tokio_postgres::NoTls)
        .await
        .err()
        .expect("a third connection is beyond 1 unit's share");
    assert_eq!(sqlstate(&refused), "53300", "{refused:?}");
    admin.batch_execute("SET tierdb.max_capacity = 2").await.expect("raise max");
    let third = connect(&server).await;
    let current = wait_for(&third, Duration::from_secs(5), |current| current >= 1.5).await;
    assert!(current >= 1.5, "three connections ask for 1.5 units: {current}");
}
