//! The DRAM buffer pool: frames holding pages, found through a sharded page table, replaced
//! by CLOCK, and resized online.
//!
//! The pool knows nothing of the WAL, the volume or the tier: the page store passes a loader
//! when it fetches and receives evicted clean images through a callback. That keeps the
//! pool's invariants local:
//!
//! - A frame is in the page table iff `meta.page_id` names it. Pins are taken only while
//!   holding the page's table shard lock, so "unpinned under the shard lock" means nobody can
//!   reach the frame: that is when eviction may take it.
//! - A frame is evictable only when clean (`!dirty && !write_pending`) and loaded.
//! - Lock order: table shard, then frame meta. The page latch is never taken while holding
//!   either, except by `install` on a frame that is not yet published.
//!
//! Frame lifecycle: each transition and the function that performs it (the `Frame` methods
//! are called by the store, from the module in brackets):
//!
//! ```text
//!   Free          --install-->                   Loading
//!   Loading       --install: load ok-->          Clean
//!   Loading       --install: load failed-->      Free, once its waiters unpin
//!   Clean         --mark_dirty [mtr]-->          Dirty
//!   Dirty         --begin_write [flush]-->       WritePending (copied, being written)
//!   WritePending  --mark_dirty [mtr]-->          WritePending and Dirty
//!   WritePending  --finish_write [flush]-->      Clean, or Dirty if changed meanwhile
//!   WritePending  --abort_write [flush]-->       Dirty (the segment did not fit on disk)
//!   Clean         --acquire_frame: evict-->      Free (unpinned only)
//!   Clean, Dirty  --discard [free]-->            Free (the page was freed; unpinned only)
//!   Clean, Free   --release_excess-->            dropped, memory freed (set_target shrinks)
//! ```

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::lock_api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
use parking_lot::{Mutex, RawRwLock, RwLock};
use tierdb_common::{Counter, Lsn, Page, PageId, SegmentId};

use crate::error::Result;

const SHARD_COUNT: usize = 64;
/// The most passes of the CLOCK hand a frame can survive without a pin in between: pins
/// raise its usage count up to this, each pass lowers it by one (PostgreSQL's clock sweep
/// counts to 5). A frequently used page then outlives a run of pages used once, which a
/// single reference bit cannot tell apart.
const USAGE_MAX: u8 = 3;
/// Full sweeps before giving up: every usage count reaches zero within `USAGE_MAX` of them.
const CLOCK_SWEEPS_MAX: usize = USAGE_MAX as usize + 2;
/// How long `discard` waits for the pins of a freed page before it logs an error.
const DISCARD_WAIT_WARNING: std::time::Duration = std::time::Duration::from_secs(1);
/// The pool never shrinks below this many frames: B+tree operations pin a handful at once.
pub const POOL_FRAMES_MIN: usize = 16;

/// Hashes page ids for the page table: a folded multiply (page ids are dense integers).
/// SipHash, the default, is built to resist chosen keys, which page ids are not, and it
/// showed in profiles of the hit path (four lookups per point query).
#[derive(Default, Clone, Copy)]
struct PageIdHasher(u64);

impl Hasher for PageIdHasher {
    fn finish(&self) -> u64 {
        // Not the shard's multiplier: a shard's ids must still spread over its table.
        let product = u128::from(self.0) * 0xD6E8_FEB8_6659_FD93_u128;
        let low = u64::try_from(product & u128::from(u64::MAX)).expect("masked to 64 bits");
        let high = u64::try_from(product >> 64).expect("the high half of a 128-bit product");
        low ^ high
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = self.0.rotate_left(32) ^ value;
    }
}

type PageTable = HashMap<PageId, Arc<Frame>, BuildHasherDefault<PageIdHasher>>;

/// Load progress of a frame, read by threads that pinned it while it was loading.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum LoadState {
    Loading,
    Ready,
    Failed,
}

#[derive(Debug)]
struct FrameMeta {
    page_id: PageId,
    load: LoadState,
    /// Modified since the image in `version` was written.
    dirty: bool,
    /// A flush has copied the image and is writing it; not evictable until it finishes.
    write_pending: bool,
    /// Redo must start at or before this LSN to rebuild the frame's changes (valid when
    /// `dirty || write_pending`).
    recovery_lsn: Lsn,
    /// Recovery LSN of changes made while a write was pending, adopted when it finishes.
    next_recovery_lsn: Lsn,
    /// The durable image the frame equals when clean (`NONE`: never written).
    version: SegmentId,
}

