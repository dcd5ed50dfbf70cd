//! COPY FROM STDIN as a stream: rows are parsed and inserted as the client's data arrives,
//! so a session holds at most `COPY_CHUNK_BYTES` of unparsed data and one partial record,
//! whatever the size of the load.
//!
//! ```text
//!   Session::execute(COPY ... FROM STDIN) ──copy_in_begin──► Copying (transaction open)
//!   Copying ──copy_in_data──► Copying         (complete records parsed and inserted)
//!   Copying ──copy_in_end───► done, row count (the rest parsed; autocommit commits)
//!   Copying ──copy_in_abort or any error──► done (autocommit rolls back; a block fails)
//! ```
//!
//! The load is one statement: in autocommit it is its own transaction, in a block it is a
//! statement of the block, and an error anywhere fails it whole. Text and CSV records end
//! at newlines (`RecordScan`); binary ones are length-prefixed tuples (copy_binary.rs).

use std::cell::RefCell;
use std::collections::HashMap;

use super::copy_binary::{self, BinaryReader};
use super::Session;
use crate::bind::bind_defaults;
use crate::bind::Binder;

use crate::error::{Result, SqlError};
use crate::exec::{Ctx, InsertBatch, ReferentialEvents};
use crate::parse::front::{self, CopyFormat, CopyOptions, CopySource, CopyStatement};
use crate::plan::{BoundTable, Expr};
use crate::system::SessionInfo;
use crate::types::{self, Datum, SqlType};

/// Unparsed data a session buffers before it parses and inserts the complete records in it.
pub const COPY_CHUNK_BYTES: usize = 256 << 10;
/// The longest record (line) COPY accepts, so that data without a newline cannot grow a
/// session's buffer without bound (PostgreSQL's limit is 1 GB; this one fails with 54000).
pub const COPY_RECORD_BYTES_MAX: usize = 64 << 20;

/// A COPY FROM STDIN in progress.
pub struct CopyIn {
    table: BoundTable,
    /// The table column each field goes to, in field order.
    targets: Vec<usize>,
    /// Default expressions of the table's columns (for columns not loaded).
    defaults: Vec<Option<Expr>>,
    /// Options with `header` cleared: the header is skipped here, once.
    options: CopyOptions,
    /// The header record is still to be skipped.
    header_pending: bool,
    /// Data not yet parsed: at most one chunk plus one partial record.
    pending: Vec<u8>,
    /// How far `pending` has been scanned for record ends (text and CSV).
    scan: RecordScan,
    /// Where a binary COPY is in its stream.
    binary: BinaryReader,
    /// Records read so far (for error messages' line numbers).
    lines: u64,
    rows: u64,
    /// The COPY is its own transaction (no block was open).
    autocommit: bool,
}

impl Session {
    /// Starts a COPY FROM STDIN: resolves the table and columns and opens the statement.
    pub(super) fn copy_in_begin(&mut self, copy: &CopyStatement) -> Result<()> {
        let CopySource::Table { schema, name, columns } = &copy.source else {
            return Err(SqlError::syntax("COPY FROM needs a table"));
        };
        let name = &self.copy_table_name(schema, name)?;
        let limits = self.wait_limits();
        self.catalog.wait_for_column_changes(self.session_id, name, &limits)?;
        let table = self.catalog.table(name).ok_or_else(|| SqlError::undefined_table(name))?;
        let targets: Vec<usize> = if columns.is_empty() {
            (0..table.columns.len()).collect()
        } else {
            columns
                .iter()
                .map(|column| table.column_index(column).expect("checked at COPY"))
                .collect()
        };
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        let table = binder.bind_target_table(table)?;
        let defaults = bind_defaults(&mut binder, &table)?;
        let autocommit = self.state == super::BlockState::Idle;
        self.begin_transaction()?;
        if let Err(error) = self.transaction.as_mut().expect("begun").begin_statement() {
            self.fail_block();
            return Err(error.into());
        }
        let options = CopyOptions { header: false, ..copy.options.clone() };
        self.copy_in = Some(CopyIn {
            table,
            targets,
            defaults,
            options,
            header_pending: copy.options.header,
            pending: Vec::new(),
            scan: RecordScan::default(),
            binary: BinaryReader::default(),
            lines: 0,
            rows: 0,
            autocommit,
        });
        Ok(())
    }

