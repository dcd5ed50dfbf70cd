//! Dropped trees and their pages: DROP TABLE, TRUNCATE and DROP INDEX unlink trees from the
//! catalog at once, but transactions may still read them through handles they resolved
//! before (a scan's page in progress, an undo entry, a range iterator). A dropped tree goes to
//! the graveyard, and its pages go back to the page store (`BTree::destroy_some`) once no
//! handle of it is left (`BTree::has_other_handles`).
//!
//! Durability: a tree of the main store gets a grave entry in the catalog tree (key
//! `GRAVE_KEY_PREFIX` + meta page id, big-endian; value `GRAVE_KIND_BTREE`) before it is
//! unlinked, and the entry is deleted once the tree is destroyed durably. After a crash, the
//! graves in the catalog are destroyed by the purge thread, except a tree the loaded catalog
//! still names: that grave belonged to a DDL the crash cut before it unlinked the tree, and
//! is only deleted. So the catalog stays authoritative: a grave never destroys a live tree,
//! and a crash never leaves a dropped tree half destroyed for good. Trees of a temp tables'
//! store get no entry (the store is removed after a crash), and their graves are dropped
//! without a destroy once the session releases the store. What still leaks: vector index
//! graphs, and the fresh trees of a TRUNCATE cut by a crash before its graves were written
//! (design 008, Known issues).
//!
//! A destroy runs in steps of `DESTROY_STEP_PAGES` on the purge thread, so that shutdown is
//! never stuck behind a large table; a step cut by shutdown or a crash resumes from the meta
//! page (design 007, "Destroying a tree").

use std::collections::HashSet;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tierdb_access::{BTree, Direction};
use tierdb_common::PageId;

use super::Shared;
use crate::error::Result;

/// Catalog keys of graves start with a zero byte, which no table name holds (PostgreSQL
/// refuses it in identifiers, and the catalog loader skips such keys).
pub(super) const GRAVE_KEY_PREFIX: &[u8] = b"\0grave\0";
const GRAVE_KIND_BTREE: u8 = 1;
/// Pages one destroy step frees at most.
const DESTROY_STEP_PAGES: u64 = 4_096;

/// A dropped tree waiting until no handle of it is left.
pub(super) struct Grave {
    tree: BTree,
    /// It has a catalog entry to delete once it is destroyed (main store trees).
    durable: bool,
    /// A destroy step failed with damage: set aside until the next open (as compaction's
    /// quarantine), so that one damaged tree does not fail every later reap.
    damaged: bool,
}

fn grave_key(meta: PageId) -> Vec<u8> {
    [GRAVE_KEY_PREFIX, &meta.0.to_be_bytes()].concat()
}

impl Shared {
    /// Writes the grave entries of `trees` (those in the main store), durably, before the DDL
    /// unlinks them from the catalog; `bury` then hands them to the purge thread.
    pub(super) fn record_graves(&self, trees: &[&BTree]) -> Result<()> {
        let mut last = None;
        for tree in trees.iter().filter(|tree| Arc::ptr_eq(tree.store(), &self.store)) {
            let (_, lsn) =
                self.catalog.insert(&grave_key(tree.meta_page()), &[GRAVE_KIND_BTREE])?;
            last = Some(lsn);
        }
        if let Some(lsn) = last {
            self.store.wait_durable(lsn)?;
        }
        Ok(())
    }

    /// Hands trees the DDL has unlinked to the purge thread, which destroys each once nobody
    /// holds it. Trees of a temp tables' store that is no longer open are left to go with it.
    pub(super) fn bury(&self, trees: Vec<BTree>) {
        let open_stores: Vec<Arc<tierdb_storage::PageStore>> =
            self.temp_stores.lock().values().cloned().collect();
        let mut graveyard = self.graveyard.lock();
        for tree in trees {
            let durable = Arc::ptr_eq(tree.store(), &self.store);
            if durable || open_stores.iter().any(|store| Arc::ptr_eq(store, tree.store())) {
                graveyard.push(Grave { tree, durable, damaged: false });
            }
        }
        self.changed.store(true, Ordering::Release);
    }

