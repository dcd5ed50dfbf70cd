//! Distance kernels over sparse vectors (pgvector's `sparsevec`): each operand is its
//! non-zero elements, indices ascending (0-based) with their values.
//!
//! The sums follow pgvector 0.8.2's `sparsevec.c`: one merge over both index lists in float.
//! In the reference build (scripts/install-pgvector.sh, x86-64-v3) every product term of
//! the merge is fused into a multiply-add, read from its machine code and checked by
//! tests/slt/vector/sparsevec.slt (random pairs of 30 dimensions). The loop over the second
//! operand's elements after the first operand's last index is vectorized like the dense
//! kernels (`dense::continued_sum`). Cosine's norms are the dense inner product's loop over
//! the values.

use crate::dense::{continued_sum, Magnitude, Product};

/// A sparse operand: the indices (0-based, ascending, no duplicates) and their values.
#[derive(Clone, Copy, Debug)]
pub struct SparseSlice<'a> {
    pub indices: &'a [u32],
    pub values: &'a [f32],
}

impl SparseSlice<'_> {
    fn check(&self) {
        assert_eq!(self.indices.len(), self.values.len(), "one value per index");
    }
}

/// The merge of two index lists in pgvector's order: `both(i, j)` for a shared index,
/// `only_a(i)` / `only_b(j)` for an index of one operand only, up to the first operand's
/// last index. Returns where the second operand's remaining elements start (its separate
/// loop in pgvector).
#[must_use]
fn merge(
    a: SparseSlice<'_>,
    b: SparseSlice<'_>,
    mut both: impl FnMut(usize, usize),
    mut only_a: impl FnMut(usize),
    mut only_b: impl FnMut(usize),
) -> usize {
    a.check();
    b.check();
    let mut b_position = 0;
    for (i, &a_index) in a.indices.iter().enumerate() {
        let mut matched = false;
        // The scan starts where the last one stopped; the next start is set as it goes.
        let start = b_position;
        for j in start..b.indices.len() {
            let b_index = b.indices[j];
            if a_index == b_index {
                both(i, j);
                matched = true;
            } else if a_index > b_index {
                only_b(j);
            }
            if a_index >= b_index {
                b_position = j + 1;
            }
            if b_index >= a_index {
                break;
            }
        }
        if !matched {
            only_a(i);
        }
    }
    b_position
}

/// Squared Euclidean distance, as pgvector sums it.
pub fn sparse_l2_squared_distance(a: SparseSlice<'_>, b: SparseSlice<'_>) -> f32 {
    let distance = std::cell::Cell::new(0.0f32);
    let add_square = |value: f32| distance.set(value.mul_add(value, distance.get()));
    let rest = merge(
        a,
        b,
        |i, j| add_square(a.values[i] - b.values[j]),
        |i| add_square(a.values[i]),
        |j| add_square(b.values[j]),
    );
    let rest = &b.values[rest..];
    continued_sum::<Product>(distance.get(), rest, rest)
}

/// Inner product, as pgvector sums it.
pub fn sparse_inner_product(a: SparseSlice<'_>, b: SparseSlice<'_>) -> f32 {
    let mut distance = 0.0f32;
    // The second operand's remaining elements add nothing to an inner product.
    let _ =
        merge(a, b, |i, j| distance = a.values[i].mul_add(b.values[j], distance), |_| {}, |_| {});
    distance
}

/// Cosine distance: the inner product over the norms' product (in double), clamped.
pub fn sparse_cosine_distance(a: SparseSlice<'_>, b: SparseSlice<'_>) -> f64 {
    let dot = sparse_inner_product(a, b);
    let norm_a = crate::inner_product(a.values, a.values);
    let norm_b = crate::inner_product(b.values, b.values);
    let similarity = f64::from(dot) / (f64::from(norm_a) * f64::from(norm_b)).sqrt();
    1.0 - similarity.clamp(-1.0, 1.0)
}

/// Taxicab distance, summed in float as pgvector does.
pub fn sparse_l1_distance(a: SparseSlice<'_>, b: SparseSlice<'_>) -> f32 {
    let distance = std::cell::Cell::new(0.0f32);
    let add = |value: f32| distance.set(distance.get() + value.abs());
    let rest = merge(
        a,
        b,
        |i, j| add(a.values[i] - b.values[j]),
        |i| add(a.values[i]),
        |j| add(b.values[j]),
    );
    let rest = &b.values[rest..];
    continued_sum::<Magnitude>(distance.get(), rest, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_sums_of_small_vectors() {
        // a = [1, 0, 2, 0], b = [0, 3, 4, 5]
        let a = SparseSlice { indices: &[0, 2], values: &[1.0, 2.0] };
        let b = SparseSlice { indices: &[1, 2, 3], values: &[3.0, 4.0, 5.0] };
        assert_eq!(sparse_l2_squared_distance(a, b), 1.0 + 9.0 + 4.0 + 25.0);
        assert_eq!(sparse_inner_product(a, b), 8.0);
        assert_eq!(sparse_l1_distance(a, b), 1.0 + 3.0 + 2.0 + 5.0);
        let empty = SparseSlice { indices: &[], values: &[] };
        assert_eq!(sparse_l2_squared_distance(empty, b), 50.0);
        assert!(sparse_cosine_distance(empty, b).is_nan());
    }
}