    /// Takes the next piece of the client's data; parses and inserts the complete records
    /// once a chunk has gathered. An error ends the COPY (the statement fails).
    pub fn copy_in_data(&mut self, data: &[u8]) -> Result<()> {
        let Some(copy) = self.copy_in.as_mut() else {
            return Err(SqlError::new(
                "08P01",
                "unexpected COPY data: no COPY FROM STDIN is running",
            ));
        };
        if copy.pending.capacity() - copy.pending.len() < data.len() {
            // Up to a chunk the buffer holds complete records; past one, the partial record
            // may grow to the limit, so its room is reserved once (pages are touched only
            // as written) and the buffer is never copied into a larger one on the way:
            // each copy left a freed block resident for a while, and peak memory varied.
            let room = if copy.pending.len() + data.len() > COPY_CHUNK_BYTES {
                COPY_RECORD_BYTES_MAX + COPY_CHUNK_BYTES
            } else {
                COPY_CHUNK_BYTES
            };
            copy.pending
                .reserve_exact(room.max(copy.pending.len() + data.len()) - copy.pending.len());
        }
        copy.pending.extend_from_slice(data);
        if copy.options.format == CopyFormat::Binary {
            if copy.pending.len() < COPY_CHUNK_BYTES {
                return Ok(());
            }
            return self.load_binary_records(false).inspect_err(|_| self.copy_in_abort());
        }
        let scanned = copy.scan.advance(&copy.pending, &copy.options);
        if scanned.is_ok() && (copy.pending.len() < COPY_CHUNK_BYTES || copy.scan.last_end == 0) {
            return Ok(());
        }
        let end = copy.scan.last_end;
        let outcome = scanned.and_then(|()| self.load_records(end));
        outcome.inspect_err(|_| self.copy_in_abort())
    }

    /// The client's CopyDone: loads the rest and ends the statement; returns the rows loaded.
    pub fn copy_in_end(&mut self) -> Result<u64> {
        let Some(copy) = self.copy_in.as_mut() else {
            return Err(SqlError::new(
                "08P01",
                "unexpected CopyDone: no COPY FROM STDIN is running",
            ));
        };
        let end = copy.pending.len();
        let loaded = if copy.options.format == CopyFormat::Binary {
            self.load_binary_records(true)
        } else {
            let scanned = copy.scan.advance(&copy.pending, &copy.options);
            scanned.and_then(|()| self.load_records(end))
        };
        if let Err(error) = loaded {
            self.copy_in_abort();
            return Err(error);
        }
        let copy = self.copy_in.take().expect("checked above");
        self.catalog.note_modified_rows(copy.table.oid, copy.rows);
        if copy.autocommit {
            let transaction = self.transaction.take().expect("autocommit transaction");
            transaction.commit()?;
            self.after_commit();
        }
        Ok(copy.rows)
    }

    /// The client's CopyFail, a connection lost, or an error: the statement fails.
    pub fn copy_in_abort(&mut self) {
        if self.copy_in.take().is_some() {
            self.fail_block();
        }
    }

    /// Loads a whole COPY's data at once (tests and callers with the data in hand).
    pub fn copy_in(&mut self, copy: &CopyStatement, data: &[u8]) -> Result<u64> {
        self.copy_in_begin(copy)?;
        self.copy_in_data(data)?;
        self.copy_in_end()
    }

