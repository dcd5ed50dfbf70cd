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

mod advisory;
mod aggregate;
mod aggregate_stats;
mod arrays;
mod compare;
mod dml;
mod eval;
pub(crate) mod explain;
mod foreign_keys;
mod group_key;
mod grouping_sets;
mod hash;
mod join;
pub(crate) mod locking;
mod objects;
mod on_conflict;
mod ordered_set;
mod partial_index;
mod privilege_checks;
mod recursive;
mod relation_sizes;
mod rows;
mod scan;
mod scan_keys;
mod sequences;
mod set_functions;
mod sort;
pub(crate) mod spill;
mod subquery_comparison;
mod vector_check;
mod window;
mod window_aggregate;
mod window_frame;

pub(crate) use aggregate::*;
pub(crate) use compare::compare;
pub(crate) use dml::*;
pub(crate) use eval::*;
pub(crate) use foreign_keys::ReferentialEvents;
pub(crate) use hash::*;
pub(crate) use join::*;
pub use objects::name_parts;
pub(crate) use partial_index::BoundIndexPredicate;
pub use recursive::WorkTables;
pub use rows::PlanningEvaluator;
pub(crate) use scan::*;
pub(crate) use sort::*;

use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Bound;
use std::time::Instant;

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use tierdb_common::{op_counters_snapshot, OpCounters};
use tierdb_engine::{Transaction, Value};

use crate::convert::{duration_ns, usize_from_non_negative};
use crate::depth;
use crate::error::{Result, SqlError};
use crate::functions::{self, FunctionContext};
use crate::plan::*;
use crate::system::SessionInfo;
use crate::types::{self, Datum, SqlType};

pub(crate) use crate::types::Row;

/// Rows fetched from the engine per call.
pub const SCAN_PAGE_ROWS: usize = 256;

/// Per-node statistics for EXPLAIN ANALYZE.
#[derive(Clone, Debug, Default)]
pub struct NodeStats {
    pub rows: u64,
    pub loops: u64,
    pub time_ns: u64,
    pub counters: OpCounters,
    /// How a sort or hash node used memory and the temp space (EXPLAIN ANALYZE).
    pub memory: Option<OperatorMemory>,
}

/// Memory settings of one statement. Sorts, hash aggregates, hash joins, DISTINCT, set
/// operations and row stores each take a grant of their own (`work_mem_bytes`, or
/// `hash_mem_bytes` for hash tables, as PostgreSQL) from the server's operator memory pool
/// (`tierdb_storage::MemoryPool`) and spill to the temp space past it.
#[derive(Clone, Debug)]
pub struct MemoryBudget {
    /// work_mem: what one sort or row store holds before it spills.
    pub work_mem_bytes: usize,
    /// work_mem x hash_mem_multiplier: what one hash table holds before it spills.
    pub hash_mem_bytes: usize,
    /// The session's temp files (temp_file_limit).
    pub temp_usage: std::sync::Arc<tierdb_storage::TempUsage>,
}

impl MemoryBudget {
    /// A session's budget: `work_mem_bytes` per operator, hash tables
    /// `hash_mem_multiplier` times that.
    pub fn for_session(
        work_mem_bytes: usize,
        hash_mem_multiplier: f64,
        temp_usage: std::sync::Arc<tierdb_storage::TempUsage>,
    ) -> MemoryBudget {
        MemoryBudget {
            work_mem_bytes,
            hash_mem_bytes: crate::convert::scale_bytes(work_mem_bytes, hash_mem_multiplier),
            temp_usage,
        }
    }
}

pub fn row_size(row: &[Datum]) -> usize {
    row.iter().map(Datum::memory_size).sum::<usize>() + std::mem::size_of::<Row>()
}

