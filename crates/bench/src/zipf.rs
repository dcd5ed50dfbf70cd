//! Zipfian page choice as YCSB generates it (Gray et al., "Quickly generating billion-record
//! synthetic databases"), scrambled so that the hot items are spread over the key space
//! instead of clustered at its start.

use tierdb_common::SplitMix64;

/// Draws items in `0..items` with a zipfian distribution of parameter `theta`.
#[derive(Clone, Debug)]
pub struct ScrambledZipfian {
    items: u64,
    theta: f64,
    zeta_items: f64,
    alpha: f64,
    eta: f64,
}

fn zeta(count: u64, theta: f64) -> f64 {
    (1..=count).map(|rank| 1.0 / (rank as f64).powf(theta)).sum()
}

impl ScrambledZipfian {
    pub fn new(items: u64, theta: f64) -> ScrambledZipfian {
        assert!(items >= 2, "zipfian needs at least two items");
        assert!(theta > 0.0 && theta < 1.0, "theta must be in (0, 1)");
        let zeta_two = zeta(2, theta);
        let zeta_items = zeta(items, theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta_two / zeta_items);
        ScrambledZipfian { items, theta, zeta_items, alpha: 1.0 / (1.0 - theta), eta }
    }

    /// The popularity rank drawn (0 is the most popular).
    pub fn next_rank(&self, random: &mut SplitMix64) -> u64 {
        let uniform = random.next_f64();
        let scaled = uniform * self.zeta_items;
        if scaled < 1.0 {
            return 0;
        }
        if scaled < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let rank =
            (self.items as f64 * (self.eta * uniform - self.eta + 1.0).powf(self.alpha)) as u64;
        rank.min(self.items - 1)
    }

    /// An item: the rank, scrambled by a fixed hash.
    pub fn next(&self, random: &mut SplitMix64) -> u64 {
        let rank = self.next_rank(random);
        SplitMix64::new(rank ^ 0x5DEE_CE66_D1CE_4E5B).next_u64() % self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_skewed_and_in_range() {
        let zipfian = ScrambledZipfian::new(10_000, 0.99);
        let mut random = SplitMix64::new(3);
        let mut top_ten = 0;
        for _ in 0..100_000 {
            let rank = zipfian.next_rank(&mut random);
            assert!(rank < 10_000);
            if rank < 10 {
                top_ten += 1;
            }
        }
        // With theta 0.99 over 10,000 items the top ten ranks draw about 30% of requests.
        assert!((20_000..40_000).contains(&top_ten), "top_ten={top_ten}");
        assert!(zipfian.next(&mut random) < 10_000);
    }
}