    /// Parses and inserts the records in the first `end` bytes of the pending data.
    fn load_records(&mut self, end: usize) -> Result<()> {
        let copy = self.copy_in.as_mut().expect("a COPY is running");
        let chunk: Vec<u8> = copy.pending.drain(..end).collect();
        copy.scan.consumed(end);
        let text = std::str::from_utf8(&chunk)
            .map_err(|_| SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\""))?;
        let mut records = match copy.options.format {
            CopyFormat::Text => front::parse_text_rows(text, &copy.options)?,
            CopyFormat::Csv => front::parse_csv_rows(text, &copy.options)?,
            CopyFormat::Binary => unreachable!("binary records are split by copy_binary"),
        };
        if copy.header_pending && !records.is_empty() {
            records.remove(0);
            copy.header_pending = false;
            copy.lines += 1;
        }
        self.insert_loaded(records, |text, ty| types::parse_text(&text, ty))
    }

    /// Parses and inserts the complete tuples of binary COPY's pending data (`at_end`: all
    /// of it, the client has finished). Past a chunk, a partial tuple may grow to
    /// COPY_RECORD_BYTES_MAX (54000 beyond), as a text record may.
    fn load_binary_records(&mut self, at_end: bool) -> Result<()> {
        let copy = self.copy_in.as_mut().expect("a COPY is running");
        let (records, used) = copy.binary.split(&copy.pending, copy.targets.len(), at_end)?;
        copy.pending.drain(..used);
        if copy.pending.len() > COPY_RECORD_BYTES_MAX {
            return Err(SqlError::new(
                "54000",
                format!("COPY record is longer than {} MiB", COPY_RECORD_BYTES_MAX >> 20),
            ));
        }
        self.insert_loaded(records, |bytes, ty| copy_binary::receive(&bytes, ty))
    }

    /// Inserts records whose fields `decode` turns into their columns' values, counting
    /// them.
    fn insert_loaded<F>(
        &mut self,
        records: Vec<Vec<Option<F>>>,
        decode: impl Fn(F, &SqlType) -> Result<Datum>,
    ) -> Result<()> {
        let copy = self.copy_in.take().expect("a COPY is running");
        let outcome = self.with_row_ctx(|ctx| insert_records_in(&copy, records, decode, ctx));
        let copy = self.copy_in.insert(copy);
        let rows = outcome?;
        copy.lines += rows;
        copy.rows += rows;
        Ok(())
    }

    /// Runs `body` with an expression context over the statement's transaction (no
    /// parameters, no statement interrupt): COPY FROM's rows, ADD COLUMN's DEFAULT.
    pub(super) fn with_row_ctx<T>(
        &mut self,
        body: impl FnOnce(&mut Ctx<'_>) -> Result<T>,
    ) -> Result<T> {
        let budget = self.memory_budget();
        // current_user follows the role's OID: a renamed role shows its new name.
        let role = self.current_role();
        let user = role.as_ref().map_or(self.user.as_str(), |role| role.name.as_str());
        let superuser = role.as_ref().is_some_and(|role| role.superuser);
        let settings_view = super::settings::settings_view!(self, superuser);
        let info = SessionInfo {
            database: &self.database,
            user,
            backend_pid: self.backend_pid,
            session_id: self.session_id,
            catalog: &self.catalog,
            vector_scan: self.vector_scan_options(),
            hidden_tables: self.hidden_tables(),
            public_on_path: self.namespace().public_on_path,
            referential_checks_off: false,
            settings: &settings_view,
            setting_changes: RefCell::default(),
            sequence_values: &self.sequence_values,
            sequence_refs: RefCell::default(),
        };
        let transaction = self.transaction.as_mut().expect("rows are written in a transaction");
        let statement_time = types::now_micros();
        types::install_statement_time(statement_time);
        let mut ctx = Ctx {
            txn: Some(transaction),
            params: &[],
            outer: Vec::new(),
            subquery_cache: HashMap::new(),
            stats: Vec::new(),
            analyze: false,
            budget,
            session: &info,
            statement_time_micros: statement_time,
            interrupt: None,
            work_tables: Default::default(),
            deferred_events: None,
        };
        let result = body(&mut ctx)?;
        drop(ctx);
        self.apply_setting_changes(info.setting_changes.into_inner())?;
        Ok(result)
    }
}

