//! Partial index predicates (CREATE INDEX ... WHERE): an expression over one table's row,
//! bound when the index is made (PostgreSQL's errors: no subqueries, aggregates or window
//! functions, immutable functions only, a boolean result) and again at catalog load, where
//! the engine gets it as its filter of the index's rows (`catalog/partial_index.rs`).

use super::*;
use crate::catalog::PredicateMeta;
use crate::plan::deparse::deparse;

/// Functions tierdb does not mark volatile whose result still depends on the session or the
/// time (PostgreSQL's STABLE): an index predicate may not call them.
const STABLE_FUNCTIONS: &[&str] = &[
    "now",
    "current_date",
    "current_time",
    "localtime",
    "localtimestamp",
    "current_setting",
    "current_user",
    "session_user",
    "current_role",
    "user",
    "current_schema",
    "current_schemas",
    "current_database",
    "pg_backend_pid",
    "age",
    "to_char",
    "format",
    "has_table_privilege",
    "has_schema_privilege",
    "obj_description",
    "col_description",
    "pg_get_indexdef",
    "pg_get_constraintdef",
    "pg_get_viewdef",
    "set_config",
    "nextval",
    "currval",
    "lastval",
    "setval",
];

/// Binds a partial index's predicate over `table`'s row.
pub(crate) fn bind_index_predicate(
    binder: &mut Binder<'_>,
    table: &TableMeta,
    expr: &ast::Expr,
) -> Result<Expr> {
    let (bound, from) =
        checks::bind_row_expression(binder, table, expr, checks::RowClause::INDEX_PREDICATE)?;
    if !is_immutable(&bound) {
        return Err(SqlError::new(
            "42P17",
            "functions in index predicate must be marked IMMUTABLE",
        ));
    }
    coerce(bound, &from, &SqlType::Bool, false)
}

/// Whether the expression calls only immutable functions.
fn is_immutable(expr: &Expr) -> bool {
    let own = match expr {
        Expr::Function(call) => {
            !call.function.volatile && !STABLE_FUNCTIONS.contains(&call.function.name())
        }
        _ => true,
    };
    own && expr.children().into_iter().all(is_immutable)
}

/// A new partial index's predicate over `table`: bound now (its errors at CREATE INDEX),
/// stored with PostgreSQL's deparsed forms.
pub(crate) fn predicate_meta(
    binder: &mut Binder<'_>,
    table: &TableMeta,
    expr: &ast::Expr,
) -> Result<PredicateMeta> {
    let bound = bind_index_predicate(binder, table, expr)?;
    let names: Vec<String> = table.columns.iter().map(|column| column.name.clone()).collect();
    let types: Vec<SqlType> = table.columns.iter().map(|column| column.ty.clone()).collect();
    let mut conjuncts = Vec::new();
    crate::plan::split_conjuncts(bound.clone(), &mut conjuncts);
    Ok(PredicateMeta {
        expression: expr.to_string(),
        definition: deparse(&bound, &names, &types, false),
        pretty: deparse(&bound, &names, &types, true),
        conjuncts: conjuncts
            .iter()
            .map(|conjunct| deparse(conjunct, &names, &types, false))
            .collect(),
    })
}

/// A stored predicate bound again over `table`'s row.
pub(crate) fn bind_stored_predicate(
    binder: &mut Binder<'_>,
    table: &TableMeta,
    predicate: &PredicateMeta,
) -> Result<Expr> {
    let expr = crate::parse::parse_stored_expression(&predicate.expression)?;
    bind_index_predicate(binder, table, &expr)
}
