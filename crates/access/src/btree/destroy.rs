//! Destroying a tree: every page it holds goes back to the page store
//! (`PageStore::free_pages`), so that a dropped table's or index's space is reclaimed.
//!
//! The order makes a destroy interrupted by a crash resumable by running it again from the
//! meta page: a page is freed only after every page it names (post-order over the nodes, each
//! leaf after its values' overflow chains, chains from their tail, the free list from its
//! tail, the anchor after the free list, the meta page last). So a page the walk finds freed
//! (`UnknownPage`) has nothing left below it, and the walk skips it. Frees are logged in
//! order and batches are appended in order, so a crash that loses the log's tail loses a
//! suffix of the frees: still a post-order prefix.
//!
//! Cost: every page of the tree is read once (leaves too, for their overflow references), and
//! one `PagesFreed` record of 8 bytes per page is logged, in records of up to
//! `FREED_PAGES_PER_RECORD_MAX` pages.

use std::ops::ControlFlow;

use tierdb_common::{Lsn, PageId, PageType};
use tierdb_storage::{StorageError, FREED_PAGES_PER_RECORD_MAX};

use super::{
    child_at, corrupt, get_u64, open_node, overflow_of, read_meta, BTree, Result, ANCHOR_MAGIC,
};

/// Pages waiting to be freed, appended in the order they may go, and how many this call
/// may free.
struct FreeBatch<'a> {
    tree: &'a BTree,
    pending: Vec<PageId>,
    freed: u64,
    pages_max: u64,
    /// End LSN of the last record this call appended.
    last_lsn: Option<Lsn>,
}

/// Whether the walk goes on (`Continue`) or stops because the call freed its share (`Break`).
type Flow = ControlFlow<()>;

impl FreeBatch<'_> {
    fn push(&mut self, page_id: PageId) -> Result<Flow> {
        self.pending.push(page_id);
        let taken = self.freed + u64::try_from(self.pending.len()).expect("bounded");
        if self.pending.len() == FREED_PAGES_PER_RECORD_MAX || taken >= self.pages_max {
            self.flush()?;
        }
        Ok(if self.freed >= self.pages_max {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    }

    /// Frees the pending pages in one record. The record wants ascending ids; the order that
    /// matters is between records, which are appended in order.
    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.pending.sort_unstable();
        // Only a damaged tree names a page twice; it is freed once.
        self.pending.dedup();
        self.last_lsn = Some(self.tree.store.free_pages(&self.pending)?);
        self.freed += u64::try_from(self.pending.len()).expect("bounded");
        self.pending.clear();
        Ok(())
    }
}

/// What `BTree::destroy_some` did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DestroyProgress {
    /// Pages freed by this call.
    pub pages_freed: u64,
    /// Every page of the tree is freed (this call or an earlier one freed the meta page).
    pub done: bool,
    /// End LSN of the last free this call logged: its frees are durable once the WAL is
    /// (`PageStore::wait_durable`). None if it freed nothing.
    pub last_lsn: Option<Lsn>,
}

impl BTree {
    /// Frees every page of the tree: nodes, overflow pages, the free list, the anchor and the
    /// meta page. The caller guarantees that nobody uses the tree any more (and never opens
    /// it again). Durable once the WAL is past `last_lsn` (`PageStore::wait_durable`).
    pub fn destroy(&self) -> Result<DestroyProgress> {
        let progress = self.destroy_some(u64::MAX)?;
        assert!(progress.done, "an unbounded destroy finishes");
        Ok(progress)
    }

