//! External merge sort: records are sorted in memory while they fit the operator's memory
//! grant; past it, each full buffer is sorted and written to a temporary file as a *run*,
//! and the runs are merged at the end (design 011). Used by ORDER BY, by sort-based
//! grouping, and by index builds (sorted keys, then `BTree::bulk_load`).
//!
//! Runs are kept in levels: when `fan_in` runs of one level exist, they are merged at once
//! into one run of the next level, so at most `fan_in` runs per level are ever open and a
//! sort of N bytes with M bytes of memory writes each byte about log_fan_in(N/M) + 1
//! times. The last buffer is not written: it is sorted in memory and merged as one more
//! source.
//!
//! ```text
//! push ──► buffer (memory) ──full──► sort, write run ──► level 0 ──fan_in runs──► level 1 ...
//! finish: no run ──► sorted buffer (quicksort)
//!         runs   ──► merge (levels ... ∪ sorted buffer) with a heap (external merge)
//! ```

use std::cmp::Ordering;
use std::sync::Arc;

use tierdb_storage::{
    MemoryGrant, StorageError, TempReader, TempRun, TempSpace, TempUsage, TEMP_BLOCK_BYTES,
};

/// The fewest runs merged at once (PostgreSQL's fewest tapes).
pub const SORT_FAN_IN_MIN: usize = 6;
/// The most runs merged at once: bounds open files and the merge heap.
pub const SORT_FAN_IN_MAX: usize = 128;
/// Each merge source's read buffer is at least this big.
const MERGE_BUFFER_BYTES_MIN: usize = 32 * 1024;

/// A record an external sort can write to a temporary file and read back.
pub trait SortRecord: Sized {
    fn encode(&self, out: &mut Vec<u8>);
    /// The record `encode` wrote; an error describes bytes that are not one.
    fn decode(bytes: &[u8]) -> Result<Self, String>;
    /// Bytes the record holds in memory (counted against the grant).
    fn memory_bytes(&self) -> usize;
}

/// A key and a value, compared by their bytes: index builds.
impl SortRecord for (Vec<u8>, Vec<u8>) {
    fn encode(&self, out: &mut Vec<u8>) {
        let key_bytes = u32::try_from(self.0.len()).expect("keys are bounded by KEY_BYTES_MAX");
        out.extend_from_slice(&key_bytes.to_le_bytes());
        out.extend_from_slice(&self.0);
        out.extend_from_slice(&self.1);
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let header: [u8; 4] =
            bytes.get(..4).and_then(|b| b.try_into().ok()).ok_or("short key record")?;
        let key_bytes = usize::try_from(u32::from_le_bytes(header)).map_err(|e| e.to_string())?;
        let key = bytes.get(4..4 + key_bytes).ok_or("key past the record's end")?;
        Ok((key.to_vec(), bytes[4 + key_bytes..].to_vec()))
    }

    fn memory_bytes(&self) -> usize {
        self.0.len() + self.1.len() + 2 * std::mem::size_of::<Vec<u8>>()
    }
}

/// What a sort did, for EXPLAIN ANALYZE (`Sort Method: quicksort  Memory: NkB` or
/// `external merge  Disk: NkB`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SortStats {
    pub records: u64,
    /// Runs written (0: the sort stayed in memory).
    pub runs: u64,
    /// Bytes of every run written, intermediate merges included.
    pub disk_bytes: u64,
    /// Bytes of the first runs only (the data's size on disk, what PostgreSQL reports).
    pub spilled_bytes: u64,
    pub peak_memory_bytes: usize,
}

/// An external merge sort of `T` in `compare` order.
pub struct ExternalSort<T, F> {
    temp: Arc<TempSpace>,
    usage: Arc<TempUsage>,
    grant: MemoryGrant,
    compare: F,
    buffer: Vec<T>,
    /// `levels[i]`: runs that went through i merges.
    levels: Vec<Vec<TempRun>>,
    fan_in: usize,
    stats: SortStats,
}

impl<T: SortRecord, F: Fn(&T, &T) -> Ordering> ExternalSort<T, F> {
    /// A sort that holds at most `grant`'s memory before it writes runs to `temp`.
    pub fn new(
        temp: &Arc<TempSpace>,
        usage: &Arc<TempUsage>,
        grant: MemoryGrant,
        compare: F,
    ) -> ExternalSort<T, F> {
        let fan_in =
            (grant.limit_bytes() / MERGE_BUFFER_BYTES_MIN).clamp(SORT_FAN_IN_MIN, SORT_FAN_IN_MAX);
        ExternalSort {
            temp: Arc::clone(temp),
            usage: Arc::clone(usage),
            grant,
            compare,
            buffer: Vec::new(),
            levels: Vec::new(),
            fan_in,
            stats: SortStats::default(),
        }
    }

