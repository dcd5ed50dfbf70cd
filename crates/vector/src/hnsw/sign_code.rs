//! Sign codes: the layer-0 neighbour codes of vectors too wide for SQ8 codes to fit a node
//! page (design 014, "Sign codes"). One bit per dimension, so a 768-d neighbour's code is
//! 104 bytes where SQ8 would take 776; with them a hop still costs one page read.
//!
//! A code sits in the list of its owner `x` (the node whose page holds the list) and
//! quantizes the neighbour `y` relative to it: the residual `r = y − x` (for cosine, of the
//! normalized vectors `ŷ − x̂`). Neighbours are near their owner, so `r` is short and the
//! estimate's error, which grows with `‖r‖`, is small where it matters; the signs of `y`
//! itself carry little when the data is clustered away from the origin (measured on
//! clustered 300-d data: recall@10 0.49 against 1.0 with residuals).
//!
//! A code of `d` dimensions (little-endian):
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 4 | scale `s` f32: `‖r‖² / Σ|rᵢ|` (0 when `r = 0`) |
//! | 4 | 4 | term `t` f32: `‖r‖²` for l2 and cosine, `⟨x, r⟩` for inner product |
//! | 8 | ⌈d/8⌉ | sign bits: bit `i % 8` of byte `i / 8` is set when `rᵢ > 0` |
//!
//! `⟨v, r⟩ ≈ s · Σ vᵢ·sign(rᵢ)` for any exact `v` (the estimator of RaBitQ without its
//! random rotation: exact when every `|rᵢ|` is equal). The owner's exact vector is at hand
//! (its page is the one being read), so with `v = q − x` (`q̂ − x̂` for cosine) the error
//! grows with `‖q − x‖·‖r‖`, both local. `v` is quantized once per list to 4-bit levels on
//! its own range (RaBitQ's query quantization, adding at most half a level per set bit), so
//! `Σ_{rᵢ > 0} vᵢ` is five POPCNTs per 64 dimensions:
//! - l2: `‖q − y‖² = ‖q − x‖² − 2⟨q − x, r⟩ + ‖r‖²`;
//! - inner product: `−⟨q, y⟩ = −(⟨q, x⟩ + ⟨q − x, r⟩ + ⟨x, r⟩)`;
//! - cosine: `1 − ⟨q̂, ŷ⟩ = 1 − (⟨q̂, x̂⟩ + ⟨q̂ − x̂, r̂⟩ − ‖r̂‖²/2)` (as `⟨x̂, r̂⟩ = −‖r̂‖²/2`
//!   for unit `x̂`, `ŷ`).
//!
//! l1 has no such estimate: an l1 index this wide keeps no codes. The estimates only order
//! the candidates; results carry exact distances (design 014, "Query": an expanded node's
//! exact vector is on its page, and the rest are re-ranked).

use crate::dense::{normalized, to_f32};
use crate::index::Metric;

/// The scale and the term (f32 each) before the sign bits.
pub(crate) const SIGN_CODE_HEADER_BYTES: usize = 8;

/// Bytes of the sign code of a `dimensions`-wide vector.
pub(crate) fn sign_code_bytes(dimensions: usize) -> usize {
    SIGN_CODE_HEADER_BYTES + dimensions.div_ceil(8)
}

/// Whether `metric`'s distance has a sign-code estimate.
pub(crate) fn estimable(metric: Metric) -> bool {
    matches!(metric.base(), Metric::L2 | Metric::InnerProduct | Metric::Cosine)
}

/// `a − b`, elementwise.
fn difference<'a>(a: &'a [f32], b: &'a [f32]) -> impl Iterator<Item = f32> + 'a {
    a.iter().zip(b).map(|(left, right)| left - right)
}