    /// `destroy` in steps: frees about `pages_max` pages (at least that many unless the
    /// tree runs out, at most `FREED_PAGES_PER_RECORD_MAX` more) and stops. Each call walks
    /// again from the meta page, skipping what earlier calls freed, so steps can be spread
    /// out, and a crash between (or inside) them loses nothing but the work.
    pub fn destroy_some(&self, pages_max: u64) -> Result<DestroyProgress> {
        assert!(pages_max > 0, "a destroy step frees at least one page");
        let mut batch =
            FreeBatch { tree: self, pending: Vec::new(), freed: 0, pages_max, last_lsn: None };
        let meta = match self.store.read(self.meta) {
            Ok(page) => read_meta(self.meta, &page)?,
            Err(StorageError::UnknownPage { .. }) => {
                return Ok(DestroyProgress { pages_freed: 0, done: true, last_lsn: None })
            }
            Err(error) => return Err(error.into()),
        };
        let flow = self.destroy_all(&meta, &mut batch)?;
        batch.flush()?;
        Ok(DestroyProgress {
            pages_freed: batch.freed,
            done: flow.is_continue(),
            last_lsn: batch.last_lsn,
        })
    }

    fn destroy_all(&self, meta: &super::Meta, batch: &mut FreeBatch<'_>) -> Result<Flow> {
        if self.destroy_node(meta.root, meta.height - 1, batch)?.is_break()
            || self.destroy_free_list(meta.anchor, batch)?.is_break()
            || batch.push(meta.anchor)?.is_break()
        {
            return Ok(ControlFlow::Break(()));
        }
        // The meta page goes last: once it is freed the tree is gone, whatever the limit.
        let _limit_reached = batch.push(self.meta)?;
        Ok(ControlFlow::Continue(()))
    }

    /// Frees the subtree under `page_id` (at `level`), children first.
    fn destroy_node(&self, page_id: PageId, level: u8, batch: &mut FreeBatch<'_>) -> Result<Flow> {
        let page = match self.store.read(page_id) {
            Ok(page) => page,
            // Freed by an interrupted destroy, with everything below it.
            Err(StorageError::UnknownPage { .. }) => return Ok(ControlFlow::Continue(())),
            Err(error) => return Err(error.into()),
        };
        let node = open_node(page_id, &page)?;
        if node.level() != level {
            return Err(corrupt(page_id, format!("level={} expected={level}", node.level())));
        }
        if node.is_leaf() {
            let chains: Vec<PageId> =
                (0..node.count()).filter_map(|index| overflow_of(node, index)).collect();
            drop(page);
            for first in chains {
                if self.destroy_chain(first, PageType::Overflow, batch)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        } else {
            let children: Vec<PageId> =
                (0..=node.count()).map(|position| PageId(child_at(node, position))).collect();
            drop(page);
            for child in children {
                if self.destroy_node(child, level - 1, batch)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        }
        batch.push(page_id)
    }

    /// Frees a chain of pages linked by the u64 at payload offset 0 (overflow pages, the free
    /// list), from its tail: a chain cut short by an interrupted destroy ends at a freed page.
    fn destroy_chain(
        &self,
        first: PageId,
        page_type: PageType,
        batch: &mut FreeBatch<'_>,
    ) -> Result<Flow> {
        let mut chain = Vec::new();
        let mut next = first;
        while next != PageId::INVALID {
            let page = match self.store.read(next) {
                Ok(page) => page,
                Err(StorageError::UnknownPage { .. }) => break,
                Err(error) => return Err(error.into()),
            };
            if page.page_type() != page_type {
                return Err(corrupt(next, format!("{page_type:?} chain names another page")));
            }
            chain.push(next);
            if u64::try_from(chain.len()).expect("fits") > self.store.max_page_id().0 {
                return Err(corrupt(first, "page chain loops"));
            }
            next = PageId(get_u64(page.payload(), 0));
        }
        for page_id in chain.into_iter().rev() {
            if batch.push(page_id)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Frees the tree's free list (whose head the anchor names), from its tail.
    fn destroy_free_list(&self, anchor: PageId, batch: &mut FreeBatch<'_>) -> Result<Flow> {
        let head = match self.store.read(anchor) {
            Ok(page) => {
                if &page.payload()[..4] != ANCHOR_MAGIC {
                    return Err(corrupt(anchor, "not a free-list anchor"));
                }
                PageId(get_u64(page.payload(), 4))
            }
            Err(StorageError::UnknownPage { .. }) => return Ok(ControlFlow::Continue(())),
            Err(error) => return Err(error.into()),
        };
        self.destroy_chain(head, PageType::Free, batch)
    }
}
