//! Join operators: combined rows, and the hash join that spills (grace hash join with
//! recursive repartitioning and a block nested-loop fallback for a key too frequent to
//! split, design 011).
//!
//! ```text
//! build (right) ─► table while it fits hash_mem
//!                  │ past it: table and the rest of the build side ─► partitions[hash(key, 0)]
//! probe (left)  ─► table lookup, or, once spilled ─► partitions[hash(key, 0)]
//! each partition pair (level 1): build fits? probe it : repartition both (level + 1)
//! past SPILL_LEVELS_MAX levels: the build side in chunks that fit, the probe side read
//! once per chunk, unmatched left-join rows remembered by position
//! ```

use tierdb_storage::{MemoryGrant, TempRun};

use super::spill::{
    read_row, replay, KeyMap, Partitions, RowStore, SpillTarget, SPILL_LEVELS_MAX,
    SPILL_READ_BUFFER_BYTES,
};
use super::*;

/// Emits `left_row` joined with each of `candidates` that satisfies `condition`; for a left
/// join, a row without a match is emitted once padded with `width` NULLs. The one body of
/// the nested-loop, index and hash joins. Returns false if the sink stopped.
pub(crate) fn join_row<'r>(
    left_row: Row,
    candidates: impl IntoIterator<Item = &'r Row>,
    condition: Option<&Expr>,
    kind: JoinKind,
    width: usize,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let (matched, more) = join_matches(&left_row, candidates, condition, ctx, sink)?;
    if !more {
        return Ok(false);
    }
    if !matched && kind.keeps_left() {
        return sink(ctx, padded(left_row, width));
    }
    Ok(true)
}

/// Emits `left_row` joined with each candidate that satisfies `condition`; returns whether
/// any did and whether to go on.
fn join_matches<'r>(
    left_row: &Row,
    candidates: impl IntoIterator<Item = &'r Row>,
    condition: Option<&Expr>,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<(bool, bool)> {
    let mut matched = false;
    for right_row in candidates {
        let mut joined = left_row.clone();
        joined.extend(right_row.iter().cloned());
        if let Some(condition) = condition {
            if !holds(condition, &joined, ctx)? {
                continue;
            }
        }
        matched = true;
        if !sink(ctx, joined)? {
            return Ok((true, false));
        }
    }
    Ok((matched, true))
}

fn padded(mut left_row: Row, width: usize) -> Row {
    left_row.extend(std::iter::repeat_n(Datum::Null, width));
    left_row
}

/// An unmatched right row of a FULL JOIN: `left_width` NULLs, then the row.
fn left_padded(right_row: &[Datum], left_width: usize) -> Row {
    let mut row = Vec::with_capacity(left_width + right_row.len());
    row.extend(std::iter::repeat_n(Datum::Null, left_width));
    row.extend_from_slice(right_row);
    row
}

/// A nested-loop join: the right side in a row store (in memory while it fits work_mem,
/// then in a temporary file read once per left row), each left row against all of it.
pub(crate) fn nested_loop_join(
    left: &Plan,
    right: &Plan,
    kind: JoinKind,
    on: Option<&Expr>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    if kind == JoinKind::Full {
        return nested_loop_full_join(left, right, on, ctx, probe, sink);
    }
    let mut store = RowStore::new(ctx);
    run(right, ctx, probe, &mut |_, row| store.push(row).map(|()| true))?;
    store.seal()?;
    let width = right.arity();
    if let Some(rows) = store.in_memory() {
        return run(left, ctx, probe, &mut |ctx, left_row| {
            join_row(left_row, rows, on, kind, width, ctx, sink)
        });
    }
    run(left, ctx, probe, &mut |ctx, left_row| {
        let mut matched = false;
        let more = store.for_each(&mut |right_row| {
            let (any, more) =
                join_matches(&left_row, std::slice::from_ref(&right_row), on, ctx, sink)?;
            matched |= any;
            Ok(more)
        })?;
        if !more {
            return Ok(false);
        }
        if !matched && kind == JoinKind::Left {
            return sink(ctx, padded(left_row, width));
        }
        Ok(true)
    })
}

