//! Statistics primitives: monotonic counters, a lock-free latency histogram, and per-thread
//! operation counters.
//!
//! Per-thread counters exist so that one query can learn what it cost (EXPLAIN BUFFERS): the
//! caller takes `op_counters_snapshot()` before and after and subtracts. A query runs on one
//! thread at a time, so a thread-local avoids threading a context through every page access.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A monotonic event counter.
#[derive(Default, Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn add(&self, amount: u64) {
        self.0.fetch_add(amount, Ordering::Relaxed);
    }

    pub fn increment(&self) {
        self.add(1);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Sub-buckets per power of two: 8 gives a relative bucket width of at most 12.5%.
const SUB_BUCKET_BITS: u32 = 3;
const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;
const BUCKET_COUNT: usize = ((64 - SUB_BUCKET_BITS as usize) + 1) * (1 << SUB_BUCKET_BITS);

/// Log-linear histogram of `u64` values (latencies in nanoseconds). Recording is one relaxed
/// atomic increment; quantiles are exact to the bucket width (at most 12.5%).
pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    total: AtomicU64,
    sum: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            buckets: (0..BUCKET_COUNT).map(|_| AtomicU64::new(0)).collect(),
            total: AtomicU64::new(0),
            sum: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let snapshot = self.snapshot();
        formatter
            .debug_struct("Histogram")
            .field("count", &snapshot.count)
            .field("p50", &snapshot.quantile(0.5))
            .field("p99", &snapshot.quantile(0.99))
            .finish()
    }
}

fn bucket_index(value: u64) -> usize {
    if value < SUB_BUCKETS {
        return usize::try_from(value).expect("small value");
    }
    let highest_bit = 63 - value.leading_zeros();
    let sub = (value >> (highest_bit - SUB_BUCKET_BITS)) & (SUB_BUCKETS - 1);
    let octave = u64::from(highest_bit - SUB_BUCKET_BITS + 1);
    usize::try_from(octave * SUB_BUCKETS + sub).expect("bucket index fits")
}

/// The smallest value that lands in bucket `index`.
fn bucket_lower_bound(index: usize) -> u64 {
    let index = u64::try_from(index).expect("index fits");
    if index < SUB_BUCKETS {
        return index;
    }
    let octave = index / SUB_BUCKETS;
    let sub = index % SUB_BUCKETS;
    let highest_bit = octave + u64::from(SUB_BUCKET_BITS) - 1;
    (1u64 << highest_bit) | (sub << (highest_bit - u64::from(SUB_BUCKET_BITS)))
}

impl Histogram {
    pub fn record(&self, value: u64) {
        self.buckets[bucket_index(value)].fetch_add(1, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// Records the time since `started`, in nanoseconds (`elapsed_ns`).
    pub fn record_elapsed(&self, started: Instant) {
        self.record(elapsed_ns(started));
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            buckets: self.buckets.iter().map(|bucket| bucket.load(Ordering::Relaxed)).collect(),
            count: self.total.load(Ordering::Relaxed),
            sum: self.sum.load(Ordering::Relaxed),
        }
    }
}

/// A point-in-time copy of a histogram.
#[derive(Clone, Debug)]
pub struct HistogramSnapshot {
    buckets: Vec<u64>,
    pub count: u64,
    pub sum: u64,
}

impl HistogramSnapshot {
    /// The lower bound of the bucket holding quantile `q` (0..=1); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        assert!((0.0..=1.0).contains(&q), "quantile must be within 0..=1");
        if self.count == 0 {
            return 0;
        }
        let mut rank = 0u64;
        for (index, &count) in self.buckets.iter().enumerate() {
            rank += count;
            // Compare in u128 space to avoid float rounding of large counts.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let needed = ((q * self.count as f64).ceil() as u64).max(1);
            if rank >= needed {
                return bucket_lower_bound(index);
            }
        }
        bucket_lower_bound(self.buckets.len() - 1)
    }

