//! The Window operator: window functions over input sorted by partition, then order.
//!
//! Rows arrive sorted (a Sort node below, which spills past work_mem). One partition at a
//! time is held, its calls computed, and its rows sent on with one value per call appended.
//! Peers are rows of a partition equal in every ORDER BY column (all rows, without ORDER BY);
//! a RANGE frame moves by peer groups, a ROWS frame by rows.
//!
//! Costs per partition of n rows: ranking and offset functions O(n); an aggregate whose frame
//! starts at UNBOUNDED PRECEDING O(n) (its state only grows); another frame O(n x frame size)
//! (the state is rebuilt for each row whose frame differs from the previous row's).

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
    let mut partition: Vec<Row> = Vec::new();
    let mut open = true;
    let finished = run(input, ctx, probe, &mut |ctx, row| {
        if let Some(first) = partition.first() {
            if !same_columns(first, &row, &spec.partition) {
                let rows = std::mem::take(&mut partition);
                if !emit_partition(rows, spec, calls, ctx, sink)? {
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
    emit_partition(partition, spec, calls, ctx, sink)
}

/// Whether two rows are equal in `columns` (NULLs equal, as for grouping).
fn same_columns(a: &Row, b: &Row, columns: &[usize]) -> bool {
    columns.iter().all(|&column| a[column] == b[column])
}

/// Peer groups of a sorted partition: for each row, the first row of its group and the row
/// after its group's last.
struct Peers {
    start: Vec<usize>,
    end: Vec<usize>,
    /// 1-based number of each row's group (dense_rank).
    group: Vec<usize>,
}

fn peers(rows: &[Row], spec: &WindowSpec) -> Peers {
    let order: Vec<usize> = spec.order.iter().map(|key| key.column).collect();
    let count = rows.len();
    let mut peers = Peers { start: vec![0; count], end: vec![count; count], group: vec![1; count] };
    let mut group_start = 0;
    let mut group = 1;
    for index in 1..=count {
        if index == count || !same_columns(&rows[group_start], &rows[index], &order) {
            for member in group_start..index {
                peers.start[member] = group_start;
                peers.end[member] = index;
                peers.group[member] = group;
            }
            group_start = index;
            group += 1;
        }
    }
    peers
}

/// A sorted partition with its peer groups and the window's frame.
struct Partition<'r> {
    rows: &'r [Row],
    peers: Peers,
    frame: WindowFrame,
}

fn emit_partition(
    mut rows: Vec<Row>,
    spec: &WindowSpec,
    calls: &[WindowCall],
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut results = Vec::with_capacity(calls.len());
    {
        let partition = Partition { rows: &rows, peers: peers(&rows, spec), frame: spec.frame };
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

/// The frame of row `index`: rows `start..end` of the partition (empty when end <= start).
fn frame_of(index: usize, partition: &Partition<'_>) -> (usize, usize) {
    let (count, peers, frame) = (partition.rows.len(), &partition.peers, partition.frame);
    let offset = |rows: u64| usize::try_from(rows).unwrap_or(usize::MAX);
    let start = match frame.start {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(rows) => index.saturating_sub(offset(rows)),
        FrameBound::CurrentRow if frame.rows => index,
        FrameBound::CurrentRow => peers.start[index],
        FrameBound::Following(rows) => index.saturating_add(offset(rows)).min(count),
        FrameBound::UnboundedFollowing => count,
    };
    let end = match frame.end {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(rows) => (index + 1).saturating_sub(offset(rows)),
        FrameBound::CurrentRow if frame.rows => index + 1,
        FrameBound::CurrentRow => peers.end[index],
        FrameBound::Following(rows) => (index + 1).saturating_add(offset(rows)).min(count),
        FrameBound::UnboundedFollowing => count,
    };
    (start, end.max(start))
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
        let (start, end) = frame_of(index, partition);
        let target = match call.function {
            WindowFunction::FirstValue => Some(start),
            WindowFunction::LastValue => end.checked_sub(1),
            _ => match eval(&call.args[1], row, ctx)? {
                Datum::Null => {
                    values.push(Datum::Null);
                    continue;
                }
                Datum::Int(nth) if nth > 0 => {
                    usize::try_from(nth - 1).ok().and_then(|skip| start.checked_add(skip))
                }
                _ => {
                    return Err(SqlError::new(
                        "22016",
                        "argument of nth_value must be greater than zero",
                    ))
                }
            },
        };
        values.push(match target.filter(|&target| target >= start && target < end) {
            Some(target) => eval(&call.args[0], &rows[target], ctx)?,
            None => Datum::Null,
        });
    }
    Ok(values)
}

/// An aggregate over each row's frame: grown row by row while the frame starts at the
/// partition's first row, rebuilt when the frame moves otherwise.
fn aggregate_values(
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
    let mut values = Vec::with_capacity(rows.len());
    let mut state = accumulator(aggregate);
    // The rows `state` holds: `held.0..held.1`.
    let mut held = (0usize, 0usize);
    let mut value = finish(&state, aggregate)?;
    for index in 0..rows.len() {
        let (start, end) = frame_of(index, partition);
        if (start, end) != held {
            if start != held.0 || end < held.1 {
                state = accumulator(aggregate);
                held = (start, start);
            }
            for arguments in arguments[held.1..end].iter().flatten() {
                accumulate(&mut state, aggregate, arguments)?;
            }
            held.1 = end;
            value = finish(&state, aggregate)?;
        }
        values.push(value.clone());
    }
    Ok(values)
}