pub(crate) struct Frame {
    pub latch: Arc<RwLock<Box<Page>>>,
    pins: AtomicU32,
    usage: AtomicU8,
    /// `meta.load == Ready`, readable without the meta lock: a hit on a loaded frame (the
    /// common case) then skips waiting on the latch and locking the meta. Set with `meta.load`.
    ready: AtomicBool,
    /// Set by the layer above once it has checked the page's format under a shared latch;
    /// cleared whenever the frame is latched for writing (loads, changes, redo). Set means the
    /// bytes are the ones that were checked. SQLite's `MemPage.isInit` plays the same role:
    /// a node's slot array is walked once per change, not on every visit.
    format_checked: AtomicBool,
    meta: Mutex<FrameMeta>,
}

impl Frame {
    fn new() -> Arc<Frame> {
        Arc::new(Frame {
            latch: Arc::new(RwLock::new(Page::new_boxed())),
            pins: AtomicU32::new(0),
            usage: AtomicU8::new(0),
            ready: AtomicBool::new(true),
            format_checked: AtomicBool::new(false),
            meta: Mutex::new(FrameMeta {
                page_id: PageId::INVALID,
                load: LoadState::Ready,
                dirty: false,
                write_pending: false,
                recovery_lsn: Lsn::ZERO,
                next_recovery_lsn: Lsn::ZERO,
                version: SegmentId::NONE,
            }),
        })
    }

    /// Sets the load state; the caller holds the meta lock (`meta`).
    fn set_load(&self, meta: &mut FrameMeta, load: LoadState) {
        meta.load = load;
        self.ready.store(load == LoadState::Ready, Ordering::Release);
    }

    /// Takes the latch exclusively. Every exclusive latch (a load, an mtr's change, redo) goes
    /// through here, so that a set format-checked flag always names the bytes that were
    /// checked; cleared under the latch, where no reader can see it until the writer is done.
    fn latch_for_write(&self) -> ArcRwLockWriteGuard<RawRwLock, Box<Page>> {
        let guard = self.latch.write_arc();
        self.format_checked.store(false, Ordering::Release);
        guard
    }

    /// Records a logged change starting at `start` to this page, latched exclusively by the
    /// caller. Returns whether the frame was clean before (false: it already had changes
    /// since its last write, and keeps the recovery LSN of the first). A change made while a
    /// write is pending belongs to the next write: its LSN waits in `next_recovery_lsn`.
    pub(crate) fn mark_dirty(&self, start: Lsn) -> bool {
        let mut meta = self.meta.lock();
        debug_assert_eq!(meta.load, LoadState::Ready, "only a loaded frame is changed");
        if meta.dirty {
            return false;
        }
        meta.dirty = true;
        if meta.write_pending {
            meta.next_recovery_lsn = start;
        } else {
            meta.recovery_lsn = start;
        }
        true
    }

    /// Starts writing the frame's image (a flush copies it next, under the shared latch):
    /// the frame becomes clean and write-pending, so it is not evicted until `finish_write`.
    /// Returns false, changing nothing, unless the frame still holds `page_id`, dirty and with
    /// no write pending (it may have been written or evicted since it was chosen).
    pub(crate) fn begin_write(&self, page_id: PageId) -> bool {
        let mut meta = self.meta.lock();
        if !meta.dirty || meta.write_pending || meta.page_id != page_id {
            return false;
        }
        meta.dirty = false;
        meta.write_pending = true;
        true
    }

    /// Ends a write begun by `begin_write`: the image is durable as `version`. Changes made
    /// meanwhile (dirty again) now need redo from the LSN they recorded.
    pub(crate) fn finish_write(&self, version: SegmentId) {
        let mut meta = self.meta.lock();
        assert!(meta.write_pending, "finish_write without begin_write");
        meta.write_pending = false;
        meta.version = version;
        if meta.dirty {
            meta.recovery_lsn = meta.next_recovery_lsn;
        }
    }

    /// Ends a write begun by `begin_write` whose image was not written (no space): the frame
    /// is dirty again and keeps its recovery LSN, the oldest change still not in a segment
    /// (also when it was changed meanwhile: `next_recovery_lsn` is newer). Returns whether it
    /// was clean, i.e. whether it counts as dirty again.
    pub(crate) fn abort_write(&self) -> bool {
        let mut meta = self.meta.lock();
        assert!(meta.write_pending, "abort_write without begin_write");
        meta.write_pending = false;
        !std::mem::replace(&mut meta.dirty, true)
    }

