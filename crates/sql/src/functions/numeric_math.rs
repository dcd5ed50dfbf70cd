//! sqrt, exp, ln and log of numeric arguments as PostgreSQL's numeric.c computes them: the
//! result has at least NUMERIC_MIN_SIG_DIGITS (16) significant digits and no fewer decimals
//! than the argument (`sqrt(16.0)` is 4.000000000000000, `exp(1.0)` 2.7182818284590452).
//! The values are computed in rust_decimal's 28 digits and rounded to that scale; a result
//! that needs more digits than tierdb's numeric holds (28 significant, scale <= 28) is an
//! error, never a value with fewer digits than PostgreSQL's.

use rust_decimal::prelude::FromPrimitive;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

use crate::error::{Result, SqlError};

/// numeric.c's NUMERIC_MIN_SIG_DIGITS.
const MIN_SIGNIFICANT_DIGITS: i64 = 16;
/// The largest scale rust_decimal holds.
const MAX_SCALE: i64 = 28;
/// numeric.c's DEC_DIGITS: decimal digits per base-10000 digit of a PostgreSQL numeric.
const DECIMAL_DIGITS_PER_GROUP: i64 = 4;
/// The significant digits a result may have: the computation carries 28, and exp's
/// multiplications by e lose up to about three of them, the others up to about one. A
/// result needing more is an error rather than one with a wrong last digit.
const EXP_MAX_DIGITS: i64 = 24;
const MAX_DIGITS: i64 = 26;
/// Newton steps after the float estimate of a square root (each doubles its digits).
const SQRT_NEWTON_STEPS: u32 = 4;
/// Square roots taken before ln's series (each halves the logarithm; the series then
/// converges in about 25 terms).
const LN_SQUARE_ROOTS: u32 = 3;
/// ln(10) to rust_decimal's 28 digits.
fn ln_10() -> Decimal {
    "2.302585092994045684017991455".parse().expect("a valid constant")
}

/// Terms of a series are summed until they fall below this.
fn series_tolerance() -> Decimal {
    Decimal::new(1, 28)
}

pub(super) fn sqrt(value: Decimal) -> Result<Decimal> {
    if value.is_sign_negative() && !value.is_zero() {
        return Err(SqlError::new("2201F", "cannot take square root of a negative number"));
    }
    // PostgreSQL's zero has weight 0.
    let weight = if value.is_zero() { 0 } else { group_weight(value) };
    let square_root_weight = (weight + 1) * DECIMAL_DIGITS_PER_GROUP / 2 - 1;
    let scale = (MIN_SIGNIFICANT_DIGITS - square_root_weight).max(i64::from(value.scale()));
    with_scale(square_root(value), scale, MAX_DIGITS, "sqrt")
}

/// `value` rounded to `scale` decimals as numeric.c's div_var rounds a quotient (stddev and
/// variance's final step); an error when tierdb's numeric cannot hold that many digits.
pub(crate) fn round_to_scale(value: Decimal, scale: i64, function: &str) -> Result<Decimal> {
    with_scale(value, scale, MAX_DIGITS, function)
}

/// The square root of a non-negative value at a given scale: numeric.c's sqrt_var at the
/// rscale of the division before it (stddev's final step).
pub(crate) fn sqrt_at_scale(value: Decimal, scale: i64, function: &str) -> Result<Decimal> {
    assert!(!value.is_sign_negative() || value.is_zero(), "a variance is never negative");
    with_scale(square_root(value), scale, MAX_DIGITS, function)
}

