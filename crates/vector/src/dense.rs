//! Distance kernels over `f32` slices (pgvector's `vector`).
//!
//! Results equal pgvector 0.8.2's bit for bit. pgvector writes plain loops with `float`
//! accumulators and lets the C compiler vectorize them with reassociation allowed
//! (`-fassociative-math`), so its float bits depend on how that build vectorized. The
//! reference build the differential tests run (scripts/install-pgvector.sh: GCC,
//! `-march=x86-64-v3`, AVX2 + FMA) sums like this, read from its machine code and confirmed
//! by the tests:
//!
//! 1. 8 lanes over the first `8 * (dim / 8)` elements, each lane accumulating with a fused
//!    multiply-add (l1: a plain add of `|a - b|`);
//! 2. the 8 lanes folded to 4: `q[j] = l[j] + l[j + 4]`;
//! 3. if at least 4 elements remain, their terms accumulated into `q` the same way;
//! 4. `q` reduced: `s[j] = q[j] + q[j + 2]`, then `s[1] + s[0]`;
//! 5. the last elements one by one, accumulated the same way (fused).
//!
//! The portable code below follows that order with fixed-size lane arrays; compiled again
//! with AVX2 and FMA enabled (runtime detection) LLVM turns the lanes into one 8-wide FMA
//! register, which is the same arithmetic, so both paths give the same bits.

/// Lanes of the main loop (one 256-bit register of `f32`).
const WIDE_LANES: usize = 8;
/// Lanes of the one narrower step after it (one 128-bit register).
const NARROW_LANES: usize = 4;

/// How one distance accumulates an element pair (the same at every step).
pub(crate) trait Term {
    fn accumulate(accumulator: f32, a: f32, b: f32) -> f32;
}

pub(crate) struct SquaredDifference;
impl Term for SquaredDifference {
    #[inline(always)]
    fn accumulate(accumulator: f32, a: f32, b: f32) -> f32 {
        let difference = a - b;
        difference.mul_add(difference, accumulator)
    }
}

pub(crate) struct Product;
impl Term for Product {
    #[inline(always)]
    fn accumulate(accumulator: f32, a: f32, b: f32) -> f32 {
        a.mul_add(b, accumulator)
    }
}

pub(crate) struct AbsoluteDifference;
impl Term for AbsoluteDifference {
    #[inline(always)]
    fn accumulate(accumulator: f32, a: f32, b: f32) -> f32 {
        accumulator + (a - b).abs()
    }
}

/// `|a|` alone (`b` unused): sparsevec's l1 over the elements of one operand only.
pub(crate) struct Magnitude;
impl Term for Magnitude {
    #[inline(always)]
    fn accumulate(accumulator: f32, a: f32, _b: f32) -> f32 {
        accumulator + a.abs()
    }
}

/// Steps 4 of the module comment: `(q0 + q2, q1 + q3)`, then `s1 + s0`.
#[inline(always)]
fn reduce_four(quarter: [f32; NARROW_LANES]) -> f32 {
    let pair = [quarter[0] + quarter[2], quarter[1] + quarter[3]];
    pair[1] + pair[0]
}

/// Steps 1 to 4 of the module comment: the vectorized part's sum (None when fewer than 4
/// elements, so no vector step ran) and the index where the one-by-one tail starts.
#[inline(always)]
fn vectorized_part<T: Term>(a: &[f32], b: &[f32]) -> (Option<f32>, usize) {
    assert_eq!(a.len(), b.len(), "the caller checks dimensions");
    let wide_end = a.len() - a.len() % WIDE_LANES;
    let mut quarter = [0.0f32; NARROW_LANES];
    let mut sum = None;
    if wide_end > 0 {
        let mut lanes = [0.0f32; WIDE_LANES];
        for (chunk_a, chunk_b) in
            a[..wide_end].chunks_exact(WIDE_LANES).zip(b[..wide_end].chunks_exact(WIDE_LANES))
        {
            for lane in 0..WIDE_LANES {
                lanes[lane] = T::accumulate(lanes[lane], chunk_a[lane], chunk_b[lane]);
            }
        }
        quarter = std::array::from_fn(|lane| lanes[lane] + lanes[lane + NARROW_LANES]);
        sum = Some(reduce_four(quarter));
    }
    let mut next = wide_end;
    if a.len() - next >= NARROW_LANES {
        for (lane, value) in quarter.iter_mut().enumerate() {
            *value = T::accumulate(*value, a[next + lane], b[next + lane]);
        }
        sum = Some(reduce_four(quarter));
        next += NARROW_LANES;
    }
    (sum, next)
}

/// The sum of `T`'s terms over `a` and `b` in pgvector's order (module comment).
#[inline(always)]
fn ordered_sum<T: Term>(a: &[f32], b: &[f32]) -> f32 {
    let (vectorized, next) = vectorized_part::<T>(a, b);
    let mut sum = vectorized.unwrap_or(0.0);
    for index in next..a.len() {
        sum = T::accumulate(sum, a[index], b[index]);
    }
    sum
}

