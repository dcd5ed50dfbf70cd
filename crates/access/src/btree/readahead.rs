//! A range scan's read-ahead: while it descends to a leaf, the leaf's parent (latched shared)
//! names the leaves that come next in walk order; their ids go to the page store's
//! read-ahead workers (`PageStore::read_ahead`), which load the ones not in DRAM while the
//! scan copies the current leaf. So a scan of a table larger than the pool waits for several
//! reads in flight instead of one synchronous read per leaf (design 007, "Range scans").
//!
//! The window ramps up like the kernel's file read-ahead: none for the first leaf (a short
//! range reads one or two leaves and should cost no extra I/O), then 2, 4, 8, ... up to
//! `READAHEAD_LEAVES_MAX`. It never exceeds an eighth of the pool, so that pages loaded ahead
//! are not evicted again before the scan reaches them. Requests are made in batches: only
//! when fewer than half a window of leaves remain requested ahead of the scan.

use tierdb_common::PageId;
use tierdb_storage::PageStore;

use super::{child_at, Direction};
use crate::node::Node;

/// Leaves requested ahead of a scan, at most: 32 × 8 KiB = 256 KiB in flight or waiting,
/// the size of PostgreSQL's bulk-read ring.
pub(crate) const READAHEAD_LEAVES_MAX: usize = 32;
/// The window is at most the pool's frames divided by this.
const POOL_FRACTION_DIVISOR: usize = 8;

/// Where a scan's requests have reached, in its current leaf parent.
#[derive(Default)]
pub(crate) struct ScanReadAhead {
    /// Leaves descended to so far.
    leaves_read: usize,
    /// The leaf parent the last request came from.
    parent: Option<PageId>,
    /// The last child position requested in `parent` (the furthest in walk order).
    requested_through: usize,
    /// The window's bound from the pool's size, read once per scan.
    pool_window_max: Option<usize>,
    /// Reused buffer of page ids for one request.
    page_ids: Vec<PageId>,
}

impl ScanReadAhead {
    /// Called with the leaf's parent latched and the chosen child `position`: requests the
    /// next leaves of this parent if the scan is close to the end of what it requested.
    pub(crate) fn plan(
        &mut self,
        store: &PageStore,
        parent: PageId,
        node: Node<'_>,
        position: usize,
        direction: Direction,
    ) {
        self.leaves_read += 1;
        let window = self.window(store);
        if window == 0 {
            return;
        }
        let same_parent = self.parent == Some(parent);
        // Positions requested and not yet reached, ahead of `position` in walk order.
        let ahead = match (same_parent, direction) {
            (false, _) => 0,
            (true, Direction::Forward) => self.requested_through.saturating_sub(position),
            (true, Direction::Backward) => position.saturating_sub(self.requested_through),
        };
        if ahead * 2 > window {
            return;
        }
        // Children sit at positions 0..=count.
        let (first, last) = match direction {
            Direction::Forward => {
                let first =
                    if same_parent { position.max(self.requested_through) } else { position };
                (first + 1, (position + window).min(node.count()))
            }
            Direction::Backward => {
                let first =
                    if same_parent { position.min(self.requested_through) } else { position };
                match first.checked_sub(1) {
                    Some(first) => (first, position.saturating_sub(window)),
                    None => return,
                }
            }
        };
        self.page_ids.clear();
        match direction {
            Direction::Forward if first <= last => {
                self.page_ids.extend((first..=last).map(|at| PageId(child_at(node, at))));
            }
            Direction::Backward if first >= last => {
                self.page_ids.extend((last..=first).rev().map(|at| PageId(child_at(node, at))));
            }
            _ => return,
        }
        self.parent = Some(parent);
        self.requested_through = last;
        store.read_ahead(&self.page_ids);
    }

    /// Leaves to keep requested ahead of the scan now.
    fn window(&mut self, store: &PageStore) -> usize {
        if self.leaves_read < 2 {
            return 0;
        }
        let doublings = (self.leaves_read - 1).min(READAHEAD_LEAVES_MAX.ilog2() as usize);
        let pool_window_max = *self.pool_window_max.get_or_insert_with(|| {
            let (_, target_frames) = store.buffer_pool_frames();
            target_frames / POOL_FRACTION_DIVISOR
        });
        (1usize << doublings).min(READAHEAD_LEAVES_MAX).min(pool_window_max)
    }
}
