//! The check of an HNSW index against its table (docs/design/014-vector-indexes.md,
//! "Invariant check"): the graph's own invariants (`Hnsw::check_graph`), then every row the
//! transaction sees with an indexable vector must have an entry with that row key and
//! vector, and each entry is classified as matching a version of its row or dead (rolled
//! back, deleted, updated away: it waits for a purge of the graph, which does not exist
//! yet). A partial index's rows and versions are those its predicate accepts. The
//! snapshot is taken before the graph is walked, and a row's entries are added
//! before its transaction commits, so every row the snapshot sees has its entries in the
//! walk even with concurrent inserts.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Bound;

use tierdb_access::Direction;
use tierdb_vector::hnsw::{CheckReport, VIOLATIONS_LISTED_MAX};

use crate::error::{EngineError, Result};
use crate::row::decode_versions;

use super::table::{RowKey, Table, TableRef, VectorGraph, VectorIndex};
use super::vector_index::vector_of;
use super::Transaction;

/// What `Transaction::check_vector_index` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorIndexCheck {
    /// The graph's own invariants.
    pub graph: CheckReport,
    /// Rows the transaction sees whose vector the index holds (not NULL, not a zero vector
    /// under cosine, and accepted by a partial index's predicate).
    pub rows_indexed: u64,
    /// Of those, rows without an entry of their row key and vector (each a violation).
    pub rows_missing: u64,
    /// Entries whose row still has a version with the entry's vector (that a partial
    /// index's predicate accepts).
    pub entries_live: u64,
    /// Entries whose row has no version with the entry's vector (or no longer exists).
    pub entries_dead: u64,
    /// Every violation, the graph's and the missing rows': their count, and the first
    /// `VIOLATIONS_LISTED_MAX` as text.
    pub violation_count: u64,
    pub violations: Vec<String>,
}

impl VectorIndexCheck {
    pub fn is_ok(&self) -> bool {
        self.violation_count == 0
    }

    fn violation(&mut self, detail: String) {
        self.violation_count += 1;
        if self.violations.len() < VIOLATIONS_LISTED_MAX {
            self.violations.push(detail);
        }
    }
}

/// A vector as the table stores it: its f32 values, little-endian.
fn stored_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|value| value.to_le_bytes()).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(2 * bytes.len()), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

/// The vectors of every entry of the graph, by row key, as the table stores them.
type Entries = HashMap<RowKey, Vec<Vec<u8>>>;

impl Transaction {
    /// Checks the HNSW index `index` of `table` (its graph, then against the rows this
    /// transaction sees): a report of counts and violations, not an error; errors only
    /// when a page cannot be read or the index does not exist (42P01). Inserts into the
    /// index wait while its graph is walked.
    pub fn check_vector_index(
        &mut self,
        table: &(impl TableRef + ?Sized),
        index: &str,
    ) -> Result<VectorIndexCheck> {
        self.run(|txn| {
            let table = table.resolve(txn)?.table()?;
            let Some(index) = table.vector_indexes.iter().find(|found| found.def.name == index)
            else {
                return Err(EngineError::UndefinedTable { name: index.to_string() });
            };
            let mut entries = Entries::new();
            let VectorGraph::Hnsw(graph) = &index.graph else {
                return Err(EngineError::InvalidRow {
                    detail: format!("\"{}\" is not an hnsw index", index.def.name),
                });
            };
            let graph = graph.check_graph(&mut |_, vector, key| {
                entries.entry(key.to_vec()).or_default().push(stored_bytes(vector));
            })?;
            let mut check = VectorIndexCheck {
                violation_count: graph.violation_count,
                violations: graph
                    .violations
                    .iter()
                    .map(|violation| format!("page {}: {}", violation.page_id, violation.detail))
                    .collect(),
                graph,
                rows_indexed: 0,
                rows_missing: 0,
                entries_live: 0,
                entries_dead: 0,
            };
            txn.check_rows(&table, index, &mut entries, &mut check)?;
            // Entries whose row key names no row at all.
            let orphaned: usize = entries.values().map(Vec::len).sum();
            check.entries_dead += u64::try_from(orphaned).expect("a count fits u64");
            Ok(check)
        })
    }

    /// Walks the table: classifies the entries of each row (removed from `entries`) and
    /// checks that the row's visible vector has one.
    fn check_rows(
        &self,
        table: &Table,
        index: &VectorIndex,
        entries: &mut Entries,
        check: &mut VectorIndexCheck,
    ) -> Result<()> {
        let column = index.def.column;
        let metric = index.def.parameters.metric;
        let predicate = self.index_predicate(&index.def.name);
        let covers = |row: &[crate::row::Value]| match &predicate {
            Some(predicate) => predicate.matches(row),
            None => Ok(true),
        };
        for stored in table.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            let (key, bytes) = stored?;
            let vectors = entries.remove(&key).unwrap_or_default();
            let mut versions = Vec::new();
            for version in decode_versions(&bytes)? {
                let row = table.layout.decode(&version.row)?;
                if let Some(vector) = vector_of(&row, column, metric)? {
                    if covers(&row)? {
                        versions.push(stored_bytes(&vector));
                    }
                }
            }
            let live = vectors.iter().filter(|vector| versions.contains(vector)).count();
            check.entries_live += u64::try_from(live).expect("a count fits u64");
            check.entries_dead += u64::try_from(vectors.len() - live).expect("a count fits u64");
            let Some(row) = self.visible_row_stored(&table.layout, &bytes)? else { continue };
            let Some(vector) = vector_of(&row, column, metric)? else { continue };
            if !index.graph.metric().indexable(&vector) || !covers(&row)? {
                continue;
            }
            check.rows_indexed += 1;
            if !vectors.contains(&stored_bytes(&vector)) {
                check.rows_missing += 1;
                check.violation(format!("row key={} has no entry of its vector", hex(&key)));
            }
        }
        Ok(())
    }
}
