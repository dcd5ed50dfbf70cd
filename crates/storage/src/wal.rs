//! Write-ahead log: records with LSNs and checksums, group commit, and the two sinks.
//!
//! Record framing (little-endian; docs/design/003-wal.md):
//!
//! | offset | size | field                                                        |
//! |-------:|-----:|--------------------------------------------------------------|
//! | 0      | 4    | body length b                                                |
//! | 4      | 4    | CRC32C of (start lsn u64, b u32, body)                       |
//! | 8      | b    | body: tag u8, then the record                                |
//! | 8 + b  | 0..7 | zero padding to a multiple of 8                              |
//!
//! A record's LSN is the log position just past it (its end). The checksum covers the start
//! position, so a record can only validate at the offset where it was written.
//!
//! Group commit state machine (`Wal::flush_to`):
//!
//! ```text
//!   appenders --append()--> [buffer] --leader takes buffer--> [sink write + sync] --> durable
//!        ^                                                        |
//!        +---- followers park until the leader is done ------------+
//! ```
//! The first thread to need durability while no flush runs becomes the leader and writes
//! everything appended so far; committers that arrive meanwhile share the next sync. After a
//! failed write or sync the log is poisoned (sticky): every later call fails, because the
//! kernel may have dropped the unsynced data and no later sync can prove otherwise.
//!
//! Except when the write failed for want of space (`StorageError::DiskFull`: ENOSPC from
//! the write, never from the sync): then nothing of it is durable and the bytes go back to
//! the front of the buffer, to be written again from the same position by the next flush.
//! While the last flush failed that way, a bounded append (`append_with`, every record but
//! a map update) first flushes and fails with `DiskFull` before it adds anything, so a
//! statement fails cleanly (its mini-transaction restores its pages) and the buffer cannot
//! grow without bound. A record appended before the space ran out stays in the buffer and
//! becomes durable with the first flush that finds room:
//!
//! ```text
//!   writable --flush_to: sink says DiskFull--> out_of_space --flush_to: sink ok--> writable
//!   out_of_space: append_with -> flush_to first; still DiskFull -> Err(DiskFull), nothing added
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tierdb_common::{Counter, Lsn, PageId, SegmentId};

use crate::codec::{u64_to_usize, usize_to_u32, usize_to_u64, Reader, Writer};
use crate::device::Device;
use crate::error::{Result, StorageError};
use crate::volume::Volume;
pub use crate::wal_page_ops::PageOp;
use crate::wal_page_ops::{
    decode_page_ops, decode_page_ops_fixed, encode_page_ops, TAG_PAGE_OPS, TAG_PAGE_OPS_FIXED,
};

mod group_commit;

const RECORD_HEADER_BYTES: usize = 8;
const RECORD_ALIGN_BYTES: usize = 8;
/// A record body larger than this is rejected: a mini-transaction rewriting 2,000 whole pages
/// still fits, and recovery never has to hold more than this for one record.
pub const RECORD_BODY_BYTES_MAX: usize = 16 << 20;
/// Appenders flush themselves when this much is buffered, bounding the buffer.
pub const WAL_BUFFER_BYTES_MAX: usize = 8 << 20;
/// Local WAL files are allocated to this size and rolled when a write does not fit.
pub const WAL_FILE_BYTES_MAX: u64 = 64 << 20;
/// Reserved log space that bounded appends leave free for unbounded ones (map updates, at
/// most about 24 KiB each: a few hundred segments' worth), so that the writer can still
/// write segments and checkpoint, which frees log files, when appends are refused.
const UNBOUNDED_RESERVE_BYTES: u64 = 8 << 20;
// Whatever the buffer holds unwritten (its bound, one more record, the reserve) fits a new
// file: a write that does not fit the current file always fits the next one.
const _: () = assert!(
    (WAL_BUFFER_BYTES_MAX + RECORD_BODY_BYTES_MAX + RECORD_HEADER_BYTES + RECORD_ALIGN_BYTES)
        as u64
        + UNBOUNDED_RESERVE_BYTES
        < WAL_FILE_BYTES_MAX
);
pub(crate) const WAL_PREFIX: &str = "wal/";

// Tags 1 (fixed-width page ops, read only) and 4 (compact page ops) are in wal_page_ops.rs.
const TAG_MAP_UPDATE: u8 = 2;
const TAG_OPAQUE: u8 = 3;
const TAG_PAGES_FREED: u8 = 5;
/// The most pages one `PagesFreed` record names (64 KiB of page ids): freeing a large tree
/// takes several records, each its own step.
pub const FREED_PAGES_PER_RECORD_MAX: usize = 8_192;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalRecord {
    /// An atomic group of page changes (a mini-transaction): redo applies all or none.
    PageOps(Vec<PageOp>),
    /// Pages now live in `segment` at the given slots.
    MapUpdate { segment: SegmentId, slots: u32, entries: Vec<(PageId, u32)> },
    /// A record for a layer above the page store (transaction commit and abort markers): the
    /// page store logs it and never interprets it; recovery skips it.
    Opaque { kind: u8, payload: Vec<u8> },
    /// The pages, in ascending order with no repeats, are freed: their map entries go (so
    /// their segment slots become garbage) and no later record names them. Page ids are
    /// never reused.
    PagesFreed(Vec<PageId>),
}

impl WalRecord {
    pub(crate) fn encode_body(&self, writer: &mut Writer) {
        match self {
            WalRecord::PageOps(ops) => encode_page_ops(ops, writer),
            WalRecord::MapUpdate { segment, slots, entries } => {
                writer.u8(TAG_MAP_UPDATE);
                writer.u64(segment.0);
                writer.u32(*slots);
                writer.u32(usize_to_u32(entries.len()));
                for (page_id, slot) in entries {
                    writer.u64(page_id.0);
                    writer.u32(*slot);
                }
            }
            WalRecord::Opaque { kind, payload } => {
                writer.u8(TAG_OPAQUE);
                writer.u8(*kind);
                writer.u32(usize_to_u32(payload.len()));
                writer.raw(payload);
            }
            WalRecord::PagesFreed(pages) => {
                writer.u8(TAG_PAGES_FREED);
                writer.u32(usize_to_u32(pages.len()));
                for page_id in pages {
                    writer.u64(page_id.0);
                }
            }
        }
    }