    fn pin(&self) {
        self.pins.fetch_add(1, Ordering::AcqRel);
        // A racy increment (load, then store) is enough: the count is a hint, and a lost
        // update costs one extra pass of the hand at most.
        let usage = self.usage.load(Ordering::Relaxed);
        if usage < USAGE_MAX {
            self.usage.store(usage + 1, Ordering::Relaxed);
        }
    }
}

/// A pinned frame: it cannot be evicted while this lives.
pub struct Pinned {
    frame: Arc<Frame>,
}

impl Pinned {
    pub(crate) fn frame(&self) -> &Arc<Frame> {
        &self.frame
    }

    pub fn read(&self) -> PageReadGuard {
        PageReadGuard { guard: self.frame.latch.read_arc() }
    }

    pub(crate) fn write(&self) -> ArcRwLockWriteGuard<RawRwLock, Box<Page>> {
        self.frame.latch_for_write()
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let previous = self.frame.pins.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(previous > 0, "unpin of an unpinned frame");
    }
}

/// A page held pinned and latched shared.
pub struct PageReadGuard {
    guard: ArcRwLockReadGuard<RawRwLock, Box<Page>>,
}

impl std::ops::Deref for PageReadGuard {
    type Target = Page;
    fn deref(&self) -> &Page {
        &self.guard
    }
}

/// A page held pinned and latched shared, with its pin.
pub struct PageRef {
    // Field order matters: the latch is released before the pin.
    guard: PageReadGuard,
    pin: Pinned,
}

impl PageRef {
    pub(crate) fn new(pin: Pinned) -> PageRef {
        PageRef { guard: pin.read(), pin }
    }

    /// Whether `mark_format_checked` was called on these exact bytes: the page has not been
    /// loaded, changed or replayed since. Cleared by every exclusive latch of the frame.
    pub fn format_checked(&self) -> bool {
        self.pin.frame.format_checked.load(Ordering::Acquire)
    }

    /// Records that the caller checked the page's format. Valid until the next exclusive
    /// latch: the shared latch held by this reference keeps writers out meanwhile.
    pub fn mark_format_checked(&self) {
        self.pin.frame.format_checked.store(true, Ordering::Release);
    }
}

impl std::ops::Deref for PageRef {
    type Target = Page;
    fn deref(&self) -> &Page {
        &self.guard
    }
}

/// Counters of the pool.
#[derive(Default, Debug)]
pub struct PoolStats {
    pub hits: Counter,
    pub misses: Counter,
    pub evictions: Counter,
    pub frames_allocated: Counter,
    pub frames_released: Counter,
    /// Frames lent beyond the target because dirty pages could not be written (disk full).
    pub frames_over_target: Counter,
}

/// How a fetch was satisfied.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FetchOutcome {
    Hit,
    Loaded,
}

/// The result of looking for a frame to reuse.
pub(crate) enum Acquire {
    Frame(Arc<Frame>),
    /// No clean unpinned frame: the caller should flush dirty pages and retry.
    NeedFlush,
}

pub(crate) struct BufferPool {
    shards: Vec<Mutex<PageTable>>,
    frames: RwLock<Vec<Arc<Frame>>>,
    free: Mutex<Vec<Arc<Frame>>>,
    hand: AtomicUsize,
    /// The shard where the next `dirty_frames` starts looking: where the last one stopped.
    flush_cursor: AtomicUsize,
    target_frames: AtomicUsize,
    release_lock: Mutex<()>,
    pub stats: PoolStats,
}

/// Called with each clean page leaving the pool: (page id, durable version, image).
pub(crate) type EvictionSink<'a> = &'a dyn Fn(PageId, SegmentId, &Page);

impl BufferPool {
    pub fn new(target_frames: usize) -> BufferPool {
        assert!(target_frames >= POOL_FRAMES_MIN, "pool below its minimum");
        BufferPool {
            shards: (0..SHARD_COUNT).map(|_| Mutex::new(PageTable::default())).collect(),
            frames: RwLock::new(Vec::new()),
            free: Mutex::new(Vec::new()),
            hand: AtomicUsize::new(0),
            flush_cursor: AtomicUsize::new(0),
            target_frames: AtomicUsize::new(target_frames),
            release_lock: Mutex::new(()),
            stats: PoolStats::default(),
        }
    }

    fn shard(&self, page_id: PageId) -> &Mutex<PageTable> {
        // Page ids are dense; a multiplicative hash spreads neighbours over shards.
        let hash = page_id.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58;
        &self.shards[usize::try_from(hash).expect("6 bits")]
    }

