//! tierdb's SQL layer: PostgreSQL-dialect SQL parsed with `sqlparser`, bound against the
//! catalog, planned and executed over the engine's transactions. No network code: the
//! server crate drives `Session`s. docs/design/009-sql-server.md describes the design.

mod bind;
mod catalog;
mod convert;
mod depth;
mod durations;
mod error;
mod exec;
mod functions;
mod identifiers;
mod lexer;
mod optimize;
mod output;
mod parse;
mod plan;
mod session;
mod sizes;
mod stats;
mod system;
mod types;

pub use catalog::{
    Catalog, RoleMeta, SchemaPrivilege, ScramVerifier, BOOTSTRAP_SUPERUSER_OID, MOCK_AUTH_SECRET,
};
pub use durations::{format_duration_ms, parse_duration_ms, TIMEOUT_MAX_MS, TIMEOUT_SETTINGS};
pub use error::{Result, SqlError};
pub use functions::{functions, Function};
pub use output::{CommandTag, Output, RowSink};
pub use parse::front::{CopyFormat, CopyOptions, CopySource, CopyStatement};
pub use plan::OutputColumn;
pub use session::{
    analyze_candidates, start_autoanalyze, time_zone_setting, BlockState, Kept, KeptRows, Prepared,
    Session, WORK_MEM_DEFAULT_BYTES,
};
pub use sizes::{format_memory, parse_size_bytes, SizeSyntax};
pub use stats::{StatementEntry, StatementStats};
pub use system::{all_views, SystemView};
pub use types::{binary_receive, binary_send, numeric_receive, numeric_send};
pub use types::{
    f16, vector_receive, vector_send, ArrayValue, HALFVEC_OID, SPARSEVEC_OID, VECTOR_OID,
};
pub use types::{format_float4, format_float8, parse_text, Datum, SqlType};
