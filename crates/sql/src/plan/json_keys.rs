//! json has no equality or ordering operators in PostgreSQL (jsonb has both): a plan that
//! sorts, groups or deduplicates by a json column fails as PostgreSQL fails, instead of
//! comparing the texts.

use super::{Plan, PlanKind};
use crate::error::{Result, SqlError};
use crate::types::SqlType;

/// Fails with 42883 when `plan` orders, groups or deduplicates rows by a json value.
pub(crate) fn refuse_json_keys(plan: &Plan) -> Result<()> {
    let json = |ty: Option<&SqlType>| ty == Some(&SqlType::Json);
    let (ordering, equality) = match &plan.kind {
        PlanKind::Sort { input, keys } => {
            (keys.iter().any(|key| json(input.columns.get(key.column).map(|c| &c.ty))), false)
        }
        PlanKind::Aggregate { groups, .. } => {
            (false, plan.columns.iter().take(groups.len()).any(|c| json(Some(&c.ty))))
        }
        PlanKind::Distinct { .. }
        | PlanKind::Union { all: false, .. }
        | PlanKind::RecursiveUnion { all: false, .. }
        | PlanKind::SetDifference { .. } => (false, plan.columns.iter().any(|c| json(Some(&c.ty)))),
        _ => (false, false),
    };
    if ordering {
        return Err(SqlError::undefined_function_message(
            "could not identify an ordering operator for type json",
        ));
    }
    if equality {
        return Err(SqlError::undefined_function_message(
            "could not identify an equality operator for type json",
        ));
    }
    plan.inputs().into_iter().try_for_each(refuse_json_keys)
}
