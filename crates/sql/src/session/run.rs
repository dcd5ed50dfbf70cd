//! Running one statement: binding (cached per catalog version), execution, EXPLAIN.

use std::cell::RefCell;

use super::*;
use crate::output::CommandTag;

impl Session {
    pub(crate) fn run_statement(
        &mut self,
        statement: &Statement,
        prepared: &mut Prepared,
        params: &[Datum],
        sink: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        self.install_time_zone();
        // now() and date/time input's `now` read this time, in binding and in execution.
        self.statement_time_micros =
            self.checked_statement_time.take().unwrap_or_else(types::now_micros);
        types::install_statement_time(self.statement_time_micros);
        self.check_privileges(statement)?;
        let sql = match statement {
            Statement::Front(FrontStatement::Copy(copy)) if copy.from && self.read_only() => {
                return Err(txn_modes::read_only_error("COPY FROM"));
            }
            Statement::Front(front) => return self.front(front, sink),
            Statement::Sql(sql) => sql,
        };
        if self.state != BlockState::Idle && !self.implicit_block {
            roles::refuse_role_ddl_in_block(sql)?;
        }
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
                // Before binding: the other transaction may take its columns back.
                self.wait_for_column_changes(sql)?;
                let bound = self.bound_for(sql, prepared)?;
                check_parameters(&prepared.parameter_types, params)?;
                let params = coerce_parameters(&prepared.parameter_types, params)?;
                self.in_transaction(|session| {
                    session.run_bound_into(&bound.1, &params, false, sink).map(|(output, _)| output)
                })
            }
            ast::Statement::Explain { statement: inner, analyze, options, .. } => {
                self.explain(inner, *analyze, options.as_deref(), params)
            }
            ast::Statement::CreateTable(create) => {
                let tables = [self.new_table_name(create)?.0];
                self.transactional_ddl(&tables, |session| session.create_table(create))
            }
            ast::Statement::CreateIndex(create) => {
                let tables = [self.namespace().existing_table(&create.table_name)?];
                self.transactional_ddl(&tables, |session| session.create_index(create))
            }
            ast::Statement::CreateRole(create) => self.create_role(create),
            ast::Statement::Grant(grant) => {
                let refused = grant.with_grant_option || grant.granted_by.is_some();
                let refused = refused.then_some("WITH GRANT OPTION and GRANTED BY are");
                let (privileges, objects) = (&grant.privileges, grant.objects.as_ref());
                self.grant_or_revoke(privileges, objects, &grant.grantees, true, refused)
            }
            ast::Statement::Revoke(revoke) => {
                let refused = revoke.grant_option_for || revoke.granted_by.is_some();
                let refused = refused.then_some("GRANT OPTION FOR and GRANTED BY are");
                let (privileges, objects) = (&revoke.privileges, revoke.objects.as_ref());
                self.grant_or_revoke(privileges, objects, &revoke.grantees, false, refused)
            }
            ast::Statement::AlterRole { name, operation } => self.alter_role(name, operation),
            ast::Statement::Drop {
                object_type: ast::ObjectType::Role | ast::ObjectType::User,
                if_exists,
                names,
                ..
            } => self.drop_roles(*if_exists, names),
            ast::Statement::Drop { object_type, if_exists, names, cascade, .. } => {
                let tables = self.drop_targets(object_type, names);
                self.transactional_ddl(&tables, |session| {
                    session.drop(object_type, *if_exists, names, *cascade)
                })
            }
            ast::Statement::AlterTable(alter) => {
                let tables = match self.namespace().existing_table(&alter.name) {
                    Ok(table) => [table],
                    // IF EXISTS of a missing table: nothing to do (PostgreSQL adds a NOTICE).
                    Err(error) if alter.if_exists && error.sqlstate == "42P01" => {
                        return Ok(Output::command(CommandTag::AlterTable))
                    }
                    Err(error) => return Err(error),
                };
                self.transactional_ddl(&tables, |session| session.alter_table(alter))
            }
            ast::Statement::Truncate(truncate) => {
                let names = truncate
                    .table_names
                    .iter()
                    .map(|target| self.namespace().existing_table(&target.name))
                    .collect::<Result<Vec<String>>>()?;
                let cascade = truncate.cascade == Some(ast::CascadeOption::Cascade);
                let names = self.truncate_targets(&names, cascade)?;
                self.claim_for_ddl(&names)?;
                let outcome = self.truncate(&names);
                if self.state == BlockState::Idle {
                    self.end_transaction_ddl(outcome.is_ok());
                }
                outcome
            }
            ast::Statement::Lock(lock) => self.lock_tables(lock),
            ast::Statement::Set(set) => self.set(set),
            ast::Statement::ShowVariable { variable } => self.show(variable),
            ast::Statement::Discard { object_type } => self.discard(object_type.into()),
            ast::Statement::Deallocate { .. }
            | ast::Statement::Prepare { .. }
            | ast::Statement::Execute { .. } => self.named_statement_command(sql, sink),
            // LISTEN is refused (0A000, below), so no session listens to any channel and
            // UNLISTEN, which connection pools send on release, has nothing to stop.
            ast::Statement::UNLISTEN { .. } => Ok(Output::command(CommandTag::Unlisten)),
            ast::Statement::CreateSchema { schema_name, if_not_exists, .. } => {
                self.create_schema(schema_name, *if_not_exists)
            }
            ast::Statement::CreateExtension(create) => create_extension(&create.name.value),
            other => self.view_statement(other),
        }
    }

    /// Before an INSERT or UPDATE: waits while another session's open transaction has
    /// changed the columns of the table it writes (`Catalog::wait_for_column_changes`).
    fn wait_for_column_changes(&self, sql: &ast::Statement) -> Result<()> {
        let name = match sql {
            ast::Statement::Insert(ast::Insert {
                table: ast::TableObject::TableName(name),
                ..
            }) => name,
            ast::Statement::Update(update) => match &update.table.relation {
                ast::TableFactor::Table { name, .. } => name,
                _ => return Ok(()),
            },
            // DELETE writes no row values; a query writes nothing.
            _ => return Ok(()),
        };
        // A name that does not resolve fails at binding, with its own error.
        let Ok(table) = self.namespace().existing_table(name) else { return Ok(()) };
        let limits = self.wait_limits();
        self.catalog.wait_for_column_changes(self.session_id, &table, &limits)
    }

    pub(crate) fn bound_for(
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
    pub(crate) fn run_bound(
        &mut self,
        bound: &Bound,
        params: &[Datum],
        analyze: bool,
    ) -> Result<(Output, Vec<NodeStats>)> {
        self.run_bound_into(bound, params, analyze, None)
    }

    /// As `run_bound`; a query's rows go to `sink` when there is one. DML ... RETURNING
    /// still collects its rows: PostgreSQL too runs it to completion before sending any.
    pub(crate) fn run_bound_into(
        &mut self,
        bound: &Bound,
        params: &[Datum],
        analyze: bool,
        sink: Option<&mut dyn RowSink>,
    ) -> Result<(Output, Vec<NodeStats>)> {
        self.install_time_zone();
        // current_user follows the role's OID: a renamed role shows its new name.
        let role = self.current_role();
        let user = role.as_ref().map_or(self.user.as_str(), |role| role.name.as_str());
        let superuser = role.as_ref().is_some_and(|role| role.superuser);
        let settings_view = settings::settings_view!(self, superuser);
        let info = SessionInfo {
            database: &self.database,
            user,
            backend_pid: self.backend_pid,
            session_id: self.session_id,
            catalog: &self.catalog,
            vector_scan: self.vector_scan_options(),
            hidden_tables: self.hidden_tables(),
            public_on_path: self.namespace().public_on_path,
            referential_checks_off: self.referential_checks_off,
            settings: &settings_view,
            setting_changes: RefCell::default(),
            sequence_values: &self.sequence_values,
            sequence_refs: RefCell::default(),
        };
        let budget = self.memory_budget();
        let limits = self.wait_limits();
        let transaction = self.transaction.as_mut().expect("statement runs in a transaction");
        transaction.set_wait_limits(limits.clone());
        // The time run_statement set, which date/time input's `now` read in binding (this
        // may be another thread: the connection's executor).
        let statement_time = self.statement_time_micros;
        types::install_statement_time(statement_time);
        let mut ctx = Ctx {
            txn: Some(transaction),
            params,
            outer: Vec::new(),
            subquery_cache: HashMap::new(),
            stats: Vec::new(),
            analyze,
            budget,
            session: &info,
            statement_time_micros: statement_time,
            interrupt: Some(&limits),
            work_tables: Default::default(),
            deferred_events: None,
        };
        let output = run_statement(bound, &mut ctx, sink)?;
        let stats = std::mem::take(&mut ctx.stats);
        drop(ctx);
        let changes = info.setting_changes.into_inner();
        self.apply_setting_changes(changes)?;
        Ok((output, stats))
    }

    pub(crate) fn explain(
        &mut self,
        inner: &ast::Statement,
        analyze: bool,
        options: Option<&[ast::UtilityOption]>,
        params: &[Datum],
    ) -> Result<Output> {
        let mut analyze = analyze;
        let mut buffers = false;
        let mut costs = true;
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
                // COSTS: estimated rows (tierdb prints no cost units).
                "costs" => costs = enabled,
                // Details of the text layout that tierdb's plans do not have (output lists,
                // settings, WAL counters): the plan shown is the same.
                "verbose" | "settings" | "wal" | "timing" | "summary" => {}
                "format" => {
                    let format = option.arg.as_ref().map(|arg| arg.to_string().to_lowercase());
                    if format.as_deref() != Some("text") {
                        let format = format.unwrap_or_default().to_uppercase();
                        return Err(SqlError::unsupported(format!(
                            "EXPLAIN (FORMAT {format}) is not supported"
                        )));
                    }
                }
                other => {
                    return Err(SqlError::syntax(format!(
                        "unrecognized EXPLAIN option \"{other}\""
                    )))
                }
            }
        }
        let (bound, parameters) = self.bind(inner, &[])?.ok_or_else(|| {
            SqlError::unsupported("EXPLAIN supports queries, INSERT, UPDATE and DELETE")
        })?;
        let params = coerce_parameters(&parameters, params)?;
        if matches!(bound, Bound::With { ref ctes, .. } if !ctes.is_empty()) {
            return Err(SqlError::unsupported(
                "EXPLAIN of a statement with data-modifying statements in WITH is not supported",
            ));
        }
        let root = bound_plan(&bound);
        let catalog = Arc::clone(&self.catalog);
        let evaluator = crate::exec::PlanningEvaluator { catalog: &catalog };
        let estimator =
            crate::optimize::Estimator { catalog: &catalog, evaluator: Some(&evaluator) };
        let estimate = |plan: &Plan| estimator.rows(plan);
        let estimate = costs.then_some(&estimate as explain::Estimate<'_>);
        let with_modify = |lines: Vec<String>| match modify_node(&bound) {
            Some((title, details)) => explain::render_modify(title, details, lines),
            None => lines,
        };
        let lines = if analyze {
            let started = Instant::now();
            let (_, stats) =
                self.in_transaction(|session| session.run_bound(&bound, &params, true))?;
            let mut lines = with_modify(explain::render(root, Some(&stats), buffers, estimate));
            lines.push(format!(
                "Execution Time: {:.3} ms",
                started.elapsed().as_secs_f64() * 1000.0
            ));
            lines
        } else {
            with_modify(explain::render(root, None, false, estimate))
        };
        let rows = lines.into_iter().map(|line| vec![Datum::Text(line)]).collect::<Vec<_>>();
        let columns = vec![computed_column("QUERY PLAN", SqlType::Text)];
        Ok(Output::Rows { columns, rows, tag: CommandTag::Explain })
    }

    // ----- DDL -----
}