/// `initial` plus the sum of `T`'s terms over `a` and `b`, as a vectorized loop that
/// continues a running float sum does (sparsevec's loop over the second operand's last
/// elements): the vectorized part's sum is added to `initial`, then the tail one by one.
pub(crate) fn continued_sum<T: Term>(initial: f32, a: &[f32], b: &[f32]) -> f32 {
    let (vectorized, next) = vectorized_part::<T>(a, b);
    let mut sum = vectorized.map_or(initial, |vectorized| initial + vectorized);
    for index in next..a.len() {
        sum = T::accumulate(sum, a[index], b[index]);
    }
    sum
}

/// The three sums of a cosine distance: (a·b, a·a, b·b).
#[inline(always)]
fn cosine_sums(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
    (ordered_sum::<Product>(a, b), ordered_sum::<Product>(a, a), ordered_sum::<Product>(b, b))
}

/// pgvector's `vector_norm`: squares summed in double, 4 lanes each taking two elements
/// per 8 (`lo² + hi²`, exact products so fusing does not matter), folded to 2
/// (`l[j] + l[j + 2]`), a 2-lane step over 4 remaining elements added to them, `s1 + s0`,
/// then one by one.
#[inline(always)]
fn norm_squared(a: &[f32]) -> f64 {
    let wide_end = a.len() - a.len() % WIDE_LANES;
    let square = |value: f32| f64::from(value) * f64::from(value);
    let mut pair = [0.0f64; 2];
    let mut sum = 0.0f64;
    if wide_end > 0 {
        let mut lanes = [0.0f64; NARROW_LANES];
        for chunk in a[..wide_end].chunks_exact(WIDE_LANES) {
            for (lane, value) in lanes.iter_mut().enumerate() {
                *value += square(chunk[lane]) + square(chunk[lane + NARROW_LANES]);
            }
        }
        pair = [lanes[0] + lanes[2], lanes[1] + lanes[3]];
        sum = pair[1] + pair[0];
    }
    let mut next = wide_end;
    if a.len() - next >= NARROW_LANES {
        let chunk = &a[next..next + NARROW_LANES];
        let step: [f64; 2] =
            std::array::from_fn(|lane| square(chunk[lane]) + square(chunk[lane + 2]));
        pair = [step[0] + pair[0], step[1] + pair[1]];
        sum = pair[1] + pair[0];
        next += NARROW_LANES;
    }
    for value in &a[next..] {
        sum += square(*value);
    }
    sum
}

/// The kernels compiled for the baseline CPU. Exposed so benches and tests can compare the
/// detected path with it; both return the same bits.
pub mod portable {
    use super::*;

