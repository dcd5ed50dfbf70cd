//! Integer and numeric functions: div, gcd, lcm, factorial, width_bucket, scale, min_scale
//! and trim_scale, with PostgreSQL's result types, scales and errors.

use rust_decimal::Decimal;

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::{Datum, SqlType};

/// The largest n whose factorial fits rust_decimal's 96-bit mantissa (27! < 7.9e28 < 28!).
const FACTORIAL_ARGUMENT_MAX: i64 = 27;

fn numeric(datum: &Datum) -> Decimal {
    match datum {
        Datum::Numeric(value) => *value,
        other => Decimal::from(other.as_int().unwrap_or(0)),
    }
}

fn numeric_overflow() -> SqlError {
    SqlError::unsupported("a numeric result beyond 28 significant digits is not supported")
}

/// div(y, x): the integral quotient truncated towards zero (numeric with scale 0).
pub(super) fn div(call: Call<'_>) -> Result<Datum> {
    let (dividend, divisor) = (numeric(&call.args[0]), numeric(&call.args[1]));
    if divisor.is_zero() {
        return Err(SqlError::division_by_zero());
    }
    let mut quotient = dividend.checked_div(divisor).ok_or_else(numeric_overflow)?.trunc();
    // The division rounds to 28 digits: a quotient rounded up to the next integer leaves a
    // remainder of the other sign, and is one too far from zero.
    let remainder = dividend - quotient * divisor;
    if !remainder.is_zero() && remainder.is_sign_negative() != dividend.is_sign_negative() {
        let step = if dividend.is_sign_negative() == divisor.is_sign_negative() {
            Decimal::ONE
        } else {
            Decimal::NEGATIVE_ONE
        };
        quotient -= step;
    }
    quotient.rescale(0);
    Ok(Datum::Numeric(quotient.normalize_zero()))
}

trait NormalizeZero {
    fn normalize_zero(self) -> Self;
}

impl NormalizeZero for Decimal {
    /// A zero without a minus sign (numeric has no negative zero).
    fn normalize_zero(mut self) -> Decimal {
        if self.is_zero() {
            self.set_sign_positive(true);
        }
        self
    }
}

