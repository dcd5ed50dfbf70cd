//! Mini-transactions: the only way to change a page.
//!
//! An `Mtr` latches pages exclusively, applies changes to them in DRAM and records each change
//! as a `PageOp`. `commit` appends all of them as one WAL record (so redo applies all or
//! none), stamps the record's LSN on every page and marks them dirty, while the WAL is still
//! locked, so a concurrent checkpoint either sees the pages dirty or starts redo after them.
//! Dropping an uncommitted `Mtr` restores the pages' earlier contents (the bytes each write
//! replaced, or the whole image before a reinitialisation): nothing unlogged remains.
//!
//! Callers latch pages in a consistent order (the B+tree does, top-down, left to right);
//! the page store does not detect latch deadlocks.

use std::sync::atomic::Ordering;

use parking_lot::lock_api::ArcRwLockWriteGuard;
use parking_lot::RawRwLock;
use tierdb_common::{with_op_counters, Lsn, Page, PageId, PageType, SegmentId, PAGE_PAYLOAD_SIZE};

use super::StoreInner;
use crate::buffer_pool::Pinned;
use crate::error::Result;
use crate::wal::{PageOp, WalRecord};
use crate::wal_compact::RegionCompaction;

struct MtrPage {
    // Field order matters: the latch is released before the pin.
    guard: ArcRwLockWriteGuard<RawRwLock, Box<Page>>,
    pin: Pinned,
    page_id: PageId,
    /// Whether this mtr changed the page (it is then logged, stamped and marked dirty).
    changed: bool,
    /// The whole image before the first (re)initialisation by this mtr, restored if the mtr
    /// is dropped; later writes need no undo then.
    before: Option<Box<Page>>,
    /// Payload bytes overwritten by writes before any (re)initialisation, as (offset, old
    /// bytes), undone newest first if the mtr is dropped. A write keeps only the bytes it
    /// replaces: copying the whole 8 KiB image for a 1-byte commit-log change or a few
    /// hundred bytes of a B+tree leaf showed in profiles.
    undo: Vec<(usize, Vec<u8>)>,
}

/// A group of page changes that is logged and applied atomically.
pub struct Mtr<'store> {
    store: &'store StoreInner,
    /// Latched pages; `None` once released.
    pages: Vec<Option<MtrPage>>,
    ops: Vec<PageOp>,
    committed: bool,
}

/// Index of a page latched by an `Mtr`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MtrSlot(usize);

