//! `SELECT ... INTO t` is `CREATE TABLE t AS SELECT ...` (PostgreSQL documents them as the
//! same command). The rewrite happens once, after parsing, so binding, the privilege check
//! and the protocol all see CREATE TABLE AS. An INTO anywhere but the top-level SELECT is
//! refused by the binder (42601), as in PostgreSQL.

use sqlparser::ast;
use sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder;

use crate::error::{Result, SqlError};

pub(crate) fn as_create_table(statement: ast::Statement) -> Result<ast::Statement> {
    let ast::Statement::Query(mut query) = statement else { return Ok(statement) };
    let ast::SetExpr::Select(select) = query.body.as_mut() else {
        return Ok(ast::Statement::Query(query));
    };
    let Some(into) = select.into.take() else { return Ok(ast::Statement::Query(query)) };
    let name = match into.targets.as_slice() {
        [ast::Expr::Identifier(name)] => ast::ObjectName::from(vec![name.clone()]),
        [ast::Expr::CompoundIdentifier(parts)] => ast::ObjectName::from(parts.clone()),
        _ => return Err(SqlError::syntax("SELECT ... INTO takes one table name")),
    };
    let create = CreateTableBuilder::new(name)
        .temporary(into.temporary)
        .unlogged(into.unlogged)
        .query(Some(query))
        .build();
    Ok(ast::Statement::CreateTable(create))
}
