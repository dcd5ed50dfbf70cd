//! `Transaction`: its state, statements, savepoints, undo and end. Its reads are in `read`,
//! its writes in `write`, its locking reads in `locking`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{EngineError, Result};
use crate::locks::HeldLock;
use crate::row::decode_versions;
use crate::txn::{IsolationLevel, Snapshot, TxnId};
use crate::wait::WaitLimits;

use super::purge::IndexEntryRef;
use super::table::TableHandle;
use super::table::{drop_stale_entries, Table};
use super::Shared;

mod bulk;
mod locking;
mod read;
mod write;

pub use bulk::INSERT_BATCH_ROWS_MAX;
pub use write::{ConflictArbiters, InsertOutcome};

struct UndoEntry {
    table: Arc<Table>,
    key: Vec<u8>,
    before: Option<Vec<u8>>,
}

/// A transaction. Dropping it without `commit` rolls it back.
pub struct Transaction {
    engine: Arc<Shared>,
    /// The real id, assigned at the first write (0 before).
    id: TxnId,
    virtual_id: crate::txn::VirtualId,
    isolation: IsolationLevel,
    snapshot: Snapshot,
    undo: Vec<UndoEntry>,
    /// Name, undo length and held-lock count at each savepoint.
    savepoints: Vec<(String, usize, usize)>,
    failed: bool,
    done: bool,
    /// Set by the first `begin_statement`: from then on operations take no snapshot of their
    /// own and an error undoes back to `statement_mark`.
    statement_mode: bool,
    /// The undo length when the current statement began (statement mode).
    statement_mark: usize,
    /// Whether this transaction ever wrote a version (even if later undone): only then does
    /// its outcome go to the commit log.
    wrote: bool,
    /// Index entries this transaction added (stale if it rolls back).
    index_entries: Vec<IndexEntryRef>,
    /// Rows this transaction wrote, for the purge thread.
    written: Vec<(Arc<Table>, Vec<u8>)>,
    /// Whether the bulk path (`insert_batch`) wrote rows: they are in neither `written` nor
    /// `index_entries`, so an abort whose undo fails owes a full purge pass.
    bulk_wrote: bool,
    /// Limits on waits for other transactions (`set_wait_limits`).
    wait_limits: WaitLimits,
    /// Row locks taken by locking reads, released at the end.
    held_locks: Vec<HeldLock>,
}

impl Transaction {
    /// A transaction of `engine`: a virtual id and a first snapshot; a real id at its first
    /// write.
    pub(in crate::engine) fn new(engine: Arc<Shared>, isolation: IsolationLevel) -> Transaction {
        let virtual_id = engine.txns.begin();
        let snapshot = engine.txns.snapshot(virtual_id, 0);
        Transaction {
            engine,
            id: 0,
            virtual_id,
            isolation,
            snapshot,
            undo: Vec::new(),
            savepoints: Vec::new(),
            failed: false,
            done: false,
            statement_mode: false,
            statement_mark: 0,
            wrote: false,
            index_entries: Vec::new(),
            written: Vec::new(),
            bulk_wrote: false,
            wait_limits: WaitLimits::default(),
            held_locks: Vec::new(),
        }
    }

    /// The handle of the table named `name` (42P01 if there is none): resolve it once per
    /// statement and pass it to the reads and writes (`TableHandle`).
    pub fn table(&self, name: &str) -> Result<TableHandle> {
        self.engine.handle(name)
    }

    /// The transaction's id: 0 until it first writes.
    pub fn id(&self) -> TxnId {
        self.id
    }

    /// The id every transaction has from its start (`Engine::is_transaction_running`).
    pub fn virtual_id(&self) -> crate::txn::VirtualId {
        self.virtual_id
    }

    /// Starts a statement: READ COMMITTED takes a fresh snapshot; REPEATABLE READ keeps the
    /// first one. Until `begin_statement` is first called, every operation below is a
    /// statement; in statement mode an operation is part of the current statement.
    fn statement(&mut self) -> Result<()> {
        if self.failed {
            return Err(EngineError::TransactionAborted);
        }
        if self.isolation == IsolationLevel::ReadCommitted && !self.statement_mode {
            self.snapshot = self.engine.txns.snapshot(self.virtual_id, self.id);
        }
        Ok(())
    }

