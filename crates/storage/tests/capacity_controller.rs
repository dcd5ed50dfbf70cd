//! Property tests of the capacity controller (design 015): `decide` is a pure function, so
//! its rules are checked over arbitrary signals, states, bounds and times.

use proptest::prelude::*;
use tierdb_storage::capacity::controller::{
    decide, working_set_capacity, Reason, Settings, Signals, State,
};
use tierdb_storage::capacity::{
    Capacity, CapacityAction, CapacityBounds, CapacityUnit, CAPACITY_UNIT_MIN_BYTES,
};

const HALF_UNITS_MAX: u32 = 64;

fn capacity() -> impl Strategy<Value = Capacity> {
    (0..=HALF_UNITS_MAX).prop_map(Capacity::from_half_units)
}

fn settings() -> impl Strategy<Value = Settings> {
    (0..=HALF_UNITS_MAX, 1..=HALF_UNITS_MAX, 0u64..120_000, 0u32..3).prop_map(
        |(min, max, delay_ms, unit_shift)| {
            let (min, max) = (min.min(max), min.max(max));
            Settings {
                bounds: CapacityBounds::new(
                    Capacity::from_half_units(min),
                    Capacity::from_half_units(max),
                )
                .expect("min <= max, max > 0"),
                unit: CapacityUnit::new(CAPACITY_UNIT_MIN_BYTES << unit_shift),
                scale_down_delay_ms: delay_ms,
                // Off here: idle release overrides the working-set floor on purpose, and
                // has its own property below.
                idle_release_ms: 0,
            }
        },
    )
}

fn signals() -> impl Strategy<Value = Signals> {
    (
        (0u64..20_000, 0u64..1_000_000, 0u64..1_000_000, 0u64..100_000, 1u64..60_000),
        (0u64..(64 << 20), 1u64..(64 << 20), 0u64..3, 0u64..2_000),
        (0u64..16_000, 0u64..3_000, prop::option::of(0u64..(64 << 20))),
    )
        .prop_map(|(cache, memory, host)| Signals {
            working_set_pages: cache.0,
            dram_hits: cache.1,
            dram_misses: cache.2,
            evictions: cache.3,
            window_ms: cache.4,
            operator_memory_used_bytes: memory.0,
            operator_memory_limit_bytes: memory.1,
            operator_memory_refusals: memory.2,
            connections: memory.3,
            cpu_millicores: host.0,
            memory_pressure_hundredths: host.1,
            cgroup_memory_limit_bytes: host.2,
            idle_ms: 0,
        })
}

proptest! {
    /// Idle release: to 0 exactly when min is 0 and no statement ran for idle_release_ms;
    /// otherwise the same decision as without it.
    #[test]
    fn idle_release_goes_to_zero_only_with_min_zero_and_only_when_idle(
        settings in settings(), signals in signals(), state in state(),
        idle_release_ms in 1u64..120_000, idle_ms in 0u64..240_000, now_ms in 0u64..400_000,
    ) {
        let with_idle = Settings { idle_release_ms, ..settings };
        let idle_signals = Signals { idle_ms, ..signals };
        let decision = decide(&idle_signals, &state, &with_idle, now_ms);
        let due = settings.bounds.min == Capacity::ZERO && idle_ms >= idle_release_ms;
        if due {
            prop_assert_eq!(decision.target, Capacity::ZERO);
            prop_assert_eq!(decision.reason, Reason::Idle);
        } else {
            prop_assert_eq!(decision, decide(&signals, &state, &settings, now_ms));
        }
    }
}

