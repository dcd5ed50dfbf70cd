//! Whether a plan's result is bounded small: the server runs such statements on the
//! connection's own thread and sends their rows whole, and streams every other result from
//! its executor thread (a hand-off that costs more than a point read does).

use super::*;

/// A LIMIT of at most this many rows counts as small.
pub const SMALL_RESULT_ROWS_MAX: i64 = 1_000;

/// True when `plan` returns at most a few rows whatever the data: a primary-key point
/// read, an aggregate without GROUP BY, a LIMIT of at most `SMALL_RESULT_ROWS_MAX` rows,
/// a few VALUES rows, or no table at all. False when it cannot tell.
pub fn is_small_result(plan: &Plan) -> bool {
    match &plan.kind {
        PlanKind::OneRow => true,
        PlanKind::Values { rows } => {
            rows.len() <= usize::try_from(SMALL_RESULT_ROWS_MAX).expect("small")
        }
        PlanKind::Project { input, .. }
        | PlanKind::Filter { input, .. }
        | PlanKind::LockRows { input, .. }
        | PlanKind::Sort { input, .. }
        | PlanKind::Distinct { input } => is_small_result(input),
        PlanKind::Aggregate { groups, input, .. } => groups.is_empty() || is_small_result(input),
        PlanKind::Limit { limit: Some(Expr::Literal(Datum::Int(rows))), .. } => {
            *rows <= SMALL_RESULT_ROWS_MAX
        }
        PlanKind::Limit { input, .. } => is_small_result(input),
        PlanKind::Scan { table, access: Access::Primary { lower, upper }, .. } => {
            let key_columns = table.clustered_key().map_or(usize::MAX, |key| key.columns.len());
            is_point(lower, upper, key_columns)
        }
        // A point read of a unique index (a primary key added by ALTER TABLE is one).
        PlanKind::Scan { table, access: Access::Index { name, lower, upper }, .. } => {
            let index = table.indexes.iter().find(|index| index.name == *name);
            let key_columns =
                index.filter(|index| index.unique).map_or(usize::MAX, |index| index.columns.len());
            is_point(lower, upper, key_columns)
        }
        _ => false,
    }
}

/// Whether a key range is one complete key: both bounds included, every key column given,
/// each the same value at both ends.
fn is_point(
    lower: &std::ops::Bound<Vec<Expr>>,
    upper: &std::ops::Bound<Vec<Expr>>,
    key_columns: usize,
) -> bool {
    match (lower, upper) {
        (std::ops::Bound::Included(lower), std::ops::Bound::Included(upper)) => {
            lower.len() == key_columns
                && upper.len() == key_columns
                && lower.iter().zip(upper).all(|(a, b)| same_value(a, b))
        }
        _ => false,
    }
}

/// Whether two bound expressions are one value: the same parameter, or equal literals.
fn same_value(a: &Expr, b: &Expr) -> bool {
    match (a, b) {
        (Expr::Parameter(a), Expr::Parameter(b)) => a == b,
        (Expr::Literal(a), Expr::Literal(b)) => a.compare(b) == Some(std::cmp::Ordering::Equal),
        _ => false,
    }
}