    pub fn push(&mut self, record: T) -> Result<(), StorageError> {
        let bytes = record.memory_bytes() + std::mem::size_of::<T>();
        if !self.grant.try_grow(bytes) {
            if !self.buffer.is_empty() {
                self.write_run()?;
            }
            if !self.grant.try_grow(bytes) {
                // One record larger than the whole grant: hold it anyway, it is sorted alone.
                self.grant.force_grow(bytes);
            }
        }
        self.buffer.push(record);
        self.stats.records += 1;
        Ok(())
    }

    pub fn stats(&self) -> SortStats {
        let mut stats = self.stats;
        stats.peak_memory_bytes = self.grant.peak_bytes();
        stats
    }

    /// Sorts the buffer and writes it as a run of level 0; merges full levels.
    fn write_run(&mut self) -> Result<(), StorageError> {
        let compare = &self.compare;
        self.buffer.sort_unstable_by(compare);
        let run = write_records(&self.temp, &self.usage, self.buffer.drain(..).map(Ok))?;
        self.grant.reset();
        self.stats.runs += 1;
        self.stats.disk_bytes += run.bytes();
        self.stats.spilled_bytes += run.bytes();
        self.add_run(0, run)
    }

    fn add_run(&mut self, level: usize, run: TempRun) -> Result<(), StorageError> {
        if self.levels.len() <= level {
            self.levels.resize_with(level + 1, Vec::new);
        }
        self.levels[level].push(run);
        if self.levels[level].len() < self.fan_in {
            return Ok(());
        }
        let runs = std::mem::take(&mut self.levels[level]);
        let merged = self.merge_to_run(runs)?;
        self.add_run(level + 1, merged)
    }

    fn merge_to_run(&mut self, runs: Vec<TempRun>) -> Result<TempRun, StorageError> {
        let merge = Merge::new(&runs, Vec::new(), &self.compare, self.merge_buffer_bytes())?;
        let run = write_records(&self.temp, &self.usage, merge)?;
        self.stats.disk_bytes += run.bytes();
        Ok(run)
    }

    fn merge_buffer_bytes(&self) -> usize {
        (self.grant.limit_bytes() / (self.fan_in + 1))
            .clamp(MERGE_BUFFER_BYTES_MIN, TEMP_BLOCK_BYTES)
    }

    /// The records in order.
    pub fn finish(mut self) -> Result<Sorted<T, F>, StorageError> {
        let compare = &self.compare;
        self.buffer.sort_unstable_by(compare);
        let mut runs: Vec<TempRun> = self.levels.drain(..).flatten().collect();
        if runs.is_empty() {
            let stats = self.stats();
            let records = std::mem::take(&mut self.buffer).into_iter();
            return Ok(Sorted { source: Source::Memory(records), stats, sort: self });
        }
        // More runs than one merge takes: merge the smallest first, so that the final
        // merge reads at most fan_in runs (plus the buffer).
        while runs.len() > self.fan_in {
            runs.sort_by_key(|run| std::cmp::Reverse(run.bytes()));
            let smallest = runs.split_off(runs.len() - self.fan_in);
            let merged = self.merge_to_run(smallest)?;
            runs.push(merged);
        }
        let buffer = std::mem::take(&mut self.buffer);
        let merge = Merge::new(&runs, buffer, &self.compare, self.merge_buffer_bytes())?;
        let stats = self.stats();
        Ok(Sorted { source: Source::Merge(merge.into_owned()), stats, sort: self })
    }
}

/// Writes records to a new temporary file.
fn write_records<T: SortRecord>(
    temp: &Arc<TempSpace>,
    usage: &Arc<TempUsage>,
    records: impl Iterator<Item = Result<T, StorageError>>,
) -> Result<TempRun, StorageError> {
    let mut writer = temp.create(usage)?;
    let mut bytes = Vec::new();
    for record in records {
        bytes.clear();
        record?.encode(&mut bytes);
        writer.write(&bytes)?;
    }
    writer.finish()
}

fn decode_record<T: SortRecord>(bytes: &[u8]) -> Result<T, StorageError> {
    T::decode(bytes).map_err(|detail| StorageError::CorruptFile {
        file: "temporary sort run".to_string(),
        detail,
    })
}

/// One input of a merge.
enum Input<T> {
    Run(TempReader),
    Memory(std::vec::IntoIter<T>),
}

