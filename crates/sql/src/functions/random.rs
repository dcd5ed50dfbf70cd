//! random() and setseed(): PostgreSQL 15's generator (pg_prng.c: xoroshiro128** seeded by
//! splitmix64), so that after the same setseed a session draws the same values as
//! PostgreSQL's. The state is the session's: a session installs it on the thread that runs
//! a statement (a connection runs statements on two threads) and takes it back after.

use std::cell::Cell;

use super::Call;
use crate::error::{Result, SqlError};
use crate::types::Datum;

/// The bits of a double's mantissa that pg_prng_double fills.
const MANTISSA_BITS: u32 = 52;

thread_local! {
    /// xoroshiro128**'s two words; seeded from the clock until setseed is called.
    static STATE: Cell<(u64, u64)> = Cell::new(seeded(clock_seed()));
}

/// A new session's generator state, seeded from the clock.
pub(crate) fn new_random_state() -> (u64, u64) {
    seeded(clock_seed())
}

/// Makes `state` the generator random() and setseed() use on this thread.
pub(crate) fn install_random_state(state: (u64, u64)) {
    STATE.with(|cell| cell.set(state));
}

/// The generator's state on this thread (the session keeps it between statements).
pub(crate) fn random_state() -> (u64, u64) {
    STATE.with(Cell::get)
}

/// The clock's nanoseconds, the seed of a session that never calls setseed.
fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |elapsed| {
        u64::try_from(elapsed.as_nanos() & u128::from(u64::MAX)).expect("masked to 64 bits")
    })
}

/// splitmix64's next output, advancing `state`.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut value = *state;
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// pg_prng_seed: both words from splitmix64 (never both zero: pg_prng_seed_check).
fn seeded(mut seed: u64) -> (u64, u64) {
    let first = splitmix64(&mut seed);
    let second = splitmix64(&mut seed);
    if first == 0 && second == 0 {
        return (0x5851_F42D_4C95_7F2D, 0x1405_7B7E_F767_814F);
    }
    (first, second)
}

/// xoroshiro128**'s next output, advancing the state.
fn next_value(state: &mut (u64, u64)) -> u64 {
    let (s0, s1) = *state;
    let mixed = s1 ^ s0;
    let value = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
    *state = (s0.rotate_left(24) ^ mixed ^ (mixed << 16), mixed.rotate_left(37));
    value
}

/// A uniform value in [0, 1): pg_prng_double, the output's top 52 bits scaled by 2^-52.
pub(super) fn random_unit() -> f64 {
    STATE.with(|cell| {
        let mut state = cell.get();
        let bits = next_value(&mut state) >> (64 - MANTISSA_BITS);
        cell.set(state);
        #[allow(clippy::cast_precision_loss)] // 52 bits: exact in a double
        let value = bits as f64 / f64::from(1u32 << 26) / f64::from(1u32 << 26);
        debug_assert!((0.0..1.0).contains(&value));
        value
    })
}

pub(super) fn random(_call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Float(random_unit()))
}

/// setseed(float8): seeds random() as pg_prng_fseed does (22023 outside [-1, 1] or NaN).
pub(super) fn setseed(call: Call<'_>) -> Result<Datum> {
    let seed = call.args.first().and_then(Datum::as_f64).unwrap_or(f64::NAN);
    if !(-1.0..=1.0).contains(&seed) {
        return Err(SqlError::new(
            "22023",
            format!(
                "setseed parameter {} is out of allowed range [-1,1]",
                crate::types::format_float8(seed)
            ),
        ));
    }
    // pg_prng_fseed: the seed times 2^52 - 1, truncated to an int64 and its bits used as
    // an unsigned seed.
    #[allow(clippy::cast_precision_loss)] // 2^52 - 1 is exact in a double
    let scale = ((1u64 << MANTISSA_BITS) - 1) as f64;
    #[allow(clippy::cast_possible_truncation)] // |seed * scale| < 2^52: C's truncation
    let scaled = (scale * seed) as i64;
    STATE.with(|cell| cell.set(seeded(u64::from_ne_bytes(scaled.to_ne_bytes()))));
    Ok(Datum::Text(String::new()))
}