/// gcd and lcm of integers (in i128, so that gcd(-2^63, 0) = 2^63 is seen to overflow).
fn integer_gcd(left: i128, right: i128) -> i128 {
    let (mut a, mut b) = (left.abs(), right.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn decimal_gcd(left: Decimal, right: Decimal) -> Decimal {
    let (mut a, mut b) = (left.abs(), right.abs());
    while !b.is_zero() {
        (a, b) = (b, a % b);
    }
    a
}

/// The larger display scale of the two arguments, as PostgreSQL's gcd and lcm keep.
fn with_larger_scale(mut value: Decimal, left: Decimal, right: Decimal) -> Decimal {
    value.rescale(left.scale().max(right.scale()));
    value.normalize_zero()
}

pub(super) fn gcd(call: Call<'_>) -> Result<Datum> {
    if let (Datum::Numeric(_), _) | (_, Datum::Numeric(_)) = (&call.args[0], &call.args[1]) {
        let (left, right) = (numeric(&call.args[0]), numeric(&call.args[1]));
        return Ok(Datum::Numeric(with_larger_scale(decimal_gcd(left, right), left, right)));
    }
    let (left, right) = (i128::from(call.int(0)), i128::from(call.int(1)));
    integer_result(&call, integer_gcd(left, right))
}

pub(super) fn lcm(call: Call<'_>) -> Result<Datum> {
    if let (Datum::Numeric(_), _) | (_, Datum::Numeric(_)) = (&call.args[0], &call.args[1]) {
        let (left, right) = (numeric(&call.args[0]), numeric(&call.args[1]));
        if left.is_zero() || right.is_zero() {
            return Ok(Datum::Numeric(with_larger_scale(Decimal::ZERO, left, right)));
        }
        let divisor = decimal_gcd(left, right);
        let multiple = (left / divisor).trunc().checked_mul(right).ok_or_else(numeric_overflow)?;
        return Ok(Datum::Numeric(with_larger_scale(multiple.abs(), left, right)));
    }
    let (left, right) = (i128::from(call.int(0)), i128::from(call.int(1)));
    if left == 0 || right == 0 {
        return integer_result(&call, 0);
    }
    integer_result(&call, (left / integer_gcd(left, right) * right).abs())
}

fn integer_result(call: &Call<'_>, value: i128) -> Result<Datum> {
    let value =
        i64::try_from(value).map_err(|_| SqlError::out_of_range(call.output.message_name()))?;
    Ok(Datum::Int(call.output.check_integer(value)?))
}

pub(super) fn factorial(call: Call<'_>) -> Result<Datum> {
    let n = call.int(0);
    if n < 0 {
        return Err(SqlError::new("2201E", "factorial of a negative number is undefined"));
    }
    if n > FACTORIAL_ARGUMENT_MAX {
        return Err(numeric_overflow());
    }
    let product = (2..=n).fold(Decimal::ONE, |product, factor| product * Decimal::from(factor));
    Ok(Datum::Numeric(product))
}

fn width_bucket_error(message: &str) -> SqlError {
    SqlError::new("2201G", message.to_owned())
}

/// width_bucket(operand, low, high, count) on float8 or numeric bounds, as PostgreSQL 15.
pub(super) fn width_bucket(call: Call<'_>) -> Result<Datum> {
    if call.args.len() == 2 {
        return thresholds_bucket(&call);
    }
    let count = call.int(3);
    if count <= 0 {
        return Err(width_bucket_error("count must be greater than zero"));
    }
    let last = count.checked_add(1).filter(|last| i32::try_from(*last).is_ok());
    let last = || last.ok_or_else(|| SqlError::out_of_range("integer"));
    let bucket = if matches!(call.args[0], Datum::Numeric(_)) {
        let [operand, low, high] = [0, 1, 2].map(|index| numeric(&call.args[index]));
        let reversed = low > high;
        if low == high {
            return Err(width_bucket_error("lower bound cannot equal upper bound"));
        }
        if (!reversed && operand < low) || (reversed && operand > low) {
            0
        } else if (!reversed && operand >= high) || (reversed && operand <= high) {
            last()?
        } else {
            let (offset, width) =
                if reversed { (low - operand, low - high) } else { (operand - low, high - low) };
            let scaled = offset.checked_mul(Decimal::from(count)).ok_or_else(numeric_overflow)?;
            let bucket =
                (scaled.checked_div(width).ok_or_else(numeric_overflow)? + Decimal::ONE).floor();
            i64::try_from(bucket).map_err(|_| SqlError::out_of_range("integer"))?
        }
    } else {
        float_bucket(&call, count, last)?
    };
    Ok(Datum::Int(bucket))
}

/// width_bucket(operand, thresholds): how many of the sorted thresholds are at most the
/// operand, by width_bucket_array's binary search (22004 for a NULL threshold).
fn thresholds_bucket(call: &Call<'_>) -> Result<Datum> {
    let thresholds = crate::types::array_value(&call.args[1])?;
    if thresholds.elements.iter().any(Datum::is_null) {
        return Err(SqlError::new("22004", "thresholds array must not contain NULLs"));
    }
    let operand = &call.args[0];
    let (mut left, mut right) = (0, thresholds.elements.len());
    while left < right {
        let middle = left + (right - left) / 2;
        if operand.compare(&thresholds.elements[middle]) == Some(std::cmp::Ordering::Less) {
            right = middle;
        } else {
            left = middle + 1;
        }
    }
    super::count(left)
}

fn float_bucket(call: &Call<'_>, count: i64, last: impl Fn() -> Result<i64>) -> Result<i64> {
    let [operand, low, high] = [0, 1, 2].map(|index| call.args[index].as_f64().unwrap_or(0.0));
    if operand.is_nan() || low.is_nan() || high.is_nan() {
        return Err(width_bucket_error("operand, lower bound, and upper bound cannot be NaN"));
    }
    if low.is_infinite() || high.is_infinite() {
        return Err(width_bucket_error("lower and upper bounds must be finite"));
    }
    if low == high {
        return Err(width_bucket_error("lower bound cannot equal upper bound"));
    }
    let reversed = low > high;
    if (!reversed && operand < low) || (reversed && operand > low) {
        return Ok(0);
    }
    if (!reversed && operand >= high) || (reversed && operand <= high) {
        return last();
    }
    let (offset, width) =
        if reversed { (low - operand, low - high) } else { (operand - low, high - low) };
    #[allow(clippy::cast_precision_loss)]
    let count_float = count as f64;
    // PostgreSQL 15 converts the bucket to int4 by truncation, as C does.
    #[allow(clippy::cast_possible_truncation)]
    let bucket = (count_float * offset / width + 1.0) as i64;
    Ok(bucket)
}

/// scale, min_scale and trim_scale of a numeric.
pub(super) fn scale(name: &str, call: Call<'_>) -> Result<Datum> {
    let value = numeric(&call.args[0]);
    Ok(match name {
        "scale" => Datum::Int(i64::from(value.scale())),
        "min_scale" => Datum::Int(i64::from(value.normalize().scale())),
        _ => Datum::Numeric(value.normalize()),
    })
}

/// to_hex of an int4 or int8: the two's complement digits of the argument's width.
pub(super) fn to_hex(call: Call<'_>) -> Result<Datum> {
    let value = call.int(0);
    let digits = if call.arg_types[0] == SqlType::Int8 {
        format!("{value:x}")
    } else {
        let value = i32::try_from(value).map_err(|_| SqlError::out_of_range("integer"))?;
        format!("{value:x}")
    };
    Ok(Datum::Text(digits))
}
