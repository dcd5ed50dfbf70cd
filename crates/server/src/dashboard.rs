//! `/dashboard` on the metrics listener (design 015): one self-contained HTML page (inline
//! JS and SVG, nothing fetched from elsewhere) charting the last minutes of capacity,
//! working set, hit ratios, statements per second and latency, and temp usage, fed by
//! `/dashboard.json`: a bounded ring of points the capacity runner records at every
//! evaluation.

use std::collections::VecDeque;
use std::fmt::Write as _;

use parking_lot::Mutex;
use tierdb_storage::capacity::CapacityStatus;

/// Points kept: 5 minutes at one per 250 ms evaluation.
pub const HISTORY_POINTS: usize = 1200;

/// The page; the server puts the history's JSON in place of `HISTORY_JSON` so the charts
/// draw on load, then the page polls `/dashboard.json`.
const PAGE: &str = include_str!("dashboard.html");

/// The cumulative counters one point is computed from (rates are differences).
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub dram_hits: u64,
    pub tier_hits: u64,
    pub volume_reads: u64,
    pub statements: u64,
    pub statement_time_ns: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Point {
    seconds: f64,
    current: f64,
    target: f64,
    min: f64,
    max: f64,
    working_set: f64,
    dram_hit_ratio: Option<f64>,
    tier_hit_ratio: Option<f64>,
    statements_per_second: f64,
    latency_ms: Option<f64>,
    temp_bytes: u64,
}

#[derive(Debug, Default)]
struct Ring {
    points: VecDeque<Point>,
    last: Option<(f64, Totals)>,
}

/// The dashboard's history (at most `HISTORY_POINTS`).
#[derive(Debug, Default)]
pub struct History {
    ring: Mutex<Ring>,
}

/// `numerator / denominator` as a float; None when the denominator is 0.
#[allow(clippy::cast_precision_loss)] // Ratios of counters: display only.
fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

impl History {
    /// Records one evaluation: the status, the counters' totals and temp bytes in use.
    pub fn record(&self, seconds: f64, status: &CapacityStatus, totals: Totals, temp_bytes: u64) {
        let mut ring = self.ring.lock();
        let (previous_seconds, previous) = ring.last.unwrap_or((seconds, totals));
        let fetches = |t: &Totals| t.dram_hits + t.tier_hits + t.volume_reads;
        let all = fetches(&totals).saturating_sub(fetches(&previous));
        let statements = totals.statements.saturating_sub(previous.statements);
        let time_ns = totals.statement_time_ns.saturating_sub(previous.statement_time_ns);
        let elapsed = seconds - previous_seconds;
        let pool_bytes = status.unit.buffer_pool_bytes();
        let page_bytes = u64::try_from(tierdb_common::PAGE_SIZE).expect("page size fits u64");
        let point = Point {
            seconds,
            current: status.current.units(),
            target: status.target.units(),
            min: status.bounds.min.units(),
            max: status.bounds.max.units(),
            working_set: ratio(status.working_set.pages * page_bytes, pool_bytes).unwrap_or(0.0),
            dram_hit_ratio: ratio(totals.dram_hits.saturating_sub(previous.dram_hits), all),
            tier_hit_ratio: ratio(totals.tier_hits.saturating_sub(previous.tier_hits), all),
            statements_per_second: if elapsed > 0.0 {
                ratio(statements, 1).unwrap_or(0.0) / elapsed
            } else {
                0.0
            },
            latency_ms: ratio(time_ns, statements).map(|ns| ns / 1e6),
            temp_bytes,
        };
        if ring.points.len() == HISTORY_POINTS {
            ring.points.pop_front();
        }
        ring.points.push_back(point);
        ring.last = Some((seconds, totals));
    }

    /// The points as JSON: `{"points":[{...},...]}`, oldest first.
    pub fn json(&self) -> String {
        let ring = self.ring.lock();
        let mut out = String::from("{\"points\":[");
        for (index, point) in ring.points.iter().enumerate() {
            let optional =
                |value: Option<f64>| value.map_or("null".to_string(), |v| format!("{v:.4}"));
            let _ = write!(
                out,
                "{}{{\"t\":{:.3},\"current\":{},\"target\":{},\"min\":{},\"max\":{},\
                 \"working_set\":{:.3},\"dram_hit\":{},\"tier_hit\":{},\"sps\":{:.1},\
                 \"latency_ms\":{},\"temp_bytes\":{}}}",
                if index == 0 { "" } else { "," },
                point.seconds,
                point.current,
                point.target,
                point.min,
                point.max,
                point.working_set,
                optional(point.dram_hit_ratio),
                optional(point.tier_hit_ratio),
                point.statements_per_second,
                optional(point.latency_ms),
                point.temp_bytes,
            );
        }
        out.push_str("]}");
        out
    }

    /// The page with the current history inlined.
    pub fn page(&self) -> String {
        PAGE.replace("HISTORY_JSON", &self.json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierdb_storage::capacity::{Capacity, CapacityBounds, CapacityControl, CapacityUnit};

    #[test]
    fn the_ring_keeps_the_last_points_and_computes_rates() {
        let bounds =
            CapacityBounds::new(Capacity::ZERO, Capacity::from_half_units(8)).expect("bounds");
        let control =
            CapacityControl::new(true, CapacityUnit::new(1 << 20), bounds, Capacity::ZERO);
        let status = control.status();
        let history = History::default();
        for step in 0..HISTORY_POINTS + 10 {
            let count = u64::try_from(step).expect("fits");
            let totals = Totals {
                dram_hits: count * 3,
                tier_hits: count,
                volume_reads: 0,
                statements: count * 10,
                statement_time_ns: count * 10_000_000,
            };
            #[allow(clippy::cast_precision_loss)] // Small test values.
            history.record(count as f64, &status, totals, 0);
        }
        let json = history.json();
        assert_eq!(json.matches("\"t\":").count(), HISTORY_POINTS, "bounded");
        assert!(json.contains("\"dram_hit\":0.7500"), "{}", &json[..200]);
        assert!(json.contains("\"sps\":10.0") && json.contains("\"latency_ms\":1.0000"));
        assert!(json.starts_with("{\"points\":[{\"t\":10.000"), "the oldest were dropped");
        assert!(history.page().contains("\"points\":[{"), "the page inlines the history");
    }
}
