//! The centers of an ivfflat index: k-means over a sample of the rows, as pgvector computes
//! them (k-means++ seeding; vectors and centers normalized for the inner product and cosine
//! operator classes; fewer samples than lists: the samples, then random centers). Under
//! bit_hamming_ops the distance is hamming and a center is the per-bit majority of its
//! samples (pgvector's bit k-means: the mean of each bit, set when above 0.5).

use tierdb_common::SplitMix64;

use crate::dense::{normalized, to_f32};
use crate::index::Metric;

/// Lloyd iterations at most (pgvector runs up to 500 of Elkan's; the assignment rarely
/// changes after a few tens).
pub const KMEANS_ITERATIONS_MAX: usize = 50;
/// Rows sampled per list (pgvector: 50 per list).
pub const SAMPLES_PER_LIST: usize = 50;

/// Whether k-means normalizes vectors and centers under `metric` (pgvector's
/// `KMEANS_NORM_PROC`: the inner product and cosine operator classes).
pub(crate) fn normalizes(metric: Metric) -> bool {
    matches!(metric.base(), Metric::InnerProduct | Metric::Cosine)
}

/// The k-means distance between a sample and a center (squared, the seeding's weight).
type KmeansDistance = fn(&[f32], &[f32]) -> f64;

fn distance(a: &[f32], b: &[f32]) -> f64 {
    f64::from(crate::l2_squared_distance(a, b))
}

/// The squared hamming distance (pgvector's seeding squares its distance function's value).
fn hamming_squared(a: &[f32], b: &[f32]) -> f64 {
    let bits = Metric::BitHamming.distance(a, b);
    bits * bits
}

/// Index of the center in `centers` (flat, `dimensions` each) nearest to `vector`.
fn nearest(centers: &[f32], dimensions: usize, vector: &[f32], distance: KmeansDistance) -> usize {
    let mut best = (f64::INFINITY, 0);
    for (index, center) in centers.chunks_exact(dimensions).enumerate() {
        let d = distance(vector, center);
        if d < best.0 {
            best = (d, index);
        }
    }
    best.1
}

/// `lists` centers (flat, the metric's `elements` of `dimensions` each) for `samples`,
/// seeded by `seed`. `dimensions` is the column's (bits for a bit metric).
pub fn centers(
    samples: &[Vec<f32>],
    lists: usize,
    dimensions: usize,
    metric: Metric,
    seed: u64,
) -> Vec<f32> {
    if metric.is_bits() {
        return bit_centers(samples, lists, dimensions, seed);
    }
    assert!(lists > 0 && dimensions > 0);
    assert!(samples.iter().all(|sample| sample.len() == dimensions));
    let mut random = SplitMix64::new(seed);
    let samples: Vec<Vec<f32>> = if normalizes(metric) {
        samples.iter().map(|sample| normalized(sample)).collect()
    } else {
        samples.to_vec()
    };
    let mut centers = if samples.len() <= lists {
        quick_centers(&samples, lists, dimensions, metric, &mut random)
    } else {
        let mut centers = seed_centers(&samples, lists, &mut random, distance);
        lloyd(&samples, &mut centers, lists, dimensions);
        centers
    };
    if normalizes(metric) {
        for center in centers.chunks_exact_mut(dimensions) {
            let unit = normalized(center);
            center.copy_from_slice(&unit);
        }
    }
    assert_eq!(centers.len(), lists * dimensions);
    centers
}

/// pgvector's `QuickCenters`: every sample is a center, the rest random in [-1, 1].
fn quick_centers(
    samples: &[Vec<f32>],
    lists: usize,
    dimensions: usize,
    metric: Metric,
    random: &mut SplitMix64,
) -> Vec<f32> {
    let mut centers: Vec<f32> = samples.iter().flatten().copied().collect();
    while centers.len() < lists * dimensions {
        let mut center: Vec<f32> =
            (0..dimensions).map(|_| to_f32(random.next_f64() * 2.0 - 1.0)).collect();
        if normalizes(metric) {
            center = normalized(&center);
        }
        centers.extend_from_slice(&center);
    }
    centers
}

/// k-means++ seeding: each next center drawn with probability proportional to its squared
/// distance to the nearest center so far.
fn seed_centers(
    samples: &[Vec<f32>],
    lists: usize,
    random: &mut SplitMix64,
    distance: KmeansDistance,
) -> Vec<f32> {
    let pick = |random: &mut SplitMix64, bound: usize| -> usize {
        let bound = u64::try_from(bound).expect("usize fits u64");
        usize::try_from(random.below(bound)).expect("below a usize")
    };
    let mut centers: Vec<f32> = samples[pick(random, samples.len())].clone();
    let mut weights: Vec<f64> = samples.iter().map(|s| distance(s, &centers)).collect();
    while centers.len() < lists * samples[0].len() {
        let total: f64 = weights.iter().sum();
        let chosen = if total > 0.0 {
            let mut target = random.next_f64() * total;
            let mut chosen = samples.len() - 1;
            for (index, weight) in weights.iter().enumerate() {
                if target < *weight {
                    chosen = index;
                    break;
                }
                target -= weight;
            }
            chosen
        } else {
            pick(random, samples.len())
        };
        let center = samples[chosen].clone();
        for (weight, sample) in weights.iter_mut().zip(samples) {
            *weight = weight.min(distance(sample, &center));
        }
        centers.extend_from_slice(&center);
    }
    centers
}

