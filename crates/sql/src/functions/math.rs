//! Numeric functions.

use rust_decimal::prelude::FromPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::{self, Datum, SqlType};

/// The argument as a float (the binder coerced it to a numeric type).
fn float(datum: &Datum) -> f64 {
    datum.as_f64().unwrap_or(0.0)
}

pub(super) fn abs(call: Call<'_>) -> Result<Datum> {
    Ok(match &call.args[0] {
        Datum::Int(value) => {
            let absolute = value
                .checked_abs()
                .ok_or_else(|| SqlError::out_of_range(call.output.message_name()))?;
            Datum::Int(call.output.check_integer(absolute)?)
        }
        Datum::Numeric(value) => Datum::Numeric(value.abs()),
        other => Datum::Float(float(other).abs()),
    })
}

pub(super) fn sign(call: Call<'_>) -> Result<Datum> {
    Ok(match &call.args[0] {
        Datum::Numeric(value) => Datum::Numeric(if value.is_zero() {
            Decimal::ZERO
        } else if value.is_sign_negative() {
            Decimal::NEGATIVE_ONE
        } else {
            Decimal::ONE
        }),
        // PostgreSQL's sign of 0 (and -0) is 0; f64::signum gives 1 (or -1).
        other => Datum::Float(match float(other) {
            value if value > 0.0 => 1.0,
            value if value < 0.0 => -1.0,
            value => value.abs(),
        }),
    })
}

pub(super) fn ceil(call: Call<'_>) -> Result<Datum> {
    Ok(match &call.args[0] {
        Datum::Numeric(value) => Datum::Numeric(value.ceil()),
        other => Datum::Float(float(other).ceil()),
    })
}

pub(super) fn floor(call: Call<'_>) -> Result<Datum> {
    Ok(match &call.args[0] {
        Datum::Numeric(value) => Datum::Numeric(value.floor()),
        other => Datum::Float(float(other).floor()),
    })
}

/// The decimal places of round/trunc: rust_decimal keeps at most 28, and a shift left of
/// more than 27 places leaves zero; larger requests are clamped to those, as the result is
/// the same.
fn places(call: &Call<'_>) -> i64 {
    if call.args.len() > 1 {
        call.int(1).clamp(-27, 28)
    } else {
        0
    }
}

fn round_numeric(value: Decimal, places: i64, strategy: RoundingStrategy) -> Result<Decimal> {
    let digits = u32::try_from(places.unsigned_abs())
        .map_err(|_| SqlError::internal("decimal places are clamped to 28"))?;
    if places >= 0 {
        let mut rounded = value.round_dp_with_strategy(digits, strategy);
        rounded.rescale(digits);
        Ok(rounded)
    } else {
        let factor = Decimal::from_i128_with_scale(10i128.pow(digits), 0);
        Ok((value / factor).round_dp_with_strategy(0, strategy) * factor)
    }
}

pub(super) fn round(call: Call<'_>) -> Result<Datum> {
    Ok(match &call.args[0] {
        Datum::Numeric(value) => Datum::Numeric(round_numeric(
            *value,
            places(&call),
            RoundingStrategy::MidpointAwayFromZero,
        )?),
        other => Datum::Float(float(other).round_ties_even()),
    })
}

pub(super) fn trunc(call: Call<'_>) -> Result<Datum> {
    Ok(match &call.args[0] {
        Datum::Numeric(value) => {
            Datum::Numeric(round_numeric(*value, places(&call), RoundingStrategy::ToZero)?)
        }
        other => Datum::Float(float(other).trunc()),
    })
}

pub(super) fn power(call: Call<'_>) -> Result<Datum> {
    Ok(match (&call.args[0], &call.args[1]) {
        (Datum::Numeric(base), Datum::Numeric(exponent)) => {
            Datum::Numeric(types::numeric_power(*base, *exponent)?)
        }
        (base, exponent) => {
            let (base, exponent) = (float(base), float(exponent));
            if base == 0.0 && exponent < 0.0 {
                return Err(SqlError::new("2201F", "zero raised to a negative power is undefined"));
            }
            Datum::Float(base.powf(exponent))
        }
    })
}

/// A float function's result in the call's output type (numeric arguments give numeric).
fn float_result(call: &Call<'_>, result: f64) -> Result<Datum> {
    if matches!(call.output, SqlType::Numeric { .. }) {
        let decimal = Decimal::from_f64(result).ok_or_else(|| SqlError::out_of_range("numeric"))?;
        Ok(Datum::Numeric(decimal.round_dp(16)))
    } else {
        Ok(Datum::Float(result))
    }
}

pub(super) fn sqrt(call: Call<'_>) -> Result<Datum> {
    if let Datum::Numeric(value) = &call.args[0] {
        return Ok(Datum::Numeric(super::numeric_math::sqrt(*value)?));
    }
    let value = float(&call.args[0]);
    if value < 0.0 {
        return Err(SqlError::new("2201F", "cannot take square root of a negative number"));
    }
    float_result(&call, value.sqrt())
}

pub(super) fn exp(call: Call<'_>) -> Result<Datum> {
    if let Datum::Numeric(value) = &call.args[0] {
        return Ok(Datum::Numeric(super::numeric_math::exp(*value)?));
    }
    let value = float(&call.args[0]);
    let result = value.exp();
    if result.is_infinite() && value.is_finite() && !matches!(call.output, SqlType::Numeric { .. })
    {
        return Err(SqlError::new("22003", "value out of range: overflow"));
    }
    float_result(&call, result)
}

pub(super) fn cbrt(call: Call<'_>) -> Result<Datum> {
    let value = float(&call.args[0]);
    float_result(&call, value.cbrt())
}

fn check_logarithm(value: f64) -> Result<()> {
    if value <= 0.0 {
        return Err(SqlError::new(
            "2201E",
            if value == 0.0 {
                "cannot take logarithm of zero"
            } else {
                "cannot take logarithm of a negative number"
            },
        ));
    }
    Ok(())
}

pub(super) fn ln(call: Call<'_>) -> Result<Datum> {
    if let Datum::Numeric(value) = &call.args[0] {
        return Ok(Datum::Numeric(super::numeric_math::ln(*value)?));
    }
    let value = float(&call.args[0]);
    check_logarithm(value)?;
    float_result(&call, value.ln())
}

pub(super) fn log(call: Call<'_>) -> Result<Datum> {
    if let [Datum::Numeric(base), Datum::Numeric(value)] = call.args.as_slice() {
        return Ok(Datum::Numeric(super::numeric_math::log_base(*base, *value)?));
    }
    if let Datum::Numeric(value) = &call.args[0] {
        return Ok(Datum::Numeric(super::numeric_math::log10(*value)?));
    }
    let value = float(&call.args[0]);
    check_logarithm(value)?;
    float_result(&call, value.log10())
}

pub(super) fn pi(_call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Float(std::f64::consts::PI))
}
