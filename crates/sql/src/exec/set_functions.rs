//! ProjectSet: the select list's set-returning calls (and unnest in FROM), streamed: each
//! call yields its values one at a time, so `generate_series(1, 10000000)` in a select list
//! never holds its rows.

use rust_decimal::Decimal;

use super::{eval, run, Ctx, Sink};
use crate::error::{Result, SqlError};
use crate::plan::{Plan, SetCall, SetFunction};
use crate::types::{array_value, Datum, Interval, SqlType};

/// WITH ORDINALITY: each row of `input` with its number appended (from 1 each run).
pub(crate) fn ordinality(
    input: &Plan,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut number = 0i64;
    run(input, ctx, probe, &mut |ctx, mut row| {
        number += 1;
        row.push(Datum::Int(number));
        sink(ctx, row)
    })
}

/// Rows a ProjectSet emits between cancel checks.
const CANCEL_CHECK_ROWS: u64 = 4096;

/// The remaining values of one call for one input row.
pub(crate) enum SetValues {
    Integers {
        next: Option<i64>,
        stop: i64,
        step: i64,
    },
    Decimals {
        next: Option<Decimal>,
        stop: Decimal,
        step: Decimal,
    },
    /// generate_series over timestamps (`Datum::Timestamp` or `Datum::TimestampTz`).
    Timestamps {
        next: Option<Datum>,
        stop: Datum,
        step: Interval,
        ascending: bool,
    },
    Elements {
        elements: std::vec::IntoIter<Datum>,
    },
}

impl SetValues {
    fn start(call: &SetCall, args: Vec<Datum>) -> Result<SetValues> {
        if call.function != SetFunction::Subscripts && args.iter().any(Datum::is_null) {
            return Ok(SetValues::Elements { elements: Vec::new().into_iter() });
        }
        match call.function {
            SetFunction::Series => series(&call.ty, &args),
            SetFunction::Unnest => {
                let elements = array_value(&args[0])?.elements.clone();
                Ok(SetValues::Elements { elements: elements.into_iter() })
            }
            SetFunction::Subscripts => subscripts(&args),
            SetFunction::RegexpMatches | SetFunction::RegexpSplit => {
                let text = |index: usize| args.get(index).and_then(Datum::as_text).unwrap_or("");
                let (string, pattern, flags) = (text(0), text(1), text(2));
                let rows = if call.function == SetFunction::RegexpMatches {
                    crate::functions::regexp_matches(string, pattern, flags)?
                } else {
                    crate::functions::regexp_split_to_table(string, pattern, flags)?
                };
                Ok(SetValues::Elements { elements: rows.into_iter() })
            }
            SetFunction::Json { rows, json } => {
                let rows = crate::functions::json_set_rows(rows, json, &args[0])?;
                Ok(SetValues::Elements { elements: rows.into_iter() })
            }
            SetFunction::JsonPathQuery => {
                let rows = crate::functions::jsonb_path_rows(&args)?;
                Ok(SetValues::Elements { elements: rows.into_iter() })
            }
            SetFunction::JsonRecord { set, json } => {
                let key = args[1].as_text().unwrap_or_default();
                let rows = crate::functions::json_record_rows(set, json, &args[0], key, &call.ty)?;
                Ok(SetValues::Elements { elements: rows.into_iter() })
            }
            // No partitions: no relation is a partition or partitioned table, for which
            // PostgreSQL lists no rows.
            SetFunction::PartitionAncestors => {
                Ok(SetValues::Elements { elements: Vec::new().into_iter() })
            }
        }
    }

    /// The next value, or `None` when the call has no more. Stepping a series past the
    /// representable range ends an integer or numeric series (the step would pass `stop`),
    /// while a timestamp series reports PostgreSQL's 22008, as its timestamp_pl_interval
    /// does when computing the value after the last.
    pub(crate) fn next(&mut self) -> Result<Option<Datum>> {
        Ok(match self {
            SetValues::Integers { next, stop, step } => {
                let Some(current) = (*next).filter(|current| {
                    (*step > 0 && current <= stop) || (*step < 0 && current >= stop)
                }) else {
                    return Ok(None);
                };
                *next = current.checked_add(*step);
                Some(Datum::Int(current))
            }
            SetValues::Decimals { next, stop, step } => {
                let Some(current) = (*next).filter(|current| {
                    (*step > Decimal::ZERO && current <= stop)
                        || (*step < Decimal::ZERO && current >= stop)
                }) else {
                    return Ok(None);
                };
                *next = current.checked_add(*step);
                Some(Datum::Numeric(current))
            }
            SetValues::Timestamps { next, stop, step, ascending } => {
                let Some(current) = next.take() else { return Ok(None) };
                let order = current.compare(stop).expect("two timestamps of one type compare");
                if (*ascending && order.is_gt()) || (!*ascending && order.is_lt()) {
                    return Ok(None);
                }
                let after = crate::types::add_datetime(&current, &Datum::Interval(*step))?;
                *next = Some(after.expect("a timestamp plus an interval is defined"));
                Some(current)
            }
            SetValues::Elements { elements } => elements.next(),
        })
    }
}

