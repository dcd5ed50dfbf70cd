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
//! differ where one part reads a table another writes: that statement is refused (0A000)
//! instead. INSERTs into one table from several parts read nothing of it and run as in
//! PostgreSQL.

use std::collections::HashSet;
use std::ops::ControlFlow;

use super::recursive::{named_columns, ModifyingCte};
use super::*;

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
        self.refuse_overlapping_parts(query)?;
        self.ctes.push(frame);
        let outcome = self.statement_with_parts(query);
        self.ctes.pop();
        outcome
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

    /// 0A000 when a table one part of the statement writes is read by another part (see
    /// the module comment). The parts: each data-modifying CTE and the main statement. A
    /// plain CTE is read where it is referenced (the main statement or a data-modifying
    /// CTE, which both run after every data-modifying CTE before them): it counts as a
    /// reader of what any data-modifying CTE writes, but never of what the main statement
    /// writes (it reads the table before the main statement writes, as in PostgreSQL).
    fn refuse_overlapping_parts(&self, query: &ast::Query) -> Result<()> {
        let ctes = query.with.as_ref().map_or(&[][..], |with| &with.cte_tables[..]);
        // Each part's statement, what it reads, and whether it is a plain CTE.
        let mut parts: Vec<(&ast::SetExpr, HashSet<String>, bool)> = ctes
            .iter()
            .map(|cte| {
                let body = cte.query.body.as_ref();
                (body, self.tables_read(body, &*cte.query), !is_data_modifying(body))
            })
            .collect();
        parts.push((&query.body, self.tables_read(&query.body, &*query.body), false));
        let main = parts.len() - 1;
        for (index, (part, _, _)) in parts.iter().enumerate() {
            let Some(written) = self.written_table(part) else { continue };
            let read_elsewhere = parts.iter().enumerate().any(|(other, (_, reads, plain))| {
                other != index && !(index == main && *plain) && reads.contains(&written)
            });
            if read_elsewhere {
                return Err(overlap(&written));
            }
        }
        Ok(())
    }

    /// The table an INSERT, UPDATE or DELETE writes (None for a query, or a name that does
    /// not resolve: binding reports it).
    fn written_table(&self, body: &ast::SetExpr) -> Option<String> {
        let name = match body {
            ast::SetExpr::Insert(ast::Statement::Insert(insert)) => match &insert.table {
                ast::TableObject::TableName(name) => name,
                _ => return None,
            },
            ast::SetExpr::Update(ast::Statement::Update(update)) => match &update.table.relation {
                ast::TableFactor::Table { name, .. } => name,
                _ => return None,
            },
            ast::SetExpr::Delete(ast::Statement::Delete(delete)) => {
                let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                    &delete.from;
                match &from.first()?.relation {
                    ast::TableFactor::Table { name, .. } => name,
                    _ => return None,
                }
            }
            _ => return None,
        };
        self.table(name).ok().map(|table| table.name.clone())
    }

    /// The tables a part reads: every relation `whole` (its query) names, views by the
    /// tables they read, an INSERT's target aside unless ON CONFLICT reads it (`body`: the
    /// part's statement).
    fn tables_read(&self, body: &ast::SetExpr, whole: &impl ast::Visit) -> HashSet<String> {
        let skipped = match body {
            ast::SetExpr::Insert(ast::Statement::Insert(insert)) if insert.on.is_none() => {
                self.written_table(body)
            }
            _ => None,
        };
        let mut tables = HashSet::new();
        let mut skipped = skipped;
        let _ = ast::visit_relations(whole, |name| {
            if let Ok(table) = self.table(name) {
                if skipped.as_deref() == Some(table.name.as_str()) {
                    skipped = None;
                } else {
                    self.add_base_tables(&table, &mut tables);
                }
            }
            ControlFlow::<()>::Continue(())
        });
        tables
    }

    /// `table`, or the tables a view reads, into `tables`.
    fn add_base_tables(&self, table: &TableMeta, tables: &mut HashSet<String>) {
        let Some(view) = &table.view else {
            tables.insert(table.name.clone());
            return;
        };
        for dependency in &view.depends_on {
            if let Some(relation) = self.catalog.table(&dependency.relation) {
                if tables.insert(relation.name.clone()) && relation.view.is_some() {
                    self.add_base_tables(&relation, tables);
                }
            }
        }
    }
}

fn overlap(table: &str) -> SqlError {
    SqlError::unsupported(format!(
        "a data-modifying statement in WITH writing table \"{table}\" that another part of the statement reads is not supported (tierdb has no statement snapshot for it)"
    ))
}
