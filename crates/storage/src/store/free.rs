//! Freeing pages: the pages of a dropped B+tree (or any structure the layer above no longer
//! reaches) leave the page map, so that their segment slots become garbage that compaction
//! and checkpoints reclaim. Before this, a dropped table's pages stayed for ever.
//!
//! Protocol (`StoreInner::free_pages`), under the flush lock so that no flush is between
//! copying a page and publishing its new location (it would point the freed page at a new
//! slot again):
//! 1. under the page-map lock, append one `PagesFreed` record naming the pages and, in the
//!    same critical section of the log, clear their map entries (map order equals log order,
//!    as for `MapUpdate`);
//! 2. take each page's frame out of the pool, dirty or not (`BufferPool::discard`): its
//!    changes are never written; and drop its tier copy.
//!
//! Redo: recovery's first pass clears the entries of every `PagesFreed` record after the
//! manifest's map LSN, as it applies map updates, and remembers every page freed in the
//! replayed log; the second pass skips page changes to those pages (all of them come before
//! the free, since ids are never reused and nobody changes a freed page).
//!
//! The caller guarantees that nobody reads or changes the pages any more, and never frees a
//! page twice in one call. Reading a freed page afterwards fails with `UnknownPage`, as for a
//! page that never existed; freeing a page that has no map entry and no frame (never
//! written, or freed before) only logs it.

use std::sync::atomic::Ordering;

use tierdb_common::{Lsn, PageId};

use super::StoreInner;
use crate::error::Result;
use crate::page_map::PageLocation;
use crate::wal::{WalRecord, FREED_PAGES_PER_RECORD_MAX};

impl StoreInner {
    /// Frees `pages` (ascending, no repeats, at most `FREED_PAGES_PER_RECORD_MAX`, none
    /// beyond the ids allocated). Returns the end LSN of the record; durable once the WAL
    /// is flushed past it (`PageStore::wait_durable`).
    pub(crate) fn free_pages(&self, pages: &[PageId]) -> Result<Lsn> {
        assert!(!pages.is_empty(), "freeing no pages");
        assert!(pages.len() <= FREED_PAGES_PER_RECORD_MAX, "too many pages in one free");
        assert!(pages.windows(2).all(|pair| pair[0] < pair[1]), "pages ascending, no repeats");
        assert!(pages[0] != PageId::INVALID, "page 0 is never allocated");
        let next_page = self.next_page.load(Ordering::Acquire);
        assert!(pages[pages.len() - 1].0 < next_page, "freeing a page never allocated");
        self.check_poisoned()?;
        let _flush = self.flush_lock.lock();
        // Room in the log first, outside the page-map lock: reserving a file (or flushing
        // for space) under it would stall every page miss, which reads the map.
        let record = WalRecord::PagesFreed(pages.to_vec());
        if !self.unlogged {
            // Tag and count, the page ids, and the record's header and alignment.
            let framed_bytes = 5 + 8 * pages.len() + 16;
            self.wal.ensure_unbounded_room(crate::codec::usize_to_u64(framed_bytes))?;
        }
        let end = {
            let mut map = self.map.write();
            let clear = |map: &mut crate::page_map::PageMap| {
                for &page_id in pages {
                    map.set(page_id, PageLocation::default());
                }
            };
            if self.unlogged {
                clear(&mut map);
                self.wal.appended_lsn()
            } else {
                let end = self.wal.append_unbounded(&record, |_, _| clear(&mut map))?;
                map.applied_lsn = end;
                end
            }
        };
        for &page_id in pages {
            if self.pool.discard(page_id) == Some(true) {
                self.dirty_frames.fetch_sub(1, Ordering::AcqRel);
            }
            if let Some(tier) = &self.tier {
                tier.invalidate(page_id);
            }
        }
        self.stats.pages_freed.add(crate::codec::usize_to_u64(pages.len()));
        Ok(end)
    }
}