    /// Destroys (a step of) every grave whose tree nobody holds any more; a grave whose
    /// destroy finished leaves the graveyard and the catalog. Returns pages freed.
    pub(super) fn reap_graves(&self) -> Result<u64> {
        let _reaping = self.reaping.lock();
        let open_stores: Vec<Arc<tierdb_storage::PageStore>> =
            self.temp_stores.lock().values().cloned().collect();
        let ready: Vec<Grave> = {
            let mut graveyard = self.graveyard.lock();
            // A temp tables' store its session released goes with its pages: its graves are
            // dropped, not destroyed (they held the store open).
            graveyard.retain(|grave| {
                grave.durable
                    || open_stores.iter().any(|store| Arc::ptr_eq(store, grave.tree.store()))
            });
            let (ready, waiting) =
                std::mem::take(&mut *graveyard).into_iter().partition(|grave: &Grave| {
                    // The graveyard's own handle is the one left.
                    !grave.damaged && !grave.tree.has_other_handles()
                });
            *graveyard = waiting;
            ready
        };
        drop(open_stores);
        let mut freed = 0;
        let mut unfinished = Vec::new();
        let mut outcome = Ok(());
        for grave in ready {
            if outcome.is_err() || self.stopping.load(Ordering::Acquire) {
                unfinished.push(grave);
                continue;
            }
            match self.destroy_step(&grave) {
                Ok((pages, true)) => freed += pages,
                Ok((pages, false)) => {
                    freed += pages;
                    unfinished.push(grave);
                }
                Err(error) => {
                    let damaged =
                        error.sqlstate() == tierdb_common::ErrorKind::Corruption.sqlstate();
                    if damaged {
                        tracing::error!(%error, meta = %grave.tree.meta_page(), "a dropped tree is damaged: its pages stay until the next start");
                    }
                    outcome = Err(error);
                    unfinished.push(Grave { damaged, ..grave });
                }
            }
        }
        self.graveyard.lock().extend(unfinished);
        outcome.map(|()| freed)
    }

    /// One destroy step of `grave`: (pages freed, whether the tree is gone and its entry
    /// deleted).
    fn destroy_step(&self, grave: &Grave) -> Result<(u64, bool)> {
        let progress = grave.tree.destroy_some(DESTROY_STEP_PAGES)?;
        // A temp tables' store logs nothing: its frees need no wait and it has no entry.
        if progress.done && grave.durable {
            if let Some(lsn) = progress.last_lsn {
                self.store.wait_durable(lsn)?;
            }
            if let Some((_, lsn)) = self.catalog.delete(&grave_key(grave.tree.meta_page()))? {
                self.store.wait_durable(lsn)?;
            }
        }
        Ok((progress.pages_freed, progress.done))
    }

    /// At open, after the catalog is loaded: the graves of trees the catalog no longer names
    /// go to the purge thread; entries naming a live tree (a DDL cut before it unlinked it)
    /// are deleted.
    pub(super) fn load_graves(&self, live: &HashSet<PageId>) -> Result<()> {
        let upper = [GRAVE_KEY_PREFIX, &[0xFF; 9]].concat();
        let mut graves = Vec::new();
        let range = self.catalog.range(
            Bound::Included(GRAVE_KEY_PREFIX),
            Bound::Excluded(upper.as_slice()),
            Direction::Forward,
        );
        for entry in range {
            let (key, value) = entry?;
            let meta = key
                .get(GRAVE_KEY_PREFIX.len()..)
                .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
                .map(|bytes| PageId(u64::from_be_bytes(bytes)));
            match (meta, value.as_slice()) {
                (Some(meta), [GRAVE_KIND_BTREE]) => graves.push(meta),
                _ => {
                    return Err(crate::error::EngineError::Corrupt {
                        what: "catalog",
                        detail: format!("bad grave entry key={key:?}"),
                    })
                }
            }
        }
        for meta in graves {
            if live.contains(&meta) {
                if let Some((_, lsn)) = self.catalog.delete(&grave_key(meta))? {
                    self.store.wait_durable(lsn)?;
                }
                continue;
            }
            let tree = BTree::open(Arc::clone(&self.store), meta);
            match tree {
                Ok(tree) => {
                    self.graveyard.lock().push(Grave { tree, durable: true, damaged: false })
                }
                // Destroyed up to its meta page before the crash: only the entry is left.
                Err(tierdb_access::BTreeError::Storage(
                    tierdb_storage::StorageError::UnknownPage { .. },
                )) => {
                    if let Some((_, lsn)) = self.catalog.delete(&grave_key(meta))? {
                        self.store.wait_durable(lsn)?;
                    }
                }
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }
}
