//! What the operators share to spill to the local tier (design 011): the row encoding of
//! temporary files, the partition hash, hash partitions of rows, and the row store
//! (PostgreSQL's tuplestore) that keeps rows in memory until its grant is spent and then in
//! a temporary file.
//!
//! Row encoding in temporary files (never stored durably, read back by the same process):
//!
//! ```text
//! offset  size  field
//! 0       4     number of values (u32 little-endian)
//! 4       ...   each value: a tag byte, then its body
//!               0 null, 1 false, 2 true            (no body)
//!               3 int, 9 timestamp, 10 timestamptz (8 bytes, i64 little-endian)
//!               4 float                            (8 bytes, f64 bits little-endian)
//!               5 numeric                          (16 bytes, rust_decimal's serialize)
//!               6 text, 7 bytea                    (u32 length, then the bytes)
//!               8 date                             (4 bytes, i32 little-endian)
//! ```

use std::sync::Arc;

use rust_decimal::Decimal;
use tierdb_storage::{
    MemoryGrant, StorageError, TempReader, TempRun, TempSpace, TempUsage, TempWriter,
};

use super::*;

/// Partitions a spilling hash operator splits its input into (each level of recursion).
pub(crate) const SPILL_PARTITIONS: usize = 32;
/// The write buffer of each partition file (32 partitions: 1 MiB of buffers).
pub(crate) const PARTITION_BUFFER_BYTES: usize = 32 * 1024;
/// Read buffer of a partition or row store being read back.
pub(crate) const SPILL_READ_BUFFER_BYTES: usize = 64 * 1024;
/// Recursion levels of repartitioning before an operator falls back to a method that needs
/// no partitioning (a key too frequent to split: every row of it hashes alike).
pub(crate) const SPILL_LEVELS_MAX: u32 = 4;

/// A hash map keyed by `group_key` encodings (short ones inline, `GroupKey`), probed with
/// a `&[u8]`: foldhash, seeded per process (fast on short keys; the seed keeps a client
/// from choosing keys that collide on every server).
pub(crate) type KeyMap<V> =
    std::collections::HashMap<super::group_key::GroupKey, V, foldhash::fast::RandomState>;
/// A set of `group_key` encodings held as `GroupKey`s (see `KeyMap`).
pub(crate) type GroupKeySet =
    std::collections::HashSet<super::group_key::GroupKey, foldhash::fast::RandomState>;
/// A set of `group_key` encodings (see `KeyMap`).
pub(crate) type KeySet = std::collections::HashSet<Vec<u8>, foldhash::fast::RandomState>;

pub(crate) fn encode_row(row: &[Datum], out: &mut Vec<u8>) {
    let count = u32::try_from(row.len()).expect("rows have at most 1,664 values");
    out.extend_from_slice(&count.to_le_bytes());
    for datum in row {
        match datum {
            Datum::Null => out.push(0),
            Datum::Bool(flag) => out.push(if *flag { 2 } else { 1 }),
            Datum::Int(number) => tagged(out, 3, &number.to_le_bytes()),
            Datum::Float(number) => tagged(out, 4, &number.to_bits().to_le_bytes()),
            Datum::Numeric(number) => tagged(out, 5, &number.serialize()),
            Datum::Text(text) => counted(out, 6, text.as_bytes()),
            Datum::Bytes(bytes) => counted(out, 7, bytes),
            Datum::Date(days) => tagged(out, 8, &days.to_le_bytes()),
            Datum::Timestamp(micros) => tagged(out, 9, &micros.to_le_bytes()),
            Datum::TimestampTz(micros) => tagged(out, 10, &micros.to_le_bytes()),
            Datum::Vector(elements) => {
                counted(out, 11, &crate::types::vector_storage_bytes(elements))
            }
            Datum::SparseVec(value) => {
                counted(out, 19, &crate::types::sparsevec_storage_bytes(value))
            }
            Datum::HalfVec(elements) => {
                counted(out, 18, &crate::types::halfvec_storage_bytes(elements))
            }
            Datum::Array(array) => {
                // The lower bound, then the elements as a nested row.
                let mut body = array.lower.to_le_bytes().to_vec();
                encode_row(&array.elements, &mut body);
                counted(out, 14, &body);
            }
            Datum::Jsonb(value) => counted(out, 13, value.output().as_bytes()),
            Datum::Uuid(bytes) => tagged(out, 15, bytes),
            Datum::Bit(bits) => counted(out, 20, &crate::types::bit_send(bits)),
            Datum::Interval(interval) => tagged(out, 16, &interval.storage_bytes()),
            Datum::Time(micros) => tagged(out, 17, &micros.to_le_bytes()),
            Datum::Object(object) => {
                tagged(out, 12, &object.oid.to_le_bytes());
                let text = object.text.as_deref().unwrap_or_default();
                counted(out, u8::from(object.text.is_some()), text.as_bytes());
            }
        }
    }
}

