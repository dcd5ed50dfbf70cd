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
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tierdb_common::{PageId, PageType, PAGE_PAYLOAD_SIZE};
use tierdb_storage::PageStore;

use crate::error::{EngineError, Result};

pub type TxnId = u64;
/// Versions with this creator are visible to every snapshot (frozen by pruning).
pub const FROZEN_TXN: TxnId = 1;
/// The first id handed to a transaction.
const FIRST_TXN: TxnId = 2;
/// Ids reserved durably at a time.
const TXN_RESERVE: u64 = 4096;
const TXNS_PER_CLOG_PAGE: u64 = (PAGE_PAYLOAD_SIZE as u64) * 4;
const CLOG_DIRECTORY_ENTRIES_MAX: usize = (PAGE_PAYLOAD_SIZE - 8) / 8;
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
    /// Snapshot xmin per transaction holding a snapshot, for the pruning horizon.
    snapshot_floors: BTreeMap<TxnId, TxnId>,
}

/// The engine root page: magic, reserved txn high-water mark, catalog meta page, CLOG
/// directory page.
pub(crate) const ROOT_MAGIC: &[u8; 4] = b"TDE1";

pub(crate) struct TxnManager {
    store: Arc<PageStore>,
    root: PageId,
    clog_directory: PageId,
    table: Mutex<TxnTable>,
    finished: Condvar,
}

fn get_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

impl TxnManager {
    /// Opens the manager over the engine root page; ids continue above the durable high-water
    /// mark, so ids used before a crash are never reused.
    pub fn open(store: Arc<PageStore>, root: PageId) -> Result<TxnManager> {
        let (reserved, clog_directory) = {
            let page = store.read(root)?;
            let payload = page.payload();
            if &payload[..4] != ROOT_MAGIC {
                return Err(EngineError::Corrupt {
                    what: "engine root page",
                    detail: "bad magic".into(),
                });
            }
            (get_u64(payload, 8).max(FIRST_TXN), PageId(get_u64(payload, 24)))
        };
        Ok(TxnManager {
            store,
            root,
            clog_directory,
            table: Mutex::new(TxnTable {
                next: reserved,
                reserved_until: reserved,
                active: BTreeSet::new(),
                waits_for: HashMap::new(),
                snapshot_floors: BTreeMap::new(),
            }),
            finished: Condvar::new(),
        })
    }