/// Appends the sign code of `vector` in the list of `owner`.
pub(crate) fn encode_sign_code(metric: Metric, vector: &[f32], owner: &[f32], out: &mut Vec<u8>) {
    assert_eq!(vector.len(), owner.len(), "a neighbour of the owner's width");
    let start = out.len();
    let residual: Vec<f32> = if metric.base() == Metric::Cosine {
        difference(&normalized(vector), &normalized(owner)).collect()
    } else {
        difference(vector, owner).collect()
    };
    let norm_squared: f32 = residual.iter().map(|value| value * value).sum();
    let absolute_sum: f32 = residual.iter().map(|value| value.abs()).sum();
    let scale = if absolute_sum > 0.0 { norm_squared / absolute_sum } else { 0.0 };
    let term = if metric.base() == Metric::InnerProduct {
        crate::inner_product(owner, &residual)
    } else {
        norm_squared
    };
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend_from_slice(&term.to_le_bytes());
    for chunk in residual.chunks(8) {
        let byte =
            chunk.iter().enumerate().fold(
                0u8,
                |byte, (bit, &value)| if value > 0.0 { byte | (1 << bit) } else { byte },
            );
        out.push(byte);
    }
    assert_eq!(out.len() - start, sign_code_bytes(vector.len()), "a code's size is fixed");
}

/// Bits of the query side's quantization: each value of `v` becomes a 4-bit level, so that
/// `Σ_{rᵢ > 0} vᵢ` is a few POPCNTs per 64 dimensions (RaBitQ's query quantization) instead
/// of a multiply-add per dimension: at 768-d, 60 POPCNTs against 768 multiply-adds.
const QUERY_LEVEL_BITS: usize = 4;
const QUERY_LEVELS_MAX: f32 = 15.0;
/// Bit 0 of each of a word's eight bytes.
const LOW_BIT_OF_EACH_BYTE: u64 = 0x0101_0101_0101_0101;
/// Multiplying bytes of 0 or 1 by this gathers byte `b`'s bit at bit `56 + b` (each byte's
/// bit lands on its own position, so nothing carries): eight dimensions' bits in one byte.
const PACK_BITS: u64 = 0x0102_0408_1020_4080;

/// What the estimates of one owner's list need of the query and the owner, computed once
/// per list read: `v` (`q − x`, or `q̂ − x̂` for cosine) quantized to 4-bit levels
/// `vᵢ ≈ low + step·levelᵢ` and stored as bit planes, its exact sum, and the exact base
/// term (`‖q − x‖²` for l2, `⟨q, x⟩` for inner product, `⟨q̂, x̂⟩` for cosine).
#[derive(Debug, Default)]
pub(crate) struct ListTerms {
    selected: Vec<f32>,
    selected_sum: f32,
    base: f64,
    /// Plane `j` (words `j·words..(j+1)·words`): bit `i % 64` of word `i / 64` is bit `j`
    /// of dimension `i`'s level.
    planes: Vec<u64>,
    /// Each dimension's level, padded with zeros to whole words (kept for its allocation).
    levels: Vec<u8>,
    words: usize,
    /// The normalized query (cosine), computed at the first list: a `ListTerms` serves one
    /// query (it lives in one scan's cache).
    normalized_query: Vec<f32>,
    low: f32,
    step: f32,
}

impl ListTerms {
    /// Fills the terms for `query` against the list of `owner`, reusing the allocation.
    pub fn fill(&mut self, metric: Metric, query: &[f32], owner: &[f32]) {
        assert_eq!(query.len(), owner.len(), "a query of the index's width");
        self.selected.clear();
        match metric.base() {
            Metric::Cosine => {
                if self.normalized_query.is_empty() {
                    self.normalized_query = normalized(query);
                }
                debug_assert_eq!(self.normalized_query, normalized(query), "one query");
                // The owner scaled as `normalized` scales it (cosine never indexes a zero
                // vector), without building the scaled copy.
                let norm = crate::norm(owner);
                let inverse = if norm > 0.0 { to_f32(1.0 / norm) } else { 1.0 };
                let query = &self.normalized_query;
                self.selected.extend(query.iter().zip(owner).map(|(q, x)| q - x * inverse));
                self.base = f64::from(crate::inner_product(query, owner) * inverse);
            }
            Metric::InnerProduct => {
                self.selected.extend(difference(query, owner));
                self.base = f64::from(crate::inner_product(query, owner));
            }
            _ => {
                self.selected.extend(difference(query, owner));
                self.base = f64::from(crate::l2_squared_distance(query, owner));
            }
        }
        self.selected_sum = fold_lanes(&self.selected, 0.0, |sum, value| sum + value, |a, b| a + b);
        self.quantize();
    }