fn tagged(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(body);
}

fn counted(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    let length = u32::try_from(body.len()).expect("values are at most 1 GB");
    out.push(tag);
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(body);
}

pub(crate) fn decode_row(bytes: &[u8]) -> std::result::Result<Row, String> {
    let mut cursor = Cursor { bytes, offset: 0 };
    let count = u32::from_le_bytes(cursor.array()?);
    let count = usize::try_from(count).map_err(|error| error.to_string())?;
    let mut row = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let tag = cursor.array::<1>()?[0];
        row.push(match tag {
            0 => Datum::Null,
            1 => Datum::Bool(false),
            2 => Datum::Bool(true),
            3 => Datum::Int(i64::from_le_bytes(cursor.array()?)),
            4 => Datum::Float(f64::from_bits(u64::from_le_bytes(cursor.array()?))),
            5 => Datum::Numeric(Decimal::deserialize(cursor.array()?)),
            6 => Datum::Text(
                String::from_utf8(cursor.counted()?.to_vec()).map_err(|error| error.to_string())?,
            ),
            7 => Datum::Bytes(cursor.counted()?.to_vec()),
            8 => Datum::Date(i32::from_le_bytes(cursor.array()?)),
            9 => Datum::Timestamp(i64::from_le_bytes(cursor.array()?)),
            10 => Datum::TimestampTz(i64::from_le_bytes(cursor.array()?)),
            11 => crate::types::vector_from_storage(cursor.counted()?),
            18 => crate::types::halfvec_from_storage(cursor.counted()?),
            19 => crate::types::sparsevec_from_storage(cursor.counted()?),
            14 => decode_array(cursor.counted()?)?,
            15 => Datum::Uuid(cursor.array()?),
            20 => crate::types::bit_receive(cursor.counted()?)
                .map(crate::types::bit_datum)
                .map_err(|error| error.to_string())?,
            16 => Datum::Interval(crate::types::Interval::from_storage(&cursor.array::<16>()?)),
            17 => Datum::Time(i64::from_le_bytes(cursor.array()?)),
            13 => crate::types::parse_jsonb(
                std::str::from_utf8(cursor.counted()?).map_err(|error| error.to_string())?,
            )
            .map_err(|error| error.to_string())?,
            12 => {
                let oid = u32::from_le_bytes(cursor.array()?);
                let named = cursor.array::<1>()?[0] == 1;
                let text =
                    std::str::from_utf8(cursor.counted()?).map_err(|error| error.to_string())?;
                let text = named.then(|| std::sync::Arc::from(text));
                Datum::Object(crate::types::ObjectReference { oid, text })
            }
            other => return Err(format!("unknown value tag {other}")),
        });
    }
    if cursor.offset != bytes.len() {
        return Err(format!("{} bytes after the row", bytes.len() - cursor.offset));
    }
    Ok(row)
}

fn decode_array(body: &[u8]) -> std::result::Result<Datum, String> {
    let (lower, elements) = body.split_at_checked(4).ok_or("an array without its bound")?;
    let lower = i32::from_le_bytes(lower.try_into().expect("four bytes"));
    let elements = decode_row(elements)?;
    Ok(Datum::Array(std::sync::Arc::new(crate::types::ArrayValue { lower, elements })))
}

struct Cursor<'b> {
    bytes: &'b [u8],
    offset: usize,
}

impl<'b> Cursor<'b> {
    fn take(&mut self, length: usize) -> std::result::Result<&'b [u8], String> {
        let end = self.offset.checked_add(length).filter(|&end| end <= self.bytes.len());
        let end =
            end.ok_or_else(|| format!("a value runs past the row's end at {}", self.offset))?;
        let slice = &self.bytes[self.offset..end];
        self.offset = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> std::result::Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    fn counted(&mut self) -> std::result::Result<&'b [u8], String> {
        let length = u32::from_le_bytes(self.array()?);
        self.take(usize::try_from(length).map_err(|error| error.to_string())?)
    }
}

