//! Index or full scan, by cost (design 020, "Access paths"): the rules of plan/access.rs
//! pick the index whose leading columns a scan's conjuncts pin; this decides whether reading
//! through it is cheaper than reading the whole table, as PostgreSQL's cost_index against
//! cost_seqscan.
//!
//! A secondary index returns keys: each row it matches costs a lookup in the clustered
//! tree (`LOOKUP_COST`), where a full scan costs `SCAN_ROW_COST` per row of the table. A key
//! list on the clustering key costs one lookup per key, then its rows. A range on the
//! clustering key is never worse than the full scan (it reads a subset of the same leaves,
//! in order) and is kept. The choice needs statistics: a table never analyzed keeps the
//! rule's index, since nothing says how many rows match (PostgreSQL would guess 0.5% for an
//! equality and a third for a range).
//!
//! Measured on a 1M-row table (id bigint key, int column with a secondary index,
//! docs/BENCHMARKS.md "Index or full scan"): an index scan costs about 4.5 us per matched
//! row against 0.55 us per table row for the full scan, about 8:1, near the join order's
//! 10:1 lookup price used here; the two cross at about a tenth of the table.

use crate::catalog::{IndexKind, TableMeta};
use crate::convert::count_f64;
use crate::optimize::estimate::{Estimator, TableColumns};
use crate::optimize::join_order::{LOOKUP_COST, SCAN_ROW_COST};
use crate::plan::*;

/// Keys assumed in a `= ANY (array)` key list whose array is known only when the scan starts.
const ARRAY_KEYS_ASSUMED: f64 = 10.0;

impl Estimator<'_> {
    /// Whether a full scan of `table` is cheaper than `access` (chosen by the rules), the
    /// scan testing `filter` on every row either way. False without statistics.
    pub fn full_scan_is_cheaper(
        &self,
        table: &TableMeta,
        access: &Access,
        filter: Option<&Expr>,
    ) -> bool {
        let Some(statistics) = self.catalog.table_statistics(&table.name) else { return false };
        let table_rows = statistics.rows.max(1.0);
        let full_cost = SCAN_ROW_COST * table_rows;
        let rows = self.access_rows_of(table, access, filter, table_rows);
        let access_cost = match access {
            Access::Index { .. } => LOOKUP_COST * rows,
            Access::Keys { name, keys, array } => {
                let key_count = match array {
                    Some(_) => ARRAY_KEYS_ASSUMED,
                    None => count_f64(keys.len()),
                };
                match name {
                    Some(_) => LOOKUP_COST * (key_count + rows),
                    None => LOOKUP_COST * key_count + SCAN_ROW_COST * rows,
                }
            }
            Access::Full | Access::Primary { .. } | Access::Nearest { .. } => return false,
        };
        debug_assert!(access_cost >= 0.0 && full_cost > 0.0);
        access_cost > full_cost
    }

    /// Rows a secondary index's range or a key list reads (before the rest of the filter);
    /// the table's rows for the other accesses.
    pub(super) fn access_rows(
        &self,
        table: &TableMeta,
        access: &Access,
        filter: Option<&Expr>,
    ) -> f64 {
        self.access_rows_of(table, access, filter, self.table_rows(table).max(1.0))
    }

    /// `access_rows` for a table of `table_rows` rows (at least one).
    fn access_rows_of(
        &self,
        table: &TableMeta,
        access: &Access,
        filter: Option<&Expr>,
        table_rows: f64,
    ) -> f64 {
        debug_assert!(table_rows >= 1.0);
        match access {
            Access::Index { name, lower, upper } => {
                let width = bound_width(lower).max(bound_width(upper));
                self.prefix_rows(table, Some(name), width, filter, table_rows)
            }
            Access::Keys { name, keys, array } => {
                let width = keys.first().map_or(0, Vec::len) + usize::from(array.is_some());
                self.prefix_rows(table, name.as_deref(), width, filter, table_rows)
            }
            Access::Full | Access::Primary { .. } | Access::Nearest { .. } => table_rows,
        }
    }

    /// Rows of `table` whose values in the first `width` columns of the index `name` (the
    /// clustering key when None) satisfy the conjuncts of `filter` reading only those
    /// columns: the rows an access bounded by them reads.
    fn prefix_rows(
        &self,
        table: &TableMeta,
        name: Option<&str>,
        width: usize,
        filter: Option<&Expr>,
        table_rows: f64,
    ) -> f64 {
        let index = table.indexes.iter().find(|index| match name {
            Some(name) => index.name == name,
            None => index.kind == IndexKind::Clustered,
        });
        let Some(index) = index else { return table_rows };
        let prefix = &index.columns[..width.min(index.columns.len())];
        let mut conjuncts = Vec::new();
        if let Some(filter) = filter {
            split_conjuncts(filter.clone(), &mut conjuncts);
        }
        conjuncts.retain(|conjunct| {
            let mut read = Vec::new();
            conjunct.columns(&mut read);
            !read.is_empty() && read.iter().all(|column| prefix.contains(column))
        });
        let columns = TableColumns { estimator: self, table, rows: table_rows };
        table_rows * self.selectivity(&conjuncts, &columns)
    }
}

/// The number of key columns a bound gives values for.
fn bound_width(bound: &std::ops::Bound<Vec<Expr>>) -> usize {
    match bound {
        std::ops::Bound::Included(values) | std::ops::Bound::Excluded(values) => values.len(),
        std::ops::Bound::Unbounded => 0,
    }
}
