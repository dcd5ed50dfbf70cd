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
            match (lower, upper) {
                (std::ops::Bound::Included(lower), std::ops::Bound::Included(upper)) => {
                    lower.len() == key_columns
                        && upper.len() == key_columns
                        && lower.iter().zip(upper).all(|(a, b)| same_value(a, b))
                }
                _ => false,
            }
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
