//! A transaction's bulk insert (COPY FROM, INSERT ... SELECT, CREATE TABLE AS): rows go in
//! batches, sorted by row key, into the primary B+tree leaf by leaf (`BTree::insert_batch`:
//! one descent and one WAL record per leaf run instead of per row), and their secondary-index
//! entries the same way. Same outcome as one `insert` per row: one version per row with this
//! transaction's id, an undo entry per row (rollback and statement failure remove them), and a
//! crash leaves versions of a transaction that never committed, invisible and purged.
//!
//! Unlike `insert`, the rows and their index entries are not queued for the purge thread: a
//! committed new row has one version and entries for its one value, so pruning would only
//! freeze it, which the purge no longer writes (purge.rs `only_frozen`); a later change of the
//! row by the same transaction queues the row itself (`modify`). A rollback removes rows and
//! entries through the undo list; only if that fails is a full pass owed (`queue_for_purge`).

use std::sync::Arc;

use parking_lot::MutexGuard;

use super::write::layout_changed;
use super::{Transaction, UndoEntry};
use crate::engine::layout::Layout;
use crate::engine::row_lock_stripe;
use crate::engine::table::{Table, TableHandle, TableRef};
use crate::error::{EngineError, Result};
use crate::locks::{LockMode, StripeLocks};
use crate::row::{encode_versions, Row, Version};

/// Rows the bulk path sorts and hands the B+trees at once: bounds a batch's memory (a few MB
/// for rows of a few hundred bytes) and how long it holds the row-lock stripes of its keys.
pub const INSERT_BATCH_ROWS_MAX: usize = 4096;

/// One row of a batch: its row key, the encoded row, and the row (for index entries).
struct BatchRow {
    key: Vec<u8>,
    encoded: Vec<u8>,
    row: Row,
}

/// Whether the bulk path can write a table's rows: unique secondary indexes (checked against
/// other rows under their own lock) and vector indexes take the one-row path.
fn bulk_path_applies(table: &Table) -> bool {
    table.indexes.iter().all(|index| !index.def.unique) && table.vector_indexes.is_empty()
}

impl Transaction {
    /// Inserts `rows` as `insert` does one by one (same checks, errors and visibility), in
    /// batches of `INSERT_BATCH_ROWS_MAX`. A primary-key value twice in the input, or already
    /// held by a live row, is 23505 and the statement's rows are undone.
    pub fn insert_batch(&mut self, table: &(impl TableRef + ?Sized), rows: Vec<Row>) -> Result<()> {
        self.run(|txn| {
            let handle = table.resolve(txn)?;
            let mut rows = rows;
            while !rows.is_empty() {
                let rest = rows.split_off(rows.len().min(INSERT_BATCH_ROWS_MAX));
                txn.insert_rows(&handle, rows)?;
                rows = rest;
            }
            Ok(())
        })
    }

    fn insert_rows(&mut self, handle: &TableHandle, rows: Vec<Row>) -> Result<()> {
        assert!(rows.len() <= INSERT_BATCH_ROWS_MAX, "batches are bounded");
        self.ensure_id()?;
        let table = handle.table()?;
        let mut batch = Vec::with_capacity(rows.len());
        for row in rows {
            table.check_row(&row)?;
            let key = table.key_of(&row)?;
            let encoded = table.layout.encode(&row);
            batch.push(BatchRow { key, encoded, row });
        }
        batch.sort_unstable_by(|left, right| left.key.cmp(&right.key));
        if batch.windows(2).any(|pair| pair[0].key == pair[1].key) {
            let constraint = format!("{}_pkey", table.def.name);
            return Err(EngineError::UniqueViolation { constraint });
        }
        let rest = self.insert_sorted(handle, &table.layout, batch)?;
        // Keys already in the tree (a live row: 23505; a dead version: replaced) and rows
        // under a locking read's lock: the one-row path decides and waits as `insert` does.
        for row in rest {
            self.insert_encoded(handle, &row.key, row.encoded, Arc::clone(&table.layout))?;
        }
        Ok(())
    }