/// FULL JOIN by nested loop (only for a condition that reads no column, `ON true`): the
/// right side in a row store with a matched flag per row (one byte, as `join_in_chunks`),
/// each left row against all of it, then the right rows never matched.
fn nested_loop_full_join(
    left: &Plan,
    right: &Plan,
    on: Option<&Expr>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut store = RowStore::new(ctx);
    let mut matched = Vec::new();
    run(right, ctx, probe, &mut |_, row| {
        matched.push(false);
        store.push(row).map(|()| true)
    })?;
    store.seal()?;
    let (left_width, width) = (left.arity(), right.arity());
    let more = run(left, ctx, probe, &mut |ctx, left_row| {
        let (mut position, mut any) = (0usize, false);
        let more = store.for_each(&mut |right_row| {
            let (hit, more) =
                join_matches(&left_row, std::slice::from_ref(&right_row), on, ctx, sink)?;
            matched[position] |= hit;
            any |= hit;
            position += 1;
            Ok(more)
        })?;
        if !more {
            return Ok(false);
        }
        if !any {
            return sink(ctx, padded(left_row, width));
        }
        Ok(true)
    })?;
    if !more {
        return Ok(false);
    }
    let mut position = 0usize;
    store.for_each(&mut |right_row| {
        position += 1;
        if matched[position - 1] {
            return Ok(true);
        }
        sink(ctx, left_padded(&right_row, left_width))
    })
}

/// A LATERAL join: `right` run once per left row with the left row as the innermost
/// outer row (what its `Expr::Outer { depth: 1 }` references read), its rows streamed. The
/// left row is taken off the outer rows while a joined row is tested and passed on, so
/// the plan above sees the outer rows it expects.
pub(crate) fn lateral_join(
    left: &Plan,
    right: &Plan,
    kind: JoinKind,
    on: Option<&Expr>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    assert!(!kind.keeps_right(), "a LATERAL join is inner or left");
    let width = right.arity();
    run(left, ctx, probe, &mut |ctx, left_row| {
        let mut matched = false;
        ctx.outer.push(left_row);
        let outcome = run(right, ctx, &[], &mut |ctx, right_row| {
            let left_row = ctx.outer.pop().expect("the left row was pushed");
            let mut joined = left_row.clone();
            joined.extend(right_row);
            let passed = match on {
                Some(on) => holds(on, &joined, ctx),
                None => Ok(true),
            };
            let more = match passed {
                Ok(true) => {
                    matched = true;
                    sink(ctx, joined)
                }
                Ok(false) => Ok(true),
                Err(error) => Err(error),
            };
            ctx.outer.push(left_row);
            more
        });
        let left_row = ctx.outer.pop().expect("the left row was pushed");
        if !outcome? {
            return Ok(false);
        }
        if !matched && kind.keeps_left() {
            return sink(ctx, padded(left_row, width));
        }
        Ok(true)
    })
}

/// What a hash join needs besides its inputs.
pub(crate) struct HashJoin<'p> {
    pub kind: JoinKind,
    pub left_keys: &'p [Expr],
    pub right_keys: &'p [Expr],
    pub residual: Option<&'p Expr>,
    /// Values of a right row (the padding of an unmatched left-join row).
    pub width: usize,
    /// Values of a left row (the padding of an unmatched FULL JOIN right row).
    pub left_width: usize,
}

/// The key of a row as the `group_key` encoding of its key expressions; `None` when one
/// is NULL (NULL keys match nothing).
fn join_key(keys: &[Expr], row: &Row, ctx: &mut Ctx<'_>) -> Result<Option<Vec<u8>>> {
    let mut key = Vec::new();
    Ok(encode_keys(keys, row, ctx, &mut key)?.then_some(key))
}

/// No further row in a key's chain.
const CHAIN_END: usize = usize::MAX;

/// The build side's rows by key: one table entry per key, holding the first and last row
/// of the key's chain through `next` (in arrival order), rather than a vector of rows per
/// key (an allocation per key, and one more cache miss per probe).
#[derive(Default)]
struct JoinTable {
    chains: KeyMap<(usize, usize)>,
    rows: Vec<Row>,
    /// The next row of the same key, per row (`CHAIN_END` after the last).
    next: Vec<usize>,
    /// Per row, whether a probe row matched it (FULL JOIN emits the others at the end).
    matched: Vec<bool>,
}