    /// Quantizes `selected` into 4-bit levels on its own range and lays them out as planes:
    /// the levels first (a loop the compiler vectorizes), then each plane's bits of eight
    /// dimensions gathered into a byte by one multiply (`PACK_BITS`).
    fn quantize(&mut self) {
        let low = fold_lanes(&self.selected, f32::INFINITY, f32::min, f32::min);
        let high = fold_lanes(&self.selected, f32::NEG_INFINITY, f32::max, f32::max);
        self.low = low;
        self.step = (high - low) / QUERY_LEVELS_MAX;
        let inverse = if self.step > 0.0 { 1.0 / self.step } else { 0.0 };
        self.levels.clear();
        self.levels.extend(self.selected.iter().map(|&value| query_level(value, low, inverse)));
        self.levels.resize(self.selected.len().div_ceil(64) * 64, 0);
        self.words = self.levels.len() / 64;
        self.planes.clear();
        self.planes.resize(QUERY_LEVEL_BITS * self.words, 0);
        for (group, eight) in self.levels.chunks_exact(8).enumerate() {
            let levels = u64::from_le_bytes(eight.try_into().expect("8 levels"));
            let (word, shift) = (group / 8, 8 * (group % 8));
            for plane in 0..QUERY_LEVEL_BITS {
                let bits = ((levels >> plane) & LOW_BIT_OF_EACH_BYTE).wrapping_mul(PACK_BITS) >> 56;
                self.planes[plane * self.words + word] |= bits << shift;
            }
        }
    }

    /// The estimated `metric` distance from the query to the neighbour whose code is `code`.
    pub fn estimate(&self, metric: Metric, code: &[u8]) -> f64 {
        let bits = &code[SIGN_CODE_HEADER_BYTES..];
        let (count, weighted) = plane_counts(bits, &self.planes, self.words);
        let positive =
            f64::from(self.low) * f64::from(count) + f64::from(self.step) * f64::from(weighted);
        self.distance(metric, code, positive)
    }

    /// The distance from `Σ_{rᵢ > 0} vᵢ` (`positive`) and the code's scale and term.
    fn distance(&self, metric: Metric, code: &[u8], positive: f64) -> f64 {
        debug_assert_eq!(code.len(), sign_code_bytes(self.selected.len()), "code of another width");
        let scale = f32::from_le_bytes(code[0..4].try_into().expect("4 bytes"));
        let term = f64::from(f32::from_le_bytes(code[4..8].try_into().expect("4 bytes")));
        // Σ vᵢ·sign(rᵢ) = 2·Σ_{rᵢ > 0} vᵢ − Σ vᵢ.
        let projection = f64::from(scale) * (2.0 * positive - f64::from(self.selected_sum));
        match metric.base() {
            Metric::L2 => (self.base - 2.0 * projection + term).max(0.0).sqrt(),
            Metric::InnerProduct => -(self.base + projection + term),
            Metric::Cosine => 1.0 - (self.base + projection - term / 2.0),
            other => unreachable!("no sign-code estimate for {other:?}: the layout keeps none"),
        }
    }
}

/// `values` folded by `step` in eight independent lanes, then the lanes by `combine`: the
/// lanes let the compiler use vector registers (a single f32 accumulator is a serial chain,
/// and these passes were most of a list's preparation when profiled).
fn fold_lanes(
    values: &[f32],
    init: f32,
    step: impl Fn(f32, f32) -> f32,
    combine: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut lanes = [init; 8];
    let chunks = values.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &value) in lanes.iter_mut().zip(chunk) {
            *lane = step(*lane, value);
        }
    }
    let folded = rest.iter().fold(init, |lane, &value| step(lane, value));
    lanes.into_iter().fold(folded, combine)
}