/// generate_series's values of type `ty` from its non-NULL arguments (start, stop and the
/// step, 1 when omitted for integers and numeric); 22023 for a zero step. Also the FROM
/// item's values (exec/scan.rs).
pub(crate) fn series(ty: &SqlType, args: &[Datum]) -> Result<SetValues> {
    assert!((2..=3).contains(&args.len()), "generate_series takes two or three arguments");
    let zero_step = || SqlError::new("22023", "step size cannot equal zero");
    let mismatch =
        || SqlError::internal(format!("generate_series over {} got {args:?}", ty.display_name()));
    match ty {
        SqlType::Numeric { .. } => {
            let decimal = |index: usize| args[index].as_decimal().ok_or_else(mismatch);
            let step = if args.len() == 3 { decimal(2)? } else { Decimal::ONE };
            if step.is_zero() {
                return Err(zero_step());
            }
            Ok(SetValues::Decimals { next: Some(decimal(0)?), stop: decimal(1)?, step })
        }
        SqlType::Timestamp | SqlType::TimestampTz => {
            let Some(Datum::Interval(step)) = args.get(2) else { return Err(mismatch()) };
            let zero = Interval::new(0, 0, 0);
            if step.compare(&zero).is_eq() {
                return Err(zero_step());
            }
            let same_type = |datum: &Datum| match ty {
                SqlType::Timestamp => matches!(datum, Datum::Timestamp(_)),
                _ => matches!(datum, Datum::TimestampTz(_)),
            };
            if !same_type(&args[0]) || !same_type(&args[1]) {
                return Err(mismatch());
            }
            Ok(SetValues::Timestamps {
                next: Some(args[0].clone()),
                stop: args[1].clone(),
                step: *step,
                ascending: step.compare(&zero).is_gt(),
            })
        }
        _ => {
            let integer = |index: usize| args[index].as_int().ok_or_else(mismatch);
            let step = if args.len() == 3 { integer(2)? } else { 1 };
            if step == 0 {
                return Err(zero_step());
            }
            Ok(SetValues::Integers { next: Some(integer(0)?), stop: integer(1)?, step })
        }
    }
}

/// generate_subscripts(array, dimension [, reverse]): the subscripts of dimension 1 (none
/// for another dimension, a NULL or an empty array), descending when `reverse`.
fn subscripts(args: &[Datum]) -> Result<SetValues> {
    let none = SetValues::Elements { elements: Vec::new().into_iter() };
    if args[0].is_null() || args[1].as_int() != Some(1) {
        return Ok(none);
    }
    let array = array_value(&args[0])?;
    if array.elements.is_empty() {
        return Ok(none);
    }
    let reverse = matches!(args.get(2), Some(Datum::Bool(true)));
    let (lower, upper) = (i64::from(array.lower), array.upper());
    Ok(if reverse {
        SetValues::Integers { next: Some(upper), stop: lower, step: -1 }
    } else {
        SetValues::Integers { next: Some(lower), stop: upper, step: 1 }
    })
}

/// Runs a ProjectSet over `input` (module comment).
pub(crate) fn project_set(
    input: &Plan,
    calls: &[SetCall],
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut emitted = 0u64;
    run(input, ctx, probe, &mut |ctx, row| {
        let mut values = Vec::with_capacity(calls.len());
        for call in calls {
            let mut args = Vec::with_capacity(call.args.len());
            for arg in &call.args {
                args.push(eval::eval(arg, &row, ctx)?);
            }
            values.push(Some(SetValues::start(call, args)?));
        }
        loop {
            let mut produced = false;
            let mut output = row.clone();
            for value in &mut values {
                let next = match value.as_mut() {
                    Some(value) => value.next()?,
                    None => None,
                };
                if next.is_none() {
                    *value = None;
                } else {
                    produced = true;
                }
                output.push(next.unwrap_or(Datum::Null));
            }
            if !produced {
                return Ok(true);
            }
            emitted += 1;
            if emitted.is_multiple_of(CANCEL_CHECK_ROWS) {
                ctx.check_cancel()?;
            }
            if !sink(ctx, output)? {
                return Ok(false);
            }
        }
    })
}
