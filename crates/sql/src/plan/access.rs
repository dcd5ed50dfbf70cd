//! Access-path choice: which key or index a scan reads, from the conjuncts of its filter.

use std::ops::Bound;

use crate::catalog::{IndexKind, TableMeta};
use crate::plan::*;
use crate::types::{Datum, SqlType};

pub fn split_conjuncts(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::And(left, right) => {
            split_conjuncts(*left, out);
            split_conjuncts(*right, out);
        }
        other => out.push(other),
    }
}

pub fn and_all(mut conjuncts: Vec<Expr>) -> Expr {
    let mut expr = conjuncts.pop().unwrap_or(Expr::Literal(Datum::Bool(true)));
    while let Some(previous) = conjuncts.pop() {
        expr = Expr::And(Box::new(previous), Box::new(expr));
    }
    expr
}

/// Whether a one-value bound is the integer literal or parameter `value`.
pub(crate) fn same_integer_value(bound: &[Expr], value: &Expr) -> bool {
    match (bound, value) {
        ([Expr::Parameter(a)], Expr::Parameter(b)) => a == b,
        ([Expr::Literal(Datum::Int(a))], Expr::Literal(Datum::Int(b))) => a == b,
        _ => false,
    }
}

/// The access path of a scan of `table` filtered by `conjuncts`, and the conjuncts the scan
/// must still test (those the access path does not already guarantee). `parameters` are the
/// statement's parameter types as bound so far.
pub fn scan_access(
    table: &TableMeta,
    mut conjuncts: Vec<Expr>,
    parameters: &[SqlType],
) -> (Access, Option<Expr>) {
    let (equal_count, mut access) = choose_counted_access(table, &conjuncts, None);
    // A key list wins when it pins more leading columns than any single key or range.
    if let Some((width, keys)) = key_list_access(table, &conjuncts) {
        if width > equal_count {
            access = keys;
        }
    }
    conjuncts.retain(|conjunct| !implied_by_access(table, &access, conjunct, parameters));
    let filter = if conjuncts.is_empty() { None } else { Some(and_all(conjuncts)) };
    (access, filter)
}

/// Whether `conjunct` holds for every row `access` returns, so that the scan need not
/// test it again (a range query otherwise evaluates its bounds once per row): a
/// comparison of a one-column integer primary key with an integer literal or parameter
/// that is itself the access bound. Integer keys encode in the order of their values, so
/// the bound is exactly the predicate; other types (collations, char padding, casts,
/// floats) and other accesses (a bound on a key prefix also admits longer keys) keep it.
fn implied_by_access(
    table: &TableMeta,
    access: &Access,
    conjunct: &Expr,
    parameters: &[SqlType],
) -> bool {
    let Access::Primary { lower, upper } = access else { return false };
    let Some(key) = table.clustered_key() else { return false };
    let [column] = key.columns[..] else { return false };
    if !table.columns[column].ty.is_integer() {
        return false;
    }
    let Expr::Compare { op, left, right, bpchar: false } = conjunct else { return false };
    let (op, value) = match (left.as_ref(), right.as_ref()) {
        (Expr::Column(index), value) if *index == column => (*op, value),
        (value, Expr::Column(index)) if *index == column => (op.flip(), value),
        _ => return false,
    };
    let integer = match value {
        Expr::Literal(Datum::Int(_)) => true,
        Expr::Parameter(index) => parameters.get(*index).is_some_and(SqlType::is_integer),
        _ => false,
    };
    let is_bound = |bound: &Bound<Vec<Expr>>, inclusive: bool| match bound {
        Bound::Included(values) if inclusive => same_integer_value(values, value),
        Bound::Excluded(values) if !inclusive => same_integer_value(values, value),
        _ => false,
    };
    integer
        && match op {
            CompareOp::Eq => is_bound(lower, true) && is_bound(upper, true),
            CompareOp::GtEq => is_bound(lower, true),
            CompareOp::Gt => is_bound(lower, false),
            CompareOp::LtEq => is_bound(upper, true),
            CompareOp::Lt => is_bound(upper, false),
            _ => false,
        }
}