    pub(crate) fn decode_body(body: &[u8]) -> Result<WalRecord, String> {
        let mut reader = Reader::new(body);
        let record = match reader.u8()? {
            TAG_PAGE_OPS => WalRecord::PageOps(decode_page_ops(&mut reader)?),
            TAG_PAGE_OPS_FIXED => WalRecord::PageOps(decode_page_ops_fixed(&mut reader)?),
            TAG_MAP_UPDATE => {
                let segment = SegmentId(reader.u64()?);
                let slots = reader.u32()?;
                let count = reader.u32()?;
                let mut entries = Vec::new();
                for _ in 0..count {
                    let page_id = PageId(reader.u64()?);
                    entries.push((page_id, reader.u32()?));
                }
                WalRecord::MapUpdate { segment, slots, entries }
            }
            TAG_OPAQUE => {
                let kind = reader.u8()?;
                let length = u64_to_usize(u64::from(reader.u32()?));
                WalRecord::Opaque { kind, payload: reader.take(length)?.to_vec() }
            }
            TAG_PAGES_FREED => WalRecord::PagesFreed(decode_freed_pages(&mut reader)?),
            other => return Err(format!("unknown record tag={other}")),
        };
        if reader.remaining() != 0 {
            return Err(format!("trailing bytes in record={}", reader.remaining()));
        }
        Ok(record)
    }
}

/// The body of a `PagesFreed` record: a count, then that many page ids, ascending, none of
/// them page 0 (never allocated), at most `FREED_PAGES_PER_RECORD_MAX`. Anything else is
/// damage: the encoder cannot produce it.
fn decode_freed_pages(reader: &mut Reader<'_>) -> Result<Vec<PageId>, String> {
    let count = u64_to_usize(u64::from(reader.u32()?));
    if count == 0 || count > FREED_PAGES_PER_RECORD_MAX {
        return Err(format!("freed page count={count} out of range"));
    }
    let mut pages = Vec::with_capacity(count);
    for _ in 0..count {
        let page_id = PageId(reader.u64()?);
        if page_id == PageId::INVALID || pages.last().is_some_and(|last| *last >= page_id) {
            return Err(format!("freed page_id={page_id} out of order"));
        }
        pages.push(page_id);
    }
    Ok(pages)
}

fn record_checksum(start: Lsn, body: &[u8]) -> u32 {
    let mut prefix = [0u8; 12];
    prefix[..8].copy_from_slice(&start.0.to_le_bytes());
    prefix[8..].copy_from_slice(&usize_to_u32(body.len()).to_le_bytes());
    crc32c::crc32c_append(crc32c::crc32c(&prefix), body)
}

/// Frames `record` for position `start`; returns the bytes appended to `out`.
/// The body of `record` (tag and fields), checked against the size limit. Encoding happens
/// before the log is locked, so an oversized record fails without touching shared state.
pub(crate) fn encode_record_body(record: &WalRecord) -> Result<Vec<u8>> {
    let mut body = Writer::with_capacity(64);
    record.encode_body(&mut body);
    if body.bytes.len() > RECORD_BODY_BYTES_MAX {
        return Err(StorageError::RecordTooLarge {
            bytes: body.bytes.len(),
            limit: RECORD_BODY_BYTES_MAX,
        });
    }
    Ok(body.bytes)
}

/// Frames an encoded body for position `start` onto `out`; returns the bytes appended.
pub(crate) fn frame_body(start: Lsn, body: &[u8], out: &mut Vec<u8>) -> usize {
    debug_assert!(
        !body.is_empty() && body.len() <= RECORD_BODY_BYTES_MAX,
        "body checked by encode_record_body"
    );
    let begin = out.len();
    out.extend_from_slice(&usize_to_u32(body.len()).to_le_bytes());
    out.extend_from_slice(&record_checksum(start, body).to_le_bytes());
    out.extend_from_slice(body);
    let padded = (out.len() - begin).next_multiple_of(RECORD_ALIGN_BYTES);
    out.resize(begin + padded, 0);
    padded
}

#[cfg(test)]
pub(crate) fn frame_record(start: Lsn, record: &WalRecord, out: &mut Vec<u8>) -> usize {
    frame_body(start, &encode_record_body(record).expect("test records fit"), out)
}

/// Outcome of parsing a log region.
pub(crate) enum ParseStop {
    /// The region ended exactly at a record boundary.
    End,
    /// An invalid record at `at`; `valid_after` is true when a valid record follows later,
    /// which means the damage is not a torn tail but corruption of durable data.
    Invalid { at: Lsn, reason: String, valid_after: bool },
}

/// Parses records in `bytes`, which starts at log position `base`, calling `visit` with each
/// record's (start, end, record).
pub(crate) fn parse_records(
    base: Lsn,
    bytes: &[u8],
    visit: &mut dyn FnMut(Lsn, Lsn, WalRecord) -> Result<()>,
) -> Result<ParseStop> {
    let mut position = 0usize;
    while position < bytes.len() {
        let start = Lsn(base.0 + usize_to_u64(position));
        match parse_one(start, &bytes[position..]) {
            Ok((record, length)) => {
                position += length;
                visit(start, Lsn(base.0 + usize_to_u64(position)), record)?;
            }
            Err(reason) => {
                let valid_after = (position + RECORD_ALIGN_BYTES..bytes.len())
                    .step_by(RECORD_ALIGN_BYTES)
                    .any(|later| {
                        // A zero length never parses; skipping it keeps the probe of a
                        // preallocated file's zeroed tail cheap.
                        bytes[later..].iter().take(4).any(|&byte| byte != 0)
                            && parse_one(Lsn(base.0 + usize_to_u64(later)), &bytes[later..]).is_ok()
                    });
                return Ok(ParseStop::Invalid { at: start, reason, valid_after });
            }
        }
    }
    Ok(ParseStop::End)
}

