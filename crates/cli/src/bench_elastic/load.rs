//! The load of `tierdb bench elastic`: a table sized in capacity units, client connections
//! running point selects (and updates) over a chosen number of rows, and the superuser's
//! statements (bounds, capacity polls).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

use super::report::percentile;
use super::server::BenchResult;

/// Rows of the table per 8 KiB page: 200 bytes of text, an int, a key and the tuple header.
const ROWS_PER_PAGE: u64 = 32;
/// The 1x working set fills this share of one unit's buffer pool (percent).
const ONE_X_POOL_PERCENT: u64 = 60;
/// Rows inserted per statement while loading.
const LOAD_BATCH_ROWS: u64 = 50_000;
/// Latencies kept per phase and connection (a phase of minutes at thousands a second).
const LATENCIES_MAX: usize = 4_000_000;
const CAPACITY_POLL: Duration = Duration::from_millis(10);
/// How far behind its schedule a paced connection may fall before it stops catching up.
const PACING_SLACK: Duration = Duration::from_millis(100);

/// What the load asks: point selects over ids 1..=rows, `write_percent` of them updates,
/// `rate` statements a second over all connections (paced: a saturating load would make
/// the CPU signal ask for max capacity whatever the working set).
#[derive(Clone, Copy)]
pub struct Workload {
    rows: u64,
    write_percent: u64,
    rate: u64,
}

impl Workload {
    pub fn reads(rows: u64, rate: u64) -> Workload {
        Workload { rows, write_percent: 0, rate }
    }

    /// The mixed read/write load: one statement in five an update.
    pub fn mixed(rows: u64, rate: u64) -> Workload {
        Workload { rows, write_percent: 20, rate }
    }
}

/// What a phase's load did.
#[derive(Default)]
pub struct Outcome {
    pub queries: u64,
    pub failed: u64,
    latencies_ms: Vec<f64>,
}

impl Outcome {
    pub fn p99_ms(&self) -> f64 {
        percentile(&mut self.latencies_ms.clone(), 99)
    }

    fn merge(&mut self, other: Outcome) {
        self.queries += other.queries;
        self.failed += other.failed;
        self.latencies_ms.extend(other.latencies_ms);
    }
}

/// The load's connections and a superuser connection for bounds and polls.
pub struct Clients {
    pub admin: Client,
    workers: Vec<Arc<Client>>,
}

async fn connect(connection_string: &str) -> BenchResult<Client> {
    let (client, connection) = tokio_postgres::connect(connection_string, NoTls).await?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            eprintln!("connection ended: {error}");
        }
    });
    Ok(client)
}

impl Clients {
    pub async fn connect(connection_string: &str, workers: usize) -> BenchResult<Clients> {
        let admin = connect(connection_string).await?;
        let mut clients = Vec::new();
        for _ in 0..workers {
            clients.push(Arc::new(connect(connection_string).await?));
        }
        Ok(Clients { admin, workers: clients })
    }

    /// Runs `workload` on every connection for `length`.
    pub async fn run(&self, workload: Workload, length: Duration) -> Outcome {
        self.run_while(workload, tokio::time::sleep(length)).await.0
    }

    /// Runs `workload` on every connection until `during` completes.
    pub async fn run_while<T>(
        &self,
        workload: Workload,
        during: impl Future<Output = T>,
    ) -> (Outcome, T) {
        let stop = Arc::new(AtomicBool::new(false));
        let connections = f64::from(u32::try_from(self.workers.len()).unwrap_or(u32::MAX));
        let interval = Duration::from_secs_f64(connections / counter(workload.rate.max(1)));
        let tasks: Vec<_> = (0..)
            .zip(&self.workers)
            .map(|(seed, client)| {
                let task = work(Arc::clone(client), workload, interval, seed, stop.clone());
                tokio::spawn(task)
            })
            .collect();
        let value = during.await;
        stop.store(true, Ordering::Relaxed);
        let mut outcome = Outcome::default();
        for task in tasks {
            match task.await {
                Ok(done) => outcome.merge(done),
                Err(error) => {
                    eprintln!("load task failed: {error}");
                    outcome.failed += 1;
                }
            }
        }
        (outcome, value)
    }
}

