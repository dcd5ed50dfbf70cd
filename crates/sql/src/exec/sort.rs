//! Sorting: ORDER BY comparison and the bounded top-N heap of ORDER BY ... LIMIT.

use super::*;

/// The first `keep` rows of `input` in `keys` order, holding at most 2 x `keep` rows (sorted
/// and cut back whenever the buffer fills), accounted against work_mem.
pub(crate) fn top_n(
    input: &Plan,
    keys: &[SortKey],
    keep: usize,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
) -> Result<Vec<Row>> {
    let mut rows: Vec<Row> = Vec::new();
    let mut bytes = 0usize;
    let capacity = keep.saturating_mul(2).max(16);
    let outcome = run(input, ctx, probe, &mut |ctx, row| {
        let size = row_size(&row);
        ctx.budget.reserve(size, "sort")?;
        bytes += size;
        rows.push(row);
        if rows.len() >= capacity {
            rows.sort_by(|a, b| compare_rows(a, b, keys));
            for dropped in rows.drain(keep.min(rows.len())..) {
                let size = row_size(&dropped);
                ctx.budget.release(size);
                bytes -= size;
            }
        }
        Ok(true)
    });
    ctx.budget.release(bytes);
    outcome?;
    rows.sort_by(|a, b| compare_rows(a, b, keys));
    rows.truncate(keep);
    Ok(rows)
}

pub fn compare_rows(a: &[Datum], b: &[Datum], keys: &[SortKey]) -> Ordering {
    for key in keys {
        let ordering = a[key.column].sort_compare(&b[key.column], key.nulls_first);
        let ordering = if key.descending && !(a[key.column].is_null() || b[key.column].is_null()) {
            ordering.reverse()
        } else {
            ordering
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}
