//! Exact latency summaries from raw samples (benchmarks keep every sample).

use serde::Serialize;

/// Percentiles in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct LatencySummary {
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
}

impl LatencySummary {
    /// Summarizes nanosecond samples (sorted in place).
    pub fn from_nanos(samples: &mut [u64]) -> LatencySummary {
        if samples.is_empty() {
            return LatencySummary::default();
        }
        samples.sort_unstable();
        let at = |quantile: f64| {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let index =
                ((samples.len() as f64 * quantile).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[index] as f64 / 1000.0
        };
        let total: u128 = samples.iter().map(|&sample| u128::from(sample)).sum();
        LatencySummary {
            samples: samples.len() as u64,
            p50_us: at(0.50),
            p99_us: at(0.99),
            mean_us: total as f64 / samples.len() as f64 / 1000.0,
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_series() {
        let mut samples: Vec<u64> = (1..=100).map(|value| value * 1000).collect();
        let summary = LatencySummary::from_nanos(&mut samples);
        assert_eq!(summary.samples, 100);
        assert!((summary.p50_us - 50.0).abs() < f64::EPSILON);
        assert!((summary.p99_us - 99.0).abs() < f64::EPSILON);
        assert!((summary.mean_us - 50.5).abs() < 1e-9);
        assert!((median(&[3.0, 1.0, 2.0]) - 2.0).abs() < f64::EPSILON);
        assert!((median(&[4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < f64::EPSILON);
    }
}
