//! pgvector's functions over `vector`: distances (also behind the `<->`, `<#>`, `<=>` and
//! `<+>` operators), norms, arithmetic, concatenation and subvector. The kernels live in
//! `tierdb-vector` so that the vector indexes compute the same bits. One registry entry
//! serves vector and halfvec (pgvector's overloads): the signature picks the type, and each
//! function hands halfvec arguments to functions/halfvec.rs.

use std::sync::Arc;

use super::halfvec as half;
use super::sparsevec as sparse;
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

/// Functions pgvector defines for vector only (not for halfvec nor sparsevec).
const VECTOR_ONLY: &[&str] = &["vector_norm", "vector_l2_squared_distance"];
/// Functions pgvector defines for sparsevec too (the distances and `l2_normalize`).
const FOR_SPARSEVEC: &[&str] = &[
    "l2_distance",
    "inner_product",
    "vector_negative_inner_product",
    "cosine_distance",
    "l1_distance",
    "l2_normalize",
];

/// The type of pgvector's overload a call resolves to: sparsevec when an argument is one,
/// else halfvec when an argument is one (vector casts implicitly to halfvec and both to
/// sparsevec, never back), else vector; `None` for other types.
fn overload(types: &[SqlType]) -> Option<SqlType> {
    let mut resolved = VECTOR;
    for ty in types {
        match ty {
            SqlType::SparseVec(_) => resolved = SqlType::SparseVec(None),
            SqlType::HalfVec(_) if !matches!(resolved, SqlType::SparseVec(_)) => {
                resolved = SqlType::HalfVec(None)
            }
            SqlType::HalfVec(_) | SqlType::Vector(_) | SqlType::Unknown => {}
            _ => return None,
        }
    }
    Some(resolved)
}

/// Every argument a vector or every one a halfvec (untyped literals read as its text);
/// `output` the result, where `vector` stands for the resolved type.
pub(super) fn vectors(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    let Some(resolved) = overload(types) else {
        return Err(no_function(name, types));
    };
    let sparse = matches!(resolved, SqlType::SparseVec(_));
    if (resolved != VECTOR && VECTOR_ONLY.contains(&name))
        || (sparse && !FOR_SPARSEVEC.contains(&name))
    {
        return Err(no_function(name, types));
    }
    if OVERLOADED.contains(&name) && types.iter().all(|ty| *ty == SqlType::Unknown) {
        return Err(not_unique(name, types));
    }
    let output = if output == VECTOR { resolved.clone() } else { output };
    Ok(Signature { arguments: vec![Coercion::Implicit(resolved); types.len()], output })
}

/// `l2_norm`: pgvector defines it for halfvec and sparsevec, so a vector or an untyped
/// argument is ambiguous (42725), as there.
pub(super) fn l2_norm_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    match &types[0] {
        SqlType::HalfVec(_) | SqlType::SparseVec(_) => Ok(Signature {
            arguments: vec![Coercion::Implicit(overload(types).unwrap_or(VECTOR))],
            output: SqlType::Float8,
        }),
        SqlType::Vector(_) | SqlType::Unknown => Err(not_unique(name, types)),
        _ => Err(no_function(name, types)),
    }
}

/// subvector(vector, integer, integer).
pub(super) fn subvector_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    if types[0] == SqlType::Unknown {
        return Err(not_unique(name, types));
    }
    let resolved = overload(&types[..1])
        .filter(|resolved| !matches!(resolved, SqlType::SparseVec(_)))
        .ok_or_else(|| no_function(name, types))?;
    if !types[1..].iter().all(|ty| ty.is_integer() || *ty == SqlType::Unknown) {
        return Err(no_function(name, types));
    }
    Ok(Signature {
        arguments: vec![
            Coercion::Implicit(resolved.clone()),
            Coercion::Implicit(SqlType::Int4),
            Coercion::Implicit(SqlType::Int4),
        ],
        output: resolved,
    })
}

fn pair<'call>(call: &'call Call<'_>) -> Result<(&'call [f32], &'call [f32])> {
    let a = vector_elements(&call.args[0])?;
    let b = vector_elements(&call.args[1])?;
    check_same_dimensions(a, b)?;
    Ok((a, b))
}

