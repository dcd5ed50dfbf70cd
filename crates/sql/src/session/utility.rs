//! Utility statements parsed by tierdb's front parser, and COPY.

use super::*;
use crate::output::CommandTag;

impl Session {
    pub(crate) fn front(
        &mut self,
        statement: &FrontStatement,
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        match statement {
            FrontStatement::Vacuum { tables, analyze } => {
                let names: Vec<String> =
                    tables.iter().map(|table| self.temp_table_or(table)).collect();
                self.vacuum(&names)?;
                if *analyze {
                    self.analyze(tables)?;
                }
                Ok(Output::command(CommandTag::Vacuum))
            }
            FrontStatement::Analyze { tables } => {
                self.analyze(tables)?;
                Ok(Output::command(CommandTag::Analyze))
            }
            FrontStatement::Reset { name } => {
                self.reset_setting(name)?;
                Ok(Output::command(CommandTag::Reset))
            }
            FrontStatement::Discard(target) => self.discard(*target),
            FrontStatement::Checkpoint => {
                if !self.is_superuser() {
                    return Err(SqlError::new(
                        "42501",
                        "must be superuser or have privileges of pg_checkpoint to do CHECKPOINT",
                    ));
                }
                // As PostgreSQL's (allowed in a transaction block too): write every dirty
                // page, then checkpoint, so the log before this point can go.
                let store = self.catalog.engine().store();
                store.flush_all().map_err(tierdb_engine::EngineError::from)?;
                store.checkpoint().map_err(tierdb_engine::EngineError::from)?;
                Ok(Output::command(CommandTag::Checkpoint))
            }
            FrontStatement::Copy(copy) => self.copy(copy, sink),
            FrontStatement::Cursor(cursor) => self.cursor(cursor),
            FrontStatement::Sequence(sequence) => self.sequence_statement(sequence),
            FrontStatement::AlterIdentity(alter) => self.alter_identity_statement(alter),
        }
    }

    pub(crate) fn copy(
        &mut self,
        copy: &CopyStatement,
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        if let CopySource::Table { schema, name, .. } = &copy.source {
            let name = self.copy_table_name(schema, name)?;
            if self.catalog.table(&name).is_some_and(|table| table.is_view()) {
                // PostgreSQL's words: COPY (SELECT ...) TO reads a view.
                let direction = if copy.from { "to" } else { "from" };
                let message = format!("cannot copy {direction} view \"{name}\"");
                return Err(SqlError::new("42809", message));
            }
        }
        match (&copy.source, copy.from) {
            (CopySource::Table { schema, name, columns }, true) => {
                let name = &self.copy_table_name(schema, name)?;
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
                    CopySource::Table { schema, name, columns } => {
                        let name = &self.copy_table_name(schema, name)?;
                        // Quoted: the names are the front parser's text, which may hold any
                        // character (`COPY "t x" TO STDOUT` must not read table t as x).
                        let list = match columns.is_empty() {
                            true => "*".to_string(),
                            false => columns
                                .iter()
                                .map(|column| quoted(column))
                                .collect::<Vec<_>>()
                                .join(", "),
                        };
                        // Qualified: the search_path may be empty (pg_dump empties it).
                        let table = crate::catalog::qualified_sql_name(name);
                        format!("SELECT {list} FROM {table}")
                    }
                    CopySource::Query(query) => query.clone(),
                };
                let mut prepared = self.prepare(&sql, &[])?;
                let Some(statement) = prepared.statement.clone() else {
                    return Err(SqlError::syntax("COPY query"));
                };
                // The query that runs is checked itself, whatever COPY's own check found.
                self.check_privileges(&statement)?;
                let bound = match &*statement {
                    Statement::Sql(statement) => {
                        // COPY (INSERT ... RETURNING) TO and a query with data-modifying
                        // statements in WITH write: READ ONLY refuses them as PostgreSQL.
                        if let Some(command) =
                            self.read_only().then(|| txn_modes::write_command(statement)).flatten()
                        {
                            return Err(txn_modes::read_only_error(&command));
                        }
                        self.bound_for(statement, &mut prepared)?
                    }
                    Statement::Front(_) => return Err(SqlError::syntax("COPY query")),
                };
                self.copy_out(copy, &bound.1, sink)
            }
            (CopySource::Query(_), true) => Err(SqlError::syntax("COPY (query) FROM is not valid")),
        }
    }
}

