//! The server-wide bound on the memory that query operators hold (sorts, hash tables, row
//! stores). Each operator has its own limit (work_mem, or work_mem x hash_mem_multiplier, as
//! in PostgreSQL) and takes its memory from one `MemoryPool` in steps of
//! `MEMORY_GRANT_STEP_BYTES`. When the pool is spent, operators spill sooner instead of
//! failing: many sessions cannot together exhaust the machine, and no query fails for it.
//!
//! Every grant may hold `MEMORY_GRANT_FLOOR_BYTES` whatever the pool says, so that an
//! operator always makes progress (a sort needs room for a run, a merge for its buffers);
//! the floor is small enough that the connection limit bounds it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The pool is taken from in steps of this many bytes (fewer atomic operations per row).
pub const MEMORY_GRANT_STEP_BYTES: usize = 256 * 1024;
/// What a grant may hold without the pool: PostgreSQL's smallest work_mem.
pub const MEMORY_GRANT_FLOOR_BYTES: usize = 64 * 1024;

/// Memory all operators of the server may hold together.
#[derive(Debug)]
pub struct MemoryPool {
    /// Changed at run time by the capacity controller (design 015).
    limit_bytes: AtomicUsize,
    used_bytes: AtomicUsize,
    /// Steps refused because the pool was spent: operators that spilled sooner for want of
    /// memory (the controller's "waiting for memory" signal).
    refusals: AtomicU64,
}

impl MemoryPool {
    pub fn new(limit_bytes: usize) -> Arc<MemoryPool> {
        Arc::new(MemoryPool {
            limit_bytes: AtomicUsize::new(limit_bytes),
            used_bytes: AtomicUsize::new(0),
            refusals: AtomicU64::new(0),
        })
    }

    /// Changes the bound. Memory already lent above a lowered bound stays lent until its
    /// grants give it back; no new step is lent until use is below the bound.
    pub fn set_limit_bytes(&self, limit_bytes: usize) {
        self.limit_bytes.store(limit_bytes, Ordering::Relaxed);
    }

    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// A pool without a bound, for tools and tests.
    pub fn unbounded() -> Arc<MemoryPool> {
        MemoryPool::new(usize::MAX)
    }

    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes.load(Ordering::Relaxed)
    }

    pub fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    fn try_take(&self, bytes: usize) -> bool {
        let limit_bytes = self.limit_bytes();
        let mut current = self.used_bytes.load(Ordering::Relaxed);
        loop {
            let Some(next) = current.checked_add(bytes).filter(|&next| next <= limit_bytes) else {
                self.refusals.fetch_add(1, Ordering::Relaxed);
                return false;
            };
            match self.used_bytes.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
    }

    fn give_back(&self, bytes: usize) {
        let before = self.used_bytes.fetch_sub(bytes, Ordering::Relaxed);
        assert!(before >= bytes, "memory pool given back more than it lent");
    }
}

/// One operator's memory: at most `limit_bytes`, taken from the pool as it grows.
#[derive(Debug)]
pub struct MemoryGrant {
    pool: Arc<MemoryPool>,
    limit_bytes: usize,
    /// Bytes taken from the pool (beyond the floor), in steps.
    pooled_bytes: usize,
    used_bytes: usize,
    peak_bytes: usize,
}

impl MemoryGrant {
    pub fn new(pool: &Arc<MemoryPool>, limit_bytes: usize) -> MemoryGrant {
        MemoryGrant {
            pool: Arc::clone(pool),
            limit_bytes: limit_bytes.max(MEMORY_GRANT_FLOOR_BYTES),
            pooled_bytes: 0,
            used_bytes: 0,
            peak_bytes: 0,
        }
    }

    /// Whether `bytes` more fit (within the operator's limit and the pool); if so they are
    /// counted as used.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        let wanted = self.used_bytes.saturating_add(bytes);
        if wanted > self.limit_bytes {
            return false;
        }
        while wanted > MEMORY_GRANT_FLOOR_BYTES + self.pooled_bytes {
            let step = MEMORY_GRANT_STEP_BYTES
                .min(self.limit_bytes - MEMORY_GRANT_FLOOR_BYTES - self.pooled_bytes);
            if step == 0 || !self.pool.try_take(step) {
                return false;
            }
            self.pooled_bytes += step;
        }
        self.used_bytes = wanted;
        self.peak_bytes = self.peak_bytes.max(wanted);
        true
    }

    /// Counts `bytes` as used even past the limit (an operator that must hold one more row
    /// to make progress); the pool is not asked.
    pub fn force_grow(&mut self, bytes: usize) {
        self.used_bytes = self.used_bytes.saturating_add(bytes);
        self.peak_bytes = self.peak_bytes.max(self.used_bytes);
    }

    pub fn shrink(&mut self, bytes: usize) {
        assert!(bytes <= self.used_bytes, "a grant shrinks by more than it holds");
        self.used_bytes -= bytes;
    }

    /// Frees everything it holds (after a spill) and gives the pool its steps back.
    pub fn reset(&mut self) {
        self.used_bytes = 0;
        self.pool.give_back(self.pooled_bytes);
        self.pooled_bytes = 0;
    }

    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    pub fn peak_bytes(&self) -> usize {
        self.peak_bytes
    }

    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }
}

impl Drop for MemoryGrant {
    fn drop(&mut self) {
        self.pool.give_back(self.pooled_bytes);
    }
}