    /// Starts a statement that spans many operations (a SQL statement), and switches the
    /// transaction to statement mode for good: operations no longer take a snapshot each.
    /// READ COMMITTED takes a fresh snapshot here (REPEATABLE READ keeps its first), which the
    /// reads of the statement share; an update still applies to the latest committed version
    /// (after waiting for a concurrent writer), as outside statement mode. An error in any
    /// operation undoes every change since this call and fails the transaction (25P02), as
    /// `fail` does. The statement's own writes are visible to its later reads (there are no
    /// command ids): a caller that scans and writes the same table must collect the keys
    /// first (the Halloween problem). 25P02 if the transaction has failed.
    pub fn begin_statement(&mut self) -> Result<()> {
        if self.failed {
            return Err(EngineError::TransactionAborted);
        }
        self.statement_mode = true;
        if self.isolation == IsolationLevel::ReadCommitted {
            self.snapshot = self.engine.txns.snapshot(self.virtual_id, self.id);
        }
        self.statement_mark = self.undo.len();
        Ok(())
    }

    /// READ COMMITTED: a fresh snapshot for the rest of the statement, so that the checks a
    /// statement runs after writing its rows (FOREIGN KEYs) see what committed since it
    /// began, as PostgreSQL's referential checks do. REPEATABLE READ keeps its snapshot.
    /// The statement's own changes stay visible and its undo mark stays.
    pub fn refresh_snapshot(&mut self) {
        if self.isolation == IsolationLevel::ReadCommitted {
            self.snapshot = self.engine.txns.snapshot(self.virtual_id, self.id);
        }
    }

    /// Fails the transaction (25P02 until rollback or a rollback to a savepoint) because of an
    /// error outside the engine; in statement mode the current statement's changes are undone
    /// first (statement atomicity).
    pub fn fail(&mut self) {
        if self.statement_mode {
            if let Err(error) = self.undo_to(self.statement_mark) {
                tracing::error!(%error, "statement undo failed");
            }
        }
        self.failed = true;
    }

    /// Whether the transaction has failed: only rollback (or a rollback to a savepoint) is
    /// accepted.
    pub fn is_failed(&self) -> bool {
        self.failed
    }

    /// Runs an operation; an error fails the transaction until rollback (PostgreSQL's 25P02),
    /// except that a failed statement inside a savepoint can be rolled back to it. The undo
    /// goes back to the operation's start, or in statement mode to the statement's.
    /// The predicate of the partial index `index` (None: a full index), for the vector
    /// index scans and checks, which read rows through the transaction.
    pub(in crate::engine) fn index_predicate(
        &self,
        index: &str,
    ) -> Option<Arc<dyn super::IndexPredicate>> {
        self.engine.index_predicates.get(index)
    }

    pub(in crate::engine) fn run<T>(
        &mut self,
        body: impl FnOnce(&mut Transaction) -> Result<T>,
    ) -> Result<T> {
        self.statement()?;
        let undo_mark = if self.statement_mode { self.statement_mark } else { self.undo.len() };
        assert!(undo_mark <= self.undo.len(), "the statement mark is within the undo list");
        let outcome = body(self);
        if outcome.is_err() {
            // The statement's own changes are undone at once (statement atomicity).
            if let Err(error) = self.undo_to(undo_mark) {
                tracing::error!(%error, "statement undo failed");
            }
            self.failed = true;
        }
        outcome
    }

    /// Sets the limits on waits for other transactions (cancel flag, statement deadline,
    /// lock timeout), for the statements that follow.
    pub fn set_wait_limits(&mut self, limits: WaitLimits) {
        self.wait_limits = limits;
    }

    pub fn savepoint(&mut self, name: &str) -> Result<()> {
        if self.failed {
            return Err(EngineError::TransactionAborted);
        }
        self.savepoints.push((name.to_string(), self.undo.len(), self.held_locks.len()));
        Ok(())
    }

    /// Undoes everything since the savepoint, which stays defined; clears the failed state.
    pub fn rollback_to_savepoint(&mut self, name: &str) -> Result<()> {
        let Some(position) = self.savepoints.iter().rposition(|(saved, ..)| saved == name) else {
            return Err(EngineError::UndefinedSavepoint { name: name.to_string() });
        };
        let (_, mark, lock_mark) = self.savepoints[position];
        self.savepoints.truncate(position + 1);
        self.undo_to(mark)?;
        // Locks taken since the savepoint go, as PostgreSQL's subtransaction abort drops them.
        self.release_locks(lock_mark);
        // A statement that began before the savepoint now only reaches back to it.
        self.statement_mark = self.statement_mark.min(mark);
        self.failed = false;
        Ok(())
    }

    pub fn release_savepoint(&mut self, name: &str) -> Result<()> {
        let Some(position) = self.savepoints.iter().rposition(|(saved, ..)| saved == name) else {
            return Err(EngineError::UndefinedSavepoint { name: name.to_string() });
        };
        self.savepoints.truncate(position);
        Ok(())
    }

