//! Elastic capacity (design 015): the capacity unit and its split between the buffer pool,
//! operator memory and connections; the working-set sketch the page store feeds; the
//! controller (a pure function of signals); the status the runner publishes for
//! `tierdb_stat_capacity()` and `/metrics`.

mod activity;
pub mod controller;
mod working_set;

use std::fmt;

use parking_lot::Mutex;

pub use activity::{Activity, ResumeStats, StatementActivity, RESUMES_KEPT};
pub use working_set::{Level, WorkingSet, WorkingSetEstimate, WORKING_SET_SLOTS};

/// The largest capacity accepted, in units: 1 TiB of DRAM at the default unit.
pub const CAPACITY_UNITS_MAX: u32 = 1024;
/// The default size of a unit.
pub const CAPACITY_UNIT_DEFAULT_BYTES: u64 = 1 << 30;
/// The smallest unit size: smaller units would make the buffer pool's share less than a
/// few dozen pages.
pub const CAPACITY_UNIT_MIN_BYTES: u64 = 1 << 20;
/// Resident memory of one connection (stack touched, result batches, parse state): the
/// connection share of a unit holds this many bytes per connection.
pub const CONNECTION_BYTES: u64 = 512 << 10;

/// A capacity in steps of half a unit, stored as a count of half units so that it compares
/// and adds exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Capacity {
    half_units: u32,
}

impl Capacity {
    pub const ZERO: Capacity = Capacity { half_units: 0 };
    pub const STEP: Capacity = Capacity { half_units: 1 };
    pub const MAX: Capacity = Capacity { half_units: CAPACITY_UNITS_MAX * 2 };

    /// A capacity of `half_units` halves, at most `Capacity::MAX`.
    pub fn from_half_units(half_units: u32) -> Capacity {
        Capacity { half_units: half_units.min(Capacity::MAX.half_units) }
    }

    pub fn half_units(self) -> u32 {
        self.half_units
    }

    /// Reads `2`, `1.5`, `0.50`: a non-negative multiple of 0.5 up to `CAPACITY_UNITS_MAX`.
    pub fn parse(text: &str) -> Result<Capacity, String> {
        let text = text.trim();
        let invalid =
            || format!("invalid capacity {text}: a multiple of 0.5 from 0 to {CAPACITY_UNITS_MAX}");
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(fraction) {
            return Err(invalid());
        }
        let half = match fraction.trim_end_matches('0') {
            "" => 0,
            "5" => 1,
            _ => return Err(invalid()),
        };
        let units: u32 = whole.parse().map_err(|_| invalid())?;
        if units > CAPACITY_UNITS_MAX || (units == CAPACITY_UNITS_MAX && half == 1) {
            return Err(invalid());
        }
        Ok(Capacity { half_units: units * 2 + half })
    }

    /// `self + other`, at most `Capacity::MAX`.
    pub fn saturating_add(self, other: Capacity) -> Capacity {
        Capacity::from_half_units(self.half_units.saturating_add(other.half_units))
    }

    /// Units as a float, for display.
    pub fn units(self) -> f64 {
        f64::from(self.half_units) / 2.0
    }

    /// The smallest capacity holding `bytes` when each unit holds `bytes_per_unit`.
    pub fn holding(bytes: u64, bytes_per_unit: u64) -> Capacity {
        assert!(bytes_per_unit > 0, "a unit holds some bytes");
        let half_unit = (bytes_per_unit / 2).max(1);
        let halves = bytes.div_ceil(half_unit);
        Capacity::from_half_units(u32::try_from(halves).unwrap_or(u32::MAX))
    }

    /// `bytes_per_unit` x this capacity.
    pub fn bytes(self, bytes_per_unit: u64) -> u64 {
        (bytes_per_unit / 2).saturating_mul(u64::from(self.half_units))
    }
}

impl fmt::Display for Capacity {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.half_units / 2;
        match self.half_units % 2 {
            0 => write!(formatter, "{whole}"),
            _ => write!(formatter, "{whole}.5"),
        }
    }
}

