//! A SQL session: its transaction state machine, settings, and the execution of every kind
//! of statement (queries, DML, DDL, transaction control, SET/SHOW, EXPLAIN, COPY, VACUUM).
//!
//! Transaction block states (PostgreSQL's, as the wire protocol reports them):
//!
//! ```text
//!            BEGIN (begin_block)              error (fail_block)
//!   Idle ─────────────────────────► InBlock ─────────────────────► Failed
//!    ▲                                │  ▲                           │
//!    │ COMMIT / ROLLBACK (end_block)  │  └── ROLLBACK TO SAVEPOINT ──┤
//!    └────────────────────────────────┴──────── ROLLBACK / COMMIT ───┘
//! ```
//!
//! Outside a block each statement runs in its own transaction (autocommit). The engine
//! transaction of a block starts lazily at its first statement, so a REPEATABLE READ
//! snapshot is taken when the first query runs, as in PostgreSQL.

mod alter_table;
mod analyze;
mod autoanalyze;
pub use autoanalyze::{analyze_candidates, start_autoanalyze};
mod checks;
mod columns;
mod copy_binary;
mod copy_in;
mod copy_out;
mod create_table_as;
mod cursor_rows;
mod cursors;
mod foreign_keys;
mod identity;
mod prepared_sql;
pub use cursors::{Kept, KeptRows};
pub use settings::time_zone_setting;
mod ddl;
mod parameters;
mod partial_index;
mod pg_parameter_details;
mod pg_parameters;
mod privileges;
mod roles;
mod run;
mod schema_privileges;
mod sequences;
mod settings;
mod settings_rows;
mod stream;
mod temp_tables;
mod transactional_ddl;
mod txn_modes;
mod utility;
mod vacuum;
mod vector_ddl;
mod views;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use sqlparser::ast;
use tierdb_engine::{IsolationLevel, Transaction, Value, WaitLimits};

use crate::bind::{
    self, bind_delete, bind_insert, bind_update, ident, needs_statement_with, object_name, Binder,
    MainStatement,
};
use crate::catalog::{Catalog, ColumnMeta, IndexKind, IndexMeta, TableMeta};
use crate::depth;
use crate::durations::{format_duration_ms, parse_duration_ms, TIMEOUT_SETTINGS};
use crate::error::{Result, SqlError};
use crate::exec::explain;
use crate::exec::{self, run_delete, run_insert, run_update, Ctx, MemoryBudget, NodeStats};
use crate::output::{CommandTag, Output, RowSink};
use crate::parse::front::{
    self, CopyFormat, CopySource, CopyStatement, DiscardTarget, FrontStatement,
};
use crate::parse::{parse_sql, split_statements, Statement};
use crate::plan::{
    computed_column, CteStatement, DeletePlan, InsertPlan, ModifyingPlan, OutputColumn, Plan,
    UpdatePlan,
};
use crate::sizes::{parse_size_bytes, SizeSyntax};
use crate::stats::StatementStats;
use crate::system::SessionInfo;
use crate::types::{self, Datum, SqlType};

/// PostgreSQL 15's default hash_mem_multiplier.
pub(crate) const HASH_MEM_MULTIPLIER_DEFAULT: f64 = 2.0;
/// Default work_mem (PostgreSQL's default).
pub const WORK_MEM_DEFAULT_BYTES: u64 = 4 << 20;

// Memory sizes are u64 (settings allow up to 2 TiB); tierdb builds for 64-bit targets, where
// every such size is also a usize.
const _: () = assert!(usize::BITS >= 64);

/// A prepared statement: parsed once, bound against the catalog version it saw.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub sql: String,
    pub statement: Option<Arc<Statement>>,
    /// The normalized text for statement statistics (computed once).
    normalized: Option<Arc<str>>,
    pub parameter_types: Vec<SqlType>,
    pub columns: Vec<OutputColumn>,
    bound: Option<Arc<(u64, Bound)>>,
}

#[derive(Debug)]
pub(crate) enum Bound {
    Query(Plan),
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
    /// A statement under a WITH list holding data-modifying statements (or a WITH over an
    /// INSERT, UPDATE or DELETE): `ctes` run in order, then `main`.
    With {
        ctes: Vec<CteStatement>,
        main: Box<Bound>,
    },
}

impl Bound {
    fn of_main(main: MainStatement) -> Bound {
        match main {
            MainStatement::Query(plan) => Bound::Query(*plan),
            MainStatement::Modify(modify) => match *modify {
                ModifyingPlan::Insert(insert) => Bound::Insert(insert),
                ModifyingPlan::Update(update) => Bound::Update(update),
                ModifyingPlan::Delete(delete) => Bound::Delete(delete),
            },
        }
    }
}

