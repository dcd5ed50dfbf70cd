//! Index builds on a populated table (`create_index`): the backfill pass pushes one record per
//! row version into an external sort bounded by maintenance_work_mem (spilling runs to the
//! temp space), and the sorted stream is bulk loaded into a new tree. A unique index is
//! checked on the sorted stream: entries sort by (index values, primary key), so two live rows
//! with equal values are adjacent among the live records. Progress is published in a bounded
//! registry (`pg_stat_progress_create_index`) while a build runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tierdb_access::{ExternalSort, SortRecord, Sorted};
use tierdb_storage::{MemoryGrant, PageStore, TempUsage};

use crate::error::{EngineError, Result};

/// maintenance_work_mem's default (PostgreSQL 15's): the memory an index build sorts in.
pub const MAINTENANCE_WORK_MEM_DEFAULT_BYTES: usize = 64 << 20;

/// Index builds the progress registry holds at most. Builds hold the DDL lock exclusively, so
/// one runs at a time; the bound only guards the registry against misuse.
const INDEX_BUILDS_MAX: usize = 64;

/// Progress counters are published every this many records (not every record: a build
/// loads millions, and the registry is a mutex).
const PROGRESS_STEP_RECORDS: u64 = 1024;

/// How one index build runs, from the session that asked for it.
#[derive(Clone, Debug)]
pub struct IndexBuildOptions {
    /// maintenance_work_mem: the sort's memory before it spills runs to the temp space.
    pub memory_bytes: usize,
    /// The session's temp file accounting (temp_file_limit); a fresh one if `None`.
    pub usage: Option<Arc<TempUsage>>,
    /// The building session's process id, the table's and the index's OIDs: shown by
    /// the progress view, opaque to the engine.
    pub pid: i32,
    pub relid: u32,
    pub index_relid: u32,
}

impl Default for IndexBuildOptions {
    fn default() -> IndexBuildOptions {
        IndexBuildOptions {
            memory_bytes: MAINTENANCE_WORK_MEM_DEFAULT_BYTES,
            usage: None,
            pid: 0,
            relid: 0,
            index_relid: 0,
        }
    }
}

/// The phase of a running build, named as PostgreSQL's progress view names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexBuildPhase {
    Scanning,
    Sorting,
    Loading,
}

impl IndexBuildPhase {
    pub fn name(self) -> &'static str {
        match self {
            IndexBuildPhase::Scanning => "building index: scanning table",
            IndexBuildPhase::Sorting => "building index: sorting live tuples",
            IndexBuildPhase::Loading => "building index: loading tuples in tree",
        }
    }
}

/// A snapshot of one running build.
#[derive(Clone, Debug)]
pub struct IndexBuildProgress {
    pub pid: i32,
    pub relid: u32,
    pub index_relid: u32,
    pub table: String,
    pub index: String,
    pub phase: IndexBuildPhase,
    /// Records to load (known once sorted; 0 before, as PostgreSQL shows).
    pub tuples_total: u64,
    /// Records loaded so far (advances only while loading, as in PostgreSQL).
    pub tuples_done: u64,
}

/// The running builds, keyed by the building session's pid.
#[derive(Default)]
pub(super) struct IndexBuildRegistry {
    builds: Mutex<HashMap<i32, IndexBuildProgress>>,
}

impl IndexBuildRegistry {
    pub(super) fn snapshot(&self) -> Vec<IndexBuildProgress> {
        let mut builds: Vec<IndexBuildProgress> = self.builds.lock().values().cloned().collect();
        builds.sort_by_key(|build| build.pid);
        builds
    }

    /// Registers a build; the guard removes it when the build ends, however it ends.
    fn start(&self, progress: IndexBuildProgress) -> ProgressGuard<'_> {
        let pid = progress.pid;
        let mut builds = self.builds.lock();
        // Past the bound the build runs unreported rather than failing.
        let registered = builds.len() < INDEX_BUILDS_MAX && !builds.contains_key(&pid);
        if registered {
            builds.insert(pid, progress);
        }
        ProgressGuard { registry: self, pid, registered }
    }
}

struct ProgressGuard<'a> {
    registry: &'a IndexBuildRegistry,
    pid: i32,
    registered: bool,
}

impl ProgressGuard<'_> {
    fn update(&self, change: impl FnOnce(&mut IndexBuildProgress)) {
        if !self.registered {
            return;
        }
        if let Some(progress) = self.registry.builds.lock().get_mut(&self.pid) {
            change(progress);
        }
    }
}

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        if self.registered {
            self.registry.builds.lock().remove(&self.pid);
        }
    }
}

/// A sort record: the index entry (index values, then primary key) followed by a trailer of
/// `TRAILER_BYTES`: whether the row's value counts as live for the unique check, and the
/// length of the index values (the entry's prefix compared between neighbours). Entries are
/// self-delimiting (key encoding), so no entry is a proper prefix of another: the trailer
/// changes the order only among equal entries, which stay adjacent.
///
/// `head` is the record's first 8 bytes as a big-endian number (zero-padded): comparing it
/// first orders most pairs without a call to `memcmp` (an index build makes some 20 million
/// comparisons per million rows), and a boxed slice keeps a record at 24 bytes besides its
/// entry, so that a million int entries sort in maintenance_work_mem's default without
/// spilling.
struct BuildRecord {
    head: u64,
    record: Box<[u8]>,
}

