//! Hash grouping that spills: the one driver of hash aggregation, DISTINCT, UNION,
//! INTERSECT and EXCEPT (design 011).
//!
//! Groups live in memory while the operator's grant (work_mem x hash_mem_multiplier) has
//! room. When a new group does not fit, the table stops growing: rows of groups already in
//! it are still folded in, and rows of every other group are written, as they came, to one
//! of `SPILL_PARTITIONS` temporary files by a hash of their key (PostgreSQL 13's hash
//! aggregation). When the input ends, the groups in memory are finished and freed, and
//! each partition is read back as the input of the same operator one level down, with
//! other bits of the hash, so a partition that is still too big splits again. Past
//! `SPILL_LEVELS_MAX` levels, the groups of a partition are all held (only a partition of
//! that many groups hashing alike could get there).
//!
//! ```text
//! row ─► key ─► in table? ── yes ─► next(state, row)
//!                  │ no
//!                  ├─ fits and nothing spilled yet ─► first(row) ─► table
//!                  └─ otherwise ─► partition[hash(key, level)] ─► later: run_hash(level + 1)
//! ```

use super::spill::{replay, KeyMap, Partitions, SpillTarget, SPILL_LEVELS_MAX};
use super::*;

/// Bytes a table entry costs beyond its key and state (hash slot, vector slot).
const ENTRY_OVERHEAD_BYTES: usize = 64;

