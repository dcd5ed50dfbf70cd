//! tierdb's transactional engine: tables clustered on their primary key in B+trees of the
//! page store, MVCC snapshots (READ COMMITTED, REPEATABLE READ), row locks with deadlock
//! detection, rollback and savepoints. docs/design/008-mvcc.md describes the scheme.

mod engine;
mod error;
mod locks;
mod root;
mod row;
mod txn;
mod wait;

pub use engine::{
    ColumnDef, ConflictArbiters, Engine, IndexBuildOptions, IndexBuildPhase, IndexBuildProgress,
    IndexDef, IndexPredicate, InsertOutcome, NearestOptions, NearestScan, Projection, PurgeStats,
    RelationPages, RowKey, RowPage, TableDef, TableHandle, TableRef, TempOwner, Transaction,
    VectorIndexCheck, VectorIndexDef, VectorMethod, INSERT_BATCH_ROWS_MAX,
    MAINTENANCE_WORK_MEM_DEFAULT_BYTES, TEMP_BUFFERS_DEFAULT, TEMP_BUFFERS_MAX, TEMP_BUFFERS_MIN,
};
pub use error::{EngineError, Result};
pub use locks::{LockMode, LockOutcome, WaitPolicy, ROW_LOCKS_MAX};
pub use row::{decode_row, encode_row, Row, Value};
pub use tierdb_access::{Decimal, Direction, KeyKind};
pub use tierdb_vector::hnsw::{
    set_layer_zero_copy_bytes_max as set_hnsw_navigation_memory_bytes,
    IndexParameters as VectorIndexParameters, Metric as VectorMetric,
};
pub use txn::{IsolationLevel, TxnId, VirtualId};
pub use wait::WaitLimits;
