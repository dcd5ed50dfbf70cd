//! The page store: the one interface the layers above use to read and change pages.
//!
//! Read path: DRAM pool, then the tier (if the page map's current version is there), then the
//! volume. Write path: a mini-transaction (`Mtr`) changes latched pages and logs one WAL record
//! for all of them; dirty pages are flushed in batches into new segments (WAL first), and the
//! page map update is logged; checkpoints persist the map and bound recovery.
//!
//! Lock order (never acquired in the other direction): checkpoint state, flush lock, page map,
//! WAL state, table shard, frame meta. Page latches are taken before any of these by `Mtr`
//! and are never requested while holding one of them.

mod flush;
mod free;
mod mtr;
mod readahead;
mod recovery;

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, RwLock};
use tierdb_common::{
    with_op_counters, Counter, Histogram, Lsn, Page, PageId, SegmentId, PAGE_SIZE,
};

pub use mtr::{Mtr, MtrSlot};
pub use readahead::ReadAheadStats;

use crate::buffer_pool::{Acquire, BufferPool, FetchOutcome, PageRef, Pinned, PoolStats};
use crate::capacity::{
    Capacity, CapacityControl, CapacityUnit, Level, WorkingSet, CAPACITY_UNIT_DEFAULT_BYTES,
};
use crate::device::{Device, FileDevice};
use crate::error::{Result, StorageError};
use crate::page_map::{PageLocation, PageMap};
use crate::segment::{segment_name, slot_offset};
use crate::tier::{TierCache, TierLookup, TierStats};
use crate::volume::{MeteredVolume, Volume, VolumeStats};
use crate::wal::{DeviceOpener, Wal, WalStats};