fn parse_one(start: Lsn, bytes: &[u8]) -> Result<(WalRecord, usize), String> {
    let mut reader = Reader::new(bytes);
    let body_length = u64_to_usize(u64::from(reader.u32()?));
    let stored = reader.u32()?;
    if body_length == 0 || body_length > RECORD_BODY_BYTES_MAX {
        return Err(format!("bad record length={body_length}"));
    }
    let body = reader.take(body_length)?;
    let computed = record_checksum(start, body);
    if computed != stored {
        return Err(format!(
            "record checksum mismatch stored={stored:#010x} computed={computed:#010x}"
        ));
    }
    let record = WalRecord::decode_body(body)?;
    // The padding belongs to the record: a write torn inside it was never acknowledged, and
    // accepting it would leave the next record at an unaligned position.
    let length = (RECORD_HEADER_BYTES + body_length).next_multiple_of(RECORD_ALIGN_BYTES);
    if bytes.len() < length {
        return Err(format!("record padding truncated length={length} available={}", bytes.len()));
    }
    Ok((record, length))
}

/// Opens a local file as a device; tests substitute a fault-injecting one.
pub type DeviceOpener = Arc<dyn Fn(&Path) -> Result<Box<dyn Device>> + Send + Sync>;

/// Where the log goes. Each write is durable when the sink returns.
pub(crate) trait WalSink: Send {
    fn write(&mut self, start: Lsn, bytes: &[u8]) -> Result<()>;
    /// Deletes log files or objects that end at or before `lsn`.
    fn truncate_before(&mut self, lsn: Lsn) -> Result<()>;
    /// Where a preallocated next file should be prepared, if this sink wants one now that
    /// the durable log ends at `log_end`.
    fn spare_wanted(&self, _log_end: Lsn) -> Option<(PathBuf, DeviceOpener)> {
        None
    }
    /// Takes a file prepared at the path `spare_wanted` gave: zero-filled to
    /// `WAL_FILE_BYTES_MAX` and synced.
    fn give_spare(&mut self, _device: Box<dyn Device>) {}
    /// Where the space this sink has reserved ends: every write ending at or before it
    /// lands in allocated blocks and cannot fail for want of space.
    fn space(&self) -> WalSpace {
        WalSpace::UNLIMITED
    }
    /// Reserves the next file now (a spare made with `posix_fallocate`, cheap), for an
    /// append that found no room; fails with `DiskFull` when the disk cannot hold it.
    fn reserve(&mut self) -> Result<()> {
        Ok(())
    }
}

/// The reserved space of a sink (see `WalSink::space`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WalSpace {
    /// End of the allocated part of the file being written.
    pub allocated_end: Lsn,
    /// A next file is allocated: any write that does not fit the current file fits there
    /// (a file holds `WAL_FILE_BYTES_MAX`, more than the buffer can hold unwritten).
    pub spare_ready: bool,
}

impl WalSpace {
    /// A sink that reserves nothing (the log on the volume): never refuses an append.
    const UNLIMITED: WalSpace = WalSpace { allocated_end: Lsn(u64::MAX), spare_ready: true };
}

/// The name of the preallocated next file in the local WAL directory.
const SPARE_FILE_NAME: &str = "next.prealloc";
/// The spare is zero-filled (and synced) this much at a time.
const SPARE_FILL_CHUNK_BYTES: usize = 1 << 20;
/// After a failed spare (a full disk, most likely) the next try waits this long: each try
/// writes up to `WAL_FILE_BYTES_MAX` of zeros.
const SPARE_RETRY_INTERVAL: Duration = Duration::from_secs(10);

/// Log files `wal/{start:016x}.wal` in the data directory: write, then `fdatasync`.
///
/// A new file is the spare the background writer zero-filled in advance when there is one:
/// overwriting allocated blocks, `fdatasync` has no file size to persist, which makes each
/// commit's sync about a third cheaper than appending (measured on this machine's ext4).
///
/// Space (docs/design/003-wal.md, "Out of space"): a write never goes past the allocated end
/// of the file it is written to. A write that does not fit starts a new file at its start
/// position (the old file keeps a zero tail), taken from the spare or created and allocated
/// on the spot; every file is allocated to at least `WAL_FILE_BYTES_MAX` before its first
/// byte. So a full disk shows up when a file is allocated, before any byte of the write,
/// never half-way through a record.
pub(crate) struct LocalWalSink {
    directory: PathBuf,
    opener: DeviceOpener,
    /// (start lsn, device) of every file, oldest first; the last one is written to.
    files: Vec<(Lsn, Box<dyn Device>)>,
    /// Where the allocated part of the last file ends.
    allocated_end: Lsn,
    /// A file allocated to `WAL_FILE_BYTES_MAX` at `SPARE_FILE_NAME` (zero-filled by the
    /// background writer, or allocated by `reserve`), renamed to the next file's name at the
    /// roll.
    spare: Option<Box<dyn Device>>,
}

fn local_file_name(start: Lsn) -> String {
    format!("{:016x}.wal", start.0)
}

fn parse_local_file_name(name: &str) -> Option<Lsn> {
    let hex = name.strip_suffix(".wal")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok().map(Lsn)).flatten()
}

impl LocalWalSink {
    /// Starts the file that the write of `length` bytes at `start` goes to: the spare, or a
    /// new file allocated here. A failed allocation removes the file and leaves the sink as
    /// it was, so the same write can be tried again.
    fn open_file(&mut self, start: Lsn, length: u64) -> Result<()> {
        let path = self.directory.join(local_file_name(start));
        if self.files.last().is_some_and(|(last_start, _)| *last_start == start) {
            // The last file starts where this write does, so it holds no durable record (a
            // torn first write cut to nothing at recovery, or a file whose allocation
            // failed): this file takes its place and its name, never a second entry with the
            // same name, which truncation would delete while it is being written.
            self.files.pop();
        }
        let wanted = length.max(WAL_FILE_BYTES_MAX);
        let (device, allocated) = match self.spare.take() {
            Some(spare) if length <= WAL_FILE_BYTES_MAX => {
                let spare_path = self.directory.join(SPARE_FILE_NAME);
                std::fs::rename(&spare_path, &path)
                    .map_err(|error| StorageError::local_io("rename", &spare_path, error))?;
                // Opened again under its new name, so that errors name the log file.
                drop(spare);
                ((self.opener)(&path)?, WAL_FILE_BYTES_MAX)
            }
            spare => {
                self.spare = spare;
                let device = (self.opener)(&path)?;
                if let Err(error) = device.allocate(wanted) {
                    drop(device);
                    let _ = std::fs::remove_file(&path);
                    return Err(error);
                }
                (device, wanted)
            }
        };
        std::fs::File::open(&self.directory)
            .and_then(|directory| directory.sync_all())
            .map_err(|error| StorageError::local_io("fsync-dir", &self.directory, error))?;
        self.files.push((start, device));
        self.allocated_end = Lsn(start.0 + allocated);
        Ok(())
    }
}