impl BuildRecord {
    fn new(record: Box<[u8]>) -> BuildRecord {
        let mut head = [0u8; 8];
        let length = record.len().min(8);
        head[..length].copy_from_slice(&record[..length]);
        BuildRecord { head: u64::from_be_bytes(head), record }
    }
}

impl SortRecord for BuildRecord {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.record);
    }

    fn decode(bytes: &[u8]) -> std::result::Result<BuildRecord, String> {
        Ok(BuildRecord::new(bytes.into()))
    }

    /// The entry's heap bytes, rounded up to the allocator's 8-byte granularity (the sort
    /// adds the record's own size).
    fn memory_bytes(&self) -> usize {
        self.record.len().next_multiple_of(8)
    }
}

const TRAILER_BYTES: usize = 5;

fn push_trailer(entry: &mut Vec<u8>, live: bool, prefix_bytes: usize) -> Result<()> {
    let prefix_bytes = u32::try_from(prefix_bytes)
        .map_err(|_| EngineError::InvalidRow { detail: "index entry too long".to_string() })?;
    entry.push(u8::from(live));
    entry.extend_from_slice(&prefix_bytes.to_le_bytes());
    Ok(())
}

/// Removes the trailer: (live, prefix length).
fn pop_trailer(record: &mut Vec<u8>) -> Result<(bool, usize)> {
    let corrupt = |detail: String| EngineError::Corrupt { what: "index build record", detail };
    let Some(start) = record.len().checked_sub(TRAILER_BYTES) else {
        return Err(corrupt(format!("record of {} bytes", record.len())));
    };
    let [flag, a, b, c, d] = record[start..] else {
        return Err(corrupt(format!("trailer of {} bytes", record.len() - start)));
    };
    let prefix_bytes = usize::try_from(u32::from_le_bytes([a, b, c, d]))
        .map_err(|error| corrupt(error.to_string()))?;
    record.truncate(start);
    if prefix_bytes > record.len() {
        return Err(corrupt(format!("prefix of {prefix_bytes} bytes in {}", record.len())));
    }
    Ok((flag != 0, prefix_bytes))
}

/// The records' byte order: the heads decide unless equal (then so are the first 8 bytes).
fn compare_records(a: &BuildRecord, b: &BuildRecord) -> std::cmp::Ordering {
    a.head.cmp(&b.head).then_with(|| a.record.cmp(&b.record))
}

type RecordSort = ExternalSort<BuildRecord, fn(&BuildRecord, &BuildRecord) -> std::cmp::Ordering>;

/// One build in progress: the sort the backfill pass feeds, its progress entry and counters.
pub(super) struct IndexBuild<'a> {
    sort: RecordSort,
    progress: ProgressGuard<'a>,
    unique: bool,
    log: BuildLog,
}

/// What the server log says of a build: its end line, or a failure line when dropped
/// unfinished (an error anywhere in the build).
struct BuildLog {
    table: String,
    index: String,
    rows: u64,
    started: Instant,
    finished: bool,
}

impl Drop for BuildLog {
    fn drop(&mut self) {
        if !self.finished {
            tracing::info!(
                table = %self.table,
                index = %self.index,
                rows = self.rows,
                elapsed_ms = self.started.elapsed().as_millis(),
                "index build failed"
            );
        }
    }
}