    pub fn target_frames(&self) -> usize {
        self.target_frames.load(Ordering::Relaxed)
    }

    pub fn allocated_frames(&self) -> usize {
        self.frames.read().len()
    }

    /// Whether `page_id` has a frame (possibly still loading), without pinning it: a hint
    /// for read-ahead, stale as soon as the shard lock drops.
    pub fn is_resident(&self, page_id: PageId) -> bool {
        self.shard(page_id).lock().contains_key(&page_id)
    }

    /// Pins the frame of `page_id` if it is resident (waiting for a load in progress).
    /// Returns `Ok(None)` if it is not resident.
    pub fn lookup(&self, page_id: PageId) -> Result<Option<Pinned>> {
        let frame = {
            let shard = self.shard(page_id).lock();
            let Some(frame) = shard.get(&page_id) else {
                return Ok(None);
            };
            frame.pin();
            Arc::clone(frame)
        };
        let pinned = Pinned { frame };
        if pinned.frame.ready.load(Ordering::Acquire) {
            return Ok(Some(pinned));
        }
        // A loader holds the exclusive latch until the load finishes.
        drop(pinned.frame.latch.read());
        let load = pinned.frame.meta.lock().load;
        match load {
            LoadState::Ready => Ok(Some(pinned)),
            LoadState::Failed | LoadState::Loading => Ok(None),
        }
    }

    /// Publishes `frame` (private, unpinned) as the frame of `page_id` and fills it with
    /// `load` while holding its exclusive latch. If another thread published the page first,
    /// `frame` goes back to the free list and the other frame is returned.
    ///
    /// `load` runs after the frame is published, so no other thread can load, change or
    /// write the page while it runs: it must read the page's current location itself (a
    /// location read earlier may be stale). It returns the version it loaded.
    pub fn install(
        &self,
        frame: Arc<Frame>,
        page_id: PageId,
        load: &mut dyn FnMut(&mut Page) -> Result<SegmentId>,
    ) -> Result<Option<(Pinned, FetchOutcome)>> {
        let mut latch = frame.latch_for_write();
        {
            let mut shard = self.shard(page_id).lock();
            if let Some(existing) = shard.get(&page_id) {
                existing.pin();
                let existing = Arc::clone(existing);
                drop(shard);
                drop(latch);
                self.free.lock().push(frame);
                drop(existing.latch.read());
                let pinned = Pinned { frame: existing };
                let load = pinned.frame.meta.lock().load;
                if load == LoadState::Ready {
                    return Ok(Some((pinned, FetchOutcome::Hit)));
                }
                // The other load failed; the caller retries from the start.
                return Ok(None);
            }
            let mut meta = frame.meta.lock();
            debug_assert_eq!(meta.page_id, PageId::INVALID, "installing a frame in use");
            frame.ready.store(false, Ordering::Release);
            *meta = FrameMeta {
                page_id,
                load: LoadState::Loading,
                dirty: false,
                write_pending: false,
                recovery_lsn: Lsn::ZERO,
                next_recovery_lsn: Lsn::ZERO,
                version: SegmentId::NONE,
            };
            drop(meta);
            frame.pin();
            shard.insert(page_id, Arc::clone(&frame));
        }
        let pinned = Pinned { frame };
        match load(&mut latch) {
            Ok(version) => {
                {
                    let mut meta = pinned.frame.meta.lock();
                    pinned.frame.set_load(&mut meta, LoadState::Ready);
                    meta.version = version;
                }
                drop(latch);
                self.stats.misses.increment();
                Ok(Some((pinned, FetchOutcome::Loaded)))
            }
            Err(error) => {
                {
                    let mut shard = self.shard(page_id).lock();
                    let mut meta = pinned.frame.meta.lock();
                    pinned.frame.set_load(&mut meta, LoadState::Failed);
                    meta.page_id = PageId::INVALID;
                    shard.remove(&page_id);
                }
                drop(latch);
                let frame = Arc::clone(&pinned.frame);
                drop(pinned);
                // Waiters that pinned it see `Failed` and retry; the frame is reusable once
                // they unpin, which eviction checks.
                self.free_when_unpinned(frame);
                Err(error)
            }
        }
    }

    /// Returns an unmapped frame to the free list once the waiters that pinned it during its
    /// failed load have seen `Failed` and left (they unpin at once, so this wait is short).
    fn free_when_unpinned(&self, frame: Arc<Frame>) {
        while frame.pins.load(Ordering::Acquire) > 0 {
            std::thread::yield_now();
        }
        frame.set_load(&mut frame.meta.lock(), LoadState::Ready);
        self.free.lock().push(frame);
    }

