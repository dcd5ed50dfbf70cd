//! The running states of the statistical aggregates, computed as PostgreSQL 15 computes
//! them so that results agree to the last digit:
//! - variance and stddev of integers and numeric: exact sums of the values and of their
//!   squares, then numeric.c's numeric_stddev_internal (the quotient rounded to
//!   select_div_scale's scale, its square root taken at that scale);
//! - variance and stddev of float4 and float8: float.c's float8_accum (Youngs-Cramer);
//! - corr, covar_*, regr_*: float.c's float8_regr_accum (Youngs-Cramer over Y and X).

use rust_decimal::Decimal;

use crate::error::{Result, SqlError};
use crate::functions;
use crate::plan::Regression;
use crate::types::{self, Datum};

/// Count, sum and sum of squares of numeric values, exact: decimal mantissas at the
/// largest scale seen (`scale`; the squares at twice it) in 128-bit integers, wider than
/// a decimal, so that the sums of large integers fit.
#[derive(Clone, Default)]
pub(crate) struct NumericMoments {
    count: i64,
    scale: u32,
    sum: i128,
    sum_squares: i128,
}

/// A numeric computation that tierdb's numeric cannot hold exactly: an error rather than
/// a value rounded where PostgreSQL's is not.
fn numeric_too_long(function: &str) -> SqlError {
    SqlError::new(
        "22003",
        format!("the numeric sums of {function} need more digits than tierdb's numeric holds"),
    )
}

fn power_of_ten(exponent: u32) -> Option<i128> {
    10i128.checked_pow(exponent)
}

impl NumericMoments {
    pub(crate) fn add(&mut self, value: Decimal, function: &str) -> Result<()> {
        let too_long = || numeric_too_long(function);
        if value.scale() > self.scale {
            let shift = value.scale() - self.scale;
            let factor = power_of_ten(shift).ok_or_else(too_long)?;
            let square_factor = power_of_ten(shift * 2).ok_or_else(too_long)?;
            self.sum = self.sum.checked_mul(factor).ok_or_else(too_long)?;
            self.sum_squares = self.sum_squares.checked_mul(square_factor).ok_or_else(too_long)?;
            self.scale = value.scale();
        }
        let factor = power_of_ten(self.scale - value.scale()).ok_or_else(too_long)?;
        let mantissa = value.mantissa().checked_mul(factor).ok_or_else(too_long)?;
        let square = mantissa.checked_mul(mantissa).ok_or_else(too_long)?;
        self.sum = self.sum.checked_add(mantissa).ok_or_else(too_long)?;
        self.sum_squares = self.sum_squares.checked_add(square).ok_or_else(too_long)?;
        self.count += 1;
        Ok(())
    }

    /// numeric_stddev_internal: (n * sum_squares - sum^2) / (n * (n - 1)) or / (n * n),
    /// rounded to select_div_scale's scale; stddev takes the root at the same scale.
    pub(crate) fn finish(&self, sample: bool, root: bool, function: &str) -> Result<Datum> {
        if self.count == 0 || (sample && self.count == 1) {
            return Ok(Datum::Null);
        }
        let numerator = self.numerator().ok_or_else(|| numeric_too_long(function))?;
        if numerator <= 0 {
            // numeric.c answers a zero (or rounded below zero) numerator with a plain 0.
            return Ok(Datum::Numeric(Decimal::ZERO));
        }
        let numerator = numerator.unsigned_abs();
        let others = if sample { self.count - 1 } else { self.count };
        let denominator = u128::try_from(i128::from(self.count) * i128::from(others))
            .expect("a product of two positive counts");
        let numerator_scale = self.scale * 2;
        let scale = types::division_scale_of(
            types::scaled_integer_weight(numerator, numerator_scale),
            numerator_scale,
            types::scaled_integer_weight(denominator, 0),
            0,
        );
        let quotient = divide_rounded(numerator, denominator, scale - numerator_scale)
            .ok_or_else(|| numeric_too_long(function))?;
        let quotient = i128::try_from(quotient).map_err(|_| numeric_too_long(function))?;
        let quotient = Decimal::try_from_i128_with_scale(quotient, scale)
            .map_err(|_| numeric_too_long(function))?;
        let variance = functions::round_to_scale(quotient, i64::from(scale), function)?;
        if !root {
            return Ok(Datum::Numeric(variance));
        }
        let deviation = functions::sqrt_at_scale(variance, i64::from(scale), function)?;
        Ok(Datum::Numeric(deviation))
    }

    /// n * sum_squares - sum^2 (at twice the scale), without the products' overflow:
    /// with sum = n * q + r, it is n * (sum_squares - q * (n * q + 2 * r)) - r^2, whose
    /// inner difference is about n times the variance.
    fn numerator(&self) -> Option<i128> {
        let count = i128::from(self.count);
        let quotient = self.sum.div_euclid(count);
        let remainder = self.sum.rem_euclid(count);
        let square_part = quotient.checked_mul(count)?.checked_add(remainder.checked_mul(2)?)?;
        let inner = self.sum_squares.checked_sub(quotient.checked_mul(square_part)?)?;
        inner.checked_mul(count)?.checked_sub(remainder.checked_mul(remainder)?)
    }
}

/// numerator / denominator with `decimals` more decimal digits, rounded half away from
/// zero (div_var's rounding), by long division so that no product overflows; None when
/// the quotient passes 128 bits.
fn divide_rounded(numerator: u128, denominator: u128, decimals: u32) -> Option<u128> {
    assert!(denominator > 0, "a count of rows");
    let mut quotient = numerator / denominator;
    let mut remainder = numerator % denominator;
    for _ in 0..decimals {
        let widened = remainder.checked_mul(10)?;
        quotient = quotient.checked_mul(10)?.checked_add(widened / denominator)?;
        remainder = widened % denominator;
    }
    if remainder.checked_mul(2)? >= denominator {
        quotient = quotient.checked_add(1)?;
    }
    Some(quotient)
}