thread_local! {
    static DRAM_SAMPLE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Attempts to load a page whose location moved (compaction) while it was being read.
const LOAD_ATTEMPTS_MAX: usize = 4;
/// How long a fetch waits for a frame to become evictable before reporting the pool
/// exhausted (every frame pinned, or held by writes in progress).
const FRAME_WAIT_MAX: Duration = Duration::from_secs(10);
/// Pages a fetch writes itself when it finds nothing clean to evict: few, so that the read
/// that pays for it waits for a small write; the background writer writes full segments.
const FOREGROUND_FLUSH_PAGES: usize = 32;
/// Frames a fetch may add beyond the pool's target when every frame is dirty and dirty pages
/// cannot be written (disk full): reads must go on while changes are refused, and a scan
/// needs only a few frames to cycle through (each is clean again once read). 2 MiB of DRAM;
/// the background writer gives the excess back once segments fit again.
const FRAMES_OVER_TARGET_WHILE_FULL_MAX: usize = 256;
/// How often `wait_durable` tries the log again while it is out of space.
const DURABLE_RETRY_INTERVAL: Duration = Duration::from_millis(200);

/// The local tier's configuration.
#[derive(Clone)]
pub struct TierConfig {
    /// The tier file (on the local SSD).
    pub path: PathBuf,
    pub capacity_bytes: u64,
    /// Open the tier file with `O_DIRECT` where the filesystem supports it.
    pub direct_io: bool,
}

/// Everything `PageStore::open` needs.
#[derive(Clone)]
pub struct StoreConfig {
    /// Local directory for the lock file, the WAL (unless `wal_in_volume`) and defaults.
    pub data_dir: PathBuf,
    /// Durable storage for segments, page-map chunks and manifests.
    pub volume: Arc<dyn Volume>,
    pub buffer_pool_bytes: u64,
    pub tier: Option<TierConfig>,
    /// Put the WAL on the volume: an acknowledged commit survives the loss of the machine.
    pub wal_in_volume: bool,
    /// Opens WAL files; tests substitute fault-injecting devices.
    pub wal_device_opener: DeviceOpener,
    /// Opens the tier file; tests substitute fault-injecting devices.
    pub tier_device_opener: Option<DeviceOpener>,
    /// Run the background writer (flushing, checkpoints, compaction).
    pub background: bool,
    pub checkpoint_interval: Duration,
    /// Checkpoint once this much WAL was written since the last one; pages dirty since
    /// further back are written. Larger: fewer writes of pages changed again and again (each
    /// write takes a new segment slot, compacted later), longer recovery. The default,
    /// 256 MiB, replays in seconds (PostgreSQL's `max_wal_size` default is 1 GB).
    pub checkpoint_wal_bytes: u64,
    /// The background writer keeps at least this fraction of the pool's frames reusable
    /// (free, or clean and unused) ahead of the CLOCK hand, so that a miss finds a frame
    /// without writing one first; it writes only frames the hand is about to reach with
    /// usage count 0. Default 0.125 (2,048 frames of a 128 MiB pool, seconds of misses).
    pub clean_ahead_fraction: f64,
    /// Compaction runs while total segment slots exceed this multiple of live pages.
    pub space_amplification_max: f64,
    /// Temporary files (sorts, hashes, cursors, index builds) and operator memory.
    pub temp: crate::temp::TempConfig,
}

impl StoreConfig {
    /// The embedded default: everything under `data_dir`, local volume in `data_dir/volume`.
    pub fn local(data_dir: impl Into<PathBuf>) -> Result<StoreConfig> {
        let data_dir = data_dir.into();
        let volume = crate::volume::LocalVolume::open(data_dir.join("volume"))?;
        Ok(StoreConfig::with_volume(data_dir, Arc::new(volume)))
    }

    pub fn with_volume(data_dir: impl Into<PathBuf>, volume: Arc<dyn Volume>) -> StoreConfig {
        let data_dir = data_dir.into();
        StoreConfig {
            tier: Some(TierConfig {
                path: data_dir.join("tier").join("tier.dat"),
                capacity_bytes: 256 << 20,
                direct_io: true,
            }),
            temp: crate::temp::TempConfig::beside(&data_dir.join("tier")),
            data_dir,
            volume,
            buffer_pool_bytes: 128 << 20,
            wal_in_volume: false,
            wal_device_opener: Arc::new(|path: &Path| {
                Ok(Box::new(FileDevice::open(path, false)?) as Box<dyn Device>)
            }),
            tier_device_opener: None,
            background: true,
            checkpoint_interval: Duration::from_secs(30),
            checkpoint_wal_bytes: 256 << 20,
            clean_ahead_fraction: 0.125,
            space_amplification_max: 1.3,
        }
    }
}

pub(crate) fn frames_for(bytes: u64) -> usize {
    usize::try_from(bytes / u64::try_from(PAGE_SIZE).expect("fits")).unwrap_or(usize::MAX)
}

/// Counters of the page store itself.
#[derive(Default, Debug)]
pub struct StoreStats {
    pub flushes: Counter,
    pub pages_flushed: Counter,
    /// Of `pages_flushed`, those written by a thread that needed a frame and found none clean
    /// (PostgreSQL's `buffers_backend`): the background writer fell behind.
    pub foreground_pages_flushed: Counter,
    pub segments_written: Counter,
    pub segment_bytes_written: Counter,
    pub checkpoints: Counter,
    pub checkpoint_bytes_written: Counter,
    pub compactions: Counter,
    pub pages_compacted: Counter,
    pub segments_deleted: Counter,
    /// Pages freed (`PageStore::free_pages`): their slots became garbage.
    pub pages_freed: Counter,
    /// Payload bytes changed by mini-transactions: the denominator of write amplification.
    pub logical_bytes_changed: Counter,
    pub mtr_commits: Counter,
    pub dram_hits: Counter,
    pub tier_hits: Counter,
    pub volume_reads: Counter,
    /// Latency of DRAM hits in nanoseconds, one in `DRAM_LATENCY_SAMPLE_EVERY` sampled (timing
    /// every ~100 ns hit would cost a fifth of it). Tier and volume reads are all timed, in
    /// `TierStats::read_latency_ns` and `VolumeStats::read_latency_ns`.
    pub dram_hit_latency_ns: Histogram,
    /// Pages loaded ahead of scans (`PageStore::read_ahead`).
    pub readahead: ReadAheadStats,
}

/// One DRAM hit in this many is timed for `StoreStats::dram_hit_latency_ns`.
pub const DRAM_LATENCY_SAMPLE_EVERY: u64 = 64;

/// Space used on the volume by segments, against the live pages they hold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpaceUsage {
    pub live_pages: u64,
    pub segment_slots: u64,
    pub segments: u64,
}

