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
            StorageError::UnknownPage { .. }
            | StorageError::InvalidConfig { .. }
            | StorageError::Locked { .. } => ErrorKind::InvalidArgument,
            StorageError::PoolExhausted { .. } | StorageError::RecordTooLarge { .. } => {
                ErrorKind::ResourceExhausted
            }
        }
    }

    pub(crate) fn local_io(
        op: &'static str,
        path: &std::path::Path,
        source: std::io::Error,
    ) -> StorageError {
        StorageError::LocalIo { op, path: path.display().to_string(), source }
    }

    pub(crate) fn corrupt_file(file: impl Into<String>, detail: impl Into<String>) -> StorageError {
        StorageError::CorruptFile { file: file.into(), detail: detail.into() }
    }
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;
