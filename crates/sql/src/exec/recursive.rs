//! WITH RECURSIVE: PostgreSQL's Recursive Union and WorkTable Scan.
//!
//! The non-recursive term's rows are emitted and kept as the working table; then the
//! recursive term runs over the working table (its `WorkTableScan` reads it) and its rows
//! become the next working table, until a run produces no row. Rows are passed on as they
//! are produced, so a LIMIT above stops an otherwise endless recursion, as PostgreSQL's lazy
//! evaluation does. Both working tables are row stores (memory up to work_mem, then a
//! temporary file).
//!
//! Without ALL a row equal to one already produced (in any run) is dropped. The rows
//! produced so far are remembered by their `group_key` encodings in a hash set while it
//! fits work_mem x hash_mem_multiplier. Past that the set stops growing: a row whose key
//! is not in it is written to one of `SPILL_PARTITIONS` pending files by its key's hash,
//! and at the end of the run each pending file is checked against that partition's file
//! of keys (loaded as a hash set: a thirty-second of the keys spilled so far), whose new
//! rows are then emitted, appended to the partition's keys and added to the working table.
//! PostgreSQL keeps its whole set in memory instead (its hash table does not spill).
//!
//! ```text
//! row ─► key in the set? ── yes ─► dropped
//!            │ no
//!            ├─ fits and nothing spilled ─► set, emitted, next working table
//!            └─ otherwise ─► pending[hash(key)] ─► end of run: checked against keys[hash]
//! ```

use std::sync::Arc;

use tierdb_storage::{MemoryGrant, TempRun};

use super::group_key::GroupKey;
use super::hash::{encode_row_key, HashStats};
use super::spill::{
    read_row, storage_error, GroupKeySet, Partitions, RowStore, SpillTarget,
    PARTITION_BUFFER_BYTES, SPILL_PARTITIONS, SPILL_READ_BUFFER_BYTES,
};
use super::*;

/// Bytes a key of the set costs beyond its own (hash slot and allocation).
const SEEN_ENTRY_OVERHEAD_BYTES: usize = 48;
/// Rows of a working table read between two checks for cancel and statement_timeout.
const CANCEL_CHECK_ROWS: usize = 256;

/// The working tables of the recursions being run, by their plan's `work_table` number.
#[derive(Default)]
pub struct WorkTables {
    tables: HashMap<usize, Arc<RowStore>>,
}

impl WorkTables {
    /// Keeps the sealed rows of a data-modifying CTE as the working table `work_table`.
    pub(crate) fn insert(&mut self, work_table: usize, store: RowStore) {
        let replaced = self.tables.insert(work_table, Arc::new(store));
        assert!(replaced.is_none(), "a data-modifying CTE runs once");
    }
}

/// Reads the working table `work_table` into `sink`.
pub(super) fn work_table_scan(
    work_table: usize,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let Some(store) = ctx.work_tables.tables.get(&work_table).cloned() else {
        return Err(SqlError::internal("a WorkTable Scan ran outside its Recursive Union"));
    };
    let mut read = 0usize;
    store.for_each(&mut |row| {
        read += 1;
        if read.is_multiple_of(CANCEL_CHECK_ROWS) {
            ctx.check_cancel()?;
        }
        sink(ctx, row)
    })
}

/// The plan of one Recursive Union node.
pub(super) struct Recursion<'p> {
    pub non_recursive: &'p Plan,
    pub recursive: &'p Plan,
    pub all: bool,
    pub work_table: usize,
    pub plan_id: usize,
}

/// Runs a Recursive Union (see the module comment); returns false if the sink stopped it.
pub(super) fn run_recursive_union(
    recursion: &Recursion<'_>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut seen = (!recursion.all).then(|| SeenRows::new(ctx));
    let mut round = Round { working: RowStore::new(ctx), produced: 0 };
    let mut more = round.run(recursion.non_recursive, &mut seen, ctx, probe, sink)?;
    while more && round.produced > 0 {
        ctx.check_cancel()?;
        let mut previous = std::mem::replace(&mut round, Round::new(ctx));
        previous.working.seal()?;
        let saved = ctx.work_tables.tables.insert(recursion.work_table, Arc::new(previous.working));
        let outcome = round.run(recursion.recursive, &mut seen, ctx, probe, sink);
        match saved {
            Some(saved) => ctx.work_tables.tables.insert(recursion.work_table, saved),
            None => ctx.work_tables.tables.remove(&recursion.work_table),
        };
        more = outcome?;
    }
    if let Some(seen) = seen {
        record_memory(ctx, recursion.plan_id, seen.stats.memory());
    }
    Ok(more)
}

/// One run of a term: the rows it produced become the next working table.
struct Round {
    working: RowStore,
    produced: usize,
}

