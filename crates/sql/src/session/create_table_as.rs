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
        let mut binder = Binder::new(&self.catalog, self.namespace(), Vec::new());
        let evaluator = crate::exec::PlanningEvaluator { catalog: &self.catalog };
        binder.evaluator = Some(&evaluator);
        let plan = binder.query(query)?;
        if !binder.finish_parameters().is_empty() {
            return Err(SqlError::new("42P02", "there is no parameter $1"));
        }
        let columns = query_columns(&plan.columns)?;
        {
            let catalog = Arc::clone(&self.catalog);
            let _guard = catalog.lock_ddl();
            if self.catalog.table(name).is_some() {
                let shown = crate::catalog::relation_name(name);
                return Err(SqlError::new("42P07", format!("relation \"{shown}\" already exists")));
            }
            let meta = TableMeta::with_columns(name.into(), columns);
            let session_id = self.session_id;
            catalog.create_table(self.ddl_transaction(), session_id, meta)?;
            self.own_new_table(name)?;
        }
        let rows = self.insert_query_rows(name, query)?;
        Ok(Output::Command { tag: CommandTag::Select, rows })
    }

    /// `INSERT INTO name <query>` in the statement's transaction; returns the rows inserted.
    fn insert_query_rows(&mut self, name: &str, query: &ast::Query) -> Result<u64> {
        let quoted = crate::catalog::qualified_sql_name(name);
        let mut statement =
            Parser::parse_sql(&PostgreSqlDialect {}, &format!("INSERT INTO {quoted} SELECT 1"))
                .map_err(|error| SqlError::internal(format!("CREATE TABLE AS insert: {error}")))?
                .pop()
                .ok_or_else(|| SqlError::internal("CREATE TABLE AS insert: no statement"))?;
        let ast::Statement::Insert(insert) = &mut statement else {
            return Err(SqlError::internal("CREATE TABLE AS insert: not an INSERT"));
        };
        insert.source = Some(Box::new(query.clone()));
        let (bound, _) = self
            .bind(&statement, &[])?
            .ok_or_else(|| SqlError::internal("CREATE TABLE AS insert did not bind"))?;
        // Binding decided whether the rows stream (`reads_only_other_tables`): a temp
        // table's name shadows a permanent one's when the query is bound again here, so
        // the query may name the new table itself.
        // Already in the statement's transaction (transactional_ddl).
        let (output, _) = self.run_bound(&bound, &[], false)?;
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
