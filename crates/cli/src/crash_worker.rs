//! The crash-test workload. `tierdb debug crash-worker` runs deterministic mini-transactions
//! from several threads and prints `ack THREAD N` once transaction N of THREAD is durable;
//! the crash test kills it with SIGKILL at a random moment. With `--verify` it instead opens
//! the store (running recovery) and checks that each thread's keys hold exactly the effect
//! of its first `c` transactions, where `c` is the transaction counter recovered with them,
//! printing `state THREAD c`. The caller checks that `c` is at least the last acknowledged N.
//!
//! Each transaction writes its number into `KEYS_PER_TRANSACTION` keys chosen from the seed
//! and into the thread's counter, all in one mini-transaction: a prefix-exact state proves
//! that nothing acknowledged was lost and nothing unacknowledged was half applied.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tierdb_common::{PageId, PageType, SplitMix64};
use tierdb_storage::{LocalVolume, PageStore, StoreConfig, Volume};

const PAGES_PER_THREAD: u64 = 48;
const SLOTS_PER_PAGE: u64 = 16;
const KEYS_PER_TRANSACTION: usize = 3;

#[derive(clap::Args)]
pub struct CrashWorkerArgs {
    #[arg(long)]
    data_dir: PathBuf,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value_t = 4)]
    threads: u64,
    /// Keep the WAL on the volume instead of the data directory.
    #[arg(long)]
    wal_in_volume: bool,
    /// Verify the recovered state instead of running the workload.
    #[arg(long)]
    verify: bool,
    /// Stop after this many transactions per thread (0: run until killed).
    #[arg(long, default_value_t = 0)]
    transactions: u64,
}

fn store_config(args: &CrashWorkerArgs) -> Result<StoreConfig, Box<dyn std::error::Error>> {
    let volume: Arc<dyn Volume> = Arc::new(LocalVolume::open(args.data_dir.join("volume"))?);
    let mut config = StoreConfig::with_volume(&args.data_dir, volume);
    // Far fewer frames than pages, frequent checkpoints and eager compaction, so that kills
    // land in eviction, flushing, checkpointing and compaction, not only in commits.
    config.buffer_pool_bytes = 24 * 8192;
    if let Some(tier) = config.tier.as_mut() {
        tier.capacity_bytes = 96 * 8192;
    }
    config.wal_in_volume = args.wal_in_volume;
    config.checkpoint_interval = Duration::from_millis(150);
    config.checkpoint_wal_bytes = 128 << 10;
    config.space_amplification_max = 1.2;
    Ok(config)
}

/// Page of key `key` of `thread`: page ids are allocated in order at initialization, the
/// counter page of each thread first.
fn layout(threads: u64, thread: u64) -> (PageId, impl Fn(u64) -> (PageId, usize)) {
    let first = 1 + thread * (PAGES_PER_THREAD + 1);
    let _ = threads;
    (PageId(first), move |key: u64| {
        let page = first + 1 + key / SLOTS_PER_PAGE;
        let offset = usize::try_from((key % SLOTS_PER_PAGE) * 8).expect("small");
        (PageId(page), offset)
    })
}

fn keys_of(seed: u64, thread: u64, transaction: u64) -> [u64; KEYS_PER_TRANSACTION] {
    let mut random = SplitMix64::new(seed ^ (thread << 40) ^ transaction.wrapping_mul(0x9E37_79B9));
    std::array::from_fn(|_| random.below(PAGES_PER_THREAD * SLOTS_PER_PAGE))
}

fn initialize(store: &PageStore, threads: u64) -> Result<(), Box<dyn std::error::Error>> {
    let wanted = threads * (PAGES_PER_THREAD + 1);
    while store.max_page_id().0 < wanted {
        let mut mtr = store.mtr();
        mtr.allocate(PageType::Raw)?;
        let lsn = mtr.commit()?;
        store.wait_durable(lsn)?;
    }
    Ok(())
}

fn read_u64(
    store: &PageStore,
    page_id: PageId,
    offset: usize,
) -> Result<u64, Box<dyn std::error::Error>> {
    let page = store.read(page_id)?;
    Ok(u64::from_le_bytes(page.payload()[offset..offset + 8].try_into()?))
}

fn run_thread(store: &PageStore, args: &CrashWorkerArgs, thread: u64) -> Result<(), String> {
    let (counter_page, key_location) = layout(args.threads, thread);
    let mut transaction = read_u64(store, counter_page, 0).map_err(|error| error.to_string())?;
    loop {
        transaction += 1;
        if args.transactions > 0 && transaction > args.transactions {
            return Ok(());
        }
        let mut mtr = store.mtr();
        let counter = mtr.latch(counter_page).map_err(|error| error.to_string())?;
        mtr.write(counter, 0, &transaction.to_le_bytes());
        let mut keys = keys_of(args.seed, thread, transaction);
        // Latch in page order, as every multi-page writer must.
        keys.sort_by_key(|&key| key_location(key));
        for key in keys {
            let (page_id, offset) = key_location(key);
            let slot = mtr.latch(page_id).map_err(|error| error.to_string())?;
            mtr.write(slot, offset, &transaction.to_le_bytes());
        }
        let lsn = mtr.commit().map_err(|error| error.to_string())?;
        store.wait_durable(lsn).map_err(|error| error.to_string())?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ack {thread} {transaction}").map_err(|error| error.to_string())?;
        stdout.flush().map_err(|error| error.to_string())?;
    }
}

fn verify(store: &PageStore, args: &CrashWorkerArgs) -> Result<(), Box<dyn std::error::Error>> {
    for thread in 0..args.threads {
        let (counter_page, key_location) = layout(args.threads, thread);
        let counter = read_u64(store, counter_page, 0)?;
        let mut expected = vec![0u64; usize::try_from(PAGES_PER_THREAD * SLOTS_PER_PAGE)?];
        for transaction in 1..=counter {
            for key in keys_of(args.seed, thread, transaction) {
                expected[usize::try_from(key)?] = transaction;
            }
        }
        for (key, &want) in expected.iter().enumerate() {
            let (page_id, offset) = key_location(u64::try_from(key)?);
            let found = read_u64(store, page_id, offset)?;
            if found != want {
                return Err(format!(
                    "state mismatch thread={thread} counter={counter} key={key} page={page_id} expected={want} found={found}"
                )
                .into());
            }
        }
        println!("state {thread} {counter}");
    }
    Ok(())
}

pub fn run(args: &CrashWorkerArgs) -> Result<(), Box<dyn std::error::Error>> {
    let store = PageStore::open(store_config(args)?)?;
    initialize(&store, args.threads)?;
    if args.verify {
        verify(&store, args)?;
        store.close()?;
        return Ok(());
    }
    println!("running");
    std::io::stdout().flush()?;
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..args.threads)
            .map(|thread| {
                scope.spawn({
                    let store = &store;
                    move || run_thread(store, args, thread)
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|handle| handle.join().expect("worker thread panicked").err())
            .collect()
    });
    if let Some(failure) = failures.first() {
        return Err(failure.clone().into());
    }
    store.close()?;
    Ok(())
}
