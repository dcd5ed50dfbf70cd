//! The capacity controller as a pure function (design 015): `decide` maps the signals, the
//! controller's state, the settings and the time to the next capacity and its reason. It
//! reads no clock and no counter, so its rules are tested exhaustively by property tests.

use super::{Capacity, CapacityAction, CapacityBounds, CapacityUnit, CONNECTION_BYTES};

/// Below this DRAM hit ratio (in percent) with evictions above `EVICTIONS_PER_SECOND_HIGH`,
/// the pool is too small for the load.
pub const HIT_RATIO_LOW_PERCENT: u64 = 95;
pub const EVICTIONS_PER_SECOND_HIGH: u64 = 100;
/// Operator memory in use above this share (percent) of its limit asks for more.
pub const OPERATOR_MEMORY_HIGH_PERCENT: u64 = 80;
/// CPU of one unit, in millicores, and the share of it the controller aims to use.
pub const UNIT_MILLICORES: u64 = 250;
pub const CPU_TARGET_PERCENT: u64 = 70;
/// Host memory pressure (PSI `some avg10`, hundredths of a percent) above which the
/// controller does not grow.
pub const MEMORY_PRESSURE_HIGH_HUNDREDTHS: u64 = 1000;
/// The working set is given this much headroom (percent) above its estimate.
pub const WORKING_SET_HEADROOM_PERCENT: u64 = 110;

/// What the runner measured. Counts are over `window_ms` unless said otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signals {
    /// Distinct pages touched in the window, at any level.
    pub working_set_pages: u64,
    pub dram_hits: u64,
    pub dram_misses: u64,
    pub evictions: u64,
    pub window_ms: u64,
    pub operator_memory_used_bytes: u64,
    pub operator_memory_limit_bytes: u64,
    /// Grants refused by the operator memory pool since the last evaluation.
    pub operator_memory_refusals: u64,
    pub connections: u64,
    /// CPU used by the process since the last evaluation, in thousandths of a core.
    pub cpu_millicores: u64,
    /// PSI `some avg10` of memory, in hundredths of a percent.
    pub memory_pressure_hundredths: u64,
    /// The smaller of the cgroup's memory.max and memory.high, when inside one.
    pub cgroup_memory_limit_bytes: Option<u64>,
    /// How long no statement has run (0 while one runs).
    pub idle_ms: u64,
}

/// The controller's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub bounds: CapacityBounds,
    pub unit: CapacityUnit,
    pub scale_down_delay_ms: u64,
    /// With min capacity 0, release all memory after this long without a statement (0:
    /// never; the working set and the shrink delay then decide alone).
    pub idle_release_ms: u64,
}

/// What the controller remembers between evaluations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    pub current: Capacity,
    /// Since when every evaluation asked for less than `current`.
    pub low_since_ms: Option<u64>,
}

/// Why the controller chose its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    WorkingSet,
    Misses,
    OperatorMemory,
    Connections,
    Cpu,
    /// Min or max changed and current is outside them.
    Bounds,
    /// Every signal is satisfied by the current capacity.
    Steady,
    /// Signals ask for less, but not yet for `scale_down_delay_ms`.
    ShrinkDelayed,
    /// A signal asks for more, but the host is short of memory.
    MemoryPressure,
    /// No statement for `idle_release_ms` with min capacity 0: everything released.
    Idle,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::WorkingSet => "working set",
            Reason::Misses => "buffer pool misses and evictions",
            Reason::OperatorMemory => "operator memory",
            Reason::Connections => "connections",
            Reason::Cpu => "cpu",
            Reason::Bounds => "min/max capacity",
            Reason::Steady => "steady",
            Reason::ShrinkDelayed => "waiting for scale_down_delay_ms",
            Reason::MemoryPressure => "host memory pressure",
            Reason::Idle => "idle_release_ms",
        }
    }
}

/// The next capacity, why, and the state to give the next evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub target: Capacity,
    pub action: CapacityAction,
    pub reason: Reason,
    /// The largest capacity any signal asked for, before the bounds.
    pub asked: Capacity,
    pub state: State,
}

/// The capacity holding the working set in the buffer pool's share, with headroom.
pub fn working_set_capacity(working_set_pages: u64, unit: CapacityUnit) -> Capacity {
    let page_bytes = u64::try_from(tierdb_common::PAGE_SIZE).expect("page size fits u64");
    let bytes = working_set_pages.saturating_mul(page_bytes);
    let with_headroom = bytes.saturating_mul(WORKING_SET_HEADROOM_PERCENT) / 100;
    Capacity::holding(with_headroom, unit.buffer_pool_bytes())
}