impl SpaceUsage {
    /// Segment slots per live page (1.0 is perfect).
    pub fn amplification(&self) -> f64 {
        if self.live_pages == 0 {
            return 1.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let ratio = self.segment_slots as f64 / self.live_pages as f64;
        ratio
    }
}

pub(crate) struct StoreInner {
    pub config: StoreConfig,
    pub volume: Arc<MeteredVolume<Arc<dyn Volume>>>,
    pub pool: BufferPool,
    pub tier: Option<TierCache>,
    pub temp: Arc<crate::temp::TempSpace>,
    pub wal: Wal,
    pub map: RwLock<PageMap>,
    pub next_segment: AtomicU64,
    pub next_page: AtomicU64,
    pub dirty_frames: AtomicUsize,
    pub flush_lock: Mutex<()>,
    pub checkpoint_state: Mutex<flush::CheckpointState>,
    pub poisoned: Mutex<Option<String>>,
    /// The last segment write did not fit on disk: changes are refused (`check_space`) so
    /// that the pool does not fill with pages that cannot be written, which would leave
    /// reads no frame to evict. Cleared by the next segment that fits.
    pub segments_full: AtomicBool,
    /// Segments compaction failed to read; never chosen again in this process.
    pub compaction_quarantine: Mutex<std::collections::BTreeSet<SegmentId>>,
    pub shutdown: AtomicBool,
    pub wake: (Mutex<bool>, Condvar),
    pub stats: StoreStats,
    /// Distinct pages touched recently, per level (design 015).
    pub working_set: crate::capacity::WorkingSet,
    /// An unlogged store (`PageStore::open_unlogged`): mini-transactions append no WAL
    /// record, and the store's directory is removed when it is dropped.
    pub unlogged: bool,
    _lock_file: File,
}

/// The tiered page store. See the module documentation.
pub struct PageStore {
    inner: Arc<StoreInner>,
    background: Mutex<Option<JoinHandle<()>>>,
    /// The workers loading pages ahead of scans.
    readahead: readahead::ReadAhead,
    /// The capacity the server's controller chose (fixed until a server enables it).
    capacity: CapacityControl,
}

fn lock_data_dir(data_dir: &Path) -> Result<File> {
    std::fs::create_dir_all(data_dir)
        .map_err(|error| StorageError::local_io("mkdir", data_dir, error))?;
    let path = data_dir.join("LOCK");
    let file = File::create(&path).map_err(|error| StorageError::local_io("open", &path, error))?;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if locked != 0 {
        return Err(StorageError::Locked { path: data_dir.display().to_string() });
    }
    Ok(file)
}

impl PageStore {
    /// Opens the store, running crash recovery: loads the newest manifest and page map,
    /// replays the WAL, and deletes segments no durable state references.
    pub fn open(config: StoreConfig) -> Result<PageStore> {
        Self::open_with(config, None)
    }