/// What one hash operator does with its groups.
pub(crate) trait HashOp {
    type State;
    /// The grouping key of `row` (a `group_key` encoding), written into `out` (cleared).
    fn key(&mut self, ctx: &mut Ctx<'_>, row: &Row, out: &mut Vec<u8>) -> Result<()>;
    /// Bytes a new group of `row`, with key `key`, will hold.
    fn group_bytes(&self, key: &[u8], row: &Row) -> usize;
    /// A new group's state from its first row; may emit (DISTINCT streams). Returns the
    /// state and whether to go on.
    fn first(
        &mut self,
        ctx: &mut Ctx<'_>,
        row: Row,
        sink: &mut Sink<'_>,
    ) -> Result<(Self::State, bool)>;
    /// A later row of a group in memory; returns bytes the state grew by.
    fn next(&mut self, ctx: &mut Ctx<'_>, state: &mut Self::State, row: Row) -> Result<usize>;
    /// Emits a finished group; returns whether to go on.
    fn finish(
        &mut self,
        ctx: &mut Ctx<'_>,
        state: Self::State,
        sink: &mut Sink<'_>,
    ) -> Result<bool>;
}

/// Produces an operator's input rows, calling the given sink per row; returns false if the
/// sink stopped it.
pub(crate) type Feed<'f> = dyn FnMut(&mut Ctx<'_>, &mut Sink<'_>) -> Result<bool> + 'f;

/// Batches, peak memory and bytes spilled over every level of one operator.
#[derive(Default)]
pub(crate) struct HashStats {
    pub batches: u64,
    pub peak_memory_bytes: usize,
    pub disk_bytes: u64,
}

impl HashStats {
    pub fn memory(&self) -> OperatorMemory {
        OperatorMemory::Hash {
            batches: self.batches,
            memory_bytes: self.peak_memory_bytes,
            disk_bytes: self.disk_bytes,
        }
    }
}

/// Runs `op` over the rows `feed` produces (see the module comment). Returns false if the
/// sink stopped it.
pub(crate) fn run_hash<O: HashOp>(
    op: &mut O,
    level: u32,
    stats: &mut HashStats,
    ctx: &mut Ctx<'_>,
    feed: &mut Feed<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let target = SpillTarget::of(ctx);
    let mut grant = target.grant(ctx.budget.hash_mem_bytes);
    let hold_everything = level >= SPILL_LEVELS_MAX;
    let mut slots: KeyMap<usize> = KeyMap::default();
    let mut states: Vec<O::State> = Vec::new();
    let mut partitions: Option<Partitions> = None;
    stats.batches += 1;
    // One key buffer for every row: a key is copied only when it starts a group.
    let mut key = Vec::new();
    let more = feed(ctx, &mut |ctx, row| {
        op.key(ctx, &row, &mut key)?;
        if let Some(&slot) = slots.get(key.as_slice()) {
            let grown = op.next(ctx, &mut states[slot], row)?;
            grant.force_grow(grown);
            return Ok(true);
        }
        let bytes = key.len() + op.group_bytes(&key, &row) + ENTRY_OVERHEAD_BYTES;
        let admit = partitions.is_none() && grant.try_grow(bytes);
        if !admit && !hold_everything {
            let spill = partitions.get_or_insert_with(|| Partitions::new(ctx, level));
            return spill.write(&key, &row).map(|()| true);
        }
        if !admit {
            grant.force_grow(bytes);
        }
        let (state, more) = op.first(ctx, row, sink)?;
        slots.insert(key.as_slice().into(), states.len());
        states.push(state);
        Ok(more)
    })?;
    stats.peak_memory_bytes = stats.peak_memory_bytes.max(grant.peak_bytes());
    if !more {
        return Ok(false);
    }
    drop(slots);
    for state in states {
        if !op.finish(ctx, state, sink)? {
            return Ok(false);
        }
    }
    drop(grant);
    let Some(partitions) = partitions else {
        return Ok(true);
    };
    stats.disk_bytes += partitions.bytes;
    for run in partitions.finish()?.into_iter().flatten() {
        let mut feed = |ctx: &mut Ctx<'_>, each: &mut Sink<'_>| replay(&run, ctx, each);
        if !run_hash(op, level + 1, stats, ctx, &mut feed, sink)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `group_key` of a whole row, into `out` (cleared first).
pub(crate) fn encode_row_key(row: &[Datum], out: &mut Vec<u8>) {
    out.clear();
    for datum in row {
        datum.group_key(out);
    }
}

/// DISTINCT and UNION: a row passes the first time its value is seen.
pub(crate) struct DistinctOp;

impl HashOp for DistinctOp {
    type State = ();
    fn key(&mut self, _: &mut Ctx<'_>, row: &Row, out: &mut Vec<u8>) -> Result<()> {
        encode_row_key(row, out);
        Ok(())
    }
    fn group_bytes(&self, _: &[u8], _: &Row) -> usize {
        0
    }
    fn first(&mut self, ctx: &mut Ctx<'_>, row: Row, sink: &mut Sink<'_>) -> Result<((), bool)> {
        Ok(((), sink(ctx, row)?))
    }
    fn next(&mut self, _: &mut Ctx<'_>, _: &mut (), _: Row) -> Result<usize> {
        Ok(0)
    }
    fn finish(&mut self, _: &mut Ctx<'_>, _: (), _: &mut Sink<'_>) -> Result<bool> {
        Ok(true)
    }
}

/// INTERSECT and EXCEPT [ALL] (PostgreSQL's HashSetOp): each distinct row counts its
/// copies on the left and on the right; the output follows from the counts. Input rows
/// carry one more value at the end, true on the right side.
pub(crate) struct SetOp {
    pub intersect: bool,
    pub all: bool,
    /// Values of a row without the side flag.
    pub width: usize,
}

/// The first left row of a value and the copies on each side.
pub(crate) struct SetCounts {
    row: Option<Row>,
    left: u64,
    right: u64,
}

impl SetOp {
    fn count(state: &mut SetCounts, mut row: Row) -> usize {
        let right = matches!(row.pop(), Some(Datum::Bool(true)));
        if right {
            state.right += 1;
            return 0;
        }
        state.left += 1;
        if state.row.is_some() {
            return 0;
        }
        let bytes = row_size(&row);
        state.row = Some(row);
        bytes
    }
}

impl HashOp for SetOp {
    type State = SetCounts;
    fn key(&mut self, _: &mut Ctx<'_>, row: &Row, out: &mut Vec<u8>) -> Result<()> {
        encode_row_key(&row[..self.width], out);
        Ok(())
    }
    fn group_bytes(&self, _: &[u8], row: &Row) -> usize {
        row_size(row)
    }
    fn first(&mut self, _: &mut Ctx<'_>, row: Row, _: &mut Sink<'_>) -> Result<(SetCounts, bool)> {
        let mut state = SetCounts { row: None, left: 0, right: 0 };
        SetOp::count(&mut state, row);
        Ok((state, true))
    }
    fn next(&mut self, _: &mut Ctx<'_>, state: &mut SetCounts, row: Row) -> Result<usize> {
        Ok(SetOp::count(state, row))
    }
    fn finish(&mut self, ctx: &mut Ctx<'_>, state: SetCounts, sink: &mut Sink<'_>) -> Result<bool> {
        let Some(row) = state.row else {
            return Ok(true);
        };
        let copies = match (self.intersect, self.all) {
            (true, true) => state.left.min(state.right),
            (true, false) => u64::from(state.right > 0),
            (false, true) => state.left.saturating_sub(state.right),
            (false, false) => u64::from(state.right == 0),
        };
        for _ in 0..copies {
            if !sink(ctx, row.clone())? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
