//! Sorting: ORDER BY comparison, the bounded top-N sort of ORDER BY ... LIMIT, and the
//! external merge sort (`tierdb_access::ExternalSort`) that every sort becomes when its rows
//! pass work_mem, as PostgreSQL's tuplesort does.
//!
//! ```text
//! LIMIT n, 2n rows fit ──► top-N: keep 2n, sort, cut to n        (top-N heapsort)
//!                  │ (the next row does not fit)
//!                  ▼
//! no LIMIT ───────────► ExternalSort: in memory while it fits    (quicksort)
//!                                     runs on the temp space past it (external merge)
//! ```

use tierdb_access::{ExternalSort, SortStats};

use super::spill::{storage_error, SpillRow, SpillTarget};
use super::*;

/// How a sort node ran, for EXPLAIN ANALYZE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortMethod {
    TopN,
    Quicksort,
    ExternalMerge,
}

/// What a memory-bounded operator did, for EXPLAIN ANALYZE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperatorMemory {
    Sort {
        method: SortMethod,
        memory_bytes: usize,
        disk_bytes: u64,
    },
    /// Hash aggregate, hash join, DISTINCT and set operations: batches 1 means no spill.
    Hash {
        batches: u64,
        memory_bytes: usize,
        disk_bytes: u64,
    },
}

enum SortState<F> {
    /// ORDER BY ... LIMIT: at most 2 x `keep` rows, cut back to `keep` when full.
    TopN {
        rows: Vec<Row>,
        keep: usize,
        grant: tierdb_storage::MemoryGrant,
    },
    External(ExternalSort<SpillRow, F>),
}

/// Calls `sink` with the rows of `input` in `keys` order, only the first `keep` if given.
pub(crate) fn run_sorted(
    input: &Plan,
    keys: &[SortKey],
    keep: Option<usize>,
    plan_id: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let compare = |a: &SpillRow, b: &SpillRow| compare_rows(&a.0, &b.0, keys);
    let target = SpillTarget::of(ctx);
    let grant = target.grant(ctx.budget.work_mem_bytes);
    let mut state = Some(match keep {
        Some(keep) => SortState::TopN { rows: Vec::new(), keep, grant },
        None => {
            SortState::External(ExternalSort::new(&target.space, &target.usage, grant, compare))
        }
    });
    run(input, ctx, probe, &mut |_, row| {
        let current = state.take().expect("the state is put back after every row");
        state = Some(push(current, row, &target, keys, compare)?);
        Ok(true)
    })?;
    match state.expect("the input ran to its end") {
        SortState::TopN { mut rows, keep, grant } => {
            rows.sort_by(|a, b| compare_rows(a, b, keys));
            rows.truncate(keep);
            let memory = OperatorMemory::Sort {
                method: SortMethod::TopN,
                memory_bytes: grant.peak_bytes(),
                disk_bytes: 0,
            };
            record_memory(ctx, plan_id, memory);
            for row in rows {
                if !sink(ctx, row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        SortState::External(sort) => {
            let mut sorted = sort.finish().map_err(storage_error)?;
            record_memory(ctx, plan_id, sort_memory(sorted.stats()));
            let mut left = keep.unwrap_or(usize::MAX);
            while left > 0 {
                let Some(SpillRow(row)) = sorted.next_record().map_err(storage_error)? else {
                    break;
                };
                left -= 1;
                if !sink(ctx, row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

fn push<F: Fn(&SpillRow, &SpillRow) -> Ordering + Copy>(
    state: SortState<F>,
    row: Row,
    target: &SpillTarget,
    keys: &[SortKey],
    compare: F,
) -> Result<SortState<F>> {
    match state {
        SortState::External(mut sort) => {
            sort.push(SpillRow(row)).map_err(storage_error)?;
            Ok(SortState::External(sort))
        }
        SortState::TopN { mut rows, keep, mut grant } => {
            let size = row_size(&row);
            if !grant.try_grow(size) {
                // 2 x LIMIT rows do not fit: an external sort of everything, cut at the end.
                let limit_bytes = grant.limit_bytes();
                drop(grant);
                let grant = target.grant(limit_bytes);
                let mut sort = ExternalSort::new(&target.space, &target.usage, grant, compare);
                for held in rows.into_iter().chain(std::iter::once(row)) {
                    sort.push(SpillRow(held)).map_err(storage_error)?;
                }
                return Ok(SortState::External(sort));
            }
            rows.push(row);
            if rows.len() >= keep.saturating_mul(2).max(16) {
                rows.sort_by(|a, b| compare_rows(a, b, keys));
                for dropped in rows.drain(keep.min(rows.len())..) {
                    grant.shrink(row_size(&dropped));
                }
            }
            Ok(SortState::TopN { rows, keep, grant })
        }
    }
}

pub(crate) fn sort_memory(stats: SortStats) -> OperatorMemory {
    if stats.runs == 0 {
        OperatorMemory::Sort {
            method: SortMethod::Quicksort,
            memory_bytes: stats.peak_memory_bytes,
            disk_bytes: 0,
        }
    } else {
        OperatorMemory::Sort {
            method: SortMethod::ExternalMerge,
            memory_bytes: stats.peak_memory_bytes,
            disk_bytes: stats.spilled_bytes,
        }
    }
}

/// Keeps what an operator did with memory for EXPLAIN ANALYZE.
pub(crate) fn record_memory(ctx: &mut Ctx<'_>, plan_id: usize, memory: OperatorMemory) {
    if ctx.analyze {
        ctx.stats_mut(plan_id).memory = Some(memory);
    }
}

pub fn compare_rows(a: &[Datum], b: &[Datum], keys: &[SortKey]) -> Ordering {
    for key in keys {
        let ordering = a[key.column].sort_compare(&b[key.column], key.nulls_first);
        let ordering = if key.descending && !(a[key.column].is_null() || b[key.column].is_null()) {
            ordering.reverse()
        } else {
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}