/// What each signal asks for, in the order ties are reported.
fn asks(signals: &Signals, current: Capacity, unit: CapacityUnit) -> [(Capacity, Reason); 5] {
    let more = current.saturating_add(Capacity::STEP);
    let lookups = signals.dram_hits.saturating_add(signals.dram_misses);
    let hit_ratio_low = lookups > 0
        && signals.dram_hits.saturating_mul(100) < lookups.saturating_mul(HIT_RATIO_LOW_PERCENT);
    let evicting = signals.evictions.saturating_mul(1000)
        > EVICTIONS_PER_SECOND_HIGH.saturating_mul(signals.window_ms.max(1));
    let misses = if hit_ratio_low && evicting { more } else { Capacity::ZERO };
    let memory_high = signals.operator_memory_used_bytes.saturating_mul(100)
        > signals.operator_memory_limit_bytes.saturating_mul(OPERATOR_MEMORY_HIGH_PERCENT);
    let operator_memory =
        if memory_high || signals.operator_memory_refusals > 0 { more } else { Capacity::ZERO };
    let connection_bytes = signals.connections.saturating_mul(CONNECTION_BYTES);
    // Millicores over the unit's target share, as bytes of a fictitious unit of that size.
    let cpu_share = UNIT_MILLICORES * CPU_TARGET_PERCENT / 100;
    [
        (working_set_capacity(signals.working_set_pages, unit), Reason::WorkingSet),
        (misses, Reason::Misses),
        (operator_memory, Reason::OperatorMemory),
        (Capacity::holding(connection_bytes, unit.connection_bytes()), Reason::Connections),
        (Capacity::holding(signals.cpu_millicores, cpu_share), Reason::Cpu),
    ]
}

/// The highest capacity the host allows: max, lowered by a cgroup limit (90% of it), and
/// not above current under memory pressure. Never below min.
fn ceiling(signals: &Signals, settings: &Settings, current: Capacity) -> Capacity {
    let mut ceiling = settings.bounds.max;
    if let Some(limit) = signals.cgroup_memory_limit_bytes {
        let usable = limit / 10 * 9;
        let halves = usable / (settings.unit.bytes / 2).max(1);
        ceiling = ceiling.min(Capacity::from_half_units(u32::try_from(halves).unwrap_or(u32::MAX)));
    }
    if signals.memory_pressure_hundredths > MEMORY_PRESSURE_HIGH_HUNDREDTHS {
        ceiling = ceiling.min(current);
    }
    ceiling.max(settings.bounds.min)
}

/// Idle release (design 015): min capacity 0, idle release on, and no statement for that
/// long. It overrides the working set and the shrink delay: an idle server costs nothing.
pub fn idle_release_due(signals: &Signals, settings: &Settings) -> bool {
    settings.idle_release_ms > 0
        && settings.bounds.min == Capacity::ZERO
        && signals.idle_ms >= settings.idle_release_ms
}

/// The next capacity (design 015): up at once when any signal asks, down only after every
/// evaluation for `scale_down_delay_ms` asked for less and never below the working set,
/// always within [min, max].
pub fn decide(signals: &Signals, state: &State, settings: &Settings, now_ms: u64) -> Decision {
    let bounds = settings.bounds;
    let current = state.current;
    let asked_all = asks(signals, current, settings.unit);
    let (asked, asked_reason) =
        asked_all.iter().copied().fold((Capacity::ZERO, Reason::Steady), |best, ask| {
            if ask.0 > best.0 {
                ask
            } else {
                best
            }
        });
    let decision = |target: Capacity, reason: Reason, low_since_ms: Option<u64>| Decision {
        target,
        action: match target.cmp(&current) {
            std::cmp::Ordering::Greater => CapacityAction::Grow,
            std::cmp::Ordering::Less => CapacityAction::Shrink,
            std::cmp::Ordering::Equal => CapacityAction::Hold,
        },
        reason,
        asked,
        state: State { current: target, low_since_ms },
    };
    if idle_release_due(signals, settings) {
        return decision(Capacity::ZERO, Reason::Idle, None);
    }
    if current < bounds.min || current > bounds.max {
        let target = current.clamp(bounds.min, bounds.max).max(asked.min(bounds.max));
        return decision(target, Reason::Bounds, None);
    }
    let ceiling = ceiling(signals, settings, current);
    let wanted = asked.clamp(bounds.min, ceiling);
    if wanted > current {
        return decision(wanted, asked_reason, None);
    }
    if asked > current {
        return decision(current, Reason::MemoryPressure, None);
    }
    // Never below the working set (when max leaves room for it).
    let working_set = working_set_capacity(signals.working_set_pages, settings.unit);
    let floor = wanted.max(working_set.min(bounds.max)).max(bounds.min);
    if floor >= current {
        return decision(current, Reason::Steady, None);
    }
    let low_since_ms = state.low_since_ms.unwrap_or(now_ms);
    if now_ms.saturating_sub(low_since_ms) < settings.scale_down_delay_ms {
        return decision(current, Reason::ShrinkDelayed, Some(low_since_ms));
    }
    let reason = if floor == working_set { Reason::WorkingSet } else { asked_reason };
    let reason = if floor == bounds.min && floor > asked { Reason::Bounds } else { reason };
    decision(floor, reason, None)
}
