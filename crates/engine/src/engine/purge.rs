//! Purge: removes row versions that no snapshot can see any more, and index entries that no
//! version of their row carries, from a queue that finished transactions fill, or in a full
//! pass over every table (at startup, on VACUUM, when the queue overflowed).

use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tierdb_access::Direction;

use crate::error::{EngineError, Result};
use crate::row::{decode_versions, encode_versions, Version};
use crate::txn::{TxnId, TxnManager, TxnStatus, FROZEN_TXN};

use super::table::{drop_stale_entries, Index, Table};
use super::vector_purge::note_uncarried_vectors;
use super::Shared;

/// Rows written and index entries made stale by finished transactions. Bounded: past
/// `PURGE_QUEUE_MAX` items the queue is dropped and the next pass is a full one.
#[derive(Default)]
pub(super) struct PurgeQueue {
    pub(super) rows: Vec<(Arc<Table>, Vec<u8>)>,
    pub(super) entries: Vec<IndexEntryRef>,
    pub(super) full_pass: bool,
}

/// An index entry to check: (table, index, entry key, row key).
pub(super) type IndexEntryRef = (Arc<Table>, Arc<Index>, Vec<u8>, Vec<u8>);

/// Purge work items kept at most before falling back to a full pass.
const PURGE_QUEUE_MAX: usize = 200_000;

impl PurgeQueue {
    pub(super) fn overflowed(&mut self) -> bool {
        if self.rows.len() + self.entries.len() > PURGE_QUEUE_MAX {
            self.rows.clear();
            self.entries.clear();
            self.full_pass = true;
        }
        self.full_pass
    }
}

/// Drops versions no snapshot can see, and freezes old committed creators (below the
/// horizon) so readers skip the commit log for them (written only with another change:
/// `only_frozen`). `me` is the pruning transaction (0 for
/// the purge thread). The newest version is kept unless `drop_dead_newest` and it was
/// deleted before every snapshot: then the whole row is garbage.
pub(super) fn prune_versions(
    txns: &TxnManager,
    me: TxnId,
    versions: &mut Vec<Version>,
    drop_dead_newest: bool,
) -> Result<()> {
    let horizon = txns.horizon();
    let mut kept = Vec::with_capacity(versions.len());
    for (index, mut version) in versions.drain(..).enumerate() {
        let creator =
            if version.xmin == me { TxnStatus::InProgress } else { txns.status(version.xmin)? };
        if creator == TxnStatus::Aborted {
            continue;
        }
        let dead = version.xmax != 0
            && version.xmax != me
            && version.xmax < horizon
            && txns.status(version.xmax)? == TxnStatus::Committed;
        if dead && (index > 0 || drop_dead_newest) {
            // Superseded or deleted before every running snapshot began: nobody can see it.
            continue;
        }
        if creator == TxnStatus::Committed && version.xmin < horizon {
            version.xmin = FROZEN_TXN;
        }
        if version.xmax != 0
            && version.xmax != me
            && txns.status(version.xmax)? == TxnStatus::Aborted
        {
            version.xmax = 0;
        }
        kept.push(version);
    }
    *versions = kept;
    Ok(())
}

/// Whether pruning changed `before` into `after` only by freezing creators: same versions,
/// some `xmin`s now `FROZEN_TXN`.
fn only_frozen(before: &[Version], after: &[Version]) -> bool {
    before.len() == after.len()
        && before.iter().zip(after).all(|(old, new)| {
            (new.xmin == old.xmin || new.xmin == FROZEN_TXN)
                && new.xmax == old.xmax
                && new.row == old.row
        })
}

/// What one purge pass removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeStats {
    pub rows_rewritten: u64,
    pub rows_removed: u64,
    pub index_entries_removed: u64,
    /// Nodes removed from HNSW graphs (`vector_purge.rs`).
    pub vector_entries_removed: u64,
}

impl Shared {
    /// One pass over every table: prunes each row's versions (removing rows that no snapshot
    /// can see any more) and deletes index entries that no version of their row carries.
    /// Each row is handled under its row lock, like a writer, so a pass never races one.
    pub(super) fn purge(&self) -> Result<PurgeStats> {
        self.purge_queue.lock().full_pass = false;
        self.full_purge_passes.fetch_add(1, Ordering::AcqRel);
        let mut stats = PurgeStats::default();
        let finished = self.purge_every_row(&mut stats);
        self.note_unfinished(&finished);
        finished.map(|_| stats)
    }