impl WalSink for LocalWalSink {
    fn write(&mut self, start: Lsn, bytes: &[u8]) -> Result<()> {
        let end = Lsn(start.0 + usize_to_u64(bytes.len()));
        if self.files.is_empty() || end > self.allocated_end {
            self.open_file(start, usize_to_u64(bytes.len()))?;
        }
        let (file_start, device) = self.files.last().expect("a current file");
        assert!(end <= self.allocated_end, "a wal write past the allocated end of its file");
        device.write_at(start.0 - file_start.0, bytes)?;
        device.sync()
    }

    fn space(&self) -> WalSpace {
        WalSpace { allocated_end: self.allocated_end, spare_ready: self.spare.is_some() }
    }

    fn reserve(&mut self) -> Result<()> {
        if self.spare.is_some() {
            return Ok(());
        }
        let path = self.directory.join(SPARE_FILE_NAME);
        let device = (self.opener)(&path)?;
        if let Err(error) = device.allocate(WAL_FILE_BYTES_MAX) {
            drop(device);
            let _ = std::fs::remove_file(&path);
            return Err(error);
        }
        self.spare = Some(device);
        Ok(())
    }

    /// Once the current file is half full, so that a short-lived store never writes one.
    fn spare_wanted(&self, log_end: Lsn) -> Option<(PathBuf, DeviceOpener)> {
        let (file_start, _) = self.files.last()?;
        let half_full = log_end.0.saturating_sub(file_start.0) >= WAL_FILE_BYTES_MAX / 2;
        (self.spare.is_none() && half_full)
            .then(|| (self.directory.join(SPARE_FILE_NAME), Arc::clone(&self.opener)))
    }

    fn give_spare(&mut self, device: Box<dyn Device>) {
        assert!(
            self.spare.is_none(),
            "one spare at a time (prepare_spare and reserve share spare_lock)"
        );
        self.spare = Some(device);
    }

    fn truncate_before(&mut self, lsn: Lsn) -> Result<()> {
        // A file ends where the next begins; the last file is never deleted.
        while self.files.len() > 1 && self.files[1].0 <= lsn {
            let (start, _) = self.files.remove(0);
            let path = self.directory.join(local_file_name(start));
            std::fs::remove_file(&path)
                .map_err(|error| StorageError::local_io("delete", &path, error))?;
        }
        Ok(())
    }
}

/// One object `wal/{start:016x}-{end:016x}` per group commit: an acknowledged commit is
/// durable in the object store itself and survives the loss of the machine.
pub(crate) struct VolumeWalSink {
    volume: Arc<dyn Volume>,
    /// (start, end) of every object, oldest first.
    objects: Vec<(Lsn, Lsn)>,
}

fn object_name(start: Lsn, end: Lsn) -> String {
    format!("{WAL_PREFIX}{:016x}-{:016x}", start.0, end.0)
}

fn parse_object_name(name: &str) -> Option<(Lsn, Lsn)> {
    let rest = name.strip_prefix(WAL_PREFIX)?;
    let (start, end) = rest.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    (start < end).then_some((Lsn(start), Lsn(end)))
}

impl WalSink for VolumeWalSink {
    fn write(&mut self, start: Lsn, bytes: &[u8]) -> Result<()> {
        let end = Lsn(start.0 + usize_to_u64(bytes.len()));
        self.volume.put(&object_name(start, end), bytes)?;
        self.objects.push((start, end));
        Ok(())
    }

    fn truncate_before(&mut self, lsn: Lsn) -> Result<()> {
        while let Some(&(start, end)) = self.objects.first() {
            if end > lsn {
                break;
            }
            self.volume.delete(&object_name(start, end))?;
            self.objects.remove(0);
        }
        Ok(())
    }
}

/// Where the log lives.
#[derive(Clone)]
pub enum WalLocation {
    /// Files in this directory (the data directory's `wal/`).
    Local { directory: PathBuf, opener: DeviceOpener },
    /// Objects on the volume: every acknowledged commit is in the object store.
    Volume(Arc<dyn Volume>),
    /// Nowhere (`DiscardWalSink`): an unlogged store (temp tables, design 019) is never
    /// recovered, so its few records (map updates) are dropped and nothing is ever read.
    Discard,
}

/// The sink of `WalLocation::Discard`: every write is "durable" at once and costs nothing.
struct DiscardWalSink;
impl WalSink for DiscardWalSink {
    fn write(&mut self, _start: Lsn, _bytes: &[u8]) -> Result<()> {
        Ok(())
    }
    fn truncate_before(&mut self, _lsn: Lsn) -> Result<()> {
        Ok(())
    }
}

/// Reads the log from `from` to its valid end, calling `visit` for each record, and returns
/// the sink positioned to append at the end. A torn tail (the last write interrupted) is cut
/// off; damage followed by valid records is reported as corruption naming the file.
pub(crate) fn recover(
    location: &WalLocation,
    from: Lsn,
    visit: &mut dyn FnMut(Lsn, Lsn, WalRecord) -> Result<()>,
) -> Result<(Box<dyn WalSink>, Lsn)> {
    match location {
        WalLocation::Local { directory, opener } => recover_local(directory, opener, from, visit),
        WalLocation::Volume(volume) => recover_volume(volume, from, visit),
        WalLocation::Discard => Ok((Box::new(DiscardWalSink), Lsn::ZERO)),
    }
}

