//! Data-modifying statements in WITH (PostgreSQL's 7.8.4) and INSERT, UPDATE or DELETE
//! under a WITH.
//!
//! Each INSERT, UPDATE or DELETE of the statement's own WITH list is bound once, in the
//! list's order, and runs exactly once to completion before the main statement, whether or
//! not anything reads its CTE; its RETURNING rows are kept as a working table (a row store:
//! memory, then the temp space) that each reference reads (`WorkTableScan` with `cte`).
//! A data-modifying statement in any other WITH list is PostgreSQL's 0A000 (`cte_frame`).
//!
//! PostgreSQL runs every part of the statement on one snapshot: no part sees another's
//! changes to a table, only RETURNING passes rows on. tierdb's statements see their own
//! writes (no command ids, design 008), so running the parts one after the other would
//! differ where one part reads a table a part before it writes (the main statement runs
//! last): that statement is refused (0A000) instead, the reads taken from the bound plans
//! (`plan/reads.rs`). INSERTs into one table from several parts read nothing of it and run
//! as in PostgreSQL. The FOREIGN KEY checks and actions of every part run at the end of the
//! whole statement, as PostgreSQL's triggers (`Ctx::deferred_events`).

use super::recursive::{named_columns, ModifyingCte};
use super::*;
use crate::plan::{modifying_reads, plan_reads, Reads};

/// The statement under a WITH: a query, or an INSERT, UPDATE or DELETE.
pub(crate) enum MainStatement {
    Query(Box<Plan>),
    Modify(Box<ModifyingPlan>),
}

/// Whether `query` needs `Binder::statement_with`: its own WITH list holds a data-modifying
/// statement or its body is one.
pub(crate) fn needs_statement_with(query: &ast::Query) -> bool {
    is_data_modifying(&query.body)
        || query.with.as_ref().is_some_and(|with| {
            with.cte_tables.iter().any(|cte| is_data_modifying(&cte.query.body))
        })
}

impl Binder<'_> {
    /// A statement whose WITH list holds data-modifying statements, or whose body is one:
    /// its WITH list's statements in order, and its main statement.
    pub(crate) fn statement_with(
        &mut self,
        query: &ast::Query,
    ) -> Result<(Vec<CteStatement>, MainStatement)> {
        depth::check_stack_depth()?;
        let frame = self.cte_frame_at(query.with.as_ref(), true)?;
        self.ctes.push(frame);
        let outcome = self.statement_with_parts(query);
        self.ctes.pop();
        let (statements, main) = outcome?;
        refuse_overlapping_parts(&statements, &main)?;
        Ok((statements, main))
    }

    fn statement_with_parts(
        &mut self,
        query: &ast::Query,
    ) -> Result<(Vec<CteStatement>, MainStatement)> {
        let mut statements = Vec::new();
        let ctes = query.with.as_ref().map_or(&[][..], |with| &with.cte_tables[..]);
        for cte in ctes.iter().filter(|cte| is_data_modifying(&cte.query.body)) {
            let name = ident(&cte.alias.name);
            let frame = self.ctes.last().expect("pushed by statement_with").id;
            self.ctes_in_progress.push((frame, name.clone()));
            let outcome = self.nested_modifying(&cte.query);
            self.ctes_in_progress.pop();
            let statement = outcome?;
            let definition = &self.ctes.last().expect("pushed").definitions[&name];
            let modifying = definition.modifying.as_ref().expect("a data-modifying CTE");
            let columns = statement.returning().map(|(_, columns)| columns.clone());
            assert!(modifying.returning.set(columns).is_ok(), "each CTE is bound once");
            statements.push(CteStatement { work_table: modifying.work_table, statement });
        }
        let main = if is_data_modifying(&query.body) {
            if query.order_by.is_some() || query.limit_clause.is_some() || query.fetch.is_some() {
                return Err(SqlError::syntax("syntax error at or near \"ORDER\""));
            }
            MainStatement::Modify(Box::new(self.modifying_statement(&query.body)?))
        } else {
            let plan = self.query_body(query)?;
            MainStatement::Query(Box::new(self.finish_query(plan)?))
        };
        Ok((statements, main))
    }

    /// A data-modifying CTE's query: its statement under the query's own WITH list (where
    /// another data-modifying statement is not allowed).
    fn nested_modifying(&mut self, query: &ast::Query) -> Result<ModifyingPlan> {
        let frame = self.cte_frame(query.with.as_ref())?;
        self.ctes.push(frame);
        let outcome = self.modifying_statement(&query.body);
        self.ctes.pop();
        outcome
    }

    fn modifying_statement(&mut self, body: &ast::SetExpr) -> Result<ModifyingPlan> {
        Ok(match body {
            ast::SetExpr::Insert(ast::Statement::Insert(insert)) => {
                ModifyingPlan::Insert(bind_insert(self, insert)?)
            }
            ast::SetExpr::Update(ast::Statement::Update(update)) => {
                ModifyingPlan::Update(bind_update(self, update)?)
            }
            ast::SetExpr::Delete(ast::Statement::Delete(delete)) => {
                ModifyingPlan::Delete(bind_delete(self, delete)?)
            }
            _ => return Err(SqlError::unsupported("MERGE is not supported")),
        })
    }

    /// A reference to a data-modifying CTE: a scan of its RETURNING rows. A CTE not bound
    /// yet (later in the list, or itself) is not in scope: the name is a table's.
    pub(crate) fn modifying_cte_reference(
        &mut self,
        name: &str,
        column_names: &[String],
        modifying: &ModifyingCte,
    ) -> Result<Option<Plan>> {
        let Some(returning) = modifying.returning.get() else { return Ok(None) };
        let Some(columns) = returning else {
            return Err(SqlError::unsupported(format!(
                "WITH query \"{name}\" does not have a RETURNING clause"
            )));
        };
        let kind = PlanKind::WorkTableScan {
            work_table: modifying.work_table,
            name: name.into(),
            cte: true,
        };
        let plan = self.plan(kind, columns.clone());
        named_columns(plan, name, column_names).map(Some)
    }
}