impl JoinTable {
    fn push(&mut self, key: &[u8], row: Row) {
        let index = self.rows.len();
        self.rows.push(row);
        self.next.push(CHAIN_END);
        self.matched.push(false);
        match self.chains.get_mut(key) {
            Some((_, last)) => {
                self.next[*last] = index;
                *last = index;
            }
            None => {
                self.chains.insert(key.into(), (index, index));
            }
        }
        debug_assert_eq!(self.rows.len(), self.next.len());
    }

    fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows with key `key`, in arrival order.
    fn matches<'t>(&'t self, key: &[u8]) -> Chain<'t> {
        let first = self.chains.get(key).map_or(CHAIN_END, |&(first, _)| first);
        Chain { table: self, at: first }
    }

    fn no_matches(&self) -> Chain<'_> {
        Chain { table: self, at: CHAIN_END }
    }

    /// FULL JOIN: emits `left_row` joined with each row of key `key` that passes
    /// `residual`, marking those rows matched; returns whether any did and whether to go on.
    fn probe_marking(
        &mut self,
        left_row: &Row,
        key: Option<&[u8]>,
        residual: Option<&Expr>,
        ctx: &mut Ctx<'_>,
        sink: &mut Sink<'_>,
    ) -> Result<(bool, bool)> {
        let mut at =
            key.and_then(|key| self.chains.get(key)).map_or(CHAIN_END, |&(first, _)| first);
        let mut any = false;
        while at != CHAIN_END {
            let index = at;
            at = self.next[index];
            let mut joined = left_row.clone();
            joined.extend(self.rows[index].iter().cloned());
            if let Some(residual) = residual {
                if !holds(residual, &joined, ctx)? {
                    continue;
                }
            }
            self.matched[index] = true;
            any = true;
            if !sink(ctx, joined)? {
                return Ok((true, false));
            }
        }
        Ok((any, true))
    }

    /// FULL JOIN: emits the rows no probe row matched, padded on the left.
    fn emit_unmatched(
        &self,
        left_width: usize,
        ctx: &mut Ctx<'_>,
        sink: &mut Sink<'_>,
    ) -> Result<bool> {
        for (row, _) in self.rows.iter().zip(&self.matched).filter(|(_, &matched)| !matched) {
            if !sink(ctx, left_padded(row, left_width))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Hands every row with its key to `each`, emptying the table.
    fn drain(&mut self, mut each: impl FnMut(&[u8], &Row) -> Result<()>) -> Result<()> {
        for (key, (first, _)) in self.chains.drain() {
            let mut at = first;
            while at != CHAIN_END {
                each(key.as_slice(), &self.rows[at])?;
                at = self.next[at];
            }
        }
        self.rows = Vec::new();
        self.next = Vec::new();
        self.matched = Vec::new();
        Ok(())
    }
}

/// The rows of one key in a `JoinTable`.
struct Chain<'t> {
    table: &'t JoinTable,
    at: usize,
}

impl<'t> Iterator for Chain<'t> {
    type Item = &'t Row;
    fn next(&mut self) -> Option<&'t Row> {
        if self.at == CHAIN_END {
            return None;
        }
        let row = &self.table.rows[self.at];
        self.at = self.table.next[self.at];
        Some(row)
    }
}

/// The build side: a hash table while its grant allows, then partitions.
struct Build {
    table: JoinTable,
    grant: MemoryGrant,
    partitions: Option<Partitions>,
    level: u32,
    /// The current row's key (one buffer for every row: a key is copied only when it is
    /// new to the table).
    key: Vec<u8>,
}

impl Build {
    fn new(ctx: &Ctx<'_>, level: u32) -> Build {
        let grant = SpillTarget::of(ctx).grant(ctx.budget.hash_mem_bytes);
        Build { table: JoinTable::default(), grant, partitions: None, level, key: Vec::new() }
    }

    /// Adds a right row; a row with a NULL key matches nothing and is handed back (a
    /// FULL JOIN emits it unmatched, the other joins drop it).
    fn add(&mut self, join: &HashJoin<'_>, row: Row, ctx: &mut Ctx<'_>) -> Result<Option<Row>> {
        let Build { table, grant, partitions, level, key } = self;
        if !encode_keys(join.right_keys, &row, ctx, key)? {
            return Ok(Some(row));
        }
        if let Some(partitions) = partitions {
            partitions.write(key, &row)?;
            return Ok(None);
        }
        if grant.try_grow(row_size(&row) + key.len()) {
            table.push(key, row);
            return Ok(None);
        }
        let mut spilled = Partitions::new(ctx, *level);
        table.drain(|held_key, held| spilled.write(held_key, held))?;
        grant.reset();
        spilled.write(key, &row)?;
        *partitions = Some(spilled);
        Ok(None)
    }

