//! Transaction ids, snapshots, the commit log and waits between transactions.
//!
//! - Ids come from a counter whose high-water mark is reserved durably in batches on the
//!   engine root page, so an id is never reused after a crash.
//! - The commit log (CLOG) holds 2 bits per transaction in pages of the page store: in
//!   progress, committed, aborted. Committing writes its bits in a mini-transaction and waits
//!   for that WAL record to be durable before anyone can see the transaction as committed.
//!   After a crash, an id below the recovered counter still "in progress" in the CLOG belongs
//!   to a transaction that died: it counts as aborted, so its versions are invisible at once
//!   (recovery's undo) and removed by pruning later.
//! - A snapshot is PostgreSQL's: the next id at snapshot time and the ids then in progress.
//!   A version made by `t` is visible iff `t` is the reader itself, or `t` committed and was
//!   neither in progress nor in the future at snapshot time.
//! - A writer that meets a row changed by a transaction still in progress waits for it; the
//!   wait-for graph is checked on every wait, so a deadlock is reported at once (40P01).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tierdb_common::{PageId, PageType, PAGE_PAYLOAD_SIZE};
use tierdb_storage::PageStore;

use crate::error::{EngineError, Result};
use crate::root::{RootFields, ROOT_PAGE, ROOT_RESERVED_TXN_OFFSET};
use crate::wait::WaitLimits;

pub type TxnId = u64;
/// Versions with this creator are visible to every snapshot (frozen by pruning).
pub const FROZEN_TXN: TxnId = 1;
/// The first id handed to a transaction.
const FIRST_TXN: TxnId = 2;
/// Ids reserved durably at a time.
const TXN_RESERVE: u64 = 4096;
const TXNS_PER_CLOG_PAGE: u64 = (PAGE_PAYLOAD_SIZE as u64) * 4;
/// Slots of the finished-transaction outcome cache (direct-mapped by id).
const OUTCOME_CACHE_SLOTS: usize = 1 << 14;
/// How often a waiting writer re-checks its holder (besides being woken).
const WAIT_RECHECK: Duration = Duration::from_millis(50);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TxnStatus {
    InProgress,
    Committed,
    Aborted,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum IsolationLevel {
    #[default]
    ReadCommitted,
    RepeatableRead,
}

/// What one transaction (or statement) may see.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub me: TxnId,
    /// Every id at or above this started after the snapshot.
    pub xmax: TxnId,
    /// Ids in progress when the snapshot was taken (sorted).
    active: Arc<Vec<TxnId>>,
}

impl Snapshot {
    /// Whether `txn` had not finished when the snapshot was taken.
    pub fn saw_in_progress(&self, txn: TxnId) -> bool {
        txn >= self.xmax || self.active.binary_search(&txn).is_ok()
    }
}

struct TxnTable {
    next: TxnId,
    reserved_until: TxnId,
    active: BTreeSet<TxnId>,
    waits_for: HashMap<TxnId, TxnId>,
    /// Snapshot floor per transaction (by virtual id) holding a snapshot, for the horizon.
    snapshot_floors: BTreeMap<VirtualId, TxnId>,
    next_virtual: VirtualId,
}

/// Every transaction has a virtual id from the start; it gets a real `TxnId` (durably
/// reserved, recorded in the commit log) only when it first writes, as in PostgreSQL, so
/// read-only transactions cost no id and no commit-log write.
pub type VirtualId = u64;

/// Where the commit-log pages are: the chain of directory pages and, in order, every CLOG page
/// (kept in memory, so a status lookup reads one page).
struct ClogPages {
    directories: Vec<PageId>,
    pages: Vec<PageId>,
}

/// Outcomes of finished transactions, so that a visibility check (one per row version read)
/// usually needs neither the transaction table's lock nor a commit-log page. Direct-mapped:
/// a slot holds `id << 2 | outcome` (1 committed, 2 aborted; 0 empty) and a newer id simply
/// replaces an older one. Only final outcomes enter it (a transaction out of the active set
/// never changes its commit-log bits again), so a hit is always right; a miss reads the page.
struct OutcomeCache {
    slots: Box<[AtomicU64]>,
}

