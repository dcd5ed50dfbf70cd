//! The local tier cache: page images on a local SSD between the DRAM pool and the volume.
//!
//! - Admission: a clean page about to leave DRAM is queued (bounded; when full the page is
//!   dropped and counted, so a saturated device never slows eviction) and written by one
//!   worker thread into a free or CLOCK-evicted slot.
//! - Lookup: the caller names the version it needs (the page map's current version). A slot
//!   is served only if the image's checksum verifies and its header names the same page and
//!   version. Versions are segment ids, unique per image for the life of the database, so a
//!   verified match is exactly the current image: the tier can never serve a stale page, even
//!   from an index persisted before a crash.
//! - Invalidation: a page modified in DRAM drops its tier entry at once (freeing the slot);
//!   correctness does not depend on it, because lookups check the version anyway.
//! - Restart: the index is persisted (after a device sync) periodically and at close, so the
//!   tier is usable at once after a restart or crash, without reading the volume or scanning
//!   the device. Entries whose slot was rewritten after the last persist fail verification on
//!   first use and are discarded and counted.
//!
//! Slot state machine (`SlotMeta`), with the function performing each transition:
//!
//! ```text
//!  Free --admit/worker: claim--> Writing --worker: write ok--> Cached --lookup--> (readers+1)
//!   ^                              |                            |   |
//!   +--- worker: write failed -----+        invalidate/evict ---+   +-- stale/corrupt: discard
//!   +--------------- last reader leaves an orphaned slot, or no readers ----------------+
//! ```
//!
//! Index file `tier.idx` (little-endian): magic `TDBTIX01`, slot count u32, entry count u32,
//! entries (page id u64, version u64, slot u32), CRC32C of everything before.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use tierdb_common::{Counter, Histogram, Page, PageId, SegmentId, PAGE_SIZE};

use crate::codec::{u64_to_usize, usize_to_u32, usize_to_u64, verify_sealed, Reader, Writer};
use crate::device::Device;
use crate::error::{Result, StorageError};

const INDEX_MAGIC: &[u8; 8] = b"TDBTIX01";
/// Admissions waiting for the worker at most; beyond it they are dropped and counted.
pub const ADMISSION_QUEUE_MAX: usize = 256;
/// How often the worker persists a changed index.
pub const INDEX_PERSIST_INTERVAL: Duration = Duration::from_secs(5);

/// Counters of the tier.
#[derive(Default, Debug)]
pub struct TierStats {
    pub hits: Counter,
    pub misses: Counter,
    pub writes: Counter,
    pub evictions: Counter,
    pub invalidations: Counter,
    pub dropped_admissions: Counter,
    /// Entries found to hold another version than the one asked for.
    pub stale_discards: Counter,
    /// Entries that failed checksum or identity verification.
    pub corrupt_discards: Counter,
    pub write_errors: Counter,
    pub read_errors: Counter,
    pub bytes_read: Counter,
    pub bytes_written: Counter,
    pub read_latency_ns: Histogram,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SlotState {
    Free,
    Writing,
    Cached,
    /// Dropped from the index while readers were using it; freed by the last reader.
    Orphaned,
}

#[derive(Clone, Copy, Debug)]
struct SlotMeta {
    state: SlotState,
    page_id: PageId,
    version: SegmentId,
    referenced: bool,
    readers: u32,
}

const FREE_SLOT: SlotMeta = SlotMeta {
    state: SlotState::Free,
    page_id: PageId::INVALID,
    version: SegmentId::NONE,
    referenced: false,
    readers: 0,
};

struct TierState {
    index: HashMap<PageId, u32>,
    slots: Vec<SlotMeta>,
    free: Vec<u32>,
    hand: usize,
    /// The admission the worker is writing now (one worker, so at most one).
    writing: Option<(PageId, u32)>,
    /// Set when that page was invalidated during the write: the write is discarded.
    writing_cancelled: bool,
    changed_since_persist: bool,
}

impl TierState {
    fn release_slot(&mut self, slot: u32) {
        let meta = &mut self.slots[slot as usize];
        if meta.readers > 0 {
            meta.state = SlotState::Orphaned;
        } else {
            *meta = FREE_SLOT;
            self.free.push(slot);
        }
    }

