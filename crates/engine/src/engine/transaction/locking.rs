//! `Transaction::lock_row` (locking reads) and the release of row locks: a child module of
//! `engine`, so that it reaches the transaction's private state. The lock table itself and the
//! modes are in `crate::locks`.

use std::sync::Arc;

use super::{Table, Transaction};
use crate::engine::table::{TableHandle, TableRef};
use crate::error::{EngineError, Result};
use crate::locks::{HeldLock, LockMode, LockOutcome, WaitPolicy};
use crate::row::{decode_versions, Value};
use crate::txn::IsolationLevel;

/// The row-lock mode an update takes: `Update` if it changes a unique index's values (the
/// row's key for PostgreSQL's purposes), else `NoKeyUpdate`.
pub(super) fn update_mode(table: &Table, current: &[Value], new_row: &[Value]) -> Result<LockMode> {
    for index in table.indexes.iter().filter(|index| index.def.unique) {
        if index.prefix(current)? != index.prefix(new_row)? {
            return Ok(LockMode::Update);
        }
    }
    Ok(LockMode::NoKeyUpdate)
}

impl Transaction {
    /// Locks the row with row key `key` in `mode` (`SELECT ... FOR UPDATE` and the others):
    /// waits for a running writer or a conflicting locker as `policy` says, then records the
    /// lock (locks.rs) until the transaction ends. READ COMMITTED locks the latest committed
    /// version and says whether it is newer than the snapshot; REPEATABLE READ fails with
    /// 40001 when the row changed after its snapshot, like an update.
    pub fn lock_row(
        &mut self,
        table: &(impl TableRef + ?Sized),
        key: &[u8],
        mode: LockMode,
        policy: WaitPolicy,
    ) -> Result<LockOutcome> {
        self.run(|txn| {
            let handle = table.resolve(txn)?;
            handle.table()?.check_row_key(key)?;
            txn.lock_row_in(&handle, key, mode, policy)
        })
    }

    fn lock_row_in(
        &mut self,
        handle: &TableHandle,
        key: &[u8],
        mode: LockMode,
        policy: WaitPolicy,
    ) -> Result<LockOutcome> {
        self.ensure_id()?;
        let engine = Arc::clone(&self.engine);
        loop {
            let ddl = engine.ddl.read();
            let table = handle.table()?;
            let mut guard = engine.row_lock(key, &table.def.name);
            let mut versions = match table.tree.get(key)? {
                Some(bytes) => decode_versions(&bytes)?,
                None => Vec::new(),
            };
            self.prune(&mut versions)?;
            let holder = versions
                .first()
                .and_then(|newest| self.holder(newest))
                .or_else(|| guard.conflicting(table.identity, key, self.id, mode, &engine.txns));
            if let Some(holder) = holder {
                drop(guard);
                drop(ddl);
                match policy {
                    WaitPolicy::Block => {
                        engine.txns.wait_for(self.id, holder, &self.wait_limits)?;
                        continue;
                    }
                    WaitPolicy::SkipLocked => return Ok(LockOutcome::Skipped),
                    WaitPolicy::NoWait => {
                        return Err(EngineError::LockNotAvailable {
                            relation: handle.name().to_string(),
                        })
                    }
                }
            }
            let newest = versions.first();
            if !self.is_live(newest)? {
                if self.isolation == IsolationLevel::RepeatableRead
                    && self.visible_row(&table.layout, &versions)?.is_some()
                {
                    return Err(EngineError::SerializationFailure);
                }
                return Ok(LockOutcome::Gone);
            }
            let newest = newest.expect("a live row has a version");
            let changed = !engine.txns.visible(&self.snapshot, newest.xmin)?;
            if changed && self.isolation == IsolationLevel::RepeatableRead {
                return Err(EngineError::SerializationFailure);
            }
            let row = table.layout.decode(&newest.row)?;
            let previous =
                guard.acquire(table.identity, key, self.id, mode, &engine.row_lock_count)?;
            self.held_locks.push(HeldLock {
                table: table.identity,
                table_name: table.def.name.clone(),
                key: key.to_vec(),
                previous,
            });
            return Ok(LockOutcome::Locked { row, changed });
        }
    }

    /// Releases the row locks taken after the first `mark`, newest first (an upgrade goes
    /// back to the mode held before it).
    pub(super) fn release_locks(&mut self, mark: usize) {
        while self.held_locks.len() > mark {
            let held = self.held_locks.pop().expect("above mark");
            let mut guard = self.engine.row_lock(&held.key, &held.table_name);
            guard.release(
                held.table,
                &held.key,
                self.id,
                held.previous,
                &self.engine.row_lock_count,
            );
        }
    }
}
