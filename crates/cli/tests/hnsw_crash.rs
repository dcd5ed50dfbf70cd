//! Crash safety of an HNSW index through the server (issue 14): four clients insert rows
//! with seeded random 16-dimensional vectors into an HNSW-indexed table (single-row
//! INSERTs, transactions of three INSERTs, and transactions that roll back) while the
//! server is killed with SIGKILL at a random moment. After each restart:
//!
//! - an exact scan (a sequential scan, as EXPLAIN shows) returns every acknowledged row
//!   with its vector, and no row but those and the statement each client had in flight at
//!   the kill (its commit may land before the acknowledgement; all its rows or none), never
//!   a row of a rolled-back transaction;
//! - the index finds every row by its own vector (`ORDER BY v <-> vector LIMIT 1`, an
//!   index scan as EXPLAIN shows: recall of the exact-match query 1.0) at hnsw.ef_search
//!   = `EF_SEARCH`, or for the few rows that search stops short of, at `EF_SEARCH_MAX`
//!   (counted and printed: HNSW is approximate, and uniform 16-d data is hard for it);
//! - `tierdb_check_vector_index` reports no violation, every row it sees indexed, and
//!   every node of the graph reachable from its entry point.
//!
//! Cycles: `TIERDB_HNSW_CRASH_CYCLES` (default `CYCLES_DEFAULT`, the 20).
//!
//! The same cycles run against an ivfflat index (`IVFFLAT_LISTS` lists, created on the empty
//! table, so its centers are random; queries probe every list, so an exact-match query is
//! exact): every acknowledged row is found by the index at every cycle. Cycles:
//! `TIERDB_IVFFLAT_CRASH_CYCLES` (default `IVFFLAT_CYCLES_DEFAULT`). The graph check is
//! HNSW's only.

mod server_support;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use server_support::TestServer;
use tierdb_common::SplitMix64;
use tokio_postgres::Client;

const CYCLES_DEFAULT: usize = 20;
const IVFFLAT_CYCLES_DEFAULT: usize = 5;
const IVFFLAT_LISTS: usize = 4;
const WORKERS: u64 = 4;
const DIMENSIONS: usize = 16;
/// Vector elements are integers below this: exact in f32, printed back as written.
const ELEMENT_BOUND: u64 = 1000;
/// Ids of cycle `c`, worker `w` start at `c * CYCLE_IDS + w * WORKER_IDS`.
const CYCLE_IDS: i64 = 10_000_000;
const WORKER_IDS: i64 = 1_000_000;
/// How long clients insert before the kill: `KILL_AFTER_MIN_MS` plus a seeded part.
const KILL_AFTER_MIN_MS: u64 = 100;
const KILL_AFTER_SPREAD_MS: u64 = 300;
const EF_SEARCH: usize = 100;
/// pgvector's largest hnsw.ef_search, for the diagnosis of a miss.
const EF_SEARCH_MAX: usize = 1000;
/// Connections the exact-match queries are spread over.
const QUERY_CONNECTIONS: usize = 4;

/// The vector index the cycles run against.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Hnsw,
    IvfFlat,
}

impl Method {
    fn cycles(self) -> usize {
        let (variable, default) = match self {
            Method::Hnsw => ("TIERDB_HNSW_CRASH_CYCLES", CYCLES_DEFAULT),
            Method::IvfFlat => ("TIERDB_IVFFLAT_CRASH_CYCLES", IVFFLAT_CYCLES_DEFAULT),
        };
        std::env::var(variable).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
    }

    fn create_index(self) -> String {
        match self {
            Method::Hnsw => "CREATE INDEX items_v_idx ON items USING hnsw (v vector_l2_ops)".into(),
            Method::IvfFlat => format!(
                "CREATE INDEX items_v_idx ON items USING ivfflat (v vector_l2_ops) \
                 WITH (lists = {IVFFLAT_LISTS})"
            ),
        }
    }

    /// The setting of an exact-match search: HNSW's `ef_search`, ivfflat probing every list.
    fn search_setting(self, ef_search: usize) -> String {
        match self {
            Method::Hnsw => format!("SET hnsw.ef_search = {ef_search}"),
            Method::IvfFlat => format!("SET ivfflat.probes = {IVFFLAT_LISTS}"),
        }
    }
}