    fn remove_entry(&mut self, page_id: PageId) -> bool {
        match self.index.remove(&page_id) {
            Some(slot) => {
                self.release_slot(slot);
                self.changed_since_persist = true;
                true
            }
            None => false,
        }
    }

    /// A free slot, or a CLOCK victim with no readers; `None` if every slot is busy.
    fn claim_slot(&mut self, stats: &TierStats) -> Option<u32> {
        if let Some(slot) = self.free.pop() {
            return Some(slot);
        }
        let count = self.slots.len();
        for _ in 0..count * 2 {
            let slot = self.hand % count;
            self.hand = self.hand.wrapping_add(1);
            let meta = &mut self.slots[slot];
            if meta.state != SlotState::Cached || meta.readers > 0 {
                continue;
            }
            if meta.referenced {
                meta.referenced = false;
                continue;
            }
            let victim = meta.page_id;
            self.index.remove(&victim);
            self.slots[slot] = FREE_SLOT;
            self.changed_since_persist = true;
            stats.evictions.increment();
            return Some(usize_to_u32(slot));
        }
        None
    }
}

struct Admission {
    page_id: PageId,
    version: SegmentId,
    image: Box<Page>,
}

struct TierShared {
    device: Box<dyn Device>,
    index_path: PathBuf,
    state: Mutex<TierState>,
    /// Held shared by every slot read and write, exclusively by resize.
    resize_gate: RwLock<()>,
    persist_lock: Mutex<()>,
    stats: TierStats,
}

/// The tier cache. Cheap to share: lookups and invalidations are called from any thread.
pub struct TierCache {
    shared: Arc<TierShared>,
    queue: Mutex<Option<SyncSender<Admission>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// What a lookup found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TierLookup {
    Hit,
    Miss,
}

fn slot_offset(slot: u32) -> u64 {
    u64::from(slot) * usize_to_u64(PAGE_SIZE)
}

/// Slots of a tier of `capacity_bytes`: at least one, and at most `u32::MAX` (slot numbers
/// are u32: 32 TiB of pages), else the capacity is refused rather than silently capped.
fn slots_for(capacity_bytes: u64) -> Result<u32> {
    match u32::try_from(capacity_bytes / usize_to_u64(PAGE_SIZE)) {
        Ok(0) => Err(StorageError::InvalidConfig {
            detail: format!("tier capacity below one page capacity_bytes={capacity_bytes}"),
        }),
        Ok(slots) => Ok(slots),
        Err(_) => Err(StorageError::InvalidConfig {
            detail: format!(
                "tier capacity above {} pages capacity_bytes={capacity_bytes}",
                u32::MAX
            ),
        }),
    }
}

impl TierCache {
    /// Opens the tier on `device` with room for `capacity_bytes`, reusing the persisted index
    /// at `index_path` if it is valid.
    pub fn open(
        device: Box<dyn Device>,
        index_path: &Path,
        capacity_bytes: u64,
    ) -> Result<TierCache> {
        let slot_count = slots_for(capacity_bytes)?;
        device.set_len(slot_offset(slot_count))?;
        let stats = TierStats::default();
        let mut state = TierState {
            index: HashMap::new(),
            slots: vec![FREE_SLOT; slot_count as usize],
            free: Vec::new(),
            hand: 0,
            writing: None,
            writing_cancelled: false,
            changed_since_persist: false,
        };
        load_index(index_path, &mut state, &stats);
        state.free = (0..slot_count)
            .rev()
            .filter(|&slot| state.slots[slot as usize].state == SlotState::Free)
            .collect();
        let shared = Arc::new(TierShared {
            device,
            index_path: index_path.to_path_buf(),
            state: Mutex::new(state),
            resize_gate: RwLock::new(()),
            persist_lock: Mutex::new(()),
            stats,
        });
        let (sender, receiver) = sync_channel(ADMISSION_QUEUE_MAX);
        let worker_shared = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("tier-writer".to_string())
            .spawn(move || admission_worker(&worker_shared, &receiver))
            .map_err(|error| StorageError::local_io("spawn", index_path, error))?;
        Ok(TierCache { shared, queue: Mutex::new(Some(sender)), worker: Mutex::new(Some(worker)) })
    }