/// Chooses an access path for a scan of `table` from its conjuncts: the clustering key or
/// the index whose leading columns the conjuncts pin with the longest equality prefix
/// (then one range). With `probe_width`, key values may read the probe row (index joins):
/// a conjunct's other side must then only read columns below `probe_width`... expressed as
/// `Column` indexes into the probe row, while the table side is a column of the table.
pub fn choose_access(table: &TableMeta, conjuncts: &[Expr], probe_width: Option<usize>) -> Access {
    choose_counted_access(table, conjuncts, probe_width).1
}

/// `choose_access`, with how many leading columns the access pins by equalities.
fn choose_counted_access(
    table: &TableMeta,
    conjuncts: &[Expr],
    probe_width: Option<usize>,
) -> (usize, Access) {
    let mut best: Option<(usize, bool, Access)> = None;
    for index in &table.indexes {
        if !predicate_implied(table, index, conjuncts, probe_width) {
            continue;
        }
        let (equal_count, access) = key_access(table, index, conjuncts, probe_width);
        let Some(access) = access else { continue };
        let clustered = index.kind == IndexKind::Clustered;
        let better = match &best {
            None => true,
            Some((count, was_clustered, _)) => {
                equal_count > *count || (equal_count == *count && clustered && !was_clustered)
            }
        };
        if better {
            best = Some((equal_count, clustered, access));
        }
    }
    best.map_or((0, Access::Full), |(count, _, access)| (count, access))
}

/// Whether a scan filtered by `conjuncts` may read `index`: always a full index; a partial
/// one only when every conjunct of its predicate is one of the scan's (compared in their
/// deparsed forms, which binding normalised), so that no row the scan wants is missing
/// from it. Never in an index join (`probe_width`), whose conjuncts also read the probe row.
/// The scan's conjuncts stay in its filter: they re-check each row the index gives.
pub(crate) fn predicate_implied(
    table: &TableMeta,
    index: &crate::catalog::IndexMeta,
    conjuncts: &[Expr],
    probe_width: Option<usize>,
) -> bool {
    let Some(predicate) = &index.predicate else { return true };
    if probe_width.is_some() {
        return false;
    }
    let names: Vec<String> = table.columns.iter().map(|column| column.name.clone()).collect();
    let types: Vec<SqlType> = table.columns.iter().map(|column| column.ty.clone()).collect();
    let own: Vec<String> = conjuncts
        .iter()
        .map(|conjunct| super::deparse::deparse(conjunct, &names, &types, false))
        .collect();
    predicate.conjuncts.iter().all(|needed| own.contains(needed))
}

/// For one index: how many leading columns are pinned by equalities, and the access.
pub(crate) fn key_access(
    table: &TableMeta,
    index: &crate::catalog::IndexMeta,
    conjuncts: &[Expr],
    probe_width: Option<usize>,
) -> (usize, Option<Access>) {
    // An HNSW index answers nearest-neighbour orderings, not key bounds.
    if matches!(index.kind, IndexKind::Hnsw(_)) {
        return (0, None);
    }
    let mut equal = Vec::new();
    let mut lower = Bound::Unbounded;
    let mut upper = Bound::Unbounded;
    for &column in &index.columns {
        let column_ty = &table.columns[column].ty;
        if let Some(value) = find_bound(conjuncts, column, column_ty, &[CompareOp::Eq], probe_width)
        {
            equal.push(value.1);
            continue;
        }
        // A range on the next column.
        for (op, value) in find_all_bounds(conjuncts, column, column_ty, probe_width) {
            match op {
                CompareOp::Gt | CompareOp::GtEq => {
                    if matches!(lower, Bound::Unbounded) {
                        let mut values = equal.clone();
                        values.push(value);
                        lower = if op == CompareOp::Gt {
                            Bound::Excluded(values)
                        } else {
                            Bound::Included(values)
                        };
                    }
                }
                CompareOp::Lt | CompareOp::LtEq => {
                    if matches!(upper, Bound::Unbounded) {
                        let mut values = equal.clone();
                        values.push(value);
                        upper = if op == CompareOp::Lt {
                            Bound::Excluded(values)
                        } else {
                            Bound::Included(values)
                        };
                    }
                }
                _ => {}
            }
        }
        break;
    }
    let equal_count = equal.len();
    if equal_count == 0 && matches!(lower, Bound::Unbounded) && matches!(upper, Bound::Unbounded) {
        return (0, None);
    }
    if equal_count > 0 {
        if matches!(lower, Bound::Unbounded) {
            lower = Bound::Included(equal.clone());
        }
        if matches!(upper, Bound::Unbounded) {
            upper = Bound::Included(equal);
        }
    }
    let access = match index.kind {
        IndexKind::Clustered => Access::Primary { lower, upper },
        IndexKind::Secondary => Access::Index { name: index.name.clone(), lower, upper },
        IndexKind::Hnsw(_) => unreachable!("returned above"),
    };
    (equal_count, Some(access))
}

