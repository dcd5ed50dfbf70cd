//! CHECK constraints: an expression over one table's row, bound when the constraint is made
//! (its errors are PostgreSQL's: no subqueries, aggregates or window functions, a boolean
//! result) and again by each statement that writes the table.

use super::*;
use crate::catalog::CheckMeta;
use crate::plan::deparse::deparse;
use crate::plan::BoundCheck;

/// The scope of a CHECK expression: the table's columns, in order, under its name.
fn row_scope(table: &TableMeta) -> Scope {
    Scope {
        columns: table
            .columns
            .iter()
            .enumerate()
            .map(|(position, column)| ScopeColumn {
                qualifier: Some(table.name.clone()),
                name: column.name.clone(),
                ty: column.ty.clone(),
                table_oid: table.oid,
                attribute: crate::catalog::attribute_number(position),
                merged: false,
                relation: 0,
                nullable: false,
            })
            .collect(),
        grouped_keys: None,
    }
}

/// Binds a CHECK expression over `table`'s row (PostgreSQL's errors for what a constraint
/// may not hold).
pub(crate) fn bind_check_expression(
    binder: &mut Binder<'_>,
    table: &TableMeta,
    expr: &ast::Expr,
) -> Result<Expr> {
    let (bound, from) = bind_row_expression(binder, table, expr, RowClause::CHECK)?;
    coerce(bound, &from, &SqlType::Bool, false)
}

/// Where a boolean expression over one table's row sits, for PostgreSQL's messages.
pub(super) struct RowClause {
    /// The clause as the "... are not allowed in {clause}" errors name it.
    clause: &'static str,
    /// "cannot use subquery in {subquery}".
    subquery: &'static str,
    /// "argument of {keyword} must be type boolean".
    keyword: &'static str,
}

impl RowClause {
    pub(super) const CHECK: RowClause =
        RowClause { clause: "check constraints", subquery: "check constraint", keyword: "CHECK" };
    pub(super) const INDEX_PREDICATE: RowClause =
        RowClause { clause: "index predicates", subquery: "index predicate", keyword: "WHERE" };
}

/// Binds a boolean expression over `table`'s row (a CHECK constraint, an index predicate):
/// no subqueries, the clause's errors for aggregates and window functions, a boolean type.
/// Returns the bound expression and its type (boolean or unknown).
pub(super) fn bind_row_expression(
    binder: &mut Binder<'_>,
    table: &TableMeta,
    expr: &ast::Expr,
    clause: RowClause,
) -> Result<(Expr, SqlType)> {
    let mut subquery = false;
    let _ = ast::visit_expressions(expr, |inner| {
        subquery |= matches!(
            inner,
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. }
        );
        std::ops::ControlFlow::<()>::Continue(())
    });
    if subquery {
        return Err(SqlError::unsupported(format!("cannot use subquery in {}", clause.subquery)));
    }
    let scope = row_scope(table);
    let saved = binder.clause.replace(clause.clause);
    let outcome = binder.expr(expr, &scope, Some(&SqlType::Bool));
    binder.clause = saved;
    let (bound, from) = outcome?;
    if from != SqlType::Bool && from != SqlType::Unknown {
        return Err(SqlError::datatype_mismatch(format!(
            "argument of {} must be type boolean, not type {}",
            clause.keyword,
            from.display_name()
        )));
    }
    Ok((bound, from))
}

/// A new CHECK constraint of `table` named `name`: bound now (its errors at CREATE/ALTER),
/// stored with PostgreSQL's deparsed forms. Its OID is given when the table is made (or by
/// the caller).
pub(crate) fn check_meta(
    binder: &mut Binder<'_>,
    table: &TableMeta,
    name: String,
    expr: &ast::Expr,
) -> Result<CheckMeta> {
    let bound = bind_check_expression(binder, table, expr)?;
    let names: Vec<String> = table.columns.iter().map(|column| column.name.clone()).collect();
    let types: Vec<SqlType> = table.columns.iter().map(|column| column.ty.clone()).collect();
    Ok(CheckMeta {
        name,
        oid: 0,
        expression: expr.to_string(),
        definition: deparse(&bound, &names, &types, false),
        pretty: deparse(&bound, &names, &types, true),
    })
}

/// Parses a stored CHECK expression.
pub(crate) fn parse_check(check: &CheckMeta) -> Result<ast::Expr> {
    crate::parse::parse_stored_expression(&check.expression)
}

/// The table's CHECK constraints bound over its row, in name order.
pub(crate) fn bind_checks(binder: &mut Binder<'_>, table: &TableMeta) -> Result<Vec<BoundCheck>> {
    table
        .checks
        .iter()
        .map(|check| {
            let expr = bind_check_expression(binder, table, &parse_check(check)?)?;
            Ok(BoundCheck { name: check.name.clone(), expr })
        })
        .collect()
}
