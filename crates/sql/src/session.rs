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

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::{Parser, ParserError};
use tierdb_engine::{IsolationLevel, Transaction, Value, WaitLimits};

use crate::txn_modes;

mod copy_in;

use crate::binder::{self, computed_column, ident, object_name, Binder};
use crate::catalog::{sequence_of_default, Catalog, ColumnMeta, IndexKind, IndexMeta, TableMeta};
use crate::depth;
use crate::durations::{format_duration_ms, parse_duration_ms, TIMEOUT_SETTINGS};
use crate::error::{Result, SqlError};
use crate::exec::{self, Ctx, MemoryBudget, NodeStats, Row, SessionInfo};
use crate::explain;
use crate::front::{self, CopyFormat, CopySource, CopyStatement, FrontStatement};
use crate::functions;
use crate::plan::{Expr, OutputColumn, Plan};
use crate::stats::StatementStats;
use crate::types::{self, Datum, SqlType};

/// Default work_mem (PostgreSQL's default).
pub const WORK_MEM_DEFAULT_BYTES: usize = 4 << 20;

/// What a statement returns to the client.
#[derive(Debug)]
pub enum Output {
    Rows {
        columns: Vec<OutputColumn>,
        rows: Vec<Row>,
        tag: String,
    },
    Command {
        tag: String,
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
        csv: bool,
    },
    Empty,
}

impl Output {
    pub fn command(tag: impl Into<String>) -> Output {
        Output::Command { tag: tag.into() }
    }
}

/// A parsed statement.
#[derive(Clone, Debug)]
pub enum Statement {
    Sql(Box<ast::Statement>),
    Front(FrontStatement),
}

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
}

#[derive(Debug)]
pub(crate) struct InsertPlan {
    table: Arc<TableMeta>,
    targets: Vec<usize>,
    source: Plan,
    defaults: Vec<Option<Expr>>,
    returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
}

#[derive(Debug)]
pub(crate) struct UpdatePlan {
    table: Arc<TableMeta>,
    scan: Plan,
    assignments: Vec<(usize, Expr)>,
    filter: Option<Expr>,
    returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
}

#[derive(Debug)]
pub(crate) struct DeletePlan {
    table: Arc<TableMeta>,
    scan: Plan,
    /// The WHERE clause, re-checked on a row a concurrent update changed (READ COMMITTED).
    filter: Option<Expr>,
    returning: Option<(Vec<Expr>, Vec<OutputColumn>)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    Idle,
    InBlock,
    Failed,
}

pub struct Session {
    catalog: Arc<Catalog>,
    transaction: Option<Transaction>,
    state: BlockState,
    block_isolation: Option<IsolationLevel>,
    /// READ ONLY (or READ WRITE) named by BEGIN, SET TRANSACTION or transaction_read_only.
    block_read_only: Option<bool>,
    settings: HashMap<String, String>,
    /// Settings as they were at BEGIN and at each savepoint (by name): SET is transactional,
    /// so ROLLBACK (TO SAVEPOINT) restores them.
    block_settings: Option<HashMap<String, String>>,
    savepoint_settings: Vec<(String, HashMap<String, String>)>,
    pub database: String,
    pub user: String,
    pub backend_pid: i32,
    pub cancel: Arc<AtomicBool>,
    statistics: Arc<StatementStats>,
    /// A COPY FROM STDIN receiving data (session/copy_in.rs).
    copy_in: Option<copy_in::CopyIn>,
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

/// Parses SQL text into statements (front parser first, then sqlparser).
pub fn parse_sql(sql: &str) -> Result<Vec<Statement>> {
    if let Some(front) = front::parse(sql)? {
        return Ok(vec![Statement::Front(front)]);
    }
    depth::check_statement_depth(sql)?;
    let statements = Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
        .try_with_sql(sql)
        .and_then(|mut parser| parser.parse_statements())
        .map_err(|error| match error {
            ParserError::RecursionLimitExceeded => depth::stack_depth_error(),
            error => syntax_error(sql, &error.to_string()),
        })?;
    for statement in &statements {
        check_reserved_names(sql, statement)?;
    }
    Ok(statements.into_iter().map(|statement| Statement::Sql(Box::new(statement))).collect())
}

/// The 1-based character position of sqlparser's 1-based line and column in `sql`.
fn char_position(sql: &str, line: usize, column: usize) -> usize {
    let mut position = 0;
    for (index, text) in sql.split('\n').enumerate() {
        if index + 1 == line {
            return position + column.min(text.chars().count() + 1);
        }
        position += text.chars().count() + 1;
    }
    position.max(1)
}

/// PostgreSQL's syntax error for a sqlparser error: `syntax error at or near "token"`,
/// `syntax error at end of input`, `unterminated quoted string at or near "'abc"`, with the
/// position of the offending token.
fn syntax_error(sql: &str, error: &str) -> SqlError {
    let message = error
        .strip_prefix("sql parser error: ")
        .or_else(|| error.strip_prefix("sql tokenizer error: "))
        .unwrap_or(error);
    let (body, location) = match message.rsplit_once(" at Line: ") {
        Some((body, location)) => {
            let mut parts = location.split(", Column: ");
            let line = parts.next().and_then(|line| line.trim().parse::<usize>().ok());
            let column = parts.next().and_then(|column| column.trim().parse::<usize>().ok());
            match (line, column) {
                (Some(line), Some(column)) => (body, Some(char_position(sql, line, column))),
                _ => (message, None),
            }
        }
        None => (message, None),
    };
    let mut error = if body.starts_with("Unterminated string literal") {
        let rest: String = sql.chars().skip(location.map_or(0, |position| position - 1)).collect();
        SqlError::syntax(format!("unterminated quoted string at or near \"{rest}\""))
    } else if body.ends_with("found: EOF") {
        SqlError::syntax("syntax error at end of input")
    } else if let Some((_, token)) = body.rsplit_once("found: ") {
        SqlError::syntax(format!("syntax error at or near \"{token}\""))
    } else {
        SqlError::syntax(format!("syntax error: {body}"))
    };
    error.position =
        if body.ends_with("found: EOF") { Some(sql.chars().count() + 1) } else { location };
    error
}

/// PostgreSQL's reserved key words, which cannot name a table unquoted (sqlparser accepts
/// some of them there: `SELECT * FROM FROM t`).
const RESERVED_WORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

fn check_reserved_names(sql: &str, statement: &ast::Statement) -> Result<()> {
    let mut found = None;
    let _ = ast::visit_relations(statement, |name| {
        for part in &name.0 {
            if let ast::ObjectNamePart::Identifier(ident) = part {
                if ident.quote_style.is_none()
                    && RESERVED_WORDS.contains(&ident.value.to_ascii_lowercase().as_str())
                {
                    found = Some(ident.clone());
                    return std::ops::ControlFlow::Break(());
                }
            }
        }
        std::ops::ControlFlow::Continue(())
    });
    match found {
        Some(ident) => {
            let mut error =
                SqlError::syntax(format!("syntax error at or near \"{}\"", ident.value));
            let start = ident.span.start;
            if start.line > 0 {
                let line = usize::try_from(start.line).unwrap_or(1);
                let column = usize::try_from(start.column).unwrap_or(1);
                error.position = Some(char_position(sql, line, column));
            }
            Err(error)
        }
        None => Ok(()),
    }
}

/// Splits a multi-statement string where the front parser must see pieces (COPY, VACUUM)
/// separately: on semicolons outside quotes.
pub fn split_statements(sql: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in sql.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == ';' => {
                if !current.trim().is_empty() {
                    pieces.push(std::mem::take(&mut current));
                }
                current.clear();
                continue;
            }
            None => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        pieces.push(current);
    }
    pieces
}

impl Session {
    pub fn new(
        catalog: Arc<Catalog>,
        statistics: Arc<StatementStats>,
        database: &str,
        user: &str,
        backend_pid: i32,
    ) -> Session {
        Session {
            catalog,
            transaction: None,
            state: BlockState::Idle,
            block_isolation: None,
            block_read_only: None,
            settings: HashMap::new(),
            block_settings: None,
            savepoint_settings: Vec::new(),
            database: database.to_string(),
            user: user.to_string(),
            backend_pid,
            cancel: Arc::new(AtomicBool::new(false)),
            statistics,
            copy_in: None,
        }
    }