impl OutcomeCache {
    fn new() -> OutcomeCache {
        OutcomeCache { slots: (0..OUTCOME_CACHE_SLOTS).map(|_| AtomicU64::new(0)).collect() }
    }

    fn slot(&self, txn: TxnId) -> &AtomicU64 {
        let index =
            usize::try_from(txn % OUTCOME_CACHE_SLOTS as u64).expect("below the slot count");
        &self.slots[index]
    }

    fn get(&self, txn: TxnId) -> Option<TxnStatus> {
        let entry = self.slot(txn).load(Ordering::Relaxed);
        if entry >> 2 != txn {
            return None;
        }
        match entry & 0b11 {
            1 => Some(TxnStatus::Committed),
            2 => Some(TxnStatus::Aborted),
            _ => None,
        }
    }

    fn remember(&self, txn: TxnId, status: TxnStatus) {
        let outcome = match status {
            TxnStatus::Committed => 1,
            TxnStatus::Aborted => 2,
            TxnStatus::InProgress => unreachable!("only final outcomes are cached"),
        };
        assert!(txn < 1 << 62, "transaction ids fit the cache entry");
        self.slot(txn).store(txn << 2 | outcome, Ordering::Relaxed);
    }
}

pub(crate) struct TxnManager {
    store: Arc<PageStore>,
    clog: parking_lot::RwLock<ClogPages>,
    outcomes: OutcomeCache,
    table: Mutex<TxnTable>,
    finished: Condvar,
}

/// A CLOG directory page: ids in this page u32 @0, next directory page u64 @8 (0: last),
/// CLOG page ids from @16.
const DIRECTORY_HEADER_BYTES: usize = 16;
const DIRECTORY_ENTRIES_PER_PAGE: usize = (PAGE_PAYLOAD_SIZE - DIRECTORY_HEADER_BYTES) / 8;

fn get_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

impl TxnManager {
    /// Opens the manager over the engine root page (`root`, as read); ids continue above the
    /// durable high-water mark, so ids used before a crash are never reused.
    pub fn open(store: Arc<PageStore>, root: &RootFields) -> Result<TxnManager> {
        let reserved = root.reserved_txn.max(FIRST_TXN);
        let clog_directory = root.clog_directory;
        let clog = load_clog_pages(&store, clog_directory)?;
        Ok(TxnManager {
            store,
            clog: parking_lot::RwLock::new(clog),
            outcomes: OutcomeCache::new(),
            table: Mutex::new(TxnTable {
                next: reserved,
                reserved_until: reserved,
                active: BTreeSet::new(),
                waits_for: HashMap::new(),
                snapshot_floors: BTreeMap::new(),
                next_virtual: 1,
            }),
            finished: Condvar::new(),
        })
    }

    /// Starts a transaction: a virtual id only (see `VirtualId`).
    pub fn begin(&self) -> VirtualId {
        let mut table = self.table.lock();
        let virtual_id = table.next_virtual;
        table.next_virtual += 1;
        virtual_id
    }

    /// Gives a transaction its real id, at its first write.
    pub fn assign(&self) -> Result<TxnId> {
        let mut table = self.table.lock();
        if table.next >= table.reserved_until {
            let until = table.next + TXN_RESERVE;
            self.reserve(until)?;
            table.reserved_until = until;
        }
        let txn = table.next;
        table.next += 1;
        table.active.insert(txn);
        Ok(txn)
    }