impl Round {
    fn new(ctx: &Ctx<'_>) -> Round {
        Round { working: RowStore::new(ctx), produced: 0 }
    }

    /// Runs `term`, passing on (and keeping) each row not seen before.
    fn run(
        &mut self,
        term: &Plan,
        seen: &mut Option<SeenRows>,
        ctx: &mut Ctx<'_>,
        probe: &[Datum],
        sink: &mut Sink<'_>,
    ) -> Result<bool> {
        let more = run(term, ctx, probe, &mut |ctx, row| {
            if let Some(seen) = seen.as_mut() {
                if !seen.admit(ctx, &row)? {
                    return Ok(true);
                }
            }
            self.keep(ctx, row, sink)
        })?;
        match seen.as_mut() {
            Some(seen) if more => seen.resolve(ctx, &mut |ctx, row| self.keep(ctx, row, sink)),
            _ => Ok(more),
        }
    }

    fn keep(&mut self, ctx: &mut Ctx<'_>, row: Row, sink: &mut Sink<'_>) -> Result<bool> {
        self.produced += 1;
        self.working.push(row.clone())?;
        sink(ctx, row)
    }
}

/// The keys of the rows a UNION recursion produced (see the module comment).
struct SeenRows {
    target: SpillTarget,
    grant: MemoryGrant,
    resident: GroupKeySet,
    /// Past the grant: per partition, the keys admitted since (one file each).
    spilled_keys: Option<Vec<Option<TempRun>>>,
    /// Rows of this run whose keys are not resident, waiting for `resolve`.
    pending: Option<Partitions>,
    key: Vec<u8>,
    stats: HashStats,
}

impl SeenRows {
    fn new(ctx: &Ctx<'_>) -> SeenRows {
        let target = SpillTarget::of(ctx);
        let grant = target.grant(ctx.budget.hash_mem_bytes);
        SeenRows {
            target,
            grant,
            resident: GroupKeySet::default(),
            spilled_keys: None,
            pending: None,
            key: Vec::new(),
            stats: HashStats { batches: 1, ..HashStats::default() },
        }
    }

    /// Whether `row` is new and may be emitted now: false for a row seen before and for one
    /// set aside until `resolve`.
    fn admit(&mut self, ctx: &Ctx<'_>, row: &Row) -> Result<bool> {
        encode_row_key(row, &mut self.key);
        if self.resident.contains(self.key.as_slice()) {
            return Ok(false);
        }
        let bytes = self.key.len() + SEEN_ENTRY_OVERHEAD_BYTES;
        if self.spilled_keys.is_none() && self.grant.try_grow(bytes) {
            self.resident.insert(GroupKey::from(self.key.as_slice()));
            self.stats.peak_memory_bytes = self.grant.peak_bytes();
            return Ok(true);
        }
        self.spilled_keys.get_or_insert_with(|| (0..SPILL_PARTITIONS).map(|_| None).collect());
        let pending = self.pending.get_or_insert_with(|| Partitions::new(ctx, 0));
        pending.write(&self.key, row)?;
        Ok(false)
    }

    /// Checks the rows set aside in this run against the spilled keys of their partitions;
    /// hands each new one to `each`. Returns false if `each` stopped.
    fn resolve(
        &mut self,
        ctx: &mut Ctx<'_>,
        each: &mut dyn FnMut(&mut Ctx<'_>, Row) -> Result<bool>,
    ) -> Result<bool> {
        let Some(pending) = self.pending.take() else {
            return Ok(true);
        };
        self.stats.disk_bytes += pending.bytes;
        let spilled = self.spilled_keys.as_mut().expect("rows are set aside once keys spill");
        for (index, run) in pending.finish()?.into_iter().enumerate() {
            let Some(run) = run else { continue };
            self.stats.batches += 1;
            let mut known = GroupKeySet::default();
            let mut keys = self
                .target
                .space
                .create_buffered(&self.target.usage, PARTITION_BUFFER_BYTES)
                .map_err(storage_error)?;
            if let Some(old) = spilled[index].take() {
                let mut reader = old.reader(SPILL_READ_BUFFER_BYTES);
                while let Some(key) = reader.next_record().map_err(storage_error)? {
                    known.insert(GroupKey::from(key));
                    keys.write(key).map_err(storage_error)?;
                }
            }
            let mut reader = run.reader(SPILL_READ_BUFFER_BYTES);
            while let Some(row) = read_row(&mut reader)? {
                ctx.check_cancel()?;
                encode_row_key(&row, &mut self.key);
                if known.insert(GroupKey::from(self.key.as_slice())) {
                    keys.write(&self.key).map_err(storage_error)?;
                    if !each(ctx, row)? {
                        return Ok(false);
                    }
                }
            }
            self.stats.disk_bytes += keys.bytes();
            spilled[index] = Some(keys.finish().map_err(storage_error)?);
        }
        Ok(true)
    }
}
