//! The centers of an ivfflat index: k-means over a sample of the rows, as pgvector computes
//! them (k-means++ seeding; vectors and centers normalized for the inner product and cosine
//! operator classes; fewer samples than lists: the samples, then random centers).

use tierdb_common::SplitMix64;

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

/// An f64 value rounded to the nearest f32 (k-means sums and means are f64; vectors f32).
#[allow(clippy::cast_possible_truncation)]
fn to_f32(value: f64) -> f32 {
    value as f32
}

/// `vector` scaled to unit norm (unchanged if its norm is 0).
pub(crate) fn normalized(vector: &[f32]) -> Vec<f32> {
    let norm = crate::norm(vector);
    if norm > 0.0 {
        vector.iter().map(|&value| to_f32(f64::from(value) / norm)).collect()
    } else {
        vector.to_vec()
    }
}

/// The k-means distance between a sample and a center.
fn distance(a: &[f32], b: &[f32]) -> f64 {
    f64::from(crate::l2_squared_distance(a, b))
}

/// Index of the center in `centers` (flat, `dimensions` each) nearest to `vector`.
fn nearest(centers: &[f32], dimensions: usize, vector: &[f32]) -> usize {
    let mut best = (f64::INFINITY, 0);
    for (index, center) in centers.chunks_exact(dimensions).enumerate() {
        let d = distance(vector, center);
        if d < best.0 {
            best = (d, index);
        }
    }
    best.1
}

/// `lists` centers (flat, `dimensions` each) for `samples`, seeded by `seed`.
pub fn centers(
    samples: &[Vec<f32>],
    lists: usize,
    dimensions: usize,
    metric: Metric,
    seed: u64,
) -> Vec<f32> {
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
        let mut centers = seed_centers(&samples, lists, &mut random);
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
fn seed_centers(samples: &[Vec<f32>], lists: usize, random: &mut SplitMix64) -> Vec<f32> {
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
            let center = nearest(centers, dimensions, sample);
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
