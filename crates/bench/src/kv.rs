//! `tierdb bench kv`: transactional point lookups and single-row updates on an engine table,
//! at several thread counts, with the data in DRAM and with data 8x the buffer pool on a
//! remote-like volume, tier on and off. Each lookup is a READ COMMITTED transaction with one
//! `get`; each update a transaction with one `update`, committed durably (group commit).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tierdb_common::SplitMix64;
use tierdb_engine::{ColumnDef, Engine, IsolationLevel, KeyKind, TableDef, Value};
use tierdb_storage::{PageStore, StoreConfig, TierConfig};

use crate::latency::median;
use crate::volumes::{open_volume, BenchVolume};

#[derive(clap::Args, Clone, Debug)]
pub struct KvArgs {
    #[arg(long)]
    pub json: bool,
    /// Buffer pool in pages for the larger-than-memory runs.
    #[arg(long, default_value_t = 1024)]
    pub pool_pages: u64,
    /// Rows; at 100-byte values about 8x the default pool in leaf pages.
    #[arg(long, default_value_t = 400_000)]
    pub rows: i64,
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8")]
    pub threads: Vec<usize>,
    /// Seconds per measured run.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    #[arg(long, default_value_t = 3)]
    pub repetitions: usize,
    #[arg(long, default_value_t = 1000)]
    pub volume_latency_us: u64,
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

#[derive(Clone, Debug, Serialize)]
struct KvCell {
    mode: String,
    operation: String,
    threads: usize,
    operations_per_s: f64,
    dram_hit_ratio: f64,
    tier_hit_ratio: f64,
    volume_read_ratio: f64,
}

#[derive(Serialize)]
struct KvReport {
    benchmark: &'static str,
    rows: i64,
    value_bytes: usize,
    pool_pages_small: u64,
    volume: String,
    repetitions: usize,
    seconds_per_run: f64,
    results: Vec<KvCell>,
}

const VALUE_BYTES: usize = 100;
const LOAD_BATCH_ROWS: i64 = 5_000;
const MODES: [&str; 3] = ["dram", "tier-on", "tier-off"];

fn config(args: &KvArgs, volume: &BenchVolume, directory: &Path, mode: &str) -> StoreConfig {
    let mut config = StoreConfig::with_volume(directory.join("data"), volume.volume.clone());
    config.tier = None;
    config.buffer_pool_bytes = args.pool_pages * 8192;
    match mode {
        "dram" | "load" => config.buffer_pool_bytes = 1 << 30,
        "tier-on" => {
            config.tier = Some(TierConfig {
                path: directory.join("tier").join("tier.dat"),
                capacity_bytes: 1 << 30,
                direct_io: true,
            })
        }
        _ => {}
    }
    config
}

fn value_of(key: i64, generation: u64) -> Value {
    let mut bytes = vec![0u8; VALUE_BYTES];
    bytes[..8].copy_from_slice(&key.to_le_bytes());
    bytes[8..16].copy_from_slice(&generation.to_le_bytes());
    Value::Bytes(bytes)
}

fn load(
    args: &KvArgs,
    volume: &BenchVolume,
    directory: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(PageStore::open(config(args, volume, directory, "load"))?);
    let engine = Engine::open(Arc::clone(&store))?;
    engine.create_table(TableDef {
        name: "kv".into(),
        columns: vec![
            ColumnDef { name: "k".into(), kind: KeyKind::Int, nullable: false },
            ColumnDef { name: "v".into(), kind: KeyKind::Bytes, nullable: false },
        ],
        primary_key: Some(vec![0]),
        indexes: vec![],
    })?;
    let mut key = 0;
    while key < args.rows {
        let mut txn = engine.begin(IsolationLevel::ReadCommitted)?;
        for _ in 0..LOAD_BATCH_ROWS.min(args.rows - key) {
            txn.insert("kv", vec![Value::Int(key), value_of(key, 0)])?;
            key += 1;
        }
        txn.commit()?;
    }
    drop(engine);
    store.flush_all()?;
    Arc::try_unwrap(store).map_err(|_| "store still shared")?.close()?;
    Ok(())
}

/// Runs `threads` workers doing `operation` for the configured time; returns operations per
/// second and the page-access mix.
fn measure(
    engine: &Arc<Engine>,
    store: &PageStore,
    args: &KvArgs,
    operation: &str,
    threads: usize,
    seed: u64,
) -> Result<(f64, [f64; 3]), String> {
    let duration = Duration::from_secs_f64(args.seconds);
    let operations = AtomicU64::new(0);
    let before = (
        store.stats().dram_hits.get(),
        store.stats().tier_hits.get(),
        store.stats().volume_reads.get(),
    );
    let started = Instant::now();
    std::thread::scope(|scope| -> Result<(), String> {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let (engine, operations) = (engine, &operations);
                scope.spawn(move || -> Result<(), String> {
                    let mut random =
                        SplitMix64::new(seed ^ (u64::try_from(thread).expect("small") << 40));
                    let mut generation = 0u64;
                    while started.elapsed() < duration {
                        let key = i64::try_from(
                            random.below(u64::try_from(args.rows).expect("positive")),
                        )
                        .expect("fits");
                        let mut txn = engine
                            .begin(IsolationLevel::ReadCommitted)
                            .map_err(|error| error.to_string())?;
                        if operation == "lookup" {
                            let row = txn
                                .get("kv", &[Value::Int(key)])
                                .map_err(|error| error.to_string())?;
                            if row.is_none() {
                                return Err(format!("key={key} missing"));
                            }
                        } else {
                            generation += 1;
                            let value = value_of(key, generation);
                            let outcome = txn.update("kv", &[Value::Int(key)], &mut |row| {
                                Some(vec![row[0].clone(), value.clone()])
                            });
                            match outcome {
                                Ok(true) => {}
                                Ok(false) => return Err(format!("key={key} missing")),
                                Err(error) if error.is_retryable() => continue,
                                Err(error) => return Err(error.to_string()),
                            }
                        }
                        txn.commit().map_err(|error| error.to_string())?;
                        operations.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        for handle in handles {
            handle.join().map_err(|_| "worker panicked".to_string())??;
        }
        Ok(())
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    let after = (
        store.stats().dram_hits.get(),
        store.stats().tier_hits.get(),
        store.stats().volume_reads.get(),
    );
    let (dram, tier, volume) = (after.0 - before.0, after.1 - before.1, after.2 - before.2);
    let total = (dram + tier + volume).max(1) as f64;
    Ok((
        operations.load(Ordering::Relaxed) as f64 / elapsed,
        [dram as f64 / total, tier as f64 / total, volume as f64 / total],
    ))
}

fn warm(
    engine: &Arc<Engine>,
    store: &PageStore,
    rows: i64,
) -> Result<(), Box<dyn std::error::Error>> {
    const WARM_THREADS: i64 = 16;
    for _ in 0..3 {
        std::thread::scope(|scope| -> Result<(), String> {
            let handles: Vec<_> = (0..WARM_THREADS)
                .map(|thread| {
                    scope.spawn(move || -> Result<(), String> {
                        let mut key = thread;
                        while key < rows {
                            let mut txn = engine
                                .begin(IsolationLevel::ReadCommitted)
                                .map_err(|error| error.to_string())?;
                            txn.get("kv", &[Value::Int(key)]).map_err(|error| error.to_string())?;
                            txn.commit().map_err(|error| error.to_string())?;
                            key += WARM_THREADS;
                        }
                        Ok(())
                    })
                })
                .collect();
            for handle in handles {
                handle.join().map_err(|_| "warm thread panicked".to_string())??;
            }
            Ok(())
        })?;
        if let Some(tier) = store.tier() {
            crate::pages::wait_for_tier_admissions(tier);
        }
    }
    Ok(())
}

pub fn run_kv(args: &KvArgs) -> Result<(), Box<dyn std::error::Error>> {
    let temporary = tempfile::tempdir()?;
    let work_dir = args.work_dir.clone().unwrap_or_else(|| temporary.path().to_path_buf());
    let volume = open_volume("local-latency", &work_dir, args.volume_latency_us)?;
    let progress =
        indicatif::ProgressBar::new(u64::try_from(MODES.len() * args.threads.len() * 2)?);
    progress.set_message(format!("loading {} rows", args.rows));
    load(args, &volume, &work_dir)?;
    let mut results = Vec::new();
    for mode in MODES {
        let _ = std::fs::remove_dir_all(work_dir.join("tier"));
        let store = Arc::new(PageStore::open(config(args, &volume, &work_dir, mode))?);
        let engine = Engine::open(Arc::clone(&store))?;
        progress.set_message(format!("warming {mode}"));
        warm(&engine, &store, args.rows)?;
        for operation in ["lookup", "update"] {
            for &threads in &args.threads {
                progress.set_message(format!("{mode} {operation} threads={threads}"));
                let mut rates = Vec::new();
                let mut mixes = Vec::new();
                for repetition in 0..args.repetitions {
                    let (rate, mix) = measure(
                        &engine,
                        &store,
                        args,
                        operation,
                        threads,
                        17 + u64::try_from(repetition)?,
                    )?;
                    rates.push(rate);
                    mixes.push(mix);
                }
                let mix =
                    |part: usize| median(&mixes.iter().map(|mix| mix[part]).collect::<Vec<f64>>());
                results.push(KvCell {
                    mode: mode.to_string(),
                    operation: operation.to_string(),
                    threads,
                    operations_per_s: median(&rates),
                    dram_hit_ratio: mix(0),
                    tier_hit_ratio: mix(1),
                    volume_read_ratio: mix(2),
                });
                progress.inc(1);
            }
        }
        drop(engine);
        Arc::try_unwrap(store).map_err(|_| "store still shared")?.close()?;
    }
    progress.finish_and_clear();
    let report = KvReport {
        benchmark: "kv",
        rows: args.rows,
        value_bytes: VALUE_BYTES,
        pool_pages_small: args.pool_pages,
        volume: volume.note.clone(),
        repetitions: args.repetitions,
        seconds_per_run: args.seconds,
        results,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "bench kv: {} rows of {} bytes; volume: {}; medians of {} runs of {} s",
            report.rows, VALUE_BYTES, report.volume, report.repetitions, report.seconds_per_run
        );
        println!(
            "dram: buffer pool holds everything; tier-on/tier-off: buffer pool {} pages",
            report.pool_pages_small
        );
        println!(
            "{:<9} {:<7} {:>3} {:>12} {:>6} {:>6} {:>6}",
            "mode", "op", "thr", "ops/s", "dram%", "tier%", "vol%"
        );
        for cell in &report.results {
            println!(
                "{:<9} {:<7} {:>3} {:>12.0} {:>6.1} {:>6.1} {:>6.1}",
                cell.mode,
                cell.operation,
                cell.threads,
                cell.operations_per_s,
                100.0 * cell.dram_hit_ratio,
                100.0 * cell.tier_hit_ratio,
                100.0 * cell.volume_read_ratio
            );
        }
    }
    Ok(())
}