impl Session {
    /// LOCK TABLE in a block, in the modes that do not block reads or writes (ACCESS SHARE
    /// to SHARE UPDATE EXCLUSIVE: they conflict with DDL, which takes ACCESS EXCLUSIVE): the
    /// tables are claimed as DDL claims them, so other sessions' DDL on them waits until
    /// the block ends. A claim also makes another session's LOCK wait (PostgreSQL lets those
    /// modes share): stronger, never weaker. The modes that block writes are 0A000.
    pub(super) fn lock_tables(&mut self, lock: &ast::Lock) -> Result<Output> {
        use ast::LockTableMode as Mode;
        let mode = lock.lock_mode.clone().unwrap_or(Mode::AccessExclusive);
        if !matches!(
            mode,
            Mode::AccessShare | Mode::RowShare | Mode::RowExclusive | Mode::ShareUpdateExclusive
        ) {
            return Err(SqlError::unsupported(format!(
                "LOCK TABLE IN {mode} MODE is not supported (tierdb takes ACCESS SHARE to SHARE UPDATE EXCLUSIVE)"
            )));
        }
        if lock.nowait {
            return Err(SqlError::unsupported("LOCK TABLE ... NOWAIT is not supported"));
        }
        let tables = lock
            .tables
            .iter()
            .map(|target| self.namespace().existing_table(&target.name))
            .collect::<Result<Vec<String>>>()?;
        self.require_open_block("LOCK TABLE")?;
        self.begin_transaction()?;
        self.claim_for_ddl(&tables)?;
        Ok(Output::command(CommandTag::LockTable))
    }

    /// The user table COPY names (`schema` as the front parser split it off): 3F000 for a
    /// schema that does not exist, as in PostgreSQL.
    pub(super) fn copy_table_name(&self, schema: &[String], name: &str) -> Result<String> {
        // Quoted parts: the front parser has already folded case.
        let parts = schema.iter().map(String::as_str).chain([name]);
        let object = ast::ObjectName(
            parts
                .map(|part| ast::ObjectNamePart::Identifier(ast::Ident::with_quote('"', part)))
                .collect(),
        );
        self.namespace().existing_table(&object)
    }
}

/// `name` as a quoted identifier (a `"` inside doubled), read back exactly as written.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Session {
    /// DISCARD (PostgreSQL's discard.c). ALL is CLOSE ALL, RESET ALL, DEALLOCATE ALL,
    /// pg_advisory_unlock_all, DISCARD SEQUENCES and DISCARD TEMP (UNLISTEN holds nothing
    /// in tierdb), refused inside a block (25001). PLANS has nothing to drop: a plan is
    /// bound again whenever DDL moved the catalog, so no cached plan outlives what it read.
    /// TEMP drops the session's temp tables (temp_tables.rs).
    pub(crate) fn discard(&mut self, target: DiscardTarget) -> Result<Output> {
        let tag = match target {
            DiscardTarget::All => {
                if self.state != BlockState::Idle {
                    return Err(SqlError::new(
                        "25001",
                        "DISCARD ALL cannot run inside a transaction block",
                    ));
                }
                self.cursors.clear();
                self.reset_setting("all")?;
                self.deallocate_all();
                self.sequence_values.borrow_mut().clear();
                self.catalog.advisory_locks().release_all_session(self.session_id);
                self.drop_temp_tables()?;
                CommandTag::DiscardAll
            }
            DiscardTarget::Plans => CommandTag::DiscardPlans,
            DiscardTarget::Sequences => {
                self.sequence_values.borrow_mut().clear();
                CommandTag::DiscardSequences
            }
            DiscardTarget::Temporary => {
                self.drop_temp_tables()?;
                CommandTag::DiscardTemp
            }
        };
        Ok(Output::command(tag))
    }
}