/// CREATE EXTENSION: pgvector's `vector` is built in, so creating it succeeds (with or
/// without IF NOT EXISTS, as scripts written for pgvector expect); any other extension is
/// missing as on a PostgreSQL 15 server without its files (58P01).
fn create_extension(name: &str) -> Result<Output> {
    if name == "vector" {
        return Ok(Output::command(CommandTag::CreateExtension));
    }
    Err(SqlError::new(
        "58P01",
        format!(
            "could not open extension control file \"/usr/share/postgresql/15/extension/{name}.control\": No such file or directory"
        ),
    ))
}

impl Session {
    /// Deletes every row of `table` in the current transaction (TRUNCATE in a block).
    /// TRUNCATE of `names` (claimed by the caller).
    fn truncate(&mut self, names: &[String]) -> Result<Output> {
        if self.state != BlockState::Idle {
            // Inside a block TRUNCATE must roll back with it: the rows are deleted in the
            // block's transaction (slower than the fresh trees of an autocommit TRUNCATE,
            // and rows committed after a REPEATABLE READ snapshot stay).
            for name in names {
                self.delete_all_rows(name)?;
            }
            return Ok(Output::command(CommandTag::TruncateTable));
        }
        let _guard = self.catalog.lock_ddl();
        for name in names {
            self.catalog.truncate_table(name)?;
        }
        Ok(Output::command(CommandTag::TruncateTable))
    }

