//! The executor: runs plans push-style. Each operator calls a sink for every row it
//! produces; the sink answers whether to continue, so LIMIT stops scans early and rows
//! stream from the engine in bounded pages (`SCAN_PAGE_ROWS`) without materializing tables.
//! Blocking operators (sort, hash aggregation, hash join build, DISTINCT) account their
//! memory against the statement's work_mem budget and fail with 53200 past it (spilling to
//! the local tier replaces that failure in a later change; the operators keep rows in one
//! place so that change is local).
//!
//! With EXPLAIN ANALYZE each node records rows, loops, inclusive time and page accesses
//! (DRAM hits, tier hits, volume reads from the page store's per-thread counters), each
//! measured around the node's own work minus the time spent in its consumer.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::time::Instant;

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use tierdb_common::{op_counters_snapshot, OpCounters};
use tierdb_engine::{Transaction, Value};

use crate::depth;
use crate::error::{Result, SqlError};
use crate::functions::{self, FunctionContext};
use crate::plan::*;
use crate::types::{self, Datum, SqlType};

pub type Row = Vec<Datum>;

/// Rows fetched from the engine per call.
pub const SCAN_PAGE_ROWS: usize = 256;

/// Per-node statistics for EXPLAIN ANALYZE.
#[derive(Clone, Debug, Default)]
pub struct NodeStats {
    pub rows: u64,
    pub loops: u64,
    pub time_ns: u64,
    pub counters: OpCounters,
}

/// Memory accounting for one statement's blocking operators.
pub struct MemoryBudget {
    pub limit_bytes: usize,
    pub used_bytes: usize,
    pub peak_bytes: usize,
}

impl MemoryBudget {
    pub fn new(limit_bytes: usize) -> MemoryBudget {
        MemoryBudget { limit_bytes, used_bytes: 0, peak_bytes: 0 }
    }

    pub fn reserve(&mut self, bytes: usize, operator: &str) -> Result<()> {
        self.used_bytes += bytes;
        self.peak_bytes = self.peak_bytes.max(self.used_bytes);
        if self.used_bytes > self.limit_bytes {
            return Err(SqlError::new(
                "53200",
                format!(
                    "out of memory: {operator} needs more than work_mem={} kB (spilling to the local tier is not built yet; raise work_mem)",
                    self.limit_bytes / 1024
                ),
            ));
        }
        Ok(())
    }

    pub fn release(&mut self, bytes: usize) {
        self.used_bytes = self.used_bytes.saturating_sub(bytes);
    }
}

pub fn row_size(row: &[Datum]) -> usize {
    row.iter().map(Datum::memory_size).sum::<usize>() + std::mem::size_of::<Row>()
}

/// Session facts for functions.
pub struct SessionInfo<'a> {
    pub database: &'a str,
    pub user: &'a str,
    pub backend_pid: i32,
    pub catalog: &'a crate::catalog::Catalog,
}

pub struct Ctx<'a> {
    pub txn: Option<&'a mut Transaction>,
    pub params: &'a [Datum],
    pub outer: Vec<Row>,
    pub subquery_cache: HashMap<usize, Vec<Row>>,
    pub stats: Vec<NodeStats>,
    pub analyze: bool,
    pub budget: MemoryBudget,
    pub session: &'a SessionInfo<'a>,
    pub statement_time_micros: i64,
    /// The statement's cancel flag and statement_timeout deadline (checked per batch).
    pub interrupt: Option<&'a tierdb_engine::WaitLimits>,
}

impl<'a> Ctx<'a> {
    fn txn(&mut self) -> Result<&mut Transaction> {
        match self.txn.as_deref_mut() {
            Some(txn) => Ok(txn),
            None => Err(SqlError::unsupported("subqueries are not supported in this position")),
        }
    }

    fn check_cancel(&self) -> Result<()> {
        if let Some(limits) = self.interrupt {
            limits.check()?;
        }
        Ok(())
    }

    fn stats_mut(&mut self, id: usize) -> &mut NodeStats {
        if self.stats.len() <= id {
            self.stats.resize(id + 1, NodeStats::default());
        }
        &mut self.stats[id]
    }
}

pub type Sink<'s> = dyn FnMut(&mut Ctx<'_>, Row) -> Result<bool> + 's;

/// Runs `plan`, calling `sink` per row. Returns false if the sink stopped it.
pub fn run(plan: &Plan, ctx: &mut Ctx<'_>, probe: &[Datum], sink: &mut Sink<'_>) -> Result<bool> {
    if !ctx.analyze {
        return run_node(plan, ctx, probe, sink);
    }
    let id = plan.id;
    let start = Instant::now();
    let counters_start = op_counters_snapshot();
    let mut downstream_ns = 0u64;
    let mut downstream_counters = OpCounters::default();
    let mut rows = 0u64;
    let outcome = {
        let mut measured = |ctx: &mut Ctx<'_>, row: Row| -> Result<bool> {
            rows += 1;
            let t0 = Instant::now();
            let c0 = op_counters_snapshot();
            let result = sink(ctx, row);
            downstream_ns += u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let spent = op_counters_snapshot().since(&c0);
            add_counters(&mut downstream_counters, &spent);
            result
        };
        run_node(plan, ctx, probe, &mut measured)
    };
    let total_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut own = op_counters_snapshot().since(&counters_start);
    subtract_counters(&mut own, &downstream_counters);
    let stats = ctx.stats_mut(id);
    stats.rows += rows;
    stats.loops += 1;
    stats.time_ns += total_ns.saturating_sub(downstream_ns);
    add_counters(&mut stats.counters, &own);
    outcome
}

fn add_counters(into: &mut OpCounters, from: &OpCounters) {
    into.dram_hits += from.dram_hits;
    into.tier_hits += from.tier_hits;
    into.volume_reads += from.volume_reads;
    into.pages_dirtied += from.pages_dirtied;
    into.pages_written += from.pages_written;
}

fn subtract_counters(into: &mut OpCounters, from: &OpCounters) {
    into.dram_hits = into.dram_hits.saturating_sub(from.dram_hits);
    into.tier_hits = into.tier_hits.saturating_sub(from.tier_hits);
    into.volume_reads = into.volume_reads.saturating_sub(from.volume_reads);
    into.pages_dirtied = into.pages_dirtied.saturating_sub(from.pages_dirtied);
    into.pages_written = into.pages_written.saturating_sub(from.pages_written);
}