fn state() -> impl Strategy<Value = State> {
    (capacity(), prop::option::of(0u64..200_000))
        .prop_map(|(current, low_since_ms)| State { current, low_since_ms })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn target_stays_within_min_and_max(
        signals in signals(), state in state(), settings in settings(), now_ms in 0u64..400_000,
    ) {
        let decision = decide(&signals, &state, &settings, now_ms);
        prop_assert!(decision.target >= settings.bounds.min, "{decision:?}");
        prop_assert!(decision.target <= settings.bounds.max, "{decision:?}");
        prop_assert_eq!(decision.state.current, decision.target);
    }

    #[test]
    fn a_shrink_keeps_the_working_set_and_waits_for_the_delay(
        signals in signals(), state in state(), settings in settings(), now_ms in 0u64..400_000,
    ) {
        let decision = decide(&signals, &state, &settings, now_ms);
        if decision.action == CapacityAction::Shrink && decision.reason != Reason::Bounds {
            let working_set = working_set_capacity(signals.working_set_pages, settings.unit);
            prop_assert!(decision.target >= working_set.min(settings.bounds.max), "{decision:?}");
            let low_since_ms = state.low_since_ms.unwrap_or(now_ms);
            prop_assert!(
                now_ms.saturating_sub(low_since_ms) >= settings.scale_down_delay_ms,
                "shrank before the delay: {decision:?}"
            );
        }
        if decision.action == CapacityAction::Shrink && decision.reason == Reason::Bounds {
            prop_assert!(state.current > settings.bounds.max || decision.target == settings.bounds.min);
        }
    }

    #[test]
    fn no_shrink_before_the_delay_from_the_first_low_evaluation(
        signals in signals(), current in capacity(), settings in settings(), start_ms in 0u64..100_000,
    ) {
        let current = current.clamp(settings.bounds.min, settings.bounds.max);
        let mut state = State { current, low_since_ms: None };
        let mut now_ms = start_ms;
        // Evaluate every 250 ms until just before the delay ends: no shrink may happen.
        while now_ms < start_ms + settings.scale_down_delay_ms {
            let decision = decide(&signals, &state, &settings, now_ms);
            prop_assert_ne!(decision.action, CapacityAction::Shrink, "{:?} at {}", decision, now_ms);
            state = decision.state;
            now_ms += 250;
        }
    }

    #[test]
    fn equal_signals_converge_and_then_hold(
        signals in signals(), current in capacity(), settings in settings(), start_ms in 0u64..100_000,
    ) {
        let mut state = State { current, low_since_ms: None };
        let mut now_ms = start_ms;
        let mut changes = Vec::new();
        // Long enough to grow step by step to max, then wait out the delay and shrink.
        let evaluations = 2 * HALF_UNITS_MAX as usize + 4 + usize::try_from(settings.scale_down_delay_ms / 250).expect("fits");
        for _ in 0..evaluations {
            let decision = decide(&signals, &state, &settings, now_ms);
            if decision.target != state.current {
                changes.push((state.current, decision.target));
            }
            state = decision.state;
            now_ms += 250;
        }
        // Converged: the same signals for as long again change nothing.
        let settled = state.current;
        for _ in 0..evaluations {
            let decision = decide(&signals, &state, &settings, now_ms);
            prop_assert_eq!(decision.target, settled, "oscillates after {:?}", changes);
            state = decision.state;
            now_ms += 250;
        }
        // Monotone on the way: never grew after shrinking or shrank after growing, except a
        // single shrink after growth (to the working set once the delay passed).
        let directions: Vec<bool> = changes.iter().map(|(from, to)| to > from).collect();
        let reversals = directions.windows(2).filter(|pair| pair[0] != pair[1]).count();
        prop_assert!(reversals <= 1, "direction changed more than once: {:?}", changes);
    }
}

#[test]
fn growth_is_immediate_and_shrink_waits_exactly_the_delay() {
    let unit = CapacityUnit::new(CAPACITY_UNIT_MIN_BYTES);
    let settings = Settings {
        bounds: CapacityBounds::new(Capacity::ZERO, Capacity::from_half_units(16)).expect("valid"),
        unit,
        scale_down_delay_ms: 1_000,
        idle_release_ms: 0,
    };
    // 640 KiB of pool per unit: 80 pages. 300 pages with headroom need 4.125 units -> 4.5.
    let busy = Signals { working_set_pages: 300, window_ms: 1_000, ..Signals::default() };
    let start = State { current: Capacity::from_half_units(1), low_since_ms: None };
    let grown = decide(&busy, &start, &settings, 0);
    assert_eq!((grown.action, grown.reason), (CapacityAction::Grow, Reason::WorkingSet));
    assert_eq!(grown.target, Capacity::from_half_units(9));
    let idle = Signals { working_set_pages: 10, window_ms: 1_000, ..Signals::default() };
    let waiting = decide(&idle, &grown.state, &settings, 100);
    assert_eq!((waiting.action, waiting.reason), (CapacityAction::Hold, Reason::ShrinkDelayed));
    let still = decide(&idle, &waiting.state, &settings, 1_099);
    assert_eq!(still.action, CapacityAction::Hold);
    let shrunk = decide(&idle, &still.state, &settings, 1_100);
    assert_eq!(shrunk.action, CapacityAction::Shrink);
    assert_eq!(shrunk.target, Capacity::from_half_units(1));
    // A busy evaluation during the wait restarts the delay.
    let reset = decide(&busy, &waiting.state, &settings, 500);
    assert_eq!(reset.state.low_since_ms, None);
}