    /// The tables a DROP changes, as far as its names resolve (the DROP itself reports the
    /// names that do not): the tables, or the tables of the indexes.
    fn drop_targets(
        &self,
        object_type: &ast::ObjectType,
        names: &[ast::ObjectName],
    ) -> Vec<String> {
        let namespace = self.namespace();
        let resolved = names.iter().filter_map(|name| namespace.existing_table(name).ok());
        match object_type {
            ast::ObjectType::Table | ast::ObjectType::View => resolved.collect(),
            ast::ObjectType::Index => {
                let tables = self.catalog.tables();
                resolved
                    .filter_map(|index| {
                        tables
                            .iter()
                            .find(|table| table.indexes.iter().any(|known| known.name == index))
                            .map(|table| table.name.clone())
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    fn delete_all_rows(&mut self, table: &str) -> Result<()> {
        if self.catalog.table(table).is_none() {
            return Err(SqlError::undefined_table(table));
        }
        let sql = format!("DELETE FROM public.\"{}\"", table.replace('"', "\"\""));
        let mut prepared = self.prepare(&sql, &[])?;
        // Every table referencing this one is truncated by the same statement
        // (truncate_targets), so no FOREIGN KEY check or action applies.
        self.referential_checks_off = true;
        let outcome = self.execute_prepared(&mut prepared, &[]);
        self.referential_checks_off = false;
        outcome.map(|_| ())
    }
}

/// Runs a bound statement in `ctx`: a WITH list's data-modifying statements first, each to
/// completion with its RETURNING rows kept for the references to its CTE, then the main
/// statement (`bind/modifying_with.rs`).
fn run_statement(
    bound: &Bound,
    ctx: &mut Ctx<'_>,
    sink: Option<&mut dyn RowSink>,
) -> Result<Output> {
    Ok(match bound {
        Bound::Query(plan) if sink.is_some() => {
            stream::rows_into(plan, ctx, sink.expect("checked"))?
        }
        Bound::Query(plan) => {
            let rows = exec::collect(plan, ctx, &[])?;
            Output::Rows { columns: plan.columns.clone(), rows, tag: CommandTag::Select }
        }
        Bound::Insert(insert) => run_insert(insert, ctx)?,
        Bound::Update(update) => run_update(update, ctx)?,
        Bound::Delete(delete) => run_delete(delete, ctx)?,
        Bound::With { ctes, main } => {
            // Every part's FOREIGN KEY checks and actions run at the end of the whole
            // statement (PostgreSQL's AFTER triggers): a part may insert a child row whose
            // parent a later part inserts, or delete a parent whose children a later part
            // deletes.
            let deferred = ctx.deferred_events.replace(Vec::new());
            assert!(deferred.is_none(), "a WITH's parts do not nest");
            for cte in ctes {
                let output = match &cte.statement {
                    ModifyingPlan::Insert(insert) => run_insert(insert, ctx)?,
                    ModifyingPlan::Update(update) => run_update(update, ctx)?,
                    ModifyingPlan::Delete(delete) => run_delete(delete, ctx)?,
                };
                if let Output::Rows { rows, .. } = output {
                    let mut store = exec::spill::RowStore::new(ctx);
                    for row in rows {
                        store.push(row)?;
                    }
                    store.seal()?;
                    ctx.work_tables.insert(cte.work_table, store);
                }
            }
            let output = run_statement(main, ctx, sink)?;
            let deferred = ctx.deferred_events.take().expect("set above");
            for (table, events) in deferred {
                events.finish(&table, ctx)?;
            }
            output
        }
    })
}