/// How a unit's DRAM is split (design 015): 5/8 buffer pool, 1/4 operator memory, 1/8
/// connections and the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapacityUnit {
    pub bytes: u64,
}

impl CapacityUnit {
    pub fn new(bytes: u64) -> CapacityUnit {
        assert!(bytes >= CAPACITY_UNIT_MIN_BYTES, "a capacity unit of bytes={bytes} is too small");
        CapacityUnit { bytes }
    }
    pub fn buffer_pool_bytes(self) -> u64 {
        self.bytes / 8 * 5
    }
    pub fn operator_memory_bytes(self) -> u64 {
        self.bytes / 4
    }
    pub fn connection_bytes(self) -> u64 {
        self.bytes / 8
    }
}

/// The bounds a superuser may change at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapacityBounds {
    pub min: Capacity,
    pub max: Capacity,
}

impl CapacityBounds {
    /// Checks `min <= max` and `max > 0`.
    pub fn new(min: Capacity, max: Capacity) -> Result<CapacityBounds, String> {
        if max == Capacity::ZERO {
            return Err("max_capacity must be at least 0.5".into());
        }
        if min > max {
            return Err(format!("min_capacity={min} is above max_capacity={max}"));
        }
        Ok(CapacityBounds { min, max })
    }
}

/// What the controller last did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapacityAction {
    Grow,
    Shrink,
    Hold,
}

impl CapacityAction {
    pub fn name(self) -> &'static str {
        match self {
            CapacityAction::Grow => "grow",
            CapacityAction::Shrink => "shrink",
            CapacityAction::Hold => "hold",
        }
    }
}

/// What `tierdb_stat_capacity()` and `/metrics` show.
#[derive(Clone, Debug, PartialEq)]
pub struct CapacityStatus {
    /// Whether a controller runs (max capacity set).
    pub enabled: bool,
    pub unit: CapacityUnit,
    pub bounds: CapacityBounds,
    pub current: Capacity,
    pub target: Capacity,
    pub working_set: WorkingSetEstimate,
    /// The last change (grow or shrink) and why.
    pub last_action: CapacityAction,
    pub last_reason: String,
    /// Why the latest evaluation chose what it chose (often a hold).
    pub latest_reason: String,
    /// Decisions that changed the capacity.
    pub decisions: u64,
    /// Capacity x time, in half-unit milliseconds (the cost, exactly).
    pub half_unit_milliseconds: u64,
    /// Whether memory is released for idleness (idle_release_ms) until the next statement.
    pub released: bool,
    /// Resumes after idle releases (filled by `CapacityControl::status`).
    pub resume: ResumeStats,
}

impl CapacityStatus {
    /// Connections max capacity's connection share holds (design 015: 1/8 of a unit,
    /// `CONNECTION_BYTES` each), at least 1; None with the controller off. Beyond it a new
    /// connection is refused (53300) as at max_connections.
    pub fn connections_allowed(&self) -> Option<u64> {
        let max_bytes = u64::from(self.bounds.max.half_units()).saturating_mul(self.unit.bytes / 2);
        self.enabled.then(|| (max_bytes / 8 / CONNECTION_BYTES).max(1))
    }

    pub fn capacity_unit_seconds(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // A cost: the low bits of huge totals do not matter.
        let seconds = self.half_unit_milliseconds as f64 / 2000.0;
        seconds
    }
}

/// The status shared between the runner (which writes it) and the statistics readers.
#[derive(Debug)]
pub struct CapacityControl {
    status: Mutex<CapacityStatus>,
    activity: Activity,
}

impl CapacityControl {
    /// A fixed capacity (no controller): shows `unit` and `current` only.
    pub fn fixed(unit: CapacityUnit, current: Capacity) -> CapacityControl {
        CapacityControl::new(false, unit, CapacityBounds { min: current, max: current }, current)
    }