fn recover_local(
    directory: &Path,
    opener: &DeviceOpener,
    from: Lsn,
    visit: &mut dyn FnMut(Lsn, Lsn, WalRecord) -> Result<()>,
) -> Result<(Box<dyn WalSink>, Lsn)> {
    std::fs::create_dir_all(directory)
        .map_err(|error| StorageError::local_io("mkdir", directory, error))?;
    let mut starts = Vec::new();
    for entry in std::fs::read_dir(directory)
        .map_err(|error| StorageError::local_io("list", directory, error))?
    {
        let entry = entry.map_err(|error| StorageError::local_io("list", directory, error))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name == SPARE_FILE_NAME {
            // A spare being prepared at the crash, or not yet used: made again when needed.
            std::fs::remove_file(entry.path())
                .map_err(|error| StorageError::local_io("delete", &entry.path(), error))?;
            continue;
        }
        match parse_local_file_name(&name) {
            Some(start) => starts.push(start),
            None => {
                return Err(StorageError::corrupt_file(
                    entry.path().display().to_string(),
                    "unexpected file in wal directory",
                ))
            }
        }
    }
    starts.sort();
    let mut sink = LocalWalSink {
        directory: directory.to_path_buf(),
        opener: Arc::clone(opener),
        files: Vec::new(),
        allocated_end: from,
        spare: None,
    };
    let mut end = from;
    let file_count = starts.len();
    for (index, start) in starts.into_iter().enumerate() {
        let path = directory.join(local_file_name(start));
        let device = opener(&path)?;
        let length = device.len()?;
        let is_last = index + 1 == file_count;
        let file_end = Lsn(start.0 + length);
        if file_end <= from && !is_last {
            sink.files.push((start, device));
            continue;
        }
        // Files are kept from the one holding `from` on (truncation deletes only files that
        // end before it), so a file starting beyond the end so far means a file is missing,
        // the first one included.
        if start > end {
            return Err(StorageError::corrupt_file(
                path.display().to_string(),
                format!("gap in log expected_start={end} found={start}"),
            ));
        }
        let mut bytes = vec![0u8; u64_to_usize(length)];
        device.read_at(0, &mut bytes)?;
        let skip = u64_to_usize(from.0.saturating_sub(start.0)).min(bytes.len());
        let base = Lsn(start.0 + usize_to_u64(skip));
        let mut last_end = base;
        let stop = parse_records(base, &bytes[skip..], &mut |record_start, record_end, record| {
            last_end = record_end;
            visit(record_start, record_end, record)
        })?;
        let stop = match stop {
            // The unwritten part of a preallocated file: the log ends here, nothing to cut
            // (the last file), or goes on in the next file, which must start right here
            // (a write that did not fit started a new file; the gap check above sees to it).
            ParseStop::Invalid { at, valid_after: false, .. }
                if bytes[u64_to_usize(at.0 - start.0)..].iter().all(|&byte| byte == 0) =>
            {
                ParseStop::End
            }
            other => other,
        };
        if let ParseStop::Invalid { at, reason, valid_after } = stop {
            if valid_after || !is_last {
                return Err(StorageError::corrupt_file(
                    path.display().to_string(),
                    format!("invalid record lsn={at} with valid records after it: {reason}"),
                ));
            }
            // Torn tail of the last write: cut it so that appends continue at a boundary.
            device.set_len(last_end.0 - start.0)?;
            device.sync()?;
            tracing::warn!(file = %path.display(), lsn = %at, %reason, "discarded torn wal tail");
        }
        end = last_end;
        sink.allocated_end = Lsn(start.0 + device.len()?);
        sink.files.push((start, device));
    }
    Ok((Box::new(sink), end))
}

fn recover_volume(
    volume: &Arc<dyn Volume>,
    from: Lsn,
    visit: &mut dyn FnMut(Lsn, Lsn, WalRecord) -> Result<()>,
) -> Result<(Box<dyn WalSink>, Lsn)> {
    let mut objects = Vec::new();
    for info in volume.list(WAL_PREFIX)? {
        match parse_object_name(&info.name) {
            Some(range) => objects.push(range),
            None => {
                return Err(StorageError::corrupt_file(
                    info.name,
                    "unexpected object in wal prefix",
                ))
            }
        }
    }
    objects.sort();
    let mut sink = VolumeWalSink { volume: Arc::clone(volume), objects: Vec::new() };
    let mut end = from;
    let last = objects.iter().rposition(|&(_, object_end)| object_end > from);
    for (index, (start, object_end)) in objects.into_iter().enumerate() {
        if object_end <= from {
            sink.objects.push((start, object_end));
            continue;
        }
        let name = object_name(start, object_end);
        let described = || format!("{}/{name}", volume.describe());
        if start > end {
            // Objects are written one after another and the log stops at the first failed
            // PUT, so a gap means an acknowledged object is missing.
            return Err(StorageError::corrupt_file(
                described(),
                format!("gap in log expected_start={end}"),
            ));
        }
        // Parse the whole object before visiting any record: a torn object is discarded whole,
        // and nothing from it may have reached the caller.
        let bytes = volume.get(&name)?;
        let skip = u64_to_usize(from.0.saturating_sub(start.0)).min(bytes.len());
        let mut records = Vec::new();
        let damage = if usize_to_u64(bytes.len()) != object_end.0 - start.0 {
            Some(format!("length={} disagrees with name", bytes.len()))
        } else {
            match parse_records(
                Lsn(start.0 + usize_to_u64(skip)),
                &bytes[skip..],
                &mut |record_start, record_end, record| {
                    records.push((record_start, record_end, record));
                    Ok(())
                },
            )? {
                ParseStop::End => None,
                ParseStop::Invalid { at, reason, .. } => {
                    Some(format!("invalid record lsn={at}: {reason}"))
                }
            }
        };
        if let Some(reason) = damage {
            if Some(index) != last {
                return Err(StorageError::corrupt_file(described(), reason));
            }
            // The last PUT was torn: it was never acknowledged (the log stops after a failed
            // write), so it is cut off like a torn tail of a local file.
            tracing::warn!(object = %described(), %reason, "discarded torn wal object at the end of the log");
            volume.delete(&name)?;
            break;
        }
        for (record_start, record_end, record) in records {
            visit(record_start, record_end, record)?;
        }
        end = object_end;
        sink.objects.push((start, object_end));
    }
    Ok((Box::new(sink), end))
}

/// Counters of the log.
#[derive(Default, Debug)]
pub struct WalStats {
    pub records: Counter,
    pub bytes: Counter,
    /// Sink writes (each one a sync or a PUT): fewer than commits means group commit worked.
    pub syncs: Counter,
}

struct WalState {
    buffer: Vec<u8>,
    /// Position just past the last appended record.
    appended: Lsn,
}