pub(crate) fn usable_key_value(
    expr: &Expr,
    column_ty: &SqlType,
    probe_width: Option<usize>,
) -> Option<Expr> {
    let ok_columns = match probe_width {
        None => expr.is_row_independent(),
        Some(_) => {
            !expr.has_correlated_subquery()
                && !matches!(
                    expr,
                    Expr::InSubquery { .. }
                        | Expr::Exists { .. }
                        | Expr::ScalarSubquery { .. }
                        | Expr::ArraySubquery { .. }
                )
        }
    };
    if !ok_columns {
        return None;
    }
    let ty = expr_literal_type(expr);
    // Only values of the column's own storage family can be encoded as its key.
    match ty {
        Some(ty)
            if ty.key_kind() == column_ty.key_kind()
                && (ty.is_integer() == column_ty.is_integer()) => {}
        Some(_) => return None,
        None => {}
    }
    Some(expr.clone())
}

/// The type of a key value expression when it is obvious (literal, cast); None for others.
pub(crate) fn expr_literal_type(expr: &Expr) -> Option<SqlType> {
    match expr {
        Expr::Literal(Datum::Int(_)) => Some(SqlType::Int8),
        Expr::Literal(Datum::Float(_)) => Some(SqlType::Float8),
        Expr::Literal(Datum::Numeric(_)) => Some(SqlType::numeric()),
        Expr::Literal(Datum::Text(_)) => Some(SqlType::Text),
        Expr::Literal(Datum::Bool(_)) => Some(SqlType::Bool),
        Expr::Literal(Datum::Date(_)) => Some(SqlType::Date),
        Expr::Literal(Datum::Timestamp(_)) => Some(SqlType::Timestamp),
        Expr::Literal(Datum::TimestampTz(_)) => Some(SqlType::TimestampTz),
        Expr::Literal(Datum::Null) => Some(SqlType::Unknown),
        Expr::Cast { to, .. } => Some(to.clone()),
        Expr::Arithmetic { ty, .. } => Some(ty.clone()),
        _ => None,
    }
}

pub(crate) fn find_bound(
    conjuncts: &[Expr],
    column: usize,
    column_ty: &SqlType,
    ops: &[CompareOp],
    probe_width: Option<usize>,
) -> Option<(CompareOp, Expr)> {
    find_all_bounds(conjuncts, column, column_ty, probe_width)
        .into_iter()
        .find(|(op, _)| ops.contains(op))
}

pub(crate) fn find_all_bounds(
    conjuncts: &[Expr],
    column: usize,
    column_ty: &SqlType,
    probe_width: Option<usize>,
) -> Vec<(CompareOp, Expr)> {
    let mut found = Vec::new();
    for conjunct in conjuncts {
        let Expr::Compare { op, left, right, bpchar } = conjunct else { continue };
        if *bpchar && !matches!(column_ty, SqlType::Char(_)) {
            continue;
        }
        // With a probe row (index joins) the conjuncts are `table column = probe value`, and
        // a `Column` on the right names a probe column, not one of the table's.
        let (op, value) = match (left.as_ref(), right.as_ref()) {
            (Expr::Column(index), value) if *index == column => (*op, value),
            (value, Expr::Column(index)) if *index == column && probe_width.is_none() => {
                (op.flip(), value)
            }
            _ => continue,
        };
        if op == CompareOp::NotEq {
            continue;
        }
        if let Some(value) = usable_key_value(value, column_ty, probe_width) {
            if matches!(value, Expr::Literal(Datum::Null)) {
                continue;
            }
            found.push((op, value));
        }
    }
    found
}
