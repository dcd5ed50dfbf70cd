//! Window frames: for each row of a sorted partition, the rows its frame holds, as
//! PostgreSQL 15's nodeWindowAgg.c defines them.
//!
//! A frame is `start..end` (row positions) less its exclusion. ROWS offsets count rows,
//! GROUPS offsets count peer groups, RANGE offsets compare the single ORDER BY value with
//! PostgreSQL's in_range rules (`in_range` below). For RANGE, rows with a NULL ORDER BY value
//! are peers of each other only: a NULL row's offset bound is its peer group's edge, and a
//! non-NULL row's offset bound never reaches the NULLs. Both `start` and `end` never move
//! backwards from one row to the next, which the moving aggregates rely on
//! (exec/window_aggregate.rs).

use super::*;

/// A frame bound's offset, evaluated once per Window node (it holds no columns).
#[derive(Clone, Debug)]
pub(super) enum Offset {
    /// ROWS and GROUPS: a count.
    Count(usize),
    /// RANGE: a value of the ORDER BY column's in_range offset type.
    Value(Datum),
}

/// Both bounds' offsets (None for UNBOUNDED and CURRENT ROW).
#[derive(Clone, Debug, Default)]
pub(super) struct Offsets {
    start: Option<Offset>,
    end: Option<Offset>,
}

/// Evaluates the frame's offsets: PostgreSQL's errors for NULL (22004) and, for ROWS and
/// GROUPS, negative (22013) counts; RANGE's negative offsets fail in `in_range`.
pub(super) fn evaluate_offsets(frame: &WindowFrame, ctx: &mut Ctx<'_>) -> Result<Offsets> {
    let mut offset = |bound: &FrameBound, which: &str| -> Result<Option<Offset>> {
        let (FrameBound::Preceding(expr) | FrameBound::Following(expr)) = bound else {
            return Ok(None);
        };
        let value = eval(expr, &[], ctx)?;
        if value.is_null() {
            return Err(SqlError::new("22004", format!("frame {which} offset must not be null")));
        }
        if frame.units == FrameUnits::Range {
            return Ok(Some(Offset::Value(value)));
        }
        match value {
            Datum::Int(count) if count < 0 => {
                Err(SqlError::new("22013", format!("frame {which} offset must not be negative")))
            }
            Datum::Int(count) => {
                Ok(Some(Offset::Count(usize::try_from(count).unwrap_or(usize::MAX))))
            }
            other => Err(SqlError::internal(format!("frame offset {other:?}"))),
        }
    };
    Ok(Offsets { start: offset(&frame.start, "starting")?, end: offset(&frame.end, "ending")? })
}

/// Peer groups of a sorted partition: for each row, the first row of its group and the row
/// after its group's last.
pub(super) struct Peers {
    pub start: Vec<usize>,
    pub end: Vec<usize>,
    /// 1-based number of each row's group (dense_rank).
    pub group: Vec<usize>,
    /// The first row of each group, then the partition's row count.
    pub group_starts: Vec<usize>,
}

/// Whether two rows are equal in `columns` (NULLs equal, as for grouping).
pub(super) fn same_columns(a: &Row, b: &Row, columns: &[usize]) -> bool {
    columns.iter().all(|&column| a[column] == b[column])
}

pub(super) fn peers(rows: &[Row], spec: &WindowSpec) -> Peers {
    let order: Vec<usize> = spec.order.iter().map(|key| key.column).collect();
    let count = rows.len();
    let mut peers = Peers {
        start: vec![0; count],
        end: vec![count; count],
        group: vec![1; count],
        group_starts: Vec::new(),
    };
    let mut group_start = 0;
    let mut group = 1;
    for index in 1..=count {
        if index == count || !same_columns(&rows[group_start], &rows[index], &order) {
            for member in group_start..index {
                peers.start[member] = group_start;
                peers.end[member] = index;
                peers.group[member] = group;
            }
            peers.group_starts.push(group_start);
            group_start = index;
            group += 1;
        }
    }
    peers.group_starts.push(count);
    peers
}