fn float_overflow() -> SqlError {
    SqlError::new("22003", "value out of range: overflow")
}

/// float8_accum's transition values: N, Sx and Sxx, the sum of squared deviations.
#[derive(Clone, Copy, Default)]
pub(crate) struct FloatMoments {
    count: f64,
    sum: f64,
    squared_deviations: f64,
}

impl FloatMoments {
    pub(crate) fn add(&mut self, value: f64) -> Result<()> {
        let previous_count = self.count;
        let previous_sum = self.sum;
        self.count += 1.0;
        self.sum += value;
        if previous_count > 0.0 {
            let deviation = value * self.count - self.sum;
            self.squared_deviations += deviation * deviation / (self.count * previous_count);
            if self.sum.is_infinite() || self.squared_deviations.is_infinite() {
                if !previous_sum.is_infinite() && !value.is_infinite() {
                    return Err(float_overflow());
                }
                self.squared_deviations = f64::NAN;
            }
        } else if !value.is_finite() {
            // A first Inf or NaN would otherwise leave a variance of zero.
            self.squared_deviations = f64::NAN;
        }
        Ok(())
    }

    pub(crate) fn finish(&self, sample: bool, root: bool) -> Datum {
        let divisor = if sample { self.count - 1.0 } else { self.count };
        if divisor <= 0.0 {
            return Datum::Null;
        }
        let variance = self.squared_deviations / divisor;
        Datum::Float(if root { variance.sqrt() } else { variance })
    }
}

/// float8_regr_accum's transition values: N, Sx, Sxx, Sy, Syy, Sxy.
#[derive(Clone, Copy, Default)]
pub(crate) struct RegressionSums {
    count: f64,
    sum_x: f64,
    squares_x: f64,
    sum_y: f64,
    squares_y: f64,
    products: f64,
}

impl RegressionSums {
    pub(crate) fn add(&mut self, y: f64, x: f64) -> Result<()> {
        let previous = *self;
        self.count += 1.0;
        self.sum_x += x;
        self.sum_y += y;
        if previous.count <= 0.0 {
            // A first Inf or NaN would otherwise leave the sums of squares at zero.
            if !x.is_finite() {
                self.squares_x = f64::NAN;
                self.products = f64::NAN;
            }
            if !y.is_finite() {
                self.squares_y = f64::NAN;
                self.products = f64::NAN;
            }
            return Ok(());
        }
        let deviation_x = x * self.count - self.sum_x;
        let deviation_y = y * self.count - self.sum_y;
        let scale = 1.0 / (self.count * previous.count);
        self.squares_x += deviation_x * deviation_x * scale;
        self.squares_y += deviation_y * deviation_y * scale;
        self.products += deviation_x * deviation_y * scale;
        self.check_overflow(&previous, y, x)
    }

    /// Finite inputs that reach an infinite sum overflow; an infinite input makes the
    /// sums of squares NaN, never infinite.
    fn check_overflow(&mut self, previous: &RegressionSums, y: f64, x: f64) -> Result<()> {
        let x_finite = !previous.sum_x.is_infinite() && !x.is_infinite();
        let y_finite = !previous.sum_y.is_infinite() && !y.is_infinite();
        let x_overflow = self.sum_x.is_infinite() || self.squares_x.is_infinite();
        let y_overflow = self.sum_y.is_infinite() || self.squares_y.is_infinite();
        let products_overflow = self.products.is_infinite();
        if (x_overflow && x_finite)
            || (y_overflow && y_finite)
            || (products_overflow && x_finite && y_finite)
        {
            return Err(float_overflow());
        }
        for sum in [&mut self.squares_x, &mut self.squares_y, &mut self.products] {
            if sum.is_infinite() {
                *sum = f64::NAN;
            }
        }
        Ok(())
    }

    pub(crate) fn finish(&self, result: Regression) -> Datum {
        if result == Regression::Count {
            #[allow(clippy::cast_possible_truncation)] // a count of rows, whole and < 2^53
            return Datum::Int(self.count as i64);
        }
        let minimum_count = if result == Regression::CovarianceSample { 2.0 } else { 1.0 };
        if self.count < minimum_count {
            return Datum::Null;
        }
        self.value(result).map_or(Datum::Null, Datum::Float)
    }

    /// The result over at least one row (covar_samp: two); None where the spec says NULL.
    fn value(&self, result: Regression) -> Option<f64> {
        let RegressionSums { count, sum_x, squares_x, sum_y, squares_y, products } = *self;
        let vertical = squares_x == 0.0;
        Some(match result {
            Regression::Count => count,
            Regression::AverageX => sum_x / count,
            Regression::AverageY => sum_y / count,
            Regression::SumSquaresX => squares_x,
            Regression::SumSquaresY => squares_y,
            Regression::SumProducts => products,
            Regression::CovariancePopulation => products / count,
            Regression::CovarianceSample => products / (count - 1.0),
            Regression::Correlation if vertical || squares_y == 0.0 => return None,
            Regression::Correlation => products / (squares_x * squares_y).sqrt(),
            Regression::Slope | Regression::Intercept | Regression::DeterminationCoefficient
                if vertical =>
            {
                return None
            }
            Regression::DeterminationCoefficient if squares_y == 0.0 => 1.0,
            Regression::DeterminationCoefficient => (products * products) / (squares_x * squares_y),
            Regression::Slope => products / squares_x,
            Regression::Intercept => (sum_y - sum_x * products / squares_x) / count,
        })
    }
}