/// Inserts records in the context `ctx`, each field decoded by `decode`; returns how many.
fn insert_records_in<F>(
    copy: &CopyIn,
    records: Vec<Vec<Option<F>>>,
    decode: impl Fn(F, &SqlType) -> Result<Datum>,
    ctx: &mut Ctx<'_>,
) -> Result<u64> {
    let mut inserted = 0u64;
    let mut batch = InsertBatch::default();
    let mut events = ReferentialEvents::default();
    for fields in records {
        let line = copy.lines + inserted + 1;
        if fields.len() != copy.targets.len() {
            let kind = if fields.len() < copy.targets.len() { "missing" } else { "extra" };
            return Err(SqlError::new(
                "22P04",
                format!(
                    "{kind} data for column (line {line}): expected {} columns, got {}",
                    copy.targets.len(),
                    fields.len()
                ),
            ));
        }
        let mut row: Vec<Option<Datum>> = vec![None; copy.table.columns.len()];
        for (field, &target) in fields.into_iter().zip(&copy.targets) {
            let ty = &copy.table.columns[target].ty;
            row[target] = Some(match field {
                None => Datum::Null,
                Some(field) => decode(field, ty)?,
            });
        }
        let stored = batch.push(&copy.table, row, &copy.defaults, ctx)?;
        events.inserted(&copy.table, &stored, ctx)?;
        inserted += 1;
    }
    batch.flush(&copy.table, ctx)?;
    // Checked per chunk of records: a row may reference a row loaded earlier in the chunk
    // or in an earlier one (PostgreSQL checks at the end of the whole COPY).
    events.finish(&copy.table, ctx)?;
    Ok(inserted)
}

/// The scan of pending data for record ends: a record ends at a newline, except inside CSV
/// quotes (an escape character other than the quote escapes the byte after it there). The
/// state carries across pieces of data, so each byte is scanned once.
#[derive(Default)]
struct RecordScan {
    /// Bytes of the pending data scanned so far.
    scanned: usize,
    /// Where the record being scanned starts.
    record_start: usize,
    /// Just past the last complete record's newline (0: none yet).
    last_end: usize,
    in_quotes: bool,
    /// The previous byte was an escape inside quotes.
    escaped: bool,
}

impl RecordScan {
    /// Scans the new bytes of `data`; fails with 54000 when a record grows longer than
    /// COPY_RECORD_BYTES_MAX.
    fn advance(&mut self, data: &[u8], options: &CopyOptions) -> Result<()> {
        let csv = options.format == CopyFormat::Csv;
        // Quote and escape are one ASCII byte: the COPY parser refuses others (0A000).
        let quote = u8::try_from(options.quote).expect("the COPY parser refuses a non-ASCII quote");
        let escape =
            u8::try_from(options.escape).expect("the COPY parser refuses a non-ASCII escape");
        for (index, &byte) in data.iter().enumerate().skip(self.scanned) {
            if self.escaped {
                self.escaped = false;
            } else if csv && self.in_quotes && byte == escape && escape != quote {
                self.escaped = true;
            } else if csv && byte == quote {
                self.in_quotes = !self.in_quotes;
            } else if byte == b'\n' && !self.in_quotes {
                self.last_end = index + 1;
                self.record_start = index + 1;
            }
            if index.saturating_sub(self.record_start) >= COPY_RECORD_BYTES_MAX {
                return Err(SqlError::new(
                    "54000",
                    format!("COPY record is longer than {} MiB", COPY_RECORD_BYTES_MAX >> 20),
                ));
            }
        }
        self.scanned = data.len();
        Ok(())
    }

    /// The first `bytes` of the data were loaded and removed.
    fn consumed(&mut self, bytes: usize) {
        debug_assert!(bytes <= self.scanned);
        self.scanned -= bytes;
        self.record_start = self.record_start.saturating_sub(bytes);
        self.last_end = self.last_end.saturating_sub(bytes);
    }
}
