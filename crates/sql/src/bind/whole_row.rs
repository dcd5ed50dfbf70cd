//! Whole-row references (`to_jsonb(t)`, `row_to_json(t)`, `jsonb_agg(t)`) as the json
//! functions take them: tierdb has no record type, so the reference is rewritten into the
//! object those functions would make of the record: `jsonb_build_object('a', t.a, ...)` for
//! jsonb, `json_row_fields('a', t.a, ...)` (row_to_json's compact text) for json.
//!
//! Only a bare name that is no column but names a FROM item of the scope is rewritten; any
//! other whole-row use stays PostgreSQL's "column does not exist" it was before.

use super::*;

/// The functions whose argument may be a whole row, and whether each makes jsonb.
fn whole_row_function(name: &str) -> Option<bool> {
    match name {
        "to_jsonb" | "jsonb_agg" => Some(true),
        "to_json" | "row_to_json" | "json_agg" => Some(false),
        _ => None,
    }
}

/// The columns (by name) of the FROM item `qualifier` when `expr` is a bare name that is
/// no column of `scope` but is the name of one of its FROM items.
fn row_columns(expr: &ast::Expr, scope: &Scope) -> Option<(ast::Ident, Vec<String>)> {
    let ast::Expr::Identifier(name) = expr else { return None };
    let qualifier = crate::parse::names::ident(name);
    if !matches!(scope.find(None, &qualifier), Ok(None)) || !scope.has_qualifier(&qualifier) {
        return None;
    }
    let columns = scope
        .columns
        .iter()
        .filter(|column| column.qualifier.as_deref() == Some(qualifier.as_str()))
        .map(|column| column.name.clone())
        .collect();
    Some((name.clone(), columns))
}

/// The object call standing for the record `qualifier` with `columns`.
fn object_call(qualifier: &ast::Ident, columns: &[String], binary: bool) -> ast::Expr {
    let mut args = Vec::with_capacity(columns.len() * 2);
    for column in columns {
        let key = ast::Expr::Value(ast::Value::SingleQuotedString(column.clone()).into());
        let value = ast::Expr::CompoundIdentifier(vec![
            qualifier.clone(),
            ast::Ident::with_quote('"', column.clone()),
        ]);
        for arg in [key, value] {
            args.push(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg)));
        }
    }
    let name = if binary { "jsonb_build_object" } else { "json_row_fields" };
    ast::Expr::Function(ast::Function {
        name: ast::ObjectName::from(vec![ast::Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: ast::FunctionArguments::None,
        args: ast::FunctionArguments::List(ast::FunctionArgumentList {
            duplicate_treatment: None,
            args,
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// `args` with a whole-row first argument of `name` rewritten (None: nothing to rewrite);
/// 0A000 for the NULL-extended side of an outer join, whose record PostgreSQL gives as NULL,
/// which the object of its columns cannot tell from a row of NULLs.
pub(crate) fn whole_row_arguments(
    name: &str,
    args: &[ast::Expr],
    scope: &Scope,
) -> Result<Option<Vec<ast::Expr>>> {
    let Some(binary) = whole_row_function(name) else { return Ok(None) };
    let Some(first) = args.first() else { return Ok(None) };
    let Some((qualifier, columns)) = row_columns(first, scope) else { return Ok(None) };
    let qualified = crate::parse::names::ident(&qualifier);
    if scope
        .columns
        .iter()
        .any(|column| column.nullable && column.qualifier.as_deref() == Some(qualified.as_str()))
    {
        return Err(SqlError::unsupported(
            "a whole-row reference to the nullable side of an outer join is not supported",
        ));
    }
    let mut rewritten = args.to_vec();
    rewritten[0] = object_call(&qualifier, &columns, binary);
    Ok(Some(rewritten))
}
