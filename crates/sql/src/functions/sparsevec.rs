//! pgvector's functions over `sparsevec`, reached through the shared registry entries of
//! functions/vector.rs: the distances merge both index lists as pgvector's `sparsevec.c`
//! does (the kernels live in `tierdb-vector`), norms sum in double.

use std::sync::Arc;

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::{check_same_sparsevec_dimensions, sparsevec_value, Datum, SparseVector};

/// Whether the call resolved to pgvector's sparsevec overload (its first argument is one).
pub(super) fn is_sparsevec(call: &Call<'_>) -> bool {
    matches!(call.args.first(), Some(Datum::SparseVec(_)))
}

fn pair<'call>(call: &'call Call<'_>) -> Result<(&'call SparseVector, &'call SparseVector)> {
    let a = sparsevec_value(&call.args[0])?;
    let b = sparsevec_value(&call.args[1])?;
    check_same_sparsevec_dimensions(a, b)?;
    Ok((a, b))
}

pub(super) fn l2_distance(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    let squared = tierdb_vector::sparse_l2_squared_distance(a.slice(), b.slice());
    Ok(Datum::Float(f64::from(squared).sqrt()))
}

pub(super) fn inner_product(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::sparse_inner_product(a.slice(), b.slice()))))
}

/// `<#>`: the inner product negated in float, as pgvector does.
pub(super) fn negative_inner_product(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(f64::from(-tierdb_vector::sparse_inner_product(a.slice(), b.slice()))))
}

pub(super) fn cosine_distance(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(tierdb_vector::sparse_cosine_distance(a.slice(), b.slice())))
}

pub(super) fn l1_distance(call: &Call<'_>) -> Result<Datum> {
    let (a, b) = pair(call)?;
    Ok(Datum::Float(f64::from(tierdb_vector::sparse_l1_distance(a.slice(), b.slice()))))
}

/// `l2_norm(sparsevec)`: the values' squares summed in double (vector_norm's loop).
pub(super) fn l2_norm(call: &Call<'_>) -> Result<Datum> {
    Ok(Datum::Float(tierdb_vector::norm(&sparsevec_value(&call.args[0])?.values)))
}

/// pgvector's `sparsevec_l2_normalize`: each value divided in double by the norm, rounded
/// to float; values that round to zero are dropped, an infinite one is 22003.
pub(super) fn l2_normalize(call: &Call<'_>) -> Result<Datum> {
    let a = sparsevec_value(&call.args[0])?;
    let norm = tierdb_vector::norm(&a.values);
    if norm <= 0.0 {
        return Ok(Datum::SparseVec(Arc::new(a.clone())));
    }
    let mut result =
        SparseVector { dimensions: a.dimensions, indices: Vec::new(), values: Vec::new() };
    for (index, value) in a.indices.iter().zip(&a.values) {
        #[allow(clippy::cast_possible_truncation)]
        let normalized = (f64::from(*value) / norm) as f32;
        if normalized.is_infinite() {
            return Err(SqlError::new("22003", "value out of range: overflow"));
        }
        if normalized != 0.0 {
            result.indices.push(*index);
            result.values.push(normalized);
        }
    }
    Ok(Datum::SparseVec(Arc::new(result)))
}