/// A sorted partition with its peer groups and its rows' frames.
pub(super) struct Partition<'r> {
    pub rows: &'r [Row],
    pub peers: Peers,
    pub frames: Frames,
    pub exclusion: FrameExclusion,
}

/// Every row's frame `start..end` (before exclusion); `end >= start`.
pub(super) struct Frames {
    pub start: Vec<usize>,
    pub end: Vec<usize>,
}

impl Frames {
    /// No frames, for a window whose calls read none.
    pub fn none() -> Frames {
        Frames { start: Vec::new(), end: Vec::new() }
    }
}

/// The frames of a partition's rows.
pub(super) fn frames(
    rows: &[Row],
    peers: &Peers,
    spec: &WindowSpec,
    offsets: &Offsets,
) -> Result<Frames> {
    let frame = &spec.frame;
    let start = bound_positions(rows, peers, spec, &frame.start, offsets.start.as_ref(), true)?;
    let end = bound_positions(rows, peers, spec, &frame.end, offsets.end.as_ref(), false)?;
    // An empty frame (its end before its start) is kept as start..start, never reversed.
    let end = end.iter().zip(&start).map(|(&end, &start)| end.max(start)).collect();
    Ok(Frames { start, end })
}

/// One bound's position for every row: the first row of the frame (`is_start`) or the row
/// after its last.
fn bound_positions(
    rows: &[Row],
    peers: &Peers,
    spec: &WindowSpec,
    bound: &FrameBound,
    offset: Option<&Offset>,
    is_start: bool,
) -> Result<Vec<usize>> {
    let count = rows.len();
    let units = spec.frame.units;
    Ok(match (bound, offset) {
        (FrameBound::UnboundedPreceding, _) => vec![0; count],
        (FrameBound::UnboundedFollowing, _) => vec![count; count],
        (FrameBound::CurrentRow, _) if units == FrameUnits::Rows => {
            (0..count).map(|index| index + usize::from(!is_start)).collect()
        }
        (FrameBound::CurrentRow, _) if is_start => peers.start.clone(),
        (FrameBound::CurrentRow, _) => peers.end.clone(),
        (FrameBound::Preceding(_) | FrameBound::Following(_), Some(Offset::Count(offset))) => {
            let preceding = matches!(bound, FrameBound::Preceding(_));
            if units == FrameUnits::Rows {
                rows_bound(count, *offset, preceding, is_start)
            } else {
                groups_bound(peers, *offset, preceding, is_start)
            }
        }
        (FrameBound::Preceding(_) | FrameBound::Following(_), Some(Offset::Value(offset))) => {
            let preceding = matches!(bound, FrameBound::Preceding(_));
            range_bound(rows, peers, spec, offset, preceding, is_start)?
        }
        (FrameBound::Preceding(_) | FrameBound::Following(_), None) => {
            return Err(SqlError::internal("a frame offset was not evaluated"))
        }
    })
}

/// ROWS `offset PRECEDING / FOLLOWING`.
fn rows_bound(count: usize, offset: usize, preceding: bool, is_start: bool) -> Vec<usize> {
    (0..count)
        .map(|index| {
            // The end bound is one past the last row.
            let position = index + usize::from(!is_start);
            let moved = if preceding {
                position.saturating_sub(offset)
            } else {
                position.saturating_add(offset)
            };
            moved.min(count)
        })
        .collect()
}

/// GROUPS `offset PRECEDING / FOLLOWING`: whole peer groups before or after the row's own.
fn groups_bound(peers: &Peers, offset: usize, preceding: bool, is_start: bool) -> Vec<usize> {
    let groups = peers.group_starts.len() - 1;
    peers
        .group
        .iter()
        .map(|&group| {
            // 0-based; the end bound is the start of the group after the last one in.
            let own = group - 1 + usize::from(!is_start);
            let target = if preceding {
                match own.checked_sub(offset) {
                    Some(target) => target,
                    None => return 0,
                }
            } else {
                own.saturating_add(offset).min(groups)
            };
            peers.group_starts[target]
        })
        .collect()
}

