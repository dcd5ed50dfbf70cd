//! Temporary files on the local tier device: where sorts, hash aggregates, hash joins, set
//! operations, cursors and index builds put what does not fit in their memory budget
//! (design 011).
//!
//! A temporary file is never logged, never synced and never read after a restart, so it is
//! made to disappear with its process: it is created under a unique name and unlinked at
//! once, and only its open descriptor keeps it alive. A crash (even SIGKILL) frees its space
//! with the descriptor. `TempSpace::open` still removes leftovers named `tierdb-temp-*`,
//! the files of a process killed between create and unlink.
//!
//! Files are written sequentially in blocks of `TEMP_BLOCK_BYTES` and read back
//! sequentially (each reader with its own buffer), so the device sees large requests only.
//! Every block written is reserved twice before it is written: against the server-wide
//! quota of the temp space (`TempConfig::quota_bytes`, 53100 when full) and against the
//! session's `temp_file_limit` (`TempUsage`, 53400). Both are given back when the file is
//! dropped.
//!
//! Record format (one file is one sequence of records, read in the order written):
//!
//! ```text
//! offset  size  field
//! 0       4     length of the record body in bytes (u32 little-endian)
//! 4       n     body
//! ```

mod memory;
mod tables;

pub use memory::{MemoryGrant, MemoryPool, MEMORY_GRANT_STEP_BYTES};
pub use tables::{TempTableVolume, TABLE_STORE_PREFIX};

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Result, StorageError};

/// Bytes buffered by a writer before one positional write: large sequential requests.
pub const TEMP_BLOCK_BYTES: usize = 256 * 1024;
/// The smallest write buffer (`TempSpace::create_buffered`).
pub const TEMP_WRITE_BYTES_MIN: usize = 8 * 1024;
/// The smallest read buffer of a reader (a merge of many runs gives each a share).
pub const TEMP_READ_BYTES_MIN: usize = 16 * 1024;
/// Prefix of every temporary file's name (what the startup sweep removes).
pub const TEMP_FILE_PREFIX: &str = "tierdb-temp-";
/// Bytes of a record's length prefix.
const RECORD_HEADER_BYTES: usize = 4;
/// The largest record body: a row or key larger than this cannot be spilled (PostgreSQL's
/// largest field is 1 GB, and a row of several is refused by its memory limits first).
pub const TEMP_RECORD_BYTES_MAX: usize = 1 << 30;

/// Where temporary files go and how much of that device they may take.
#[derive(Clone, Debug)]
pub struct TempConfig {
    pub dir: PathBuf,
    /// Bytes all temporary files together may hold (53100 past it).
    pub quota_bytes: u64,
    /// Bytes all query operators together may hold in memory (`MemoryPool`).
    pub operator_memory_bytes: usize,
}

impl TempConfig {
    /// The defaults beside a tier file in `dir`: 64 GiB of temp files, 1 GiB of operator
    /// memory.
    pub fn beside(dir: &Path) -> TempConfig {
        TempConfig { dir: dir.join("temp"), quota_bytes: 64 << 30, operator_memory_bytes: 1 << 30 }
    }
}

/// Totals since the server started, for `pg_stat_database` and `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TempStats {
    pub files_created: u64,
    pub bytes_written: u64,
    pub files_open: u64,
    pub bytes_in_use: u64,
    pub quota_bytes: u64,
    /// Bytes of `bytes_in_use` the temp tables' stores hold (design 019).
    pub table_bytes: u64,
}

/// The temp space of one server: a directory on the local tier device with a quota.
pub struct TempSpace {
    dir: PathBuf,
    memory: Arc<MemoryPool>,
    quota_bytes: u64,
    bytes_in_use: AtomicU64,
    files_open: AtomicU64,
    files_created: AtomicU64,
    bytes_written: AtomicU64,
    next_file: AtomicU64,
    /// Bytes the temp tables' stores hold (`tables.rs`), counted in `bytes_in_use` too.
    table_bytes: AtomicU64,
}

/// One session's temporary bytes, bounded by its `temp_file_limit`.
#[derive(Debug)]
pub struct TempUsage {
    limit_bytes: AtomicU64,
    /// Files at least this big are logged when they are removed (`log_temp_files`).
    log_bytes_min: AtomicU64,
    bytes_in_use: AtomicU64,
    files_created: AtomicU64,
    bytes_written: AtomicU64,
}