    /// Durably raises the id high-water mark to `until`, adding CLOG pages (and directory
    /// pages, chained) to cover it. The in-memory page list changes only once it is durable.
    fn reserve(&self, until: TxnId) -> Result<()> {
        let needed = usize::try_from(until.div_ceil(TXNS_PER_CLOG_PAGE)).expect("fits");
        let mut clog = self.clog.write();
        let mut mtr = self.store.mtr();
        let mut directories = clog.directories.clone();
        let mut pages = clog.pages.clone();
        while pages.len() < needed {
            let within = pages.len() % DIRECTORY_ENTRIES_PER_PAGE;
            if !pages.is_empty() && within == 0 {
                // The last directory page is full: chain a new one.
                let (_, directory) = mtr.allocate(PageType::Other(21))?;
                let last = mtr.latch(*directories.last().expect("the first directory exists"))?;
                mtr.write(last, 8, &directory.0.to_le_bytes());
                directories.push(directory);
            }
            let (_, page_id) = mtr.allocate(PageType::Other(20))?;
            let directory = mtr.latch(*directories.last().expect("a directory"))?;
            mtr.write(directory, DIRECTORY_HEADER_BYTES + within * 8, &page_id.0.to_le_bytes());
            mtr.write(directory, 0, &u32::try_from(within + 1).expect("fits").to_le_bytes());
            pages.push(page_id);
        }
        let root = mtr.latch(ROOT_PAGE)?;
        mtr.write(root, ROOT_RESERVED_TXN_OFFSET, &until.to_le_bytes());
        let lsn = mtr.commit()?;
        self.store.wait_durable(lsn)?;
        *clog = ClogPages { directories, pages };
        Ok(())
    }

    fn clog_location(&self, txn: TxnId) -> Result<(PageId, usize, u8)> {
        let index = usize::try_from(txn / TXNS_PER_CLOG_PAGE).expect("fits");
        let Some(&page) = self.clog.read().pages.get(index) else {
            return Err(EngineError::Corrupt {
                what: "commit log",
                detail: format!("no page for txn={txn}"),
            });
        };
        let within = txn % TXNS_PER_CLOG_PAGE;
        let byte = usize::try_from(within / 4).expect("fits");
        let shift = u8::try_from((within % 4) * 2).expect("small");
        Ok((page, byte, shift))
    }

    /// The status of `txn`.
    pub fn status(&self, txn: TxnId) -> Result<TxnStatus> {
        if txn == FROZEN_TXN {
            return Ok(TxnStatus::Committed);
        }
        if let Some(status) = self.outcomes.get(txn) {
            return Ok(status);
        }
        if self.table.lock().active.contains(&txn) {
            return Ok(TxnStatus::InProgress);
        }
        self.read_outcome(txn)
    }

    /// The outcome of `txn`, known to have finished (it is not in the active set, or a
    /// snapshot taken after it finished says so): the cache, else its commit-log bits.
    fn finished_status(&self, txn: TxnId) -> Result<TxnStatus> {
        match self.outcomes.get(txn) {
            Some(status) => Ok(status),
            None => self.read_outcome(txn),
        }
    }

    /// The commit-log bits of finished `txn`, remembered in the outcome cache.
    fn read_outcome(&self, txn: TxnId) -> Result<TxnStatus> {
        let (page_id, byte, shift) = self.clog_location(txn)?;
        let page = self.store.read(page_id)?;
        let status = match (page.payload()[byte] >> shift) & 0b11 {
            1 => TxnStatus::Committed,
            // In progress in the log but not running: it died in a crash.
            _ => TxnStatus::Aborted,
        };
        self.outcomes.remember(txn, status);
        Ok(status)
    }

    /// Whether a version made by `creator` is visible to `snapshot`.
    pub fn visible(&self, snapshot: &Snapshot, creator: TxnId) -> Result<bool> {
        if creator == snapshot.me || creator == FROZEN_TXN {
            return Ok(true);
        }
        if snapshot.saw_in_progress(creator) {
            return Ok(false);
        }
        // Finished before the snapshot was taken, so its commit-log bits are final.
        Ok(self.finished_status(creator)? == TxnStatus::Committed)
    }

