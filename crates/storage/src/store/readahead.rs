//! Read-ahead: pages a scan will read next, loaded by worker threads while it works on the
//! current ones.
//!
//! A scan of a table larger than the pool misses on every leaf, and each miss is one
//! synchronous 8 KiB read from the tier (direct I/O) or the volume. The B+tree's range scan
//! knows the next leaves (its parent node lists them) and hands their ids to `submit`;
//! `READAHEAD_WORKERS` threads load them through the ordinary `fetch` (so every rule of the
//! read path holds: the location is read once the frame is published, the image is
//! verified, misses count as usual) and drop the pin. The scan then finds them in DRAM. The
//! reads of a batch run in parallel (queue depth `READAHEAD_WORKERS` on the device) and
//! overlap with the scan's own work.
//!
//! A hint, never a duty: a full queue drops the request, a failed load is ignored (the scan's
//! own read reports the error), and pages already resident are skipped before queueing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::Mutex;
use tierdb_common::{Counter, PageId};

use super::StoreInner;
use crate::codec::usize_to_u64;

/// Threads loading pages ahead of scans: the number of reads in flight on the device at
/// once. Each spends its time waiting for I/O, so more threads than cores is right.
pub(crate) const READAHEAD_WORKERS: usize = 4;
/// Page ids waiting to be loaded, at most (2 MiB of pages): beyond it requests are dropped.
const READAHEAD_QUEUE_PAGES_MAX: usize = 256;
/// Pages per message to a worker: one wake-up per chunk rather than per page (a wake-up and
/// a context switch cost about as much CPU as a read from the OS page cache), while a
/// request of 32 pages still keeps every worker busy.
const READAHEAD_CHUNK_PAGES: usize = 8;
const READAHEAD_QUEUE_CHUNKS_MAX: usize = READAHEAD_QUEUE_PAGES_MAX / READAHEAD_CHUNK_PAGES;

/// Counters of read-ahead.
#[derive(Default, Debug)]
pub struct ReadAheadStats {
    /// Page ids queued for loading.
    pub pages_requested: Counter,
    /// Queued pages the workers loaded from the tier or the volume.
    pub pages_loaded: Counter,
    /// Queued pages that were resident by the time a worker took them.
    pub pages_already_resident: Counter,
    /// Page ids dropped because the queue was full.
    pub pages_dropped: Counter,
    /// Loads that failed (the page was freed, moved twice, or the read failed): ignored.
    pub load_errors: Counter,
}

/// The workers and their queue; owned by `PageStore`, stopped when it drops.
pub(crate) struct ReadAhead {
    sender: Mutex<Option<SyncSender<Vec<PageId>>>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    stopping: Arc<AtomicBool>,
}

impl ReadAhead {
    pub(crate) fn start(inner: &Arc<StoreInner>) -> std::io::Result<ReadAhead> {
        let (sender, receiver) = sync_channel::<Vec<PageId>>(READAHEAD_QUEUE_CHUNKS_MAX);
        let receiver = Arc::new(std::sync::Mutex::new(receiver));
        let stopping = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::with_capacity(READAHEAD_WORKERS);
        for index in 0..READAHEAD_WORKERS {
            let inner = Arc::clone(inner);
            let receiver = Arc::clone(&receiver);
            let stopping = Arc::clone(&stopping);
            let handle = std::thread::Builder::new()
                .name(format!("readahead-{index}"))
                .spawn(move || worker(&inner, &receiver, &stopping))?;
            workers.push(handle);
        }
        Ok(ReadAhead { sender: Mutex::new(Some(sender)), workers: Mutex::new(workers), stopping })
    }

    /// Queues the pages of `page_ids` that are not resident; returns how many were queued.
    pub(crate) fn submit(&self, inner: &StoreInner, page_ids: &[PageId]) -> usize {
        let sender = self.sender.lock();
        let Some(sender) = sender.as_ref() else { return 0 };
        let missing: Vec<PageId> =
            page_ids.iter().copied().filter(|&page_id| !inner.pool.is_resident(page_id)).collect();
        if missing.is_empty() {
            return 0;
        }
        // Strided chunks (pages 0, 4, 8, ... in one, 1, 5, 9, ... in the next): the workers
        // load the nearest pages first, together, instead of one worker holding all of them.
        let chunks =
            missing.len().div_ceil(READAHEAD_CHUNK_PAGES).max(missing.len().min(READAHEAD_WORKERS));
        let mut queued = 0;
        for first in 0..chunks {
            let chunk: Vec<PageId> = missing.iter().copied().skip(first).step_by(chunks).collect();
            let pages = usize_to_u64(chunk.len());
            match sender.try_send(chunk) {
                Ok(()) => {
                    queued += usize::try_from(pages).expect("fits");
                    inner.stats.readahead.pages_requested.add(pages);
                }
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                    inner.stats.readahead.pages_dropped.add(pages);
                }
            }
        }
        queued
    }

    /// Stops the workers: queued pages are dropped, loads in progress finish.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        // Dropping the sender wakes every worker blocked on the queue.
        drop(self.sender.lock().take());
        for handle in self.workers.lock().drain(..) {
            let _ = handle.join();
        }
    }
}

fn worker(
    inner: &StoreInner,
    receiver: &std::sync::Mutex<Receiver<Vec<PageId>>>,
    stopping: &AtomicBool,
) {
    loop {
        let next = {
            let Ok(receiver) = receiver.lock() else { return };
            receiver.recv()
        };
        let Ok(chunk) = next else { return };
        for page_id in chunk {
            if stopping.load(Ordering::Acquire) || inner.shutdown.load(Ordering::Acquire) {
                return;
            }
            load(inner, page_id);
        }
    }
}

fn load(inner: &StoreInner, page_id: PageId) {
    if inner.pool.is_resident(page_id) {
        inner.stats.readahead.pages_already_resident.increment();
        return;
    }
    match inner.fetch(page_id) {
        // The pin drops here: the page stays in DRAM until CLOCK takes it.
        Ok(_pinned) => inner.stats.readahead.pages_loaded.increment(),
        Err(error) => {
            inner.stats.readahead.load_errors.increment();
            tracing::debug!(%error, %page_id, "read-ahead load failed; the scan reads it itself");
        }
    }
}