fn vector_text(random: &mut SplitMix64) -> String {
    let values: Vec<String> =
        (0..DIMENSIONS).map(|_| random.below(ELEMENT_BOUND).to_string()).collect();
    format!("[{}]", values.join(","))
}

/// What the clients sent: acknowledged rows, each client's statement in flight, and the
/// rows of transactions that rolled back.
#[derive(Default)]
struct Ledger {
    acknowledged: HashMap<i64, String>,
    /// By client (its first id): the rows of its statement in flight; all or none commit.
    in_flight: HashMap<i64, Vec<(i64, String)>>,
    rolled_back: HashSet<i64>,
}

/// Every `TRANSACTION_EVERY`th statement of a client is a transaction of
/// `ROWS_PER_TRANSACTION` INSERTs, and every `ROLLED_BACK_EVERY`th one rolls back (its rows
/// must never appear, their graph entries are dead); the others are single-row INSERTs.
const TRANSACTION_EVERY: u64 = 5;
const ROLLED_BACK_EVERY: u64 = 11;
const ROWS_PER_TRANSACTION: i64 = 3;

/// The SQL of one statement of a client over `rows`.
fn statement_sql(rows: &[(i64, String)], rolled_back: bool) -> String {
    let inserts: Vec<String> = rows
        .iter()
        .map(|(id, vector)| format!("INSERT INTO items VALUES ({id}, '{vector}')"))
        .collect();
    if rolled_back {
        format!("BEGIN; {}; ROLLBACK", inserts.join("; "))
    } else if rows.len() > 1 {
        format!("BEGIN; {}; COMMIT", inserts.join("; "))
    } else {
        inserts.concat()
    }
}

/// One client: inserts rows until the server goes away.
async fn insert_until_killed(connection_string: String, first_id: i64, ledger: Arc<Mutex<Ledger>>) {
    let Ok((client, connection)) =
        tokio_postgres::connect(&connection_string, tokio_postgres::NoTls).await
    else {
        return;
    };
    tokio::spawn(connection);
    let mut random = SplitMix64::new(u64::try_from(first_id).expect("ids are positive"));
    let mut next_id = first_id;
    for statement in 1u64.. {
        let count = if statement % TRANSACTION_EVERY == 0 { ROWS_PER_TRANSACTION } else { 1 };
        let rows: Vec<(i64, String)> =
            (next_id..next_id + count).map(|id| (id, vector_text(&mut random))).collect();
        next_id += count;
        let rolled_back = statement % ROLLED_BACK_EVERY == 0;
        {
            let mut ledger = ledger.lock().expect("ledger");
            if rolled_back {
                ledger.rolled_back.extend(rows.iter().map(|(id, _)| *id));
            } else {
                ledger.in_flight.insert(first_id, rows.clone());
            }
        }
        if client.batch_execute(&statement_sql(&rows, rolled_back)).await.is_err() {
            return;
        }
        let mut ledger = ledger.lock().expect("ledger");
        if let Some(committed) = ledger.in_flight.remove(&first_id) {
            ledger.acknowledged.extend(committed);
        }
    }
}

async fn plan(client: &Client, sql: &str) -> String {
    let rows = client.query(&format!("EXPLAIN {sql}"), &[]).await.expect("explain");
    rows.iter().map(|row| row.get::<_, String>(0)).collect::<Vec<_>>().join("\n")
}

