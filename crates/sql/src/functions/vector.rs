//! pgvector's functions over `vector`: distances (also behind the `<->`, `<#>`, `<=>` and
//! `<+>` operators), norms, arithmetic, concatenation and subvector. The kernels live in
//! `tierdb-vector` so that the vector indexes compute the same bits.

use std::sync::Arc;

use super::{no_function, Call, Coercion, Signature};
use crate::error::{Result, SqlError};
use crate::types::{
    check_same_dimensions, check_vector_dimensions, vector_datum, vector_elements, Datum, SqlType,
};

const VECTOR: SqlType = SqlType::Vector(None);

/// Functions pgvector also defines for halfvec or sparsevec: with only untyped literals
/// PostgreSQL cannot choose among them.
const OVERLOADED: &[&str] = &[
    "l2_distance",
    "inner_product",
    "cosine_distance",
    "l1_distance",
    "vector_dims",
    "l2_normalize",
];

/// PostgreSQL's 42725 for a call it cannot resolve among overloads.
fn not_unique(name: &str, types: &[SqlType]) -> SqlError {
    let types: Vec<String> = types.iter().map(SqlType::display_name).collect();
    SqlError::new("42725", format!("function {name}({}) is not unique", types.join(", ")))
}

/// Every argument a vector (untyped literals read as vector text); `output` the result.
pub(super) fn vectors(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    if types.iter().any(|ty| !matches!(ty, SqlType::Vector(_) | SqlType::Unknown)) {
        return Err(no_function(name, types));
    }
    if OVERLOADED.contains(&name) && types.iter().all(|ty| *ty == SqlType::Unknown) {
        return Err(not_unique(name, types));
    }
    Ok(Signature { arguments: vec![Coercion::Implicit(VECTOR); types.len()], output })
}

/// subvector(vector, integer, integer).
pub(super) fn subvector_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    if types[0] == SqlType::Unknown {
        return Err(not_unique(name, types));
    }
    if !matches!(types[0], SqlType::Vector(_) | SqlType::Unknown)
        || !types[1..].iter().all(|ty| ty.is_integer() || *ty == SqlType::Unknown)
    {
        return Err(no_function(name, types));
    }
    Ok(Signature {
        arguments: vec![
            Coercion::Implicit(VECTOR),
            Coercion::Implicit(SqlType::Int4),
            Coercion::Implicit(SqlType::Int4),
        ],
        output: VECTOR,
    })
}

fn pair<'call>(call: &'call Call<'_>) -> Result<(&'call [f32], &'call [f32])> {
    let a = vector_elements(&call.args[0])?;
    let b = vector_elements(&call.args[1])?;
    check_same_dimensions(a, b)?;
    Ok((a, b))
}

pub(super) fn l2_distance(call: Call<'_>) -> Result<Datum> {
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::l2_squared_distance(a, b)).sqrt()))
}

pub(super) fn l2_squared_distance(call: Call<'_>) -> Result<Datum> {
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::l2_squared_distance(a, b))))
}

pub(super) fn inner_product(call: Call<'_>) -> Result<Datum> {
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::inner_product(a, b))))
}

/// `<#>`: the negated inner product (negated in float, as pgvector does).
pub(super) fn negative_inner_product(call: Call<'_>) -> Result<Datum> {
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(-tierdb_vector::inner_product(a, b))))
}

pub(super) fn cosine_distance(call: Call<'_>) -> Result<Datum> {
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(tierdb_vector::cosine_distance(a, b)))
}

pub(super) fn l1_distance(call: Call<'_>) -> Result<Datum> {
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::l1_distance(a, b))))
}

pub(super) fn dimensions(call: Call<'_>) -> Result<Datum> {
    super::count(vector_elements(&call.args[0])?.len())
}

pub(super) fn norm(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Float(tierdb_vector::norm(vector_elements(&call.args[0])?)))
}

/// pgvector's `l2_normalize`: each element divided (in double) by the norm; a zero vector
/// stays zero.
pub(super) fn l2_normalize(call: Call<'_>) -> Result<Datum> {
    let a = vector_elements(&call.args[0])?;
    let norm = tierdb_vector::norm(a);
    if norm <= 0.0 {
        return Ok(Datum::Vector(Arc::from(a)));
    }
    let elements = a.iter().map(|element| narrow(f64::from(*element) / norm)).collect::<Vec<_>>();
    check_finite(&elements)?;
    Ok(Datum::Vector(elements.into()))
}

/// A double result stored in a float element (C's implicit conversion).
fn narrow(value: f64) -> f32 {
    #[allow(clippy::cast_possible_truncation)]
    let single = value as f32;
    single
}

fn check_finite(elements: &[f32]) -> Result<()> {
    if elements.iter().any(|element| element.is_infinite()) {
        return Err(SqlError::new("22003", "value out of range: overflow"));
    }
    Ok(())
}

fn element_wise(call: &Call<'_>, operation: fn(f32, f32) -> f32) -> Result<Vec<f32>> {
    let (a, b) = pair(call)?;
    let elements: Vec<f32> = a.iter().zip(b).map(|(x, y)| operation(*x, *y)).collect();
    check_finite(&elements)?;
    Ok(elements)
}

pub(super) fn add(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Vector(element_wise(&call, |x, y| x + y)?.into()))
}

pub(super) fn subtract(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Vector(element_wise(&call, |x, y| x - y)?.into()))
}

/// Element-wise product, with pgvector's underflow error for a product rounding to zero.
pub(super) fn multiply(call: Call<'_>) -> Result<Datum> {
    let elements = element_wise(&call, |x, y| x * y)?;
    let (a, b) = pair(&call)?;
    for ((product, x), y) in elements.iter().zip(a).zip(b) {
        if *product == 0.0 && !(*x == 0.0 || *y == 0.0) {
            return Err(SqlError::new("22003", "value out of range: underflow"));
        }
    }
    Ok(Datum::Vector(elements.into()))
}

/// `||`: the elements of both, checked against the dimension limit.
pub(super) fn concatenate(call: Call<'_>) -> Result<Datum> {
    let a = vector_elements(&call.args[0])?;
    let b = vector_elements(&call.args[1])?;
    check_vector_dimensions(a.len() + b.len())?;
    Ok(Datum::Vector(a.iter().chain(b).copied().collect::<Vec<_>>().into()))
}

/// pgvector's `subvector(v, start, count)`: 1-based, clipped to the vector like substring.
pub(super) fn subvector(call: Call<'_>) -> Result<Datum> {
    let a = vector_elements(&call.args[0])?;
    let start = call.int(1);
    let count = call.int(2);
    // Both are int4 (the binder coerced them), so the sum cannot overflow i64.
    let end = start + count;
    let dimensions = i64::try_from(a.len()).map_err(|_| SqlError::internal("vector length"))?;
    let start = start.max(1);
    let end = end.min(dimensions + 1);
    if end <= start {
        return Err(SqlError::new("22000", "vector must have at least 1 dimension"));
    }
    let from = usize::try_from(start - 1).map_err(|_| SqlError::internal("checked start"))?;
    let to = usize::try_from(end - 1).map_err(|_| SqlError::internal("checked end"))?;
    vector_datum(a[from..to].to_vec(), None)
}
