//! The small public error kind. Each layer has its own specific error enum (what went wrong,
//! with `key=value` detail); every one of them maps to one of these kinds, which tells the user
//! what to do about it. The server maps kinds to SQLSTATEs.

/// What the caller can do about an error.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ErrorKind {
    /// Stored data failed verification (checksum, format, page id). Retrying will not help;
    /// restore from a good copy. SQLSTATE XX001 (data_corrupted).
    Corruption,
    /// The operating system or the object store reported an I/O failure. The operation may
    /// succeed later. SQLSTATE 58030 (io_error).
    Io,
    /// The store stopped accepting writes after a failed sync or PUT whose outcome is unknown.
    /// Restart the process so that recovery can establish what is durable. SQLSTATE 58030.
    Poisoned,
    /// The caller asked for something that is not valid (bad configuration, unknown page).
    /// SQLSTATE 22023 (invalid_parameter_value).
    InvalidArgument,
    /// A bounded resource is exhausted (every buffer frame pinned). Retry with less
    /// concurrency or a larger budget. SQLSTATE 53000 (insufficient_resources).
    ResourceExhausted,
    /// The file system has no space left (ENOSPC, EDQUOT). Nothing was written and nothing
    /// is poisoned: the operation succeeds again once space is freed. SQLSTATE 53100
    /// (disk_full).
    DiskFull,
    /// A configured limit was reached (`temp_file_limit`). Raise the limit or ask for less.
    /// SQLSTATE 53400 (configuration_limit_exceeded).
    LimitExceeded,
}

impl ErrorKind {
    /// The PostgreSQL SQLSTATE that the server reports for this kind.
    pub fn sqlstate(self) -> &'static str {
        match self {
            ErrorKind::Corruption => "XX001",
            ErrorKind::Io | ErrorKind::Poisoned => "58030",
            ErrorKind::InvalidArgument => "22023",
            ErrorKind::ResourceExhausted => "53000",
            ErrorKind::DiskFull => "53100",
            ErrorKind::LimitExceeded => "53400",
        }
    }
}
