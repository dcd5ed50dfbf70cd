//! The storage layer's error: a specific enum for what went wrong, each variant mapped to the
//! public `ErrorKind` that tells the user what to do. Messages are lowercase with `key=value`
//! detail and always name the file or object involved.

use tierdb_common::{ErrorKind, PageCorruption, PageId, SegmentId};

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("volume i/o failed op={op} object={object}: {detail}")]
    VolumeIo { op: &'static str, object: String, detail: String },

    #[error("object not found object={object}")]
    NotFound { object: String },

    #[error("corrupt page page_id={page_id} version={version} location={location}: {reason}")]
    CorruptPage { page_id: PageId, version: SegmentId, location: String, reason: PageCorruption },

    #[error("corrupt file file={file}: {detail}")]
    CorruptFile { file: String, detail: String },

    #[error("local i/o failed op={op} path={path}: {source}")]
    LocalIo {
        op: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },

    /// The file system had no room: the write did not happen (a partial file is removed, a
    /// partial WAL write is rewritten from its start by the next attempt), so nothing is
    /// poisoned and the same write succeeds once space is freed.
    #[error("no space left on device op={op} path={path}")]
    DiskFull { op: &'static str, path: String },

    #[error("store is poisoned after a failed durable write; restart to recover: {cause}")]
    Poisoned { cause: String },

    #[error("page not found page_id={page_id}")]
    UnknownPage { page_id: PageId },

    #[error("invalid configuration: {detail}")]
    InvalidConfig { detail: String },

    #[error("buffer pool exhausted: every frame is pinned frames={frames}")]
    PoolExhausted { frames: usize },

    #[error("wal record too large bytes={bytes} limit={limit}; split the change into smaller mini-transactions")]
    RecordTooLarge { bytes: usize, limit: usize },

    #[error("data directory in use by another process path={path}")]
    Locked { path: String },

    /// A session's temporary files would pass its `temp_file_limit`.
    #[error("temporary file size exceeds temp_file_limit ({limit_kb}kB)")]
    TempFileLimit { limit_kb: u64 },
}

impl StorageError {
    /// What the caller can do about it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StorageError::VolumeIo { .. } | StorageError::LocalIo { .. } => ErrorKind::Io,
            StorageError::NotFound { .. }
            | StorageError::CorruptPage { .. }
            | StorageError::CorruptFile { .. } => ErrorKind::Corruption,
            StorageError::Poisoned { .. } => ErrorKind::Poisoned,
            StorageError::DiskFull { .. } => ErrorKind::DiskFull,
            StorageError::UnknownPage { .. }
            | StorageError::InvalidConfig { .. }
            | StorageError::Locked { .. } => ErrorKind::InvalidArgument,
            StorageError::PoolExhausted { .. } | StorageError::RecordTooLarge { .. } => {
                ErrorKind::ResourceExhausted
            }
            StorageError::TempFileLimit { .. } => ErrorKind::LimitExceeded,
        }
    }

    /// A failed local file operation. No space left (ENOSPC, or EDQUOT for a quota) is
    /// `DiskFull`, except from a sync: after a failed fsync the kernel may have dropped the
    /// dirty pages, so what the file holds is unknown and the caller must treat it as a
    /// failed durable write (PostgreSQL's fsync lesson), not as a write to retry.
    pub(crate) fn local_io(
        op: &'static str,
        path: &std::path::Path,
        source: std::io::Error,
    ) -> StorageError {
        let path = path.display().to_string();
        if is_out_of_space(&source) && !SYNC_OPS.contains(&op) {
            return StorageError::DiskFull { op, path };
        }
        StorageError::LocalIo { op, path, source }
    }

    /// Whether the error only says that space ran out (nothing written, nothing poisoned).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StorageError::DiskFull { .. })
    }

    pub(crate) fn corrupt_file(file: impl Into<String>, detail: impl Into<String>) -> StorageError {
        StorageError::CorruptFile { file: file.into(), detail: detail.into() }
    }
}

/// Operations whose failure leaves a file's durable contents unknown.
const SYNC_OPS: [&str; 2] = ["fdatasync", "fsync-dir"];
/// ENOSPC and EDQUOT on Linux (std has `ErrorKind::StorageFull` for ENOSPC; a quota is the
/// same condition to the caller).
const OUT_OF_SPACE_ERRNOS: [i32; 2] = [28, 122];

fn is_out_of_space(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::StorageFull
        || error.raw_os_error().is_some_and(|errno| OUT_OF_SPACE_ERRNOS.contains(&errno))
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
