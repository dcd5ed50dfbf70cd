//! Aggregates over window frames.
//!
//! Frames only move forward (exec/window_frame.rs), so an aggregate's state follows them:
//! - count and the integer sum and avg have an inverse (a row leaving the frame is taken
//!   out), so each row costs the rows entering and leaving its frame: O(n) per partition
//!   for any ROWS, RANGE or GROUPS frame, and an exclusion costs the rows it leaves out;
//! - other aggregates grow while the frame's start stays and are rebuilt when it moves (as
//!   PostgreSQL does without an inverse transition function), and with an exclusion are
//!   rebuilt for each row whose frame after exclusion differs from the previous row's.

use super::window_frame::{segments, Partition};
use super::*;

/// An aggregate over each row's frame.
pub(super) fn aggregate_values(
    aggregate: &AggregateCall,
    partition: &Partition<'_>,
    ctx: &mut Ctx<'_>,
) -> Result<Vec<Datum>> {
    let rows = partition.rows;
    // A row its FILTER rejects is folded in as no row: `None`.
    let arguments: Vec<Option<Row>> = rows
        .iter()
        .map(|row| {
            if let Some(filter) = &aggregate.filter {
                if !matches!(eval(filter, row, ctx)?, Datum::Bool(true)) {
                    return Ok(None);
                }
            }
            aggregate.args.iter().map(|expr| eval(expr, row, ctx)).collect::<Result<_>>().map(Some)
        })
        .collect::<Result<_>>()?;
    if let Some(kind) = Invertible::of(aggregate) {
        return moving_values(kind, aggregate, &arguments, partition);
    }
    if partition.exclusion == FrameExclusion::NoOthers {
        return growing_values(aggregate, &arguments, partition);
    }
    excluded_values(aggregate, &arguments, partition)
}

/// The aggregates with an exact inverse transition.
#[derive(Clone, Copy)]
enum Invertible {
    CountStar,
    Count,
    /// sum of smallint, integer or bigint.
    Sum,
    /// avg of smallint, integer or bigint.
    Average,
}

impl Invertible {
    fn of(aggregate: &AggregateCall) -> Option<Invertible> {
        let integer = aggregate.input.is_integer();
        match aggregate.function {
            AggregateFunction::CountStar => Some(Invertible::CountStar),
            AggregateFunction::Count => Some(Invertible::Count),
            AggregateFunction::Sum if integer => Some(Invertible::Sum),
            AggregateFunction::Avg if integer => Some(Invertible::Average),
            _ => None,
        }
    }
}

/// The state of an invertible aggregate: the sum and the number of values counted.
#[derive(Clone, Copy, Default)]
struct Moving {
    total: i128,
    values: i64,
}

impl Moving {
    /// Adds (`sign` 1) or takes out (`sign` -1) one row's arguments.
    fn apply(&mut self, kind: Invertible, arguments: &Option<Row>, sign: i64) {
        let Some(arguments) = arguments else { return };
        match (kind, arguments.first()) {
            (Invertible::CountStar, _) => self.values += sign,
            (_, None | Some(Datum::Null)) => {}
            (Invertible::Count, Some(_)) => self.values += sign,
            (_, Some(value)) => {
                self.total += i128::from(value.as_int().unwrap_or(0)) * i128::from(sign);
                self.values += sign;
            }
        }
        debug_assert!(self.values >= 0, "a row taken out of a frame was never added");
    }

    fn finish(&self, kind: Invertible, aggregate: &AggregateCall) -> Result<Datum> {
        let state = match kind {
            Invertible::CountStar | Invertible::Count => Accumulator::Count(self.values),
            Invertible::Sum => Accumulator::SumInt(self.total, self.values > 0),
            Invertible::Average => Accumulator::AvgDecimal(
                Decimal::try_from_i128_with_scale(self.total, 0)
                    .map_err(|_| SqlError::out_of_range("numeric"))?,
                self.values,
            ),
        };
        finish(&state, aggregate)
    }
}

/// An invertible aggregate: rows enter at the frame's end and leave at its start; an
/// exclusion's rows are taken out of a copy.
fn moving_values(
    kind: Invertible,
    aggregate: &AggregateCall,
    arguments: &[Option<Row>],
    partition: &Partition<'_>,
) -> Result<Vec<Datum>> {
    let frames = &partition.frames;
    let mut values = Vec::with_capacity(arguments.len());
    let mut state = Moving::default();
    // The rows `state` holds: `held.0..held.1`.
    let mut held = (0usize, 0usize);
    for index in 0..arguments.len() {
        let (start, end) = (frames.start[index], frames.end[index]);
        assert!(start >= held.0 && end >= held.1, "window frames move forward only");
        if start >= held.1 {
            state = Moving::default();
            held = (start, start);
        }
        for row in &arguments[held.1..end] {
            state.apply(kind, row, 1);
        }
        for row in &arguments[held.0..start] {
            state.apply(kind, row, -1);
        }
        held = (start, end);
        if partition.exclusion == FrameExclusion::NoOthers {
            values.push(state.finish(kind, aggregate)?);
            continue;
        }
        let [before, current, after] =
            segments(index, frames, &partition.peers, partition.exclusion);
        let mut kept = state;
        for (excluded, row) in arguments.iter().enumerate().take(after.0).skip(before.1) {
            if !(current.0..current.1).contains(&excluded) {
                kept.apply(kind, row, -1);
            }
        }
        values.push(kept.finish(kind, aggregate)?);
    }
    Ok(values)
}

/// Another aggregate without exclusion: grown row by row while the frame's start stays,
/// rebuilt when it moves.
fn growing_values(
    aggregate: &AggregateCall,
    arguments: &[Option<Row>],
    partition: &Partition<'_>,
) -> Result<Vec<Datum>> {
    let frames = &partition.frames;
    let mut values = Vec::with_capacity(arguments.len());
    let mut state = accumulator(aggregate);
    // The rows `state` holds: `held.0..held.1`.
    let mut held = (0usize, 0usize);
    let mut value = finish(&state, aggregate)?;
    for index in 0..arguments.len() {
        let (start, end) = (frames.start[index], frames.end[index]);
        if (start, end) != held {
            if start != held.0 || end < held.1 {
                state = accumulator(aggregate);
                held = (start, start);
            }
            for row in arguments[held.1..end].iter().flatten() {
                accumulate(&mut state, aggregate, row)?;
            }
            held.1 = end;
            value = finish(&state, aggregate)?;
        }
        values.push(value.clone());
    }
    Ok(values)
}

/// Another aggregate with an exclusion: rebuilt over the rows left whenever they differ from
/// the previous row's (peers excluding their group share them).
fn excluded_values(
    aggregate: &AggregateCall,
    arguments: &[Option<Row>],
    partition: &Partition<'_>,
) -> Result<Vec<Datum>> {
    let mut values = Vec::with_capacity(arguments.len());
    let mut previous: Option<([(usize, usize); 3], Datum)> = None;
    for index in 0..arguments.len() {
        let runs = segments(index, &partition.frames, &partition.peers, partition.exclusion);
        if let Some((held, value)) = &previous {
            if *held == runs {
                values.push(value.clone());
                continue;
            }
        }
        let mut state = accumulator(aggregate);
        for (start, end) in runs {
            for row in arguments[start..end].iter().flatten() {
                accumulate(&mut state, aggregate, row)?;
            }
        }
        let value = finish(&state, aggregate)?;
        values.push(value.clone());
        previous = Some((runs, value));
    }
    Ok(values)
}
