//! Row locks taken by `SELECT ... FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE`.
//!
//! A writer's row lock is its version at the head of the row (008, "Writing a row"). A
//! locking read writes no version: its lock is an entry in memory, in the row's stripe of
//! the engine's row mutexes (`Shared::row_locks`), listing every (transaction, mode) that
//! holds the row. Several transactions can hold compatible modes at once (two FOR SHARE), so
//! the entry is a list. Memory only: locks never outlive their transaction, and a crash
//! cannot leave a row locked. An entry of a transaction that is no longer running is
//! ignored (ids are never reused), so release is cleanup, never needed for correctness.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{EngineError, Result};
use crate::row::Row;
use crate::txn::{TxnId, TxnManager};

/// Row-lock entries (row, transaction) held at once in the whole engine: past it a locking
/// read fails with 53200, as PostgreSQL's lock table does when it is full.
pub const ROW_LOCKS_MAX: usize = 1 << 20;

/// PostgreSQL's row-lock strengths, weakest first. A plain UPDATE takes `NoKeyUpdate` and a
/// DELETE `Update` (tierdb refuses changes of primary-key columns, and an update that changes
/// a unique-index column takes `Update`, as PostgreSQL's key columns do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockMode {
    KeyShare,
    Share,
    NoKeyUpdate,
    Update,
}

impl LockMode {
    /// PostgreSQL's conflict table for row locks.
    pub fn conflicts_with(self, other: LockMode) -> bool {
        match (self, other) {
            (LockMode::KeyShare, held) | (held, LockMode::KeyShare) => held == LockMode::Update,
            (LockMode::Share, LockMode::Share) => false,
            _ => true,
        }
    }

    /// The clause that takes it, for messages.
    pub fn clause(self) -> &'static str {
        match self {
            LockMode::KeyShare => "FOR KEY SHARE",
            LockMode::Share => "FOR SHARE",
            LockMode::NoKeyUpdate => "FOR NO KEY UPDATE",
            LockMode::Update => "FOR UPDATE",
        }
    }
}

/// What a locking read does when another transaction holds the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum WaitPolicy {
    /// Wait for it (subject to `WaitLimits`).
    Block,
    /// SKIP LOCKED: leave the row out.
    SkipLocked,
    /// NOWAIT: fail with 55P03.
    NoWait,
}

/// The result of `Transaction::lock_row`.
#[derive(Clone, Debug, PartialEq)]
pub enum LockOutcome {
    /// Locked. `row` is the row's latest committed version; `changed` says whether it is
    /// newer than the statement's snapshot (READ COMMITTED after waiting for a concurrent
    /// update: the caller re-checks its WHERE on it, as PostgreSQL's EvalPlanQual does).
    Locked { row: Row, changed: bool },
    /// SKIP LOCKED and another transaction holds the row.
    Skipped,
    /// A concurrent transaction deleted the row (READ COMMITTED): leave it out.
    Gone,
}

/// A locked row: (table identity, row key).
type LockedRow = (u64, Vec<u8>);

/// The row-lock entries of one stripe: locked row → its holders and their modes.
#[derive(Default)]
pub(crate) struct StripeLocks {
    rows: HashMap<LockedRow, Vec<(TxnId, LockMode)>>,
}

impl StripeLocks {
    /// A running transaction other than `me` holding the row in a mode that conflicts with
    /// `mode`.
    pub(crate) fn conflicting(
        &self,
        table: u64,
        key: &[u8],
        me: TxnId,
        mode: LockMode,
        txns: &TxnManager,
    ) -> Option<TxnId> {
        if self.rows.is_empty() {
            return None;
        }
        let holders = self.rows.get(&(table, key.to_vec()))?;
        holders
            .iter()
            .find(|&&(holder, held)| {
                holder != me && held.conflicts_with(mode) && txns.is_active(holder)
            })
            .map(|&(holder, _)| holder)
    }

    /// Records that `me` holds the row in `mode` (or a stronger mode it already holds).
    /// Returns the mode it held before, to restore at a rollback to a savepoint.
    pub(crate) fn acquire(
        &mut self,
        table: u64,
        key: &[u8],
        me: TxnId,
        mode: LockMode,
        count: &AtomicUsize,
    ) -> Result<Option<LockMode>> {
        let holders = self.rows.entry((table, key.to_vec())).or_default();
        if let Some(entry) = holders.iter_mut().find(|(holder, _)| *holder == me) {
            let previous = entry.1;
            entry.1 = entry.1.max(mode);
            return Ok(Some(previous));
        }
        if count.fetch_add(1, Ordering::Relaxed) >= ROW_LOCKS_MAX {
            count.fetch_sub(1, Ordering::Relaxed);
            if holders.is_empty() {
                self.rows.remove(&(table, key.to_vec()));
            }
            return Err(EngineError::OutOfLockMemory { max: ROW_LOCKS_MAX });
        }
        holders.push((me, mode));
        Ok(None)
    }

    /// Removes `me`'s entry (or puts back the mode it held before, `previous`).
    pub(crate) fn release(
        &mut self,
        table: u64,
        key: &[u8],
        me: TxnId,
        previous: Option<LockMode>,
        count: &AtomicUsize,
    ) {
        let row = (table, key.to_vec());
        let Some(holders) = self.rows.get_mut(&row) else { return };
        let Some(position) = holders.iter().position(|(holder, _)| *holder == me) else { return };
        match previous {
            Some(mode) => holders[position].1 = mode,
            None => {
                holders.swap_remove(position);
                count.fetch_sub(1, Ordering::Relaxed);
                if holders.is_empty() {
                    self.rows.remove(&row);
                }
            }
        }
    }
}

/// A row lock this transaction took, for release (all at the end, or those taken after a
/// savepoint at a rollback to it).
pub(crate) struct HeldLock {
    pub table: u64,
    /// The stripe is chosen by name and key (`Shared::row_lock`).
    pub table_name: String,
    pub key: Vec<u8>,
    pub previous: Option<LockMode>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL's table (explicit-locking.html, "Conflicting Row-Level Locks").
    #[test]
    fn conflict_table_is_postgresql_s() {
        use LockMode::*;
        let modes = [KeyShare, Share, NoKeyUpdate, Update];
        let expected = [
            [false, false, false, true],
            [false, false, true, true],
            [false, true, true, true],
            [true, true, true, true],
        ];
        for (row, &requested) in modes.iter().enumerate() {
            for (column, &held) in modes.iter().enumerate() {
                assert_eq!(requested.conflicts_with(held), expected[row][column]);
            }
        }
    }
}