    /// Cumulative counts at the given upper bounds, for Prometheus-style export.
    pub fn cumulative_at(&self, upper_bounds: &[u64]) -> Vec<u64> {
        upper_bounds
            .iter()
            .map(|&bound| {
                self.buckets
                    .iter()
                    .enumerate()
                    .filter(|(index, _)| bucket_lower_bound(*index) <= bound)
                    .map(|(_, &count)| count)
                    .sum()
            })
            .collect()
    }
}

/// What page accesses one thread has performed. Differences of two snapshots give the cost of
/// the work done between them.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct OpCounters {
    /// Page requests answered from the DRAM buffer pool.
    pub dram_hits: u64,
    /// DRAM misses answered by the local tier.
    pub tier_hits: u64,
    /// DRAM misses answered by the durable volume.
    pub volume_reads: u64,
    /// Pages this thread made dirty (first modification since the last flush).
    pub pages_dirtied: u64,
    /// Pages this thread wrote to the volume (flushes it performed itself).
    pub pages_written: u64,
}

impl OpCounters {
    /// The work done between `earlier` and `self`.
    pub fn since(&self, earlier: &OpCounters) -> OpCounters {
        OpCounters {
            dram_hits: self.dram_hits - earlier.dram_hits,
            tier_hits: self.tier_hits - earlier.tier_hits,
            volume_reads: self.volume_reads - earlier.volume_reads,
            pages_dirtied: self.pages_dirtied - earlier.pages_dirtied,
            pages_written: self.pages_written - earlier.pages_written,
        }
    }

    /// Reads that missed DRAM: tier hits plus volume reads (PostgreSQL's `read=`).
    pub fn reads(&self) -> u64 {
        self.tier_hits + self.volume_reads
    }
}

thread_local! {
    static OP_COUNTERS: Cell<OpCounters> = const { Cell::new(OpCounters {
        dram_hits: 0, tier_hits: 0, volume_reads: 0, pages_dirtied: 0, pages_written: 0,
    }) };
}

/// Updates this thread's operation counters.
pub fn with_op_counters(update: impl FnOnce(&mut OpCounters)) {
    OP_COUNTERS.with(|cell| {
        let mut counters = cell.get();
        update(&mut counters);
        cell.set(counters);
    });
}

/// This thread's operation counters so far.
pub fn op_counters_snapshot() -> OpCounters {
    OP_COUNTERS.with(Cell::get)
}

/// Nanoseconds since `started`. u64 nanoseconds span 584 years, more than any `Instant` of
/// a running process can be old, so the conversion cannot fail.
pub fn elapsed_ns(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).expect("an elapsed time under 584 years")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_bounds_are_consistent() {
        for value in (0..10_000u64).chain([1 << 20, 123_456_789, u64::MAX / 3, u64::MAX]) {
            let index = bucket_index(value);
            assert!(index < BUCKET_COUNT, "value={value} index={index}");
            assert!(bucket_lower_bound(index) <= value, "value={value}");
            if index + 1 < BUCKET_COUNT {
                assert!(bucket_lower_bound(index + 1) > value, "value={value}");
            }
        }
    }

    #[test]
    fn quantiles_within_bucket_width() {
        let histogram = Histogram::default();
        for value in 1..=1000u64 {
            histogram.record(value * 1000);
        }
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.count, 1000);
        let p50 = snapshot.quantile(0.5);
        assert!((437_500..=500_000).contains(&p50), "p50={p50}");
        let p99 = snapshot.quantile(0.99);
        assert!((866_250..=990_000).contains(&p99), "p99={p99}");
    }

    #[test]
    fn op_counters_diff() {
        let before = op_counters_snapshot();
        with_op_counters(|counters| {
            counters.dram_hits += 3;
            counters.tier_hits += 2;
            counters.volume_reads += 1;
        });
        let cost = op_counters_snapshot().since(&before);
        assert_eq!(cost.dram_hits, 3);
        assert_eq!(cost.reads(), 3);
    }
}