    pub fn stats(&self) -> &TierStats {
        &self.shared.stats
    }

    /// Queues a clean page image for admission; never blocks. `image` must be sealed with
    /// `image_version == version`.
    pub fn admit(&self, page_id: PageId, version: SegmentId, image: Box<Page>) {
        debug_assert!(image.verify_version(page_id, version).is_ok(), "admitted image is sealed");
        let queue = self.queue.lock();
        let Some(sender) = queue.as_ref() else { return };
        match sender.try_send(Admission { page_id, version, image }) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.stats.dropped_admissions.increment();
            }
        }
    }

    /// `admit`, but waits for room in the queue (the tier's writer drains it) instead of
    /// dropping the page: a shrink of the buffer pool demotes every page it evicts. The
    /// queue's lock is not held while waiting, so foreground admissions are not held up.
    pub fn admit_waiting(&self, page_id: PageId, version: SegmentId, image: Box<Page>) {
        debug_assert!(image.verify_version(page_id, version).is_ok(), "admitted image is sealed");
        let Some(sender) = self.queue.lock().clone() else { return };
        if sender.send(Admission { page_id, version, image }).is_err() {
            self.shared.stats.dropped_admissions.increment();
        }
    }

    /// Whether the tier holds (or is writing) image `version` of `page_id`. Eviction asks
    /// first so that a page read from the tier is not copied and written back again.
    pub fn contains(&self, page_id: PageId, version: SegmentId) -> bool {
        let state = self.shared.state.lock();
        let cached = state
            .index
            .get(&page_id)
            .is_some_and(|&slot| state.slots[slot as usize].version == version);
        cached
            || state.writing.is_some_and(|(writing, slot)| {
                writing == page_id && state.slots[slot as usize].version == version
            })
    }

    /// Reads image `version` of `page_id` into `page` if the tier holds exactly that image.
    pub fn lookup(&self, page_id: PageId, version: SegmentId, page: &mut Page) -> TierLookup {
        let shared = &*self.shared;
        let started = Instant::now();
        let _gate = shared.resize_gate.read();
        let slot = {
            let mut state = shared.state.lock();
            let Some(&slot) = state.index.get(&page_id) else {
                shared.stats.misses.increment();
                return TierLookup::Miss;
            };
            let meta = &mut state.slots[slot as usize];
            if meta.version != version {
                state.remove_entry(page_id);
                shared.stats.stale_discards.increment();
                shared.stats.misses.increment();
                return TierLookup::Miss;
            }
            meta.readers += 1;
            meta.referenced = true;
            slot
        };
        let read = shared.device.read_at(slot_offset(slot), page.as_bytes_mut());
        let verified = read.is_ok() && page.verify_version(page_id, version).is_ok();
        let mut state = shared.state.lock();
        let meta = &mut state.slots[slot as usize];
        meta.readers -= 1;
        if meta.state == SlotState::Orphaned && meta.readers == 0 {
            state.release_slot(slot);
        }
        if !verified {
            if read.is_err() {
                shared.stats.read_errors.increment();
            } else {
                shared.stats.corrupt_discards.increment();
            }
            if state.index.get(&page_id) == Some(&slot) {
                state.remove_entry(page_id);
            }
            shared.stats.misses.increment();
            return TierLookup::Miss;
        }
        drop(state);
        shared.stats.hits.increment();
        shared.stats.bytes_read.add(usize_to_u64(PAGE_SIZE));
        shared.stats.read_latency_ns.record_elapsed(started);
        TierLookup::Hit
    }

    /// Drops any tier copy of `page_id`: the page is being modified in DRAM.
    pub fn invalidate(&self, page_id: PageId) {
        let mut state = self.shared.state.lock();
        let mut dropped = state.remove_entry(page_id);
        if state.writing.is_some_and(|(writing, _)| writing == page_id) {
            state.writing_cancelled = true;
            dropped = true;
        }
        if dropped {
            self.shared.stats.invalidations.increment();
        }
    }

    /// Slots in the tier and slots holding a page.
    pub fn usage(&self) -> (u64, u64) {
        let state = self.shared.state.lock();
        (usize_to_u64(state.slots.len()), usize_to_u64(state.index.len()))
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.usage().0 * usize_to_u64(PAGE_SIZE)
    }

    pub fn is_direct_io(&self) -> bool {
        self.shared.device.is_direct()
    }

    /// Changes the tier's size online. Shrinking drops the entries beyond the new end.
    /// Lookups wait only for the duration of the truncate or extend.
    pub fn resize(&self, capacity_bytes: u64) -> Result<()> {
        let new_count = slots_for(capacity_bytes)?;
        let _gate = self.shared.resize_gate.write();
        let mut state = self.shared.state.lock();
        let old_count = usize_to_u32(state.slots.len());
        if new_count > old_count {
            self.shared.device.set_len(slot_offset(new_count))?;
            state.slots.resize(new_count as usize, FREE_SLOT);
            state.free.extend((old_count..new_count).rev());
        } else if new_count < old_count {
            for slot in new_count..old_count {
                let meta = state.slots[slot as usize];
                debug_assert_eq!(meta.readers, 0, "the gate excludes readers");
                if meta.state == SlotState::Cached {
                    state.index.remove(&meta.page_id);
                }
            }
            state.slots.truncate(new_count as usize);
            state.free.retain(|&slot| slot < new_count);
            state.hand = 0;
            state.changed_since_persist = true;
            self.shared.device.set_len(slot_offset(new_count))?;
        }
        Ok(())
    }

    /// The largest image version the persisted index or the cache names, so that a reopened
    /// store never reissues a version a tier slot might still hold.
    pub fn max_version(&self) -> SegmentId {
        let state = self.shared.state.lock();
        state.slots.iter().map(|meta| meta.version).max().unwrap_or(SegmentId::NONE)
    }

    /// Waits for queued admissions, syncs the device and persists the index.
    pub fn close(&self) -> Result<()> {
        drop(self.queue.lock().take());
        if let Some(worker) = self.worker.lock().take() {
            let _ = worker.join();
        }
        persist_index(&self.shared)
    }

    /// Persists the index now (after syncing the device).
    pub fn persist(&self) -> Result<()> {
        persist_index(&self.shared)
    }
}