pub(super) fn l2_distance(call: Call<'_>) -> Result<Datum> {
    if sparse::is_sparsevec(&call) {
        return sparse::l2_distance(&call);
    }
    if half::is_halfvec(&call) {
        return half::l2_distance(&call);
    }
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::l2_squared_distance(a, b)).sqrt()))
}

pub(super) fn l2_squared_distance(call: Call<'_>) -> Result<Datum> {
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::l2_squared_distance(a, b))))
}

pub(super) fn inner_product(call: Call<'_>) -> Result<Datum> {
    if sparse::is_sparsevec(&call) {
        return sparse::inner_product(&call);
    }
    if half::is_halfvec(&call) {
        return half::inner_product(&call);
    }
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::inner_product(a, b))))
}

/// `<#>`: the negated inner product (negated in float, as pgvector does).
pub(super) fn negative_inner_product(call: Call<'_>) -> Result<Datum> {
    if sparse::is_sparsevec(&call) {
        return sparse::negative_inner_product(&call);
    }
    if half::is_halfvec(&call) {
        return half::negative_inner_product(&call);
    }
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(-tierdb_vector::inner_product(a, b))))
}

pub(super) fn cosine_distance(call: Call<'_>) -> Result<Datum> {
    if sparse::is_sparsevec(&call) {
        return sparse::cosine_distance(&call);
    }
    if half::is_halfvec(&call) {
        return half::cosine_distance(&call);
    }
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(tierdb_vector::cosine_distance(a, b)))
}

pub(super) fn l1_distance(call: Call<'_>) -> Result<Datum> {
    if sparse::is_sparsevec(&call) {
        return sparse::l1_distance(&call);
    }
    if half::is_halfvec(&call) {
        return half::l1_distance(&call);
    }
    let (a, b) = pair(&call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::l1_distance(a, b))))
}

pub(super) fn dimensions(call: Call<'_>) -> Result<Datum> {
    if half::is_halfvec(&call) {
        return half::dimensions(&call);
    }
    super::count(vector_elements(&call.args[0])?.len())
}

pub(super) fn norm(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Float(tierdb_vector::norm(vector_elements(&call.args[0])?)))
}

/// pgvector's `l2_normalize`: each element divided (in double) by the norm; a zero vector
/// stays zero.
pub(super) fn l2_normalize(call: Call<'_>) -> Result<Datum> {
    if sparse::is_sparsevec(&call) {
        return sparse::l2_normalize(&call);
    }
    if half::is_halfvec(&call) {
        return half::l2_normalize(&call);
    }
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
    if half::is_halfvec(&call) {
        return half::add(&call);
    }
    Ok(Datum::Vector(element_wise(&call, |x, y| x + y)?.into()))
}

pub(super) fn subtract(call: Call<'_>) -> Result<Datum> {
    if half::is_halfvec(&call) {
        return half::subtract(&call);
    }
    Ok(Datum::Vector(element_wise(&call, |x, y| x - y)?.into()))
}

/// Element-wise product, with pgvector's underflow error for a product rounding to zero.
pub(super) fn multiply(call: Call<'_>) -> Result<Datum> {
    if half::is_halfvec(&call) {
        return half::multiply(&call);
    }
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
    if half::is_halfvec(&call) {
        return half::concatenate(&call);
    }
    let a = vector_elements(&call.args[0])?;
    let b = vector_elements(&call.args[1])?;
    check_vector_dimensions(a.len() + b.len())?;
    Ok(Datum::Vector(a.iter().chain(b).copied().collect::<Vec<_>>().into()))
}

/// pgvector's `subvector(v, start, count)`: 1-based, clipped to the vector like substring.
pub(super) fn subvector(call: Call<'_>) -> Result<Datum> {
    if half::is_halfvec(&call) {
        return half::subvector(&call);
    }
    let a = vector_elements(&call.args[0])?;
    let range = crate::types::subvector_range("vector", a.len(), call.int(1), call.int(2))?;
    vector_datum(a[range].to_vec(), None)
}