    /// Restores the before-images of the undo entries above `mark`, newest first. Each restored
    /// version gets its index entries back: an in-place change of this transaction's own
    /// version (or purge, meanwhile) may have deleted the entry of a value it restores. An
    /// entry leaves the list only once applied; if undo fails the transaction is failed, so
    /// it can only roll back, never commit half undone.
    ///
    /// Undo goes through the table's current handle, so the entries of indexes created since
    /// the write are restored (and those of the undone versions removed) too; after the table
    /// was dropped or truncated its rows are gone and there is nothing to restore.
    fn undo_to(&mut self, mark: usize) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        while self.undo.len() > mark {
            let entry = self.undo.last().expect("above mark");
            let outcome = (|| -> Result<()> {
                let _ddl = engine.ddl.read();
                let Some(table) = engine.current_with_tree(&entry.table) else { return Ok(()) };
                let _guard = engine.row_lock(&entry.key, &table.def.name);
                let undone = match table.tree.get(&entry.key)? {
                    Some(bytes) => decode_versions(&bytes)?,
                    None => Vec::new(),
                };
                let restored = match &entry.before {
                    Some(before) => {
                        table.tree.insert(&entry.key, before)?;
                        let restored = decode_versions(before)?;
                        for version in &restored {
                            let row = table.layout.decode(&version.row)?;
                            for index in &table.indexes {
                                let mut index_key = index.prefix(&row)?;
                                index_key.extend_from_slice(&entry.key);
                                index.tree.insert(&index_key, &entry.key)?;
                            }
                        }
                        restored
                    }
                    None => {
                        table.tree.delete(&entry.key)?;
                        Vec::new()
                    }
                };
                // Entries of values only the undone versions carried (from this transaction's
                // writes, or from a backfill by `create_index`) go now, after the row.
                drop_stale_entries(&table, &entry.key, &undone, &restored)?;
                Ok(())
            })();
            if let Err(error) = outcome {
                self.failed = true;
                return Err(error);
            }
            self.undo.pop();
        }
        Ok(())
    }

    /// Commits: durable when this returns. A failed transaction cannot commit: it is rolled
    /// back and `TransactionAborted` says so (PostgreSQL's COMMIT of a failed block answers
    /// ROLLBACK; the server maps this error to that).
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        if self.failed {
            let undone = self.undo_to(0);
            let finished = self.engine.txns.finish(self.virtual_id, self.id, false, self.wrote);
            self.release_locks(0);
            finished?;
            self.queue_for_purge(false);
            undone?;
            return Err(EngineError::TransactionAborted);
        }
        let finished = self.engine.txns.finish(self.virtual_id, self.id, true, self.wrote);
        self.release_locks(0);
        finished?;
        self.queue_for_purge(true);
        Ok(())
    }

    pub fn rollback(mut self) -> Result<()> {
        self.done = true;
        let undone = self.undo_to(0);
        let finished = self.engine.txns.finish(self.virtual_id, self.id, false, self.wrote);
        self.release_locks(0);
        finished?;
        self.queue_for_purge(false);
        undone
    }
}

impl Transaction {
    /// Hands the rows written and the index entries added to the purge thread. An added entry
    /// can be stale even after a commit: a transaction that changed an indexed value of its
    /// own new version twice left an entry for the middle value. Rows of the bulk path are not
    /// listed (bulk.rs): if the transaction aborted and its undo did not remove them all, only
    /// a full pass finds them.
    fn queue_for_purge(&mut self, committed: bool) {
        let bulk_rows_left = !committed && self.bulk_wrote && !self.undo.is_empty();
        if self.written.is_empty() && self.index_entries.is_empty() && !bulk_rows_left {
            return;
        }
        let mut queue = self.engine.purge_queue.lock();
        if bulk_rows_left {
            queue.full_pass = true;
        }
        if !queue.overflowed() {
            queue.rows.append(&mut self.written);
            queue.entries.append(&mut self.index_entries);
            queue.overflowed();
        }
        drop(queue);
        self.engine.changed.store(true, Ordering::Release);
    }

    /// Ends the transaction the way a crash would: no rollback, nothing in the commit log.
    /// After a restart it counts as aborted. For crash tests.
    #[doc(hidden)]
    pub fn abandon_as_if_crashed(mut self) {
        self.done = true;
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.undo_to(0);
            let _ = self.engine.txns.finish(self.virtual_id, self.id, false, self.wrote);
            self.release_locks(0);
            self.queue_for_purge(false);
        }
    }
}