/// A row read back from a temporary file.
pub(crate) fn read_row(reader: &mut TempReader) -> Result<Option<Row>> {
    match reader.next_record().map_err(storage_error)? {
        None => Ok(None),
        Some(bytes) => decode_row(bytes).map(Some).map_err(|detail| {
            storage_error(StorageError::CorruptFile { file: "temporary rows".into(), detail })
        }),
    }
}

/// Reads a temporary file's rows into `each`, checking for cancel; returns false if `each`
/// stopped.
pub(crate) fn replay(run: &TempRun, ctx: &mut Ctx<'_>, each: &mut Sink<'_>) -> Result<bool> {
    let mut reader = run.reader(SPILL_READ_BUFFER_BYTES);
    while let Some(row) = read_row(&mut reader)? {
        ctx.check_cancel()?;
        if !each(ctx, row)? {
            return Ok(false);
        }
    }
    Ok(true)
}

pub(crate) fn storage_error(error: StorageError) -> SqlError {
    SqlError::from(tierdb_engine::EngineError::from(error))
}

/// The partition of `key` (a `group_key` encoding) at recursion `level`: every level uses
/// other bits of the hash, so a partition that is still too big splits again.
pub(crate) fn partition_of(key: &[u8], level: u32) -> usize {
    // FNV-1a, then SplitMix64's finalizer over the level's seed: cheap and well mixed.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= u64::from(level).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^= hash >> 31;
    let partitions = u64::try_from(SPILL_PARTITIONS).expect("small");
    usize::try_from(hash % partitions).expect("below SPILL_PARTITIONS")
}

/// Where a statement's operators spill: the server's temp space and the session's usage.
pub(crate) struct SpillTarget {
    pub space: Arc<TempSpace>,
    pub usage: Arc<TempUsage>,
}

impl SpillTarget {
    pub fn of(ctx: &Ctx<'_>) -> SpillTarget {
        SpillTarget {
            space: Arc::clone(ctx.session.catalog.engine().store().temp_space()),
            usage: Arc::clone(&ctx.budget.temp_usage),
        }
    }

    pub fn grant(&self, limit_bytes: usize) -> MemoryGrant {
        MemoryGrant::new(self.space.memory(), limit_bytes)
    }
}

/// Rows split by the partition of their key into `SPILL_PARTITIONS` temporary files.
pub(crate) struct Partitions {
    target: SpillTarget,
    level: u32,
    writers: Vec<Option<TempWriter>>,
    scratch: Vec<u8>,
    /// Bytes written to every partition (EXPLAIN's Disk Usage).
    pub bytes: u64,
}

impl Partitions {
    pub fn new(ctx: &Ctx<'_>, level: u32) -> Partitions {
        Partitions {
            target: SpillTarget::of(ctx),
            level,
            writers: (0..SPILL_PARTITIONS).map(|_| None).collect(),
            scratch: Vec::new(),
            bytes: 0,
        }
    }

    /// Writes `row` to the partition of `key`.
    pub fn write(&mut self, key: &[u8], row: &[Datum]) -> Result<()> {
        let index = partition_of(key, self.level);
        let writer = match &mut self.writers[index] {
            Some(writer) => writer,
            slot => slot.insert(
                self.target
                    .space
                    .create_buffered(&self.target.usage, PARTITION_BUFFER_BYTES)
                    .map_err(storage_error)?,
            ),
        };
        self.scratch.clear();
        encode_row(row, &mut self.scratch);
        self.bytes += u64::try_from(self.scratch.len()).expect("fits");
        writer.write(&self.scratch).map_err(storage_error)
    }

    /// The partitions' files (`None` where no row went).
    pub fn finish(self) -> Result<Vec<Option<TempRun>>> {
        self.writers
            .into_iter()
            .map(|writer| writer.map(TempWriter::finish).transpose().map_err(storage_error))
            .collect()
    }
}

/// Rows kept in order: in memory while the grant allows, then all in a temporary file.
pub(crate) struct RowStore {
    target: SpillTarget,
    grant: MemoryGrant,
    rows: Vec<Row>,
    writer: Option<TempWriter>,
    run: Option<TempRun>,
    scratch: Vec<u8>,
}

