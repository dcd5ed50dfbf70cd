//! SplitMix64: a tiny, fast, deterministic generator for workloads, tests and benchmarks.
//! Not for anything that needs unpredictability.

/// Deterministic 64-bit generator (Steele, Lea and Flood's SplitMix64).
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        mixed ^ (mixed >> 31)
    }

    /// Uniform in `0..bound`; `bound` must be positive. Uses Lemire's multiply-shift, whose
    /// bias is below 2^-32 for the bounds used here.
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "bound must be positive");
        let wide = u128::from(self.next_u64()) * u128::from(bound);
        u64::try_from(wide >> 64).expect("high half of a 128-bit product fits in 64 bits")
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        // 53 random mantissa bits; the shift keeps the value exact in an f64.
        let bits = self.next_u64() >> 11;
        f64::from(u32::try_from(bits >> 21).expect("32 bits"))
            .mul_add(2f64.powi(21), f64::from(u32::try_from(bits & 0x1F_FFFF).expect("21 bits")))
            / 2f64.powi(53)
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = SplitMix64::new(7);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let value = rng.below(10);
            assert!(value < 10);
            seen[usize::try_from(value).unwrap()] = true;
        }
        assert!(seen.iter().all(|&hit| hit));
    }

    #[test]
    fn next_f64_is_in_unit_interval() {
        let mut rng = SplitMix64::new(11);
        for _ in 0..10_000 {
            let value = rng.next_f64();
            assert!((0.0..1.0).contains(&value));
        }
    }
}
