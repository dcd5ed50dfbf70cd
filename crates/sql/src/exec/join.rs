//! Join operators: combined rows and the hash join.

use super::*;

/// Emits `left_row` joined with each of `candidates` that satisfies `condition`; for a left
/// join, a row without a match is emitted once padded with `width` NULLs. The one body of
/// the nested-loop, index and hash joins. Returns false if the sink stopped.
pub(crate) fn join_row(
    left_row: Row,
    candidates: &[Row],
    condition: Option<&Expr>,
    kind: JoinKind,
    width: usize,
    ctx: &mut Ctx<'_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut matched = false;
    for right_row in candidates {
        let mut joined = left_row.clone();
        joined.extend(right_row.iter().cloned());
        if let Some(condition) = condition {
            if !truthy(&eval(condition, &joined, ctx)?) {
                continue;
            }
        }
        matched = true;
        if !sink(ctx, joined)? {
            return Ok(false);
        }
    }
    if !matched && kind == JoinKind::Left {
        let mut joined = left_row;
        joined.extend(std::iter::repeat_n(Datum::Null, width));
        return sink(ctx, joined);
    }
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn hash_join(
    left: &Plan,
    right: &Plan,
    kind: JoinKind,
    left_keys: &[Expr],
    right_keys: &[Expr],
    residual: Option<&Expr>,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut table: HashMap<Vec<u8>, Vec<Row>> = HashMap::new();
    let mut bytes = 0usize;
    run(right, ctx, probe, &mut |ctx, row| {
        let keys = right_keys.iter().map(|expr| eval(expr, &row, ctx)).collect::<Result<Row>>()?;
        if keys.iter().any(Datum::is_null) {
            return Ok(true);
        }
        let size = row_size(&row);
        bytes += size;
        ctx.budget.reserve(size, "hash join")?;
        table.entry(group_key(&keys)).or_default().push(row);
        Ok(true)
    })?;
    let width = right.arity();
    let outcome = run(left, ctx, probe, &mut |ctx, left_row| {
        let keys =
            left_keys.iter().map(|expr| eval(expr, &left_row, ctx)).collect::<Result<Row>>()?;
        // NULL keys match nothing.
        let matches =
            if keys.iter().any(Datum::is_null) { None } else { table.get(&group_key(&keys)) };
        join_row(left_row, matches.map_or(&[][..], Vec::as_slice), residual, kind, width, ctx, sink)
    });
    ctx.budget.release(bytes);
    outcome
}