/// The write-ahead log. Appends are cheap and buffered; `flush_to` makes them durable.
pub struct Wal {
    state: Mutex<WalState>,
    /// A leader is writing and syncing (`group_commit.rs`); followers park on this flag's
    /// address until it is cleared.
    flushing: AtomicBool,
    sink: Mutex<Box<dyn WalSink>>,
    durable: AtomicU64,
    poisoned: Mutex<Option<String>>,
    /// The last sink write failed for want of space (see the module header).
    out_of_space: AtomicBool,
    /// When preparing the spare last failed: the next try waits `SPARE_RETRY_INTERVAL`.
    spare_failed_at: Mutex<Option<Instant>>,
    /// Held while a spare is made (zero-filled by the background writer or allocated by
    /// `reserve_space`), so that only one is made at a time.
    spare_lock: Mutex<()>,
    /// The sink's `WalSpace`, copied after every sink call (see `publish_space`).
    allocated_end: AtomicU64,
    spare_ready: AtomicBool,
    /// An append was refused for space (see `take_space_wanted`).
    space_wanted: AtomicBool,
    pub stats: WalStats,
}

impl Wal {
    pub(crate) fn new(sink: Box<dyn WalSink>, end: Lsn) -> Wal {
        let space = sink.space();
        Wal {
            state: Mutex::new(WalState { buffer: Vec::new(), appended: end }),
            flushing: AtomicBool::new(false),
            sink: Mutex::new(sink),
            durable: AtomicU64::new(end.0),
            poisoned: Mutex::new(None),
            out_of_space: AtomicBool::new(false),
            spare_failed_at: Mutex::new(None),
            spare_lock: Mutex::new(()),
            allocated_end: AtomicU64::new(space.allocated_end.0),
            spare_ready: AtomicBool::new(space.spare_ready),
            space_wanted: AtomicBool::new(false),
            stats: WalStats::default(),
        }
    }

    fn check_poisoned(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(cause) => Err(StorageError::Poisoned { cause: cause.clone() }),
            None => Ok(()),
        }
    }

    /// Appends `record` and runs `on_appended(start, end)` while the log is still locked, so
    /// that whatever it publishes (dirty pages with their recovery LSN) is ordered with the
    /// record. Returns the record's end LSN. Not durable until `flush_to`.
    ///
    /// Fails with `DiskFull`, adding nothing, when the record would not fit the space the
    /// sink has reserved and no more can be reserved, or while the last flush failed for
    /// want of space (the module header's state machine). So a record that is appended can
    /// always be written: a commit never waits for space after its record is in the log.
    pub fn append_with(
        &self,
        record: &WalRecord,
        on_appended: impl FnOnce(Lsn, Lsn),
    ) -> Result<Lsn> {
        self.check_poisoned()?;
        if self.out_of_space.load(Ordering::Acquire) {
            self.flush_to(self.appended_lsn())?;
        }
        let body = encode_record_body(record)?;
        let mut on_appended = Some(on_appended);
        if let Some(end) =
            self.append_body(&body, Some(UNBOUNDED_RESERVE_BYTES), &mut on_appended)?
        {
            return Ok(end);
        }
        self.reserve_space()?;
        match self.append_body(&body, Some(UNBOUNDED_RESERVE_BYTES), &mut on_appended)? {
            Some(end) => Ok(end),
            // Reserved, yet others took the room meanwhile: as full as before.
            None => Err(StorageError::DiskFull { op: "wal-reserve", path: "wal".to_string() }),
        }
    }

    /// `append_with` without the check for room: for a record that must follow a write
    /// already done (a map update naming a segment just written), never refused for space.
    /// Such records are small and rare; `UNBOUNDED_RESERVE_BYTES` of the reserved space is
    /// kept for them.
    pub(crate) fn append_unbounded(
        &self,
        record: &WalRecord,
        on_appended: impl FnOnce(Lsn, Lsn),
    ) -> Result<Lsn> {
        self.check_poisoned()?;
        let body = encode_record_body(record)?;
        let appended = self.append_body(&body, None, &mut Some(on_appended))?;
        Ok(appended.expect("an append without a room check always appends"))
    }

    /// Frames `body` at the log end, unless `keep_free` is given and the record plus that
    /// much would not fit the reserved space: then `None`, nothing appended.
    fn append_body(
        &self,
        body: &[u8],
        keep_free: Option<u64>,
        on_appended: &mut Option<impl FnOnce(Lsn, Lsn)>,
    ) -> Result<Option<Lsn>> {
        let (end, buffered) = {
            let mut state = self.state.lock();
            let start = state.appended;
            if let Some(keep_free) = keep_free {
                let framed = usize_to_u64(RECORD_HEADER_BYTES + body.len() + RECORD_ALIGN_BYTES);
                if !self.fits_reserved(start, framed.saturating_add(keep_free)) {
                    return Ok(None);
                }
            }
            let length = frame_body(start, body, &mut state.buffer);
            let end = Lsn(start.0 + usize_to_u64(length));
            state.appended = end;
            (on_appended.take().expect("appended once"))(start, end);
            self.stats.records.increment();
            self.stats.bytes.add(usize_to_u64(length));
            (end, state.buffer.len())
        };
        if buffered >= WAL_BUFFER_BYTES_MAX {
            // The record is in the log whatever happens now: a failed flush poisons the log
            // (every later call fails) or leaves the bytes for the next one (no space), but
            // this append succeeded and must say so, or the caller would undo a change that
            // redo may still apply.
            let _ = self.flush_to(end);
        }
        Ok(Some(end))
    }

    /// Makes sure `bytes` more can be appended without a room check and still be written
    /// within the reserved space, reserving the next file if needed; `DiskFull` when it
    /// cannot. The flush asks before it writes a segment whose map update must follow, so
    /// that unbounded appends never outgrow the reservation.
    pub(crate) fn ensure_unbounded_room(&self, bytes: u64) -> Result<()> {
        let has_room = || self.fits_reserved(self.appended_lsn(), bytes);
        if has_room() {
            return Ok(());
        }
        self.reserve_space()?;
        if has_room() {
            return Ok(());
        }
        Err(StorageError::DiskFull { op: "wal-reserve", path: "wal".to_string() })
    }

    /// Whether `bytes` written from `start` land in reserved space: a spare is ready (a
    /// whole file), or they end within the current file's allocation.
    fn fits_reserved(&self, start: Lsn, bytes: u64) -> bool {
        self.spare_ready.load(Ordering::Acquire)
            || start.0.saturating_add(bytes) <= self.allocated_end.load(Ordering::Acquire)
    }

    /// Asks the sink to reserve its next file now (an append found no room). When it
    /// cannot, the background writer is asked to give log space back (`take_space_wanted`).
    fn reserve_space(&self) -> Result<()> {
        let _spare = self.spare_lock.lock();
        let mut sink = self.sink.lock();
        let outcome = sink.reserve();
        self.publish_space(sink.space());
        if outcome.as_ref().is_err_and(StorageError::is_disk_full) {
            self.space_wanted.store(true, Ordering::Release);
        }
        outcome
    }

    /// Whether an append was refused for space since the last call: the background writer
    /// then writes every dirty page and checkpoints, so that the log before the new redo
    /// point is deleted and its space can hold the next file.
    pub(crate) fn take_space_wanted(&self) -> bool {
        self.space_wanted.swap(false, Ordering::AcqRel)
    }

    /// Copies the sink's reserved space to where appenders read it without the sink lock.
    fn publish_space(&self, space: WalSpace) {
        self.allocated_end.store(space.allocated_end.0, Ordering::Release);
        self.spare_ready.store(space.spare_ready, Ordering::Release);
    }

    pub fn append(&self, record: &WalRecord) -> Result<Lsn> {
        self.append_with(record, |_, _| {})
    }

    /// Position just past the last appended record.
    pub fn appended_lsn(&self) -> Lsn {
        self.state.lock().appended
    }

    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.durable.load(Ordering::Acquire))
    }

    /// Prepares the local sink's next file ahead of its roll, if it wants one: zero-filled
    /// and synced outside the sink's lock, so committers never wait for it. Called by the
    /// background writer.
    ///
    /// A failed attempt removes its partial file (on a full disk the zeros would take the
    /// last free space from the statements that need it) and the next attempt waits
    /// `SPARE_RETRY_INTERVAL`.
    pub(crate) fn prepare_spare(&self) -> Result<()> {
        if self.spare_failed_at.lock().is_some_and(|at| at.elapsed() < SPARE_RETRY_INTERVAL) {
            return Ok(());
        }
        let _spare = self.spare_lock.lock();
        let wanted = self.sink.lock().spare_wanted(self.durable_lsn());
        let Some((path, opener)) = wanted else { return Ok(()) };
        let filled = (|| -> Result<Box<dyn Device>> {
            let device = opener(&path)?;
            device.set_len(0)?;
            let zeros = vec![0u8; SPARE_FILL_CHUNK_BYTES];
            let mut offset = 0u64;
            while offset < WAL_FILE_BYTES_MAX {
                device.write_at(offset, &zeros)?;
                device.sync()?;
                offset += usize_to_u64(SPARE_FILL_CHUNK_BYTES);
            }
            Ok(device)
        })();
        match filled {
            Ok(device) => {
                *self.spare_failed_at.lock() = None;
                let mut sink = self.sink.lock();
                sink.give_spare(device);
                self.publish_space(sink.space());
                Ok(())
            }
            Err(error) => {
                *self.spare_failed_at.lock() = Some(Instant::now());
                if let Err(removal) = std::fs::remove_file(&path) {
                    if removal.kind() != std::io::ErrorKind::NotFound {
                        tracing::warn!(error = %removal, path = %path.display(), "removing a partial wal spare failed");
                    }
                }
                Err(error)
            }
        }
    }

    /// Deletes log files wholly before `lsn` (after a checkpoint made them unneeded).
    pub(crate) fn truncate_before(&self, lsn: Lsn) -> Result<()> {
        self.check_poisoned()?;
        self.sink.lock().truncate_before(lsn)
    }
}