impl Prepared {
    /// A parsed statement not bound yet.
    pub(crate) fn of_statement(sql: String, statement: Statement) -> Prepared {
        Prepared {
            sql,
            statement: Some(Arc::new(statement)),
            normalized: None,
            parameter_types: Vec::new(),
            columns: Vec::new(),
            bound: None,
        }
    }
}

pub use crate::output::BlockState;

pub struct Session {
    catalog: Arc<Catalog>,
    transaction: Option<Transaction>,
    state: BlockState,
    block_isolation: Option<IsolationLevel>,
    /// READ ONLY (or READ WRITE) named by BEGIN, SET TRANSACTION or transaction_read_only.
    block_read_only: Option<bool>,
    settings: HashMap<String, String>,
    /// What RESET returns each setting to when it is not PostgreSQL's built-in default: the
    /// server's configuration (`set_default`) and the startup packet's options.
    reset_values: HashMap<String, String>,
    /// Settings as they were at BEGIN and at each savepoint (by name): SET is transactional,
    /// so ROLLBACK (TO SAVEPOINT) restores them.
    block_settings: Option<HashMap<String, String>>,
    /// Settings SET LOCAL changed in the open block, each with the session value it returns
    /// to when the block commits (None: not set in the session).
    local_restore: HashMap<String, Option<String>>,
    /// Per savepoint: its name, the settings, how many DROP TABLEs were pending then and
    /// the length of `ddl_tables` then.
    savepoint_settings: Vec<(String, HashMap<String, String>, usize, usize)>,
    /// Tables this block dropped: hidden from this session at once, dropped when the block
    /// commits, kept if it rolls back (ddl.rs `drop_in_block`).
    pending_drops: Vec<ddl::PendingDrop>,
    /// Set while TRUNCATE in a block deletes rows (see `SessionInfo`).
    referential_checks_off: bool,
    /// Identifies the session to the catalog's DDL claims (transactional_ddl.rs).
    session_id: u64,
    /// Tables the open transaction's DDL claimed, in order (repeats allowed): repaired if
    /// it rolls back, released when it ends.
    ddl_tables: Vec<String>,
    pub database: String,
    pub user: String,
    /// The OID of the role the session logged in as, fixed at its first lookup: a session
    /// stays with its role (as PostgreSQL's follows the OID), not with whichever role
    /// carries its name later (dropped and created again, or another renamed to it).
    role_oid: std::sync::OnceLock<u32>,
    pub backend_pid: i32,
    /// The running statement's time (now(), date/time input's `now`), kept here because
    /// binding and execution may run on different threads.
    statement_time_micros: i64,
    pub cancel: Arc<AtomicBool>,
    statistics: Arc<StatementStats>,
    /// A COPY FROM STDIN receiving data (session/copy_in.rs).
    copy_in: Option<copy_in::CopyIn>,
    /// The transaction's open cursors (session/cursors.rs); dropped when it ends.
    cursors: cursors::Cursors,
    /// PREPARE's statements and the extended protocol's named ones (session/prepared_sql.rs).
    named_statements: prepared_sql::NamedStatements,
    /// currval's and lastval's values (exec/sequences.rs).
    sequence_values: std::cell::RefCell<crate::system::SequenceValues>,
    /// The session's temporary files, bounded by temp_file_limit.
    temp_usage: Arc<tierdb_storage::TempUsage>,
    /// The one-statement string `simple_result_is_small` parsed and bound last, kept for
    /// `execute_streaming` to run without parsing and binding it again (one entry: the
    /// server asks, then runs the same string).
    checked_simple: Option<(String, Prepared, i64)>,
    /// The statement time of the checked statement being executed (taken by
    /// `run_statement`): it was bound at that time, so now() must read it too.
    checked_statement_time: Option<i64>,
    /// random()'s generator (functions/random.rs), installed on the thread that runs each
    /// statement and taken back after, so that setseed holds for the session.
    random_state: (u64, u64),
    /// The block is the implicit one of a multi-statement string (stream.rs), not BEGIN's.
    implicit_block: bool,
    /// Warnings for the client (vacuum.rs), at most WARNINGS_MAX.
    warnings: Vec<SqlError>,
    /// Warnings beyond WARNINGS_MAX, counted.
    warnings_dropped: u64,
    /// Whether the session may have temp tables (it created one since it last dropped them
    /// all): only then are they looked up for its namespace.
    temp_used: bool,
    /// The ON COMMIT DELETE ROWS and DROP actions of its temp tables, by catalog name.
    temp_on_commit: HashMap<String, ast::OnCommit>,
    /// Its temp_buffers (pages) since its first temp table, which sized its temp tables'
    /// store: as PostgreSQL's NLocBuffer, SET cannot change it from then on.
    temp_buffers_used: Option<u64>,
}