impl<'a> IndexBuild<'a> {
    pub(super) fn start(
        store: &'a Arc<PageStore>,
        registry: &'a IndexBuildRegistry,
        options: &IndexBuildOptions,
        table: &str,
        index: &str,
        unique: bool,
    ) -> IndexBuild<'a> {
        let temp = store.temp_space();
        let grant = MemoryGrant::new(temp.memory(), options.memory_bytes);
        let usage = options.usage.clone().unwrap_or_else(|| Arc::new(TempUsage::new(None)));
        let sort = ExternalSort::new(temp, &usage, grant, compare_records as fn(&_, &_) -> _);
        let progress = registry.start(IndexBuildProgress {
            pid: options.pid,
            relid: options.relid,
            index_relid: options.index_relid,
            table: table.to_string(),
            index: index.to_string(),
            phase: IndexBuildPhase::Scanning,
            tuples_total: 0,
            tuples_done: 0,
        });
        tracing::info!(table, index, memory_bytes = options.memory_bytes, "index build started");
        IndexBuild {
            sort,
            progress,
            unique,
            log: BuildLog {
                table: table.to_string(),
                index: index.to_string(),
                rows: 0,
                started: Instant::now(),
                finished: false,
            },
        }
    }

    /// Counts one row scanned (its versions are pushed separately).
    pub(super) fn row_scanned(&mut self) {
        self.log.rows += 1;
    }

    /// Adds the entry `prefix ++ key` of one row version; `live`: its value counts for the
    /// unique check (at most one version per row).
    pub(super) fn push(&mut self, mut prefix: Vec<u8>, key: &[u8], live: bool) -> Result<()> {
        let prefix_bytes = prefix.len();
        prefix.reserve_exact(key.len() + TRAILER_BYTES);
        prefix.extend_from_slice(key);
        push_trailer(&mut prefix, live, prefix_bytes)?;
        self.sort.push(BuildRecord::new(prefix.into_boxed_slice()))?;
        Ok(())
    }

    /// Sorts the entries and bulk loads them into a new tree in `tree_store` (the table's:
    /// a temp table's index goes to the temp tables' store); 23505 (`UniqueViolation`) if
    /// two live rows of a unique index have equal values.
    pub(super) fn finish(self, tree_store: &Arc<PageStore>) -> Result<tierdb_access::BTree> {
        let IndexBuild { sort, progress, unique, mut log } = self;
        progress.update(|progress| progress.phase = IndexBuildPhase::Sorting);
        let sorted = sort.finish()?;
        let stats = sorted.stats();
        progress.update(|progress| {
            progress.phase = IndexBuildPhase::Loading;
            progress.tuples_total = stats.records;
        });
        let mut loader = Loader {
            sorted,
            pending: None,
            last_live: None,
            unique,
            index: &log.index,
            progress: &progress,
            consumed: 0,
            loaded: 0,
            error: None,
        };
        let tree = tierdb_access::BTree::bulk_load(Arc::clone(tree_store), &mut loader);
        if let Some(error) = loader.error {
            return Err(error);
        }
        let tree = tree?;
        let entries = loader.loaded;
        tracing::info!(
            table = %log.table,
            index = %log.index,
            rows = log.rows,
            entries,
            runs = stats.runs,
            spilled_bytes = stats.spilled_bytes,
            elapsed_ms = log.started.elapsed().as_millis(),
            "index build finished"
        );
        log.finished = true;
        Ok(tree)
    }
}

/// The sorted records as bulk load entries (index entry, primary key): equal entries (versions
/// of one row with the same value) collapse into one, and a unique index is checked. The
/// first error ends the stream and is kept for the caller (bulk load takes plain entries).
struct Loader<'a, F> {
    sorted: Sorted<BuildRecord, F>,
    /// The entry read but not yet given out: (entry, live, prefix length).
    pending: Option<(Vec<u8>, bool, usize)>,
    /// The last live entry given out and its prefix length.
    last_live: Option<(Vec<u8>, usize)>,
    unique: bool,
    index: &'a str,
    progress: &'a ProgressGuard<'a>,
    /// Sorted records read (tuples_done) and distinct entries given out.
    consumed: u64,
    loaded: u64,
    error: Option<EngineError>,
}

impl<F: Fn(&BuildRecord, &BuildRecord) -> std::cmp::Ordering> Loader<'_, F> {
    /// The next distinct entry, its versions' live flags combined.
    fn next_entry(&mut self) -> Result<Option<(Vec<u8>, bool, usize)>> {
        loop {
            let Some(BuildRecord { record, .. }) = self.sorted.next_record()? else {
                return Ok(self.pending.take());
            };
            let mut entry = record.into_vec();
            self.consumed += 1;
            if self.consumed.is_multiple_of(PROGRESS_STEP_RECORDS) {
                let consumed = self.consumed;
                self.progress.update(|progress| progress.tuples_done = consumed);
            }
            let (live, prefix_bytes) = pop_trailer(&mut entry)?;
            match &mut self.pending {
                Some(pending) if pending.0 == entry => pending.1 |= live,
                _ => {
                    let previous = self.pending.replace((entry, live, prefix_bytes));
                    if previous.is_some() {
                        return Ok(previous);
                    }
                }
            }
        }
    }

    fn check_unique(&mut self, entry: &[u8], live: bool, prefix_bytes: usize) -> Result<()> {
        if !self.unique || !live {
            return Ok(());
        }
        if let Some((last, last_prefix_bytes)) = &self.last_live {
            if last[..*last_prefix_bytes] == entry[..prefix_bytes] {
                return Err(EngineError::UniqueViolation { constraint: self.index.to_string() });
            }
        }
        self.last_live = Some((entry.to_vec(), prefix_bytes));
        Ok(())
    }

    fn next_checked(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let Some((entry, live, prefix_bytes)) = self.next_entry()? else { return Ok(None) };
        self.check_unique(&entry, live, prefix_bytes)?;
        let key = entry[prefix_bytes..].to_vec();
        self.loaded += 1;
        Ok(Some((entry, key)))
    }
}

impl<F: Fn(&BuildRecord, &BuildRecord) -> std::cmp::Ordering> Iterator for Loader<'_, F> {
    type Item = (Vec<u8>, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.error.is_some() {
            return None;
        }
        match self.next_checked() {
            Ok(entry) => entry,
            Err(error) => {
                self.error = Some(error);
                None
            }
        }
    }
}
