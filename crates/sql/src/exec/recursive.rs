//! WITH RECURSIVE, as PostgreSQL's RecursiveUnion: the non-recursive term's rows go out and
//! become the work table; each round runs the recursive term, whose `WorkTable` scans read
//! the previous round's rows, sends its new rows and makes them the next work table; the
//! rounds end when one adds no row. Under UNION (not ALL) a row equal (as GROUP BY compares)
//! to one already produced is dropped, which is what ends most graph walks.
//!
//! The work table and UNION's set of seen rows are held in memory (PostgreSQL keeps them
//! in a tuplestore and a hash table that may spill). A query that never stops adding rows
//! runs until it is cancelled or statement_timeout ends it, as in PostgreSQL; the cancel
//! flag is checked every round.

use std::collections::HashSet;

use super::aggregate::group_key;
use super::*;

/// A RecursiveUnion node's parts.
pub(super) struct RecursiveUnion<'p> {
    pub base: &'p Plan,
    pub step: &'p Plan,
    pub all: bool,
    pub work_table: usize,
}

pub(super) fn run_recursive_union(
    union: &RecursiveUnion<'_>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut round = Vec::new();
    let mut more = run(union.base, ctx, probe, &mut |ctx, row| {
        if !union.all && !seen.insert(group_key(&row)) {
            return Ok(true);
        }
        round.push(row.clone());
        sink(ctx, row)
    })?;
    while more && !round.is_empty() {
        ctx.check_cancel()?;
        // A nested run of the same CTE (a correlated subquery re-entering it) keeps its
        // own work table: the outer one is restored afterwards.
        let saved = ctx.work_tables.insert(union.work_table, std::mem::take(&mut round));
        let outcome = run(union.step, ctx, probe, &mut |ctx, row| {
            if !union.all && !seen.insert(group_key(&row)) {
                return Ok(true);
            }
            round.push(row.clone());
            sink(ctx, row)
        });
        match saved {
            Some(rows) => ctx.work_tables.insert(union.work_table, rows),
            None => ctx.work_tables.remove(&union.work_table),
        };
        more = outcome?;
    }
    Ok(more)
}

/// The rows of the previous round of RecursiveUnion `work_table`.
pub(super) fn scan_work_table(
    work_table: usize,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let rows = ctx.work_tables.get(&work_table).cloned().ok_or_else(|| {
        SqlError::internal("a recursive query's work table is read outside its recursive term")
    })?;
    for row in rows {
        if !sink(ctx, row)? {
            return Ok(false);
        }
    }
    Ok(true)
}