/// The rows an exact scan returns, by id; every acknowledged row is among them with its
/// vector, and every other row is an insert that was in flight at the kill.
async fn check_exact_scan(client: &Client, ledger: &Ledger, cycle: usize) -> HashMap<i64, String> {
    let scan = "SELECT id, v::text FROM items";
    let explained = plan(client, scan).await;
    assert!(explained.contains("Seq Scan on items"), "{explained}");
    let rows = client.query(scan, &[]).await.expect("exact scan");
    let present: HashMap<i64, String> =
        rows.iter().map(|row| (row.get::<_, i64>(0), row.get::<_, String>(1))).collect();
    for (id, vector) in &ledger.acknowledged {
        assert_eq!(present.get(id), Some(vector), "cycle {cycle}: acknowledged row {id}");
    }
    let in_flight: HashMap<i64, &String> =
        ledger.in_flight.values().flatten().map(|(id, vector)| (*id, vector)).collect();
    for (id, vector) in &present {
        assert!(!ledger.rolled_back.contains(id), "cycle {cycle}: rolled-back row {id}");
        let sent = ledger.acknowledged.get(id).or_else(|| in_flight.get(id).copied());
        assert_eq!(sent, Some(vector), "cycle {cycle}: row {id} was never sent");
    }
    for rows in ledger.in_flight.values() {
        let landed = rows.iter().filter(|(id, _)| present.contains_key(id)).count();
        assert!(landed == 0 || landed == rows.len(), "cycle {cycle}: half a transaction");
    }
    present
}

/// The rows of `rows` that are not the nearest by the index to their own vector, with the
/// row the index returned first, at ef_search `ef_search`.
async fn exact_match_misses(
    server: &TestServer,
    method: Method,
    rows: Vec<(i64, String)>,
    ef_search: usize,
) -> Vec<(i64, String, Option<i64>)> {
    let chunk = rows.len().div_ceil(QUERY_CONNECTIONS).max(1);
    let mut queries = Vec::new();
    for part in rows.chunks(chunk) {
        let client = server.connect().await;
        let part = part.to_vec();
        queries.push(tokio::spawn(async move {
            client.batch_execute(&method.search_setting(ef_search)).await.unwrap();
            let mut misses = Vec::new();
            for (id, vector) in part {
                let sql = format!("SELECT id FROM items ORDER BY v <-> '{vector}' LIMIT 1");
                let found = client.query_opt(sql.as_str(), &[]).await.expect("nearest");
                let found: Option<i64> = found.map(|row| row.get(0));
                if found != Some(id) {
                    misses.push((id, vector, found));
                }
            }
            misses
        }));
    }
    let mut misses = Vec::new();
    for query in queries {
        misses.extend(query.await.expect("exact-match queries"));
    }
    misses
}

/// Every row in `rows` is the nearest by the index to its own vector: at ef_search
/// `EF_SEARCH`, or else at `EF_SEARCH_MAX` (an approximate search may stop short of a
/// reachable node; uniform 16-d data is hard for any HNSW graph). Returns the rows
/// that needed the second search; a row found by neither fails the test, naming the check.
async fn check_exact_matches(
    server: &TestServer,
    client: &Client,
    method: Method,
    rows: Vec<(i64, String)>,
    cycle: usize,
) -> usize {
    let misses = exact_match_misses(server, method, rows, EF_SEARCH).await;
    if method == Method::IvfFlat {
        assert!(misses.is_empty(), "cycle {cycle}: rows not found by their vector: {misses:?}");
        return 0;
    }
    let again: Vec<(i64, String)> =
        misses.iter().map(|(id, vector, _)| (*id, vector.clone())).collect();
    let still = exact_match_misses(server, method, again, EF_SEARCH_MAX).await;
    if still.is_empty() {
        return misses.len();
    }
    let report: String = client
        .query_one("SELECT tierdb_check_vector_index('items_v_idx')::text", &[])
        .await
        .expect("check")
        .get(0);
    panic!(
        "cycle {cycle}: rows not found by their vector at ef_search {EF_SEARCH_MAX} (id, \
         vector, found): {still:?}; check: {report}"
    );
}

/// The index's check: no violation, every visible row indexed, every node reachable, every
/// entry live or dead.
async fn check_index(client: &Client, rows: usize, cycle: usize) -> String {
    let fields = [
        "violation_count",
        "rows_indexed",
        "rows_missing",
        "node_count",
        "nodes_reached",
        "entries_live",
        "entries_dead",
    ];
    let columns: Vec<String> = fields.iter().map(|name| format!("r ->> '{name}'")).collect();
    let sql = format!(
        "SELECT {}, r::text FROM (SELECT tierdb_check_vector_index('items_v_idx') AS r) AS c",
        columns.join(", ")
    );
    let row = client.query_one(sql.as_str(), &[]).await.expect("check");
    let count = |index: usize| row.get::<_, String>(index).parse::<usize>().expect("a count");
    let report: String = row.get(fields.len());
    assert_eq!(count(0), 0, "cycle {cycle}: {report}");
    assert_eq!((count(1), count(2)), (rows, 0), "cycle {cycle}: {report}");
    assert_eq!(count(3), count(4), "cycle {cycle}: unreachable nodes: {report}");
    // Each row has its entry; the rolled-back rows' entries are dead once their versions
    // are gone (or were never made durable).
    assert!(count(5) >= rows, "cycle {cycle}: {report}");
    assert_eq!(count(5) + count(6), count(3), "cycle {cycle}: {report}");
    report
}

