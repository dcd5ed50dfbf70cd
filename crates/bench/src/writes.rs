//! `tierdb bench writes`: random small updates to pages, committed durably from several
//! threads, then a flush, checkpoint and compaction. Reports bytes written to the WAL and the
//! volume per logical byte changed (write amplification), group-commit effectiveness, volume
//! requests, and space amplification before and after compaction.
//!
//! Out-of-place page writes need neither a doublewrite buffer nor full-page images in the WAL:
//! the WAL carries only the changed bytes, and each flushed page is written once.

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use tierdb_common::{PageId, PageType, SplitMix64, PAGE_PAYLOAD_SIZE};
use tierdb_storage::{PageStore, StoreConfig};

use crate::volumes::open_volume;

#[derive(clap::Args, Clone, Debug)]
pub struct WritesArgs {
    #[arg(long)]
    pub json: bool,
    /// Pages in the data set.
    #[arg(long, default_value_t = 8192)]
    pub pages: u64,
    #[arg(long, default_value_t = 1024)]
    pub pool_pages: u64,
    /// Updates in total (each its own durable commit).
    #[arg(long, default_value_t = 100_000)]
    pub updates: u64,
    /// Bytes changed per update.
    #[arg(long, default_value_t = 100)]
    pub update_bytes: usize,
    #[arg(long, default_value_t = 8)]
    pub threads: u64,
    /// local or minio.
    #[arg(long, default_value = "local")]
    pub volume: String,
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct WritesReport {
    benchmark: &'static str,
    volume: String,
    pages: u64,
    pool_pages: u64,
    updates: u64,
    update_bytes: usize,
    threads: u64,
    seconds: f64,
    commits_per_s: f64,
    logical_bytes: u64,
    wal_bytes: u64,
    volume_bytes_written: u64,
    segment_bytes: u64,
    checkpoint_bytes: u64,
    /// (WAL + volume bytes) / logical bytes.
    write_amplification: f64,
    wal_amplification: f64,
    volume_amplification: f64,
    wal_syncs: u64,
    commits_per_sync: f64,
    volume_put_requests: u64,
    volume_requests_per_1000_commits: f64,
    space_amplification_before_compaction: f64,
    space_amplification_after_compaction: f64,
    volume_bytes_stored_after_compaction: u64,
    live_page_bytes: u64,
}

pub fn run_writes(args: &WritesArgs) -> Result<(), Box<dyn std::error::Error>> {
    assert!(
        args.update_bytes > 0 && args.update_bytes <= PAGE_PAYLOAD_SIZE,
        "update size out of range"
    );
    let temporary = tempfile::tempdir()?;
    let work_dir = args.work_dir.clone().unwrap_or_else(|| temporary.path().to_path_buf());
    let volume = open_volume(&args.volume, &work_dir, 0)?;
    let mut config = StoreConfig::with_volume(work_dir.join("data"), volume.volume.clone());
    config.buffer_pool_bytes = args.pool_pages * 8192;
    let store = PageStore::open(config)?;
    while store.max_page_id().0 < args.pages {
        let mut mtr = store.mtr();
        mtr.allocate(PageType::Raw)?;
        mtr.commit()?;
    }
    store.flush_all()?;
    store.checkpoint()?;
    let logical_before = store.stats().logical_bytes_changed.get();
    let wal_before = store.wal_stats().bytes.get();
    let syncs_before = store.wal_stats().syncs.get();
    let volume_before = store.volume_stats().snapshot();
    let segment_before = store.stats().segment_bytes_written.get();
    let checkpoint_before = store.stats().checkpoint_bytes_written.get();
    let started = Instant::now();
    std::thread::scope(|scope| -> Result<(), String> {
        let handles: Vec<_> = (0..args.threads)
            .map(|thread| {
                let store = &store;
                scope.spawn(move || update_loop(store, args, thread))
            })
            .collect();
        for handle in handles {
            handle.join().map_err(|_| "writer panicked".to_string())??;
        }
        Ok(())
    })?;
    let seconds = started.elapsed().as_secs_f64();
    store.flush_all()?;
    store.checkpoint()?;
    let before_compaction = store.space_usage().amplification();
    store.compact()?;
    store.checkpoint()?;
    let after = store.space_usage();
    let logical = store.stats().logical_bytes_changed.get() - logical_before;
    let wal = store.wal_stats().bytes.get() - wal_before;
    let volume_stats = store.volume_stats().snapshot().since(&volume_before);
    let stored: u64 = volume.volume.list("")?.iter().map(|info| info.size).sum();
    let syncs = store.wal_stats().syncs.get() - syncs_before;
    let report = WritesReport {
        benchmark: "writes",
        volume: volume.note.clone(),
        pages: args.pages,
        pool_pages: args.pool_pages,
        updates: args.updates,
        update_bytes: args.update_bytes,
        threads: args.threads,
        seconds,
        commits_per_s: args.updates as f64 / seconds,
        logical_bytes: logical,
        wal_bytes: wal,
        volume_bytes_written: volume_stats.bytes_written,
        segment_bytes: store.stats().segment_bytes_written.get() - segment_before,
        checkpoint_bytes: store.stats().checkpoint_bytes_written.get() - checkpoint_before,
        write_amplification: (wal + volume_stats.bytes_written) as f64 / logical as f64,
        wal_amplification: wal as f64 / logical as f64,
        volume_amplification: volume_stats.bytes_written as f64 / logical as f64,
        wal_syncs: syncs,
        commits_per_sync: args.updates as f64 / syncs.max(1) as f64,
        volume_put_requests: volume_stats.put_requests,
        volume_requests_per_1000_commits: 1000.0 * volume_stats.requests() as f64
            / args.updates as f64,
        space_amplification_before_compaction: before_compaction,
        space_amplification_after_compaction: after.amplification(),
        volume_bytes_stored_after_compaction: stored,
        live_page_bytes: after.live_pages * 8192,
    };
    store.close()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}

fn update_loop(store: &PageStore, args: &WritesArgs, thread: u64) -> Result<(), String> {
    let mut random = SplitMix64::new(0xC0FFEE ^ thread);
    let share = args.updates / args.threads + u64::from(thread < args.updates % args.threads);
    let mut bytes = vec![0u8; args.update_bytes];
    let span = u64::try_from(PAGE_PAYLOAD_SIZE - args.update_bytes).expect("fits") + 1;
    for _ in 0..share {
        let page_id = PageId(1 + random.below(args.pages));
        let offset = usize::try_from(random.below(span)).expect("fits");
        for byte in &mut bytes {
            *byte = u8::try_from(random.below(256)).expect("byte");
        }
        let mut mtr = store.mtr();
        let slot = mtr.latch(page_id).map_err(|error| error.to_string())?;
        mtr.write(slot, offset, &bytes);
        let lsn = mtr.commit().map_err(|error| error.to_string())?;
        store.wait_durable(lsn).map_err(|error| error.to_string())?;
    }
    Ok(())
}

fn print_report(report: &WritesReport) {
    println!("bench writes on {}", report.volume);
    println!(
        "{} updates of {} bytes over {} pages (pool {} pages), {} threads: {:.1} s, {:.0} commits/s",
        report.updates, report.update_bytes, report.pages, report.pool_pages, report.threads, report.seconds, report.commits_per_s
    );
    println!("logical bytes changed: {}", report.logical_bytes);
    println!("wal bytes: {} ({:.2}x logical)", report.wal_bytes, report.wal_amplification);
    println!(
        "volume bytes written: {} ({:.2}x logical; segments {}, checkpoints {})",
        report.volume_bytes_written,
        report.volume_amplification,
        report.segment_bytes,
        report.checkpoint_bytes
    );
    println!("write amplification (wal + volume) / logical: {:.2}", report.write_amplification);
    println!("wal syncs: {} ({:.1} commits per sync)", report.wal_syncs, report.commits_per_sync);
    println!(
        "volume PUTs: {} ({:.2} requests per 1000 commits)",
        report.volume_put_requests, report.volume_requests_per_1000_commits
    );
    println!(
        "space amplification (segment slots / live pages): {:.2} before compaction, {:.2} after",
        report.space_amplification_before_compaction, report.space_amplification_after_compaction
    );
    println!(
        "volume bytes stored after compaction: {} for {} live page bytes",
        report.volume_bytes_stored_after_compaction, report.live_page_bytes
    );
}