impl<'store> Mtr<'store> {
    pub(crate) fn new(store: &'store StoreInner) -> Mtr<'store> {
        Mtr { store, pages: Vec::new(), ops: Vec::new(), committed: false }
    }

    /// Latches `page_id` exclusively for this mtr (once; later calls return the same slot).
    pub fn latch(&mut self, page_id: PageId) -> Result<MtrSlot> {
        if let Some(index) = self
            .pages
            .iter()
            .position(|page| page.as_ref().is_some_and(|page| page.page_id == page_id))
        {
            return Ok(MtrSlot(index));
        }
        let pin = self.store.fetch(page_id)?;
        let guard = pin.write();
        self.pages.push(Some(MtrPage {
            guard,
            pin,
            page_id,
            changed: false,
            before: None,
            undo: Vec::new(),
        }));
        Ok(MtrSlot(self.pages.len() - 1))
    }

    /// Allocates a new page of `page_type`, latched by this mtr.
    pub fn allocate(&mut self, page_type: PageType) -> Result<(MtrSlot, PageId)> {
        self.store.check_poisoned()?;
        let page_id = PageId(self.store.next_page.fetch_add(1, Ordering::AcqRel));
        Ok((self.create(page_id, page_type)?, page_id))
    }

    /// Creates the page `page_id`, reserved by `PageStore::reserve_page_ids` and not created
    /// before, as a new page of `page_type` latched by this mtr.
    pub fn allocate_reserved(&mut self, page_id: PageId, page_type: PageType) -> Result<MtrSlot> {
        self.store.check_poisoned()?;
        assert!(
            page_id.0 < self.store.next_page.load(Ordering::Acquire),
            "page_id={page_id} was not reserved"
        );
        self.create(page_id, page_type)
    }

    fn create(&mut self, page_id: PageId, page_type: PageType) -> Result<MtrSlot> {
        let pin = self.store.install_empty(page_id)?;
        let mut guard = pin.write();
        guard.init(page_id, page_type);
        // A new page has no earlier image; "restoring" it leaves an empty, clean frame that
        // nothing references.
        let before = Some(Box::new((**guard).clone()));
        self.pages.push(Some(MtrPage {
            guard,
            pin,
            page_id,
            changed: true,
            before,
            undo: Vec::new(),
        }));
        self.ops.push(PageOp::Init { page_id, page_type });
        Ok(MtrSlot(self.pages.len() - 1))
    }

    pub fn page(&self, slot: MtrSlot) -> &Page {
        &self.entry(slot).guard
    }

    pub fn page_id(&self, slot: MtrSlot) -> PageId {
        self.entry(slot).page_id
    }

    fn entry(&self, slot: MtrSlot) -> &MtrPage {
        self.pages[slot.0].as_ref().expect("page was released from this mtr")
    }

    fn entry_mut(&mut self, slot: MtrSlot) -> &mut MtrPage {
        self.pages[slot.0].as_mut().expect("page was released from this mtr")
    }

    /// Releases the latch and pin of a page this mtr has not changed (latch coupling: an
    /// ancestor that a descent no longer needs). Releasing a changed page is a bug: its
    /// latch must be held until the change is logged.
    pub fn release(&mut self, slot: MtrSlot) {
        let page = self.pages[slot.0].take().expect("page released twice");
        assert!(!page.changed, "releasing a changed page page_id={}", page.page_id);
    }

    /// Whether the page in `slot` is still latched by this mtr.
    pub fn holds(&self, slot: MtrSlot) -> bool {
        self.pages[slot.0].is_some()
    }

    /// Writes `bytes` at `offset` of the page's payload and records the change.
    pub fn write(&mut self, slot: MtrSlot, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= PAGE_PAYLOAD_SIZE, "write beyond the payload");
        let page = self.entry_mut(slot);
        let target = offset..offset + bytes.len();
        if page.before.is_none() {
            page.undo.push((offset, page.guard.payload()[target.clone()].to_vec()));
        }
        page.changed = true;
        page.guard.payload_mut()[target].copy_from_slice(bytes);
        let page_id = page.page_id;
        self.ops.push(PageOp::Write {
            page_id,
            offset: u16::try_from(offset).expect("offset within a page"),
            bytes: bytes.to_vec(),
        });
    }

    /// Copies `length` payload bytes from `source` to `destination` of the same page
    /// (memmove: the ranges may overlap) and records the change: a shifted slot array or a
    /// cell that keeps its bytes is logged in 7 bytes instead of its contents.
    pub fn move_bytes(&mut self, slot: MtrSlot, source: usize, destination: usize, length: usize) {
        assert!(source.max(destination) + length <= PAGE_PAYLOAD_SIZE, "move beyond the payload");
        let page = self.entry_mut(slot);
        let target = destination..destination + length;
        if page.before.is_none() {
            page.undo.push((destination, page.guard.payload()[target].to_vec()));
        }
        page.changed = true;
        let op = PageOp::Move {
            page_id: page.page_id,
            source: u16::try_from(source).expect("offset within a page"),
            destination: u16::try_from(destination).expect("offset within a page"),
            length: u16::try_from(length).expect("length within a page"),
        };
        op.apply(&mut page.guard);
        self.ops.push(op);
    }

    /// Removes the gaps of a region of the page's payload and relocates the pointers into it
    /// (`RegionCompaction::apply`), and records the change: a B+tree node's compaction is
    /// logged in a few bytes per hole instead of a move per run of cells and its slots.
    pub fn compact_region(&mut self, slot: MtrSlot, compaction: RegionCompaction) {
        if let Err(reason) = compaction.validate() {
            panic!("invalid page compaction: {reason}");
        }
        let page = self.entry_mut(slot);
        if page.before.is_none() {
            let pointers = usize::from(compaction.pointers);
            let pointers_end = pointers + 2 * usize::from(compaction.pointer_count);
            let start = usize::from(compaction.start);
            page.undo.push((pointers, page.guard.payload()[pointers..pointers_end].to_vec()));
            page.undo.push((start, page.guard.payload()[start..].to_vec()));
        }
        page.changed = true;
        let op = PageOp::Compact { page_id: page.page_id, compaction };
        op.apply(&mut page.guard);
        self.ops.push(op);
    }

