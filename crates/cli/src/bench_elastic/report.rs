//! Figures from the samples and latencies of `tierdb bench elastic`, the JSON it prints and
//! the timeline SVG.

use std::fmt::Write as _;

use super::server::Sample;

/// Nearest-rank percentile (`percent` in 0..=100) of `values`; 0 when empty.
pub fn percentile(values: &mut [f64], percent: usize) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let index = (values.len() * percent).div_ceil(100).saturating_sub(1);
    values[index.min(values.len() - 1)]
}

/// The samples taken in [from_s, to_s].
pub fn window(samples: &[Sample], from_s: f64, to_s: f64) -> Vec<Sample> {
    samples.iter().filter(|sample| sample.at_s >= from_s && sample.at_s <= to_s).cloned().collect()
}

/// The buffer pool's hit ratio between the first and the last sample (None: no fetch).
pub fn hit_ratio(samples: &[Sample]) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    let hits = last.pool_hits - first.pool_hits;
    let fetches = hits + last.pool_misses - first.pool_misses;
    (fetches > 0.0).then(|| hits / fetches)
}

/// Time from `step_s` until capacity first reached the highest value it reached in the
/// samples (the step's scale-up); None when it never grew above its level at the step.
pub fn scale_up_seconds(samples: &[Sample], step_s: f64) -> Option<f64> {
    let start = samples.first()?.current_units;
    let peak = samples.iter().map(|sample| sample.current_units).fold(start, f64::max);
    if peak <= start {
        return None;
    }
    let reached = samples.iter().find(|sample| sample.current_units >= peak)?;
    Some(reached.at_s - step_s)
}

/// A shrink in the samples: (when capacity first fell below its level at the start, when
/// it reached its lowest). None when it did not fall.
pub fn shrink_span(samples: &[Sample]) -> Option<(f64, f64)> {
    let start = samples.first()?.current_units;
    let low = samples.iter().map(|sample| sample.current_units).fold(start, f64::min);
    if low >= start {
        return None;
    }
    let began = samples.iter().find(|sample| sample.current_units < start)?.at_s;
    let ended = samples.iter().find(|sample| sample.current_units <= low)?.at_s;
    Some((began, ended))
}

/// `key: value` pairs printed as one JSON object (values are numbers, booleans or null).
#[derive(Default)]
pub struct Figures {
    pairs: Vec<(String, String)>,
}

impl Figures {
    pub fn number(&mut self, key: &str, value: f64) {
        let text = if value.is_finite() { format!("{value:.4}") } else { "null".into() };
        let text = text.trim_end_matches('0').trim_end_matches('.').to_string();
        self.pairs.push((key.into(), if text.is_empty() { "0".into() } else { text }));
    }

    pub fn optional(&mut self, key: &str, value: Option<f64>) {
        match value {
            Some(value) => self.number(key, value),
            None => self.pairs.push((key.into(), "null".into())),
        }
    }

    pub fn boolean(&mut self, key: &str, value: bool) {
        self.pairs.push((key.into(), value.to_string()));
    }

    pub fn json(&self) -> String {
        let body: Vec<String> =
            self.pairs.iter().map(|(key, value)| format!("  \"{key}\": {value}")).collect();
        format!("{{\n{}\n}}", body.join(",\n"))
    }
}

/// The samples, one CSV line each.
pub fn samples_csv(samples: &[Sample]) -> String {
    let mut csv = String::from(
        "seconds,current_units,target_units,working_set_units,pool_hits,pool_misses\n",
    );
    for sample in samples {
        let _ = writeln!(
            csv,
            "{:.3},{},{},{:.3},{},{}",
            sample.at_s,
            sample.current_units,
            sample.target_units,
            sample.working_set_units,
            sample.pool_hits,
            sample.pool_misses
        );
    }
    csv
}

const WIDTH: f64 = 1200.0;
const HEIGHT: f64 = 420.0;
const MARGIN: f64 = 50.0;

/// The timeline: capacity current and target, the working-set estimate (units) against
/// the left axis, the buffer pool's hit ratio per sample interval against the right one,
/// and the phases as labelled vertical lines.
pub fn timeline_svg(samples: &[Sample], phases: &[(f64, String)], max_units: f64) -> String {
    let end_s = samples.last().map_or(1.0, |sample| sample.at_s).max(1.0);
    let x = |at_s: f64| MARGIN + at_s / end_s * (WIDTH - 2.0 * MARGIN);
    let y = |fraction: f64| HEIGHT - MARGIN - fraction.clamp(0.0, 1.0) * (HEIGHT - 2.0 * MARGIN);
    let units = |value: f64| y(value / max_units.max(0.5));
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (at_s, name) in phases {
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#ccc\"/>\
             <text x=\"{3:.1}\" y=\"{4}\" fill=\"#666\">{name}</text>",
            x(*at_s),
            MARGIN,
            HEIGHT - MARGIN,
            x(*at_s) + 2.0,
            MARGIN - 4.0,
        );
    }
    let line = |svg: &mut String, color: &str, point: &dyn Fn(usize, &Sample) -> Option<f64>| {
        let points: Vec<String> = samples
            .iter()
            .enumerate()
            .filter_map(|(index, sample)| {
                point(index, sample).map(|at| format!("{:.1},{at:.1}", x(sample.at_s)))
            })
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.5\" points=\"{}\"/>",
            points.join(" ")
        );
    };
    line(&mut svg, "#1f77b4", &|_, sample| Some(units(sample.current_units)));
    line(&mut svg, "#aec7e8", &|_, sample| Some(units(sample.target_units)));
    line(&mut svg, "#2ca02c", &|_, sample| Some(units(sample.working_set_units)));
    line(&mut svg, "#ff7f0e", &|index, _| {
        let pair = samples.get(index.checked_sub(1)?..=index)?;
        hit_ratio(pair).map(y)
    });
    let legend = [
        ("#1f77b4", "current capacity (units, left)"),
        ("#aec7e8", "target capacity"),
        ("#2ca02c", "working-set estimate (units)"),
        ("#ff7f0e", "buffer pool hit ratio (0-1, right)"),
    ];
    for (index, (color, name)) in legend.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)] // Four legend lines.
        let left = MARGIN + 260.0 * index as f64;
        let _ = writeln!(
            svg,
            "<text x=\"{left}\" y=\"{}\" fill=\"{color}\">{name}</text>",
            HEIGHT - 15.0
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"5\" y=\"{}\">{max_units}</text><text x=\"5\" y=\"{}\">0</text>\
         <text x=\"{}\" y=\"{}\">{end_s:.0} s</text>\n</svg>",
        MARGIN,
        HEIGHT - MARGIN,
        WIDTH - MARGIN,
        HEIGHT - MARGIN + 14.0,
    );
    svg
}
