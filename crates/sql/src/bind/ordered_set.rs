//! Ordered-set aggregates: `percentile_cont(0.5) WITHIN GROUP (ORDER BY x)`,
//! `percentile_disc(...)` and `mode() WITHIN GROUP (ORDER BY x)`.
//!
//! The WITHIN GROUP key becomes the call's own ORDER BY, so a group's input is sorted before
//! it is folded in, as for `string_agg(x, ',' ORDER BY y)` (exec/aggregate.rs `Group`), and
//! the accumulator picks its result from the sorted values (exec/ordered_set.rs). The
//! fraction, a direct argument, is PostgreSQL's: an expression of the grouped query (only
//! grouped columns, 42803 otherwise), so it is the same on every row of a group and is
//! evaluated with the value as the call's second argument.

use super::call::{call_arguments, float8_argument};
use super::query::sort_key;
use super::*;

impl Binder<'_> {
    /// Binds a call with WITHIN GROUP: an ordered-set aggregate, or PostgreSQL's 42883 for
    /// a function that has no form taking the direct and ordered arguments together.
    pub(crate) fn ordered_set_aggregate(
        &mut self,
        function: &ast::Function,
        name: &str,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        let (direct, distinct, star) = call_arguments(function, name)?;
        if distinct {
            return Err(SqlError::syntax("cannot use DISTINCT with WITHIN GROUP"));
        }
        let key = function.to_string();
        let input_scope = match self.aggregate_input(&key)? {
            Ok(input_scope) => input_scope,
            Err(bound) => return Ok(bound),
        };
        let kind = OrderedSet::of_name(name).filter(|_| !star);
        // Direct arguments read the grouped query: a column neither grouped nor aggregated
        // is 42803 here, as in PostgreSQL. Their values are then taken per input row.
        let mut direct_types = Vec::with_capacity(direct.len());
        if kind.is_some() {
            for argument in &direct {
                direct_types.push(self.expr(argument, scope, None)?.1);
            }
        }
        let mut direct_bound = Vec::with_capacity(direct.len());
        for argument in &direct {
            direct_bound
                .push(self.in_aggregate(None, |binder| binder.expr(argument, &input_scope, None))?);
        }
        let mut ordered = Vec::with_capacity(function.within_group.len());
        for order_key in &function.within_group {
            let (expr, ty) =
                self.in_aggregate(None, |binder| binder.expr(&order_key.expr, &input_scope, None))?;
            ordered.push((expr, ty, sort_key(0, &order_key.options)));
        }
        if kind.is_none() {
            direct_types = direct_bound.iter().map(|(_, ty)| ty.clone()).collect();
        }
        let signature_fits = match kind {
            Some(OrderedSet::Mode) => direct.is_empty() && ordered.len() == 1,
            Some(_) => direct.len() == 1 && ordered.len() == 1,
            None => false,
        };
        let (Some(kind), true) = (kind, signature_fits) else {
            let types = direct_types.iter().chain(ordered.iter().map(|(_, ty, _)| ty));
            return Err(undefined_ordered_set(name, types));
        };
        let (value, value_type, sort) = ordered.pop().expect("one ordered argument");
        let mut many = false;
        let fraction = match direct_bound.pop() {
            Some((fraction, fraction_type)) => {
                many = fraction_type.array_element().is_some();
                Some(fraction_argument(kind, fraction, &fraction_type, &value_type)?)
            }
            None => None,
        };
        let (value, value_type) = ordered_value(kind, value, &value_type, &direct_types)?;
        // With an array of fractions the result is an array of the values' type.
        let output = if many { crate::types::array_of(&value_type)? } else { value_type.clone() };
        let mut args = vec![value.clone()];
        args.extend(fraction);
        let filter = self.aggregate_filter(function, &input_scope)?;
        let order = vec![AggregateOrder {
            expr: value,
            descending: sort.descending,
            nulls_first: sort.nulls_first,
        }];
        let call = AggregateCall {
            function: AggregateFunction::OrderedSet(kind),
            args,
            distinct: false,
            order,
            filter,
            input: value_type,
            output,
        };
        Ok(self.push_aggregate(key, call))
    }
}

/// The ordered value as the aggregate reads it: percentile_cont interpolates double
/// precision or interval (other numbers are cast to double precision, as PostgreSQL's
/// implicit casts do); percentile_disc and mode take any type but an untyped literal.
fn ordered_value(
    kind: OrderedSet,
    value: Expr,
    value_type: &SqlType,
    direct_types: &[SqlType],
) -> Result<(Expr, SqlType)> {
    match kind {
        OrderedSet::PercentileContinuous => match value_type {
            SqlType::Interval | SqlType::Float8 => Ok((value, value_type.clone())),
            numeric if float8_argument(numeric) => {
                Ok((coerce(value, value_type, &SqlType::Float8, false)?, SqlType::Float8))
            }
            other => Err(undefined_ordered_set(kind.name(), direct_types.iter().chain([other]))),
        },
        OrderedSet::PercentileDiscrete | OrderedSet::Mode => match value_type {
            SqlType::Unknown => Err(SqlError::new(
                "42804",
                "could not determine polymorphic type because input has type unknown",
            )),
            other => Ok((value, other.clone())),
        },
    }
}

/// The fraction of percentile_cont and percentile_disc as double precision. A constant one
/// is checked here (22003 outside [0, 1]): PostgreSQL checks it when the aggregate
/// finishes, so even over no rows; the executor checks the others (exec/ordered_set.rs).
fn fraction_argument(
    kind: OrderedSet,
    fraction: Expr,
    fraction_type: &SqlType,
    value_type: &SqlType,
) -> Result<Expr> {
    if let Some(element) = fraction_type.array_element() {
        // percentile_cont(float8[]) and percentile_disc(float8[]): the executor checks
        // each fraction, after the rows (PostgreSQL's *_multi_final).
        if !float8_argument(element) {
            return Err(undefined_ordered_set(
                kind.name(),
                [fraction_type, value_type].into_iter(),
            ));
        }
        let fractions = SqlType::Array(Box::new(SqlType::Float8));
        return coerce(fraction, fraction_type, &fractions, false);
    }
    if !float8_argument(fraction_type) {
        return Err(undefined_ordered_set(kind.name(), [fraction_type, value_type].into_iter()));
    }
    let fraction = coerce(fraction, fraction_type, &SqlType::Float8, false)?;
    if let Expr::Literal(Datum::Float(value)) = &fraction {
        OrderedSet::check_fraction(*value)?;
    }
    Ok(fraction)
}

/// PostgreSQL's 42883 for a WITHIN GROUP call no ordered-set aggregate takes: the
/// function named with its direct and ordered argument types.
fn undefined_ordered_set<'t>(name: &str, types: impl Iterator<Item = &'t SqlType>) -> SqlError {
    let names: Vec<String> = types
        .map(|ty| match ty {
            SqlType::Unknown => "unknown".to_string(),
            SqlType::Array(_) => ty.display_name(),
            _ => ty.message_name().to_string(),
        })
        .collect();
    SqlError::undefined_function(&format!("{name}({})", names.join(", ")))
}