/// `value`'s 4-bit level on `[low, low + 15·step]` (`inverse` = 1/step, 0 when every
/// value is equal), rounded half up.
// Clamped to [0, 15.5) first, so the conversion truncates a non-negative value below 16:
// adding 0.5 before it rounds (`f32::round` is a library call on the baseline target).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn query_level(value: f32, low: f32, inverse: f32) -> u8 {
    ((value - low) * inverse + 0.5).clamp(0.0, QUERY_LEVELS_MAX + 0.25) as u8
}

/// (set bits of the code, Σ over the set bits of their levels) with the POPCNT
/// instruction when the CPU has it (the baseline target counts bits in software).
fn plane_counts(bits: &[u8], planes: &[u64], words: usize) -> (u32, u32) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has the feature the function is compiled for (checked above).
        return unsafe { popcnt::plane_counts(bits, planes, words) };
    }
    plane_counts_portable(bits, planes, words)
}

#[cfg(target_arch = "x86_64")]
mod popcnt {
    // SAFETY: callers check the feature first.
    #[target_feature(enable = "popcnt")]
    pub unsafe fn plane_counts(bits: &[u8], planes: &[u64], words: usize) -> (u32, u32) {
        super::plane_counts_portable(bits, planes, words)
    }
}

#[inline(always)]
fn plane_counts_portable(bits: &[u8], planes: &[u64], words: usize) -> (u32, u32) {
    assert_eq!(planes.len(), QUERY_LEVEL_BITS * words, "planes of the code's width");
    assert!(bits.len() <= 8 * words, "a code of the planes' width");
    let (mut count, mut weighted) = (0u32, 0u32);
    let mut add = |word: u64, index: usize| {
        count += word.count_ones();
        for plane in 0..QUERY_LEVEL_BITS {
            weighted += (word & planes[plane * words + index]).count_ones() << plane;
        }
    };
    let whole = bits.chunks_exact(8);
    let tail = whole.remainder();
    let full = whole.len();
    for (index, chunk) in whole.enumerate() {
        add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")), index);
    }
    if !tail.is_empty() {
        let mut bytes = [0u8; 8];
        bytes[..tail.len()].copy_from_slice(tail);
        add(u64::from_le_bytes(bytes), full);
    }
    (count, weighted)
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS: [Metric; 3] = [Metric::L2, Metric::InnerProduct, Metric::Cosine];

    fn estimate(metric: Metric, query: &[f32], vector: &[f32], owner: &[f32]) -> f64 {
        let mut code = Vec::new();
        encode_sign_code(metric, vector, owner, &mut code);
        let mut terms = ListTerms::default();
        terms.fill(metric, query, owner);
        terms.estimate(metric, &code)
    }

    /// The estimate with `Σ_{rᵢ > 0} vᵢ` summed exactly instead of from 4-bit levels.
    fn estimate_unquantized(metric: Metric, query: &[f32], vector: &[f32], owner: &[f32]) -> f64 {
        let mut code = Vec::new();
        encode_sign_code(metric, vector, owner, &mut code);
        let mut terms = ListTerms::default();
        terms.fill(metric, query, owner);
        let bits = &code[SIGN_CODE_HEADER_BYTES..];
        let positive: f64 = (terms.selected.iter().enumerate())
            .filter(|(i, _)| bits[i / 8] & (1 << (i % 8)) != 0)
            .map(|(_, &value)| f64::from(value))
            .sum();
        terms.distance(metric, &code, positive)
    }

    #[test]
    fn the_quantized_sum_is_within_half_a_level_per_set_bit() {
        // 150 dimensions: two full words and a partial one.
        let values: Vec<f32> = (0..150u8).map(|i| (f32::from(i) * 0.61).sin() * 3.0).collect();
        let bits: Vec<u8> = (0..19u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        let bits = {
            let mut bits = bits;
            bits[18] &= 0b0011_1111; // no bits past dimension 150
            bits
        };
        let mut terms = ListTerms { selected: values.clone(), ..ListTerms::default() };
        terms.quantize();
        let (count, weighted) = plane_counts(&bits, &terms.planes, terms.words);
        let set: Vec<usize> = (0..150).filter(|i| bits[i / 8] & (1 << (i % 8)) != 0).collect();
        assert_eq!(count, u32::try_from(set.len()).unwrap());
        let exact: f64 = set.iter().map(|&i| f64::from(values[i])).sum();
        let quantized =
            f64::from(terms.low) * f64::from(count) + f64::from(terms.step) * f64::from(weighted);
        let bound = f64::from(terms.step) / 2.0 * f64::from(count) + 1e-4;
        assert!((exact - quantized).abs() <= bound, "{exact} against {quantized} (bound {bound})");
        assert_eq!(plane_counts(&bits, &terms.planes, terms.words), {
            plane_counts_portable(&bits, &terms.planes, terms.words)
        });
    }

    #[test]
    fn the_estimate_is_exact_when_every_residual_magnitude_is_equal() {
        // y = x ± 0.5 everywhere (d = 13: a partial last byte of bits), q arbitrary.
        let owner: Vec<f32> = (0..13u8).map(|i| f32::from(i) * 0.1 - 0.4).collect();
        let vector: Vec<f32> = owner
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 3 == 0 { x - 0.5 } else { x + 0.5 })
            .collect();
        let query: Vec<f32> = (0..13u8).map(|i| (f32::from(i) * 0.37).sin()).collect();
        // Cosine codes the normalized vectors, whose residual magnitudes differ.
        for metric in [Metric::L2, Metric::InnerProduct] {
            let exact = metric.distance(&query, &vector);
            let estimated = estimate_unquantized(metric, &query, &vector, &owner);
            assert!((exact - estimated).abs() < 1e-5, "{metric:?}: {exact} against {estimated}");
        }
        let mut code = Vec::new();
        encode_sign_code(Metric::L2, &vector, &owner, &mut code);
        assert_eq!(code.len(), 8 + 2);
    }

    #[test]
    fn a_neighbour_equal_to_its_owner_is_estimated_exactly() {
        let owner = [0.25f32, -1.0, 3.0, 0.5, 0.0, 2.0, -0.75, 1.0, 0.125];
        let query = [1.0f32, 0.5, -2.0, 0.0, 1.5, 0.25, 0.0, -1.0, 4.0];
        for metric in METRICS {
            let exact = metric.distance(&query, &owner);
            let estimated = estimate(metric, &query, &owner, &owner);
            assert!((exact - estimated).abs() < 1e-5, "{metric:?}: {exact} against {estimated}");
        }
    }

    #[test]
    fn the_estimate_orders_a_cluster_close_to_the_exact_order() {
        // Deterministic pseudo-random 256-d points around a far centre, coded against one
        // of them: the estimated nearest 10 of 500 to a query in the cluster are mostly
        // among the exact nearest 20.
        let mut state = 12345u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            f32::from(u16::try_from(state >> 48).unwrap()) / 32768.0 - 1.0
        };
        let centre: Vec<f32> = (0..256).map(|_| 10.0 * next()).collect();
        let mut around = |spread: f32| -> Vec<f32> {
            centre.iter().map(|value| value + spread * next()).collect()
        };
        let owner = around(0.1);
        let data: Vec<Vec<f32>> = (0..500).map(|_| around(0.1)).collect();
        let query = around(0.1);
        for metric in METRICS {
            let rank = |score: &dyn Fn(&[f32]) -> f64| {
                let mut order: Vec<usize> = (0..data.len()).collect();
                order.sort_by(|&a, &b| score(&data[a]).total_cmp(&score(&data[b])));
                order
            };
            let exact = rank(&|vector| metric.distance(&query, vector));
            let estimated = rank(&|vector| estimate(metric, &query, vector, &owner));
            let found = estimated[..10].iter().filter(|index| exact[..20].contains(index)).count();
            // A random order would place 0.4 of 10 there.
            assert!(found >= 5, "{metric:?}: {found} of the estimated nearest 10 in the exact 20");
        }
    }
}
