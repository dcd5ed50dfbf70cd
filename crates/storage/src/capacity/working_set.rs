//! A sliding-window estimate of the distinct pages touched: a HyperLogLog per time slot and
//! per level (pages hit in DRAM; pages loaded from the tier or the volume), merged over the
//! slots (design 015). Recording costs a hash and a one-byte load, and a one-byte store
//! only when the register grows.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use tierdb_common::PageId;

/// Time slots of the window; the runner rotates one every window / `WORKING_SET_SLOTS`.
pub const WORKING_SET_SLOTS: usize = 16;
/// log2 of the registers per sketch: 1,024 registers, standard error 1.04 / 32 = 3.3%.
const REGISTER_BITS: u32 = 10;
const REGISTERS: usize = 1 << REGISTER_BITS;

/// Where a page was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Dram = 0,
    /// Loaded into DRAM from the tier or the volume.
    BelowDram = 1,
}

/// Distinct pages touched in the window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkingSetEstimate {
    pub dram_pages: u64,
    pub below_dram_pages: u64,
    /// Pages touched at either level (not the sum: a page may be in both).
    pub pages: u64,
}

struct Sketch {
    registers: Box<[AtomicU8]>,
}

impl Sketch {
    fn new() -> Sketch {
        Sketch { registers: (0..REGISTERS).map(|_| AtomicU8::new(0)).collect() }
    }

    fn clear(&self) {
        for register in self.registers.iter() {
            register.store(0, Ordering::Relaxed);
        }
    }
}

/// The window: `WORKING_SET_SLOTS` slots of two sketches each.
pub struct WorkingSet {
    slots: Box<[[Sketch; 2]]>,
    current: AtomicUsize,
}

impl std::fmt::Debug for WorkingSet {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("WorkingSet").field("estimate", &self.estimate()).finish()
    }
}

impl Default for WorkingSet {
    fn default() -> WorkingSet {
        WorkingSet::new()
    }
}

/// SplitMix64's finalizer: page ids are dense integers, so their bits must be mixed.
fn mix(value: u64) -> u64 {
    let mut mixed = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    mixed ^ (mixed >> 31)
}

impl WorkingSet {
    pub fn new() -> WorkingSet {
        WorkingSet {
            slots: (0..WORKING_SET_SLOTS).map(|_| [Sketch::new(), Sketch::new()]).collect(),
            current: AtomicUsize::new(0),
        }
    }

    /// Counts a touch of `page_id` at `level` in the current slot.
    #[inline]
    pub fn record(&self, page_id: PageId, level: Level) {
        let hash = mix(page_id.0);
        let index = usize::try_from(hash >> (64 - REGISTER_BITS)).expect("10 bits fit usize");
        // The remaining 54 bits, with a sentinel bit so that the rank is at most 55.
        let rest = (hash << REGISTER_BITS) | (1 << (REGISTER_BITS - 1));
        let rank = u8::try_from(rest.leading_zeros() + 1).expect("rank <= 55");
        let slot = self.current.load(Ordering::Relaxed);
        let register = &self.slots[slot][level as usize].registers[index];
        // Load, then store only if larger: no read-modify-write on the hit path. A racing
        // writer may lose one smaller rank (a negligible downward bias).
        if register.load(Ordering::Relaxed) < rank {
            register.store(rank, Ordering::Relaxed);
        }
    }

    /// Starts a new slot, forgetting the oldest: cleared first, then made current, so a
    /// writer still holding the previous index writes into a live slot.
    pub fn rotate(&self) {
        let next = (self.current.load(Ordering::Relaxed) + 1) % WORKING_SET_SLOTS;
        for sketch in &self.slots[next] {
            sketch.clear();
        }
        self.current.store(next, Ordering::Relaxed);
    }

    /// The distinct pages touched over the window.
    pub fn estimate(&self) -> WorkingSetEstimate {
        let merged = |levels: &[usize]| {
            let mut registers = [0u8; REGISTERS];
            for slot in self.slots.iter() {
                for &level in levels {
                    for (merged, register) in registers.iter_mut().zip(slot[level].registers.iter())
                    {
                        *merged = (*merged).max(register.load(Ordering::Relaxed));
                    }
                }
            }
            cardinality(&registers)
        };
        WorkingSetEstimate {
            dram_pages: merged(&[Level::Dram as usize]),
            below_dram_pages: merged(&[Level::BelowDram as usize]),
            pages: merged(&[Level::Dram as usize, Level::BelowDram as usize]),
        }
    }
}

/// The HyperLogLog estimate of `registers`, with linear counting for small sets.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn cardinality(registers: &[u8; REGISTERS]) -> u64 {
    // Floats are the estimator's nature; the result is a non-negative estimate far below
    // 2^53, rounded to a count.
    let count = REGISTERS as f64;
    let alpha = 0.7213 / (1.0 + 1.079 / count);
    let sum: f64 = registers.iter().map(|&rank| (-f64::from(rank)).exp2()).sum();
    let raw = alpha * count * count / sum;
    let zeros = registers.iter().filter(|&&rank| rank == 0).count();
    let estimate =
        if raw <= 2.5 * count && zeros > 0 { count * (count / zeros as f64).ln() } else { raw };
    estimate.round().max(0.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(estimate: u64, truth: u64, tolerance: f64) -> bool {
        #[allow(clippy::cast_precision_loss)]
        let error = (estimate as f64 - truth as f64).abs() / truth as f64;
        error <= tolerance
    }

    #[test]
    fn estimates_distinct_pages_per_level_and_their_union() {
        let set = WorkingSet::new();
        for round in 0..3 {
            for page in 0..20_000u64 {
                set.record(PageId(page), Level::Dram);
            }
            for page in 10_000..50_000u64 {
                set.record(PageId(page), Level::BelowDram);
            }
            if round == 1 {
                set.rotate();
            }
        }
        let estimate = set.estimate();
        assert!(within(estimate.dram_pages, 20_000, 0.1), "{estimate:?}");
        assert!(within(estimate.below_dram_pages, 40_000, 0.1), "{estimate:?}");
        assert!(within(estimate.pages, 50_000, 0.1), "{estimate:?}");
        let small = WorkingSet::new();
        for page in 0..100u64 {
            small.record(PageId(page), Level::Dram);
        }
        assert!(within(small.estimate().dram_pages, 100, 0.1), "{:?}", small.estimate());
    }

    #[test]
    fn pages_leave_the_window_after_every_slot_rotated() {
        let set = WorkingSet::new();
        for page in 0..5_000u64 {
            set.record(PageId(page), Level::Dram);
        }
        for _ in 0..WORKING_SET_SLOTS - 1 {
            set.rotate();
            assert!(set.estimate().dram_pages > 4_000, "forgotten before the window ended");
        }
        set.rotate();
        assert_eq!(set.estimate(), WorkingSetEstimate::default());
    }
}
