//! CREATE TABLE ... AS query (and SELECT ... INTO, which the parser turns into it): the
//! table takes the query's column names and types (an untyped literal's column is text, as
//! in PostgreSQL), then the query's rows are inserted through INSERT's path. The command
//! tag is `SELECT n`. The table's definition and its rows are written by the statement's
//! transaction (session/transactional_ddl.rs): if the insert fails, or a crash comes before
//! the commit, the table is gone with them.

use super::*;
use crate::catalog::COLUMNS_MAX;
use crate::output::CommandTag;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

impl Session {
    pub(crate) fn create_table_as(
        &mut self,
        name: &str,
        create: &ast::CreateTable,
        query: &ast::Query,
    ) -> Result<Output> {
        if !create.columns.is_empty() || !create.constraints.is_empty() {
            return Err(SqlError::unsupported(
                "column definitions or constraints in CREATE TABLE AS are not supported",
            ));
        }
        if crate::bind::needs_statement_with(query) {
            // PostgreSQL runs them; tierdb binds CREATE TABLE AS's query as a plain query.
            return Err(SqlError::unsupported(
                "CREATE TABLE AS with data-modifying statements in WITH is not supported",
            ));
        }
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        let evaluator = crate::exec::PlanningEvaluator { catalog: &self.catalog };
        binder.evaluator = Some(&evaluator);
        let plan = binder.query(query)?;
        if !binder.finish_parameters().is_empty() {
            return Err(SqlError::new("42P02", "there is no parameter $1"));
        }
        let columns = query_columns(&plan.columns)?;
        let last_id = binder.last_id();
        {
            let catalog = Arc::clone(&self.catalog);
            let _guard = catalog.lock_ddl();
            if self.catalog.table(name).is_some() {
                let shown = crate::catalog::relation_name(name);
                return Err(SqlError::new("42P07", format!("relation \"{shown}\" already exists")));
            }
            let meta = TableMeta::with_columns(name.into(), columns);
            let owner = self.temp_owner();
            catalog.create_table(self.ddl_transaction(), owner, meta)?;
            self.own_new_table(name)?;
        }
        let rows = self.insert_bound_rows(name, plan, last_id)?;
        Ok(Output::Command { tag: CommandTag::Select, rows })
    }

    /// Inserts the rows of `plan` (the query, bound before the table existed, so it reads
    /// what its names meant then, never the new table: `CREATE TEMP TABLE t AS ... FROM t`
    /// reads the permanent t) in the statement's transaction; returns the rows inserted.
    fn insert_bound_rows(&mut self, name: &str, plan: Plan, last_id: usize) -> Result<u64> {
        let quoted = crate::catalog::qualified_sql_name(name);
        let statement = Parser::parse_sql(
            &PostgreSqlDialect {},
            &format!("INSERT INTO {quoted} DEFAULT VALUES"),
        )
        .map_err(|error| SqlError::internal(format!("CREATE TABLE AS insert: {error}")))?
        .pop()
        .ok_or_else(|| SqlError::internal("CREATE TABLE AS insert: no statement"))?;
        let ast::Statement::Insert(insert) = &statement else {
            return Err(SqlError::internal("CREATE TABLE AS insert: not an INSERT"));
        };
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        binder.start_ids_after(last_id);
        let mut insert = bind_insert(&mut binder, insert)?;
        // The table's columns are the query's (untyped ones made text).
        let mut columns = plan.columns.clone();
        for (column, table_column) in columns.iter_mut().zip(&insert.table.columns) {
            column.ty = table_column.ty.clone();
        }
        insert.targets = (0..plan.arity()).collect();
        insert.source = binder.cast_plan(plan, &columns);
        // The query cannot read the table it fills, which is newer than its binding.
        insert.stream_source = true;
        // Already in the statement's transaction (transactional_ddl).
        let (output, _) = self.run_bound(&Bound::Insert(insert), &[], false)?;
        match output {
            Output::Command { rows, .. } => Ok(rows),
            other => Err(SqlError::internal(format!("CREATE TABLE AS insert gave {other:?}"))),
        }
    }
}

/// The new table's columns from the query's: names must be distinct (42701), untyped
/// columns become text.
fn query_columns(output: &[crate::plan::OutputColumn]) -> Result<Vec<ColumnMeta>> {
    if output.len() > COLUMNS_MAX {
        return Err(SqlError::new(
            "54011",
            format!("tables can have at most {COLUMNS_MAX} columns"),
        ));
    }
    let mut columns: Vec<ColumnMeta> = Vec::with_capacity(output.len());
    for column in output {
        if columns.iter().any(|existing| existing.name == column.name) {
            return Err(SqlError::new(
                "42701",
                format!("column \"{}\" specified more than once", column.name),
            ));
        }
        let ty = match &column.ty {
            SqlType::Unknown => SqlType::Text,
            SqlType::Void => {
                return Err(SqlError::new(
                    "42P16",
                    format!("column \"{}\" has pseudo-type void", column.name),
                ))
            }
            other => other.clone(),
        };
        columns.push(ColumnMeta {
            name: column.name.clone(),
            ty,
            nullable: true,
            default: None,
            identity: None,
        });
    }
    Ok(columns)
}
