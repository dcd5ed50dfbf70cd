//! `tierdb bench pages`: random 8 KiB page reads over a data set several times the buffer
//! pool, on a remote-like volume, comparing (a) no tier, (b) a warm tier, (c) everything in
//! DRAM, at several reader counts; plus a raw direct-I/O read on the tier's device, measured
//! in the same run, as the floor a tier hit is compared with.
//!
//! Every read is timed and classified by where it was answered (DRAM, tier, volume) from the
//! thread's operation counters, so per-tier latencies are exact, not inferred from ratios.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use tierdb_common::{op_counters_snapshot, Page, PageId, PageType, SplitMix64, PAGE_SIZE};
use tierdb_storage::{PageStore, StoreConfig, TierConfig};

use crate::latency::{median, LatencySummary};
use crate::volumes::{open_volume, BenchVolume};
use crate::zipf::ScrambledZipfian;

#[derive(clap::Args, Clone, Debug)]
pub struct PagesArgs {
    /// Print one JSON object (progress goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// DRAM buffer pool size in pages.
    #[arg(long, default_value_t = 1024)]
    pub pool_pages: u64,
    /// Data set size as a multiple of the buffer pool.
    #[arg(long, default_value_t = 8)]
    pub dataset_multiple: u64,
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    pub readers: Vec<usize>,
    #[arg(long, value_delimiter = ',', default_value = "uniform,zipfian")]
    pub distributions: Vec<String>,
    /// Volumes: local-latency (local directory plus --volume-latency-us on every read),
    /// local, minio (a private MinIO server on loopback).
    #[arg(long, value_delimiter = ',', default_value = "local-latency")]
    pub volumes: Vec<String>,
    #[arg(long, default_value_t = 1000)]
    pub volume_latency_us: u64,
    /// Seconds per measured run.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Runs per cell; the figures reported are medians over them.
    #[arg(long, default_value_t = 3)]
    pub repetitions: usize,
    #[arg(long, default_value_t = 0.99)]
    pub zipf_theta: f64,
    /// Where data, tier and probe files go (default: a temporary directory under /tmp).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

/// One configuration's figures: medians over the repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    pub volume: String,
    pub mode: String,
    pub distribution: String,
    pub readers: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub throughput_reads_per_s: f64,
    pub dram_hit_ratio: f64,
    pub tier_hit_ratio: f64,
    pub volume_read_ratio: f64,
    pub volume_requests_per_1000_reads: f64,
    pub dram_hit_p50_us: f64,
    pub tier_hit_p50_us: f64,
    pub volume_read_p50_us: f64,
    /// Tier slots holding a page when the cell ran (tier modes).
    pub tier_pages: u64,
}

#[derive(Clone, Debug, Serialize)]
struct RawDeviceResult {
    path: String,
    direct_io: bool,
    p50_us: f64,
    p99_us: f64,
}

#[derive(Serialize)]
struct PagesReport {
    benchmark: &'static str,
    page_bytes: usize,
    pool_pages: u64,
    dataset_pages: u64,
    repetitions: usize,
    seconds_per_run: f64,
    volumes: Vec<(String, String)>,
    raw_device_read: Option<RawDeviceResult>,
    /// The raw read measured after each volume's tier run.
    raw_device_reads: Vec<(String, RawDeviceResult)>,
    results: Vec<CellResult>,
    /// p50 with the tier off divided by p50 with the tier on: local-latency volume, uniform,
    /// one reader.
    tier_speedup_p50: Option<f64>,
    /// Same ratio on MinIO.
    tier_speedup_p50_minio: Option<f64>,
    /// Tier-hit p50 (local-latency, uniform, one reader) divided by the raw device read p50.
    tier_hit_vs_raw_device: Option<f64>,
}

const MODES: [&str; 3] = ["tier-off", "tier-warm", "dram"];

struct Plan<'a> {
    /// The arguments, and the data set size they imply.
    args: &'a PagesArgs,
    dataset_pages: u64,
}