impl Drop for TierCache {
    fn drop(&mut self) {
        drop(self.queue.lock().take());
        if let Some(worker) = self.worker.lock().take() {
            let _ = worker.join();
        }
    }
}

fn admission_worker(shared: &TierShared, receiver: &Receiver<Admission>) {
    let mut last_persist = Instant::now();
    loop {
        match receiver.recv_timeout(Duration::from_millis(200)) {
            Ok(admission) => write_admission(shared, admission),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        }
        if last_persist.elapsed() >= INDEX_PERSIST_INTERVAL {
            if let Err(error) = persist_index(shared) {
                tracing::warn!(%error, "tier index persist failed");
            }
            last_persist = Instant::now();
        }
    }
}

fn write_admission(shared: &TierShared, admission: Admission) {
    let Admission { page_id, version, image } = admission;
    let _gate = shared.resize_gate.read();
    let slot = {
        let mut state = shared.state.lock();
        if let Some(&existing) = state.index.get(&page_id) {
            if state.slots[existing as usize].version == version {
                return;
            }
            state.remove_entry(page_id);
        }
        let Some(slot) = state.claim_slot(&shared.stats) else {
            shared.stats.dropped_admissions.increment();
            return;
        };
        state.slots[slot as usize] =
            SlotMeta { state: SlotState::Writing, page_id, version, referenced: false, readers: 0 };
        state.writing = Some((page_id, slot));
        state.writing_cancelled = false;
        slot
    };
    let written = shared.device.write_at(slot_offset(slot), image.as_bytes());
    let mut state = shared.state.lock();
    state.writing = None;
    let cancelled = std::mem::take(&mut state.writing_cancelled);
    if written.is_err() || cancelled {
        if written.is_err() {
            shared.stats.write_errors.increment();
        }
        state.slots[slot as usize] = FREE_SLOT;
        state.free.push(slot);
        return;
    }
    state.slots[slot as usize].state = SlotState::Cached;
    state.index.insert(page_id, slot);
    state.changed_since_persist = true;
    shared.stats.writes.increment();
    shared.stats.bytes_written.add(usize_to_u64(PAGE_SIZE));
}