    /// A pass that stopped early (shutdown) or failed leaves work it cannot name: a full pass
    /// is owed, so that `Engine::close_purged` never records a clean state that is not.
    pub(super) fn note_unfinished(&self, finished: &Result<bool>) {
        if !matches!(finished, Ok(true)) {
            self.purge_queue.lock().full_pass = true;
        }
    }

    /// The body of a full pass; Ok(false) if it stopped for shutdown.
    fn purge_every_row(&self, stats: &mut PurgeStats) -> Result<bool> {
        let tables: Vec<Arc<Table>> =
            self.tables.read().values().filter_map(|handle| handle.table().ok()).collect();
        self.purge_rows_of(tables, stats)
    }

    /// One pass over the named tables only (VACUUM by a role that may vacuum only some).
    /// It leaves the owed full pass, if any, to the purge thread.
    pub(super) fn purge_tables(&self, names: &[String]) -> Result<PurgeStats> {
        let tables = names.iter().map(|name| self.table(name)).collect::<Result<Vec<_>>>()?;
        let mut stats = PurgeStats::default();
        let finished = self.purge_rows_of(tables, &mut stats);
        self.note_unfinished(&finished);
        finished.map(|_| stats)
    }

    /// Prunes every row and index entry of `tables`; Ok(false) if it stopped for shutdown.
    fn purge_rows_of(&self, tables: Vec<Arc<Table>>, stats: &mut PurgeStats) -> Result<bool> {
        for table in tables {
            // A handle made stale by DDL during the pass only means purging trees nobody reads
            // any more, or missing a new index's entries until the next pass: both harmless.
            for entry in table.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
                if self.stopping.load(Ordering::Acquire) {
                    return Ok(false);
                }
                let (key, _) = entry?;
                let _ddl = self.ddl.read();
                // Whether old versions remain does not matter: the next full pass looks again.
                self.purge_row(&table, &key, stats)?;
            }
            for index in &table.indexes {
                for entry in
                    index.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
                {
                    if self.stopping.load(Ordering::Acquire) {
                        return Ok(false);
                    }
                    let (entry_key, row_key) = entry?;
                    let _ddl = self.ddl.read();
                    self.purge_index_entry(&table, index, &entry_key, &row_key, stats)?;
                }
            }
            if !self.purge_vector_indexes(&table, stats)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// One pass over the queued work: prunes each queued row (removing the index entries of
    /// the index values its pruned versions had) and checks each queued index entry. Rows an
    /// old snapshot still needs are queued again for a later pass.
    pub(super) fn purge_queued(&self) -> Result<PurgeStats> {
        let (rows, entries, full_pass) = {
            let mut queue = self.purge_queue.lock();
            (
                std::mem::take(&mut queue.rows),
                std::mem::take(&mut queue.entries),
                std::mem::take(&mut queue.full_pass),
            )
        };
        if full_pass {
            return self.purge();
        }
        let mut stats = PurgeStats::default();
        let finished = self.purge_items(rows, entries, &mut stats);
        self.note_unfinished(&finished);
        finished.map(|_| stats)
    }

    /// The body of a queued pass; Ok(false) if it stopped for shutdown (the items it took
    /// are then owed to a full pass).
    fn purge_items(
        &self,
        rows: Vec<(Arc<Table>, Vec<u8>)>,
        entries: Vec<IndexEntryRef>,
        stats: &mut PurgeStats,
    ) -> Result<bool> {
        let mut seen = std::collections::HashSet::new();
        let mut again = Vec::new();
        let mut vector_tables: Vec<Arc<Table>> = Vec::new();
        for (table, key) in rows {
            if self.stopping.load(Ordering::Acquire) {
                return Ok(false);
            }
            if !seen.insert((table.def.name.clone(), key.clone())) {
                continue;
            }
            // The current handle, so that indexes created since the write are cleaned too; a
            // dropped or truncated table's rows are gone.
            let _ddl = self.ddl.read();
            let Some(table) = self.current_with_tree(&table) else { continue };
            if !table.vector_indexes.is_empty()
                && !vector_tables.iter().any(|known| Arc::ptr_eq(known, &table))
            {
                vector_tables.push(Arc::clone(&table));
            }
            if self.purge_row(&table, &key, stats)? {
                again.push((table, key));
            }
        }
        for table in vector_tables {
            if !self.purge_stale_vector_indexes(&table, stats)? {
                return Ok(false);
            }
        }
        for (table, index, entry_key, row_key) in entries {
            if self.stopping.load(Ordering::Acquire) {
                return Ok(false);
            }
            let _ddl = self.ddl.read();
            let Some(table) = self.current_with_tree(&table) else { continue };
            if !table.indexes.iter().any(|current| Arc::ptr_eq(current, &index)) {
                // Dropped (or rebuilt by a truncation): nobody reads that tree.
                continue;
            }
            self.purge_index_entry(&table, &index, &entry_key, &row_key, stats)?;
        }
        if !again.is_empty() {
            let mut queue = self.purge_queue.lock();
            if !queue.overflowed() {
                queue.rows.extend(again);
                queue.overflowed();
            }
            self.changed.store(true, Ordering::Release);
        }
        Ok(true)
    }

    /// Prunes one row and deletes the index entries of index values that only its removed
    /// versions had (a full pass would find them in its index scan too; deleting them here
    /// saves that lookup). Returns whether the row still holds old versions (to retry later).
    fn purge_row(&self, table: &Table, key: &[u8], stats: &mut PurgeStats) -> Result<bool> {
        let _guard = self.row_lock(key, &table.def.name);
        let Some(bytes) = table.tree.get(key)? else { return Ok(false) };
        let before = decode_versions(&bytes)?;
        let mut versions = before.clone();
        prune_versions(&self.txns, 0, &mut versions, true)?;
        stats.index_entries_removed += drop_stale_entries(table, key, &before, &versions)?;
        note_uncarried_vectors(table, &before, &versions)?;
        if versions.is_empty() {
            table.tree.delete(key)?;
            stats.rows_removed += 1;
            return Ok(false);
        }
        // Freezing alone is not worth a write (a tree change and a WAL record per row: after a
        // load, the whole table again): the commit log keeps every outcome, so an unfrozen
        // committed creator reads the same; the row's next write freezes it for free.
        if !only_frozen(&before, &versions) {
            let pruned = encode_versions(&versions);
            if pruned != bytes {
                table.tree.insert(key, &pruned)?;
                stats.rows_rewritten += 1;
            }
        }
        Ok(versions.len() > 1 || versions[0].xmax != 0)
    }

    fn purge_index_entry(
        &self,
        table: &Table,
        index: &Index,
        entry_key: &[u8],
        row_key: &[u8],
        stats: &mut PurgeStats,
    ) -> Result<()> {
        let Some(prefix) = entry_key.strip_suffix(row_key) else {
            return Err(EngineError::Corrupt {
                what: "index entry",
                detail: format!("index={} entry does not end with its row key", index.def.name),
            });
        };
        let _guard = self.row_lock(row_key, &table.def.name);
        let carried = match table.tree.get(row_key)? {
            Some(bytes) => {
                let mut carried = false;
                for version in decode_versions(&bytes)? {
                    if index.prefix(&table.layout.decode(&version.row)?)? == prefix {
                        carried = true;
                        break;
                    }
                }
                carried
            }
            None => false,
        };
        if !carried {
            index.tree.delete(entry_key)?;
            stats.index_entries_removed += 1;
        }
        Ok(())
    }
}

/// How often the purge thread looks for work.
const PURGE_INTERVAL: Duration = Duration::from_millis(500);

pub(super) fn purge_loop(shared: &Shared, stop: &(Mutex<bool>, parking_lot::Condvar)) {
    let (flag, condvar) = stop;
    loop {
        {
            let mut stopped = flag.lock();
            if !*stopped {
                condvar.wait_for(&mut stopped, PURGE_INTERVAL);
            }
            if *stopped {
                return;
            }
        }
        if shared.changed.swap(false, Ordering::AcqRel) {
            if let Err(error) = shared.purge_queued() {
                tracing::warn!(%error, "purge pass failed");
            }
        }
        match shared.reap_graves() {
            Ok(0) => {}
            Ok(pages) => tracing::debug!(pages, "pages of dropped trees freed"),
            Err(error) => tracing::warn!(%error, "freeing the pages of a dropped tree failed"),
        }
    }
}