pub struct Ctx<'a> {
    pub txn: Option<&'a mut Transaction>,
    pub params: &'a [Datum],
    pub outer: Vec<Row>,
    pub subquery_cache: HashMap<usize, CachedSubquery>,
    pub stats: Vec<NodeStats>,
    pub analyze: bool,
    pub budget: MemoryBudget,
    pub session: &'a SessionInfo<'a>,
    pub statement_time_micros: i64,
    /// The statement's cancel flag and statement_timeout deadline (checked per batch).
    pub interrupt: Option<&'a tierdb_engine::WaitLimits>,
    /// The working tables of the WITH RECURSIVE iterations running (`recursive.rs`).
    pub work_tables: WorkTables,
    /// Some while a statement with data-modifying statements in WITH runs its parts: each
    /// part's FOREIGN KEY checks and actions wait here for the end of the whole statement,
    /// as PostgreSQL's referential-integrity triggers do (`foreign_keys.rs`).
    pub deferred_events: Option<Vec<(BoundTable, ReferentialEvents)>>,
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
            downstream_ns += duration_ns(t0.elapsed());
            let spent = op_counters_snapshot().since(&c0);
            add_counters(&mut downstream_counters, &spent);
            result
        };
        run_node(plan, ctx, probe, &mut measured)
    };
    let total_ns = duration_ns(start.elapsed());
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
        PlanKind::Scan { table, access, filter, emit_key, backward, projection } => {
            let options = ScanOptions {
                emit_key: *emit_key,
                backward: *backward,
                projection: projection.as_ref(),
            };
            scan(table, access, filter.as_ref(), options, ctx, probe, sink)
        }
        PlanKind::SystemView { name } => {
            let rows = crate::system::view_rows(name, ctx.session.catalog, ctx.session);
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
        PlanKind::ProjectSet { input, calls } => {
            set_functions::project_set(input, calls, ctx, probe, sink)
        }
        PlanKind::Ordinality { input } => set_functions::ordinality(input, ctx, probe, sink),
        PlanKind::Filter { input, predicate } => run(input, ctx, probe, &mut |ctx, row| {
            if holds(predicate, &row, ctx)? {
                sink(ctx, row)
            } else {
                Ok(true)
            }
        }),
        PlanKind::LockRows { input, table, mode, policy, recheck } => {
            let lock =
                crate::exec::locking::RowLocker { table, mode: *mode, policy: *policy, recheck };
            run(input, ctx, probe, &mut |ctx, row| lock.pass(ctx, row, sink))
        }
        PlanKind::Project { input, exprs } => run(input, ctx, probe, &mut |ctx, row| {
            let projected = project(exprs, row, ctx)?;
            sink(ctx, projected)
        }),
        PlanKind::NestedLoopJoin { left, right, kind, on } => {
            nested_loop_join(left, right, *kind, on.as_ref(), ctx, probe, sink)
        }
        PlanKind::HashJoin { left, right, kind, left_keys, right_keys, residual } => {
            let join = HashJoin {
                kind: *kind,
                left_keys,
                right_keys,
                residual: residual.as_ref(),
                width: right.arity(),
                left_width: left.arity(),
            };
            hash_join(left, right, &join, plan.id, ctx, probe, sink)
        }
        PlanKind::LateralJoin { left, right, kind, on } => {
            lateral_join(left, right, *kind, on.as_ref(), ctx, probe, sink)
        }
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
            aggregate(input, groups, aggregates, plan.id, ctx, probe, sink)
        }
        PlanKind::Expand { input, keys, sets } => {
            grouping_sets::expand(input, keys, sets, ctx, probe, sink)
        }
        PlanKind::Window { input, spec, calls } => {
            window::run_window(input, spec, calls, ctx, probe, sink)
        }
        PlanKind::Sort { input, keys } => run_sorted(input, keys, None, plan.id, ctx, probe, sink),
        PlanKind::Limit { input, limit, offset } => {
            run_limit(input, limit.as_ref(), offset.as_ref(), ctx, probe, sink)
        }
        PlanKind::Distinct { input } => run_distinct(input, plan.id, ctx, probe, sink),
        PlanKind::Union { inputs, all } => run_union(inputs, *all, plan.id, ctx, probe, sink),
        PlanKind::SetDifference { left, right, intersect, all } => {
            run_set_difference(left, right, *intersect, *all, plan.id, ctx, probe, sink)
        }
        PlanKind::RecursiveUnion { non_recursive, recursive, all, work_table } => {
            let recursion = recursive::Recursion {
                non_recursive,
                recursive,
                all: *all,
                work_table: *work_table,
                plan_id: plan.id,
            };
            recursive::run_recursive_union(&recursion, ctx, probe, sink)
        }
        PlanKind::WorkTableScan { work_table, .. } => {
            recursive::work_table_scan(*work_table, ctx, sink)
        }
    }
}