    /// Takes the frame of `page_id`, a page the store has just freed, out of the page table
    /// and returns it to the free list, dirty or not: its changes will never be written.
    /// Returns `None` if the page is not resident, else whether the frame was dirty (the
    /// store's dirty count drops). Nobody uses a freed page, so pins on it are transient (a
    /// read-ahead load, a flush candidate list); this waits for them. The caller holds the
    /// store's flush lock, so no write of the page is pending.
    pub fn discard(&self, page_id: PageId) -> Option<bool> {
        let started = std::time::Instant::now();
        let mut warned = false;
        loop {
            let mut shard = self.shard(page_id).lock();
            let frame = Arc::clone(shard.get(&page_id)?);
            // Pins are taken under the shard lock: unpinned here, nobody can reach it.
            if frame.pins.load(Ordering::Acquire) > 0 {
                drop(shard);
                // A pin held for long on a freed page is a bug above the store: say so
                // rather than stall flushes silently behind this wait.
                if !warned && started.elapsed() > DISCARD_WAIT_WARNING {
                    warned = true;
                    tracing::error!(%page_id, "a freed page stays pinned: flushes wait");
                }
                std::thread::yield_now();
                continue;
            }
            shard.remove(&page_id);
            let mut meta = frame.meta.lock();
            assert!(!meta.write_pending, "discard of page_id={page_id} while it is written");
            assert_eq!(meta.page_id, page_id, "a mapped frame names its page");
            let dirty = std::mem::replace(&mut meta.dirty, false);
            meta.page_id = PageId::INVALID;
            frame.set_load(&mut meta, LoadState::Ready);
            drop(meta);
            drop(shard);
            self.free.lock().push(frame);
            return Some(dirty);
        }
    }

    /// A frame to load a page into: a free one, a new one while below target, or a CLOCK
    /// victim. Clean victims are handed to `evicted` (for tier admission) first.
    pub fn acquire_frame(&self, evicted: EvictionSink<'_>) -> Acquire {
        if let Some(frame) = self.free.lock().pop() {
            return Acquire::Frame(frame);
        }
        // Growing is rare: check under the shared lock first, so that misses in a full pool
        // do not serialize on the exclusive one.
        if self.frames.read().len() < self.target_frames() {
            let mut frames = self.frames.write();
            if frames.len() < self.target_frames() {
                let frame = Frame::new();
                frames.push(Arc::clone(&frame));
                self.stats.frames_allocated.increment();
                return Acquire::Frame(frame);
            }
        }
        let frames = self.frames.read();
        let count = frames.len();
        for _ in 0..count * CLOCK_SWEEPS_MAX {
            let position = self.hand.fetch_add(1, Ordering::Relaxed) % count;
            let frame = &frames[position];
            if frame.pins.load(Ordering::Acquire) > 0 {
                continue;
            }
            let usage = frame.usage.load(Ordering::Relaxed);
            if usage > 0 {
                frame.usage.store(usage - 1, Ordering::Relaxed);
                continue;
            }
            if self.try_evict(frame, evicted) {
                return Acquire::Frame(Arc::clone(frame));
            }
        }
        Acquire::NeedFlush
    }

    /// A new frame although the pool is at its target, while fewer than `over_target_max`
    /// frames are over it: for a fetch that found every frame dirty when dirty pages cannot
    /// be written. `release_excess` gives such frames back.
    pub fn acquire_frame_over_target(&self, over_target_max: usize) -> Option<Arc<Frame>> {
        let mut frames = self.frames.write();
        if frames.len() >= self.target_frames().saturating_add(over_target_max) {
            return None;
        }
        let frame = Frame::new();
        frames.push(Arc::clone(&frame));
        self.stats.frames_allocated.increment();
        self.stats.frames_over_target.increment();
        Some(frame)
    }

    /// Takes `frame` out of the page table if it is clean and unpinned.
    fn try_evict(&self, frame: &Arc<Frame>, evicted: EvictionSink<'_>) -> bool {
        let page_id = frame.meta.lock().page_id;
        if page_id == PageId::INVALID {
            // Free frames are handed out through the free list only.
            return false;
        }
        let mut shard = self.shard(page_id).lock();
        let mut meta = frame.meta.lock();
        let still_mapped = meta.page_id == page_id
            && shard.get(&page_id).is_some_and(|mapped| Arc::ptr_eq(mapped, frame));
        if !still_mapped
            || frame.pins.load(Ordering::Acquire) > 0
            || meta.dirty
            || meta.write_pending
            || meta.load != LoadState::Ready
        {
            return false;
        }
        shard.remove(&page_id);
        let version = meta.version;
        meta.page_id = PageId::INVALID;
        drop(meta);
        drop(shard);
        self.stats.evictions.increment();
        if version != SegmentId::NONE {
            // Unreachable now: no latch can be held by anyone else.
            let image = frame.latch.read();
            evicted(page_id, version, &image);
        }
        true
    }

