//! Purge of vector indexes (docs/design/014-vector-indexes.md, "Purge"): an HNSW index's
//! nodes whose row no snapshot can see with that vector any more are removed from the
//! graph, on VACUUM and every full purge pass, and by the purge thread once the rows its
//! queued passes pruned may have left a tenth of an index's nodes dead.

use std::sync::atomic::Ordering;

use crate::error::{EngineError, Result};
use crate::row::{decode_versions, Version};
use crate::txn::TxnStatus;

use super::purge::PurgeStats;
use super::table::{Table, VectorGraph, VectorIndex};
use super::vector_index::vector_of;
use super::Shared;

/// The purge thread purges an index's graph once the vectors its queued passes left
/// uncarried reach this fraction (1 / n) of the graph's nodes (autovacuum's scale factor is
/// 0.2; a graph search pays for dead nodes on every query, so sooner).
const STALE_FRACTION_DENOMINATOR: u64 = 10;

impl Shared {
    /// Purges the graphs of `table`'s HNSW indexes: Ok(false) if it stopped for shutdown.
    pub(super) fn purge_vector_indexes(
        &self,
        table: &Table,
        stats: &mut PurgeStats,
    ) -> Result<bool> {
        for index in &table.vector_indexes {
            if !self.purge_vector_index(table, index, stats)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Purges the graphs of `table`'s HNSW indexes whose queued passes found enough dead
    /// vectors (`VectorIndex::stale`); Ok(false) if it stopped for shutdown.
    pub(super) fn purge_stale_vector_indexes(
        &self,
        table: &Table,
        stats: &mut PurgeStats,
    ) -> Result<bool> {
        for index in &table.vector_indexes {
            let VectorGraph::Hnsw(graph) = &index.graph else { continue };
            let stale = index.stale.load(Ordering::Acquire);
            if stale == 0 || stale * STALE_FRACTION_DENOMINATOR < graph.node_count()? {
                continue;
            }
            if !self.purge_vector_index(table, index, stats)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn purge_vector_index(
        &self,
        table: &Table,
        index: &VectorIndex,
        stats: &mut PurgeStats,
    ) -> Result<bool> {
        // ivfflat: entries of dead rows stay in their lists (design 014, known issues).
        let VectorGraph::Hnsw(graph) = &index.graph else { return Ok(true) };
        index.stale.store(0, Ordering::Release);
        let mut is_dead = |key: &[u8], vector: &[f32]| {
            if self.stopping.load(Ordering::Acquire) {
                return Err(EngineError::ShuttingDown);
            }
            self.vector_entry_dead(table, index, key, vector)
        };
        match graph.purge(&mut is_dead) {
            Ok(purged) => {
                stats.vector_entries_removed += purged.nodes_removed;
                Ok(true)
            }
            Err(EngineError::ShuttingDown) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Whether the entry (`key`, `vector`) of `index` is dead: no stored version of its row
    /// carries the vector (and, for a partial index, is accepted by its predicate: no scan
    /// returns a version it rejects), and no running transaction has a version of the row (its undo,
    /// e.g. a ROLLBACK TO SAVEPOINT over an update of its own new row in place, could bring
    /// the vector back without a new entry). Pruning only drops versions no snapshot can
    /// see, so no snapshot needs a dead entry; and a version that carries the vector again
    /// later comes with its own new entry. Read under the row lock, as writers write.
    fn vector_entry_dead(
        &self,
        table: &Table,
        index: &VectorIndex,
        key: &[u8],
        vector: &[f32],
    ) -> Result<bool> {
        let _ddl = self.ddl.read();
        let _guard = self.row_lock(key, &table.def.name);
        let Some(bytes) = table.tree.get(key)? else { return Ok(true) };
        for version in decode_versions(&bytes)? {
            if self.held_by_running(&version)? {
                return Ok(false);
            }
            let row = table.layout.decode(&version.row)?;
            let stored = vector_of(&row, index.def.column, index.def.parameters.metric)?;
            // A predicate that fails to evaluate keeps the entry (conservative: a kept dead
            // entry costs a skipped row, a removed live one a lost row).
            if stored.is_some_and(|stored| stored == vector)
                && self.index_predicates.covers_name(&index.def.name, &row).unwrap_or(true)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn held_by_running(&self, version: &Version) -> Result<bool> {
        Ok(self.txns.status(version.xmin)? == TxnStatus::InProgress
            || (version.xmax != 0 && self.txns.status(version.xmax)? == TxnStatus::InProgress))
    }
}

/// Counts, on each vector index of `table`, the vectors that pruning `before` into `after`
/// left carried by no version (the dead entries the purge thread's threshold counts).
pub(super) fn note_uncarried_vectors(
    table: &Table,
    before: &[Version],
    after: &[Version],
) -> Result<()> {
    if table.vector_indexes.is_empty() || before.len() == after.len() {
        return Ok(());
    }
    for index in &table.vector_indexes {
        let column = index.def.column;
        let value = |version: &Version| -> Result<_> {
            Ok(table.layout.decode(&version.row)?.get(column).cloned())
        };
        let kept = after.iter().map(value).collect::<Result<Vec<_>>>()?;
        let mut uncarried = 0;
        for version in before {
            if !after.iter().any(|new| new.row == version.row) && !kept.contains(&value(version)?) {
                uncarried += 1;
            }
        }
        index.stale.fetch_add(uncarried, Ordering::AcqRel);
    }
    Ok(())
}
