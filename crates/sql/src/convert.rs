//! Integer conversions, each with one stated meaning, so that no out-of-range value is
//! silently replaced by another (the workspace lints deny lossy `as` casts; a
//! `try_from(..).unwrap_or(default)` would hide the same loss). A conversion that user
//! input can push out of range reports an error where it happens (22003 and friends);
//! the ones here cannot lose a value, or saturate where saturation is the meaning.

use std::time::Duration;

// tierdb builds for 64-bit targets only, where u64 and usize convert both ways losslessly.
const _: () = assert!(usize::BITS == 64, "tierdb builds for 64-bit targets");

/// An unsigned count, length or position as usize: lossless on the 64-bit targets
/// (asserted above).
pub(crate) fn usize_from(value: impl Into<u64>) -> usize {
    usize::try_from(value.into()).expect("usize is 64 bits (asserted at compile time)")
}

/// A count of things in memory (rows, bytes) as u64: lossless on the 64-bit targets.
pub(crate) fn count_u64(count: usize) -> u64 {
    u64::try_from(count).expect("usize is 64 bits (asserted at compile time)")
}

/// A row count as the f64 of an estimate (ANALYZE's statistics, the optimizer's rows):
/// exact up to 2^53 rows, rounded above, which an estimate tolerates.
pub(crate) fn rows_f64(rows: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let value = rows as f64;
    value
}

/// `rows_f64` of a collection's length.
pub(crate) fn count_f64(count: usize) -> f64 {
    rows_f64(count_u64(count))
}

/// A non-negative i64 (a LIMIT, OFFSET, or a character count from SQL) as usize, or None
/// when it is negative. Lossless: an i64's magnitude fits a 64-bit usize.
pub(crate) fn usize_from_non_negative(value: i64) -> Option<usize> {
    u64::try_from(value).ok().map(usize_from)
}

/// Nanoseconds of a measured duration, saturating at u64::MAX (584 years): no statement
/// runs that long, and a statistics sum that reached it should stop there, not wrap.
pub(crate) fn duration_ns(elapsed: Duration) -> u64 {
    let clamped = elapsed.as_nanos().min(u128::from(u64::MAX));
    u64::try_from(clamped).expect("clamped to u64::MAX")
}

/// Microseconds of a duration, saturating at i64::MAX (292,000 years): only a broken clock
/// reads that far from 1970, and saturating keeps now() at the end of time, not wrapped.
pub(crate) fn duration_micros(elapsed: Duration) -> i64 {
    let clamped = elapsed.as_micros().min(u128::from(i64::MAX.unsigned_abs()));
    i64::try_from(clamped).expect("clamped to i64::MAX")
}

/// `bytes` times a setting's `factor` (hash_mem_multiplier, 1 to 1000), saturating at
/// usize::MAX: a budget past the address space means "no bound", which saturation keeps.
pub(crate) fn scale_bytes(bytes: usize, factor: f64) -> usize {
    assert!(factor.is_finite() && factor >= 1.0, "factors are checked when set: {factor}");
    let bytes = u64::try_from(bytes).expect("usize is 64 bits (asserted at compile time)");
    // Exact below 2^53 bytes (8 PiB), well past any memory budget.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let scaled = (bytes as f64 * factor).min(u64::MAX as f64) as u64;
    usize_from(scaled)
}