impl Default for TempUsage {
    fn default() -> TempUsage {
        TempUsage::new(None)
    }
}

impl TempUsage {
    /// `None`: no limit (PostgreSQL's `temp_file_limit = -1`).
    pub fn new(limit_bytes: Option<u64>) -> TempUsage {
        TempUsage {
            limit_bytes: AtomicU64::new(limit_bytes.unwrap_or(u64::MAX)),
            log_bytes_min: AtomicU64::new(u64::MAX),
            bytes_in_use: AtomicU64::new(0),
            files_created: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
        }
    }

    /// Sets the limit (at each statement's start, from the session's setting).
    pub fn set_limit(&self, limit_bytes: Option<u64>) {
        self.limit_bytes.store(limit_bytes.unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Logs each file of at least `bytes` when it is removed (`None`: none are logged).
    pub fn set_log_bytes_min(&self, bytes: Option<u64>) {
        self.log_bytes_min.store(bytes.unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    pub fn bytes_in_use(&self) -> u64 {
        self.bytes_in_use.load(Ordering::Relaxed)
    }

    /// Files and bytes written through this usage since it was made.
    pub fn totals(&self) -> (u64, u64) {
        (self.files_created.load(Ordering::Relaxed), self.bytes_written.load(Ordering::Relaxed))
    }

    fn reserve(&self, bytes: u64) -> Result<()> {
        let limit_bytes = self.limit_bytes.load(Ordering::Relaxed);
        let before = self.bytes_in_use.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > limit_bytes {
            self.bytes_in_use.fetch_sub(bytes, Ordering::Relaxed);
            return Err(StorageError::TempFileLimit { limit_kb: limit_bytes / 1024 });
        }
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    fn release(&self, bytes: u64) {
        let before = self.bytes_in_use.fetch_sub(bytes, Ordering::Relaxed);
        assert!(before >= bytes, "temp usage released more than it reserved");
    }
}

impl TempSpace {
    /// Opens (creating) the directory and removes the files a crashed process left.
    pub fn open(config: &TempConfig) -> Result<Arc<TempSpace>> {
        std::fs::create_dir_all(&config.dir)
            .map_err(|error| StorageError::local_io("mkdir", &config.dir, error))?;
        let removed = sweep(&config.dir)?;
        if removed > 0 {
            tracing::info!(dir = %config.dir.display(), removed, "removed leftover temporary files");
        }
        let removed = tables::sweep_table_stores(&config.dir)?;
        if removed > 0 {
            tracing::info!(dir = %config.dir.display(), removed, "removed temp tables a crash left");
        }
        Ok(Arc::new(TempSpace {
            dir: config.dir.clone(),
            memory: MemoryPool::new(config.operator_memory_bytes),
            quota_bytes: config.quota_bytes,
            bytes_in_use: AtomicU64::new(0),
            files_open: AtomicU64::new(0),
            files_created: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            next_file: AtomicU64::new(0),
            table_bytes: AtomicU64::new(0),
        }))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The memory all operators share (see `MemoryPool`).
    pub fn memory(&self) -> &Arc<MemoryPool> {
        &self.memory
    }

    pub fn stats(&self) -> TempStats {
        TempStats {
            files_created: self.files_created.load(Ordering::Relaxed),
            bytes_written: self.bytes_written.load(Ordering::Relaxed),
            files_open: self.files_open.load(Ordering::Relaxed),
            bytes_in_use: self.bytes_in_use.load(Ordering::Relaxed),
            quota_bytes: self.quota_bytes,
            table_bytes: self.table_bytes.load(Ordering::Relaxed),
        }
    }

    /// A new, empty temporary file charged to `usage`, written in `TEMP_BLOCK_BYTES` blocks.
    pub fn create(self: &Arc<Self>, usage: &Arc<TempUsage>) -> Result<TempWriter> {
        self.create_buffered(usage, TEMP_BLOCK_BYTES)
    }

    /// As `create`, with a smaller write buffer: for operators that write many files at once
    /// (the partitions of a hash join or aggregate), whose buffers would otherwise pass
    /// their memory budget.
    pub fn create_buffered(
        self: &Arc<Self>,
        usage: &Arc<TempUsage>,
        buffer_bytes: usize,
    ) -> Result<TempWriter> {
        let buffer_bytes = buffer_bytes.clamp(TEMP_WRITE_BYTES_MIN, TEMP_BLOCK_BYTES);
        let number = self.next_file.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{TEMP_FILE_PREFIX}{}-{number}", std::process::id()));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|error| StorageError::local_io("create", &path, error))?;
        // The descriptor keeps the data; the name goes now so that no crash can leave it.
        std::fs::remove_file(&path)
            .map_err(|error| StorageError::local_io("unlink", &path, error))?;
        self.files_open.fetch_add(1, Ordering::Relaxed);
        self.files_created.fetch_add(1, Ordering::Relaxed);
        usage.files_created.fetch_add(1, Ordering::Relaxed);
        let holder = FileHolder {
            file,
            path,
            space: Arc::clone(self),
            usage: Arc::clone(usage),
            reserved_bytes: AtomicU64::new(0),
        };
        Ok(TempWriter {
            holder: Arc::new(holder),
            buffer: Vec::with_capacity(buffer_bytes),
            block_bytes: buffer_bytes,
            written_bytes: 0,
            records: 0,
        })
    }

    fn reserve(&self, bytes: u64) -> Result<()> {
        self.claim_quota(bytes)?;
        self.bytes_written.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Adds `bytes` to `bytes_in_use`, or fails (53100, as a full disk) past the quota.
    fn claim_quota(&self, bytes: u64) -> Result<()> {
        let before = self.bytes_in_use.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > self.quota_bytes {
            self.bytes_in_use.fetch_sub(bytes, Ordering::Relaxed);
            return Err(StorageError::DiskFull {
                op: "temp-quota",
                path: self.dir.display().to_string(),
            });
        }
        Ok(())
    }
}

/// Removes every `tierdb-temp-*` file in `dir`; returns how many.
fn sweep(dir: &Path) -> Result<u64> {
    let entries =
        std::fs::read_dir(dir).map_err(|error| StorageError::local_io("readdir", dir, error))?;
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(|error| StorageError::local_io("readdir", dir, error))?;
        if entry.file_name().to_string_lossy().starts_with(TEMP_FILE_PREFIX) {
            let path = entry.path();
            match std::fs::remove_file(&path) {
                Ok(()) => removed += 1,
                // Another process of a shared directory removed it first.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(StorageError::local_io("unlink", &path, error)),
            }
        }
    }
    Ok(removed)
}

/// The open file and what it reserved; the space is given back when the last writer or
/// reader of the file is dropped.
struct FileHolder {
    file: File,
    path: PathBuf,
    space: Arc<TempSpace>,
    usage: Arc<TempUsage>,
    reserved_bytes: AtomicU64,
}

impl FileHolder {
    fn reserve(&self, bytes: u64) -> Result<()> {
        self.usage.reserve(bytes)?;
        if let Err(error) = self.space.reserve(bytes) {
            self.usage.release(bytes);
            return Err(error);
        }
        self.reserved_bytes.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }
}

impl Drop for FileHolder {
    fn drop(&mut self) {
        let bytes = *self.reserved_bytes.get_mut();
        if bytes >= self.usage.log_bytes_min.load(Ordering::Relaxed) {
            tracing::info!(path = %self.path.display(), size = bytes, "temporary file");
        }
        self.usage.release(bytes);
        let before = self.space.bytes_in_use.fetch_sub(bytes, Ordering::Relaxed);
        assert!(before >= bytes, "temp space released more than it reserved");
        self.space.files_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Appends records to a temporary file.
pub struct TempWriter {
    holder: Arc<FileHolder>,
    buffer: Vec<u8>,
    /// Bytes buffered before a write.
    block_bytes: usize,
    written_bytes: u64,
    records: u64,
}

impl TempWriter {
    /// Appends one record.
    pub fn write(&mut self, body: &[u8]) -> Result<()> {
        if body.len() > TEMP_RECORD_BYTES_MAX {
            return Err(StorageError::RecordTooLarge {
                bytes: body.len(),
                limit: TEMP_RECORD_BYTES_MAX,
            });
        }
        let length = u32::try_from(body.len()).expect("bounded by TEMP_RECORD_BYTES_MAX");
        if self.buffer.len() + RECORD_HEADER_BYTES + body.len() > self.block_bytes {
            self.flush()?;
        }
        self.buffer.extend_from_slice(&length.to_le_bytes());
        self.buffer.extend_from_slice(body);
        if self.buffer.len() >= self.block_bytes {
            self.flush()?;
        }
        self.records += 1;
        Ok(())
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written so far, buffered ones included.
    pub fn bytes(&self) -> u64 {
        self.written_bytes + u64::try_from(self.buffer.len()).expect("a buffer fits u64")
    }

    fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let bytes = u64::try_from(self.buffer.len()).expect("a buffer fits u64");
        self.holder.reserve(bytes)?;
        self.holder
            .file
            .write_all_at(&self.buffer, self.written_bytes)
            .map_err(|error| StorageError::local_io("write", &self.holder.path, error))?;
        self.written_bytes += bytes;
        self.buffer.clear();
        Ok(())
    }

    /// Writes what is buffered; the file can then be read any number of times.
    pub fn finish(mut self) -> Result<TempRun> {
        self.flush()?;
        Ok(TempRun {
            holder: Arc::clone(&self.holder),
            bytes: self.written_bytes,
            records: self.records,
        })
    }
}

/// A finished temporary file: its records can be read, from the start, by any number of
/// readers. Dropping the run and its readers frees the file.
#[derive(Clone)]
pub struct TempRun {
    holder: Arc<FileHolder>,
    bytes: u64,
    records: u64,
}

impl TempRun {
    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// A reader from the first record, with a read buffer of `buffer_bytes`.
    pub fn reader(&self, buffer_bytes: usize) -> TempReader {
        let capacity = buffer_bytes.max(TEMP_READ_BYTES_MIN);
        TempReader {
            holder: Arc::clone(&self.holder),
            file_bytes: self.bytes,
            records_left: self.records,
            file_offset: 0,
            buffer: Vec::with_capacity(capacity),
            buffer_start: 0,
            capacity,
        }
    }
}

/// Reads a run's records in order.
pub struct TempReader {
    holder: Arc<FileHolder>,
    file_bytes: u64,
    records_left: u64,
    /// Offset in the file of the byte after `buffer`'s end.
    file_offset: u64,
    buffer: Vec<u8>,
    /// Offset in `buffer` of the next unread byte.
    buffer_start: usize,
    capacity: usize,
}

impl TempReader {
    /// The next record's body, or `None` after the last one.
    pub fn next_record(&mut self) -> Result<Option<&[u8]>> {
        if self.records_left == 0 {
            return Ok(None);
        }
        self.fill(RECORD_HEADER_BYTES)?;
        let header: [u8; RECORD_HEADER_BYTES] = self.buffer
            [self.buffer_start..self.buffer_start + RECORD_HEADER_BYTES]
            .try_into()
            .expect("filled");
        let length = usize::try_from(u32::from_le_bytes(header)).expect("u32 fits usize");
        if length > TEMP_RECORD_BYTES_MAX {
            return Err(self.corrupt(format!("record length {length} past the maximum")));
        }
        self.fill(RECORD_HEADER_BYTES + length)?;
        let start = self.buffer_start + RECORD_HEADER_BYTES;
        self.buffer_start = start + length;
        self.records_left -= 1;
        Ok(Some(&self.buffer[start..start + length]))
    }

    /// Makes at least `needed` unread bytes available in the buffer.
    fn fill(&mut self, needed: usize) -> Result<()> {
        let available = self.buffer.len() - self.buffer_start;
        if available >= needed {
            return Ok(());
        }
        self.buffer.drain(..self.buffer_start);
        self.buffer_start = 0;
        let want = needed.max(self.capacity);
        let file_left = self.file_bytes - self.file_offset;
        let read_bytes = u64::try_from(want - available).expect("fits u64").min(file_left);
        let read_bytes = usize::try_from(read_bytes).expect("bounded by a usize");
        if available + read_bytes < needed {
            return Err(self.corrupt(format!(
                "a record runs past the end of the file offset={} needed={needed}",
                self.file_offset
            )));
        }
        let old_len = self.buffer.len();
        self.buffer.resize(old_len + read_bytes, 0);
        self.holder
            .file
            .read_exact_at(&mut self.buffer[old_len..], self.file_offset)
            .map_err(|error| StorageError::local_io("read", &self.holder.path, error))?;
        self.file_offset += u64::try_from(read_bytes).expect("fits u64");
        Ok(())
    }

    fn corrupt(&self, detail: String) -> StorageError {
        StorageError::corrupt_file(self.holder.path.display().to_string(), detail)
    }
}
