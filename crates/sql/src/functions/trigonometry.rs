//! Trigonometric and hyperbolic functions, and degrees/radians, as PostgreSQL's float.c
//! computes them: the degree variants reduce their argument to the first quadrant and
//! scale by constants so that sind(30) is exactly 0.5 and tand(45) exactly 1.

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::Datum;

/// PostgreSQL's RADIANS_PER_DEGREE (float.c), to the digits it is written with there.
#[allow(clippy::excessive_precision)]
const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295_769_2;

fn argument(call: &Call<'_>, index: usize) -> f64 {
    call.args[index].as_f64().unwrap_or(0.0)
}

fn out_of_range() -> SqlError {
    SqlError::new("22003", "input is out of range")
}

/// The float functions of one argument: name, value.
pub(super) fn unary(name: &str, call: Call<'_>) -> Result<Datum> {
    let x = argument(&call, 0);
    if x.is_nan() {
        return Ok(Datum::Float(f64::NAN));
    }
    let result = match name {
        "sin" | "cos" | "tan" | "cot" if x.is_infinite() => return Err(out_of_range()),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.tan(),
        "cot" => 1.0 / x.tan(),
        "asin" | "acos" | "asind" | "acosd" if !(-1.0..=1.0).contains(&x) => {
            return Err(out_of_range())
        }
        "asin" => x.asin(),
        "acos" => x.acos(),
        "atan" => x.atan(),
        "asind" => degree_asin(x),
        "acosd" => degree_acos(x),
        "atand" => x.atan() / 1.0_f64.atan() * 45.0,
        "sind" | "cosd" | "tand" | "cotd" => degree_trigonometry(name, x)?,
        "sinh" => x.sinh(),
        "cosh" => x.cosh(),
        "tanh" => x.tanh(),
        "asinh" => x.asinh(),
        "acosh" if x < 1.0 => return Err(out_of_range()),
        "acosh" => x.acosh(),
        "atanh" if !(-1.0..=1.0).contains(&x) => return Err(out_of_range()),
        "atanh" if x.abs() == 1.0 => f64::INFINITY.copysign(x),
        "atanh" => x.atanh(),
        "degrees" => check_overflow(x, x / RADIANS_PER_DEGREE)?,
        "radians" => check_overflow(x, x * RADIANS_PER_DEGREE)?,
        _ => return Err(SqlError::internal(format!("{name} is no float function"))),
    };
    Ok(Datum::Float(result))
}

/// atan2 and atan2d.
pub(super) fn atan2(degrees: bool, call: Call<'_>) -> Result<Datum> {
    let (y, x) = (argument(&call, 0), argument(&call, 1));
    let radians = y.atan2(x);
    Ok(Datum::Float(if degrees { radians / 1.0_f64.atan() * 45.0 } else { radians }))
}

/// float8_mul/float8_div's checks: an infinite result of a finite input overflows, a zero
/// result of a non-zero input underflows.
fn check_overflow(input: f64, result: f64) -> Result<f64> {
    if result.is_infinite() && input.is_finite() {
        return Err(SqlError::new("22003", "value out of range: overflow"));
    }
    if result == 0.0 && input != 0.0 {
        return Err(SqlError::new("22003", "value out of range: underflow"));
    }
    Ok(result)
}

fn degree_asin(x: f64) -> f64 {
    if x >= 0.0 {
        asin_first_quadrant(x)
    } else {
        -asin_first_quadrant(-x)
    }
}

fn degree_acos(x: f64) -> f64 {
    if x >= 0.0 {
        acos_first_quadrant(x)
    } else {
        90.0 + asin_first_quadrant(-x)
    }
}

fn asin_first_quadrant(x: f64) -> f64 {
    if x <= 0.5 {
        x.asin() / 0.5_f64.asin() * 30.0
    } else {
        90.0 - x.acos() / 0.5_f64.acos() * 60.0
    }
}

fn acos_first_quadrant(x: f64) -> f64 {
    if x <= 0.5 {
        90.0 - x.asin() / 0.5_f64.asin() * 30.0
    } else {
        x.acos() / 0.5_f64.acos() * 60.0
    }
}

fn sin_0_to_30(x: f64) -> f64 {
    let sin_30 = (30.0 * RADIANS_PER_DEGREE).sin();
    (x * RADIANS_PER_DEGREE).sin() / sin_30 / 2.0
}

fn cos_0_to_60(x: f64) -> f64 {
    let one_minus_cos_60 = 1.0 - (60.0 * RADIANS_PER_DEGREE).cos();
    1.0 - (1.0 - (x * RADIANS_PER_DEGREE).cos()) / one_minus_cos_60 / 2.0
}

fn sin_first_quadrant(x: f64) -> f64 {
    if x <= 30.0 {
        sin_0_to_30(x)
    } else {
        cos_0_to_60(90.0 - x)
    }
}

fn cos_first_quadrant(x: f64) -> f64 {
    if x <= 60.0 {
        cos_0_to_60(x)
    } else {
        sin_0_to_30(90.0 - x)
    }
}

/// sind, cosd, tand, cotd: the argument reduced to [0, 90] with the sign the reduction
/// implies, as dsind/dcosd/dtand/dcotd do.
fn degree_trigonometry(name: &str, x: f64) -> Result<f64> {
    if x.is_infinite() {
        return Err(out_of_range());
    }
    let mut angle = x % 360.0;
    let mut sign = 1.0;
    if angle < 0.0 {
        angle = -angle;
        // cosd is even: its sign does not change.
        if name != "cosd" {
            sign = -sign;
        }
    }
    if angle > 180.0 {
        angle = 360.0 - angle;
        if name != "cosd" {
            sign = -sign;
        }
    }
    if angle > 90.0 {
        angle = 180.0 - angle;
        if name != "sind" {
            sign = -sign;
        }
    }
    let tan_45 = sin_first_quadrant(45.0) / cos_first_quadrant(45.0);
    let cot_45 = cos_first_quadrant(45.0) / sin_first_quadrant(45.0);
    let result = match name {
        "sind" => sign * sin_first_quadrant(angle),
        "cosd" => sign * cos_first_quadrant(angle),
        "tand" => sign * (sin_first_quadrant(angle) / cos_first_quadrant(angle) / tan_45),
        _ => sign * (cos_first_quadrant(angle) / sin_first_quadrant(angle) / cot_45),
    };
    // PostgreSQL forces minus zero to zero for tand and cotd (not for sind and cosd).
    let is_tangent = matches!(name, "tand" | "cotd");
    Ok(if is_tangent && result == 0.0 { 0.0 } else { result })
}