    /// Opens a store for temp tables (docs/design/019-temp-tables.md, "Unlogged storage"):
    /// a fresh directory `tierdb-tables-<pid>-<n>` in the temp space's directory holding its
    /// segments (charged to the temp space's quota: `TempSpace::table_bytes`), its own
    /// buffer pool of `buffer_pool_bytes` (so temp pages never evict cached pages of the
    /// main store), no tier and no WAL: nothing in it survives the process. The directory is
    /// removed when the store is dropped; one a crash left is removed by the next
    /// `TempSpace::open` (its lock file is no longer held).
    pub fn open_unlogged(
        temp: &Arc<crate::temp::TempSpace>,
        buffer_pool_bytes: u64,
    ) -> Result<PageStore> {
        let dir = temp.next_table_store_dir();
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|error| StorageError::local_io("rmdir", &dir, error))?;
        }
        let local = crate::volume::LocalVolume::open(dir.join("volume"))?;
        // TempTableVolume turns syncs off: nothing is read after a restart.
        let volume = crate::temp::TempTableVolume::new(local, Arc::clone(temp));
        let mut config = StoreConfig::with_volume(dir, Arc::new(volume));
        config.tier = None;
        config.buffer_pool_bytes = buffer_pool_bytes;
        // `config.temp` is not used: the store shares `temp` (its quota, its counters).
        Self::open_with(config, Some(Arc::clone(temp)))
    }

    fn open_with(
        config: StoreConfig,
        unlogged: Option<Arc<crate::temp::TempSpace>>,
    ) -> Result<PageStore> {
        let lock_file = lock_data_dir(&config.data_dir)?;
        let inner = recovery::recover(config, lock_file, unlogged)?;
        let unit = CapacityUnit::new(CAPACITY_UNIT_DEFAULT_BYTES);
        let current = Capacity::holding(inner.config.buffer_pool_bytes, unit.buffer_pool_bytes());
        let inner = Arc::new(inner);
        let readahead = readahead::ReadAhead::start(&inner)
            .map_err(|error| StorageError::local_io("spawn", &inner.config.data_dir, error))?;
        let store = PageStore {
            inner,
            background: Mutex::new(None),
            readahead,
            capacity: CapacityControl::fixed(unit, current),
        };
        store.inner.checkpoint()?;
        if store.inner.config.background {
            let inner = Arc::clone(&store.inner);
            let handle = std::thread::Builder::new()
                .name("page-writer".to_string())
                .spawn(move || flush::background_loop(&inner))
                .map_err(|error| {
                    StorageError::local_io("spawn", &store.inner.config.data_dir, error)
                })?;
            *store.background.lock() = Some(handle);
        }
        Ok(store)
    }

    /// Reads a page: pinned and latched shared until the returned guard drops.
    pub fn read(&self, page_id: PageId) -> Result<PageRef> {
        Ok(PageRef::new(self.inner.fetch(page_id)?))
    }

    /// Asks the read-ahead workers to load `page_ids` (the pages a scan reads next) into
    /// DRAM while the caller works; pages already resident are skipped, and the request is
    /// dropped where the queue is full. Returns how many pages were queued.
    pub fn read_ahead(&self, page_ids: &[PageId]) -> usize {
        self.readahead.submit(&self.inner, page_ids)
    }

    /// Reserves `count` consecutive page ids, the first returned, for pages a bulk build
    /// creates later with `Mtr::allocate_reserved`: a build that links pages to each other
    /// must know the id of a page before writing the pages that name it. A reserved id that
    /// is never created is a gap, like the id of an mtr that allocated and was dropped.
    pub fn reserve_page_ids(&self, count: u64) -> PageId {
        assert!(count > 0, "reserving no page ids");
        let first = self.inner.next_page.fetch_add(count, std::sync::atomic::Ordering::AcqRel);
        assert!(first.checked_add(count).is_some(), "page ids exhausted");
        PageId(first)
    }

    /// Frees `pages` (ascending, no repeats, at most `FREED_PAGES_PER_RECORD_MAX`): their
    /// map entries and frames go, and compaction and checkpoints reclaim their space. The
    /// caller guarantees that nobody reads or changes them any more (store/free.rs). Returns
    /// the record's end LSN, for `wait_durable`.
    pub fn free_pages(&self, pages: &[PageId]) -> Result<Lsn> {
        self.inner.free_pages(pages)
    }

    /// Starts a mini-transaction: a group of page changes logged and applied atomically.
    pub fn mtr(&self) -> Mtr<'_> {
        Mtr::new(&self.inner)
    }

    /// Blocks until the WAL is durable up to `lsn` (group commit).
    ///
    /// A record already appended is in the log and its change is already in the pages: the
    /// only honest outcomes are durable or poisoned. So when the log is out of space this
    /// waits, trying again every `DURABLE_RETRY_INTERVAL`, until space is freed (PostgreSQL
    /// would PANIC). Only records appended just before the space ran out wait here: later
    /// appends fail at once with `DiskFull` (see `Wal::append_with`).
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        let mut warned = false;
        loop {
            match self.inner.wal.flush_to(lsn) {
                Err(error) if error.is_disk_full() => {
                    if !std::mem::replace(&mut warned, true) {
                        tracing::warn!(%error, %lsn, "a logged change waits for space to become durable");
                    }
                    std::thread::sleep(DURABLE_RETRY_INTERVAL);
                }
                outcome => return outcome.inspect_err(|error| self.inner.poison(error)),
            }
        }
    }

    /// Appends a record for a layer above (e.g. a transaction commit); returns its end LSN.
    pub fn log_opaque(&self, kind: u8, payload: Vec<u8>) -> Result<Lsn> {
        self.inner.check_poisoned()?;
        self.inner.wal.append(&crate::wal::WalRecord::Opaque { kind, payload })
    }

    /// Writes every dirty page to the volume.
    pub fn flush_all(&self) -> Result<()> {
        while self.inner.flush_some(crate::segment::SEGMENT_SLOTS_MAX)? > 0 {}
        Ok(())
    }

    pub fn checkpoint(&self) -> Result<()> {
        self.inner.checkpoint()
    }

    /// Runs compaction until space amplification is below the configured maximum or no
    /// segment is worth compacting. Returns segments compacted.
    pub fn compact(&self) -> Result<usize> {
        let mut compacted = 0;
        while self.inner.compact_step()? {
            compacted += 1;
        }
        Ok(compacted)
    }

    /// Resizes the DRAM pool online. Shrinking flushes dirty pages and evicts clean ones;
    /// pinned pages are waited for up to `timeout`. Returns the frames allocated afterwards.
    pub fn resize_buffer_pool(&self, bytes: u64, timeout: Duration) -> Result<usize> {
        let inner = &self.inner;
        let deadline = Instant::now() + timeout;
        // Pages a shrink takes out of DRAM are demoted to the tier, waiting for room in its
        // admission queue rather than dropping them (design 015).
        let demote = |page_id, version, image: &Page| inner.demote(page_id, version, image);
        let mut remaining = inner.pool.set_target(frames_for(bytes), &demote);
        while remaining > 0 {
            inner.flush_some(crate::segment::SEGMENT_SLOTS_MAX)?;
            remaining = inner.pool.release_excess(&demote);
            if remaining > 0 && Instant::now() >= deadline {
                return Err(StorageError::PoolExhausted { frames: inner.pool.allocated_frames() });
            }
            if remaining > 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(inner.pool.allocated_frames())
    }

    /// Resizes the tier online.
    pub fn resize_tier(&self, bytes: u64) -> Result<()> {
        match &self.inner.tier {
            Some(tier) => tier.resize(bytes),
            None => Err(StorageError::InvalidConfig { detail: "tier is disabled".to_string() }),
        }
    }

    /// Distinct pages touched recently (design 015); the capacity runner rotates its slots.
    pub fn working_set(&self) -> &WorkingSet {
        &self.inner.working_set
    }
    /// The capacity status the server's controller publishes.
    pub fn capacity(&self) -> &CapacityControl {
        &self.capacity
    }
    pub fn pool_stats(&self) -> &PoolStats {
        &self.inner.pool.stats
    }
    pub fn tier_stats(&self) -> Option<&TierStats> {
        self.inner.tier.as_ref().map(TierCache::stats)
    }
    /// Temporary files and the operator memory pool (design 011).
    pub fn temp_space(&self) -> &Arc<crate::temp::TempSpace> {
        &self.inner.temp
    }
    pub fn tier(&self) -> Option<&TierCache> {
        self.inner.tier.as_ref()
    }
    pub fn volume_stats(&self) -> &VolumeStats {
        self.inner.volume.stats()
    }
    pub fn wal_stats(&self) -> &WalStats {
        &self.inner.wal.stats
    }
    pub fn stats(&self) -> &StoreStats {
        &self.inner.stats
    }
    pub fn buffer_pool_frames(&self) -> (usize, usize) {
        (self.inner.pool.allocated_frames(), self.inner.pool.target_frames())
    }
    pub fn space_usage(&self) -> SpaceUsage {
        let map = self.inner.map.read();
        SpaceUsage {
            live_pages: map.live_pages(),
            segment_slots: map.total_slots(),
            segments: u64::try_from(map.segments().len()).expect("fits"),
        }
    }
    pub fn durable_lsn(&self) -> Lsn {
        self.inner.wal.durable_lsn()
    }
    pub fn describe_volume(&self) -> String {
        self.inner.volume.describe()
    }

    /// Pages in use: those with a durable image, plus new ones not written yet. Freed pages
    /// leave it (PostgreSQL's database size shrinks after DROP TABLE likewise). A page being
    /// written for the first time, or loaded, may be counted twice for that moment. Walks
    /// every frame: for size functions, not hot paths.
    pub fn pages_in_use(&self) -> u64 {
        let written = self.inner.map.read().live_pages();
        written + self.inner.pool.unwritten_pages()
    }

    /// Largest page id allocated so far.
    pub fn max_page_id(&self) -> PageId {
        PageId(self.inner.next_page.load(Ordering::Acquire).saturating_sub(1))
    }

    /// Clean shutdown: flushes, checkpoints and persists the tier index.
    pub fn close(self) -> Result<()> {
        self.stop_background();
        self.flush_all()?;
        self.inner.checkpoint()?;
        if let Some(tier) = &self.inner.tier {
            tier.close()?;
        }
        Ok(())
    }

    /// Stops background work without flushing anything: what a crash leaves behind (the
    /// operating system still holds completed writes). For tests.
    pub fn abandon(self) {
        self.stop_background();
    }

    fn stop_background(&self) {
        self.inner.shutdown.store(true, Ordering::Release);
        self.readahead.stop();
        self.inner.wake_writer();
        if let Some(handle) = self.background.lock().take() {
            let _ = handle.join();
        }
    }
}