    /// Writes a sorted batch of new rows with the row locks of all its keys held, so that no
    /// other writer touches them between the tree's check that a key is absent and its
    /// insertion. Returns the rows left for the one-row path.
    fn insert_sorted(
        &mut self,
        handle: &TableHandle,
        layout: &Arc<Layout>,
        batch: Vec<BatchRow>,
    ) -> Result<Vec<BatchRow>> {
        let engine = Arc::clone(&self.engine);
        let _ddl = engine.ddl.read();
        let table = handle.table()?;
        if !Arc::ptr_eq(layout, &table.layout) {
            return Err(layout_changed(&table));
        }
        if !bulk_path_applies(&table) {
            // An index created since the rows were checked.
            return Ok(batch);
        }
        let row_stripes: Vec<usize> =
            batch.iter().map(|row| row_lock_stripe(&row.key, &table.def.name)).collect();
        let mut stripes = row_stripes.clone();
        stripes.sort_unstable();
        stripes.dedup();
        // In ascending stripe order: two batches cannot wait on each other, and a one-row
        // writer holds one stripe at a time.
        let guards: Vec<MutexGuard<'_, StripeLocks>> =
            stripes.iter().map(|&stripe| engine.row_locks[stripe].lock()).collect();
        let mut rest = Vec::new();
        let mut direct = Vec::with_capacity(batch.len());
        for (row, stripe) in batch.into_iter().zip(&row_stripes) {
            let guard = &guards[stripes.binary_search(stripe).expect("locked above")];
            let mode = LockMode::KeyShare;
            if guard.conflicting(table.identity, &row.key, self.id, mode, &engine.txns).is_some() {
                rest.push(row);
            } else {
                direct.push(row);
            }
        }
        let entries: Vec<(Vec<u8>, Vec<u8>)> = direct
            .iter()
            .map(|row| {
                let version = Version { xmin: self.id, xmax: 0, row: row.encoded.clone() };
                (row.key.clone(), encode_versions(&[version]))
            })
            .collect();
        self.wrote = true;
        self.bulk_wrote = true;
        let present = match table.tree.insert_batch(&entries) {
            Ok(present) => present,
            Err(error) => {
                self.undo_partial_batch(&table, &entries);
                return Err(error.into());
            }
        };
        let mut present = present.into_iter().peekable();
        let mut inserted = Vec::with_capacity(direct.len());
        for (position, row) in direct.into_iter().enumerate() {
            if present.next_if_eq(&position).is_some() {
                rest.push(row);
                continue;
            }
            let key = row.key.clone();
            self.undo.push(UndoEntry { table: Arc::clone(&table), key, before: None });
            inserted.push(row);
        }
        self.insert_index_entries(&table, &inserted)?;
        drop(guards);
        Ok(rest)
    }

    /// After a failed `insert_batch` (an I/O error or corruption), gives the rows it did write
    /// (those holding exactly this batch's new value) undo entries, so that no savepoint
    /// rollback can leave them behind for a commit.
    fn undo_partial_batch(&mut self, table: &Arc<Table>, entries: &[(Vec<u8>, Vec<u8>)]) {
        for (key, value) in entries {
            if let Ok(Some(stored)) = table.tree.get(key) {
                if stored == *value {
                    let (table, key) = (Arc::clone(table), key.clone());
                    self.undo.push(UndoEntry { table, key, before: None });
                }
            }
        }
    }

    /// Adds the secondary-index entries of new rows, index by index in entry order. An entry
    /// already there (left by an earlier version of the same row key with the same value) is
    /// this row's entry as well.
    fn insert_index_entries(&mut self, table: &Arc<Table>, rows: &[BatchRow]) -> Result<()> {
        for index in &table.indexes {
            let mut entries = Vec::with_capacity(rows.len());
            for row in rows {
                if !self.engine.index_predicates.covers(index, &row.row)? {
                    continue; // outside a partial index's predicate (partial.rs)
                }
                let mut entry = index.prefix(&row.row)?;
                entry.extend_from_slice(&row.key);
                entries.push((entry, row.key.clone()));
            }
            entries.sort_unstable_by(|left, right| left.0.cmp(&right.0));
            index.tree.insert_batch(&entries)?;
        }
        Ok(())
    }
}