/// COPY TO and FETCH may return any number of rows; the other front statements none.
fn front_result_is_small(front: &FrontStatement) -> bool {
    !matches!(front, FrontStatement::Copy(_) | FrontStatement::Cursor(_))
}

fn bound_result_is_small(bound: &Bound) -> bool {
    match bound {
        Bound::Query(plan) => crate::plan::is_small_result(plan),
        Bound::Insert(insert) => insert.returning.is_none(),
        Bound::Update(update) => update.returning.is_none(),
        Bound::Delete(delete) => delete.returning.is_none(),
        Bound::With { .. } => false,
    }
}

fn parse_isolation(text: &str) -> Option<IsolationLevel> {
    txn_modes::parse_isolation(text).ok().flatten()
}

fn isolation_name(level: IsolationLevel) -> &'static str {
    match level {
        IsolationLevel::ReadCommitted => "read committed",
        IsolationLevel::RepeatableRead => "repeatable read",
    }
}

impl Session {
    pub fn new(
        catalog: Arc<Catalog>,
        statistics: Arc<StatementStats>,
        database: &str,
        user: &str,
        backend_pid: i32,
    ) -> Session {
        partial_index::register_all(&catalog);
        Session {
            catalog,
            transaction: None,
            state: BlockState::Idle,
            block_isolation: None,
            block_read_only: None,
            settings: HashMap::new(),
            reset_values: HashMap::new(),
            block_settings: None,
            local_restore: HashMap::new(),
            savepoint_settings: Vec::new(),
            pending_drops: Vec::new(),
            referential_checks_off: false,
            session_id: transactional_ddl::next_session_id(),
            ddl_tables: Vec::new(),
            database: database.to_string(),
            user: user.to_string(),
            role_oid: std::sync::OnceLock::new(),
            backend_pid,
            statement_time_micros: types::now_micros(),
            cancel: Arc::new(AtomicBool::new(false)),
            statistics,
            copy_in: None,
            cursors: cursors::Cursors::new(),
            named_statements: prepared_sql::NamedStatements::default(),
            sequence_values: Default::default(),
            temp_usage: Arc::default(),
            checked_simple: None,
            checked_statement_time: None,
            random_state: crate::functions::new_random_state(),
            implicit_block: false,
            warnings: Vec::new(),
            warnings_dropped: 0,
            temp_used: false,
            temp_on_commit: HashMap::new(),
            temp_buffers_used: None,
        }
    }

    /// Names the session's role (at login); the role's OID is looked up at first use.
    pub fn set_user(&mut self, user: &str) {
        self.user = user.to_string();
        self.role_oid = std::sync::OnceLock::new();
    }

    /// Sets a setting's session default (server configuration such as work_mem), which
    /// RESET returns to.
    pub fn set_default(&mut self, name: &str, value: &str) -> Result<()> {
        self.apply_setting(name, value)?;
        self.keep_reset_value(name);
        Ok(())
    }

    /// Makes the current value of `name` the one RESET returns to.
    pub(crate) fn keep_reset_value(&mut self, name: &str) {
        if let Some(value) = self.settings.get(name) {
            self.reset_values.insert(name.to_string(), value.clone());
        }
    }

    pub fn state(&self) -> BlockState {
        self.state
    }