impl<T: SortRecord> Input<T> {
    fn next(&mut self) -> Result<Option<T>, StorageError> {
        match self {
            Input::Run(reader) => reader.next_record()?.map(decode_record).transpose(),
            Input::Memory(records) => Ok(records.next()),
        }
    }
}

/// A k-way merge: a binary min-heap of each input's current record.
struct Merge<T, C> {
    inputs: Vec<Input<T>>,
    /// (record, input index), a heap in `compare` order.
    heap: Vec<(T, usize)>,
    compare: C,
}

impl<'c, T: SortRecord, F: Fn(&T, &T) -> Ordering> Merge<T, &'c F> {
    fn new(
        runs: &[TempRun],
        buffer: Vec<T>,
        compare: &'c F,
        buffer_bytes: usize,
    ) -> Result<Merge<T, &'c F>, StorageError> {
        let mut inputs: Vec<Input<T>> =
            runs.iter().map(|run| Input::Run(run.reader(buffer_bytes))).collect();
        if !buffer.is_empty() {
            inputs.push(Input::Memory(buffer.into_iter()));
        }
        let mut merge = Merge { heap: Vec::with_capacity(inputs.len()), inputs, compare };
        for index in 0..merge.inputs.len() {
            if let Some(record) = merge.inputs[index].next()? {
                merge.heap.push((record, index));
                merge.sift_up(merge.heap.len() - 1);
            }
        }
        Ok(merge)
    }
}

impl<T: SortRecord, C: Copy> Merge<T, C> {
    fn less(&self, a: usize, b: usize) -> bool
    where
        C: Fn(&T, &T) -> Ordering,
    {
        (self.compare)(&self.heap[a].0, &self.heap[b].0) == Ordering::Less
    }

    fn sift_up(&mut self, mut index: usize)
    where
        C: Fn(&T, &T) -> Ordering,
    {
        while index > 0 {
            let parent = (index - 1) / 2;
            if !self.less(index, parent) {
                break;
            }
            self.heap.swap(index, parent);
            index = parent;
        }
    }

    fn sift_down(&mut self, mut index: usize)
    where
        C: Fn(&T, &T) -> Ordering,
    {
        loop {
            let left = 2 * index + 1;
            let right = left + 1;
            let mut smallest = index;
            if left < self.heap.len() && self.less(left, smallest) {
                smallest = left;
            }
            if right < self.heap.len() && self.less(right, smallest) {
                smallest = right;
            }
            if smallest == index {
                return;
            }
            self.heap.swap(index, smallest);
            index = smallest;
        }
    }

    fn pop(&mut self) -> Result<Option<T>, StorageError>
    where
        C: Fn(&T, &T) -> Ordering,
    {
        if self.heap.is_empty() {
            return Ok(None);
        }
        let input = self.heap[0].1;
        let replacement = self.inputs[input].next()?;
        let record = match replacement {
            Some(next) => std::mem::replace(&mut self.heap[0], (next, input)).0,
            None => {
                let last = self.heap.len() - 1;
                self.heap.swap(0, last);
                self.heap.pop().expect("non-empty").0
            }
        };
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
        Ok(Some(record))
    }

    /// The same merge, comparing through a pointer it owns (`Sorted` keeps the sort).
    fn into_owned(self) -> Merge<T, ()> {
        Merge { inputs: self.inputs, heap: self.heap, compare: () }
    }
}

impl<T: SortRecord, F: Fn(&T, &T) -> Ordering> Iterator for Merge<T, &F> {
    type Item = Result<T, StorageError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.pop().transpose()
    }
}

enum Source<T> {
    Memory(std::vec::IntoIter<T>),
    /// The final merge; it compares with the sort's `compare`.
    Merge(Merge<T, ()>),
}

/// A finished sort's records, in order.
pub struct Sorted<T, F> {
    source: Source<T>,
    stats: SortStats,
    /// Holds the comparison, the grant and the runs while the merge reads them.
    sort: ExternalSort<T, F>,
}

impl<T: SortRecord, F: Fn(&T, &T) -> Ordering> Sorted<T, F> {
    pub fn stats(&self) -> SortStats {
        self.stats
    }

    /// The next record in order, or `None` after the last.
    pub fn next_record(&mut self) -> Result<Option<T>, StorageError> {
        match &mut self.source {
            Source::Memory(records) => Ok(records.next()),
            Source::Merge(merge) => {
                let mut borrowed = Merge {
                    inputs: std::mem::take(&mut merge.inputs),
                    heap: std::mem::take(&mut merge.heap),
                    compare: &self.sort.compare,
                };
                let result = borrowed.pop();
                merge.inputs = borrowed.inputs;
                merge.heap = borrowed.heap;
                result
            }
        }
    }
}
