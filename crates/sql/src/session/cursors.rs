//! Server-side cursors: DECLARE runs its query to completion into a `CursorRows` store
//! (memory up to work_mem, then a file of the temp space), FETCH and MOVE read it forward, CLOSE and the
//! end of the transaction drop it. PostgreSQL runs a cursor's query as it is fetched; here
//! DECLARE waits for the whole query (the executor is push-based) and its errors surface
//! at DECLARE, not at the FETCH that reaches them.

use super::*;
use crate::parse::cursor::{CursorStatement, FetchCount};
use crate::types::Row;

use super::cursor_rows::{self, CursorRows};
use crate::exec::spill::SpillTarget;

/// An open cursor.
pub(crate) struct Cursor {
    columns: Vec<OutputColumn>,
    rows: Box<dyn CursorRows>,
}

/// A transaction's cursors, by name.
pub(crate) type Cursors = HashMap<String, Cursor>;

fn missing(name: &str) -> SqlError {
    SqlError::new("34000", format!("cursor \"{name}\" does not exist"))
}

impl Session {
    pub(super) fn cursor(&mut self, statement: &CursorStatement) -> Result<Output> {
        match statement {
            CursorStatement::Declare { name, query } => self.declare(name, query),
            CursorStatement::Fetch { name, count, fetch_rows } => {
                let cursor = self.cursors.get_mut(name).ok_or_else(|| missing(name))?;
                let limit = match count {
                    FetchCount::Rows(rows) => *rows,
                    FetchCount::All => u64::MAX,
                };
                let mut rows = Vec::new();
                let mut moved = 0u64;
                while moved < limit {
                    let Some(row) = cursor.rows.next()? else { break };
                    moved += 1;
                    if *fetch_rows {
                        rows.push(row);
                    }
                }
                Ok(match fetch_rows {
                    true => Output::Rows {
                        columns: cursor.columns.clone(),
                        rows,
                        tag: CommandTag::Fetch,
                    },
                    false => Output::Command { tag: CommandTag::Move, rows: moved },
                })
            }
            CursorStatement::Close { name: Some(name) } => {
                self.cursors.remove(name).ok_or_else(|| missing(name))?;
                Ok(Output::command(CommandTag::CloseCursor))
            }
            CursorStatement::Close { name: None } => {
                self.cursors.clear();
                Ok(Output::command(CommandTag::CloseCursorAll))
            }
        }
    }

    fn declare(&mut self, name: &str, query: &str) -> Result<Output> {
        // The query is checked first, as PostgreSQL analyses it before it opens the cursor;
        // a data-modifying WITH before binding, which would bind its parts.
        for statement in parse_sql(query)? {
            if let Statement::Sql(sql) = statement {
                refuse_modifying_cursor(&sql)?;
            }
        }
        let mut prepared = self.prepare(query, &[])?;
        let statement = prepared.statement.clone();
        let sql = match statement.as_deref() {
            Some(Statement::Sql(sql)) if matches!(sql.as_ref(), ast::Statement::Query(_)) => sql,
            _ => return Err(SqlError::syntax("DECLARE CURSOR needs a SELECT or VALUES query")),
        };
        if self.state == BlockState::Idle {
            return Err(SqlError::new(
                "25P01",
                "DECLARE CURSOR can only be used in transaction blocks",
            ));
        }
        if self.cursors.contains_key(name) {
            return Err(SqlError::new("42P03", format!("cursor \"{name}\" already exists")));
        }
        self.check_privileges(statement.as_deref().expect("matched"))?;
        let bound = self.bound_for(sql, &mut prepared)?;
        let target = SpillTarget {
            space: Arc::clone(self.catalog.engine().store().temp_space()),
            usage: Arc::clone(&self.temp_usage),
        };
        let rows = cursor_rows::new(target, self.work_mem_bytes());
        let mut filling = Filling { rows, columns: None };
        self.in_transaction(|session| {
            session.run_bound_into(&bound.1, &[], false, Some(&mut filling))
        })?;
        let cursor = Cursor { columns: prepared.columns, rows: filling.rows };
        self.cursors.insert(name.to_string(), cursor);
        Ok(Output::command(CommandTag::DeclareCursor))
    }

    /// Executes a prepared statement keeping a query's rows in a row store, for an
    /// extended-protocol portal read max_rows rows at a time (PortalSuspended between).
    pub fn execute_prepared_kept(
        &mut self,
        prepared: &mut Prepared,
        params: &[Datum],
    ) -> Result<Kept> {
        let target = SpillTarget {
            space: Arc::clone(self.catalog.engine().store().temp_space()),
            usage: Arc::clone(&self.temp_usage),
        };
        let rows = cursor_rows::new(target, self.work_mem_bytes());
        let mut filling = Filling { rows, columns: None };
        let output = self.execute_prepared_streaming(prepared, params, Some(&mut filling))?;
        Ok(match filling.columns {
            Some(columns) => Kept::Rows(KeptRows { columns, rows: filling.rows }),
            None => Kept::Output(output),
        })
    }

    /// A cursor's result columns (a FETCH's, for Describe in the extended protocol).
    pub fn cursor_columns(&self, name: &str) -> Option<Vec<OutputColumn>> {
        self.cursors.get(name).map(|cursor| cursor.columns.clone())
    }
}

/// The sink that fills a cursor's store as its query runs.
struct Filling {
    rows: Box<dyn CursorRows>,
    /// The query's columns, once it started streaming.
    columns: Option<Vec<OutputColumn>>,
}

impl RowSink for Filling {
    fn columns(&mut self, columns: &[OutputColumn]) -> Result<()> {
        self.columns = Some(columns.to_vec());
        Ok(())
    }

    fn row(&mut self, row: Row) -> Result<()> {
        self.rows.push(row)
    }

    // DECLARE takes queries only; a portal read max_rows at a time may hold a COPY.
    fn copy_out(&mut self, _columns: usize, _format: CopyFormat) -> Result<()> {
        Err(SqlError::unsupported("COPY TO STDOUT in a portal with a row limit is not supported"))
    }

    fn copy_data(&mut self, _line: Vec<u8>) -> Result<()> {
        Err(SqlError::unsupported("COPY TO STDOUT in a portal with a row limit is not supported"))
    }

    fn finished(&mut self, _outcome: Result<Output>, _state: BlockState) {}
}

/// A statement's outcome for a portal read max_rows at a time.
pub enum Kept {
    /// A query's rows, kept to be read in order.
    Rows(KeptRows),
    /// Any other statement's output.
    Output(Output),
}

/// A query's result columns and its rows in a row store.
pub struct KeptRows {
    pub columns: Vec<OutputColumn>,
    rows: Box<dyn CursorRows>,
}

impl KeptRows {
    pub fn next_row(&mut self) -> Result<Option<Row>> {
        self.rows.next()
    }
}

/// PostgreSQL's errors for a cursor over a statement that writes: a syntax error for INSERT,
/// UPDATE or DELETE under a WITH, 0A000 for data-modifying statements in its WITH list (a
/// cursor may be read partly or never, so they would not run once to completion).
fn refuse_modifying_cursor(sql: &ast::Statement) -> Result<()> {
    let ast::Statement::Query(query) = sql else { return Ok(()) };
    if crate::bind::is_data_modifying(&query.body) {
        return Err(SqlError::syntax("DECLARE CURSOR needs a SELECT or VALUES query"));
    }
    if crate::bind::needs_statement_with(query) {
        return Err(SqlError::unsupported(
            "DECLARE CURSOR must not contain data-modifying statements in WITH",
        ));
    }
    Ok(())
}