#[tokio::test(flavor = "multi_thread")]
async fn hnsw_index_keeps_acknowledged_rows_through_sigkill_cycles() {
    sigkill_cycles(Method::Hnsw).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ivfflat_index_keeps_acknowledged_rows_through_sigkill_cycles() {
    sigkill_cycles(Method::IvfFlat).await;
}

async fn sigkill_cycles(method: Method) {
    let started = Instant::now();
    let mut server = TestServer::start(&[]);
    let schema = format!(
        "CREATE TABLE items (id bigint PRIMARY KEY, v vector(16)); {};",
        method.create_index()
    );
    server.connect().await.batch_execute(&schema).await.expect("schema");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let mut random = SplitMix64::new(0x1414);
    let mut retried_total = 0;
    for cycle in 0..method.cycles() {
        let cycle_ids = i64::try_from(cycle).expect("fits") * CYCLE_IDS;
        let workers: Vec<_> = (0..WORKERS)
            .map(|worker| {
                let first_id = cycle_ids + i64::try_from(worker).expect("fits") * WORKER_IDS + 1;
                let inserting =
                    insert_until_killed(server.connection_string(), first_id, Arc::clone(&ledger));
                tokio::spawn(inserting)
            })
            .collect();
        let kill_after = KILL_AFTER_MIN_MS + random.below(KILL_AFTER_SPREAD_MS);
        tokio::time::sleep(Duration::from_millis(kill_after)).await;
        let data_dir = server.kill();
        for worker in workers {
            worker.await.expect("worker");
        }
        server = TestServer::start_in(data_dir, &[]);
        let client = server.connect().await;
        let mut sent = std::mem::take(&mut *ledger.lock().expect("ledger"));
        let present = check_exact_scan(&client, &sent, cycle).await;
        let nearest = "SELECT id FROM items ORDER BY v <-> '[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]' LIMIT 1";
        let explained = plan(&client, nearest).await;
        assert!(explained.contains("Index Scan using items_v_idx on items"), "{explained}");
        let rows: Vec<(i64, String)> = present.iter().map(|(id, v)| (*id, v.clone())).collect();
        let retried = check_exact_matches(&server, &client, method, rows, cycle).await;
        retried_total += retried;
        let report = match method {
            Method::Hnsw => check_index(&client, present.len(), cycle).await,
            Method::IvfFlat => "ivfflat".to_string(),
        };
        // An insert in flight at the kill either committed (it stays: from now on it is
        // treated as acknowledged) or is gone for good.
        let in_flight: Vec<_> = std::mem::take(&mut sent.in_flight).into_values().collect();
        let in_flight_count = in_flight.len();
        let landed: Vec<_> = in_flight
            .into_iter()
            .filter(|rows| present.contains_key(&rows[0].0))
            .flatten()
            .collect();
        let landed_count = landed.len();
        sent.acknowledged.extend(landed);
        eprintln!(
            "cycle {cycle}: killed after {kill_after} ms; {} rows ({landed_count} rows of the {in_flight_count} statements in flight committed), all found by exact scan and by their vector ({retried} only at ef_search {EF_SEARCH_MAX}); {report}; {:.1} s",
            present.len(),
            started.elapsed().as_secs_f64()
        );
        *ledger.lock().expect("ledger") = sent;
    }
    let rows = ledger.lock().expect("ledger").acknowledged.len();
    eprintln!(
        "{} cycles: {rows} rows; exact-match searches needing ef_search {EF_SEARCH_MAX}: \
         {retried_total}; {:.1} s",
        method.cycles(),
        started.elapsed().as_secs_f64()
    );
}
