//! The engine's error: what went wrong, mapped to the PostgreSQL SQLSTATE the server reports.

use tierdb_access::BTreeError;
use tierdb_common::ErrorKind;
use tierdb_storage::StorageError;
use tierdb_vector::hnsw::HnswError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Tree(#[from] BTreeError),
    #[error(transparent)]
    Vector(#[from] HnswError),
    #[error("could not serialize access due to concurrent update")]
    SerializationFailure,
    #[error("deadlock detected: transaction {waiter} waits for {holder}, which waits for it")]
    Deadlock { waiter: u64, holder: u64 },
    #[error("duplicate key value violates unique constraint \"{constraint}\"")]
    UniqueViolation { constraint: String },
    /// An INSERT ... ON CONFLICT's arbiter value is taken by the live row `key`. Internal:
    /// `Transaction::insert_unless_conflict` turns it into `InsertOutcome::Conflict`.
    #[error("duplicate key value violates unique constraint \"{constraint}\"")]
    Conflict { key: Vec<u8>, constraint: String },
    #[error("null value in column \"{column}\" violates not-null constraint")]
    NotNullViolation { column: String },
    #[error("relation \"{name}\" does not exist")]
    UndefinedTable { name: String },
    #[error("relation \"{name}\" already exists")]
    DuplicateTable { name: String },
    #[error("savepoint \"{name}\" does not exist")]
    UndefinedSavepoint { name: String },
    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    TransactionAborted,
    #[error("invalid row: {detail}")]
    InvalidRow { detail: String },
    /// A data exception with PostgreSQL's (or pgvector's) message as it is (22000).
    #[error("{message}")]
    DataException { message: String },
    #[error("limit exceeded: {detail}")]
    LimitExceeded { detail: String },
    #[error("corrupt {what}: {detail}")]
    Corrupt { what: &'static str, detail: String },
    #[error("the engine is shutting down")]
    ShuttingDown,
    #[error("canceling statement due to {reason}")]
    Canceled { reason: &'static str },
    #[error("canceling statement due to lock timeout")]
    LockTimeout,
    #[error("could not obtain lock on row in relation \"{relation}\"")]
    LockNotAvailable { relation: String },
    /// More row-lock entries than `max` (`ROW_LOCKS_MAX`) would be held at once.
    #[error("out of shared memory: more than {max} row locks held")]
    OutOfLockMemory { max: usize },
}

impl EngineError {
    /// The PostgreSQL SQLSTATE for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            EngineError::Storage(error) => error.kind().sqlstate(),
            EngineError::Tree(error) => error.kind().sqlstate(),
            EngineError::Vector(error) => error.kind().sqlstate(),
            EngineError::SerializationFailure => "40001",
            EngineError::Deadlock { .. } => "40P01",
            EngineError::UniqueViolation { .. } | EngineError::Conflict { .. } => "23505",
            EngineError::NotNullViolation { .. } => "23502",
            EngineError::UndefinedTable { .. } => "42P01",
            EngineError::DuplicateTable { .. } => "42P07",
            EngineError::UndefinedSavepoint { .. } => "3B001",
            EngineError::TransactionAborted => "25P02",
            EngineError::InvalidRow { .. } => "22023",
            EngineError::LimitExceeded { .. } => "54000",
            EngineError::DataException { .. } => "22000",
            EngineError::Corrupt { .. } => ErrorKind::Corruption.sqlstate(),
            EngineError::ShuttingDown => "57P01",
            EngineError::Canceled { .. } => "57014",
            EngineError::LockTimeout | EngineError::LockNotAvailable { .. } => "55P03",
            EngineError::OutOfLockMemory { .. } => "53200",
        }
    }

    /// Whether retrying the whole transaction may succeed (serialization failure, deadlock).
    pub fn is_retryable(&self) -> bool {
        matches!(self, EngineError::SerializationFailure | EngineError::Deadlock { .. })
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