/// 0A000 when a part of the statement reads a table that a part run before it writes (see
/// the module comment). The parts run in order: the data-modifying CTEs in the list's
/// order, then the main statement; a plain CTE is read by the parts that reference it (its
/// scans are in their plans). Reading a table that only a later part writes is right: the
/// reader ran to completion first, on what PostgreSQL's one snapshot shows. What is read is
/// taken from the bound plans, so views, subqueries in any clause and CTE names that
/// shadow tables count as they run. FOREIGN KEY checks and actions need no place here:
/// they run after every part (`Ctx::deferred_events`), as in PostgreSQL.
fn refuse_overlapping_parts(statements: &[CteStatement], main: &MainStatement) -> Result<()> {
    // Each part in the order it runs: what it reads, and the table it writes.
    let mut parts: Vec<(Reads, Option<&str>)> = statements
        .iter()
        .map(|part| (modifying_reads(&part.statement), Some(&*part.statement.table().name)))
        .collect();
    parts.push(match main {
        MainStatement::Query(plan) => {
            let mut reads = Reads::default();
            plan_reads(plan, &mut reads);
            (reads, None)
        }
        MainStatement::Modify(modify) => (modifying_reads(modify), Some(&*modify.table().name)),
    });
    // PostgreSQL runs the main statement first and the parts nothing reads after it, the
    // parts it reads as it reads them: tierdb's order gives other sequence values.
    if parts.iter().filter(|(reads, _)| reads.sequences).count() > 1 {
        return Err(SqlError::unsupported(
            "data-modifying statements in WITH with sequence functions (nextval, a serial \
             column's default) in more than one part are not supported (tierdb runs the parts \
             in another order than PostgreSQL)",
        ));
    }
    let mut written: Vec<&str> = Vec::new();
    for (reads, writes) in parts {
        if let Some(table) = written.iter().find(|table| reads.tables.contains(**table)) {
            return Err(overlap(table));
        }
        written.extend(writes);
    }
    refuse_shared_targets(statements, main)
}

/// 0A000 when two parts write one table and one of them is not a plain INSERT: PostgreSQL
/// runs them on one snapshot (a unique check of one sees the rows another deletes, an
/// UPDATE and a DELETE of one row take effect once), tierdb one after the other.
fn refuse_shared_targets(statements: &[CteStatement], main: &MainStatement) -> Result<()> {
    let mut writers: Vec<&ModifyingPlan> = statements.iter().map(|part| &part.statement).collect();
    if let MainStatement::Modify(modify) = main {
        writers.push(modify);
    }
    let plain_insert = |plan: &ModifyingPlan| matches!(plan, ModifyingPlan::Insert(insert) if insert.on_conflict.is_none());
    for (index, writer) in writers.iter().enumerate() {
        let name = &writer.table().name;
        let shared = writers[index + 1..].iter().find(|other| other.table().name == *name);
        if let Some(other) = shared {
            if !(plain_insert(writer) && plain_insert(other)) {
                return Err(SqlError::unsupported(format!(
                    "data-modifying statements in WITH writing table \"{name}\" in two parts, \
                     not both plain INSERTs, are not supported (tierdb runs them one after the \
                     other, PostgreSQL on one snapshot)"
                )));
            }
        }
    }
    Ok(())
}

fn overlap(table: &str) -> SqlError {
    SqlError::unsupported(format!(
        "a data-modifying statement in WITH writing table \"{table}\" that another part of the statement reads is not supported (tierdb has no statement snapshot for it)"
    ))
}