    /// Reformats a latched page as an empty page of `page_type`.
    pub fn reinit(&mut self, slot: MtrSlot, page_type: PageType) {
        let page = self.entry_mut(slot);
        if page.before.is_none() {
            // The image includes this mtr's earlier writes: their undo entries apply after it.
            page.before = Some(Box::new((**page.guard).clone()));
        }
        page.changed = true;
        let page_id = page.page_id;
        page.guard.init(page_id, page_type);
        self.ops.push(PageOp::Init { page_id, page_type });
    }

    /// Logs the changes as one WAL record and releases the pages. Returns the record's end
    /// LSN; pass it to `PageStore::wait_durable` to wait for durability.
    pub fn commit(mut self) -> Result<Lsn> {
        if self.ops.is_empty() {
            self.committed = true;
            return Ok(self.store.wal.appended_lsn());
        }
        self.store.check_poisoned()?;
        self.store.check_space()?;
        let logical: usize = self.ops.iter().map(PageOp::changed_bytes).sum();
        let store = self.store;
        let mut newly_dirty = Vec::new();
        let pages = &mut self.pages;
        let mut mark = |start: Lsn, end: Lsn| {
            for page in pages.iter_mut().flatten().filter(|page| page.changed) {
                page.guard.set_lsn(end);
                if store.mark_dirty(&page.pin, start) {
                    newly_dirty.push(page.page_id);
                }
            }
        };
        let end = if store.unlogged {
            // No record: an unlogged store is never recovered (its directory goes with the
            // process), so its pages need no redo and no ordering against a checkpoint.
            self.ops.clear();
            let end = store.wal.appended_lsn();
            mark(end, end);
            end
        } else {
            let record = WalRecord::PageOps(std::mem::take(&mut self.ops));
            store.wal.append_with(&record, mark)?
        };
        self.committed = true;
        if let Some(tier) = &store.tier {
            for page_id in &newly_dirty {
                tier.invalidate(*page_id);
            }
        }
        store.stats.mtr_commits.increment();
        store.stats.logical_bytes_changed.add(u64::try_from(logical).expect("fits"));
        with_op_counters(|counters| {
            counters.pages_dirtied += u64::try_from(newly_dirty.len()).expect("fits")
        });
        Ok(end)
    }
}

impl Drop for Mtr<'_> {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        for page in self.pages.iter_mut().flatten() {
            if let Some(before) = page.before.take() {
                **page.guard = *before;
            }
            for (offset, old) in page.undo.drain(..).rev() {
                page.guard.payload_mut()[offset..offset + old.len()].copy_from_slice(&old);
            }
        }
    }
}

impl StoreInner {
    /// Marks a latched page dirty after a logged change starting at `start`. Returns whether
    /// the page was clean before (so its tier copy must go). Called with the WAL locked.
    pub(crate) fn mark_dirty(&self, pin: &Pinned, start: Lsn) -> bool {
        if !pin.frame().mark_dirty(start) {
            return false;
        }
        self.dirty_frames.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// A frame for a page that has no durable image yet (a new page, or one created by redo).
    pub(crate) fn install_empty(&self, page_id: PageId) -> Result<Pinned> {
        loop {
            let frame = self.acquire_frame()?;
            match self.pool.install(frame, page_id, &mut |page| {
                page.init(page_id, PageType::Free);
                Ok(SegmentId::NONE)
            })? {
                Some((pinned, _)) => return Ok(pinned),
                None => continue,
            }
        }
    }
}

impl From<MtrSlot> for usize {
    fn from(slot: MtrSlot) -> usize {
        slot.0
    }
}