impl RowStore {
    pub fn new(ctx: &Ctx<'_>) -> RowStore {
        RowStore::with_target(SpillTarget::of(ctx), ctx.budget.work_mem_bytes)
    }

    /// A store outside a statement's context (a cursor's, filled by a sink).
    pub fn with_target(target: SpillTarget, work_mem_bytes: usize) -> RowStore {
        let grant = target.grant(work_mem_bytes);
        RowStore { target, grant, rows: Vec::new(), writer: None, run: None, scratch: Vec::new() }
    }

    pub fn push(&mut self, row: Row) -> Result<()> {
        assert!(self.run.is_none(), "rows are pushed before the store is read");
        if self.writer.is_none() && self.grant.try_grow(row_size(&row)) {
            self.rows.push(row);
            return Ok(());
        }
        if self.writer.is_none() {
            let mut writer = self.target.space.create(&self.target.usage).map_err(storage_error)?;
            for held in self.rows.drain(..) {
                write_row(&mut writer, &held, &mut self.scratch)?;
            }
            self.grant.reset();
            self.writer = Some(writer);
        }
        let writer = self.writer.as_mut().expect("made above");
        write_row(writer, &row, &mut self.scratch)
    }

    /// The rows, when they all stayed in memory (after `seal`).
    pub fn in_memory(&self) -> Option<&[Row]> {
        assert!(self.writer.is_none(), "a row store is sealed before it is read");
        self.run.is_none().then_some(self.rows.as_slice())
    }

    /// Ends the writing; the rows can then be read any number of times.
    pub fn seal(&mut self) -> Result<()> {
        if let Some(writer) = self.writer.take() {
            self.run = Some(writer.finish().map_err(storage_error)?);
        }
        Ok(())
    }

    /// Calls `each` on every row in order (after `seal`); stops when it returns false.
    pub fn for_each(&self, each: &mut dyn FnMut(Row) -> Result<bool>) -> Result<bool> {
        assert!(self.writer.is_none(), "a row store is sealed before it is read");
        match &self.run {
            None => {
                for row in &self.rows {
                    if !each(row.clone())? {
                        return Ok(false);
                    }
                }
            }
            Some(run) => {
                let mut reader = run.reader(SPILL_READ_BUFFER_BYTES);
                while let Some(row) = read_row(&mut reader)? {
                    if !each(row)? {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }
}

// Cursors (session/cursor_rows.rs) read their row stores this way.
impl RowStore {
    /// The rows in order, read once, owned (a cursor keeps them across statements): the
    /// grant stays held while rows are in memory, the temporary file while it is read.
    pub fn into_rows(mut self) -> Result<StoredRows> {
        self.seal()?;
        Ok(match self.run.take() {
            None => StoredRows::Memory {
                rows: std::mem::take(&mut self.rows).into_iter(),
                _grant: self.grant,
            },
            Some(run) => StoredRows::File { reader: run.reader(SPILL_READ_BUFFER_BYTES) },
        })
    }
}

/// A row store's rows being read in order (`RowStore::into_rows`).
pub(crate) enum StoredRows {
    Memory {
        rows: std::vec::IntoIter<Row>,
        _grant: MemoryGrant,
    },
    /// The reader holds the file open; it is removed when the reader is dropped.
    File {
        reader: TempReader,
    },
}

impl StoredRows {
    pub fn next_row(&mut self) -> Result<Option<Row>> {
        match self {
            StoredRows::Memory { rows, .. } => Ok(rows.next()),
            StoredRows::File { reader } => read_row(reader),
        }
    }
}

/// Every row of `plan`, collected in a row store: DML targets and INSERT ... SELECT
/// sources, which must be read whole before the first change.
pub(crate) fn store_rows(plan: &Plan, ctx: &mut Ctx<'_>) -> Result<StoredRows> {
    let mut store = RowStore::new(ctx);
    run(plan, ctx, &[], &mut |_, row| store.push(row).map(|()| true))?;
    store.into_rows()
}

fn write_row(writer: &mut TempWriter, row: &[Datum], scratch: &mut Vec<u8>) -> Result<()> {
    scratch.clear();
    encode_row(row, scratch);
    writer.write(scratch).map_err(storage_error)
}