impl Drop for PageStore {
    fn drop(&mut self) {
        self.stop_background();
        if self.inner.unlogged {
            // Nothing in an unlogged store outlives it (its pages were the temp tables of
            // sessions that are gone with it).
            let dir = &self.inner.config.data_dir;
            if let Err(error) = std::fs::remove_dir_all(dir) {
                tracing::warn!(%error, dir = %dir.display(), "removing a temp table store failed");
            }
        }
    }
}

impl StoreInner {
    pub(crate) fn check_poisoned(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(cause) => Err(StorageError::Poisoned { cause: cause.clone() }),
            None => Ok(()),
        }
    }

    /// Fails with `DiskFull` while segments do not fit on disk (see `segments_full`).
    pub(crate) fn check_space(&self) -> Result<()> {
        if self.segments_full.load(Ordering::Acquire) {
            return Err(StorageError::DiskFull { op: "write", path: "segments".to_string() });
        }
        Ok(())
    }

    /// Enters the sticky error state after a durable write whose outcome is unknown. A
    /// write refused for want of space has a known outcome (nothing written) and does not.
    pub(crate) fn poison(&self, error: &StorageError) {
        if error.is_disk_full() {
            return;
        }
        let mut poisoned = self.poisoned.lock();
        if poisoned.is_none() {
            tracing::error!(%error, "page store poisoned");
            *poisoned = Some(error.to_string());
        }
    }

    pub(crate) fn wake_writer(&self) {
        let (flag, condvar) = &self.wake;
        *flag.lock() = true;
        condvar.notify_one();
    }

    /// Hands a clean page leaving DRAM to the tier.
    pub(crate) fn admit(&self, page_id: PageId, version: SegmentId, image: &Page) {
        self.admit_to_tier(page_id, version, image, false);
    }

    /// `admit`, waiting for room in the tier's admission queue instead of dropping the page
    /// when it is full: for shrinks, which evict many pages at once.
    pub(crate) fn demote(&self, page_id: PageId, version: SegmentId, image: &Page) {
        self.admit_to_tier(page_id, version, image, true);
    }

    fn admit_to_tier(&self, page_id: PageId, version: SegmentId, image: &Page, wait: bool) {
        if let Some(tier) = &self.tier {
            if tier.contains(page_id, version) {
                return;
            }
            let mut copy = Box::new(image.clone());
            copy.set_image_version(version);
            copy.seal();
            if wait {
                tier.admit_waiting(page_id, version, copy);
            } else {
                tier.admit(page_id, version, copy);
            }
        }
    }

    /// A free frame, flushing dirty pages if every candidate is dirty.
    pub(crate) fn acquire_frame(&self) -> Result<Arc<crate::buffer_pool::Frame>> {
        let deadline = Instant::now() + FRAME_WAIT_MAX;
        loop {
            let admit = |page_id, version, image: &Page| self.admit(page_id, version, image);
            match self.pool.acquire_frame(&admit) {
                Acquire::Frame(frame) => return Ok(frame),
                Acquire::NeedFlush => {
                    // Nothing clean to evict: write dirty pages; if there were none to write
                    // (all pinned or already being written), wait for others to finish.
                    match self.flush_some(FOREGROUND_FLUSH_PAGES) {
                        Ok(0) => {
                            if Instant::now() >= deadline {
                                return Err(StorageError::PoolExhausted {
                                    frames: self.pool.allocated_frames(),
                                });
                            }
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        Ok(written) => {
                            self.stats
                                .foreground_pages_flushed
                                .add(crate::codec::usize_to_u64(written));
                        }
                        Err(error) if error.is_disk_full() => {
                            // Out-of-place writes need free space, so a full disk would
                            // otherwise fail reads too: lend a frame beyond the target.
                            let over_target = FRAMES_OVER_TARGET_WHILE_FULL_MAX;
                            return self.pool.acquire_frame_over_target(over_target).ok_or(error);
                        }
                        Err(error) => return Err(error),
                    }
                }
            }
        }
    }

    /// Pins `page_id`, loading it from the tier or the volume on a DRAM miss.
    pub(crate) fn fetch(&self, page_id: PageId) -> Result<Pinned> {
        for _ in 0..LOAD_ATTEMPTS_MAX {
            let sampled = DRAM_SAMPLE.with(|countdown| {
                let next = countdown.get().wrapping_add(1);
                countdown.set(next);
                next % DRAM_LATENCY_SAMPLE_EVERY == 0
            });
            let started = sampled.then(Instant::now);
            if let Some(pinned) = self.pool.lookup(page_id)? {
                self.working_set.record(page_id, Level::Dram);
                self.pool.stats.hits.increment();
                self.stats.dram_hits.increment();
                if let Some(started) = started {
                    let elapsed_ns =
                        u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    self.stats.dram_hit_latency_ns.record(elapsed_ns);
                }
                with_op_counters(|counters| counters.dram_hits += 1);
                return Ok(pinned);
            }
            if self.map.read().get(page_id).is_none() {
                return Err(StorageError::UnknownPage { page_id });
            }
            let frame = self.acquire_frame()?;
            let mut loaded = None;
            let mut read_from = None;
            let installed = self.pool.install(frame, page_id, &mut |page| {
                // Our frame is published: nobody else can load, change or write this page
                // until we finish, so the map now names its current image. (A location read
                // before publishing could be older than an image flushed meanwhile.)
                let location =
                    self.map.read().get(page_id).ok_or(StorageError::UnknownPage { page_id })?;
                read_from = Some(location);
                loaded = Some(self.load_image(page_id, location, page)?);
                Ok(location.segment)
            });
            match installed {
                Ok(Some((pinned, outcome))) => {
                    let level = if loaded.is_some() { Level::BelowDram } else { Level::Dram };
                    self.working_set.record(page_id, level);
                    self.count_fetch(outcome, loaded);
                    return Ok(pinned);
                }
                Ok(None) => continue,
                // Compaction moved the page and a checkpoint deleted the old segment between
                // our map read and the volume read: read the new location.
                Err(StorageError::NotFound { .. }) if self.map.read().get(page_id) != read_from => {
                    continue
                }
                Err(error) => return Err(error),
            }
        }
        Err(StorageError::VolumeIo {
            op: "read",
            object: format!("page_id={page_id}"),
            detail: format!("page moved during every one of attempts={LOAD_ATTEMPTS_MAX}"),
        })
    }

    fn count_fetch(&self, outcome: FetchOutcome, loaded: Option<Source>) {
        match (outcome, loaded) {
            (FetchOutcome::Hit, _) | (FetchOutcome::Loaded, None) => {
                self.stats.dram_hits.increment();
                with_op_counters(|counters| counters.dram_hits += 1);
            }
            (FetchOutcome::Loaded, Some(Source::Tier)) => {
                self.stats.tier_hits.increment();
                with_op_counters(|counters| counters.tier_hits += 1);
            }
            (FetchOutcome::Loaded, Some(Source::Volume)) => {
                self.stats.volume_reads.increment();
                with_op_counters(|counters| counters.volume_reads += 1);
            }
        }
    }

    /// Reads image `location` of `page_id` into `page`: from the tier if it holds exactly
    /// that image, else from the volume, verifying the checksum, page id and version.
    fn load_image(
        &self,
        page_id: PageId,
        location: PageLocation,
        page: &mut Page,
    ) -> Result<Source> {
        if let Some(tier) = &self.tier {
            if tier.lookup(page_id, location.segment, page) == TierLookup::Hit {
                return Ok(Source::Tier);
            }
        }
        let name = segment_name(location.segment);
        self.volume.read_range(&name, slot_offset(location.slot), page.as_bytes_mut())?;
        page.verify_version(page_id, location.segment).map_err(|reason| {
            StorageError::CorruptPage {
                page_id,
                version: location.segment,
                location: format!("{} slot={}", self.volume.describe_object(&name), location.slot),
                reason,
            }
        })?;
        Ok(Source::Volume)
    }
}

#[derive(Clone, Copy, Debug)]
enum Source {
    Tier,
    Volume,
}

impl MeteredVolume<Arc<dyn Volume>> {
    fn describe_object(&self, name: &str) -> String {
        format!("{}/{name}", self.describe())
    }
}