    pub fn new(
        enabled: bool,
        unit: CapacityUnit,
        bounds: CapacityBounds,
        current: Capacity,
    ) -> CapacityControl {
        let control = CapacityControl {
            status: Mutex::new(CapacityStatus {
                enabled,
                unit,
                bounds,
                current,
                target: current,
                working_set: WorkingSetEstimate::default(),
                last_action: CapacityAction::Hold,
                last_reason: "start".into(),
                latest_reason: "start".into(),
                decisions: 0,
                half_unit_milliseconds: 0,
                released: false,
                resume: ResumeStats::default(),
            }),
            activity: Activity::default(),
        };
        control.activity.set_current_half_units(current.half_units());
        control
    }

    pub fn status(&self) -> CapacityStatus {
        let mut status = self.status.lock().clone();
        status.released = self.activity.released();
        status.resume = self.activity.resume_stats();
        status
    }

    /// Statement activity: sessions report statements here (idle release, resume times,
    /// per-statement capacity share).
    pub fn activity(&self) -> &Activity {
        &self.activity
    }

    pub fn update(&self, change: impl FnOnce(&mut CapacityStatus)) {
        change(&mut self.status.lock());
    }

    /// Changes min and/or max at run time; the controller applies them at its next
    /// evaluation. Fails (leaving both unchanged) when the controller is off or the result
    /// would have min above max.
    pub fn set_bounds(&self, min: Option<Capacity>, max: Option<Capacity>) -> Result<(), String> {
        let mut status = self.status.lock();
        if !status.enabled {
            return Err("capacity is fixed: start the server with max_capacity".into());
        }
        let bounds = CapacityBounds::new(
            min.unwrap_or(status.bounds.min),
            max.unwrap_or(status.bounds.max),
        )?;
        status.bounds = bounds;
        drop(status);
        // A SET takes effect at once, not at the next 250 ms evaluation.
        self.activity.wake_runner();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_reads_half_steps_and_refuses_the_rest() {
        for (text, halves) in [("0", 0), ("0.5", 1), ("2", 4), ("1.50", 3), ("3.0", 6)] {
            assert_eq!(Capacity::parse(text).expect(text).half_units(), halves, "{text}");
        }
        for text in ["-1", "0.25", "1.2", ".5", "abc", "1e3", "", "1024.5", "99999999999"] {
            assert!(Capacity::parse(text).is_err(), "{text} accepted");
        }
        assert_eq!(Capacity::parse("1024").expect("max"), Capacity::MAX);
        assert_eq!(Capacity::from_half_units(3).to_string(), "1.5");
        assert_eq!(Capacity::from_half_units(4).to_string(), "2");
    }

    #[test]
    fn capacity_holding_rounds_up_to_half_units() {
        assert_eq!(Capacity::holding(0, 1000), Capacity::ZERO);
        assert_eq!(Capacity::holding(1, 1000).half_units(), 1);
        assert_eq!(Capacity::holding(500, 1000).half_units(), 1);
        assert_eq!(Capacity::holding(501, 1000).half_units(), 2);
        assert_eq!(Capacity::from_half_units(3).bytes(1000), 1500);
    }

    #[test]
    fn bounds_need_min_at_most_max_and_a_positive_max() {
        let half = Capacity::STEP;
        assert!(CapacityBounds::new(Capacity::ZERO, Capacity::ZERO).is_err());
        assert!(CapacityBounds::new(half.saturating_add(half), half).is_err());
        let control = CapacityControl::new(
            true,
            CapacityUnit::new(CAPACITY_UNIT_MIN_BYTES),
            CapacityBounds::new(Capacity::ZERO, half).expect("valid"),
            half,
        );
        assert!(control.set_bounds(Some(Capacity::from_half_units(4)), None).is_err());
        control.set_bounds(None, Some(Capacity::from_half_units(8))).expect("raise max");
        control.set_bounds(Some(Capacity::from_half_units(4)), None).expect("raise min");
        assert_eq!(control.status().bounds.min.half_units(), 4);
        let fixed = CapacityControl::fixed(CapacityUnit::new(CAPACITY_UNIT_MIN_BYTES), half);
        assert!(fixed.set_bounds(None, Some(half)).is_err());
    }
}
