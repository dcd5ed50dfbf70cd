//! Distance kernels over half-precision slices (pgvector's `halfvec`).
//!
//! Each element widens exactly to `f32`; the sums follow pgvector 0.8.2's F16C kernels
//! (`halfutils.c`, chosen at run time on every CPU with F16C and FMA): 8 lanes accumulating
//! with fused multiply-adds over whole chunks of 8 (l1: plain adds), the lanes reduced as
//! `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`, then the rest one by one, fused.

use half::f16;

const LANES: usize = 8;

trait HalfTerm {
    fn accumulate(accumulator: f32, a: f32, b: f32) -> f32;
}

struct SquaredDifference;
impl HalfTerm for SquaredDifference {
    #[inline(always)]
    fn accumulate(accumulator: f32, a: f32, b: f32) -> f32 {
        let difference = a - b;
        difference.mul_add(difference, accumulator)
    }
}

struct Product;
impl HalfTerm for Product {
    #[inline(always)]
    fn accumulate(accumulator: f32, a: f32, b: f32) -> f32 {
        a.mul_add(b, accumulator)
    }
}

struct AbsoluteDifference;
impl HalfTerm for AbsoluteDifference {
    #[inline(always)]
    fn accumulate(accumulator: f32, a: f32, b: f32) -> f32 {
        accumulator + (a - b).abs()
    }
}

#[inline(always)]
fn ordered_sum<T: HalfTerm>(a: &[f16], b: &[f16]) -> f32 {
    assert_eq!(a.len(), b.len(), "the caller checks dimensions");
    let lanes_end = a.len() - a.len() % LANES;
    let mut lanes = [0.0f32; LANES];
    for (chunk_a, chunk_b) in
        a[..lanes_end].chunks_exact(LANES).zip(b[..lanes_end].chunks_exact(LANES))
    {
        for lane in 0..LANES {
            lanes[lane] =
                T::accumulate(lanes[lane], chunk_a[lane].to_f32(), chunk_b[lane].to_f32());
        }
    }
    let mut sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
        + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for index in lanes_end..a.len() {
        sum = T::accumulate(sum, a[index].to_f32(), b[index].to_f32());
    }
    sum
}

#[cfg(target_arch = "x86_64")]
mod f16c {
    use super::*;

    // SAFETY (all): callers check the features first.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn sum<T: HalfTerm>(a: &[f16], b: &[f16]) -> f32 {
        ordered_sum::<T>(a, b)
    }
}

fn dispatched_sum<T: HalfTerm>(a: &[f16], b: &[f16]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
    {
        // SAFETY: the CPU has the features the function is compiled for (checked above).
        return unsafe { f16c::sum::<T>(a, b) };
    }
    ordered_sum::<T>(a, b)
}

/// Squared Euclidean distance between half vectors, as pgvector sums it.
pub fn halfvec_l2_squared_distance(a: &[f16], b: &[f16]) -> f32 {
    dispatched_sum::<SquaredDifference>(a, b)
}

/// Inner product of half vectors, as pgvector sums it.
pub fn halfvec_inner_product(a: &[f16], b: &[f16]) -> f32 {
    dispatched_sum::<Product>(a, b)
}

/// Taxicab distance between half vectors, as pgvector sums it.
pub fn halfvec_l1_distance(a: &[f16], b: &[f16]) -> f32 {
    dispatched_sum::<AbsoluteDifference>(a, b)
}

/// Cosine distance between half vectors: float sums, the similarity in double clamped to
/// [-1, 1], as for `vector`.
pub fn halfvec_cosine_distance(a: &[f16], b: &[f16]) -> f64 {
    let dot = dispatched_sum::<Product>(a, b);
    let norm_a = dispatched_sum::<Product>(a, a);
    let norm_b = dispatched_sum::<Product>(b, b);
    let similarity = f64::from(dot) / (f64::from(norm_a) * f64::from(norm_b)).sqrt();
    1.0 - similarity.clamp(-1.0, 1.0)
}

/// Euclidean norm of a half vector, summed in double one element at a time.
pub fn halfvec_norm(a: &[f16]) -> f64 {
    a.iter()
        .map(|value| f64::from(value.to_f32()) * f64::from(value.to_f32()))
        .fold(0.0, |sum, square| sum + square)
        .sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn halves(values: &[f32]) -> Vec<f16> {
        values.iter().map(|value| f16::from_f32(*value)).collect()
    }

    #[test]
    fn small_vectors() {
        let a = halves(&[1.0, 2.0, 3.0]);
        let b = halves(&[4.0, 5.0, 7.0]);
        assert_eq!(halfvec_l2_squared_distance(&a, &b), 34.0);
        assert_eq!(halfvec_inner_product(&a, &b), 35.0);
        assert_eq!(halfvec_l1_distance(&a, &b), 10.0);
        assert_eq!(halfvec_norm(&halves(&[3.0, 4.0])), 5.0);
        assert!(halfvec_cosine_distance(&halves(&[0.0]), &halves(&[1.0])).is_nan());
    }

    #[test]
    fn detected_path_gives_the_portable_bits() {
        let a: Vec<f16> = (0..100u16).map(|i| f16::from_f32(f32::from(i) * 0.37 - 11.0)).collect();
        let b: Vec<f16> = (0..100u16).map(|i| f16::from_f32(f32::from(i % 7) * 1.3)).collect();
        for length in [1, 7, 8, 9, 16, 17, 100] {
            let (a, b) = (&a[..length], &b[..length]);
            assert_eq!(
                halfvec_l2_squared_distance(a, b).to_bits(),
                ordered_sum::<SquaredDifference>(a, b).to_bits()
            );
            assert_eq!(
                halfvec_inner_product(a, b).to_bits(),
                ordered_sum::<Product>(a, b).to_bits()
            );
            assert_eq!(
                halfvec_l1_distance(a, b).to_bits(),
                ordered_sum::<AbsoluteDifference>(a, b).to_bits()
            );
        }
    }
}