    /// Sets a setting's session default (server configuration such as work_mem); RESET
    /// returns to PostgreSQL's built-in default.
    pub fn set_default(&mut self, name: &str, value: &str) -> Result<()> {
        self.apply_setting(name, value)
    }

    pub fn state(&self) -> BlockState {
        self.state
    }

    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    fn work_mem_bytes(&self) -> usize {
        self.settings
            .get("work_mem")
            .and_then(|text| parse_memory(text))
            .unwrap_or(WORK_MEM_DEFAULT_BYTES)
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
        self.block_read_only.unwrap_or_else(|| {
            self.settings.get("default_transaction_read_only").is_some_and(|value| value == "on")
        })
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
        self.settings
            .get("default_transaction_isolation")
            .and_then(|text| parse_isolation(text))
            .unwrap_or(IsolationLevel::ReadCommitted)
    }

    /// Runs a simple-protocol query string: every statement in order, stopping at the
    /// first error (as PostgreSQL does).
    pub fn execute(&mut self, sql: &str) -> Vec<Result<Output>> {
        // A statement while a COPY still expected data (the client broke off): the COPY fails.
        self.copy_in_abort();
        let mut outputs = Vec::new();
        let pieces = if sql.contains(';') { split_statements(sql) } else { vec![sql.to_string()] };
        // The whole string is parsed first: a syntax error anywhere runs nothing.
        let mut statements = Vec::new();
        for piece in pieces {
            match parse_sql(&piece) {
                Ok(parsed) => statements
                    .extend(parsed.into_iter().map(|statement| (piece.clone(), statement))),
                Err(error) => {
                    self.fail_block();
                    outputs.push(Err(error));
                    return outputs;
                }
            }
        }
        // Several statements outside a block run in one implicit transaction, as in
        // PostgreSQL, unless they control transactions themselves.
        let implicit = statements.len() > 1
            && self.state == BlockState::Idle
            && statements.iter().all(|(_, statement)| !controls_transactions(statement));
        if implicit {
            self.state = BlockState::InBlock;
        }
        for (piece, statement) in statements {
            let mut prepared = Prepared {
                sql: piece,
                statement: Some(Arc::new(statement)),
                normalized: None,
                parameter_types: Vec::new(),
                columns: Vec::new(),
                bound: None,
            };
            let outcome = self.execute_prepared(&mut prepared, &[]);
            let failed = outcome.is_err();
            outputs.push(outcome);
            if failed {
                break;
            }
        }
        if implicit {
            let failed = outputs.last().is_some_and(Result::is_err);
            self.state = BlockState::Idle;
            if let Some(transaction) = self.transaction.take() {
                if failed {
                    let _ = transaction.rollback();
                } else if let Err(error) = transaction.commit() {
                    outputs.push(Err(error.into()));
                }
            }
        }
        outputs
    }

