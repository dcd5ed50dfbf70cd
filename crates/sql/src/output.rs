//! What a statement returns to the client, and its command tag.

use crate::error::Result;
use crate::parse::front::{CopyFormat, CopyStatement};
use crate::plan::OutputColumn;
use crate::types::Row;

/// The command a completed statement reports (PostgreSQL's CommandComplete tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandTag {
    Select,
    Insert,
    Update,
    Delete,
    Copy,
    Explain,
    Show,
    Begin,
    Commit,
    Rollback,
    Savepoint,
    Release,
    Set,
    Reset,
    Vacuum,
    Analyze,
    DiscardAll,
    DiscardPlans,
    DiscardSequences,
    DiscardTemp,
    Checkpoint,
    Deallocate,
    DeallocateAll,
    Prepare,
    CreateTable,
    CreateView,
    DropView,
    CreateSequence,
    AlterSequence,
    DropSequence,
    CreateIndex,
    CreateSchema,
    DropSchema,
    CreateExtension,
    LockTable,
    DropTable,
    DropIndex,
    AlterTable,
    TruncateTable,
    CreateRole,
    AlterRole,
    DropRole,
    Grant,
    Revoke,
    DeclareCursor,
    Fetch,
    Move,
    CloseCursor,
    CloseCursorAll,
    Unlisten,
}

impl CommandTag {
    /// The tag's command words.
    pub fn name(self) -> &'static str {
        match self {
            CommandTag::Select => "SELECT",
            CommandTag::Insert => "INSERT",
            CommandTag::Update => "UPDATE",
            CommandTag::Delete => "DELETE",
            CommandTag::Copy => "COPY",
            CommandTag::Explain => "EXPLAIN",
            CommandTag::Show => "SHOW",
            CommandTag::Begin => "BEGIN",
            CommandTag::Commit => "COMMIT",
            CommandTag::Rollback => "ROLLBACK",
            CommandTag::Savepoint => "SAVEPOINT",
            CommandTag::Release => "RELEASE",
            CommandTag::Set => "SET",
            CommandTag::Reset => "RESET",
            CommandTag::Vacuum => "VACUUM",
            CommandTag::Analyze => "ANALYZE",
            CommandTag::DiscardAll => "DISCARD ALL",
            CommandTag::DiscardPlans => "DISCARD PLANS",
            CommandTag::DiscardSequences => "DISCARD SEQUENCES",
            CommandTag::DiscardTemp => "DISCARD TEMP",
            CommandTag::Checkpoint => "CHECKPOINT",
            CommandTag::Deallocate => "DEALLOCATE",
            CommandTag::DeallocateAll => "DEALLOCATE ALL",
            CommandTag::Prepare => "PREPARE",
            CommandTag::CreateTable => "CREATE TABLE",
            CommandTag::CreateView => "CREATE VIEW",
            CommandTag::DropView => "DROP VIEW",
            CommandTag::CreateSequence => "CREATE SEQUENCE",
            CommandTag::AlterSequence => "ALTER SEQUENCE",
            CommandTag::DropSequence => "DROP SEQUENCE",
            CommandTag::CreateIndex => "CREATE INDEX",
            CommandTag::CreateSchema => "CREATE SCHEMA",
            CommandTag::DropSchema => "DROP SCHEMA",
            CommandTag::CreateExtension => "CREATE EXTENSION",
            CommandTag::LockTable => "LOCK TABLE",
            CommandTag::DropTable => "DROP TABLE",
            CommandTag::DropIndex => "DROP INDEX",
            CommandTag::AlterTable => "ALTER TABLE",
            CommandTag::TruncateTable => "TRUNCATE TABLE",
            CommandTag::CreateRole => "CREATE ROLE",
            CommandTag::AlterRole => "ALTER ROLE",
            CommandTag::DropRole => "DROP ROLE",
            CommandTag::Grant => "GRANT",
            CommandTag::Revoke => "REVOKE",
            CommandTag::DeclareCursor => "DECLARE CURSOR",
            CommandTag::Fetch => "FETCH",
            CommandTag::Move => "MOVE",
            CommandTag::CloseCursor => "CLOSE CURSOR",
            CommandTag::CloseCursorAll => "CLOSE CURSOR ALL",
            CommandTag::Unlisten => "UNLISTEN",
        }
    }

    /// Whether the tag carries a row count (`UPDATE 3`; INSERT's also carries an OID, 0).
    pub fn counts_rows(self) -> bool {
        matches!(
            self,
            CommandTag::Select
                | CommandTag::Insert
                | CommandTag::Update
                | CommandTag::Delete
                | CommandTag::Copy
                | CommandTag::Fetch
                | CommandTag::Move
        )
    }

    /// The tag's text as PostgreSQL sends it (`INSERT 0 5`, `UPDATE 3`, `CREATE TABLE`).
    pub fn text(self, rows: u64) -> String {
        match self {
            CommandTag::Insert => format!("INSERT 0 {rows}"),
            tag if tag.counts_rows() => format!("{} {rows}", tag.name()),
            tag => tag.name().to_string(),
        }
    }
}

/// What a statement returns to the client.
#[derive(Debug)]
pub enum Output {
    /// Rows of a query, EXPLAIN, SHOW, or DML with RETURNING (the tag says which).
    Rows {
        columns: Vec<OutputColumn>,
        rows: Vec<Row>,
        tag: CommandTag,
    },
    /// A command without rows; `rows` is the count the tag reports (0 where it has none).
    Command {
        tag: CommandTag,
        rows: u64,
    },
    /// COPY FROM STDIN: the client sends data next; pass it to `Session::copy_in`.
    CopyIn {
        statement: CopyStatement,
        columns: usize,
    },
    CopyOut {
        data: Vec<u8>,
        columns: usize,
        rows: u64,
        format: CopyFormat,
    },
    Empty,
}

impl Output {
    /// A command that reports no row count.
    pub fn command(tag: CommandTag) -> Output {
        debug_assert!(!tag.counts_rows(), "{tag:?} reports its row count");
        Output::Command { tag, rows: 0 }
    }
}

/// Where a query's rows go as the executor produces them (`Session::execute_streaming`,
/// `Session::execute_prepared_streaming`), so that no result is held whole in memory.
///
/// A streamed SELECT calls `columns` once, then `row` for each row; its outcome is then
/// `Output::Command` with tag SELECT and the row count. An error after some rows leaves
/// those rows sent, as PostgreSQL's do (the client gets the rows, then the error).
pub trait RowSink {
    /// The result's columns, before its first row.
    fn columns(&mut self, columns: &[OutputColumn]) -> Result<()>;
    /// One row. An error stops the query and fails its statement (the client is gone).
    fn row(&mut self, row: Row) -> Result<()>;
    /// COPY TO STDOUT starts: its column count and format. Its lines follow, then its
    /// outcome `Output::Command` with tag COPY and the row count.
    fn copy_out(&mut self, columns: usize, format: CopyFormat) -> Result<()>;
    /// One line of COPY TO STDOUT's data (a row, or CSV's header), with its newline; in
    /// the binary format a tuple, the header or the trailer.
    fn copy_data(&mut self, line: Vec<u8>) -> Result<()>;
    /// A statement of a query string finished (`execute_streaming` only), with the
    /// session's transaction block state after it; statements stop at the first error.
    fn finished(&mut self, outcome: Result<Output>, state: BlockState);
}

/// A session's transaction block state (`Session::state`): what ReadyForQuery reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    Idle,
    InBlock,
    Failed,
}