/// Lloyd's iterations until no sample changes its center (or the iteration bound); a
/// center that loses all its samples keeps its place.
fn lloyd(samples: &[Vec<f32>], centers: &mut [f32], lists: usize, dimensions: usize) {
    let mut assignment = vec![usize::MAX; samples.len()];
    for _ in 0..KMEANS_ITERATIONS_MAX {
        let mut changed = false;
        for (slot, sample) in assignment.iter_mut().zip(samples) {
            let center = nearest(centers, dimensions, sample, distance);
            changed |= *slot != center;
            *slot = center;
        }
        if !changed {
            break;
        }
        let mut sums = vec![0f64; lists * dimensions];
        let mut counts = vec![0usize; lists];
        for (center, sample) in assignment.iter().zip(samples) {
            counts[*center] += 1;
            let sum = &mut sums[center * dimensions..(center + 1) * dimensions];
            for (total, value) in sum.iter_mut().zip(sample) {
                *total += f64::from(*value);
            }
        }
        for (list, count) in counts.iter().enumerate().filter(|(_, count)| **count > 0) {
            let range = list * dimensions..(list + 1) * dimensions;
            for (center, total) in centers[range.clone()].iter_mut().zip(&sums[range]) {
                *center = to_f32(*total / *count as f64);
            }
        }
    }
}

/// Bit k-means: k-means++ seeding by hamming distance, then Lloyd's iterations with each
/// center the per-bit majority of its samples (a bit is set when more than half of them
/// have it: pgvector's mean above 0.5); fewer samples than lists: the samples, then random
/// bits (pgvector's `RandomCenters`: a uniform draw above 0.5). Padding bits stay zero.
fn bit_centers(samples: &[Vec<f32>], lists: usize, bits: usize, seed: u64) -> Vec<f32> {
    let words = crate::bit_words(bits);
    assert!(lists > 0 && bits > 0);
    assert!(samples.iter().all(|sample| sample.len() == words));
    let mut random = SplitMix64::new(seed);
    if samples.len() <= lists {
        let mut centers: Vec<f32> = samples.iter().flatten().copied().collect();
        while centers.len() < lists * words {
            let set: Vec<bool> = (0..bits).map(|_| random.next_f64() > 0.5).collect();
            let mut packed = vec![0u8; bits.div_ceil(8)];
            for (index, _) in set.iter().enumerate().filter(|(_, bit)| **bit) {
                packed[index / 8] |= 0x80 >> (index % 8);
            }
            centers.extend(crate::bits_to_words(&packed));
        }
        return centers;
    }
    let mut centers = seed_centers(samples, lists, &mut random, hamming_squared);
    let mut assignment = vec![usize::MAX; samples.len()];
    for _ in 0..KMEANS_ITERATIONS_MAX {
        let mut changed = false;
        for (slot, sample) in assignment.iter_mut().zip(samples) {
            let center = nearest(&centers, words, sample, hamming_squared);
            changed |= *slot != center;
            *slot = center;
        }
        if !changed {
            break;
        }
        majority_centers(samples, &assignment, &mut centers, words);
    }
    assert_eq!(centers.len(), lists * words);
    centers
}

/// Each center with samples becomes their per-bit majority (one count per bit, reused from
/// center to center, so memory is the bits of one vector, not of every list).
fn majority_centers(samples: &[Vec<f32>], assignment: &[usize], centers: &mut [f32], words: usize) {
    let bits_per_word = crate::BITS_PER_WORD;
    let mut members: Vec<Vec<&[f32]>> = vec![Vec::new(); centers.len() / words];
    for (center, sample) in assignment.iter().zip(samples) {
        members[*center].push(sample);
    }
    let mut ones = vec![0usize; words * bits_per_word];
    for (list, group) in members.iter().enumerate().filter(|(_, group)| !group.is_empty()) {
        ones.fill(0);
        for sample in group {
            for (word_index, word) in sample.iter().enumerate() {
                let word = word.to_bits();
                for bit in 0..bits_per_word {
                    ones[word_index * bits_per_word + bit] += usize::from((word >> bit) & 1 == 1);
                }
            }
        }
        for (word_index, center) in centers[list * words..(list + 1) * words].iter_mut().enumerate()
        {
            let mut word = 0u32;
            for bit in 0..bits_per_word {
                if 2 * ones[word_index * bits_per_word + bit] > group.len() {
                    word |= 1 << bit;
                }
            }
            *center = f32::from_bits(word);
        }
    }
}
