//! Arithmetic operators and unary minus over datums, with PostgreSQL's overflow, division
//! and result-scale rules. Pure functions of their operands: the executor computes them per
//! row, the optimizer once for operands that are all constants (optimize/fold.rs).

use rust_decimal::Decimal;

use super::{Datum, SqlType};
use crate::error::{Result, SqlError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithmeticOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Power,
}

/// Unary minus: 22003 when an integer's negation leaves its type's range.
pub fn negate(value: Datum, ty: &SqlType) -> Result<Datum> {
    Ok(match value {
        Datum::Null => Datum::Null,
        Datum::Int(value) => Datum::Int(ty.check_integer(
            value.checked_neg().ok_or_else(|| SqlError::out_of_range(ty.message_name()))?,
        )?),
        Datum::Float(value) => Datum::Float(-value),
        // numeric has no negative zero (`-0.0::numeric` is 0.0).
        Datum::Numeric(value) if value.is_zero() => Datum::Numeric(value.abs()),
        Datum::Numeric(value) => Datum::Numeric(-value),
        Datum::Interval(interval) => Datum::Interval(interval.checked_negate()?),
        _ => return Err(SqlError::undefined_operator("operator does not exist: - unknown")),
    })
}

/// Arithmetic with PostgreSQL's overflow and division rules for the result type.
pub fn arithmetic(op: ArithmeticOp, left: &Datum, right: &Datum, ty: &SqlType) -> Result<Datum> {
    if left.is_null() || right.is_null() {
        return Ok(Datum::Null);
    }
    let datetime = match op {
        ArithmeticOp::Add => super::add_datetime(left, right)?,
        ArithmeticOp::Subtract => super::subtract_datetime(left, right)?,
        ArithmeticOp::Multiply => super::scale_interval(left, right, false)?,
        ArithmeticOp::Divide => super::scale_interval(left, right, true)?,
        ArithmeticOp::Modulo | ArithmeticOp::Power => None,
    };
    if let Some(result) = datetime {
        return Ok(result);
    }
    match ty {
        SqlType::Date => {
            let days = match left {
                Datum::Date(days) => *days,
                _ => 0,
            };
            let delta = right.as_int().unwrap_or(0);
            return date_plus_days(days, if op == ArithmeticOp::Add { delta } else { -delta });
        }
        SqlType::Int4 if matches!((left, right), (Datum::Date(_), Datum::Date(_))) => {
            let (Datum::Date(a), Datum::Date(b)) = (left, right) else { unreachable!() };
            if super::is_infinite_date(*a) || super::is_infinite_date(*b) {
                return Err(SqlError::new("22008", "cannot subtract infinite dates"));
            }
            return Ok(Datum::Int(i64::from(*a) - i64::from(*b)));
        }
        _ => {}
    }
    if ty.is_integer() {
        let (a, b) = (left.as_int().unwrap_or(0), right.as_int().unwrap_or(0));
        let overflow = || SqlError::out_of_range(ty.message_name());
        let result = match op {
            ArithmeticOp::Add => a.checked_add(b).ok_or_else(overflow)?,
            ArithmeticOp::Subtract => a.checked_sub(b).ok_or_else(overflow)?,
            ArithmeticOp::Multiply => a.checked_mul(b).ok_or_else(overflow)?,
            ArithmeticOp::Divide => {
                if b == 0 {
                    return Err(SqlError::division_by_zero());
                }
                a.checked_div(b).ok_or_else(overflow)?
            }
            ArithmeticOp::Modulo => {
                if b == 0 {
                    return Err(SqlError::division_by_zero());
                }
                a.checked_rem(b).unwrap_or(0)
            }
            ArithmeticOp::Power => return Ok(Datum::Float((a as f64).powf(b as f64))),
        };
        return Ok(Datum::Int(ty.check_integer(result)?));
    }
    match ty {
        SqlType::Float4 | SqlType::Float8 => {
            let (a, b) = (left.as_f64().unwrap_or(0.0), right.as_f64().unwrap_or(0.0));
            let result = match op {
                ArithmeticOp::Add => a + b,
                ArithmeticOp::Subtract => a - b,
                ArithmeticOp::Multiply => a * b,
                ArithmeticOp::Divide => {
                    if b == 0.0 {
                        return Err(SqlError::division_by_zero());
                    }
                    a / b
                }
                ArithmeticOp::Modulo => {
                    return Err(SqlError::undefined_operator(
                        "operator does not exist: double precision % double precision",
                    ))
                }
                ArithmeticOp::Power => a.powf(b),
            };
            if result.is_infinite() && a.is_finite() && b.is_finite() {
                return Err(SqlError::new("22003", "value out of range: overflow"));
            }
            let result = if *ty == SqlType::Float4 {
                #[allow(clippy::cast_possible_truncation)]
                let single = result as f32;
                f64::from(single)
            } else {
                result
            };
            Ok(Datum::Float(result))
        }
        _ => {
            let (a, b) =
                (left.as_decimal().unwrap_or_default(), right.as_decimal().unwrap_or_default());
            let overflow = || SqlError::out_of_range("numeric");
            // PostgreSQL's result scales: the larger input scale for + - %, their sum for *
            // (rust_decimal drops the scale of a zero result).
            let (sum_scale, max_scale) =
                ((a.scale() + b.scale()).min(28), a.scale().max(b.scale()));
            let scaled = |mut value: Decimal, scale: u32| {
                if value.scale() < scale {
                    value.rescale(scale);
                }
                value
            };
            Ok(Datum::Numeric(match op {
                ArithmeticOp::Add => scaled(a.checked_add(b).ok_or_else(overflow)?, max_scale),
                ArithmeticOp::Subtract => scaled(a.checked_sub(b).ok_or_else(overflow)?, max_scale),
                ArithmeticOp::Multiply => scaled(a.checked_mul(b).ok_or_else(overflow)?, sum_scale),
                ArithmeticOp::Divide => super::numeric_divide(a, b)?,
                ArithmeticOp::Modulo => {
                    if b.is_zero() {
                        return Err(SqlError::division_by_zero());
                    }
                    scaled(a.checked_rem(b).ok_or_else(overflow)?, max_scale)
                }
                ArithmeticOp::Power => super::numeric_power(a, b)?,
            }))
        }
    }
}

/// date_pli / date_mii: an infinite date stays infinite; a result past the date range
/// (4714-11-24 BC to 5874897-12-31) is 22008.
fn date_plus_days(days: i32, delta: i64) -> Result<Datum> {
    if super::is_infinite_date(days) {
        return Ok(Datum::Date(days));
    }
    let result = i64::from(days) + delta;
    let first = -super::EPOCH_JULIAN_DAY;
    let end = super::datetime_parse::DATE_END_JULIAN_DAY - super::EPOCH_JULIAN_DAY;
    if !(first..end).contains(&result) {
        return Err(SqlError::new("22008", "date out of range"));
    }
    Ok(Datum::Date(i32::try_from(result).expect("within the date range")))
}