/// Reads records in `[from, until)` without changing anything (the log was already
/// validated by `recover`), calling `visit` for each.
pub(crate) fn replay(
    location: &WalLocation,
    from: Lsn,
    until: Lsn,
    visit: &mut dyn FnMut(Lsn, Lsn, WalRecord) -> Result<()>,
) -> Result<()> {
    let mut regions: Vec<(Lsn, Vec<u8>)> = Vec::new();
    match location {
        WalLocation::Local { directory, opener } => {
            let mut starts: Vec<Lsn> = std::fs::read_dir(directory)
                .map_err(|error| StorageError::local_io("list", directory, error))?
                .filter_map(|entry| {
                    entry.ok().and_then(|entry| {
                        parse_local_file_name(&entry.file_name().to_string_lossy())
                    })
                })
                .collect();
            starts.sort();
            for (index, &start) in starts.iter().enumerate().filter(|&(_, &start)| start < until) {
                let device = opener(&directory.join(local_file_name(start)))?;
                // A file ends where the next begins: past that it holds only the zero tail a
                // roll left (recover_local checked it), which must not be parsed as records.
                let next_start = starts.get(index + 1).map_or(until, |&next| next.min(until));
                let length = device.len()?.min(next_start.0 - start.0);
                if start.0 + length <= from.0 {
                    continue;
                }
                let mut bytes = vec![0u8; u64_to_usize(length)];
                device.read_at(0, &mut bytes)?;
                regions.push((start, bytes));
            }
        }
        WalLocation::Volume(volume) => {
            let mut objects: Vec<(Lsn, Lsn)> = volume
                .list(WAL_PREFIX)?
                .iter()
                .filter_map(|info| parse_object_name(&info.name))
                .filter(|&(start, end)| start < until && end > from)
                .collect();
            objects.sort();
            for (start, end) in objects {
                regions.push((start, volume.get(&object_name(start, end))?));
            }
        }
        WalLocation::Discard => {}
    }
    for (start, bytes) in regions {
        let skip = u64_to_usize(from.0.saturating_sub(start.0)).min(bytes.len());
        let limit = u64_to_usize(until.0.saturating_sub(start.0)).min(bytes.len());
        if skip >= limit {
            continue;
        }
        let stop = parse_records(Lsn(start.0 + usize_to_u64(skip)), &bytes[skip..limit], visit)?;
        if let ParseStop::Invalid { at, reason, .. } = stop {
            return Err(StorageError::corrupt_file(
                format!("wal lsn={at}"),
                format!("record changed since recovery validated it: {reason}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tierdb_common::PageType;

    use super::*;

    fn arbitrary_record() -> impl Strategy<Value = WalRecord> {
        let op = prop_oneof![
            (1u64..1 << 40, any::<u8>()).prop_map(|(id, code)| PageOp::Init {
                page_id: PageId(id),
                page_type: PageType::from_code(code)
            }),
            (1u64..1 << 40, 0u16..8000, prop::collection::vec(any::<u8>(), 0..160)).prop_map(
                |(id, offset, bytes)| PageOp::Write { page_id: PageId(id), offset, bytes }
            ),
            // Few page ids, so that runs of ops on one page (encoded without the id) are common.
            (1u64..4, 0u16..4000, 0u16..4000, 0u16..4000).prop_map(
                |(id, source, destination, length)| PageOp::Move {
                    page_id: PageId(id),
                    source,
                    destination,
                    length
                }
            ),
            (1u64..4, 0u16..8000, prop::collection::vec(any::<u8>(), 0..40)).prop_map(
                |(id, offset, bytes)| PageOp::Write { page_id: PageId(id), offset, bytes }
            ),
            (1u64..4, crate::wal_compact::arbitrary_compaction())
                .prop_map(|(id, compaction)| PageOp::Compact { page_id: PageId(id), compaction }),
        ];
        prop_oneof![
            prop::collection::vec(op, 1..6).prop_map(WalRecord::PageOps),
            (1u64..u64::MAX, 1u32..300, prop::collection::vec((1u64..1 << 40, 0u32..300), 0..20))
                .prop_map(|(segment, slots, entries)| WalRecord::MapUpdate {
                    segment: SegmentId(segment),
                    slots,
                    entries: entries.into_iter().map(|(id, slot)| (PageId(id), slot)).collect(),
                }),
            (any::<u8>(), prop::collection::vec(any::<u8>(), 0..200))
                .prop_map(|(kind, payload)| WalRecord::Opaque { kind, payload }),
            prop::collection::btree_set(1u64..1 << 40, 1..30).prop_map(|pages| {
                WalRecord::PagesFreed(pages.into_iter().map(PageId).collect())
            }),
        ]
    }

    #[test]
    fn freed_pages_out_of_order_repeated_or_page_zero_are_rejected() {
        let body = |count: u32, pages: &[u64]| {
            let mut body = vec![TAG_PAGES_FREED];
            body.extend_from_slice(&count.to_le_bytes());
            for page in pages {
                body.extend_from_slice(&page.to_le_bytes());
            }
            body
        };
        let decoded = WalRecord::decode_body(&body(2, &[3, 9])).unwrap();
        assert_eq!(decoded, WalRecord::PagesFreed(vec![PageId(3), PageId(9)]));
        for (count, pages) in [(2, &[9u64, 3][..]), (2, &[3, 3]), (1, &[0]), (0, &[]), (2, &[3])] {
            assert!(WalRecord::decode_body(&body(count, pages)).is_err(), "{count} {pages:?}");
        }
        let too_many = u32::try_from(FREED_PAGES_PER_RECORD_MAX + 1).unwrap();
        assert!(WalRecord::decode_body(&body(too_many, &[])).is_err());
    }

    fn encode_all(base: Lsn, records: &[WalRecord]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for record in records {
            let start = Lsn(base.0 + usize_to_u64(bytes.len()));
            frame_record(start, record, &mut bytes);
        }
        bytes
    }

    fn decode_all(base: Lsn, bytes: &[u8]) -> (Vec<WalRecord>, ParseStop) {
        let mut records = Vec::new();
        let stop = parse_records(base, bytes, &mut |_, _, record| {
            records.push(record);
            Ok(())
        })
        .unwrap();
        (records, stop)
    }

    proptest! {
        #[test]
        fn records_round_trip(base in (0u64..1 << 40).prop_map(|value| value * 8), records in prop::collection::vec(arbitrary_record(), 1..10)) {
            let bytes = encode_all(Lsn(base), &records);
            prop_assert_eq!(bytes.len() % RECORD_ALIGN_BYTES, 0);
            let (decoded, stop) = decode_all(Lsn(base), &bytes);
            prop_assert!(matches!(stop, ParseStop::End));
            prop_assert_eq!(decoded, records);
        }

        #[test]
        fn torn_tail_stops_cleanly(records in prop::collection::vec(arbitrary_record(), 2..8), cut_seed in any::<u64>()) {
            let bytes = encode_all(Lsn(0), &records);
            let cut = usize::try_from(cut_seed % u64::try_from(bytes.len()).unwrap()).unwrap();
            let (decoded, stop) = decode_all(Lsn(0), &bytes[..cut]);
            prop_assert!(decoded.len() < records.len() || cut == bytes.len());
            prop_assert_eq!(&decoded[..], &records[..decoded.len()]);
            if let ParseStop::Invalid { valid_after, .. } = stop {
                prop_assert!(!valid_after, "a torn tail must not look like corruption");
            }
        }

        #[test]
        fn damage_before_valid_records_is_corruption(records in prop::collection::vec(arbitrary_record(), 3..8), bit_seed in any::<u64>()) {
            let bytes = encode_all(Lsn(0), &records);
            // Damage the first record; later records still validate, so this is not a tail.
            let first_length = encode_all(Lsn(0), &records[..1]).len();
            let bit = usize::try_from(bit_seed % u64::try_from(first_length * 8).unwrap()).unwrap();
            let mut damaged = bytes.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            let (decoded, stop) = decode_all(Lsn(0), &damaged);
            match stop {
                ParseStop::Invalid { valid_after, .. } => {
                    prop_assert!(decoded.is_empty());
                    prop_assert!(valid_after);
                }
                // A flip inside the zero padding of the first record changes nothing covered.
                ParseStop::End => prop_assert_eq!(decoded, records),
            }
        }

        #[test]
        fn record_only_validates_at_its_own_position(record in arbitrary_record()) {
            let bytes = encode_all(Lsn(64), std::slice::from_ref(&record));
            let (decoded, _) = decode_all(Lsn(72), &bytes);
            prop_assert!(decoded.is_empty());
        }
    }
}