    /// A snapshot for the transaction with virtual id `virtual_id` (and real id `me`, 0 if it
    /// has none yet); registers its floor for the pruning horizon.
    pub fn snapshot(&self, virtual_id: VirtualId, me: TxnId) -> Snapshot {
        let mut table = self.table.lock();
        let active: Vec<TxnId> = table.active.iter().copied().filter(|&txn| txn != me).collect();
        let mut floor = active.first().copied().unwrap_or(table.next);
        if me != 0 {
            floor = floor.min(me);
        }
        table.snapshot_floors.insert(virtual_id, floor);
        Snapshot { me, xmax: table.next, active: Arc::new(active) }
    }

    /// Whether no transaction is running and no snapshot is held.
    pub fn idle(&self) -> bool {
        let table = self.table.lock();
        table.active.is_empty() && table.snapshot_floors.is_empty()
    }

    /// Every version deleted by a transaction that committed below this id is invisible to
    /// every snapshot now and later.
    pub fn horizon(&self) -> TxnId {
        let table = self.table.lock();
        let oldest_active = table.active.first().copied().unwrap_or(table.next);
        let oldest_snapshot = table.snapshot_floors.values().min().copied().unwrap_or(table.next);
        oldest_active.min(oldest_snapshot)
    }

    /// Records the outcome of a transaction that has a real id (`txn` != 0) and wrote in the
    /// commit log; a commit waits until it is durable. Only then does the transaction leave the
    /// active set (visible as committed) and are waiters woken. A transaction that never
    /// wrote appears in no version: it just leaves (no commit-log write, no fsync).
    pub fn finish(
        &self,
        virtual_id: VirtualId,
        txn: TxnId,
        commit: bool,
        wrote: bool,
    ) -> Result<()> {
        if txn != 0 && wrote {
            let lsn = match self.write_status(txn, if commit { 1 } else { 2 }) {
                Ok(lsn) => lsn,
                Err(error) => {
                    // Nothing says "committed": with no commit-log bits the transaction reads
                    // as aborted once it leaves the active set, which it must, or its rows
                    // would stay locked and the horizon held for the life of the process.
                    self.leave(virtual_id, txn);
                    return Err(error);
                }
            };
            if commit {
                // Until the commit record is durable nobody may see the transaction as
                // committed. If making it durable fails, the store is poisoned (sticky) and
                // the outcome is unknown: the transaction stays "in progress" for the rest of
                // this process, and recovery after the restart decides.
                self.store.wait_durable(lsn)?;
            }
        }
        self.leave(virtual_id, txn);
        Ok(())
    }

    fn leave(&self, virtual_id: VirtualId, txn: TxnId) {
        let mut table = self.table.lock();
        table.snapshot_floors.remove(&virtual_id);
        if txn != 0 {
            table.active.remove(&txn);
            table.waits_for.remove(&txn);
        }
        drop(table);
        self.finished.notify_all();
    }

    fn write_status(&self, txn: TxnId, bits: u8) -> Result<tierdb_common::Lsn> {
        let (page_id, byte, shift) = self.clog_location(txn)?;
        let mut mtr = self.store.mtr();
        let slot = mtr.latch(page_id)?;
        let old = mtr.page(slot).payload()[byte];
        let new = (old & !(0b11 << shift)) | (bits << shift);
        mtr.write(slot, byte, &[new]);
        Ok(mtr.commit()?)
    }

    /// Blocks `waiter` until `holder` finishes; fails at once with 40P01 if `holder` waits,
    /// directly or through others, for `waiter`.
    /// The wait ends early with an error when `limits` say so (cancel, statement timeout,
    /// lock timeout), checked at least every `WAIT_RECHECK`.
    pub fn wait_for(&self, waiter: TxnId, holder: TxnId, limits: &WaitLimits) -> Result<()> {
        let mut table = self.table.lock();
        let mut current = holder;
        let mut steps = 0usize;
        while let Some(&next) = table.waits_for.get(&current) {
            if next == waiter {
                return Err(EngineError::Deadlock { waiter, holder });
            }
            current = next;
            steps += 1;
            if steps > table.waits_for.len() {
                break;
            }
        }
        let lock_deadline = limits.lock_deadline();
        table.waits_for.insert(waiter, holder);
        let outcome = loop {
            if !table.active.contains(&holder) {
                break Ok(());
            }
            match limits.check_wait(lock_deadline, WAIT_RECHECK) {
                Ok(sleep) => {
                    self.finished.wait_for(&mut table, sleep);
                }
                Err(error) => break Err(error),
            }
        };
        table.waits_for.remove(&waiter);
        outcome
    }