    /// Resident frames that need writing: dirty, not being written, in no particular order.
    /// Each is returned pinned, so it stays resident while the caller copies it.
    /// With `older_than`, only frames whose recovery LSN is below it (the ones holding the
    /// redo point, and so the WAL, back).
    pub fn dirty_frames(&self, limit: usize, older_than: Option<Lsn>) -> Vec<(PageId, Pinned)> {
        // Each call resumes at the shard where the previous one stopped, so successive
        // flushes sweep the whole page table. Starting at shard 0 every time wrote the hot
        // pages of the first shards (dirty again a moment after each write) on every flush,
        // and under a dirty limit that was most of what the background writer wrote.
        let start = self.flush_cursor.load(Ordering::Relaxed) % SHARD_COUNT;
        let mut found = Vec::new();
        for index in (start..SHARD_COUNT).chain(0..start) {
            let shard = self.shards[index].lock();
            for (&page_id, frame) in shard.iter() {
                let meta = frame.meta.lock();
                let old_enough = older_than.is_none_or(|limit| meta.recovery_lsn < limit);
                if meta.dirty && !meta.write_pending && meta.load == LoadState::Ready && old_enough
                {
                    drop(meta);
                    frame.pins.fetch_add(1, Ordering::AcqRel);
                    found.push((page_id, Pinned { frame: Arc::clone(frame) }));
                    if found.len() >= limit {
                        // The rest of this shard comes first next time (the pages taken now
                        // are write-pending then, or clean).
                        self.flush_cursor.store(index, Ordering::Relaxed);
                        return found;
                    }
                }
            }
        }
        found
    }

    /// Dirty frames the CLOCK hand would evict on reaching them (unpinned, usage count 0, not
    /// being written), nearest the hand first, pinned: what the background writer cleans, as
    /// PostgreSQL's does. A frame in use (usage above 0: a hot page) is left dirty: the hand
    /// would not take it now, and written now it would be dirty again a moment later.
    ///
    /// Walks the frames in hand order from the hand, at most once around. Returns nothing
    /// once it has met `reusable_min` reusable frames (free or not allocated yet, or clean
    /// with usage 0): sessions then find frames without waiting. Otherwise returns the dirty
    /// ones it met, up to
    /// `limit`: a full segment when there are that many, so that the writer makes a few
    /// full segments rather than a small one every time a frame or two were taken.
    pub fn dirty_frames_ahead_of_hand(
        &self,
        limit: usize,
        reusable_min: usize,
    ) -> Vec<(PageId, Pinned)> {
        let frames = self.frames.read();
        let count = frames.len();
        // Frames not allocated yet are reusable too: a miss allocates one without evicting.
        let mut clean = self.free.lock().len() + self.target_frames().saturating_sub(count);
        let mut found = Vec::new();
        let hand = self.hand.load(Ordering::Relaxed) % count.max(1);
        for position in (hand..count).chain(0..hand) {
            if clean >= reusable_min {
                return Vec::new();
            }
            if found.len() >= limit {
                break;
            }
            let frame = &frames[position];
            if frame.pins.load(Ordering::Acquire) > 0 || frame.usage.load(Ordering::Relaxed) > 0 {
                continue;
            }
            let meta = frame.meta.lock();
            if meta.page_id == PageId::INVALID || meta.load != LoadState::Ready {
                continue;
            }
            if !meta.dirty || meta.write_pending {
                // Clean now, or once its pending write ends.
                clean += 1;
                continue;
            }
            let page_id = meta.page_id;
            drop(meta);
            frame.pins.fetch_add(1, Ordering::AcqRel);
            found.push((page_id, Pinned { frame: Arc::clone(frame) }));
        }
        assert!(found.len() <= limit, "more dirty frames than asked for");
        if clean >= reusable_min {
            return Vec::new();
        }
        found
    }

    /// Resident pages that have never been written (new pages whose first flush has not
    /// published them yet): the pages the page map does not count.
    pub fn unwritten_pages(&self) -> u64 {
        let count = self
            .frames
            .read()
            .iter()
            .filter(|frame| {
                let meta = frame.meta.lock();
                meta.page_id != PageId::INVALID && meta.version == SegmentId::NONE
            })
            .count();
        u64::try_from(count).expect("fits")
    }