/// Collects every row of a plan.
pub fn collect(plan: &Plan, ctx: &mut Ctx<'_>, probe: &[Datum]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    run(plan, ctx, probe, &mut |_, row| {
        rows.push(row);
        Ok(true)
    })?;
    Ok(rows)
}

fn run_node(plan: &Plan, ctx: &mut Ctx<'_>, probe: &[Datum], sink: &mut Sink<'_>) -> Result<bool> {
    depth::check_stack_depth()?;
    match &plan.kind {
        PlanKind::OneRow => sink(ctx, Vec::new()),
        PlanKind::Values { rows } => {
            for row in rows {
                let values =
                    row.iter().map(|expr| eval(expr, probe, ctx)).collect::<Result<Row>>()?;
                if !sink(ctx, values)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        PlanKind::Scan { table, access, filter, emit_key, backward } => {
            scan(table, access, filter.as_ref(), *emit_key, *backward, plan, ctx, probe, sink)
        }
        PlanKind::SystemView { name } => {
            let rows = crate::system::view_rows(name, ctx.session.catalog, ctx)?;
            for row in rows {
                if !sink(ctx, row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        PlanKind::Series { start, stop, step } => {
            series(start, stop, step.as_ref(), &plan.columns[0].ty, ctx, probe, sink)
        }
        PlanKind::Filter { input, predicate } => run(input, ctx, probe, &mut |ctx, row| {
            if truthy(&eval(predicate, &row, ctx)?) {
                sink(ctx, row)
            } else {
                Ok(true)
            }
        }),
        PlanKind::LockRows { input, table, mode, policy, recheck } => {
            let lock = crate::locking::RowLocker { table, mode: *mode, policy: *policy, recheck };
            run(input, ctx, probe, &mut |ctx, row| lock.pass(ctx, row, sink))
        }
        PlanKind::Project { input, exprs } => run(input, ctx, probe, &mut |ctx, row| {
            let projected = project(exprs, row, ctx)?;
            sink(ctx, projected)
        }),
        PlanKind::NestedLoopJoin { left, right, kind, on } => {
            let right_rows = collect(right, ctx, probe)?;
            let width = right.arity();
            let bytes: usize = right_rows.iter().map(|row| row_size(row)).sum();
            ctx.budget.reserve(bytes, "nested loop join")?;
            let outcome = run(left, ctx, probe, &mut |ctx, left_row| {
                join_row(left_row, &right_rows, on.as_ref(), *kind, width, ctx, sink)
            });
            ctx.budget.release(bytes);
            outcome
        }
        PlanKind::HashJoin { left, right, kind, left_keys, right_keys, residual } => hash_join(
            left,
            right,
            *kind,
            left_keys,
            right_keys,
            residual.as_ref(),
            ctx,
            probe,
            sink,
        ),
        PlanKind::IndexJoin { left, right, kind, residual } => {
            let width = right.arity();
            run(left, ctx, probe, &mut |ctx, left_row| {
                let mut matches = Vec::new();
                run(right, ctx, &left_row, &mut |_, right_row| {
                    matches.push(right_row);
                    Ok(true)
                })?;
                join_row(left_row, &matches, residual.as_ref(), *kind, width, ctx, sink)
            })
        }
        PlanKind::Aggregate { input, groups, aggregates } => {
            aggregate(input, groups, aggregates, ctx, probe, sink)
        }
        PlanKind::Sort { input, keys } => {
            let mut rows = Vec::new();
            let mut bytes = 0usize;
            run(input, ctx, probe, &mut |ctx, row| {
                let size = row_size(&row);
                bytes += size;
                ctx.budget.reserve(size, "sort")?;
                rows.push(row);
                Ok(true)
            })?;
            rows.sort_by(|a, b| compare_rows(a, b, keys));
            let mut outcome = true;
            for row in rows {
                if !sink(ctx, row)? {
                    outcome = false;
                    break;
                }
            }
            ctx.budget.release(bytes);
            Ok(outcome)
        }
        PlanKind::Limit { input, limit, offset } => {
            let limit = match limit {
                Some(expr) => match eval(expr, probe, ctx)? {
                    Datum::Null => None,
                    value => Some(value.as_int().unwrap_or(0)),
                },
                None => None,
            };
            let offset = match offset {
                Some(expr) => eval(expr, probe, ctx)?.as_int().unwrap_or(0),
                None => 0,
            };
            if limit.is_some_and(|limit| limit < 0) {
                return Err(SqlError::new("2201W", "LIMIT must not be negative"));
            }
            if offset < 0 {
                return Err(SqlError::new("2201X", "OFFSET must not be negative"));
            }
            if limit == Some(0) {
                return Ok(true);
            }
            // ORDER BY ... LIMIT n: a bounded (top-n) sort keeps n + offset rows, not all.
            // (A projection that drops hidden sort columns may sit between them.)
            let (sort, projection) = match &input.kind {
                PlanKind::Project { input: inner, exprs } => (inner.as_ref(), Some(exprs)),
                _ => (input.as_ref(), None),
            };
            if let (PlanKind::Sort { input: sorted, keys }, Some(limit)) = (&sort.kind, limit) {
                let keep = usize::try_from(limit.saturating_add(offset)).unwrap_or(usize::MAX);
                let rows = top_n(sorted, keys, keep, ctx, probe)?;
                for row in rows.into_iter().skip(usize::try_from(offset).unwrap_or(usize::MAX)) {
                    let row = match projection {
                        Some(exprs) => project(exprs, row, ctx)?,
                        None => row,
                    };
                    if !sink(ctx, row)? {
                        return Ok(false);
                    }
                }
                return Ok(true);
            }
            let mut skipped = 0i64;
            let mut emitted = 0i64;
            run(input, ctx, probe, &mut |ctx, row| {
                if skipped < offset {
                    skipped += 1;
                    return Ok(true);
                }
                emitted += 1;
                let more = sink(ctx, row)?;
                Ok(more && limit.is_none_or(|limit| emitted < limit))
            })?;
            Ok(true)
        }
        PlanKind::Distinct { input } => {
            let mut seen = HashSet::new();
            let mut bytes = 0usize;
            let outcome = run(input, ctx, probe, &mut |ctx, row| {
                let key = group_key(&row);
                if seen.contains(&key) {
                    return Ok(true);
                }
                let size = key.len() + 32;
                bytes += size;
                ctx.budget.reserve(size, "distinct")?;
                seen.insert(key);
                sink(ctx, row)
            });
            ctx.budget.release(bytes);
            outcome
        }
        PlanKind::Union { inputs, all } => {
            let mut seen = HashSet::new();
            for input in inputs {
                let more = run(input, ctx, probe, &mut |ctx, row| {
                    if !*all {
                        let key = group_key(&row);
                        if !seen.insert(key) {
                            return Ok(true);
                        }
                    }
                    sink(ctx, row)
                })?;
                if !more {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        PlanKind::SetDifference { left, right, intersect, all } => {
            let mut counts: HashMap<Vec<u8>, u64> = HashMap::new();
            run(right, ctx, probe, &mut |_, row| {
                *counts.entry(group_key(&row)).or_default() += 1;
                Ok(true)
            })?;
            let mut emitted: HashSet<Vec<u8>> = HashSet::new();
            run(left, ctx, probe, &mut |ctx, row| {
                let key = group_key(&row);
                let present = counts.get(&key).copied().unwrap_or(0) > 0;
                let emit = if *all {
                    if *intersect {
                        if present {
                            *counts.get_mut(&key).expect("present") -= 1;
                            true
                        } else {
                            false
                        }
                    } else if present {
                        *counts.get_mut(&key).expect("present") -= 1;
                        false
                    } else {
                        true
                    }
                } else {
                    present == *intersect && emitted.insert(key)
                };
                if emit {
                    sink(ctx, row)
                } else {
                    Ok(true)
                }
            })
        }
    }
}

/// The first `keep` rows of `input` in `keys` order, holding at most 2 x `keep` rows (sorted
/// and cut back whenever the buffer fills), accounted against work_mem.
fn top_n(
    input: &Plan,
    keys: &[SortKey],
    keep: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
    let mut bytes = 0usize;
    let capacity = keep.saturating_mul(2).max(16);
    let outcome = run(input, ctx, probe, &mut |ctx, row| {
        let size = row_size(&row);
        ctx.budget.reserve(size, "sort")?;
        bytes += size;
        rows.push(row);
        if rows.len() >= capacity {
            rows.sort_by(|a, b| compare_rows(a, b, keys));
            for dropped in rows.drain(keep.min(rows.len())..) {
                let size = row_size(&dropped);
                ctx.budget.release(size);
                bytes -= size;
            }
        }
        Ok(true)
    });
    ctx.budget.release(bytes);
    outcome?;
    rows.sort_by(|a, b| compare_rows(a, b, keys));
    rows.truncate(keep);
    Ok(rows)
}

fn group_key(row: &[Datum]) -> Vec<u8> {
    let mut key = Vec::new();
    for datum in row {
        datum.group_key(&mut key);
    }
    key
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

pub(crate) fn truthy(datum: &Datum) -> bool {
    matches!(datum, Datum::Bool(true))
}

fn bound_values(
    bound: &Bound<Vec<Expr>>,
    columns: &[usize],
    table: &crate::catalog::TableMeta,
    probe: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Option<Bound<Vec<Value>>>> {
    let exprs = match bound {
        Bound::Unbounded => return Ok(Some(Bound::Unbounded)),
        Bound::Included(exprs) | Bound::Excluded(exprs) => exprs,
    };
    let mut values = Vec::with_capacity(exprs.len());
    for (expr, &column) in exprs.iter().zip(columns) {
        let datum = eval(expr, probe, ctx)?;
        if datum.is_null() {
            // Comparisons with NULL match nothing.
            return Ok(None);
        }
        let ty = &table.columns[column].ty;
        let datum = match (&datum, ty) {
            (Datum::Int(_), SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid) => datum,
            (Datum::Text(_), ty) if ty.is_text() => datum,
            _ => types::cast(datum.clone(), &datum_type(&datum), ty, true)?,
        };
        values.push(datum.to_value(ty)?);
    }
    Ok(Some(match bound {
        Bound::Included(_) => Bound::Included(values),
        Bound::Excluded(_) => Bound::Excluded(values),
        Bound::Unbounded => Bound::Unbounded,
    }))
}

pub fn datum_type(datum: &Datum) -> SqlType {
    match datum {
        Datum::Null | Datum::Text(_) => SqlType::Text,
        Datum::Bool(_) => SqlType::Bool,
        Datum::Int(_) => SqlType::Int8,
        Datum::Float(_) => SqlType::Float8,
        Datum::Numeric(_) => SqlType::numeric(),
        Datum::Bytes(_) => SqlType::Bytea,
        Datum::Date(_) => SqlType::Date,
        Datum::Timestamp(_) => SqlType::Timestamp,
        Datum::TimestampTz(_) => SqlType::TimestampTz,
    }
}

fn as_ref_bound(bound: &Bound<Vec<Value>>) -> Bound<&[Value]> {
    match bound {
        Bound::Included(values) => Bound::Included(values.as_slice()),
        Bound::Excluded(values) => Bound::Excluded(values.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Turns an engine row into datums, moving its strings (no copy per value).
fn decode_row(table: &crate::catalog::TableMeta, values: Vec<Value>) -> Row {
    table
        .columns
        .iter()
        .zip(values)
        .map(|(column, value)| Datum::from_owned_value(value, &column.ty))
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn scan(
    table: &crate::catalog::TableMeta,
    access: &Access,
    filter: Option<&Expr>,
    emit_key: bool,
    backward: bool,
    plan: &Plan,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let _ = plan;
    let mut emit = |ctx: &mut Ctx<'_>, key: Vec<u8>, values: Vec<Value>| -> Result<bool> {
        let mut row = decode_row(table, values);
        if let Some(filter) = filter {
            if !truthy(&eval(filter, &row, ctx)?) {
                return Ok(true);
            }
        }
        if emit_key {
            row.push(Datum::Bytes(key));
        }
        sink(ctx, row)
    };
    match access {
        Access::Full | Access::Primary { .. } => {
            let (lower, upper) = match access {
                Access::Primary { lower, upper } => {
                    let columns = &table.clustered_key().expect("primary access has a key").columns;
                    let lower = bound_values(lower, columns, table, probe, ctx)?;
                    let upper = bound_values(upper, columns, table, probe, ctx)?;
                    match (lower, upper) {
                        (Some(lower), Some(upper)) => (lower, upper),
                        _ => return Ok(true),
                    }
                }
                _ => (Bound::Unbounded, Bound::Unbounded),
            };
            // A point lookup on the whole key.
            if let (Bound::Included(low), Bound::Included(high), Some(key)) =
                (&lower, &upper, table.clustered_key())
            {
                if low.len() == key.columns.len() && low == high {
                    let found = ctx.txn()?.get_keyed(&table.name, low)?;
                    return match found {
                        Some((key, values)) => emit(ctx, key, values),
                        None => Ok(true),
                    };
                }
            }
            let mut resume: Option<Vec<u8>> = None;
            loop {
                ctx.check_cancel()?;
                let txn = ctx.txn()?;
                let page = if backward {
                    txn.scan_page_backward(
                        &table.name,
                        as_ref_bound(&lower),
                        as_ref_bound(&upper),
                        resume.as_deref(),
                        SCAN_PAGE_ROWS,
                    )?
                } else {
                    txn.scan_page(
                        &table.name,
                        as_ref_bound(&lower),
                        as_ref_bound(&upper),
                        resume.as_deref(),
                        SCAN_PAGE_ROWS,
                    )?
                };
                let complete = page.len() < SCAN_PAGE_ROWS;
                // Only the last key is needed to resume: copying each one costs an
                // allocation per row.
                if !complete {
                    resume = page.last().map(|(key, _)| key.clone());
                }
                for (key, values) in page {
                    if !emit(ctx, key, values)? {
                        return Ok(false);
                    }
                }
                if complete {
                    return Ok(true);
                }
            }
        }
        Access::Index { name, lower, upper } => {
            let index = table
                .indexes
                .iter()
                .find(|index| index.name == *name)
                .expect("planned index exists");
            let lower = bound_values(lower, &index.columns, table, probe, ctx)?;
            let upper = bound_values(upper, &index.columns, table, probe, ctx)?;
            let (Some(lower), Some(upper)) = (lower, upper) else { return Ok(true) };
            let mut resume: Option<Vec<u8>> = None;
            loop {
                ctx.check_cancel()?;
                let page = ctx.txn()?.index_scan_page(
                    &table.name,
                    name,
                    as_ref_bound(&lower),
                    as_ref_bound(&upper),
                    resume.as_deref(),
                    SCAN_PAGE_ROWS,
                )?;
                let complete = page.len() < SCAN_PAGE_ROWS;
                if !complete {
                    resume = page.last().map(|(entry, _, _)| entry.clone());
                }
                for (_, key, values) in page {
                    if !emit(ctx, key, values)? {
                        return Ok(false);
                    }
                }
                if complete {
                    return Ok(true);
                }
            }
        }
    }
}

fn series(
    start: &Expr,
    stop: &Expr,
    step: Option<&Expr>,
    ty: &SqlType,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let start = eval(start, probe, ctx)?;
    let stop = eval(stop, probe, ctx)?;
    let step = match step {
        Some(step) => eval(step, probe, ctx)?,
        None => Datum::Int(1),
    };
    if start.is_null() || stop.is_null() || step.is_null() {
        return Ok(true);
    }
    if matches!(ty, SqlType::Numeric { .. }) {
        let (mut current, stop, step) = (
            start.as_decimal().unwrap_or_default(),
            stop.as_decimal().unwrap_or_default(),
            step.as_decimal().unwrap_or_default(),
        );
        if step.is_zero() {
            return Err(SqlError::new("22023", "step size cannot equal zero"));
        }
        while (step > Decimal::ZERO && current <= stop) || (step < Decimal::ZERO && current >= stop)
        {
            if !sink(ctx, vec![Datum::Numeric(current)])? {
                return Ok(false);
            }
            current += step;
        }
        return Ok(true);
    }
    let (mut current, stop, step) =
        (start.as_int().unwrap_or(0), stop.as_int().unwrap_or(0), step.as_int().unwrap_or(0));
    if step == 0 {
        return Err(SqlError::new("22023", "step size cannot equal zero"));
    }
    let mut count = 0u64;
    while (step > 0 && current <= stop) || (step < 0 && current >= stop) {
        count += 1;
        if count.is_multiple_of(4096) {
            ctx.check_cancel()?;
        }
        if !sink(ctx, vec![Datum::Int(current)])? {
            return Ok(false);
        }
        match current.checked_add(step) {
            Some(next) => current = next,
            None => break,
        }
    }
    Ok(true)
}

/// Emits `left_row` joined with each of `candidates` that satisfies `condition`; for a left
/// join, a row without a match is emitted once padded with `width` NULLs. The one body of
/// the nested-loop, index and hash joins. Returns false if the sink stopped.
fn join_row(
    left_row: Row,
    candidates: &[Row],
    condition: Option<&Expr>,
    kind: JoinKind,
    width: usize,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut matched = false;
    for right_row in candidates {
        let mut joined = left_row.clone();
        joined.extend(right_row.iter().cloned());
        if let Some(condition) = condition {
            if !truthy(&eval(condition, &joined, ctx)?) {
                continue;
            }
        }
        matched = true;
        if !sink(ctx, joined)? {
            return Ok(false);
        }
    }
    if !matched && kind == JoinKind::Left {
        let mut joined = left_row;
        joined.extend(std::iter::repeat_n(Datum::Null, width));
        return sink(ctx, joined);
    }
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
fn hash_join(
    left: &Plan,
    right: &Plan,
    kind: JoinKind,
    left_keys: &[Expr],
    right_keys: &[Expr],
    residual: Option<&Expr>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut table: HashMap<Vec<u8>, Vec<Row>> = HashMap::new();
    let mut bytes = 0usize;
    run(right, ctx, probe, &mut |ctx, row| {
        let keys = right_keys.iter().map(|expr| eval(expr, &row, ctx)).collect::<Result<Row>>()?;
        if keys.iter().any(Datum::is_null) {
            return Ok(true);
        }
        let size = row_size(&row);
        bytes += size;
        ctx.budget.reserve(size, "hash join")?;
        table.entry(group_key(&keys)).or_default().push(row);
        Ok(true)
    })?;
    let width = right.arity();
    let outcome = run(left, ctx, probe, &mut |ctx, left_row| {
        let keys =
            left_keys.iter().map(|expr| eval(expr, &left_row, ctx)).collect::<Result<Row>>()?;
        // NULL keys match nothing.
        let matches =
            if keys.iter().any(Datum::is_null) { None } else { table.get(&group_key(&keys)) };
        join_row(left_row, matches.map_or(&[][..], Vec::as_slice), residual, kind, width, ctx, sink)
    });
    ctx.budget.release(bytes);
    outcome
}

/// Running state of one aggregate in one group.
#[derive(Clone)]
enum Accumulator {
    Count(i64),
    SumInt(i128, bool),
    SumDecimal(Decimal, bool),
    SumFloat(f64, bool),
    AvgDecimal(Decimal, i64),
    AvgFloat(f64, i64),
    Extreme(Option<Datum>),
    Bool(Option<bool>),
    Strings(Option<String>),
}

fn accumulator(call: &AggregateCall) -> Accumulator {
    match call.function {
        AggregateFunction::CountStar | AggregateFunction::Count => Accumulator::Count(0),
        AggregateFunction::Sum => match call.input {
            SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => Accumulator::SumInt(0, false),
            SqlType::Float4 | SqlType::Float8 => Accumulator::SumFloat(0.0, false),
            _ => Accumulator::SumDecimal(Decimal::ZERO, false),
        },
        AggregateFunction::Avg => match call.input {
            SqlType::Float4 | SqlType::Float8 => Accumulator::AvgFloat(0.0, 0),
            _ => Accumulator::AvgDecimal(Decimal::ZERO, 0),
        },
        AggregateFunction::Min | AggregateFunction::Max => Accumulator::Extreme(None),
        AggregateFunction::BoolAnd | AggregateFunction::BoolOr => Accumulator::Bool(None),
        AggregateFunction::StringAgg => Accumulator::Strings(None),
    }
}

fn accumulate(state: &mut Accumulator, call: &AggregateCall, args: &[Datum]) -> Result<()> {
    if call.function == AggregateFunction::CountStar {
        if let Accumulator::Count(count) = state {
            *count += 1;
        }
        return Ok(());
    }
    let value = &args[0];
    if value.is_null() {
        return Ok(());
    }
    match state {
        Accumulator::Count(count) => *count += 1,
        Accumulator::SumInt(sum, any) => {
            *sum += i128::from(value.as_int().unwrap_or(0));
            *any = true;
        }
        Accumulator::SumDecimal(sum, any) => {
            *sum = sum
                .checked_add(value.as_decimal().unwrap_or_default())
                .ok_or_else(|| SqlError::out_of_range("numeric"))?;
            *any = true;
        }
        Accumulator::SumFloat(sum, any) => {
            *sum += value.as_f64().unwrap_or(0.0);
            *any = true;
        }
        Accumulator::AvgDecimal(sum, count) => {
            *sum = sum
                .checked_add(value.as_decimal().unwrap_or_default())
                .ok_or_else(|| SqlError::out_of_range("numeric"))?;
            *count += 1;
        }
        Accumulator::AvgFloat(sum, count) => {
            *sum += value.as_f64().unwrap_or(0.0);
            *count += 1;
        }
        Accumulator::Extreme(best) => {
            let replace = match best {
                None => true,
                Some(current) => {
                    let ordering = value.compare(current).unwrap_or(Ordering::Equal);
                    if call.function == AggregateFunction::Min {
                        ordering.is_lt()
                    } else {
                        ordering.is_gt()
                    }
                }
            };
            if replace {
                *best = Some(value.clone());
            }
        }
        Accumulator::Bool(current) => {
            let flag = value.as_bool().unwrap_or(false);
            *current = Some(match (*current, call.function) {
                (None, _) => flag,
                (Some(previous), AggregateFunction::BoolAnd) => previous && flag,
                (Some(previous), _) => previous || flag,
            });
        }
        Accumulator::Strings(current) => {
            let text = value.as_text().unwrap_or("").to_string();
            match current {
                None => *current = Some(text),
                Some(existing) => {
                    let separator = args.get(1).and_then(Datum::as_text).unwrap_or("");
                    functions::check_text_bytes(
                        existing.len().saturating_add(separator.len()).saturating_add(text.len()),
                    )?;
                    existing.push_str(separator);
                    existing.push_str(&text);
                }
            }
        }
    }
    Ok(())
}

fn finish(state: &Accumulator, call: &AggregateCall) -> Result<Datum> {
    Ok(match state {
        Accumulator::Count(count) => Datum::Int(*count),
        Accumulator::SumInt(sum, any) => {
            if !*any {
                Datum::Null
            } else if call.output == SqlType::Int8 {
                Datum::Int(i64::try_from(*sum).map_err(|_| SqlError::out_of_range("bigint"))?)
            } else {
                Datum::Numeric(Decimal::from_i128_with_scale(*sum, 0))
            }
        }
        Accumulator::SumDecimal(sum, any) => {
            if *any {
                Datum::Numeric(*sum)
            } else {
                Datum::Null
            }
        }
        Accumulator::SumFloat(sum, any) => {
            if *any {
                Datum::Float(*sum)
            } else {
                Datum::Null
            }
        }
        Accumulator::AvgDecimal(sum, count) => {
            if *count == 0 {
                Datum::Null
            } else {
                Datum::Numeric(types::numeric_divide(*sum, Decimal::from(*count))?)
            }
        }
        Accumulator::AvgFloat(sum, count) => {
            if *count == 0 {
                Datum::Null
            } else {
                Datum::Float(sum / count.to_f64().unwrap_or(1.0))
            }
        }
        Accumulator::Extreme(best) => best.clone().unwrap_or(Datum::Null),
        Accumulator::Bool(value) => value.map_or(Datum::Null, Datum::Bool),
        Accumulator::Strings(value) => value.clone().map_or(Datum::Null, Datum::Text),
    })
}

struct Group {
    keys: Row,
    states: Vec<Accumulator>,
    distinct_seen: Vec<HashSet<Vec<u8>>>,
}

fn aggregate(
    input: &Plan,
    groups: &[Expr],
    aggregates: &[AggregateCall],
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut table: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut order: Vec<Group> = Vec::new();
    let mut bytes = 0usize;
    run(input, ctx, probe, &mut |ctx, row| {
        let keys = groups.iter().map(|expr| eval(expr, &row, ctx)).collect::<Result<Row>>()?;
        let encoded = group_key(&keys);
        let slot = match table.get(&encoded) {
            Some(&slot) => slot,
            None => {
                let size = encoded.len() + row_size(&keys) + aggregates.len() * 48;
                bytes += size;
                ctx.budget.reserve(size, "hash aggregate")?;
                order.push(Group {
                    keys,
                    states: aggregates.iter().map(accumulator).collect(),
                    distinct_seen: vec![HashSet::new(); aggregates.len()],
                });
                table.insert(encoded, order.len() - 1);
                order.len() - 1
            }
        };
        let group = &mut order[slot];
        for (index, call) in aggregates.iter().enumerate() {
            let args =
                call.args.iter().map(|expr| eval(expr, &row, ctx)).collect::<Result<Row>>()?;
            if call.distinct {
                if args.first().is_some_and(Datum::is_null) {
                    continue;
                }
                let key = group_key(&args);
                let size = key.len() + 32;
                if !group.distinct_seen[index].insert(key) {
                    continue;
                }
                bytes += size;
                ctx.budget.reserve(size, "hash aggregate")?;
            }
            accumulate(&mut group.states[index], call, &args)?;
        }
        Ok(true)
    })?;
    if order.is_empty() && groups.is_empty() {
        order.push(Group {
            keys: Vec::new(),
            states: aggregates.iter().map(accumulator).collect(),
            distinct_seen: Vec::new(),
        });
    }
    let mut outcome = true;
    for group in order {
        let mut row = group.keys;
        for (state, call) in group.states.iter().zip(aggregates) {
            row.push(finish(state, call)?);
        }
        if !sink(ctx, row)? {
            outcome = false;
            break;
        }
    }
    ctx.budget.release(bytes);
    Ok(outcome)
}

/// Runs a subquery (cached when uncorrelated) in the context of `row`.
fn subquery_rows(
    plan: &Plan,
    correlated: bool,
    id: usize,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
    limit: Option<usize>,
) -> Result<Vec<Row>> {
    if !correlated {
        if let Some(rows) = ctx.subquery_cache.get(&id) {
            return Ok(rows.clone());
        }
    }
    if ctx.txn.is_none() {
        return Err(SqlError::unsupported("subqueries are not supported in this position"));
    }
    ctx.outer.push(row.to_vec());
    let mut rows = Vec::new();
    let outcome = run(plan, ctx, &[], &mut |_, row| {
        rows.push(row);
        Ok(limit.is_none_or(|limit| rows.len() < limit))
    });
    ctx.outer.pop();
    outcome?;
    if !correlated {
        ctx.subquery_cache.insert(id, rows.clone());
    }
    Ok(rows)
}

/// Evaluates a projection over a row the caller gives up. A column that no later expression
/// reads is moved out instead of cloned (a text value is then not copied again per row).
fn project(exprs: &[Expr], mut row: Row, ctx: &mut Ctx<'_>) -> Result<Row> {
    let mut projected = Vec::with_capacity(exprs.len());
    for (position, expr) in exprs.iter().enumerate() {
        let movable = match expr {
            Expr::Column(index) => {
                *index < row.len()
                    && exprs[position + 1..]
                        .iter()
                        .all(|later| matches!(later, Expr::Column(other) if other != index))
            }
            _ => false,
        };
        projected.push(match expr {
            Expr::Column(index) if movable => std::mem::replace(&mut row[*index], Datum::Null),
            _ => eval(expr, &row, ctx)?,
        });
    }
    Ok(projected)
}

/// Evaluates an expression over `row`.
pub fn eval(expr: &Expr, row: &[Datum], ctx: &mut Ctx<'_>) -> Result<Datum> {
    depth::check_stack_depth()?;
    Ok(match expr {
        Expr::Column(index) => row
            .get(*index)
            .cloned()
            .ok_or_else(|| SqlError::internal(format!("column {index} out of range")))?,
        Expr::Outer { depth, index } => {
            let position = ctx
                .outer
                .len()
                .checked_sub(*depth)
                .ok_or_else(|| SqlError::internal("outer row missing"))?;
            ctx.outer[position].get(*index).cloned().unwrap_or(Datum::Null)
        }
        Expr::Literal(datum) => datum.clone(),
        Expr::Parameter(index) => ctx.params.get(*index).cloned().ok_or_else(|| {
            SqlError::new("08P01", format!("there is no parameter ${}", index + 1))
        })?,
        Expr::Arithmetic { op, left, right, ty } => {
            let left = eval(left, row, ctx)?;
            let right = eval(right, row, ctx)?;
            arithmetic(*op, &left, &right, ty)?
        }
        Expr::Negate { expr, ty } => match eval(expr, row, ctx)? {
            Datum::Null => Datum::Null,
            Datum::Int(value) => Datum::Int(ty.check_integer(
                value.checked_neg().ok_or_else(|| SqlError::out_of_range(ty.message_name()))?,
            )?),
            Datum::Float(value) => Datum::Float(-value),
            Datum::Numeric(value) => Datum::Numeric(-value),
            _ => return Err(SqlError::undefined_operator("operator does not exist: - unknown")),
        },
        Expr::Compare { op, left, right, bpchar } => {
            let left = eval(left, row, ctx)?;
            let right = eval(right, row, ctx)?;
            compare(*op, &left, &right, *bpchar)
        }
        Expr::Concat(left, right) => {
            let left = eval(left, row, ctx)?;
            let right = eval(right, row, ctx)?;
            match (left, right) {
                (Datum::Text(mut left), Datum::Text(right)) => {
                    functions::check_text_bytes(left.len().saturating_add(right.len()))?;
                    left.push_str(&right);
                    Datum::Text(left)
                }
                _ => Datum::Null,
            }
        }
        Expr::And(left, right) => {
            let left = eval(left, row, ctx)?;
            if matches!(left, Datum::Bool(false)) {
                return Ok(Datum::Bool(false));
            }
            let right = eval(right, row, ctx)?;
            match (left, right) {
                (_, Datum::Bool(false)) => Datum::Bool(false),
                (Datum::Bool(true), Datum::Bool(true)) => Datum::Bool(true),
                _ => Datum::Null,
            }
        }
        Expr::Or(left, right) => {
            let left = eval(left, row, ctx)?;
            if matches!(left, Datum::Bool(true)) {
                return Ok(Datum::Bool(true));
            }
            let right = eval(right, row, ctx)?;
            match (left, right) {
                (_, Datum::Bool(true)) => Datum::Bool(true),
                (Datum::Bool(false), Datum::Bool(false)) => Datum::Bool(false),
                _ => Datum::Null,
            }
        }
        Expr::Not(inner) => match eval(inner, row, ctx)? {
            Datum::Bool(flag) => Datum::Bool(!flag),
            _ => Datum::Null,
        },
        Expr::IsNull { expr, negated } => Datum::Bool(eval(expr, row, ctx)?.is_null() != *negated),
        Expr::IsBool { expr, value, negated } => {
            let matches = matches!(eval(expr, row, ctx)?, Datum::Bool(flag) if flag == *value);
            Datum::Bool(matches != *negated)
        }
        Expr::IsDistinct { left, right, negated } => {
            let left = eval(left, row, ctx)?;
            let right = eval(right, row, ctx)?;
            let distinct = match (left.is_null(), right.is_null()) {
                (true, true) => false,
                (true, false) | (false, true) => true,
                _ => left.compare(&right) != Some(Ordering::Equal),
            };
            Datum::Bool(distinct != *negated)
        }
        Expr::Cast { expr, from, to, explicit } => {
            let value = eval(expr, row, ctx)?;
            let from = if *from == SqlType::Unknown { SqlType::Text } else { from.clone() };
            types::cast(value, &from, to, *explicit)?
        }
        Expr::Case { operand, branches, otherwise } => {
            let operand = match operand {
                Some(operand) => Some(eval(operand, row, ctx)?),
                None => None,
            };
            for (condition, result) in branches {
                let hit = match &operand {
                    Some(value) => {
                        let candidate = eval(condition, row, ctx)?;
                        value.compare(&candidate) == Some(Ordering::Equal)
                    }
                    None => truthy(&eval(condition, row, ctx)?),
                };
                if hit {
                    return eval(result, row, ctx);
                }
            }
            match otherwise {
                Some(otherwise) => eval(otherwise, row, ctx)?,
                None => Datum::Null,
            }
        }
        Expr::InList { expr, list, negated } => {
            let value = eval(expr, row, ctx)?;
            if value.is_null() {
                return Ok(Datum::Null);
            }
            let mut saw_null = false;
            for item in list {
                let candidate = eval(item, row, ctx)?;
                if candidate.is_null() {
                    saw_null = true;
                } else if value.compare(&candidate) == Some(Ordering::Equal) {
                    return Ok(Datum::Bool(!*negated));
                }
            }
            if saw_null {
                Datum::Null
            } else {
                Datum::Bool(*negated)
            }
        }
        Expr::InSubquery { expr, plan, negated, correlated, id } => {
            let value = eval(expr, row, ctx)?;
            let rows = subquery_rows(plan, *correlated, *id, row, ctx, None)?;
            if rows.is_empty() {
                return Ok(Datum::Bool(*negated));
            }
            if value.is_null() {
                return Ok(Datum::Null);
            }
            let mut saw_null = false;
            for candidate in rows.iter().map(|row| &row[0]) {
                if candidate.is_null() {
                    saw_null = true;
                } else if value.compare(candidate) == Some(Ordering::Equal) {
                    return Ok(Datum::Bool(!*negated));
                }
            }
            if saw_null {
                Datum::Null
            } else {
                Datum::Bool(*negated)
            }
        }
        Expr::Exists { plan, negated, correlated, id } => {
            let rows = subquery_rows(plan, *correlated, *id, row, ctx, Some(1))?;
            Datum::Bool(rows.is_empty() == *negated)
        }
        Expr::ArraySubquery { plan, correlated, id } => {
            let rows = subquery_rows(plan, *correlated, *id, row, ctx, None)?;
            let ty = plan.columns.first().map_or(SqlType::Text, |column| column.ty.clone());
            let items: Vec<String> = rows
                .iter()
                .map(|row| row[0].to_text(&ty).unwrap_or_else(|| "NULL".into()))
                .collect();
            Datum::Text(format!("{{{}}}", items.join(",")))
        }
        Expr::ScalarSubquery { plan, correlated, id } => {
            let rows = subquery_rows(plan, *correlated, *id, row, ctx, Some(2))?;
            match rows.len() {
                0 => Datum::Null,
                1 => rows[0][0].clone(),
                _ => {
                    return Err(SqlError::new(
                        "21000",
                        "more than one row returned by a subquery used as an expression",
                    ))
                }
            }
        }
        Expr::Like { expr, pattern, negated, case_insensitive } => {
            let value = eval(expr, row, ctx)?;
            let pattern = eval(pattern, row, ctx)?;
            match (value, pattern) {
                (Datum::Text(value), Datum::Text(pattern)) => {
                    let matched = if *case_insensitive {
                        like(&value.to_lowercase(), &pattern.to_lowercase())
                    } else {
                        like(&value, &pattern)
                    };
                    Datum::Bool(matched != *negated)
                }
                _ => Datum::Null,
            }
        }
        Expr::Function(call) if call.name == "coalesce" => {
            // Arguments after the first non-NULL one are not evaluated (their errors do not
            // happen), as in PostgreSQL.
            for arg in &call.args {
                let value = eval(arg, row, ctx)?;
                if !value.is_null() {
                    return Ok(value);
                }
            }
            Datum::Null
        }
        Expr::Function(call) => {
            let args =
                call.args.iter().map(|arg| eval(arg, row, ctx)).collect::<Result<Vec<Datum>>>()?;
            if let Some(result) = crate::system::evaluate_function(call, &args, ctx)? {
                return Ok(result);
            }
            let catalog = ctx.session.catalog;
            let nextval = |name: &str| catalog.nextval(name);
            let format_type = |oid: i64, typmod: i64| crate::system::format_type(oid, typmod);
            let index_definition = |oid: i64| crate::system::index_definition(catalog, oid);
            let context = FunctionContext {
                database: ctx.session.database,
                user: ctx.session.user,
                backend_pid: ctx.session.backend_pid,
                statement_time_micros: ctx.statement_time_micros,
                nextval: &nextval,
                format_type: &format_type,
                index_definition: &index_definition,
            };
            functions::evaluate(call, args, &context)?
        }
    })
}

fn compare(op: CompareOp, left: &Datum, right: &Datum, bpchar: bool) -> Datum {
    if left.is_null() || right.is_null() {
        return Datum::Null;
    }
    let ordering = if bpchar {
        match (left, right) {
            (Datum::Text(a), Datum::Text(b)) => {
                a.trim_end_matches(' ').cmp(b.trim_end_matches(' '))
            }
            _ => left.compare(right).unwrap_or(Ordering::Equal),
        }
    } else {
        match left.compare(right) {
            Some(ordering) => ordering,
            None => return Datum::Null,
        }
    };
    Datum::Bool(match op {
        CompareOp::Eq => ordering == Ordering::Equal,
        CompareOp::NotEq => ordering != Ordering::Equal,
        CompareOp::Lt => ordering == Ordering::Less,
        CompareOp::LtEq => ordering != Ordering::Greater,
        CompareOp::Gt => ordering == Ordering::Greater,
        CompareOp::GtEq => ordering != Ordering::Less,
    })
}

/// SQL LIKE with `%` and `_` and backslash escapes.
pub fn like(value: &str, pattern: &str) -> bool {
    let value: Vec<char> = value.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    // Iterative matcher with backtracking on the last `%`.
    let (mut v, mut p) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while v < value.len() {
        if p < pattern.len() {
            match pattern[p] {
                '%' => {
                    star = Some((p, v));
                    p += 1;
                    continue;
                }
                '_' => {
                    v += 1;
                    p += 1;
                    continue;
                }
                '\\' if p + 1 < pattern.len() && pattern[p + 1] == value[v] => {
                    v += 1;
                    p += 2;
                    continue;
                }
                // An escaped character that does not match.
                '\\' if p + 1 < pattern.len() => {}
                c if c == value[v] => {
                    v += 1;
                    p += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((star_p, star_v)) => {
                p = star_p + 1;
                v = star_v + 1;
                star = Some((star_p, star_v + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == '%' {
        p += 1;
    }
    p == pattern.len()
}

/// Arithmetic with PostgreSQL's overflow and division rules for the result type.
pub fn arithmetic(op: ArithmeticOp, left: &Datum, right: &Datum, ty: &SqlType) -> Result<Datum> {
    if left.is_null() || right.is_null() {
        return Ok(Datum::Null);
    }
    match ty {
        SqlType::Date => {
            let days = match left {
                Datum::Date(days) => i64::from(*days),
                _ => 0,
            };
            let delta = right.as_int().unwrap_or(0);
            let result = if op == ArithmeticOp::Add { days + delta } else { days - delta };
            return Ok(Datum::Date(
                i32::try_from(result).map_err(|_| SqlError::out_of_range("date"))?,
            ));
        }
        SqlType::Int4 if matches!((left, right), (Datum::Date(_), Datum::Date(_))) => {
            let (Datum::Date(a), Datum::Date(b)) = (left, right) else { unreachable!() };
            return Ok(Datum::Int(i64::from(*a) - i64::from(*b)));
        }
        _ => {}
    }
    if ty.is_integer() {
        let (a, b) = (left.as_int().unwrap_or(0), right.as_int().unwrap_or(0));
        let overflow = || SqlError::out_of_range(ty.message_name());
        let result = match op {
            ArithmeticOp::Add => a.checked_add(b).ok_or_else(overflow)?,
            ArithmeticOp::Subtract => a.checked_sub(b).ok_or_else(overflow)?,
            ArithmeticOp::Multiply => a.checked_mul(b).ok_or_else(overflow)?,
            ArithmeticOp::Divide => {
                if b == 0 {
                    return Err(SqlError::division_by_zero());
                }
                a.checked_div(b).ok_or_else(overflow)?
            }
            ArithmeticOp::Modulo => {
                if b == 0 {
                    return Err(SqlError::division_by_zero());
                }
                a.checked_rem(b).unwrap_or(0)
            }
            ArithmeticOp::Power => return Ok(Datum::Float((a as f64).powf(b as f64))),
        };
        return Ok(Datum::Int(ty.check_integer(result)?));
    }
    match ty {
        SqlType::Float4 | SqlType::Float8 => {
            let (a, b) = (left.as_f64().unwrap_or(0.0), right.as_f64().unwrap_or(0.0));
            let result = match op {
                ArithmeticOp::Add => a + b,
                ArithmeticOp::Subtract => a - b,
                ArithmeticOp::Multiply => a * b,
                ArithmeticOp::Divide => {
                    if b == 0.0 {
                        return Err(SqlError::division_by_zero());
                    }
                    a / b
                }
                ArithmeticOp::Modulo => {
                    return Err(SqlError::undefined_operator(
                        "operator does not exist: double precision % double precision",
                    ))
                }
                ArithmeticOp::Power => a.powf(b),
            };
            if result.is_infinite() && a.is_finite() && b.is_finite() {
                return Err(SqlError::new("22003", "value out of range: overflow"));
            }
            let result = if *ty == SqlType::Float4 {
                #[allow(clippy::cast_possible_truncation)]
                let single = result as f32;
                f64::from(single)
            } else {
                result
            };
            Ok(Datum::Float(result))
        }
        _ => {
            let (a, b) =
                (left.as_decimal().unwrap_or_default(), right.as_decimal().unwrap_or_default());
            let overflow = || SqlError::out_of_range("numeric");
            // PostgreSQL's result scales: the larger input scale for + - %, their sum for *
            // (rust_decimal drops the scale of a zero result).
            let (sum_scale, max_scale) =
                ((a.scale() + b.scale()).min(28), a.scale().max(b.scale()));
            let scaled = |mut value: Decimal, scale: u32| {
                if value.scale() < scale {
                    value.rescale(scale);
                }
                value
            };
            Ok(Datum::Numeric(match op {
                ArithmeticOp::Add => scaled(a.checked_add(b).ok_or_else(overflow)?, max_scale),
                ArithmeticOp::Subtract => scaled(a.checked_sub(b).ok_or_else(overflow)?, max_scale),
                ArithmeticOp::Multiply => scaled(a.checked_mul(b).ok_or_else(overflow)?, sum_scale),
                ArithmeticOp::Divide => types::numeric_divide(a, b)?,
                ArithmeticOp::Modulo => {
                    if b.is_zero() {
                        return Err(SqlError::division_by_zero());
                    }
                    scaled(a.checked_rem(b).ok_or_else(overflow)?, max_scale)
                }
                ArithmeticOp::Power => types::numeric_power(a, b)?,
            }))
        }
    }
}