/// Persists the index; after a failure the index counts as changed, so that the next
/// attempt retries. One persist at a time (they share the temporary file).
fn persist_index(shared: &TierShared) -> Result<()> {
    let _one_at_a_time = shared.persist_lock.lock();
    let outcome = persist_index_once(shared);
    if outcome.is_err() {
        shared.state.lock().changed_since_persist = true;
    }
    outcome
}

fn persist_index_once(shared: &TierShared) -> Result<()> {
    let entries: Vec<(PageId, SegmentId, u32)> = {
        let mut state = shared.state.lock();
        if !state.changed_since_persist {
            return Ok(());
        }
        state.changed_since_persist = false;
        state
            .index
            .iter()
            .map(|(&page_id, &slot)| (page_id, state.slots[slot as usize].version, slot))
            .collect()
    };
    // Every entry listed was written before this sync, so after it the index only names
    // durable slots (later rewrites of a slot are caught by verification on lookup).
    shared.device.sync()?;
    let slot_count = usize_to_u32(shared.state.lock().slots.len());
    let mut writer = Writer::with_capacity(16 + entries.len() * 20 + 4);
    writer.raw(INDEX_MAGIC);
    writer.u32(slot_count);
    writer.u32(usize_to_u32(entries.len()));
    for (page_id, version, slot) in entries {
        writer.u64(page_id.0);
        writer.u64(version.0);
        writer.u32(slot);
    }
    writer.seal();
    let temporary = shared.index_path.with_extension("idx.tmp");
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(&writer.bytes)?;
        file.sync_data()?;
        std::fs::rename(&temporary, &shared.index_path)?;
        if let Some(parent) = shared.index_path.parent() {
            std::fs::File::open(parent)?.sync_all()?;
        }
        Ok(())
    };
    write().map_err(|error| StorageError::local_io("persist-tier-index", &shared.index_path, error))
}

/// Loads a persisted index; an invalid one is discarded (the tier starts cold) and counted.
fn load_index(path: &Path, state: &mut TierState, stats: &TierStats) {
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    let decoded = (|| -> std::result::Result<Vec<(PageId, SegmentId, u32)>, String> {
        let body = verify_sealed(&bytes)?;
        let mut reader = Reader::new(body);
        reader.expect_magic(INDEX_MAGIC)?;
        let _slot_count = reader.u32()?;
        let count = reader.u32()?;
        let mut entries = Vec::with_capacity(u64_to_usize(u64::from(count)));
        for _ in 0..count {
            entries.push((PageId(reader.u64()?), SegmentId(reader.u64()?), reader.u32()?));
        }
        Ok(entries)
    })();
    match decoded {
        Ok(entries) => {
            for (page_id, version, slot) in entries {
                let index = slot as usize;
                if index >= state.slots.len()
                    || state.slots[index].state != SlotState::Free
                    || state.index.contains_key(&page_id)
                {
                    stats.corrupt_discards.increment();
                    continue;
                }
                state.slots[index] = SlotMeta {
                    state: SlotState::Cached,
                    page_id,
                    version,
                    referenced: false,
                    readers: 0,
                };
                state.index.insert(page_id, slot);
            }
        }
        Err(reason) => {
            stats.corrupt_discards.increment();
            tracing::warn!(file = %path.display(), %reason, "discarded invalid tier index");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capacity is whole pages, refused below one page and above `u32::MAX` pages instead
    /// of being capped.
    #[test]
    fn tier_capacity_is_refused_outside_the_slot_range() {
        let page = usize_to_u64(PAGE_SIZE);
        assert!(matches!(slots_for(page - 1), Err(StorageError::InvalidConfig { .. })));
        assert_eq!(slots_for(page).unwrap(), 1);
        assert_eq!(slots_for(3 * page + 1).unwrap(), 3);
        assert_eq!(slots_for(u64::from(u32::MAX) * page).unwrap(), u32::MAX);
        let too_large = (u64::from(u32::MAX) + 1) * page;
        assert!(matches!(slots_for(too_large), Err(StorageError::InvalidConfig { .. })));
    }
}