    pub fn is_active(&self, txn: TxnId) -> bool {
        self.table.lock().active.contains(&txn)
    }

    /// Whether the transaction with virtual id `virtual_id` is running: it holds its snapshot
    /// floor from `begin` until `finish` (read-only transactions never get a `TxnId`).
    pub fn is_virtual_active(&self, virtual_id: VirtualId) -> bool {
        self.table.lock().snapshot_floors.contains_key(&virtual_id)
    }
}

/// Walks the chain of CLOG directory pages from `first`.
fn load_clog_pages(store: &PageStore, first: PageId) -> Result<ClogPages> {
    let mut directories = vec![first];
    let mut pages = Vec::new();
    let mut current = first;
    loop {
        let page = store.read(current)?;
        let payload = page.payload();
        let count =
            usize::try_from(u32::from_le_bytes(payload[..4].try_into().expect("4"))).expect("fits");
        if count > DIRECTORY_ENTRIES_PER_PAGE {
            return Err(EngineError::Corrupt {
                what: "commit log directory",
                detail: format!("page={current} count={count}"),
            });
        }
        for index in 0..count {
            pages.push(PageId(get_u64(payload, DIRECTORY_HEADER_BYTES + index * 8)));
        }
        let next = PageId(get_u64(payload, 8));
        if next == PageId::INVALID {
            return Ok(ClogPages { directories, pages });
        }
        if count != DIRECTORY_ENTRIES_PER_PAGE || directories.contains(&next) {
            return Err(EngineError::Corrupt {
                what: "commit log directory",
                detail: format!("bad chain at page={current}"),
            });
        }
        directories.push(next);
        current = next;
    }
}

#[cfg(test)]
mod tests {
    use tierdb_storage::StoreConfig;

    use super::*;

    /// The commit log grows past one directory page (about 33 million ids) by chaining
    /// directory pages; statuses read back after a reopen.
    #[test]
    fn commit_log_grows_past_one_directory_page() {
        let directory = tempfile::tempdir().unwrap();
        let store =
            Arc::new(PageStore::open(StoreConfig::local(directory.path()).unwrap()).unwrap());
        drop(crate::Engine::open(Arc::clone(&store)).unwrap());
        let manager =
            TxnManager::open(Arc::clone(&store), &RootFields::read(&store).unwrap()).unwrap();
        let pages = DIRECTORY_ENTRIES_PER_PAGE + 3;
        let until = u64::try_from(pages).unwrap() * TXNS_PER_CLOG_PAGE;
        manager.reserve(until).unwrap();
        assert_eq!(manager.clog.read().pages.len(), pages);
        assert_eq!(manager.clog.read().directories.len(), 2);
        let (late, early) = (until - 7, TXNS_PER_CLOG_PAGE + 3);
        manager.write_status(late, 1).unwrap();
        manager.write_status(early, 2).unwrap();
        drop(manager);
        let reopened =
            TxnManager::open(Arc::clone(&store), &RootFields::read(&store).unwrap()).unwrap();
        assert_eq!(reopened.clog.read().pages.len(), pages);
        assert_eq!(reopened.status(late).unwrap(), TxnStatus::Committed);
        assert_eq!(reopened.status(early).unwrap(), TxnStatus::Aborted);
        // New ids continue above the reserved range.
        assert!(reopened.assign().unwrap() >= until);
    }
}
