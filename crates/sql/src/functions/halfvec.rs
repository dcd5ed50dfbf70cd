//! pgvector's functions over `halfvec`, reached through the shared registry entries of
//! functions/vector.rs: the distances sum in float as pgvector's F16C kernels do (the
//! kernels live in `tierdb-vector`), the arithmetic rounds each result to a half.

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::{
    check_halfvec_dimensions, check_halfvec_overflow, check_same_halfvec_dimensions, f16,
    halfvec_datum, halfvec_element_wise, halfvec_elements, subvector_range, Datum,
};

/// Whether the call resolved to pgvector's halfvec overload (its first argument is one).
pub(super) fn is_halfvec(call: &Call<'_>) -> bool {
    matches!(call.args.first(), Some(Datum::HalfVec(_)))
}

fn pair<'call>(call: &'call Call<'_>) -> Result<(&'call [f16], &'call [f16])> {
    let a = halfvec_elements(&call.args[0])?;
    let b = halfvec_elements(&call.args[1])?;
    check_same_halfvec_dimensions(a, b)?;
    Ok((a, b))
}

pub(super) fn l2_distance(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::halfvec_l2_squared_distance(a, b)).sqrt()))
}

pub(super) fn inner_product(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::halfvec_inner_product(a, b))))
}

/// `<#>`: the inner product negated in float, as pgvector does.
pub(super) fn negative_inner_product(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(f64::from(-tierdb_vector::halfvec_inner_product(a, b))))
}

pub(super) fn cosine_distance(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(tierdb_vector::halfvec_cosine_distance(a, b)))
}

pub(super) fn l1_distance(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::halfvec_l1_distance(a, b))))
}

pub(super) fn dimensions(call: &Call<'_>) -> Result<Datum> {
    super::count(halfvec_elements(&call.args[0])?.len())
}

/// `l2_norm(halfvec)`: double sums of the widened elements.
pub(super) fn l2_norm(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Float(tierdb_vector::halfvec_norm(halfvec_elements(&call.args[0])?)))
}

/// pgvector's `halfvec_l2_normalize`: each element divided in double by the norm, rounded
/// to float and then to a half; a zero vector stays zero.
pub(super) fn l2_normalize(call: &Call<'_>) -> Result<Datum> {
    let a = halfvec_elements(&call.args[0])?;
    let norm = tierdb_vector::halfvec_norm(a);
    if norm <= 0.0 {
        return Ok(Datum::HalfVec(vec![f16::ZERO; a.len()].into()));
    }
    let elements: Vec<f16> = a
        .iter()
        .map(|element| {
            #[allow(clippy::cast_possible_truncation)]
            let single = (f64::from(element.to_f32()) / norm) as f32;
            f16::from_f32(single)
        })
        .collect();
    check_halfvec_overflow(&elements)?;
    Ok(Datum::HalfVec(elements.into()))
}

fn element_wise(call: &Call<'_>, operation: fn(f32, f32) -> f32) -> Result<Vec<f16>> {
    let (a, b) = pair(call)?;
    let elements = halfvec_element_wise(a, b, operation);
    check_halfvec_overflow(&elements)?;
    Ok(elements)
}

pub(super) fn add(call: &Call<'_>) -> Result<Datum> {
    Ok(Datum::HalfVec(element_wise(call, |x, y| x + y)?.into()))
}

pub(super) fn subtract(call: &Call<'_>) -> Result<Datum> {
    Ok(Datum::HalfVec(element_wise(call, |x, y| x - y)?.into()))
}

/// Element-wise product, with pgvector's underflow error for a product rounding to zero.
pub(super) fn multiply(call: &Call<'_>) -> Result<Datum> {
    let elements = element_wise(call, |x, y| x * y)?;
    let (a, b) = pair(call)?;
    for ((product, x), y) in elements.iter().zip(a).zip(b) {
        let zero = |half: &f16| half.to_f32() == 0.0;
        if zero(product) && !(zero(x) || zero(y)) {
            return Err(SqlError::new("22003", "value out of range: underflow"));
        }
    }
    Ok(Datum::HalfVec(elements.into()))
}

/// `||`: the elements of both, checked against the dimension limit.
pub(super) fn concatenate(call: &Call<'_>) -> Result<Datum> {
    let a = halfvec_elements(&call.args[0])?;
    let b = halfvec_elements(&call.args[1])?;
    check_halfvec_dimensions(a.len() + b.len())?;
    Ok(Datum::HalfVec(a.iter().chain(b).copied().collect::<Vec<_>>().into()))
}

pub(super) fn subvector(call: &Call<'_>) -> Result<Datum> {
    let a = halfvec_elements(&call.args[0])?;
    let range = subvector_range("halfvec", a.len(), call.int(1), call.int(2))?;
    halfvec_datum(a[range].to_vec(), None)
}