    /// Parses and binds a statement for the extended protocol; `parameter_types` are the
    /// client's (Unknown where it sent none).
    pub fn prepare(&mut self, sql: &str, parameter_types: &[SqlType]) -> Result<Prepared> {
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

    /// Binds a DML or query statement; None for statements executed without a plan.
    fn bind(
        &self,
        statement: &ast::Statement,
        parameter_types: &[SqlType],
    ) -> Result<Option<(Bound, Vec<SqlType>)>> {
        let mut binder = Binder::new(&self.catalog, parameter_types.to_vec());
        let bound = match statement {
            ast::Statement::Query(query) => Bound::Query(binder.query(query)?),
            ast::Statement::Insert(insert) => Bound::Insert(bind_insert(&mut binder, insert)?),
            ast::Statement::Update(update) => Bound::Update(bind_update(&mut binder, update)?),
            ast::Statement::Delete(delete) => Bound::Delete(bind_delete(&mut binder, delete)?),
            _ => return Ok(None),
        };
        let parameters = binder.finish_parameters();
        Ok(Some((bound, parameters)))
    }

    /// Executes a prepared statement with parameter values.
    pub fn execute_prepared(
        &mut self,
        prepared: &mut Prepared,
        params: &[Datum],
    ) -> Result<Output> {
        self.copy_in_abort();
        self.cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        let Some(statement) = prepared.statement.clone() else { return Ok(Output::Empty) };
        let statement: &Statement = &statement;
        let started = Instant::now();
        let counters_before = tierdb_common::op_counters_snapshot();
        let outcome = self.dispatch(statement, prepared, params);
        if let Statement::Sql(sql_statement) = statement {
            if matches!(
                sql_statement.as_ref(),
                ast::Statement::Query(_)
                    | ast::Statement::Insert(_)
                    | ast::Statement::Update(_)
                    | ast::Statement::Delete(_)
            ) {
                let rows = match &outcome {
                    Ok(Output::Rows { rows, .. }) => u64::try_from(rows.len()).unwrap_or(0),
                    Ok(Output::Command { tag }) => {
                        tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
                    }
                    _ => 0,
                };
                let counters = tierdb_common::op_counters_snapshot().since(&counters_before);
                let key = prepared.normalized.get_or_insert_with(|| {
                    crate::stats::normalize(&sql_statement.to_string()).into()
                });
                self.statistics.record(key, started.elapsed(), rows, &counters);
            }
        }
        outcome
    }

    fn dispatch(
        &mut self,
        statement: &Statement,
        prepared: &mut Prepared,
        params: &[Datum],
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
        let outcome = depth::check_statement_depth(&prepared.sql)
            .and_then(|()| self.run_statement(statement, prepared, params));
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

    fn transaction_control(&mut self, statement: &ast::Statement) -> Result<Option<Output>> {
        Ok(Some(match statement {
            ast::Statement::StartTransaction { modes, .. } => {
                if self.state != BlockState::Idle {
                    // PostgreSQL warns and stays in the block.
                    return Ok(Some(Output::command("BEGIN")));
                }
                let isolation = txn_modes::isolation_of(modes)?;
                self.state = BlockState::InBlock;
                self.block_isolation = isolation;
                self.block_read_only = txn_modes::read_only_of(modes);
                self.block_settings = Some(self.settings.clone());
                self.savepoint_settings.clear();
                Output::command("BEGIN")
            }
            ast::Statement::Commit { .. } => {
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
                        "ROLLBACK"
                    }
                    _ => {
                        if let Some(transaction) = self.transaction.take() {
                            let outcome = transaction.commit();
                            self.state = BlockState::Idle;
                            self.block_isolation = None;
                            self.block_read_only = None;
                            outcome?;
                        }
                        "COMMIT"
                    }
                };
                self.state = BlockState::Idle;
                self.block_isolation = None;
                self.block_read_only = None;
                Output::command(tag)
            }
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
                    self.savepoint_settings.iter().rposition(|(saved, _)| *saved == name)
                {
                    self.savepoint_settings.truncate(position + 1);
                    self.settings = self.savepoint_settings[position].1.clone();
                }
                Output::command("ROLLBACK")
            }
            ast::Statement::Rollback { .. } => {
                if let Some(settings) = self.block_settings.take() {
                    self.settings = settings;
                }
                self.savepoint_settings.clear();
                if let Some(transaction) = self.transaction.take() {
                    transaction.rollback()?;
                }
                self.state = BlockState::Idle;
                self.block_isolation = None;
                self.block_read_only = None;
                Output::command("ROLLBACK")
            }
            ast::Statement::Savepoint { name } => {
                self.require_open_block("SAVEPOINT")?;
                self.begin_transaction()?;
                self.transaction.as_mut().expect("begun").savepoint(&ident(name))?;
                self.savepoint_settings.push((ident(name), self.settings.clone()));
                Output::command("SAVEPOINT")
            }
            ast::Statement::ReleaseSavepoint { name } => {
                self.require_open_block("RELEASE SAVEPOINT")?;
                self.begin_transaction()?;
                self.transaction.as_mut().expect("begun").release_savepoint(&ident(name))?;
                let name = ident(name);
                if let Some(position) =
                    self.savepoint_settings.iter().rposition(|(saved, _)| *saved == name)
                {
                    self.savepoint_settings.truncate(position);
                }
                Output::command("RELEASE")
            }
            _ => return Ok(None),
        }))
    }

    fn run_statement(
        &mut self,
        statement: &Statement,
        prepared: &mut Prepared,
        params: &[Datum],
    ) -> Result<Output> {
        let sql = match statement {
            Statement::Front(FrontStatement::Copy(copy)) if copy.from && self.read_only() => {
                return Err(txn_modes::read_only_error("COPY FROM"));
            }
            Statement::Front(front) => return self.front(front),
            Statement::Sql(sql) => sql,
        };
        if self.read_only() {
            if let Some(command) = txn_modes::write_command(sql) {
                return Err(txn_modes::read_only_error(&command));
            }
        }
        match sql.as_ref() {
            ast::Statement::Query(_)
            | ast::Statement::Insert(_)
            | ast::Statement::Update(_)
            | ast::Statement::Delete(_) => {
                let bound = self.bound_for(sql, prepared)?;
                check_parameters(&prepared.parameter_types, params)?;
                let params = coerce_parameters(&prepared.parameter_types, params)?;
                self.in_transaction(|session| {
                    session.run_bound(&bound.1, &params, false).map(|(output, _)| output)
                })
            }
            ast::Statement::Explain { statement: inner, analyze, options, .. } => {
                self.explain(inner, *analyze, options.as_deref(), params)
            }
            ast::Statement::CreateTable(create) => self.create_table(create),
            ast::Statement::CreateIndex(create) => self.create_index(create),
            ast::Statement::Drop { object_type, if_exists, names, .. } => {
                self.drop(object_type, *if_exists, names)
            }
            ast::Statement::AlterTable(alter) => self.alter_table(alter),
            ast::Statement::Truncate(truncate) => {
                let _guard = self.catalog.lock_ddl();
                for target in &truncate.table_names {
                    let name = object_name(&target.name)?;
                    self.catalog.truncate_table(&name)?;
                }
                Ok(Output::command("TRUNCATE TABLE"))
            }
            ast::Statement::Set(set) => self.set(set),
            ast::Statement::ShowVariable { variable } => self.show(variable),
            ast::Statement::Discard { .. } => Ok(Output::command("DISCARD ALL")),
            ast::Statement::Deallocate { .. } => Ok(Output::command("DEALLOCATE")),
            ast::Statement::CreateSchema { .. } => Ok(Output::command("CREATE SCHEMA")),
            ast::Statement::CreateExtension(_) => {
                Err(SqlError::unsupported("extensions are not supported"))
            }
            other => Err(SqlError::unsupported(format!(
                "statement not supported: {}",
                other.to_string().chars().take(80).collect::<String>()
            ))),
        }
    }

    fn bound_for(
        &self,
        sql: &ast::Statement,
        prepared: &mut Prepared,
    ) -> Result<Arc<(u64, Bound)>> {
        let version = self.catalog.version();
        if let Some(bound) = &prepared.bound {
            if bound.0 == version {
                return Ok(Arc::clone(bound));
            }
        }
        let (bound, parameters) = self.bind(sql, &prepared.parameter_types)?.expect("DML binds");
        prepared.parameter_types = parameters;
        prepared.columns = bound_columns(&bound);
        let bound = Arc::new((version, bound));
        prepared.bound = Some(Arc::clone(&bound));
        Ok(bound)
    }

    /// Runs a bound statement in the current transaction; returns the output and, with
    /// `analyze`, node statistics.
    fn run_bound(
        &mut self,
        bound: &Bound,
        params: &[Datum],
        analyze: bool,
    ) -> Result<(Output, Vec<NodeStats>)> {
        let info = SessionInfo {
            database: &self.database,
            user: &self.user,
            backend_pid: self.backend_pid,
            catalog: &self.catalog,
        };
        let budget = MemoryBudget::new(self.work_mem_bytes());
        let limits = self.wait_limits();
        let transaction = self.transaction.as_mut().expect("statement runs in a transaction");
        transaction.set_wait_limits(limits.clone());
        let mut ctx = Ctx {
            txn: Some(transaction),
            params,
            outer: Vec::new(),
            subquery_cache: HashMap::new(),
            stats: Vec::new(),
            analyze,
            budget,
            session: &info,
            statement_time_micros: types::now_micros(),
            interrupt: Some(&limits),
        };
        let output = match bound {
            Bound::Query(plan) => {
                let rows = exec::collect(plan, &mut ctx, &[])?;
                let tag = format!("SELECT {}", rows.len());
                Output::Rows { columns: plan.columns.clone(), rows, tag }
            }
            Bound::Insert(insert) => run_insert(insert, &mut ctx)?,
            Bound::Update(update) => run_update(update, &mut ctx)?,
            Bound::Delete(delete) => run_delete(delete, &mut ctx)?,
        };
        let stats = std::mem::take(&mut ctx.stats);
        Ok((output, stats))
    }

    fn explain(
        &mut self,
        inner: &ast::Statement,
        analyze: bool,
        options: Option<&[ast::UtilityOption]>,
        params: &[Datum],
    ) -> Result<Output> {
        let mut analyze = analyze;
        let mut buffers = false;
        for option in options.unwrap_or_default() {
            let enabled = match &option.arg {
                None => true,
                Some(arg) => {
                    !matches!(arg.to_string().to_lowercase().as_str(), "false" | "off" | "0")
                }
            };
            match ident(&option.name).as_str() {
                "analyze" => analyze = enabled,
                "buffers" => buffers = enabled,
                _ => {}
            }
        }
        let (bound, parameters) = self.bind(inner, &[])?.ok_or_else(|| {
            SqlError::unsupported("EXPLAIN supports queries, INSERT, UPDATE and DELETE")
        })?;
        let params = coerce_parameters(&parameters, params)?;
        let root = bound_plan(&bound);
        let lines = if analyze {
            let started = Instant::now();
            let (_, stats) =
                self.in_transaction(|session| session.run_bound(&bound, &params, true))?;
            let mut lines = explain::render(root, Some(&stats), buffers);
            lines.push(format!(
                "Execution Time: {:.3} ms",
                started.elapsed().as_secs_f64() * 1000.0
            ));
            lines
        } else {
            explain::render(root, None, false)
        };
        let rows = lines.into_iter().map(|line| vec![Datum::Text(line)]).collect::<Vec<_>>();
        let tag = format!("EXPLAIN {}", rows.len());
        Ok(Output::Rows { columns: vec![computed_column("QUERY PLAN", SqlType::Text)], rows, tag })
    }

    // ----- DDL -----

    fn create_table(&mut self, create: &ast::CreateTable) -> Result<Output> {
        let name = object_name(&create.name)?;
        let _guard = self.catalog.lock_ddl();
        if self.catalog.table(&name).is_some() {
            if create.if_not_exists {
                return Ok(Output::command("CREATE TABLE"));
            }
            return Err(SqlError::new("42P07", format!("relation \"{name}\" already exists")));
        }
        if create.query.is_some() {
            return Err(SqlError::unsupported("CREATE TABLE AS is not supported"));
        }
        let mut columns = Vec::new();
        let mut primary: Option<Vec<usize>> = None;
        let mut uniques: Vec<(Option<String>, Vec<usize>)> = Vec::new();
        let mut sequences = Vec::new();
        for (position, column) in create.columns.iter().enumerate() {
            let column_name = ident(&column.name);
            if columns.iter().any(|existing: &ColumnMeta| existing.name == column_name) {
                return Err(SqlError::new(
                    "42701",
                    format!("column \"{column_name}\" specified more than once"),
                ));
            }
            let ty = functions::sql_type(&column.data_type)?;
            let mut meta =
                ColumnMeta { name: column_name.clone(), ty, nullable: true, default: None };
            if functions::is_serial(&column.data_type) {
                let sequence = format!("{name}_{column_name}_seq");
                meta.default = Some(format!("nextval('{sequence}')"));
                meta.nullable = false;
                sequences.push(sequence);
            }
            for option in &column.options {
                match &option.option {
                    ast::ColumnOption::NotNull => meta.nullable = false,
                    ast::ColumnOption::Null => {}
                    ast::ColumnOption::Default(expr) => {
                        // Check it binds now (bad defaults fail at CREATE, as in PostgreSQL).
                        let mut binder = Binder::new(&self.catalog, Vec::new());
                        let (bound, from) =
                            binder.expr(expr, &binder::Scope::default(), Some(&meta.ty))?;
                        binder::coerce(bound, &from, &meta.ty, false)?;
                        meta.default = Some(expr.to_string());
                    }
                    ast::ColumnOption::PrimaryKey(_) => {
                        if primary.is_some() {
                            return Err(SqlError::new(
                                "42P16",
                                format!(
                                    "multiple primary keys for table \"{name}\" are not allowed"
                                ),
                            ));
                        }
                        primary = Some(vec![position]);
                        meta.nullable = false;
                    }
                    ast::ColumnOption::Unique(_) => uniques.push((None, vec![position])),
                    ast::ColumnOption::Check(_) | ast::ColumnOption::ForeignKey(_) => {
                        return Err(SqlError::unsupported(
                            "CHECK and FOREIGN KEY constraints are not supported",
                        ));
                    }
                    _ => {}
                }
            }
            columns.push(meta);
        }
        let column_positions =
            |names: &[ast::IndexColumn], columns: &[ColumnMeta]| -> Result<Vec<usize>> {
                names
                    .iter()
                    .map(|column| {
                        let name = match &column.column.expr {
                            ast::Expr::Identifier(name) => ident(name),
                            other => {
                                return Err(SqlError::unsupported(format!(
                                    "constraint on expression {other}"
                                )))
                            }
                        };
                        columns.iter().position(|c| c.name == name).ok_or_else(|| {
                            SqlError::new(
                                "42703",
                                format!("column \"{name}\" named in key does not exist"),
                            )
                        })
                    })
                    .collect()
            };
        for constraint in &create.constraints {
            match constraint {
                ast::TableConstraint::PrimaryKey(key) => {
                    if primary.is_some() {
                        return Err(SqlError::new(
                            "42P16",
                            format!("multiple primary keys for table \"{name}\" are not allowed"),
                        ));
                    }
                    let positions = column_positions(&key.columns, &columns)?;
                    for &position in &positions {
                        columns[position].nullable = false;
                    }
                    primary = Some(positions);
                }
                ast::TableConstraint::Unique(unique) => {
                    uniques.push((
                        unique.name.as_ref().map(ident),
                        column_positions(&unique.columns, &columns)?,
                    ));
                }
                _ => {
                    return Err(SqlError::unsupported(
                        "CHECK and FOREIGN KEY constraints are not supported",
                    ))
                }
            }
        }
        let mut indexes = Vec::new();
        if let Some(positions) = primary {
            indexes.push(IndexMeta {
                name: format!("{name}_pkey"),
                oid: 0,
                columns: positions,
                unique: true,
                primary: true,
                kind: IndexKind::Clustered,
            });
        }
        for (constraint_name, positions) in uniques {
            let index_name = constraint_name.unwrap_or_else(|| {
                let names: Vec<&str> =
                    positions.iter().map(|&p| columns[p].name.as_str()).collect();
                format!("{name}_{}_key", names.join("_"))
            });
            indexes.push(IndexMeta {
                name: index_name,
                oid: 0,
                columns: positions,
                unique: true,
                primary: false,
                kind: IndexKind::Secondary,
            });
        }
        for sequence in &sequences {
            self.catalog.create_sequence(sequence)?;
        }
        self.catalog.create_table(TableMeta { name, oid: 0, columns, indexes })?;
        Ok(Output::command("CREATE TABLE"))
    }

    fn create_index(&mut self, create: &ast::CreateIndex) -> Result<Output> {
        let table_name = object_name(&create.table_name)?;
        let _guard = self.catalog.lock_ddl();
        let table = self
            .catalog
            .table(&table_name)
            .ok_or_else(|| SqlError::undefined_table(&table_name))?;
        let mut positions = Vec::new();
        let mut column_names = Vec::new();
        for column in &create.columns {
            let name = match &column.column.expr {
                ast::Expr::Identifier(name) => ident(name),
                other => return Err(SqlError::unsupported(format!("index on expression {other}"))),
            };
            let position = table.column_index(&name).ok_or_else(|| {
                SqlError::new("42703", format!("column \"{name}\" does not exist"))
            })?;
            positions.push(position);
            column_names.push(name);
        }
        let name = match &create.name {
            Some(name) => object_name(name)?,
            None => format!("{}_{}_idx", table_name, column_names.join("_")),
        };
        if create.if_not_exists
            && self
                .catalog
                .tables()
                .iter()
                .any(|t| t.indexes.iter().any(|index| index.name == name))
        {
            return Ok(Output::command("CREATE INDEX"));
        }
        let index = IndexMeta {
            name: name.clone(),
            oid: 0,
            columns: positions,
            unique: create.unique,
            primary: false,
            kind: IndexKind::Secondary,
        };
        self.catalog
            .create_index(&table_name, index)
            .map_err(|error| unique_index_error(error, &name))?;
        Ok(Output::command("CREATE INDEX"))
    }

    fn drop(
        &mut self,
        object_type: &ast::ObjectType,
        if_exists: bool,
        names: &[ast::ObjectName],
    ) -> Result<Output> {
        let _guard = self.catalog.lock_ddl();
        match object_type {
            ast::ObjectType::Table => {
                for name in names {
                    let name = object_name(name)?;
                    if self.catalog.table(&name).is_none() {
                        if if_exists {
                            continue;
                        }
                        return Err(SqlError::new(
                            "42P01",
                            format!("table \"{name}\" does not exist"),
                        ));
                    }
                    self.catalog.drop_table(&name)?;
                }
                Ok(Output::command("DROP TABLE"))
            }
            ast::ObjectType::Index => {
                for name in names {
                    let name = object_name(name)?;
                    match self.catalog.drop_index(&name) {
                        Err(error) if error.sqlstate == "42704" && if_exists => {}
                        other => other?,
                    }
                }
                Ok(Output::command("DROP INDEX"))
            }
            other => Err(SqlError::unsupported(format!("DROP {other} is not supported"))),
        }
    }

    fn alter_table(&mut self, alter: &ast::AlterTable) -> Result<Output> {
        let table_name = object_name(&alter.name)?;
        let catalog = Arc::clone(&self.catalog);
        let _guard = catalog.lock_ddl();
        for operation in &alter.operations {
            let table = self
                .catalog
                .table(&table_name)
                .ok_or_else(|| SqlError::undefined_table(&table_name))?;
            let ast::AlterTableOperation::AddConstraint { constraint, .. } = operation else {
                return Err(SqlError::unsupported(
                    "only ALTER TABLE ... ADD PRIMARY KEY / UNIQUE is supported",
                ));
            };
            let (columns, primary, name) = match constraint {
                ast::TableConstraint::PrimaryKey(key) => {
                    if table.primary_key().is_some() {
                        return Err(SqlError::new(
                            "42P16",
                            format!(
                                "multiple primary keys for table \"{table_name}\" are not allowed"
                            ),
                        ));
                    }
                    (
                        &key.columns,
                        true,
                        key.name.as_ref().map_or_else(|| format!("{table_name}_pkey"), ident),
                    )
                }
                ast::TableConstraint::Unique(unique) => (
                    &unique.columns,
                    false,
                    unique.name.as_ref().map_or_else(|| format!("{table_name}_key"), ident),
                ),
                _ => {
                    return Err(SqlError::unsupported(
                        "only PRIMARY KEY and UNIQUE constraints are supported",
                    ))
                }
            };
            let mut positions = Vec::new();
            for column in columns {
                let ast::Expr::Identifier(column_name) = &column.column.expr else {
                    return Err(SqlError::unsupported("constraint on an expression"));
                };
                let column_name = ident(column_name);
                positions.push(table.column_index(&column_name).ok_or_else(|| {
                    SqlError::new(
                        "42703",
                        format!(
                            "column \"{column_name}\" of relation \"{table_name}\" does not exist"
                        ),
                    )
                })?);
            }
            if primary {
                self.check_no_nulls(&table, &positions)?;
            }
            let index = IndexMeta {
                name: name.clone(),
                oid: 0,
                columns: positions,
                unique: true,
                primary,
                kind: IndexKind::Secondary,
            };
            self.catalog
                .create_index(&table_name, index)
                .map_err(|error| unique_index_error(error, &name))?;
        }
        Ok(Output::command("ALTER TABLE"))
    }

    fn check_no_nulls(&mut self, table: &Arc<TableMeta>, positions: &[usize]) -> Result<()> {
        let mut transaction = self.catalog.engine().begin(IsolationLevel::ReadCommitted)?;
        let mut resume: Option<Vec<u8>> = None;
        loop {
            let page = transaction.scan_page(
                &table.name,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                resume.as_deref(),
                exec::SCAN_PAGE_ROWS,
            )?;
            let complete = page.len() < exec::SCAN_PAGE_ROWS;
            for (key, row) in page {
                for &position in positions {
                    if matches!(row.get(position), Some(Value::Null) | None) {
                        return Err(SqlError::new(
                            "23502",
                            format!(
                                "column \"{}\" of relation \"{}\" contains null values",
                                table.columns[position].name, table.name
                            ),
                        ));
                    }
                }
                resume = Some(key);
            }
            if complete {
                break;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    // ----- settings -----

    fn set(&mut self, set: &ast::Set) -> Result<Output> {
        match set {
            ast::Set::SingleAssignment { variable, values, .. } => {
                let name = variable
                    .0
                    .iter()
                    .map(|part| part.to_string().to_lowercase())
                    .collect::<Vec<_>>()
                    .join(".");
                let value = values.iter().map(setting_text).collect::<Vec<_>>().join(", ");
                self.apply_setting(&name, &value)?;
                Ok(Output::command("SET"))
            }
            ast::Set::SetTimeZone { value, .. } => {
                self.apply_setting("timezone", &setting_text(value))?;
                Ok(Output::command("SET"))
            }
            ast::Set::SetNames { .. } | ast::Set::SetNamesDefault {} => Ok(Output::command("SET")),
            ast::Set::SetTransaction { modes, session, .. } => {
                if let Some(read_only) = txn_modes::read_only_of(modes) {
                    if *session {
                        self.settings.insert(
                            "default_transaction_read_only".into(),
                            on_off(read_only).into(),
                        );
                    } else if self.state != BlockState::Idle {
                        self.block_read_only = Some(read_only);
                    }
                }
                if let Some(level) = txn_modes::isolation_of(modes)? {
                    if *session {
                        self.settings.insert(
                            "default_transaction_isolation".into(),
                            isolation_name(level).into(),
                        );
                    } else {
                        if self.transaction.is_some() {
                            return Err(SqlError::new(
                                "25001",
                                "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                            ));
                        }
                        self.block_isolation = Some(level);
                    }
                }
                Ok(Output::command("SET"))
            }
            _ => Ok(Output::command("SET")),
        }
    }

    fn apply_setting(&mut self, name: &str, value: &str) -> Result<()> {
        let value = value.trim_matches('\'').to_string();
        match name {
            "work_mem" => {
                let bytes = parse_memory(&value).ok_or_else(|| {
                    SqlError::new(
                        "22023",
                        format!("invalid value for parameter \"work_mem\": \"{value}\""),
                    )
                })?;
                if bytes < 64 * 1024 {
                    return Err(SqlError::new("22023", format!("{} kB is outside the valid range for parameter \"work_mem\" (64 .. 2147483647)", bytes / 1024)));
                }
                self.settings.insert(name.into(), format_memory(bytes));
            }
            "timezone" | "time zone" => {
                let upper = value.to_uppercase();
                if !matches!(
                    upper.as_str(),
                    "UTC" | "GMT" | "ETC/UTC" | "Z" | "0" | "+00" | "LOCAL" | "DEFAULT"
                ) {
                    return Err(SqlError::unsupported(format!(
                        "time zone \"{value}\" is not supported (tierdb runs in UTC)"
                    )));
                }
                self.settings.insert("timezone".into(), "UTC".into());
            }
            "transaction_isolation" | "transaction isolation level" => {
                let level = txn_modes::parse_isolation(&value)?.ok_or_else(|| {
                    SqlError::new(
                        "22023",
                        format!(
                            "invalid value for parameter \"transaction_isolation\": \"{value}\""
                        ),
                    )
                })?;
                self.block_isolation = Some(level);
            }
            "default_transaction_read_only" => {
                let read_only = txn_modes::parse_bool_setting(name, &value)?;
                self.settings.insert(name.into(), on_off(read_only).into());
            }
            "transaction_read_only" => {
                let read_only = txn_modes::parse_bool_setting(name, &value)?;
                if self.state != BlockState::Idle {
                    self.block_read_only = Some(read_only);
                }
            }
            name if TIMEOUT_SETTINGS.contains(&name) => {
                let milliseconds = parse_duration_ms(name, &value)?;
                self.settings.insert(name.into(), format_duration_ms(milliseconds));
            }
            "default_transaction_isolation" => {
                let level = txn_modes::parse_isolation(&value)?.ok_or_else(|| SqlError::new("22023", format!("invalid value for parameter \"default_transaction_isolation\": \"{value}\"")))?;
                self.settings.insert(name.into(), isolation_name(level).into());
            }
            _ => {
                self.settings.insert(name.into(), value);
            }
        }
        Ok(())
    }

    fn setting(&self, name: &str) -> Option<String> {
        if let Some(value) = self.settings.get(name) {
            return Some(value.clone());
        }
        Some(match name {
            "work_mem" => format_memory(WORK_MEM_DEFAULT_BYTES),
            "timezone" => "UTC".into(),
            "datestyle" => "ISO, MDY".into(),
            "server_version" => "15.0".into(),
            "server_version_num" => "150000".into(),
            "server_encoding" | "client_encoding" => "UTF8".into(),
            "standard_conforming_strings" => "on".into(),
            "integer_datetimes" => "on".into(),
            "max_connections" => "500".into(),
            "search_path" => "\"$user\", public".into(),
            "transaction_isolation" => {
                isolation_name(self.block_isolation.unwrap_or_else(|| self.default_isolation()))
                    .into()
            }
            "default_transaction_isolation" => isolation_name(self.default_isolation()).into(),
            "transaction_read_only" => on_off(self.read_only()).into(),
            "default_transaction_read_only" => "off".into(),
            "lc_collate" | "lc_ctype" => "C".into(),
            "is_superuser" => "on".into(),
            "application_name" => String::new(),
            "extra_float_digits" => "1".into(),
            name if TIMEOUT_SETTINGS.contains(&name) => "0".into(),
            _ => return None,
        })
    }

    fn show(&mut self, variable: &[ast::Ident]) -> Result<Output> {
        let name =
            variable.iter().map(|part| part.value.to_lowercase()).collect::<Vec<_>>().join(" ");
        let (name, key) = match name.as_str() {
            "transaction isolation level" => {
                ("transaction_isolation".to_string(), "transaction_isolation".to_string())
            }
            "time zone" => ("TimeZone".to_string(), "timezone".to_string()),
            "timezone" => ("TimeZone".to_string(), "timezone".to_string()),
            other => (other.to_string(), other.to_string()),
        };
        if key == "all" {
            let mut names: Vec<String> = [
                "work_mem",
                "timezone",
                "datestyle",
                "server_version",
                "client_encoding",
                "transaction_isolation",
                "default_transaction_isolation",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            names.extend(self.settings.keys().cloned());
            names.sort();
            names.dedup();
            let rows = names
                .iter()
                .map(|n| {
                    vec![Datum::Text(n.clone()), Datum::Text(self.setting(n).unwrap_or_default())]
                })
                .collect::<Vec<_>>();
            let tag = format!("SHOW {}", rows.len());
            return Ok(Output::Rows {
                columns: vec![
                    computed_column("name", SqlType::Text),
                    computed_column("setting", SqlType::Text),
                ],
                rows,
                tag,
            });
        }
        let value = self.setting(&key).ok_or_else(|| {
            SqlError::new("42704", format!("unrecognized configuration parameter \"{name}\""))
        })?;
        Ok(Output::Rows {
            columns: vec![computed_column(&name, SqlType::Text)],
            rows: vec![vec![Datum::Text(value)]],
            tag: "SHOW".into(),
        })
    }

    // ----- front statements -----

    fn front(&mut self, statement: &FrontStatement) -> Result<Output> {
        match statement {
            FrontStatement::Vacuum { tables, .. } => {
                if self.state != BlockState::Idle {
                    return Err(SqlError::new(
                        "25001",
                        "VACUUM cannot run inside a transaction block",
                    ));
                }
                for table in tables {
                    if self.catalog.table(table).is_none() {
                        return Err(SqlError::undefined_table(table));
                    }
                }
                self.catalog.engine().purge()?;
                Ok(Output::command("VACUUM"))
            }
            FrontStatement::Analyze { tables } => {
                for table in tables {
                    if self.catalog.table(table).is_none() {
                        return Err(SqlError::undefined_table(table));
                    }
                }
                Ok(Output::command("ANALYZE"))
            }
            FrontStatement::Reset { name } => {
                if name == "all" {
                    self.settings.clear();
                } else {
                    self.settings.remove(&name.to_lowercase());
                }
                Ok(Output::command("RESET"))
            }
            FrontStatement::Discard => {
                self.settings.clear();
                Ok(Output::command("DISCARD ALL"))
            }
            FrontStatement::Copy(copy) => self.copy(copy),
        }
    }

    fn copy(&mut self, copy: &CopyStatement) -> Result<Output> {
        match (&copy.source, copy.from) {
            (CopySource::Table { name, columns }, true) => {
                let table =
                    self.catalog.table(name).ok_or_else(|| SqlError::undefined_table(name))?;
                for column in columns {
                    if table.column_index(column).is_none() {
                        return Err(SqlError::new(
                            "42703",
                            format!("column \"{column}\" of relation \"{name}\" does not exist"),
                        ));
                    }
                }
                let width = if columns.is_empty() { table.columns.len() } else { columns.len() };
                self.copy_in_begin(copy)?;
                Ok(Output::CopyIn { statement: copy.clone(), columns: width })
            }
            (source, false) => {
                let sql = match source {
                    CopySource::Table { name, columns } => {
                        let list =
                            if columns.is_empty() { "*".to_string() } else { columns.join(", ") };
                        format!("SELECT {list} FROM {name}")
                    }
                    CopySource::Query(query) => query.clone(),
                };
                let mut prepared = self.prepare(&sql, &[])?;
                let bound = match prepared.statement.clone().as_deref() {
                    Some(Statement::Sql(statement)) => self.bound_for(statement, &mut prepared)?,
                    _ => return Err(SqlError::syntax("COPY query")),
                };
                let (output, _) =
                    self.in_transaction(|session| session.run_bound(&bound.1, &[], false))?;
                let Output::Rows { columns, rows, .. } = output else {
                    return Err(SqlError::syntax("COPY query must return rows"));
                };
                let csv = copy.options.format == CopyFormat::Csv;
                let mut data = Vec::new();
                if csv && copy.options.header {
                    let names: Vec<String> = columns
                        .iter()
                        .map(|c| front::escape_csv_field(&c.name, &copy.options))
                        .collect();
                    data.extend_from_slice(
                        names.join(&copy.options.delimiter.to_string()).as_bytes(),
                    );
                    data.push(b'\n');
                }
                for row in &rows {
                    let fields: Vec<String> = row
                        .iter()
                        .zip(&columns)
                        .map(|(datum, column)| match datum.to_text(&column.ty) {
                            None => copy.options.null.clone(),
                            Some(text) if csv => front::escape_csv_field(&text, &copy.options),
                            Some(text) => front::escape_text_field(&text, copy.options.delimiter),
                        })
                        .collect();
                    data.extend_from_slice(
                        fields.join(&copy.options.delimiter.to_string()).as_bytes(),
                    );
                    data.push(b'\n');
                }
                Ok(Output::CopyOut {
                    data,
                    columns: columns.len(),
                    rows: u64::try_from(rows.len()).unwrap_or(0),
                    csv,
                })
            }
            (CopySource::Query(_), true) => Err(SqlError::syntax("COPY (query) FROM is not valid")),
        }
    }

    /// Records an error raised outside the session (a bad parameter): it fails the block.
    pub fn note_error(&mut self) {
        self.fail_block();
    }

    /// Rolls back any open transaction (connection close).
    pub fn terminate(&mut self) {
        self.copy_in = None;
        if let Some(transaction) = self.transaction.take() {
            let _ = transaction.rollback();
        }
        self.state = BlockState::Idle;
    }
}

/// 25P02, worded by the engine, which reports the same state for its own failed transactions.
fn aborted_error() -> SqlError {
    tierdb_engine::EngineError::TransactionAborted.into()
}

fn unique_index_error(error: SqlError, name: &str) -> SqlError {
    if error.sqlstate == "23505" {
        SqlError::new("23505", format!("could not create unique index \"{name}\""))
    } else {
        error
    }
}

fn setting_text(expr: &ast::Expr) -> String {
    match expr {
        ast::Expr::Value(value) => match &value.value {
            ast::Value::SingleQuotedString(text) => text.clone(),
            other => other.to_string(),
        },
        ast::Expr::Identifier(name) => name.value.clone(),
        other => other.to_string(),
    }
}

fn on_off(value: bool) -> &'static str {
    if value {
        "on"
    } else {
        "off"
    }
}

/// Parses a memory setting as PostgreSQL does (plain numbers are kB).
pub fn parse_memory(text: &str) -> Option<usize> {
    let text = text.trim().trim_matches('\'');
    let digits: String = text.chars().take_while(|c| c.is_ascii_digit()).collect();
    let number: usize = digits.parse().ok()?;
    let unit = text[digits.len()..].trim().to_lowercase();
    let factor = match unit.as_str() {
        "" | "kb" => 1024,
        "b" => 1,
        "mb" => 1 << 20,
        "gb" => 1 << 30,
        "tb" => 1 << 40,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// Formats bytes as PostgreSQL shows memory settings (the largest exact unit).
pub fn format_memory(bytes: usize) -> String {
    let kilobytes = bytes / 1024;
    if kilobytes > 0 && kilobytes.is_multiple_of(1024 * 1024) {
        format!("{}GB", kilobytes / (1024 * 1024))
    } else if kilobytes > 0 && kilobytes.is_multiple_of(1024) {
        format!("{}MB", kilobytes / 1024)
    } else {
        format!("{kilobytes}kB")
    }
}

fn bound_columns(bound: &Bound) -> Vec<OutputColumn> {
    let mut columns = match bound {
        Bound::Query(plan) => plan.columns.clone(),
        Bound::Insert(InsertPlan { returning, .. })
        | Bound::Update(UpdatePlan { returning, .. })
        | Bound::Delete(DeletePlan { returning, .. }) => {
            returning.as_ref().map(|(_, columns)| columns.clone()).unwrap_or_default()
        }
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

fn bind_defaults(binder: &mut Binder<'_>, table: &TableMeta) -> Result<Vec<Option<Expr>>> {
    let scope = binder::Scope::default();
    table
        .columns
        .iter()
        .map(|column| match &column.default {
            Some(text) => {
                if let Some(sequence) = sequence_of_default(text) {
                    let call = crate::plan::FunctionCall {
                        name: "nextval".into(),
                        args: vec![Expr::Literal(Datum::Text(sequence.to_string()))],
                        arg_types: vec![SqlType::Text],
                        output: SqlType::Int8,
                    };
                    return Ok(Some(Expr::Cast {
                        expr: Box::new(Expr::Function(call)),
                        from: SqlType::Int8,
                        to: column.ty.clone(),
                        explicit: false,
                    }));
                }
                // Parsed with the limit its CREATE TABLE was parsed with.
                let expr = Parser::new(&PostgreSqlDialect {})
                    .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
                    .try_with_sql(text)
                    .and_then(|mut parser| parser.parse_expr())
                    .map_err(|error| {
                        SqlError::internal(format!("stored default does not parse: {error}"))
                    })?;
                let (bound, from) = binder.expr(&expr, &scope, Some(&column.ty))?;
                Ok(Some(binder::coerce(bound, &from, &column.ty, false)?))
            }
            None => Ok(None),
        })
        .collect()
}

fn bind_insert(binder: &mut Binder<'_>, insert: &ast::Insert) -> Result<InsertPlan> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(SqlError::unsupported("INSERT into a table function"));
    };
    let table = binder.table(name)?;
    if insert.on.is_some() {
        return Err(SqlError::unsupported("ON CONFLICT is not supported"));
    }
    let targets: Vec<usize> = if insert.columns.is_empty() {
        (0..table.columns.len()).collect()
    } else {
        insert
            .columns
            .iter()
            .map(|column| {
                let column = object_name(column)?;
                table.column_index(&column).ok_or_else(|| {
                    SqlError::new(
                        "42703",
                        format!(
                            "column \"{column}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    )
                })
            })
            .collect::<Result<Vec<usize>>>()?
    };
    let defaults = bind_defaults(binder, &table)?;
    let target_types: Vec<SqlType> =
        targets.iter().map(|&target| table.columns[target].ty.clone()).collect();
    let source = match &insert.source {
        None => binder.plan(crate::plan::PlanKind::Values { rows: vec![Vec::new()] }, Vec::new()),
        Some(query) => match query.body.as_ref() {
            ast::SetExpr::Values(values)
                if query.order_by.is_none() && query.limit_clause.is_none() =>
            {
                // DEFAULT in a VALUES row means the column default.
                let mut rows = Vec::new();
                for row in &values.rows {
                    if row.len() > targets.len() {
                        return Err(SqlError::syntax(
                            "INSERT has more expressions than target columns",
                        ));
                    }
                    let mut bound = Vec::new();
                    for (index, item) in row.iter().enumerate() {
                        let target = targets[index];
                        let ty = &target_types[index];
                        let is_default = matches!(item, ast::Expr::Identifier(name) if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("default"));
                        if is_default {
                            bound.push(
                                defaults[target].clone().unwrap_or(Expr::Literal(Datum::Null)),
                            );
                            continue;
                        }
                        let (expr, from) =
                            binder.expr(item, &binder::Scope::default(), Some(ty))?;
                        bound.push(binder::coerce(expr, &from, ty, false).map_err(|error| {
                            assignment_error(error, &table.columns[target], &from)
                        })?);
                    }
                    rows.push(bound);
                }
                let width = values.rows.first().map_or(0, |row| row.len());
                let columns = target_types
                    .iter()
                    .take(width)
                    .enumerate()
                    .map(|(i, ty)| computed_column(&format!("column{}", i + 1), ty.clone()))
                    .collect();
                binder.plan(crate::plan::PlanKind::Values { rows }, columns)
            }
            _ => {
                let plan = binder.query(query)?;
                if plan.arity() > targets.len() {
                    return Err(SqlError::syntax(
                        "INSERT has more expressions than target columns",
                    ));
                }
                for (index, column) in plan.columns.iter().enumerate() {
                    let target = &table.columns[targets[index]];
                    if !assignable(&column.ty, &target.ty) {
                        return Err(SqlError::datatype_mismatch(format!(
                            "column \"{}\" is of type {} but expression is of type {}",
                            target.name,
                            target.ty.display_name(),
                            column.ty.display_name()
                        )));
                    }
                }
                plan
            }
        },
    };
    let targets = targets[..source.arity().min(targets.len())].to_vec();
    let returning = match &insert.returning {
        Some(items) => Some(binder.returning(items, &table)?),
        None => None,
    };
    Ok(InsertPlan { table, targets, source, defaults, returning })
}

fn assignable(from: &SqlType, to: &SqlType) -> bool {
    from == to
        || *from == SqlType::Unknown
        || (from.is_numeric_family() && to.is_numeric_family())
        || to.is_text()
        || (from.is_temporal() && to.is_temporal())
}

fn assignment_error(error: SqlError, column: &ColumnMeta, from: &SqlType) -> SqlError {
    if error.sqlstate == "42804" {
        SqlError::datatype_mismatch(format!(
            "column \"{}\" is of type {} but expression is of type {}",
            column.name,
            column.ty.display_name(),
            from.display_name()
        ))
    } else {
        error
    }
}

fn bind_update(binder: &mut Binder<'_>, update: &ast::Update) -> Result<UpdatePlan> {
    if update.from.is_some() {
        return Err(SqlError::unsupported("UPDATE ... FROM is not supported"));
    }
    let (table, alias) = match &update.table.relation {
        ast::TableFactor::Table { name, alias, .. } => {
            (binder.table(name)?, alias.as_ref().map(|alias| ident(&alias.name)))
        }
        _ => return Err(SqlError::unsupported("UPDATE of a non-table")),
    };
    let (scan, scope) = binder.table_scope(&table, alias.as_deref());
    let mut assignments = Vec::new();
    for assignment in &update.assignments {
        let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
            return Err(SqlError::unsupported("multi-column assignment"));
        };
        let column = object_name(column)?;
        let position = table.column_index(&column).ok_or_else(|| {
            SqlError::new(
                "42703",
                format!("column \"{column}\" of relation \"{}\" does not exist", table.name),
            )
        })?;
        let ty = table.columns[position].ty.clone();
        let is_default = matches!(&assignment.value, ast::Expr::Identifier(name) if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("default"));
        let expr = if is_default {
            bind_defaults(binder, &table)?[position].clone().unwrap_or(Expr::Literal(Datum::Null))
        } else {
            let (expr, from) = binder.expr(&assignment.value, &scope, Some(&ty))?;
            binder::coerce(expr, &from, &ty, false)
                .map_err(|error| assignment_error(error, &table.columns[position], &from))?
        };
        assignments.push((position, expr));
    }
    let filter = match &update.selection {
        Some(selection) => Some(binder.coerced(selection, &scope, &SqlType::Bool)?),
        None => None,
    };
    let mut scan = match &filter {
        Some(filter) => binder.filter(scan, filter.clone()),
        None => scan,
    };
    set_emit_key(&mut scan);
    let returning = match &update.returning {
        Some(items) => Some(binder.returning(items, &table)?),
        None => None,
    };
    Ok(UpdatePlan { table, scan, assignments, filter, returning })
}

fn bind_delete(binder: &mut Binder<'_>, delete: &ast::Delete) -> Result<DeletePlan> {
    let from = match &delete.from {
        ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
    };
    if from.len() != 1 || !from[0].joins.is_empty() || delete.using.is_some() {
        return Err(SqlError::unsupported("DELETE with USING or joins is not supported"));
    }
    let (table, alias) = match &from[0].relation {
        ast::TableFactor::Table { name, alias, .. } => {
            (binder.table(name)?, alias.as_ref().map(|alias| ident(&alias.name)))
        }
        _ => return Err(SqlError::unsupported("DELETE from a non-table")),
    };
    let (scan, scope) = binder.table_scope(&table, alias.as_deref());
    let filter = match &delete.selection {
        Some(selection) => Some(binder.coerced(selection, &scope, &SqlType::Bool)?),
        None => None,
    };
    let mut scan = match &filter {
        Some(filter) => binder.filter(scan, filter.clone()),
        None => scan,
    };
    set_emit_key(&mut scan);
    let returning = match &delete.returning {
        Some(items) => Some(binder.returning(items, &table)?),
        None => None,
    };
    Ok(DeletePlan { table, scan, filter, returning })
}

fn set_emit_key(plan: &mut Plan) {
    if let crate::plan::PlanKind::Scan { emit_key, .. } = &mut plan.kind {
        *emit_key = true;
    }
}

/// Completes a row (defaults, casts, NOT NULL) and inserts it. Returns the stored row.
fn insert_row(
    table: &TableMeta,
    mut row: Vec<Option<Datum>>,
    defaults: &[Option<Expr>],
    ctx: &mut Ctx<'_>,
) -> Result<Row> {
    let mut values = Vec::with_capacity(table.columns.len());
    let mut datums = Vec::with_capacity(table.columns.len());
    for (index, column) in table.columns.iter().enumerate() {
        let datum = match row[index].take() {
            Some(datum) => datum,
            None => match &defaults[index] {
                Some(default) => exec::eval(default, &[], ctx)?,
                None => Datum::Null,
            },
        };
        if datum.is_null() && !column.nullable {
            return Err(SqlError::new(
                "23502",
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    column.name, table.name
                ),
            ));
        }
        values.push(datum.to_value(&column.ty)?);
        datums.push(datum);
    }
    let transaction = ctx.txn.as_deref_mut().expect("insert runs in a transaction");
    transaction.insert(&table.name, values).map_err(|error| constraint_error(error.into()))?;
    Ok(datums)
}

fn constraint_error(error: SqlError) -> SqlError {
    error
}

fn returning_rows(
    returning: &Option<(Vec<Expr>, Vec<OutputColumn>)>,
    rows: Vec<Row>,
    ctx: &mut Ctx<'_>,
    tag: String,
) -> Result<Output> {
    match returning {
        Some((exprs, columns)) => {
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                out.push(
                    exprs
                        .iter()
                        .map(|expr| exec::eval(expr, &row, ctx))
                        .collect::<Result<Row>>()?,
                );
            }
            Ok(Output::Rows { columns: columns.clone(), rows: out, tag })
        }
        None => Ok(Output::Command { tag }),
    }
}

fn run_insert(insert: &InsertPlan, ctx: &mut Ctx<'_>) -> Result<Output> {
    // Collect the source first: an INSERT ... SELECT from the same table must not see its
    // own rows.
    let source_types: Vec<SqlType> =
        insert.source.columns.iter().map(|column| column.ty.clone()).collect();
    let sources = exec::collect(&insert.source, ctx, &[])?;
    let mut inserted = Vec::new();
    let keep = insert.returning.is_some();
    let mut count = 0u64;
    for source in sources {
        let mut row: Vec<Option<Datum>> = vec![None; insert.table.columns.len()];
        for ((value, &target), from) in source.into_iter().zip(&insert.targets).zip(&source_types) {
            let column = &insert.table.columns[target];
            row[target] = Some(types::cast(value, from, &column.ty, false)?);
        }
        let stored = insert_row(&insert.table, row, &insert.defaults, ctx)?;
        count += 1;
        if keep {
            inserted.push(stored);
        }
    }
    returning_rows(&insert.returning, inserted, ctx, format!("INSERT 0 {count}"))
}

fn run_update(update: &UpdatePlan, ctx: &mut Ctx<'_>) -> Result<Output> {
    let table = &update.table;
    // Collect the targets first (keys and rows), then update: a row moved by the update
    // must not be seen again by the scan.
    let targets = exec::collect(&update.scan, ctx, &[])?;
    let mut count = 0u64;
    let mut updated_rows = Vec::new();
    for mut row in targets {
        let Some(Datum::Bytes(key)) = row.pop() else {
            return Err(SqlError::internal("update scan lost the row key"));
        };
        let new_row = apply_assignments(table, &update.assignments, &row, ctx)?;
        let expected: Vec<Value> = row
            .iter()
            .zip(&table.columns)
            .map(|(datum, column)| datum.to_value(&column.ty))
            .collect::<Result<_>>()?;
        let mut prepared: Vec<Value> = new_row
            .iter()
            .zip(&table.columns)
            .map(|(datum, column)| datum.to_value(&column.ty))
            .collect::<Result<_>>()?;
        let mut failure: Option<SqlError> = None;
        let mut result_row: Option<Row> = None;
        // A new row with another primary key: the engine updates rows in place under their
        // key, so it becomes a delete and an insert (below).
        let mut moved: Option<(Row, Vec<Value>)> = None;
        let key_columns: &[usize] = table.clustered_key().map_or(&[], |key| &key.columns);
        let params = ctx.params;
        let session = ctx.session;
        let time = ctx.statement_time_micros;
        let mut change = |latest: &Vec<Value>| -> Option<Vec<Value>> {
            let key_changes = |values: &[Value]| {
                key_columns.iter().any(|&column| values[column] != latest[column])
            };
            if *latest == expected {
                if key_changes(&prepared) {
                    moved = Some((new_row.clone(), std::mem::take(&mut prepared)));
                    return None;
                }
                result_row = Some(new_row.clone());
                return Some(std::mem::take(&mut prepared));
            }
            // A concurrent update committed first (READ COMMITTED): re-check the predicate
            // on the latest version and recompute the new row from it.
            let mut detached = detached_ctx(params, session, time);
            let current = table_row(table, latest);
            if let Some(filter) = &update.filter {
                match recheck_filter(filter, table, latest, &mut detached) {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(error) => {
                        failure = Some(error);
                        return None;
                    }
                }
            }
            let recomputed = apply_assignments(table, &update.assignments, &current, &mut detached)
                .and_then(|new_row| {
                    let values = new_row
                        .iter()
                        .zip(&table.columns)
                        .map(|(datum, column)| datum.to_value(&column.ty))
                        .collect::<Result<Vec<Value>>>()?;
                    Ok((new_row, values))
                });
            match recomputed {
                Ok((new_row, values)) if key_changes(&values) => {
                    moved = Some((new_row, values));
                    None
                }
                Ok((new_row, values)) => {
                    result_row = Some(new_row);
                    Some(values)
                }
                Err(error) => {
                    failure = Some(error);
                    None
                }
            }
        };
        let transaction = ctx.txn.as_deref_mut().expect("update runs in a transaction");
        let mut changed = transaction.update_by_key(&table.name, &key, &mut change)?;
        if let Some(error) = failure {
            return Err(error);
        }
        if let Some((new_row, values)) = moved {
            transaction.delete_by_key(&table.name, &key)?;
            transaction.insert(&table.name, values)?;
            result_row = Some(new_row);
            changed = true;
        }
        if changed {
            count += 1;
            if let Some(row) = result_row {
                if update.returning.is_some() {
                    updated_rows.push(row);
                }
            }
        }
    }
    returning_rows(&update.returning, updated_rows, ctx, format!("UPDATE {count}"))
}

/// A context for expressions evaluated inside an engine callback (no transaction access).
fn detached_ctx<'a>(params: &'a [Datum], session: &'a SessionInfo<'a>, time: i64) -> Ctx<'a> {
    Ctx {
        txn: None,
        params,
        outer: Vec::new(),
        subquery_cache: HashMap::new(),
        stats: Vec::new(),
        analyze: false,
        budget: MemoryBudget::new(usize::MAX),
        session,
        statement_time_micros: time,
        interrupt: None,
    }
}

/// A row of `table` from engine values.
fn table_row(table: &TableMeta, values: &[Value]) -> Row {
    values
        .iter()
        .zip(&table.columns)
        .map(|(value, column)| Datum::from_value(value, &column.ty))
        .collect()
}

/// Whether the latest version of a row still passes the statement's WHERE clause (READ
/// COMMITTED, after a concurrent update committed: PostgreSQL's EvalPlanQual).
fn recheck_filter(
    filter: &Expr,
    table: &TableMeta,
    latest: &[Value],
    ctx: &mut Ctx<'_>,
) -> Result<bool> {
    Ok(matches!(exec::eval(filter, &table_row(table, latest), ctx)?, Datum::Bool(true)))
}

fn apply_assignments(
    table: &TableMeta,
    assignments: &[(usize, Expr)],
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Row> {
    let mut new_row = row.to_vec();
    for (position, expr) in assignments {
        new_row[*position] = exec::eval(expr, row, ctx)?;
    }
    for (datum, column) in new_row.iter().zip(&table.columns) {
        if datum.is_null() && !column.nullable {
            return Err(SqlError::new(
                "23502",
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    column.name, table.name
                ),
            ));
        }
    }
    Ok(new_row)
}

fn run_delete(delete: &DeletePlan, ctx: &mut Ctx<'_>) -> Result<Output> {
    let targets = exec::collect(&delete.scan, ctx, &[])?;
    let mut count = 0u64;
    let mut deleted = Vec::new();
    for mut row in targets {
        let Some(Datum::Bytes(key)) = row.pop() else {
            return Err(SqlError::internal("delete scan lost the row key"));
        };
        // READ COMMITTED: a concurrent update that committed first may have moved the row
        // out of the WHERE clause; the DELETE re-checks it on the latest version.
        let mut failure: Option<SqlError> = None;
        let (params, session, time) = (ctx.params, ctx.session, ctx.statement_time_micros);
        let expected: Vec<Value> = row
            .iter()
            .zip(&delete.table.columns)
            .map(|(datum, column)| datum.to_value(&column.ty))
            .collect::<Result<_>>()?;
        let mut recheck = |latest: &Vec<Value>| match &delete.filter {
            Some(filter) if *latest != expected => {
                let mut detached = detached_ctx(params, session, time);
                match recheck_filter(filter, &delete.table, latest, &mut detached) {
                    Ok(matches) => matches,
                    Err(error) => {
                        failure = Some(error);
                        false
                    }
                }
            }
            _ => true,
        };
        let transaction = ctx.txn.as_deref_mut().expect("delete runs in a transaction");
        let removed = transaction.delete_by_key_if(&delete.table.name, &key, &mut recheck)?;
        if let Some(error) = failure {
            return Err(error);
        }
        if removed {
            count += 1;
            if delete.returning.is_some() {
                deleted.push(row);
            }
        }
    }
    returning_rows(&delete.returning, deleted, ctx, format!("DELETE {count}"))
}
