//! A value or a row compared with a subquery's rows: `[NOT] IN (subquery)`, `op ANY /
//! ALL (subquery)` and a row compared with a one-row subquery, `(a, b) = (SELECT x, y)`
//! (PostgreSQL's ANY, ALL and ROWCOMPARE sublinks), evaluated by
//! exec/subquery_comparison.rs.

use std::cmp::Ordering;

use super::*;

impl Binder<'_> {
    /// `left op quantifier (query)`, negated for NOT IN. The subquery is bound first, as
    /// PostgreSQL's transformSubLink does, so its errors come first.
    pub(crate) fn subquery_comparison(
        &mut self,
        left: &ast::Expr,
        op: CompareOp,
        quantifier: Quantifier,
        negated: bool,
        query: &ast::Query,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let (plan, correlated) = self.subquery(query, scope)?;
        let elements = row_elements(left);
        match plan.arity().cmp(&elements.len()) {
            Ordering::Greater => return Err(SqlError::syntax("subquery has too many columns")),
            Ordering::Less => return Err(SqlError::syntax("subquery has too few columns")),
            Ordering::Equal => {}
        }
        let mut exprs = Vec::with_capacity(elements.len());
        let mut subquery_exprs = Vec::with_capacity(elements.len());
        for (column, element) in elements.into_iter().enumerate() {
            let (value, value_ty) = self.expr(element, scope, None)?;
            let column_ty = &plan.columns[column].ty;
            let common = compared_type(&value_ty, column_ty, op)?;
            exprs.push(cast_to(value, &value_ty, &common)?);
            subquery_exprs.push(cast_to(Expr::Column(column), column_ty, &common)?);
        }
        let id = self.id();
        let comparison = Expr::InSubquery {
            exprs,
            subquery_exprs,
            op,
            quantifier,
            plan,
            negated,
            correlated,
            id,
        };
        Ok((comparison, SqlType::Bool))
    }
}

/// A row constructor's elements, or the one value.
fn row_elements(left: &ast::Expr) -> Vec<&ast::Expr> {
    match left {
        ast::Expr::Tuple(items) => items.iter().collect(),
        other => vec![other],
    }
}

/// The type a pair is compared in: their common type (char(n) compared as text, with its
/// trailing blanks dropped), or 42883 as PostgreSQL names the missing operator.
fn compared_type(left: &SqlType, right: &SqlType, op: CompareOp) -> Result<SqlType> {
    let missing = || {
        SqlError::undefined_operator(format!(
            "operator does not exist: {} {} {}",
            left.display_name(),
            op.symbol(),
            right.display_name()
        ))
    };
    // json has no comparison operators in PostgreSQL (jsonb has).
    if *left == SqlType::Json || *right == SqlType::Json {
        return Err(missing());
    }
    Ok(match SqlType::common(left, right).ok_or_else(missing)? {
        SqlType::Unknown => SqlType::Text,
        SqlType::Bit(_) => SqlType::Bit(None),
        SqlType::VarBit(_) => SqlType::VarBit(None),
        other => text_if_char(&other),
    })
}

/// `expr` as a value of `to`, cast only where the values would compare or hash
/// differently: integers and numerics share their `group_key` encoding, and varchar and
/// name values are text already.
fn cast_to(expr: Expr, from: &SqlType, to: &SqlType) -> Result<Expr> {
    let exact = |ty: &SqlType| {
        matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Numeric { .. })
    };
    let same_values = from == to
        || exact(from) && exact(to)
        || matches!(from, SqlType::Varchar(_) | SqlType::Name) && *to == SqlType::Text
        || matches!((from, to), (SqlType::Bit(_), SqlType::Bit(_)))
        || matches!((from, to), (SqlType::VarBit(_), SqlType::VarBit(_)));
    if same_values {
        return Ok(expr);
    }
    coerce(expr, from, to, false)
}