pub(super) fn exp(value: Decimal) -> Result<Decimal> {
    // The result's decimal weight is about value * log10(e).
    let weight_estimate = value.to_f64().unwrap_or(0.0) * std::f64::consts::LOG10_E;
    #[allow(clippy::cast_possible_truncation)] // clamped to +-2000 first, as numeric.c does
    let weight = weight_estimate.clamp(-2000.0, 2000.0) as i64;
    let scale = (MIN_SIGNIFICANT_DIGITS - weight).max(i64::from(value.scale()));
    if weight >= MAX_SCALE || scale > MAX_SCALE {
        return Err(too_many_digits("exp"));
    }
    let whole = value.trunc();
    let fraction = value - whole;
    let mut result = exp_series(fraction);
    let steps = whole.abs().to_u32().ok_or_else(|| too_many_digits("exp"))?;
    let factor = if whole.is_sign_negative() { Decimal::E_INVERSE } else { Decimal::E };
    for _ in 0..steps {
        result = result.checked_mul(factor).ok_or_else(|| too_many_digits("exp"))?;
    }
    with_scale(result, scale, EXP_MAX_DIGITS, "exp")
}

pub(super) fn ln(value: Decimal) -> Result<Decimal> {
    check_logarithm(value)?;
    let scale = (MIN_SIGNIFICANT_DIGITS - ln_weight_estimate(value)).max(i64::from(value.scale()));
    with_scale(natural_log(value), scale, MAX_DIGITS, "ln")
}

/// log(x) and log10(x): PostgreSQL's log(10, x).
pub(super) fn log10(value: Decimal) -> Result<Decimal> {
    check_logarithm(value)?;
    let ten = Decimal::TEN;
    let weight = ln_weight_estimate(value) - ln_weight_estimate(ten);
    let scale = (MIN_SIGNIFICANT_DIGITS - weight).max(i64::from(value.scale()));
    with_scale(natural_log(value) / ln_10(), scale, MAX_DIGITS, "log")
}

/// log(base, x): numeric.c's log_var, its scale from the estimated weights of both
/// logarithms and the arguments' scales (22012 for base 1).
pub(super) fn log_base(base: Decimal, value: Decimal) -> Result<Decimal> {
    check_logarithm(base)?;
    check_logarithm(value)?;
    let weight = ln_weight_estimate(value) - ln_weight_estimate(base);
    let scale = (MIN_SIGNIFICANT_DIGITS - weight)
        .max(i64::from(base.scale()))
        .max(i64::from(value.scale()));
    let ln_base = natural_log(base);
    if ln_base.is_zero() {
        return Err(SqlError::division_by_zero());
    }
    let quotient = natural_log(value).checked_div(ln_base).ok_or_else(|| too_many_digits("log"))?;
    with_scale(quotient, scale, MAX_DIGITS, "log")
}

fn check_logarithm(value: Decimal) -> Result<()> {
    if value.is_zero() {
        return Err(SqlError::new("2201E", "cannot take logarithm of zero"));
    }
    if value.is_sign_negative() {
        return Err(SqlError::new("2201E", "cannot take logarithm of a negative number"));
    }
    Ok(())
}

fn too_many_digits(function: &str) -> SqlError {
    SqlError::new(
        "22003",
        format!(
            "the numeric result of {function} is out of range: tierdb computes it to at most {} significant digits and a scale of {MAX_SCALE}",
            if function == "exp" { EXP_MAX_DIGITS } else { MAX_DIGITS }
        ),
    )
}

/// `value` rounded (half away from zero, as numeric.c) to `scale` decimals, the trailing
/// zeros written; an error when that needs more than `max_digits` significant digits or
/// tierdb's numeric cannot hold them.
fn with_scale(value: Decimal, scale: i64, max_digits: i64, function: &str) -> Result<Decimal> {
    let scale = u32::try_from(scale.max(0)).expect("clamped to 0 above");
    if i64::from(scale) > MAX_SCALE {
        return Err(too_many_digits(function));
    }
    let mut rounded = value.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    rounded.rescale(scale);
    if rounded.scale() != scale {
        return Err(too_many_digits(function));
    }
    if rounded.is_zero() {
        rounded.set_sign_positive(true);
    } else if decimal_weight(rounded) + 1 + i64::from(scale) > max_digits {
        return Err(too_many_digits(function));
    }
    Ok(rounded)
}

/// floor(log10(|value|)) of a non-zero value.
fn decimal_weight(value: Decimal) -> i64 {
    let digits = value.mantissa().unsigned_abs().checked_ilog10().map_or(0, i64::from);
    digits - i64::from(value.scale())
}

