//! The Window operator: window functions over input sorted by partition, then order.
//!
//! Rows arrive sorted (a Sort node below, which spills past work_mem). One partition at a
//! time is held, its calls computed, and its rows sent on with one value per call appended.
//! Peers are rows of a partition equal in every ORDER BY column (all rows, without ORDER BY);
//! frames (ROWS, RANGE, GROUPS, with exclusions) are in exec/window_frame.rs, aggregates over
//! them in exec/window_aggregate.rs.
//!
//! Costs per partition of n rows: ranking, offset and value functions O(n); an aggregate
//! O(n) when its frame starts at UNBOUNDED PRECEDING or it has an inverse (count, integer
//! sum and avg), otherwise O(n x frame size) where the frame's start moves.

use super::window_aggregate::aggregate_values;
use super::window_frame::{
    evaluate_offsets, frames, peers, same_columns, segments, Frames, Offsets, Partition,
};
use super::*;

/// Runs a Window node.
pub(crate) fn run_window(
    input: &Plan,
    spec: &WindowSpec,
    calls: &[WindowCall],
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    // Offsets hold no columns: evaluated once, before any row, as PostgreSQL does.
    let offsets = evaluate_offsets(&spec.frame, ctx)?;
    let mut partition: Vec<Row> = Vec::new();
    let mut open = true;
    let finished = run(input, ctx, probe, &mut |ctx, row| {
        if let Some(first) = partition.first() {
            if !same_columns(first, &row, &spec.partition) {
                let rows = std::mem::take(&mut partition);
                if !emit_partition(rows, spec, &offsets, calls, ctx, sink)? {
                    open = false;
                    return Ok(false);
                }
            }
        }
        partition.push(row);
        Ok(true)
    })?;
    if !finished || !open {
        return Ok(false);
    }
    if partition.is_empty() {
        return Ok(true);
    }
    emit_partition(partition, spec, &offsets, calls, ctx, sink)
}