/// LIMIT and OFFSET; under ORDER BY a bounded top-n sort.
fn run_limit(
    input: &Plan,
    limit: Option<&Expr>,
    offset: Option<&Expr>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
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
        _ => (input, None),
    };
    if let (PlanKind::Sort { input: sorted, keys }, Some(limit)) = (&sort.kind, limit) {
        // Both are non-negative (checked above); their sum saturates at i64::MAX rows,
        // more than memory holds, which means "all rows".
        let keep = usize_from_non_negative(limit.saturating_add(offset))
            .expect("LIMIT and OFFSET are checked non-negative");
        let skip = usize_from_non_negative(offset).expect("OFFSET is checked non-negative");
        let mut seen = 0usize;
        let sort_id = sort.id;
        return run_sorted(sorted, keys, Some(keep), sort_id, ctx, probe, &mut |ctx, row| {
            seen += 1;
            if seen <= skip {
                return Ok(true);
            }
            let row = match projection {
                Some(exprs) => project(exprs, row, ctx)?,
                None => row,
            };
            sink(ctx, row)
        });
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

/// DISTINCT: passes each row the first time its value is seen (spilling, `hash.rs`).
fn run_distinct(
    input: &Plan,
    plan_id: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut stats = HashStats::default();
    let mut feed = |ctx: &mut Ctx<'_>, each: &mut Sink<'_>| run(input, ctx, probe, each);
    let outcome = run_hash(&mut DistinctOp, 0, &mut stats, ctx, &mut feed, sink);
    record_memory(ctx, plan_id, stats.memory());
    outcome
}

/// UNION [ALL]: the inputs one after another, without duplicates unless ALL.
fn run_union(
    inputs: &[Plan],
    all: bool,
    plan_id: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut feed = |ctx: &mut Ctx<'_>, each: &mut Sink<'_>| {
        for input in inputs {
            if !run(input, ctx, probe, each)? {
                return Ok(false);
            }
        }
        Ok(true)
    };
    if all {
        return feed(ctx, sink);
    }
    let mut stats = HashStats::default();
    let outcome = run_hash(&mut DistinctOp, 0, &mut stats, ctx, &mut feed, sink);
    record_memory(ctx, plan_id, stats.memory());
    outcome
}

/// INTERSECT and EXCEPT [ALL]: copies counted per side (spilling, `hash.rs`).
#[allow(clippy::too_many_arguments)]
fn run_set_difference(
    left: &Plan,
    right: &Plan,
    intersect: bool,
    all: bool,
    plan_id: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut feed = |ctx: &mut Ctx<'_>, each: &mut Sink<'_>| {
        for (input, right_side) in [(left, false), (right, true)] {
            let more = run(input, ctx, probe, &mut |ctx, mut row| {
                row.push(Datum::Bool(right_side));
                each(ctx, row)
            })?;
            if !more {
                return Ok(false);
            }
        }
        Ok(true)
    };
    let mut op = SetOp { intersect, all, width: left.arity() };
    let mut stats = HashStats::default();
    let outcome = run_hash(&mut op, 0, &mut stats, ctx, &mut feed, sink);
    record_memory(ctx, plan_id, stats.memory());
    outcome
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
        Datum::Vector(_) => SqlType::Vector(None),
        Datum::HalfVec(_) => SqlType::HalfVec(None),
        Datum::SparseVec(_) => SqlType::SparseVec(None),
        Datum::Uuid(_) => SqlType::Uuid,
        Datum::Bit(_) => SqlType::Bit(None),
        Datum::Interval(_) => SqlType::Interval,
        Datum::Time(_) => SqlType::Time,
        Datum::Array(array) => {
            let element = array
                .elements
                .iter()
                .find(|item| !item.is_null())
                .map_or(SqlType::Text, datum_type);
            SqlType::Array(Box::new(element))
        }
        Datum::Object(_) => SqlType::Oid,
        Datum::Jsonb(_) => SqlType::Jsonb,
    }
}