/// One connection's load until `stop`: every failure counted (and the first few printed).
async fn work(
    client: Arc<Client>,
    workload: Workload,
    interval: Duration,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> Outcome {
    let mut outcome = Outcome::default();
    let statements = tokio::try_join!(
        client.prepare("SELECT v FROM elastic WHERE id = $1"),
        client.prepare("UPDATE elastic SET n = n + 1 WHERE id = $1"),
    );
    let Ok((select, update)) = statements else {
        eprintln!("prepare failed: {statements:?}");
        outcome.failed += 1;
        return outcome;
    };
    let mut random = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = tokio::time::Instant::now();
    while !stop.load(Ordering::Relaxed) {
        next += interval;
        let now = tokio::time::Instant::now();
        if next > now {
            tokio::time::sleep_until(next).await;
        } else if now.duration_since(next) > PACING_SLACK {
            // Behind after a stall: carry on at the rate, without a burst to catch up.
            next = now;
        }
        random = split_mix(random);
        let Ok(id) = i32::try_from(random % workload.rows.max(1) + 1) else { break };
        let started = Instant::now();
        let result = if random % 100 < workload.write_percent {
            client.execute(&update, &[&id]).await.map(drop)
        } else {
            client.query_one(&select, &[&id]).await.map(drop)
        };
        outcome.queries += 1;
        if outcome.latencies_ms.len() < LATENCIES_MAX {
            outcome.latencies_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        if let Err(error) = result {
            if outcome.failed < 5 {
                eprintln!("query failed: {error:?}");
            }
            outcome.failed += 1;
        }
    }
    outcome
}

#[allow(clippy::cast_precision_loss)] // Rates far below 2^52.
fn counter(value: u64) -> f64 {
    value as f64
}

fn split_mix(state: u64) -> u64 {
    let mut value = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// Rows of the 1x working set: `ONE_X_POOL_PERCENT` of one unit's buffer pool.
pub fn rows_for_one_unit(metrics: &HashMap<String, f64>) -> u64 {
    let unit_bytes = metrics.get("tierdb_capacity_unit_bytes").copied().unwrap_or(0.0);
    // Whole bytes: the metric prints an integer.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let unit_bytes = unit_bytes.max(0.0) as u64;
    let pool_pages = unit_bytes * 5 / 8 / 8192;
    (pool_pages * ROWS_PER_PAGE * ONE_X_POOL_PERCENT / 100).max(1000)
}

pub async fn create_table(admin: &Client, rows: u64) -> BenchResult<()> {
    admin.batch_execute("CREATE TABLE elastic (id int PRIMARY KEY, n int, v text)").await?;
    let mut first = 1;
    while first <= rows {
        let last = (first + LOAD_BATCH_ROWS - 1).min(rows);
        let insert = format!(
            "INSERT INTO elastic SELECT g, 0, repeat('x', 200) || g FROM generate_series({first}, {last}) AS g"
        );
        admin.batch_execute(&insert).await?;
        first = last + 1;
    }
    Ok(())
}

/// Sets min and max capacity (in the order that keeps min <= max at every step).
pub async fn set_bounds(admin: &Client, min: &str, max: &str) -> BenchResult<()> {
    let current: f64 =
        admin.query_one("SELECT max_capacity FROM tierdb_stat_capacity()", &[]).await?.get(0);
    let statements = if max.parse::<f64>()? >= current {
        format!("SET tierdb.max_capacity = {max}; SET tierdb.min_capacity = {min}")
    } else {
        format!("SET tierdb.min_capacity = {min}; SET tierdb.max_capacity = {max}")
    };
    admin.batch_execute(&statements).await?;
    Ok(())
}

/// Polls until the capacity in force is `wanted`: false after `limit`.
pub async fn wait_for_capacity(admin: &Client, wanted: f64, limit: Duration) -> BenchResult<bool> {
    let started = Instant::now();
    while started.elapsed() < limit {
        let row =
            admin.query_one("SELECT current_capacity FROM tierdb_stat_capacity()", &[]).await?;
        if (row.get::<_, f64>(0) - wanted).abs() < f64::EPSILON {
            return Ok(true);
        }
        tokio::time::sleep(CAPACITY_POLL).await;
    }
    Ok(false)
}

/// One point select to its first (only) row.
pub async fn first_row(admin: &Client, id: i32) -> BenchResult<()> {
    admin.query_one("SELECT v FROM elastic WHERE id = $1", &[&id]).await?;
    Ok(())
}