    pub fn l2_squared_distance(a: &[f32], b: &[f32]) -> f32 {
        ordered_sum::<SquaredDifference>(a, b)
    }
    pub fn inner_product(a: &[f32], b: &[f32]) -> f32 {
        ordered_sum::<Product>(a, b)
    }
    pub fn l1_distance(a: &[f32], b: &[f32]) -> f32 {
        ordered_sum::<AbsoluteDifference>(a, b)
    }
    pub fn cosine_sums(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
        super::cosine_sums(a, b)
    }
    pub fn norm_squared(a: &[f32]) -> f64 {
        super::norm_squared(a)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;

    // SAFETY (all): callers check `has_avx2_fma()` first.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn l2_squared_distance(a: &[f32], b: &[f32]) -> f32 {
        ordered_sum::<SquaredDifference>(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn inner_product(a: &[f32], b: &[f32]) -> f32 {
        ordered_sum::<Product>(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn l1_distance(a: &[f32], b: &[f32]) -> f32 {
        ordered_sum::<AbsoluteDifference>(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn cosine_sums(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
        super::cosine_sums(a, b)
    }
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn norm_squared(a: &[f32]) -> f64 {
        super::norm_squared(a)
    }
}

#[cfg(target_arch = "x86_64")]
fn has_avx2_fma() -> bool {
    // std caches the CPUID answer, so this is a load and a test.
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

/// The kernel path this CPU runs ("avx2+fma" or "portable"), for benches and EXPLAIN.
pub fn simd_path_name() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        return "avx2+fma";
    }
    "portable"
}

macro_rules! dispatch {
    ($name:ident ( $($argument:expr),* )) => {{
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            return unsafe { avx2::$name($($argument),*) };
        }
        portable::$name($($argument),*)
    }};
}

/// Squared Euclidean distance, as pgvector's `VectorL2SquaredDistance` (float result).
pub fn l2_squared_distance(a: &[f32], b: &[f32]) -> f32 {
    dispatch!(l2_squared_distance(a, b))
}

/// Inner product, as pgvector's `VectorInnerProduct` (the `<#>` operator negates it).
pub fn inner_product(a: &[f32], b: &[f32]) -> f32 {
    dispatch!(inner_product(a, b))
}

/// Taxicab distance, as pgvector's `l1_distance` (float sum).
pub fn l1_distance(a: &[f32], b: &[f32]) -> f32 {
    dispatch!(l1_distance(a, b))
}

/// Euclidean norm in double, as pgvector's `vector_norm`.
pub fn norm(a: &[f32]) -> f64 {
    let squared = {
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { avx2::norm_squared(a) }
        } else {
            portable::norm_squared(a)
        }
        #[cfg(not(target_arch = "x86_64"))]
        portable::norm_squared(a)
    };
    squared.sqrt()
}

/// An f64 value rounded to the nearest f32 (sums, means and norms are f64; vectors f32).
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn to_f32(value: f64) -> f32 {
    value as f32
}

/// `vector` scaled to unit norm (unchanged if its norm is 0): k-means of the inner product
/// and cosine classes, and cosine sign codes.
pub(crate) fn normalized(vector: &[f32]) -> Vec<f32> {
    let length = norm(vector);
    if length > 0.0 {
        vector.iter().map(|&value| to_f32(f64::from(value) / length)).collect()
    } else {
        vector.to_vec()
    }
}

/// Cosine distance as pgvector computes it: float sums, then the similarity in double
/// (`sqrt(|a|² · |b|²)`, not the product of two roots) clamped to [-1, 1]. A zero vector
/// gives NaN, as in pgvector.
pub fn cosine_distance(a: &[f32], b: &[f32]) -> f64 {
    let (dot, norm_a, norm_b) = cosine_sums_dispatched(a, b);
    let similarity = f64::from(dot) / (f64::from(norm_a) * f64::from(norm_b)).sqrt();
    1.0 - similarity.clamp(-1.0, 1.0)
}

fn cosine_sums_dispatched(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
    dispatch!(cosine_sums(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(dimensions: usize, seed: u32) -> Vec<f32> {
        // A small LCG: deterministic values with varied exponents and signs.
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..dimensions)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let unit = f32::from(u16::try_from(state >> 16).expect("16 bits")) / 65_536.0;
                (unit - 0.5) * 3.0
            })
            .collect()
    }

    #[test]
    fn detected_path_gives_the_portable_bits() {
        for dimensions in [1, 3, 7, 8, 9, 15, 16, 17, 24, 25, 31, 32, 100, 128, 768, 1536] {
            let a = sample(dimensions, 1);
            let b = sample(dimensions, 2);
            assert_eq!(
                l2_squared_distance(&a, &b).to_bits(),
                portable::l2_squared_distance(&a, &b).to_bits()
            );
            assert_eq!(inner_product(&a, &b).to_bits(), portable::inner_product(&a, &b).to_bits());
            assert_eq!(l1_distance(&a, &b).to_bits(), portable::l1_distance(&a, &b).to_bits());
            assert_eq!(norm(&a).to_bits(), portable::norm_squared(&a).sqrt().to_bits());
            let (dot, norm_a, norm_b) = portable::cosine_sums(&a, &b);
            let expected = 1.0
                - (f64::from(dot) / (f64::from(norm_a) * f64::from(norm_b)).sqrt())
                    .clamp(-1.0, 1.0);
            assert_eq!(cosine_distance(&a, &b).to_bits(), expected.to_bits());
        }
    }

    #[test]
    fn small_vectors_sum_in_element_order() {
        // Below 8 elements only the one-by-one step runs: plain left-to-right sums.
        assert_eq!(l2_squared_distance(&[1.0, 2.0, 3.0], &[4.0, 5.0, 7.0]), 34.0);
        assert_eq!(inner_product(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
        assert_eq!(l1_distance(&[1.0, -2.0], &[-1.0, 2.0]), 6.0);
        assert_eq!(norm(&[3.0, 4.0]), 5.0);
        assert_eq!(cosine_distance(&[1.0, 0.0], &[0.0, 1.0]), 1.0);
        assert_eq!(cosine_distance(&[1.0, 1.0], &[2.0, 2.0]), 0.0);
        assert!(cosine_distance(&[0.0, 0.0], &[1.0, 1.0]).is_nan());
    }

    #[test]
    fn wide_lanes_follow_the_tree_order() {
        // 16 ones and a large first lane: each lane sums its two elements, then the fold
        // and the tree add the small values together before the large one; a
        // left-to-right sum would lose them to rounding one at a time.
        let mut a = vec![1.0f32; 16];
        a[0] = 16_777_216.0; // 2^24: adding 1 to it alone rounds back down.
        let zeros = vec![0.0f32; 16];
        let tree = l1_distance(&a, &zeros);
        let sequential = a.iter().fold(0.0f32, |sum, value| sum + value);
        assert_eq!(sequential, 16_777_216.0);
        assert_eq!(tree, 16_777_230.0);
    }
}