    /// Starts a transaction.
    pub fn begin(&self) -> Result<TxnId> {
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

    /// Durably raises the id high-water mark to `until`, adding CLOG pages to cover it.
    fn reserve(&self, until: TxnId) -> Result<()> {
        let mut mtr = self.store.mtr();
        let directory = mtr.latch(self.clog_directory)?;
        let count = usize::try_from(u32::from_le_bytes(
            mtr.page(directory).payload()[..4].try_into().expect("4"),
        ))
        .expect("fits");
        let needed = usize::try_from(until.div_ceil(TXNS_PER_CLOG_PAGE)).expect("fits");
        if needed > CLOG_DIRECTORY_ENTRIES_MAX {
            return Err(EngineError::LimitExceeded {
                detail: format!(
                    "transaction ids of this commit-log format exhausted until={until}"
                ),
            });
        }
        for index in count..needed {
            let (_, page_id) = mtr.allocate(PageType::Other(20))?;
            mtr.write(directory, 8 + index * 8, &page_id.0.to_le_bytes());
        }
        if needed > count {
            mtr.write(directory, 0, &u32::try_from(needed).expect("fits").to_le_bytes());
        }
        let root = mtr.latch(self.root)?;
        mtr.write(root, 8, &until.to_le_bytes());
        let lsn = mtr.commit()?;
        self.store.wait_durable(lsn)?;
        Ok(())
    }

    fn clog_location(&self, txn: TxnId) -> Result<(PageId, usize, u8)> {
        let page = self.store.read(self.clog_directory)?;
        let index = usize::try_from(txn / TXNS_PER_CLOG_PAGE).expect("fits");
        let count = usize::try_from(u32::from_le_bytes(page.payload()[..4].try_into().expect("4")))
            .expect("fits");
        if index >= count {
            return Err(EngineError::Corrupt {
                what: "commit log",
                detail: format!("no page for txn={txn}"),
            });
        }
        let within = txn % TXNS_PER_CLOG_PAGE;
        let byte = usize::try_from(within / 4).expect("fits");
        let shift = u8::try_from((within % 4) * 2).expect("small");
        Ok((PageId(get_u64(page.payload(), 8 + index * 8)), byte, shift))
    }

    /// The status of `txn`.
    pub fn status(&self, txn: TxnId) -> Result<TxnStatus> {
        if txn == FROZEN_TXN {
            return Ok(TxnStatus::Committed);
        }
        if self.table.lock().active.contains(&txn) {
            return Ok(TxnStatus::InProgress);
        }
        let (page_id, byte, shift) = self.clog_location(txn)?;
        let page = self.store.read(page_id)?;
        Ok(match (page.payload()[byte] >> shift) & 0b11 {
            1 => TxnStatus::Committed,
            // In progress in the log but not running: it died in a crash.
            _ => TxnStatus::Aborted,
        })
    }

    /// Whether a version made by `creator` is visible to `snapshot`.
    pub fn visible(&self, snapshot: &Snapshot, creator: TxnId) -> Result<bool> {
        if creator == snapshot.me || creator == FROZEN_TXN {
            return Ok(true);
        }
        if snapshot.saw_in_progress(creator) {
            return Ok(false);
        }
        Ok(self.status(creator)? == TxnStatus::Committed)
    }

    /// A snapshot for `me`; registers its floor for the pruning horizon.
    pub fn snapshot(&self, me: TxnId) -> Snapshot {
        let mut table = self.table.lock();
        let active: Vec<TxnId> = table.active.iter().copied().filter(|&txn| txn != me).collect();
        let floor = active.first().copied().unwrap_or(table.next).min(me);
        table.snapshot_floors.insert(me, floor);
        Snapshot { me, xmax: table.next, active: Arc::new(active) }
    }

    /// Every version deleted by a transaction that committed below this id is invisible to
    /// every snapshot now and later.
    pub fn horizon(&self) -> TxnId {
        let table = self.table.lock();
        let oldest_active = table.active.first().copied().unwrap_or(table.next);
        let oldest_snapshot = table.snapshot_floors.values().min().copied().unwrap_or(table.next);
        oldest_active.min(oldest_snapshot)
    }

    /// Records the outcome in the commit log; a commit waits until it is durable. Only then is
    /// the transaction removed from the active set (visible as committed) and waiters woken.
    /// A transaction that wrote nothing (`wrote == false`) appears in no version,
    /// so its outcome need not be logged: it just leaves the active set (no fsync).
    pub fn finish(&self, txn: TxnId, commit: bool, wrote: bool) -> Result<()> {
        if !wrote {
            self.leave(txn);
            return Ok(());
        }
        let lsn = self.write_status(txn, if commit { 1 } else { 2 })?;
        if commit {
            // Until the commit record is durable nobody may see the transaction as committed.
            // If making it durable fails, the store is poisoned (sticky) and the outcome is
            // unknown: the transaction stays "in progress" for the rest of this process, and
            // recovery after the restart decides.
            self.store.wait_durable(lsn)?;
        }
        self.leave(txn);
        Ok(())
    }

    fn leave(&self, txn: TxnId) {
        let mut table = self.table.lock();
        table.active.remove(&txn);
        table.snapshot_floors.remove(&txn);
        table.waits_for.remove(&txn);
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
    pub fn wait_for(&self, waiter: TxnId, holder: TxnId) -> Result<()> {
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
        table.waits_for.insert(waiter, holder);
        while table.active.contains(&holder) {
            self.finished.wait_for(&mut table, WAIT_RECHECK);
        }
        table.waits_for.remove(&waiter);
        Ok(())
    }

    pub fn is_active(&self, txn: TxnId) -> bool {
        self.table.lock().active.contains(&txn)
    }
}