    /// The oldest recovery LSN of any frame with unwritten changes.
    pub fn min_recovery_lsn(&self) -> Option<Lsn> {
        self.frames
            .read()
            .iter()
            .filter_map(|frame| {
                let meta = frame.meta.lock();
                (meta.page_id != PageId::INVALID && (meta.dirty || meta.write_pending))
                    .then_some(meta.recovery_lsn)
            })
            .min()
    }

    /// Sets the target size. Growing takes effect as pages are loaded; shrinking releases
    /// clean unpinned frames now (evicting them through `evicted`) and returns how many
    /// frames remain above the target (dirty or pinned ones the caller must flush first).
    pub fn set_target(&self, target_frames: usize, evicted: EvictionSink<'_>) -> usize {
        let target = target_frames.max(POOL_FRAMES_MIN);
        self.target_frames.store(target, Ordering::Relaxed);
        self.release_excess(evicted)
    }

    /// Drops frames beyond the target: free ones first, then clean unpinned victims. Works in
    /// small batches so that no thread waits on the frame list for long.
    pub fn release_excess(&self, evicted: EvictionSink<'_>) -> usize {
        const BATCH_FRAMES: usize = 256;
        // One releaser at a time: two would each release the whole excess and take the pool
        // below its target (even to zero frames).
        let _one_at_a_time = self.release_lock.lock();
        loop {
            let excess = self.allocated_frames().saturating_sub(self.target_frames());
            if excess == 0 {
                return 0;
            }
            let mut releasable: Vec<Arc<Frame>> = {
                let mut free = self.free.lock();
                let keep = free.len().saturating_sub(excess.min(BATCH_FRAMES));
                free.split_off(keep)
            };
            if releasable.len() < excess.min(BATCH_FRAMES) {
                let candidates: Vec<Arc<Frame>> =
                    self.frames.read().iter().rev().cloned().collect();
                for frame in candidates {
                    if releasable.len() >= excess.min(BATCH_FRAMES) {
                        break;
                    }
                    if frame.pins.load(Ordering::Acquire) == 0
                        && frame.meta.lock().page_id != PageId::INVALID
                        && self.try_evict(&frame, evicted)
                    {
                        releasable.push(frame);
                    }
                }
            }
            if releasable.is_empty() {
                return excess;
            }
            let gone: std::collections::HashSet<*const Frame> =
                releasable.iter().map(Arc::as_ptr).collect();
            let mut frames = self.frames.write();
            frames.retain(|frame| !gone.contains(&Arc::as_ptr(frame)));
            self.stats.frames_released.add(u64::try_from(releasable.len()).expect("fits"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGES: u64 = 64;
    const FLUSH_LIMIT: usize = 8;

    fn pool_with_dirty_pages() -> (BufferPool, Vec<Pinned>) {
        let pool = BufferPool::new(usize::try_from(PAGES).expect("fits"));
        let pins = (1..=PAGES)
            .map(|id| {
                let Acquire::Frame(frame) = pool.acquire_frame(&|_, _, _| {}) else {
                    panic!("the pool has room for every page");
                };
                let (pin, _) = pool
                    .install(frame, PageId(id), &mut |_| Ok(SegmentId(1)))
                    .expect("the loader succeeds")
                    .expect("the page is new");
                assert!(pin.frame().mark_dirty(Lsn(id)));
                pin
            })
            .collect();
        (pool, pins)
    }

    /// A flush that re-dirties the pages it took first (hot pages, changed again right after
    /// each write) still reaches every other dirty page within about one sweep.
    #[test]
    fn successive_flushes_sweep_every_dirty_page_despite_hot_pages() {
        let (pool, pins) = pool_with_dirty_pages();
        let hot: Vec<PageId> =
            pool.dirty_frames(FLUSH_LIMIT, None).into_iter().map(|(page_id, _)| page_id).collect();
        let mut written = std::collections::HashSet::new();
        let rounds_max = usize::try_from(PAGES).expect("fits") / FLUSH_LIMIT + 2;
        for round in 0..rounds_max {
            for (page_id, pin) in pool.dirty_frames(FLUSH_LIMIT, None) {
                assert!(pin.frame().begin_write(page_id));
                pin.frame().finish_write(SegmentId(2));
                written.insert(page_id);
            }
            for pin in &pins {
                if hot.contains(&pin.frame().meta.lock().page_id) {
                    pin.frame().mark_dirty(Lsn(PAGES + 1));
                }
            }
            let cold_written = written.iter().filter(|page_id| !hot.contains(page_id)).count();
            if cold_written == pins.len() - hot.len() {
                return;
            }
            assert!(round + 1 < rounds_max, "cold pages written: {cold_written}");
        }
    }

    /// A full pool of `PAGES` unpinned frames in hand order (page `i + 1` at position `i`,
    /// the hand at 0), each dirty if `dirty(page number)`, all with usage count 0.
    fn unpinned_pool(dirty: impl Fn(u64) -> bool) -> (BufferPool, Vec<Arc<Frame>>) {
        let (pool, pins) = pool_with_dirty_pages();
        let frames: Vec<Arc<Frame>> = pins.iter().map(|pin| Arc::clone(pin.frame())).collect();
        drop(pins);
        for (index, frame) in frames.iter().enumerate() {
            let page_id = PageId(u64::try_from(index).expect("fits") + 1);
            if !dirty(page_id.0) {
                assert!(frame.begin_write(page_id));
                frame.finish_write(SegmentId(2));
            }
            frame.usage.store(0, Ordering::Relaxed);
        }
        (pool, frames)
    }

    fn page_numbers(chosen: &[(PageId, Pinned)]) -> Vec<u64> {
        chosen.iter().map(|(page_id, _)| page_id.0).collect()
    }

    /// The background writer's choice: hot pages (in use, changed again right after any
    /// write) are never picked, however many flushes run, while every cold dirty page is
    /// written exactly once, nearest the hand first.
    #[test]
    fn cleaning_ahead_of_the_hand_writes_cold_pages_once_and_hot_pages_never() {
        let is_hot = |number: u64| number.is_multiple_of(4);
        let (pool, frames) = unpinned_pool(|_| true);
        let reusable_min = frames.len();
        let mut writes = std::collections::HashMap::new();
        for _ in 0..frames.len() {
            for frame in frames.iter().filter(|frame| is_hot(frame.meta.lock().page_id.0)) {
                frame.mark_dirty(Lsn(PAGES + 1));
                frame.usage.store(USAGE_MAX, Ordering::Relaxed);
            }
            let chosen = pool.dirty_frames_ahead_of_hand(FLUSH_LIMIT, reusable_min);
            let numbers = page_numbers(&chosen);
            assert!(numbers.windows(2).all(|pair| pair[0] < pair[1]), "hand order: {numbers:?}");
            for (page_id, pin) in chosen {
                assert!(pin.frame().begin_write(page_id));
                pin.frame().finish_write(SegmentId(3));
                *writes.entry(page_id.0).or_insert(0) += 1;
            }
        }
        for number in 1..=PAGES {
            let expected = if is_hot(number) { None } else { Some(&1) };
            assert_eq!(writes.get(&number), expected, "writes of page {number}");
        }
    }

    /// Nothing is written while enough frames ahead of the hand are reusable; when too few
    /// are, a full segment of the dirty frames nearest the hand; when the pool has fewer
    /// than a segment's worth, all of them.
    #[test]
    fn cleaning_ahead_of_the_hand_waits_for_need_and_writes_full_segments() {
        const CLEAN: u64 = 32;
        let (pool, _frames) = unpinned_pool(|number| number > CLEAN);
        let clean = usize::try_from(CLEAN).expect("fits");
        assert!(pool.dirty_frames_ahead_of_hand(FLUSH_LIMIT, clean).is_empty());
        assert!(pool.dirty_frames_ahead_of_hand(FLUSH_LIMIT, clean - FLUSH_LIMIT).is_empty());
        let needed = pool.dirty_frames_ahead_of_hand(FLUSH_LIMIT, clean + 1);
        let first_dirty: Vec<u64> = (CLEAN + 1..=CLEAN + 8).collect();
        assert_eq!(page_numbers(&needed), first_dirty);
        drop(needed);
        let all = pool.dirty_frames_ahead_of_hand(usize::try_from(PAGES).expect("fits"), clean + 1);
        assert_eq!(page_numbers(&all), (CLEAN + 1..=PAGES).collect::<Vec<u64>>());
        drop(all);
        // The hand moved past the clean frames: the dirty ones are nearest now.
        pool.hand.store(clean, Ordering::Relaxed);
        let after = pool.dirty_frames_ahead_of_hand(FLUSH_LIMIT, clean);
        assert_eq!(page_numbers(&after), first_dirty);
    }
}