    /// The session's number (its temp schema is `pg_temp_N`; its temp tables' store is
    /// the engine's for this number).
    pub fn session_id(&self) -> u64 {
        self.session_id
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// work_mem in bytes: values are checked when they are SET, so a stored one always
    /// parses, and is at most 2 TiB, a usize on the 64-bit targets (asserted above).
    fn work_mem_bytes(&self) -> usize {
        let stored = self.settings.get("work_mem");
        let parsed = stored.and_then(|text| parse_size_bytes(text, SizeSyntax::SETTING));
        debug_assert!(parsed.is_some() || stored.is_none(), "work_mem is checked when SET");
        crate::convert::usize_from(parsed.unwrap_or(WORK_MEM_DEFAULT_BYTES))
    }

    /// The memory budget of a statement: work_mem, hash_mem_multiplier, and the session's
    /// temp files with temp_file_limit and log_temp_files applied.
    pub(crate) fn memory_budget(&self) -> MemoryBudget {
        self.temp_usage.set_limit(self.kilobyte_setting("temp_file_limit"));
        self.temp_usage.set_log_bytes_min(self.kilobyte_setting("log_temp_files"));
        let multiplier = self
            .settings
            .get("hash_mem_multiplier")
            .map(|text| text.parse::<f64>().expect("checked when it was SET"))
            .unwrap_or(HASH_MEM_MULTIPLIER_DEFAULT);
        MemoryBudget::for_session(self.work_mem_bytes(), multiplier, Arc::clone(&self.temp_usage))
    }

    /// temp_file_limit or log_temp_files in bytes; `None` for -1 (their default).
    fn kilobyte_setting(&self, name: &str) -> Option<u64> {
        let text = self.settings.get(name)?;
        if text == "-1" {
            return None;
        }
        let bytes = parse_size_bytes(text, SizeSyntax::SETTING);
        debug_assert!(bytes.is_some(), "{name} is checked when SET");
        bytes
    }

    /// The session's temp file totals: files and bytes written since it started.
    pub fn temp_totals(&self) -> (u64, u64) {
        self.temp_usage.totals()
    }

    /// A timeout setting (one of `TIMEOUT_SETTINGS`) in milliseconds; 0 when disabled.
    /// Values are checked when they are SET, so a stored one always parses.
    pub fn timeout_ms(&self, name: &str) -> u64 {
        debug_assert!(TIMEOUT_SETTINGS.contains(&name), "{name} is not a timeout setting");
        self.settings
            .get(name)
            .map(|text| parse_duration_ms(name, text).expect("checked when it was SET"))
            .unwrap_or(0)
    }

    /// Whether the current (or next autocommit) transaction is READ ONLY.
    fn read_only(&self) -> bool {
        settings::read_only(&self.settings, self.block_read_only)
    }

    /// The limits on the statement about to run: the cancel flag, statement_timeout's
    /// deadline from now, and lock_timeout for every lock wait.
    fn wait_limits(&self) -> WaitLimits {
        let statement_timeout_ms = self.timeout_ms("statement_timeout");
        WaitLimits {
            cancel: Some(Arc::clone(&self.cancel)),
            statement_deadline: (statement_timeout_ms > 0)
                .then(|| Instant::now() + std::time::Duration::from_millis(statement_timeout_ms)),
            lock_timeout_ms: self.timeout_ms("lock_timeout"),
        }
    }

    fn default_isolation(&self) -> IsolationLevel {
        settings::default_isolation(&self.settings)
    }

    /// Runs a simple-protocol query string: every statement in order, stopping at the
    /// first error (as PostgreSQL does). Collects every result (see `execute_streaming`).
    pub fn execute(&mut self, sql: &str) -> Vec<Result<Output>> {
        let mut collector = stream::Collector::default();
        self.execute_streaming(sql, &mut collector);
        collector.outputs
    }

    /// Parses and binds a statement for the extended protocol; `parameter_types` are the
    /// client's (Unknown where it sent none).
    pub fn prepare(&mut self, sql: &str, parameter_types: &[SqlType]) -> Result<Prepared> {
        self.install_time_zone();
        let mut statements = parse_sql(sql)?;
        if statements.len() > 1 {
            return Err(SqlError::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let statement = statements.pop().map(Arc::new);
        let mut prepared = Prepared {
            sql: sql.to_string(),
            statement,
            normalized: None,
            parameter_types: parameter_types.to_vec(),
            columns: Vec::new(),
            bound: None,
        };
        if let Some(Statement::Front(FrontStatement::Cursor(
            crate::parse::cursor::CursorStatement::Fetch { name, fetch_rows: true, .. },
        ))) = prepared.statement.as_deref()
        {
            // A FETCH's rows are its cursor's (Describe answers with them).
            prepared.columns = self.cursor_columns(name).unwrap_or_default();
        }
        if let Some(Statement::Sql(sql_statement)) = prepared.statement.clone().as_deref() {
            if let Some((bound, parameters)) = self.bind(sql_statement, parameter_types)? {
                prepared.columns = bound_columns(&bound);
                prepared.parameter_types = parameters;
                prepared.bound = Some(Arc::new((self.catalog.version(), bound)));
            } else if let ast::Statement::Explain { .. } = sql_statement.as_ref() {
                prepared.columns = vec![computed_column("QUERY PLAN", SqlType::Text)];
            } else if let ast::Statement::ShowVariable { variable } = sql_statement.as_ref() {
                let name = variable.iter().map(ident).collect::<Vec<_>>().join(" ");
                prepared.columns = vec![computed_column(&name, SqlType::Text)];
            }
        }
        Ok(prepared)
    }

    /// Whether a prepared statement's result is bounded small (`plan::is_small_result`, or
    /// no rows at all), so that the server may run it on the connection's own thread;
    /// false for a query not bound yet (its first execution binds it), COPY and FETCH.
    pub fn prepared_result_is_small(&self, prepared: &Prepared) -> bool {
        match prepared.statement.as_deref() {
            None => true,
            Some(Statement::Front(front)) => front_result_is_small(front),
            Some(Statement::Sql(statement)) => match statement.as_ref() {
                ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_) => {
                    prepared.bound.as_ref().is_some_and(|bound| bound_result_is_small(&bound.1))
                }
                _ => true,
            },
        }
    }

    /// `prepared_result_is_small` for a simple-protocol string, parsed and bound for the
    /// check (a string that fails to parse or bind is small: its error is all it returns).
    pub fn simple_result_is_small(&mut self, sql: &str) -> bool {
        self.checked_simple = None;
        // One statement (`SELECT ...;` is one piece): bound once, kept for the execution.
        // Several: each is checked here and parsed again there.
        let mut pieces =
            if sql.contains(';') { split_statements(sql) } else { vec![sql.to_string()] };
        if pieces.len() == 1 {
            let piece = pieces.pop().expect("one piece");
            let Ok(mut statements) = parse_sql(&piece) else { return true };
            if statements.len() == 1 {
                let statement = statements.pop().expect("one statement");
                let mut prepared = Prepared::of_statement(piece, statement);
                // Bound now for the execution that follows: date/time input's `now` read in
                // binding must be the time now() reads then (run_statement keeps it).
                let time = types::now_micros();
                types::install_statement_time(time);
                let small = self.prepared_is_small_binding(&mut prepared);
                self.checked_simple = Some((sql.to_string(), prepared, time));
                return small;
            }
        }
        let Ok(statements) = parse_sql(sql) else { return true };
        statements.iter().all(|statement| match statement {
            Statement::Front(front) => front_result_is_small(front),
            Statement::Sql(statement) => match self.bind(statement, &[]) {
                Ok(Some((bound, _))) => bound_result_is_small(&bound),
                Ok(None) | Err(_) => true,
            },
        })
    }

    /// `prepared_result_is_small`, binding a plain DML or query statement first (a
    /// statement that fails to bind is small: its error is all it returns).
    fn prepared_is_small_binding(&self, prepared: &mut Prepared) -> bool {
        let statement = prepared.statement.clone();
        if let Some(Statement::Sql(sql_statement)) = statement.as_deref() {
            let plain = matches!(
                sql_statement.as_ref(),
                ast::Statement::Query(_)
                    | ast::Statement::Insert(_)
                    | ast::Statement::Update(_)
                    | ast::Statement::Delete(_)
            );
            if plain && self.bound_for(sql_statement, prepared).is_err() {
                return true;
            }
        }
        self.prepared_result_is_small(prepared)
    }

    /// The statement `simple_result_is_small` bound for exactly `sql`, if any.
    pub(crate) fn take_checked_simple(&mut self, sql: &str) -> Option<Prepared> {
        let (checked, prepared, time) = self.checked_simple.take()?;
        if checked != sql {
            return None;
        }
        self.checked_statement_time = Some(time);
        Some(prepared)
    }

    /// Binds a DML or query statement; None for statements executed without a plan.
    fn bind(
        &self,
        statement: &ast::Statement,
        parameter_types: &[SqlType],
    ) -> Result<Option<(Bound, Vec<SqlType>)>> {
        let mut binder = Binder::new(&self.catalog, self.namespace(), parameter_types.to_vec());
        let evaluator = crate::exec::PlanningEvaluator { catalog: &self.catalog };
        binder.evaluator = Some(&evaluator);
        let bound = match statement {
            ast::Statement::Query(query) if needs_statement_with(query) => {
                let (ctes, main) = binder.statement_with(query)?;
                Bound::With { ctes, main: Box::new(Bound::of_main(main)) }
            }
            ast::Statement::Query(query) => Bound::Query(binder.query(query)?),
            ast::Statement::Insert(insert) => Bound::Insert(bind_insert(&mut binder, insert)?),
            ast::Statement::Update(update) => Bound::Update(bind_update(&mut binder, update)?),
            ast::Statement::Delete(delete) => Bound::Delete(bind_delete(&mut binder, delete)?),
            _ => return Ok(None),
        };
        let parameters = binder.finish_parameters();
        Ok(Some((bound, parameters)))
    }

    /// Executes a prepared statement with parameter values; a query's rows are collected.
    pub fn execute_prepared(
        &mut self,
        prepared: &mut Prepared,
        params: &[Datum],
    ) -> Result<Output> {
        self.execute_prepared_streaming(prepared, params, None)
    }

    /// Executes a prepared statement; a query's rows go to `sink` as they are produced
    /// (the outcome is then SELECT with its row count), other statements' output is
    /// returned whole.
    pub fn execute_prepared_streaming(
        &mut self,
        prepared: &mut Prepared,
        params: &[Datum],
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        self.copy_in_abort();
        self.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        let Some(statement) = prepared.statement.clone() else { return Ok(Output::Empty) };
        let statement: &Statement = &statement;
        let started = Instant::now();
        let counters_before = tierdb_common::op_counters_snapshot();
        let catalog = Arc::clone(&self.catalog);
        // Elastic capacity (design 015): idle release, resume times, the statement's share.
        let activity = catalog.engine().store().capacity().activity().statement_started();
        let outcome = self.dispatch(statement, prepared, params, sink);
        let capacity_share = activity.finish();
        if let Statement::Sql(sql_statement) = statement {
            if matches!(
                sql_statement.as_ref(),
                ast::Statement::Query(_)
                    | ast::Statement::Insert(_)
                    | ast::Statement::Update(_)
                    | ast::Statement::Delete(_)
            ) {
                let rows = match &outcome {
                    Ok(Output::Rows { rows, .. }) => crate::types::count_u64(rows.len()),
                    Ok(Output::Command { rows, .. }) => *rows,
                    _ => 0,
                };
                let counters = tierdb_common::op_counters_snapshot().since(&counters_before);
                let key = prepared.normalized.get_or_insert_with(|| {
                    crate::stats::normalize(&sql_statement.to_string()).into()
                });
                let userid = self.role_oid();
                let elapsed = started.elapsed();
                self.statistics.record(userid, key, elapsed, rows, &counters, capacity_share);
            }
        }
        outcome
    }

    fn dispatch(
        &mut self,
        statement: &Statement,
        prepared: &mut Prepared,
        params: &[Datum],
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        // Transaction control first: it works in the failed state.
        if let Statement::Sql(sql) = statement {
            if let Some(output) = self.transaction_control(sql)? {
                return Ok(output);
            }
        }
        if self.state == BlockState::Failed {
            return Err(aborted_error());
        }
        // The red zone for this statement (a prepared one may run after others).
        crate::functions::install_random_state(self.random_state);
        let outcome = depth::check_statement_depth(&prepared.sql)
            .and_then(|()| self.run_statement(statement, prepared, params, sink));
        self.random_state = crate::functions::random_state();
        types::clear_statement_time();
        if outcome.is_err() {
            self.fail_block();
        }
        outcome
    }

    /// An error inside a block fails it; outside, the autocommit transaction is gone.
    fn fail_block(&mut self) {
        match self.state {
            BlockState::InBlock | BlockState::Failed => {
                if let Some(transaction) = self.transaction.as_mut() {
                    transaction.fail();
                }
                self.state = BlockState::Failed;
            }
            BlockState::Idle => {
                if let Some(transaction) = self.transaction.take() {
                    let _ = transaction.rollback();
                }
            }
        }
    }

    fn begin_transaction(&mut self) -> Result<()> {
        if self.transaction.is_none() {
            let isolation = self.block_isolation.unwrap_or_else(|| self.default_isolation());
            self.transaction = Some(self.catalog.engine().begin(isolation)?);
        }
        Ok(())
    }

    /// Runs `body` inside the block's transaction or an autocommit one.
    fn in_transaction<T>(&mut self, body: impl FnOnce(&mut Session) -> Result<T>) -> Result<T> {
        self.begin_transaction()?;
        self.transaction.as_mut().expect("begun").begin_statement()?;
        let outcome = body(self);
        if self.state == BlockState::Idle {
            let transaction = self.transaction.take().expect("autocommit transaction");
            match outcome {
                Ok(value) => {
                    transaction.commit()?;
                    self.after_commit();
                    Ok(value)
                }
                Err(error) => {
                    let _ = transaction.rollback();
                    Err(error)
                }
            }
        } else {
            if outcome.is_err() {
                if let Some(transaction) = self.transaction.as_mut() {
                    transaction.fail();
                }
            }
            outcome
        }
    }

    /// SAVEPOINT and RELEASE need an open, healthy block: 25P02 in a failed block, 25P01
    /// outside one.
    fn require_open_block(&self, command: &str) -> Result<()> {
        match self.state {
            BlockState::Failed => Err(aborted_error()),
            BlockState::Idle => Err(SqlError::new(
                "25P01",
                format!("{command} can only be used in transaction blocks"),
            )),
            BlockState::InBlock => Ok(()),
        }
    }

    /// COMMIT: commits the block (a failed block rolls back instead), then its pending drops
    /// and claims.
    fn commit_block(&mut self) -> Result<Output> {
        self.cursors.clear();
        let saved_settings = self.block_settings.take();
        self.savepoint_settings.clear();
        let tag = match self.state {
            BlockState::Failed => {
                if let Some(transaction) = self.transaction.take() {
                    let _ = transaction.rollback();
                }
                if let Some(settings) = saved_settings {
                    self.settings = settings;
                }
                self.end_local_settings(false);
                self.forget_pending_drops();
                self.end_transaction_ddl(false);
                CommandTag::Rollback
            }
            _ => {
                if let Some(transaction) = self.transaction.take() {
                    let outcome = transaction.commit();
                    self.state = BlockState::Idle;
                    self.block_isolation = None;
                    self.block_read_only = None;
                    if outcome.is_err() {
                        self.pending_drops.clear();
                        self.end_transaction_ddl(false);
                    }
                    outcome?;
                }
                self.end_local_settings(true);
                self.after_commit();
                let dropped = self.finish_pending_drops();
                self.end_transaction_ddl(true);
                dropped?;
                CommandTag::Commit
            }
        };
        self.state = BlockState::Idle;
        self.block_isolation = None;
        self.block_read_only = None;
        Ok(Output::command(tag))
    }

    fn transaction_control(&mut self, statement: &ast::Statement) -> Result<Option<Output>> {
        Ok(Some(match statement {
            ast::Statement::StartTransaction { modes, .. } => {
                if self.state != BlockState::Idle {
                    // PostgreSQL warns and stays in the block.
                    return Ok(Some(Output::command(CommandTag::Begin)));
                }
                let isolation = txn_modes::isolation_of(modes)?;
                self.state = BlockState::InBlock;
                self.block_isolation = isolation;
                self.block_read_only = txn_modes::read_only_of(modes);
                self.block_settings = Some(self.settings.clone());
                self.savepoint_settings.clear();
                Output::command(CommandTag::Begin)
            }
            ast::Statement::Commit { .. } => self.commit_block()?,
            ast::Statement::Rollback { savepoint: Some(name), .. } => {
                if self.state == BlockState::Idle {
                    return Err(SqlError::new(
                        "25P01",
                        "ROLLBACK TO SAVEPOINT can only be used in transaction blocks",
                    ));
                }
                let transaction = self.transaction.as_mut().ok_or_else(|| {
                    SqlError::new("3B001", format!("savepoint \"{}\" does not exist", ident(name)))
                })?;
                transaction.rollback_to_savepoint(&ident(name))?;
                self.state = BlockState::InBlock;
                let name = ident(name);
                if let Some(position) =
                    self.savepoint_settings.iter().rposition(|(saved, ..)| *saved == name)
                {
                    self.savepoint_settings.truncate(position + 1);
                    self.settings = self.savepoint_settings[position].1.clone();
                    self.pending_drops.truncate(self.savepoint_settings[position].2);
                    let ddl_mark = self.savepoint_settings[position].3;
                    self.rollback_ddl_to(ddl_mark)?;
                }
                Output::command(CommandTag::Rollback)
            }
            ast::Statement::Rollback { .. } => {
                self.cursors.clear();
                if let Some(settings) = self.block_settings.take() {
                    self.settings = settings;
                }
                self.end_local_settings(false);
                self.savepoint_settings.clear();
                self.forget_pending_drops();
                if let Some(transaction) = self.transaction.take() {
                    let outcome = transaction.rollback();
                    self.end_transaction_ddl(false);
                    outcome?;
                }
                self.end_transaction_ddl(false);
                self.state = BlockState::Idle;
                self.block_isolation = None;
                self.block_read_only = None;
                Output::command(CommandTag::Rollback)
            }
            ast::Statement::Savepoint { name } => {
                self.require_open_block("SAVEPOINT")?;
                self.begin_transaction()?;
                self.transaction.as_mut().expect("begun").savepoint(&ident(name))?;
                self.savepoint_settings.push((
                    ident(name),
                    self.settings.clone(),
                    self.pending_drops.len(),
                    self.ddl_tables.len(),
                ));
                Output::command(CommandTag::Savepoint)
            }
            ast::Statement::ReleaseSavepoint { name } => {
                self.require_open_block("RELEASE SAVEPOINT")?;
                self.begin_transaction()?;
                self.transaction.as_mut().expect("begun").release_savepoint(&ident(name))?;
                let name = ident(name);
                if let Some(position) =
                    self.savepoint_settings.iter().rposition(|(saved, ..)| *saved == name)
                {
                    self.savepoint_settings.truncate(position);
                }
                Output::command(CommandTag::Release)
            }
            _ => return Ok(None),
        }))
    }

    /// Records an error raised outside the session (a bad parameter): it fails the block.
    pub fn note_error(&mut self) {
        self.fail_block();
    }

    /// Rolls back any open transaction (connection close).
    pub fn terminate(&mut self) {
        self.copy_in = None;
        self.cursors.clear();
        self.pending_drops.clear();
        if let Some(transaction) = self.transaction.take() {
            let _ = transaction.rollback();
        }
        self.end_transaction_ddl(false);
        self.catalog.advisory_locks().release_session(self.session_id);
        self.state = BlockState::Idle;
        if let Err(error) = self.drop_temp_tables() {
            tracing::error!(%error, "dropping the temporary tables of a closed session");
        }
    }
}

/// 25P02, worded by the engine, which reports the same state for its own failed transactions.
fn aborted_error() -> SqlError {
    tierdb_engine::EngineError::TransactionAborted.into()
}

fn bound_columns(bound: &Bound) -> Vec<OutputColumn> {
    let mut columns = match bound {
        Bound::Query(plan) => plan.columns.clone(),
        Bound::Insert(InsertPlan { returning, .. })
        | Bound::Update(UpdatePlan { returning, .. })
        | Bound::Delete(DeletePlan { returning, .. }) => {
            returning.as_ref().map(|(_, columns)| columns.clone()).unwrap_or_default()
        }
        Bound::With { main, .. } => bound_columns(main),
    };
    // An output whose type was never decided (`SELECT $1`) is text, as in PostgreSQL.
    for column in &mut columns {
        if column.ty == SqlType::Unknown {
            column.ty = SqlType::Text;
        }
    }
    columns
}

/// Whether a statement starts, ends or marks a transaction (or cannot run inside one).
fn controls_transactions(statement: &Statement) -> bool {
    match statement {
        Statement::Front(FrontStatement::Vacuum { .. }) => true,
        Statement::Front(_) => false,
        Statement::Sql(sql) => matches!(
            sql.as_ref(),
            ast::Statement::StartTransaction { .. }
                | ast::Statement::Commit { .. }
                | ast::Statement::Rollback { .. }
                | ast::Statement::Savepoint { .. }
                | ast::Statement::ReleaseSavepoint { .. }
        ),
    }
}

fn bound_plan(bound: &Bound) -> &Plan {
    match bound {
        Bound::Query(plan) => plan,
        Bound::Insert(insert) => &insert.source,
        Bound::Update(update) => &update.scan,
        Bound::Delete(delete) => &delete.scan,
        Bound::With { main, .. } => bound_plan(main),
    }
}

/// EXPLAIN's node for a data-modifying statement above its source plan: PostgreSQL's title
/// and, for ON CONFLICT, the resolution and arbiter indexes.
fn modify_node(bound: &Bound) -> Option<(String, Vec<String>)> {
    match bound {
        Bound::Query(_) => None,
        Bound::Insert(insert) => {
            let mut details = Vec::new();
            if let Some(on_conflict) = &insert.on_conflict {
                let resolution = match on_conflict.action {
                    crate::plan::ConflictAction::Nothing => "NOTHING",
                    crate::plan::ConflictAction::Update { .. } => "UPDATE",
                };
                details.push(format!("Conflict Resolution: {resolution}"));
                if !on_conflict.arbiter_names.is_empty() {
                    let names = on_conflict.arbiter_names.join(", ");
                    details.push(format!("Conflict Arbiter Indexes: {names}"));
                }
            }
            Some((format!("Insert on {}", insert.table.name), details))
        }
        Bound::Update(update) => Some((format!("Update on {}", update.table.name), Vec::new())),
        Bound::Delete(delete) => Some((format!("Delete on {}", delete.table.name), Vec::new())),
        Bound::With { main, .. } => modify_node(main),
    }
}

fn check_parameters(types: &[SqlType], params: &[Datum]) -> Result<()> {
    if params.len() < types.len() {
        return Err(SqlError::new(
            "08P01",
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                types.len()
            ),
        ));
    }
    Ok(())
}

/// Parameters arrive as text (unknown) or typed; make each the statement's type.
fn coerce_parameters(types: &[SqlType], params: &[Datum]) -> Result<Vec<Datum>> {
    params
        .iter()
        .enumerate()
        .map(|(index, datum)| match (datum, types.get(index)) {
            // Text values (text-format parameters, or binary ones of character types) go
            // through the type's input function: char(n) pads, varchar(n) checks length.
            (Datum::Text(text), Some(ty))
                if !matches!(ty, SqlType::Text | SqlType::Unknown | SqlType::Name) =>
            {
                types::parse_text(text, ty)
            }
            (datum, _) => Ok(datum.clone()),
        })
        .collect()
}