fn emit_partition(
    mut rows: Vec<Row>,
    spec: &WindowSpec,
    offsets: &Offsets,
    calls: &[WindowCall],
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut results = Vec::with_capacity(calls.len());
    {
        let peers = peers(&rows, spec);
        // Ranking and offset functions need no frames (DISTINCT ON is a row_number).
        let framed = calls.iter().any(|call| {
            matches!(
                call.function,
                WindowFunction::FirstValue
                    | WindowFunction::LastValue
                    | WindowFunction::NthValue
                    | WindowFunction::Aggregate(_)
            )
        });
        let frames = if framed { frames(&rows, &peers, spec, offsets)? } else { Frames::none() };
        let exclusion = spec.frame.exclusion;
        let partition = Partition { rows: &rows, peers, frames, exclusion };
        for call in calls {
            results.push(compute(call, &partition, ctx)?);
        }
    }
    for (index, row) in rows.iter_mut().enumerate() {
        for values in &mut results {
            row.push(std::mem::replace(&mut values[index], Datum::Null));
        }
    }
    for row in rows {
        if !sink(ctx, row)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One call's value for every row of a partition.
fn compute(call: &WindowCall, partition: &Partition<'_>, ctx: &mut Ctx<'_>) -> Result<Vec<Datum>> {
    let (rows, peers) = (partition.rows, &partition.peers);
    let count = rows.len();
    let as_int = |value: usize| Datum::Int(i64::try_from(value).expect("row counts fit i64"));
    Ok(match &call.function {
        WindowFunction::RowNumber => (1..=count).map(as_int).collect(),
        WindowFunction::Rank => peers.start.iter().map(|start| as_int(start + 1)).collect(),
        WindowFunction::DenseRank => peers.group.iter().map(|&group| as_int(group)).collect(),
        WindowFunction::PercentRank => peers
            .start
            .iter()
            .map(|&start| {
                let rank = start as f64;
                Datum::Float(if count > 1 { rank / (count - 1) as f64 } else { 0.0 })
            })
            .collect(),
        WindowFunction::CumeDist => {
            peers.end.iter().map(|&end| Datum::Float(end as f64 / count as f64)).collect()
        }
        WindowFunction::Ntile => ntile(call, rows, ctx)?,
        WindowFunction::Lag | WindowFunction::Lead => offset_values(call, rows, ctx)?,
        WindowFunction::FirstValue | WindowFunction::LastValue | WindowFunction::NthValue => {
            frame_values(call, partition, ctx)?
        }
        WindowFunction::Aggregate(aggregate) => aggregate_values(aggregate, partition, ctx)?,
    })
}

/// ntile(buckets): PostgreSQL's split, the first `count % buckets` buckets one row larger.
fn ntile(call: &WindowCall, rows: &[Row], ctx: &mut Ctx<'_>) -> Result<Vec<Datum>> {
    let count = rows.len();
    let buckets = match eval(&call.args[0], &rows[0], ctx)? {
        Datum::Null => return Ok(vec![Datum::Null; count]),
        Datum::Int(buckets) if buckets > 0 => usize::try_from(buckets).unwrap_or(usize::MAX),
        _ => return Err(SqlError::new("22014", "argument of ntile must be greater than zero")),
    };
    let per_bucket = count / buckets;
    let larger = count % buckets;
    let mut values = Vec::with_capacity(count);
    let mut bucket = 1usize;
    let mut left_in_bucket = per_bucket + usize::from(larger > 0);
    for _ in 0..count {
        if left_in_bucket == 0 {
            bucket += 1;
            left_in_bucket = per_bucket + usize::from(bucket <= larger);
        }
        values.push(Datum::Int(i64::try_from(bucket).expect("buckets fit i64")));
        left_in_bucket -= 1;
    }
    Ok(values)
}

/// lag / lead (value, offset = 1, default = NULL), evaluated per row as PostgreSQL does.
fn offset_values(call: &WindowCall, rows: &[Row], ctx: &mut Ctx<'_>) -> Result<Vec<Datum>> {
    let backward = matches!(call.function, WindowFunction::Lag);
    let count = i64::try_from(rows.len()).expect("row counts fit i64");
    let mut values = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let offset = match call.args.get(1) {
            Some(expr) => match eval(expr, row, ctx)? {
                Datum::Null => {
                    values.push(Datum::Null);
                    continue;
                }
                Datum::Int(offset) => offset,
                other => return Err(SqlError::internal(format!("lag/lead offset {other:?}"))),
            },
            None => 1,
        };
        let here = i64::try_from(index).expect("row counts fit i64");
        let target = if backward { here.checked_sub(offset) } else { here.checked_add(offset) };
        values.push(match target {
            Some(target) if (0..count).contains(&target) => {
                let target = usize::try_from(target).expect("in range");
                eval(&call.args[0], &rows[target], ctx)?
            }
            _ => match call.args.get(2) {
                Some(default) => eval(default, row, ctx)?,
                None => Datum::Null,
            },
        });
    }
    Ok(values)
}

/// first_value / last_value / nth_value over each row's frame.
fn frame_values(
    call: &WindowCall,
    partition: &Partition<'_>,
    ctx: &mut Ctx<'_>,
) -> Result<Vec<Datum>> {
    let rows = partition.rows;
    let mut values = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let runs = segments(index, &partition.frames, &partition.peers, partition.exclusion);
        let mut nonempty = runs.iter().filter(|(start, end)| start < end);
        let target = match call.function {
            WindowFunction::FirstValue => nonempty.next().map(|(start, _)| *start),
            WindowFunction::LastValue => nonempty.next_back().map(|(_, end)| end - 1),
            _ => match eval(&call.args[1], row, ctx)? {
                Datum::Null => {
                    values.push(Datum::Null);
                    continue;
                }
                Datum::Int(nth) if nth > 0 => {
                    usize::try_from(nth - 1).ok().and_then(|skip| nth_row(&runs, skip))
                }
                _ => {
                    return Err(SqlError::new(
                        "22016",
                        "argument of nth_value must be greater than zero",
                    ))
                }
            },
        };
        values.push(match target {
            Some(target) => eval(&call.args[0], &rows[target], ctx)?,
            None => Datum::Null,
        });
    }
    Ok(values)
}

/// The row `skip` rows after the first of the runs, if they hold that many.
fn nth_row(runs: &[(usize, usize); 3], mut skip: usize) -> Option<usize> {
    for &(start, end) in runs {
        let length = end - start;
        if skip < length {
            return Some(start + skip);
        }
        skip -= length;
    }
    None
}