    /// Adds a right row from the build side's input: a FULL JOIN emits a row with a NULL
    /// key at once, padded (it can match nothing).
    fn add_input(
        &mut self,
        join: &HashJoin<'_>,
        row: Row,
        ctx: &mut Ctx<'_>,
        sink: &mut Sink<'_>,
    ) -> Result<bool> {
        match self.add(join, row, ctx)? {
            Some(row) if join.kind.keeps_right() => sink(ctx, left_padded(&row, join.left_width)),
            _ => Ok(true),
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn hash_join(
    left: &Plan,
    right: &Plan,
    join: &HashJoin<'_>,
    plan_id: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut stats = HashStats { batches: 1, ..HashStats::default() };
    let mut build = Build::new(ctx, 0);
    if !run(right, ctx, probe, &mut |ctx, row| build.add_input(join, row, ctx, sink))? {
        return Ok(false);
    }
    stats.peak_memory_bytes = build.grant.peak_bytes();
    let outcome = match build.partitions.take() {
        None => probe_table(join, &mut build.table, ctx, sink, &mut |ctx, each| {
            run(left, ctx, probe, each)
        }),
        Some(build_partitions) => {
            drop(build);
            let mut probe_partitions = Partitions::new(ctx, 0);
            let more = run(left, ctx, probe, &mut |ctx, left_row| match join_key(
                join.left_keys,
                &left_row,
                ctx,
            )? {
                Some(key) => probe_partitions.write(&key, &left_row).map(|()| true),
                None => join_row(left_row, &[], None, join.kind, join.width, ctx, sink),
            })?;
            if more {
                join_partitions(join, build_partitions, probe_partitions, 1, &mut stats, ctx, sink)
            } else {
                Ok(false)
            }
        }
    };
    record_memory(ctx, plan_id, stats.memory());
    outcome
}

/// Probes `table` with each row `probe_side` gives, then, for a FULL JOIN, emits the
/// table's rows no probe row matched.
fn probe_table(
    join: &HashJoin<'_>,
    table: &mut JoinTable,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
    probe_side: &mut dyn FnMut(&mut Ctx<'_>, &mut Sink<'_>) -> Result<bool>,
) -> Result<bool> {
    let mut key = Vec::new();
    if !join.kind.keeps_right() {
        return probe_side(ctx, &mut |ctx, left_row| {
            probe_row(join, table, left_row, &mut key, ctx, sink)
        });
    }
    let more = probe_side(ctx, &mut |ctx, left_row| {
        let present = encode_keys(join.left_keys, &left_row, ctx, &mut key)?;
        let key = present.then_some(key.as_slice());
        let (any, more) = table.probe_marking(&left_row, key, join.residual, ctx, sink)?;
        if !more {
            return Ok(false);
        }
        if !any {
            return sink(ctx, padded(left_row, join.width));
        }
        Ok(true)
    })?;
    if !more {
        return Ok(false);
    }
    table.emit_unmatched(join.left_width, ctx, sink)
}

/// Joins one left row with its matches in `table`; `key` is a buffer for its key.
fn probe_row(
    join: &HashJoin<'_>,
    table: &JoinTable,
    left_row: Row,
    key: &mut Vec<u8>,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let present = encode_keys(join.left_keys, &left_row, ctx, key)?;
    // A NULL key matches nothing.
    let candidates = if present { table.matches(key) } else { table.no_matches() };
    join_row(left_row, candidates, join.residual, join.kind, join.width, ctx, sink)
}

/// Joins each pair of partitions, one level down.
#[allow(clippy::too_many_arguments)]
fn join_partitions(
    join: &HashJoin<'_>,
    build: Partitions,
    probe: Partitions,
    level: u32,
    stats: &mut HashStats,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    stats.disk_bytes += build.bytes + probe.bytes;
    for (build_run, probe_run) in build.finish()?.into_iter().zip(probe.finish()?) {
        let Some(probe_run) = probe_run else {
            // No left row has these keys: only a FULL JOIN emits, padded.
            if let (Some(build_run), true) = (build_run, join.kind.keeps_right()) {
                let left_width = join.left_width;
                let each: &mut Sink<'_> = &mut |ctx, row| sink(ctx, left_padded(&row, left_width));
                if !replay(&build_run, ctx, each)? {
                    return Ok(false);
                }
            }
            continue;
        };
        stats.batches += 1;
        if !join_runs(join, build_run, &probe_run, level, stats, ctx, sink)? {
            return Ok(false);
        }
    }
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
fn join_runs(
    join: &HashJoin<'_>,
    build_run: Option<TempRun>,
    probe_run: &TempRun,
    level: u32,
    stats: &mut HashStats,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let Some(build_run) = build_run else {
        // No right row has these keys: only a LEFT or FULL JOIN emits, padded.
        if !join.kind.keeps_left() {
            return Ok(true);
        }
        return replay(probe_run, ctx, &mut |ctx, row| sink(ctx, padded(row, join.width)));
    };
    if level > SPILL_LEVELS_MAX {
        return join_in_chunks(join, &build_run, probe_run, ctx, sink);
    }
    let mut build = Build::new(ctx, level);
    replay(&build_run, ctx, &mut |ctx, row| {
        let dropped = build.add(join, row, ctx)?;
        assert!(dropped.is_none(), "NULL keys are not spilled");
        Ok(true)
    })?;
    drop(build_run);
    stats.peak_memory_bytes = stats.peak_memory_bytes.max(build.grant.peak_bytes());
    let Some(build_partitions) = build.partitions.take() else {
        return probe_table(join, &mut build.table, ctx, sink, &mut |ctx, each| {
            replay(probe_run, ctx, each)
        });
    };
    drop(build);
    let mut probe_partitions = Partitions::new(ctx, level);
    replay(probe_run, ctx, &mut |ctx, left_row| {
        let key = join_key(join.left_keys, &left_row, ctx)?.expect("NULL keys are not spilled");
        probe_partitions.write(&key, &left_row).map(|()| true)
    })?;
    join_partitions(join, build_partitions, probe_partitions, level + 1, stats, ctx, sink)
}

/// The fallback for a partition whose build side still does not fit after
/// `SPILL_LEVELS_MAX` splits (one key on most rows): the build side in chunks that fit
/// hash_mem, the probe side read once per chunk. A left join remembers which probe rows
/// matched (one flag per row) and pads the others after the last chunk; a FULL JOIN emits
/// each chunk's unmatched build rows after the chunk's pass.
fn join_in_chunks(
    join: &HashJoin<'_>,
    build_run: &TempRun,
    probe_run: &TempRun,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut matched = vec![false; usize::try_from(probe_run.records()).expect("fits usize")];
    let mut reader = build_run.reader(SPILL_READ_BUFFER_BYTES);
    let mut pending = read_row(&mut reader)?;
    while pending.is_some() {
        let mut grant = SpillTarget::of(ctx).grant(ctx.budget.hash_mem_bytes);
        let mut table = JoinTable::default();
        while let Some(row) = pending.take() {
            let key = join_key(join.right_keys, &row, ctx)?.expect("NULL keys are not spilled");
            let bytes = row_size(&row) + key.len();
            if !table.is_empty() && !grant.try_grow(bytes) {
                pending = Some(row);
                break;
            }
            table.push(&key, row);
            pending = read_row(&mut reader)?;
        }
        let mut position = 0usize;
        let more = replay(probe_run, ctx, &mut |ctx, left_row| {
            let key = join_key(join.left_keys, &left_row, ctx)?.expect("NULL keys are not spilled");
            let (any, more) =
                table.probe_marking(&left_row, Some(&key), join.residual, ctx, sink)?;
            matched[position] |= any;
            position += 1;
            Ok(more)
        })?;
        if !more {
            return Ok(false);
        }
        if join.kind.keeps_right() && !table.emit_unmatched(join.left_width, ctx, sink)? {
            return Ok(false);
        }
    }
    if !join.kind.keeps_left() {
        return Ok(true);
    }
    let mut position = 0usize;
    replay(probe_run, ctx, &mut |ctx, left_row| {
        position += 1;
        if matched[position - 1] {
            return Ok(true);
        }
        sink(ctx, padded(left_row, join.width))
    })
}