/// RANGE `offset PRECEDING / FOLLOWING` over the one ORDER BY column: nodeWindowAgg.c's
/// update_frameheadpos / update_frametailpos, with the head and tail moving forward only.
fn range_bound(
    rows: &[Row],
    peers: &Peers,
    spec: &WindowSpec,
    offset: &Datum,
    preceding: bool,
    is_start: bool,
) -> Result<Vec<usize>> {
    let key =
        spec.order.first().ok_or_else(|| SqlError::internal("RANGE offset without ORDER BY"))?;
    let value = |index: usize| &rows[index][key.column];
    // The non-NULL rows: NULLs sort first or last.
    let nulls = rows.iter().filter(|row| row[key.column].is_null()).count();
    let (first, last) = if key.nulls_first { (nulls, rows.len()) } else { (0, rows.len() - nulls) };
    // in_range(row, current, offset, subtract, less): the start is the first row for which
    // it holds, the end the first row after the start's for which it fails.
    let mut subtract = preceding;
    let mut less = !is_start;
    if key.descending {
        subtract = !subtract;
        less = !less;
    }
    let mut positions = Vec::with_capacity(rows.len());
    let mut position = first;
    for index in 0..rows.len() {
        let current = value(index);
        if current.is_null() {
            positions.push(if is_start { peers.start[index] } else { peers.end[index] });
            continue;
        }
        while position < last {
            let inside = in_range(value(position), current, offset, subtract, less)?;
            if inside == is_start {
                break;
            }
            position += 1;
        }
        positions.push(position);
    }
    Ok(positions)
}

/// PostgreSQL's in_range support functions: whether `value <= base ± offset` (`less`) or
/// `value >= base ± offset`, for the ORDER BY types that have them; 22013 for a negative
/// offset.
pub(super) fn in_range(
    value: &Datum,
    base: &Datum,
    offset: &Datum,
    subtract: bool,
    less: bool,
) -> Result<bool> {
    let negative =
        || SqlError::new("22013", "invalid preceding or following size in window function");
    let holds = |ordering: Ordering| if less { ordering.is_le() } else { ordering.is_ge() };
    match (value, base, offset) {
        (Datum::Int(value), Datum::Int(base), Datum::Int(offset)) => {
            if *offset < 0 {
                return Err(negative());
            }
            // Exact arithmetic: PostgreSQL's overflow cases come out the same.
            let offset = i128::from(*offset);
            let sum =
                if subtract { i128::from(*base) - offset } else { i128::from(*base) + offset };
            Ok(holds(i128::from(*value).cmp(&sum)))
        }
        (Datum::Float(value), Datum::Float(base), Datum::Float(offset)) => {
            float_in_range(*value, *base, *offset, subtract, less).ok_or_else(negative)
        }
        (Datum::Numeric(value), Datum::Numeric(base), Datum::Numeric(offset)) => {
            if offset.is_sign_negative() && !offset.is_zero() {
                return Err(negative());
            }
            let sum = if subtract { base.checked_sub(*offset) } else { base.checked_add(*offset) };
            // Past numeric's range, the sum is beyond every value (PostgreSQL's NUMERIC
            // has room for it; the comparison's answer is the same).
            Ok(match sum {
                Some(sum) => holds(value.cmp(&sum)),
                None => {
                    if subtract {
                        !less
                    } else {
                        less
                    }
                }
            })
        }
        (_, _, Datum::Interval(offset)) => datetime_in_range(value, base, offset, subtract, less),
        _ => Err(SqlError::internal(format!("in_range({value:?}, {base:?}, {offset:?})"))),
    }
}