/// The weight of a PostgreSQL numeric's first base-10000 digit.
fn group_weight(value: Decimal) -> i64 {
    decimal_weight(value).div_euclid(DECIMAL_DIGITS_PER_GROUP)
}

/// numeric.c's estimate_ln_dweight: the decimal weight of ln(value), from value - 1 near 1
/// and otherwise from the first two base-10000 digits.
fn ln_weight_estimate(value: Decimal) -> i64 {
    let near_one = Decimal::new(9, 1)..=Decimal::new(11, 1);
    if near_one.contains(&value) {
        let difference = value - Decimal::ONE;
        return if difference.is_zero() { 0 } else { decimal_weight(difference) };
    }
    let weight = group_weight(value);
    let mantissa = value.mantissa().unsigned_abs();
    let exponent = -i64::from(value.scale());
    // The value's digits from its first group down: two groups when it has more than one.
    let below_first = exponent - weight * DECIMAL_DIGITS_PER_GROUP;
    let single_group = below_first >= 0 || mantissa.is_multiple_of(power_of_ten(-below_first));
    let (shift, dweight) = if single_group {
        (below_first, weight * DECIMAL_DIGITS_PER_GROUP)
    } else {
        (below_first + DECIMAL_DIGITS_PER_GROUP, (weight - 1) * DECIMAL_DIGITS_PER_GROUP)
    };
    let digits =
        if shift >= 0 { mantissa * power_of_ten(shift) } else { mantissa / power_of_ten(-shift) };
    #[allow(clippy::cast_precision_loss)] // at most 8 digits
    let ln_value = (digits as f64).ln()
        + f64::from(i32::try_from(dweight).unwrap_or(0)) * std::f64::consts::LN_10;
    #[allow(clippy::cast_possible_truncation)] // C's (int) cast of a small logarithm
    let estimate = ln_value.abs().log10() as i64;
    estimate
}

fn power_of_ten(exponent: i64) -> u128 {
    10u128.pow(u32::try_from(exponent.clamp(0, 38)).expect("clamped"))
}

/// e^x for |x| < 1 by its Taylor series.
fn exp_series(x: Decimal) -> Decimal {
    let mut sum = Decimal::ONE;
    let mut term = Decimal::ONE;
    let mut n = Decimal::ONE;
    while term.abs() >= series_tolerance() {
        term = term * x / n;
        sum += term;
        n += Decimal::ONE;
    }
    sum
}

/// ln(x) for x > 0: x = m * 10^e with 1 <= m < 10, m's root 2^LN_SQUARE_ROOTS near 1, then
/// 2 atanh((r - 1) / (r + 1)).
fn natural_log(value: Decimal) -> Decimal {
    let exponent = decimal_weight(value);
    let mut reduced = Decimal::from_i128_with_scale(
        value.mantissa(),
        u32::try_from(i64::from(value.scale()) + exponent).unwrap_or(0),
    );
    for _ in 0..LN_SQUARE_ROOTS {
        reduced = square_root(reduced);
    }
    let y = (reduced - Decimal::ONE) / (reduced + Decimal::ONE);
    let y_squared = y * y;
    let mut power = y;
    let mut sum = Decimal::ZERO;
    let mut denominator = Decimal::ONE;
    while power.abs() >= series_tolerance() {
        sum += power / denominator;
        power *= y_squared;
        denominator += Decimal::TWO;
    }
    let roots = Decimal::from(2u32.pow(LN_SQUARE_ROOTS + 1));
    sum * roots + ln_10() * Decimal::from(exponent)
}

/// The square root of a non-negative value: the float's root, then Newton's steps.
fn square_root(value: Decimal) -> Decimal {
    if value.is_zero() {
        return Decimal::ZERO;
    }
    let estimate = value.to_f64().map_or(1.0, f64::sqrt);
    let mut root = Decimal::from_f64(estimate).filter(|root| !root.is_zero()).unwrap_or(value);
    for _ in 0..SQRT_NEWTON_STEPS {
        root = (root + value / root) / Decimal::TWO;
    }
    root
}