pub fn run_pages(args: &PagesArgs) -> Result<(), Box<dyn std::error::Error>> {
    let temporary = tempfile::tempdir()?;
    let work_dir = args.work_dir.clone().unwrap_or_else(|| temporary.path().to_path_buf());
    std::fs::create_dir_all(&work_dir)?;
    let plan = Plan { args, dataset_pages: args.pool_pages * args.dataset_multiple };
    let cells = args.volumes.len() * MODES.len() * args.distributions.len() * args.readers.len();
    let progress = indicatif::ProgressBar::new(u64::try_from(cells)?);
    progress.set_style(indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}")?);
    let mut results = Vec::new();
    let mut volume_notes = Vec::new();
    let mut raw_reads: Vec<(String, RawDeviceResult)> = Vec::new();
    for volume_name in &args.volumes {
        let directory = work_dir.join(volume_name);
        std::fs::create_dir_all(&directory)?;
        let volume = open_volume(volume_name, &directory, args.volume_latency_us)?;
        volume_notes.push((volume.name.clone(), volume.note.clone()));
        progress.set_message(format!("loading {} pages on {volume_name}", plan.dataset_pages));
        load_dataset(&plan, &volume, &directory)?;
        for mode in MODES {
            results.extend(run_mode(&plan, &volume, &directory, mode, &progress)?);
            if mode == "tier-warm" {
                // Beside the tier measurement, under the same machine load.
                progress.set_message(format!("raw device reads after {volume_name}"));
                raw_reads.push((
                    volume.name.clone(),
                    measure_raw_device(&plan, &directory.join("tier"))?,
                ));
            }
        }
    }
    progress.finish_and_clear();
    let raw = raw_reads
        .iter()
        .find(|(name, _)| name == "local-latency")
        .or(raw_reads.first())
        .map(|(_, raw)| raw.clone());
    let report = summarize(&plan, volume_notes, raw, raw_reads, results);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

fn store_config(
    plan: &Plan<'_>,
    volume: &BenchVolume,
    directory: &Path,
    mode: &str,
) -> StoreConfig {
    let mut config = StoreConfig::with_volume(directory.join("data"), volume.volume.clone());
    config.buffer_pool_bytes = plan.args.pool_pages * 8192;
    config.tier = None;
    match mode {
        "tier-warm" => {
            config.tier = Some(TierConfig {
                path: directory.join("tier").join("tier.dat"),
                capacity_bytes: (plan.dataset_pages + plan.dataset_pages / 4) * 8192,
                direct_io: true,
            });
        }
        "dram" => {
            config.buffer_pool_bytes = (plan.dataset_pages + plan.dataset_pages / 8 + 64) * 8192
        }
        "load" => config.buffer_pool_bytes = (plan.dataset_pages + 64) * 8192,
        _ => {}
    }
    config
}

/// Writes the data set: pages 1..=N, each with its id in the payload.
fn load_dataset(
    plan: &Plan<'_>,
    volume: &BenchVolume,
    directory: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let store = PageStore::open(store_config(plan, volume, directory, "load"))?;
    while store.max_page_id().0 < plan.dataset_pages {
        let mut mtr = store.mtr();
        let (slot, page_id) = mtr.allocate(PageType::Raw)?;
        mtr.write(slot, 0, &page_id.0.to_le_bytes());
        mtr.commit()?;
    }
    store.flush_all()?;
    store.close()?;
    Ok(())
}

fn run_mode(
    plan: &Plan<'_>,
    volume: &BenchVolume,
    directory: &Path,
    mode: &str,
    progress: &indicatif::ProgressBar,
) -> Result<Vec<CellResult>, Box<dyn std::error::Error>> {
    let _ = std::fs::remove_dir_all(directory.join("tier"));
    progress.set_message(format!("warming {mode} on {}", volume.name));
    let store = PageStore::open(store_config(plan, volume, directory, mode))?;
    warm(&store, plan.dataset_pages, plan.args.pool_pages)?;
    let mut results = Vec::new();
    for distribution in &plan.args.distributions {
        for &readers in &plan.args.readers {
            progress
                .set_message(format!("{} {mode} {distribution} readers={readers}", volume.name));
            let mut runs = Vec::new();
            for repetition in 0..plan.args.repetitions {
                let seed = 1 + u64::try_from(repetition)? * 7919;
                runs.push(measure(&store, plan, distribution, readers, seed)?);
            }
            let tier_pages = store.tier().map_or(0, |tier| tier.usage().1);
            results.push(combine(&volume.name, mode, distribution, readers, &runs, tier_pages));
            progress.inc(1);
        }
    }
    store.close()?;
    Ok(results)
}

/// Reads every page with 16 threads until warm: once without a tier; with a tier, until it
/// holds every page that DRAM does not (admissions dropped under load are retried by the next
/// pass), at most `WARM_PASSES_MAX` passes.
fn warm(store: &PageStore, pages: u64, pool_pages: u64) -> Result<(), Box<dyn std::error::Error>> {
    const WARM_THREADS: u64 = 16;
    const WARM_PASSES_MAX: usize = 8;
    for _ in 0..WARM_PASSES_MAX {
        std::thread::scope(|scope| -> Result<(), String> {
            let handles: Vec<_> = (0..WARM_THREADS)
                .map(|thread| {
                    scope.spawn(move || -> Result<(), String> {
                        for page in (1 + thread..=pages)
                            .step_by(usize::try_from(WARM_THREADS).expect("small"))
                        {
                            store.read(PageId(page)).map_err(|error| error.to_string())?;
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
        let Some(tier) = store.tier() else {
            return Ok(());
        };
        wait_for_tier_admissions(tier);
        if tier.usage().1 + pool_pages >= pages {
            return Ok(());
        }
    }
    Ok(())
}

/// Waits until the tier's writer has drained its admission queue (no write for 300 ms), so
/// that a warm-up's evictions are in the tier before measuring.
pub(crate) fn wait_for_tier_admissions(tier: &tierdb_storage::TierCache) {
    let mut last = u64::MAX;
    while tier.stats().writes.get() != last {
        last = tier.stats().writes.get();
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Dram,
    Tier,
    Volume,
}

struct RunSample {
    all: LatencySummary,
    dram: LatencySummary,
    tier: LatencySummary,
    volume: LatencySummary,
    reads: u64,
    elapsed: Duration,
    volume_requests: u64,
}

fn measure(
    store: &PageStore,
    plan: &Plan<'_>,
    distribution: &str,
    readers: usize,
    seed: u64,
) -> Result<RunSample, Box<dyn std::error::Error>> {
    let zipfian = ScrambledZipfian::new(plan.dataset_pages, plan.args.zipf_theta);
    let uniform = distribution == "uniform";
    if !uniform && distribution != "zipfian" {
        return Err(format!("unknown distribution={distribution} (uniform or zipfian)").into());
    }
    let duration = Duration::from_secs_f64(plan.args.seconds);
    let requests_before = store.volume_stats().snapshot().requests();
    let failures = AtomicU64::new(0);
    let started = Instant::now();
    let samples: Vec<Vec<(u64, Source)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..readers)
            .map(|reader| {
                let zipfian = &zipfian;
                let failures = &failures;
                scope.spawn(move || {
                    let mut random =
                        SplitMix64::new(seed ^ (u64::try_from(reader).expect("small") << 32));
                    let mut samples = Vec::with_capacity(1 << 16);
                    while started.elapsed() < duration {
                        let choice = if uniform {
                            random.below(plan.dataset_pages)
                        } else {
                            zipfian.next(&mut random)
                        };
                        let page_id = PageId(choice + 1);
                        let before = op_counters_snapshot();
                        let begun = Instant::now();
                        match store.read(page_id) {
                            Ok(page) => {
                                std::hint::black_box(page.payload()[0]);
                            }
                            Err(_) => {
                                failures.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                        }
                        let nanos = u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        let cost = op_counters_snapshot().since(&before);
                        let source = if cost.volume_reads > 0 {
                            Source::Volume
                        } else if cost.tier_hits > 0 {
                            Source::Tier
                        } else {
                            Source::Dram
                        };
                        samples.push((nanos, source));
                    }
                    samples
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().expect("reader panicked")).collect()
    });
    let elapsed = started.elapsed();
    if failures.load(Ordering::Relaxed) > 0 {
        return Err(format!("{} reads failed", failures.load(Ordering::Relaxed)).into());
    }
    let volume_requests = store.volume_stats().snapshot().requests() - requests_before;
    let flat: Vec<(u64, Source)> = samples.into_iter().flatten().collect();
    let of = |wanted: Option<Source>| {
        let mut selected: Vec<u64> = flat
            .iter()
            .filter(|(_, source)| wanted.is_none_or(|wanted| *source == wanted))
            .map(|(nanos, _)| *nanos)
            .collect();
        LatencySummary::from_nanos(&mut selected)
    };
    Ok(RunSample {
        all: of(None),
        dram: of(Some(Source::Dram)),
        tier: of(Some(Source::Tier)),
        volume: of(Some(Source::Volume)),
        reads: u64::try_from(flat.len())?,
        elapsed,
        volume_requests,
    })
}

fn combine(
    volume: &str,
    mode: &str,
    distribution: &str,
    readers: usize,
    runs: &[RunSample],
    tier_pages: u64,
) -> CellResult {
    let med =
        |pick: &dyn Fn(&RunSample) -> f64| median(&runs.iter().map(pick).collect::<Vec<f64>>());
    let ratio = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            part as f64 / whole as f64
        }
    };
    CellResult {
        volume: volume.to_string(),
        mode: mode.to_string(),
        distribution: distribution.to_string(),
        readers,
        p50_us: med(&|run| run.all.p50_us),
        p99_us: med(&|run| run.all.p99_us),
        throughput_reads_per_s: med(&|run| run.reads as f64 / run.elapsed.as_secs_f64()),
        dram_hit_ratio: med(&|run| ratio(run.dram.samples, run.reads)),
        tier_hit_ratio: med(&|run| ratio(run.tier.samples, run.reads)),
        volume_read_ratio: med(&|run| ratio(run.volume.samples, run.reads)),
        volume_requests_per_1000_reads: med(&|run| 1000.0 * ratio(run.volume_requests, run.reads)),
        dram_hit_p50_us: med(&|run| run.dram.p50_us),
        tier_hit_p50_us: med(&|run| run.tier.p50_us),
        volume_read_p50_us: med(&|run| run.volume.p50_us),
        tier_pages,
    }
}

/// Random 8 KiB direct-I/O reads from a fully written probe file in the tier's directory, so
/// that no read lands in a hole (which the filesystem answers without touching the device).
fn measure_raw_device(
    plan: &Plan<'_>,
    tier_directory: &Path,
) -> Result<RawDeviceResult, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(tier_directory)?;
    let path = tier_directory.join("raw-device-probe.dat");
    let pages = (plan.dataset_pages + plan.dataset_pages / 4).max(1024);
    {
        let file = OpenOptions::new().create(true).write(true).truncate(true).open(&path)?;
        let chunk = vec![0xA5u8; 1 << 20];
        let total = pages * 8192;
        let mut written = 0u64;
        while written < total {
            file.write_all_at(&chunk, written)?;
            written += u64::try_from(chunk.len())?;
        }
        file.sync_all()?;
    }
    let direct = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&path);
    let (file, direct_io) = match direct {
        Ok(file) => (file, true),
        Err(_) => (OpenOptions::new().read(true).open(&path)?, false),
    };
    let mut buffer = Page::new_boxed();
    let mut p50s = Vec::new();
    let mut p99s = Vec::new();
    for repetition in 0..plan.args.repetitions {
        let mut random = SplitMix64::new(99 + u64::try_from(repetition)?);
        let mut samples = Vec::new();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs_f64(plan.args.seconds) {
            let offset = random.below(pages) * u64::try_from(PAGE_SIZE)?;
            let begun = Instant::now();
            file.read_exact_at(buffer.as_bytes_mut(), offset)?;
            samples.push(u64::try_from(begun.elapsed().as_nanos())?);
        }
        let summary = LatencySummary::from_nanos(&mut samples);
        p50s.push(summary.p50_us);
        p99s.push(summary.p99_us);
    }
    let _ = std::fs::remove_file(&path);
    Ok(RawDeviceResult {
        path: path.display().to_string(),
        direct_io,
        p50_us: median(&p50s),
        p99_us: median(&p99s),
    })
}

fn find<'a>(results: &'a [CellResult], volume: &str, mode: &str) -> Option<&'a CellResult> {
    results.iter().find(|cell| {
        cell.volume == volume
            && cell.mode == mode
            && cell.distribution == "uniform"
            && cell.readers == 1
    })
}

fn summarize(
    plan: &Plan<'_>,
    volumes: Vec<(String, String)>,
    raw: Option<RawDeviceResult>,
    raw_device_reads: Vec<(String, RawDeviceResult)>,
    results: Vec<CellResult>,
) -> PagesReport {
    let speedup = |volume: &str| match (
        find(&results, volume, "tier-off"),
        find(&results, volume, "tier-warm"),
    ) {
        (Some(off), Some(on)) if on.p50_us > 0.0 => Some(off.p50_us / on.p50_us),
        _ => None,
    };
    let tier_hit_vs_raw_device = match (find(&results, "local-latency", "tier-warm"), &raw) {
        (Some(on), Some(raw)) if raw.p50_us > 0.0 && on.tier_hit_p50_us > 0.0 => {
            Some(on.tier_hit_p50_us / raw.p50_us)
        }
        _ => None,
    };
    PagesReport {
        benchmark: "pages",
        page_bytes: PAGE_SIZE,
        pool_pages: plan.args.pool_pages,
        dataset_pages: plan.dataset_pages,
        repetitions: plan.args.repetitions,
        seconds_per_run: plan.args.seconds,
        volumes,
        raw_device_read: raw,
        raw_device_reads,
        tier_speedup_p50: speedup("local-latency"),
        tier_speedup_p50_minio: speedup("minio"),
        tier_hit_vs_raw_device,
        results,
    }
}

fn print_table(report: &PagesReport) {
    println!(
        "bench pages: {} pages of 8 KiB, buffer pool {} pages ({}x smaller), medians of {} runs of {} s",
        report.dataset_pages,
        report.pool_pages,
        report.dataset_pages / report.pool_pages.max(1),
        report.repetitions,
        report.seconds_per_run
    );
    for (name, note) in &report.volumes {
        println!("volume {name}: {note}");
    }
    println!(
        "{:<14} {:<10} {:<8} {:>3} {:>10} {:>10} {:>11} {:>6} {:>6} {:>6} {:>9} {:>10}",
        "volume",
        "mode",
        "dist",
        "rd",
        "p50_us",
        "p99_us",
        "reads/s",
        "dram%",
        "tier%",
        "vol%",
        "req/1k",
        "tierhit_us"
    );
    for cell in &report.results {
        println!(
            "{:<14} {:<10} {:<8} {:>3} {:>10.1} {:>10.1} {:>11.0} {:>6.1} {:>6.1} {:>6.1} {:>9.1} {:>10.1}",
            cell.volume,
            cell.mode,
            cell.distribution,
            cell.readers,
            cell.p50_us,
            cell.p99_us,
            cell.throughput_reads_per_s,
            100.0 * cell.dram_hit_ratio,
            100.0 * cell.tier_hit_ratio,
            100.0 * cell.volume_read_ratio,
            cell.volume_requests_per_1000_reads,
            cell.tier_hit_p50_us
        );
    }
    if let Some(raw) = &report.raw_device_read {
        println!(
            "raw 8 KiB random read on the tier's device: p50 {:.1} us, p99 {:.1} us (direct_io={})",
            raw.p50_us, raw.p99_us, raw.direct_io
        );
    }
    let show = |label: &str, value: Option<f64>| match value {
        Some(value) => println!("{label}: {value:.2}"),
        None => println!("{label}: not measured in this run"),
    };
    show("tier_speedup_p50 (local-latency, uniform, 1 reader)", report.tier_speedup_p50);
    show("tier_speedup_p50_minio (uniform, 1 reader)", report.tier_speedup_p50_minio);
    show("tier_hit_vs_raw_device (p50 ratio)", report.tier_hit_vs_raw_device);
}