/// in_range_float8_float8: NaN sorts after every number; an infinite offset reaches an
/// infinite base of the matching sign. None for a negative or NaN offset.
fn float_in_range(value: f64, base: f64, offset: f64, subtract: bool, less: bool) -> Option<bool> {
    if offset.is_nan() || offset < 0.0 {
        return None;
    }
    if value.is_nan() {
        return Some(if base.is_nan() { true } else { !less });
    }
    if base.is_nan() {
        return Some(less);
    }
    if offset.is_infinite()
        && base.is_infinite()
        && (if subtract { base > 0.0 } else { base < 0.0 })
    {
        return Some(true);
    }
    let sum = if subtract { base - offset } else { base + offset };
    Some(if less { value <= sum } else { value >= sum })
}

/// in_range for date, timestamp, timestamptz, time and interval values with an interval
/// offset (date_pl_interval and friends; time ignores the offset's months and days and does
/// not wrap at midnight).
fn datetime_in_range(
    value: &Datum,
    base: &Datum,
    offset: &types::Interval,
    subtract: bool,
    less: bool,
) -> Result<bool> {
    let negative =
        || SqlError::new("22013", "invalid preceding or following size in window function");
    if let (Datum::Time(value), Datum::Time(base)) = (value, base) {
        if offset.micros < 0 {
            return Err(negative());
        }
        let sum = if subtract {
            i128::from(*base) - i128::from(offset.micros)
        } else {
            i128::from(*base) + i128::from(offset.micros)
        };
        let value = i128::from(*value);
        return Ok(if less { value <= sum } else { value >= sum });
    }
    if offset.span_micros() < 0 {
        return Err(negative());
    }
    let signed = if subtract { offset.checked_negate()? } else { *offset };
    let (value, sum) = match (value, base) {
        (Datum::Date(value), Datum::Date(base)) => {
            // Through the timestamp conversion: infinite dates stay infinite.
            let day = |days: &i32| types::date_to_timestamp_micros(*days);
            let sum = types::timestamp_plus_interval(day(base)?, &signed)?;
            (Datum::Timestamp(day(value)?), Datum::Timestamp(sum))
        }
        (Datum::Timestamp(_), Datum::Timestamp(micros)) => {
            (value.clone(), Datum::Timestamp(types::timestamp_plus_interval(*micros, &signed)?))
        }
        (Datum::TimestampTz(_), Datum::TimestampTz(micros)) => {
            (value.clone(), Datum::TimestampTz(types::timestamptz_plus_interval(*micros, &signed)?))
        }
        (Datum::Interval(_), Datum::Interval(interval)) => {
            (value.clone(), Datum::Interval(interval.checked_add(&signed)?))
        }
        _ => return Err(SqlError::internal(format!("in_range({value:?}, {base:?}, interval)"))),
    };
    let ordering =
        value.compare(&sum).ok_or_else(|| SqlError::internal("in_range compared NULL"))?;
    Ok(if less { ordering.is_le() } else { ordering.is_ge() })
}

/// The rows of row `index`'s frame after its exclusion, in order: up to three runs
/// (`start..end` each, empty ones `start == end`).
pub(super) fn segments(
    index: usize,
    frames: &Frames,
    peers: &Peers,
    exclusion: FrameExclusion,
) -> [(usize, usize); 3] {
    let (start, end) = (frames.start[index], frames.end[index]);
    let (excluded_start, excluded_end, keep_current) = match exclusion {
        FrameExclusion::NoOthers => return [(start, end), (end, end), (end, end)],
        FrameExclusion::CurrentRow => (index, index + 1, false),
        FrameExclusion::Group => (peers.start[index], peers.end[index], false),
        FrameExclusion::Ties => (peers.start[index], peers.end[index], true),
    };
    let before = (start, end.min(excluded_start).max(start));
    let current = if keep_current && (start..end).contains(&index) {
        (index, index + 1)
    } else {
        (before.1, before.1)
    };
    let after_start = start.max(excluded_end).min(end);
    [before, current, (after_start, end)]
}
