//! A value or a row compared with a subquery's rows (`Expr::InSubquery`, bound in
//! bind/subquery_comparison.rs), with PostgreSQL's NULL rules: a row comparison is NULL
//! when a pair that decides it has a NULL (docs 9.24.5); `ANY` is true when some row's
//! comparison is true, else NULL when some row's is NULL, else false, and `ALL` the
//! reverse. An uncorrelated `= ANY` (IN, NOT IN) keeps the subquery's rows hashed, as
//! PostgreSQL's hashed SubPlan does.

use super::*;

/// The subquery's compared rows hashed, for an uncorrelated `= ANY`.
pub struct HashedRows {
    /// The `group_key` encodings of the rows without a NULL.
    keys: spill::KeySet,
    /// The rows without a NULL, for a probe with a NULL (whose misses may be NULL).
    complete: Vec<Row>,
    /// The rows with a NULL: a probe none of the keys matches is NULL when one of these
    /// could match it.
    partial: Vec<Row>,
}

impl HashedRows {
    fn new(rows: Vec<Row>) -> HashedRows {
        let mut hashed = HashedRows {
            keys: spill::KeySet::default(),
            complete: Vec::new(),
            partial: Vec::new(),
        };
        for row in rows {
            if row.iter().any(Datum::is_null) {
                hashed.partial.push(row);
                continue;
            }
            hashed.keys.insert(row_key(&row));
            hashed.complete.push(row);
        }
        hashed
    }

    fn is_empty(&self) -> bool {
        self.complete.is_empty() && self.partial.is_empty()
    }

    /// `probe = ANY (rows)`.
    fn contains(&self, probe: &[Datum]) -> Option<bool> {
        let probe_has_null = probe.iter().any(Datum::is_null);
        if !probe_has_null && self.keys.contains(&row_key(probe)) {
            return Some(true);
        }
        // A miss: false, unless a row that is not certainly different makes it NULL. A
        // probe without NULLs is certainly different from every complete row it missed.
        let candidates: Box<dyn Iterator<Item = &Row>> = if probe_has_null {
            Box::new(self.complete.iter().chain(&self.partial))
        } else {
            Box::new(self.partial.iter())
        };
        any_or_all(Quantifier::Any, candidates.map(|row| compare_rows(CompareOp::Eq, probe, row)))
    }
}

fn row_key(row: &[Datum]) -> Vec<u8> {
    let mut key = Vec::new();
    for value in row {
        value.group_key(&mut key);
    }
    key
}

/// Evaluates an `Expr::InSubquery` over `row`.
pub(crate) fn eval_subquery_comparison(
    expr: &Expr,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Datum> {
    let Expr::InSubquery { exprs, subquery_exprs, op, quantifier, plan, negated, correlated, id } =
        expr
    else {
        return Err(SqlError::internal("not a subquery comparison"));
    };
    let outcome = if *op == CompareOp::Eq && *quantifier == Quantifier::Any && !*correlated {
        hashed_any(exprs, subquery_exprs, plan, *id, row, ctx)?
    } else {
        let cache = if *correlated { RowCache::Skip } else { RowCache::Keep };
        let limit = (*quantifier == Quantifier::Single).then_some(2);
        let rows = subquery_rows(plan, cache, *id, row, ctx, limit)?;
        compare_with_rows(exprs, subquery_exprs, *op, *quantifier, rows, row, ctx)?
    };
    Ok(match outcome {
        Some(truth) => Datum::Bool(truth != *negated),
        None => Datum::Null,
    })
}

/// The comparison over rows fetched for this evaluation (correlated, or not `= ANY`). As
/// in PostgreSQL, the left side is not evaluated when there are no rows.
fn compare_with_rows(
    exprs: &[Expr],
    subquery_exprs: &[Expr],
    op: CompareOp,
    quantifier: Quantifier,
    rows: Vec<Row>,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Option<bool>> {
    if quantifier == Quantifier::Single && rows.len() > 1 {
        return Err(SqlError::new(
            "21000",
            "more than one row returned by a subquery used as an expression",
        ));
    }
    if rows.is_empty() {
        return Ok(match quantifier {
            Quantifier::Any => Some(false),
            Quantifier::All => Some(true),
            Quantifier::Single => None,
        });
    }
    let probe = eval_all(exprs, row, ctx)?;
    let mut results = Vec::with_capacity(rows.len());
    for subquery_row in rows {
        let compared = project(subquery_exprs, subquery_row, ctx)?;
        let result = compare_rows(op, &probe, &compared);
        // The first row that decides ends the scan, as in PostgreSQL.
        let decides = match quantifier {
            Quantifier::Any => result == Some(true),
            Quantifier::All => result == Some(false),
            Quantifier::Single => true,
        };
        results.push(result);
        if decides {
            break;
        }
    }
    let quantifier = if quantifier == Quantifier::Single { Quantifier::Any } else { quantifier };
    Ok(any_or_all(quantifier, results.into_iter()))
}

/// An uncorrelated `= ANY`: the subquery's rows hashed once per statement.
fn hashed_any(
    exprs: &[Expr],
    subquery_exprs: &[Expr],
    plan: &Plan,
    id: usize,
    row: &[Datum],
    ctx: &mut Ctx<'_>,
) -> Result<Option<bool>> {
    if !matches!(ctx.subquery_cache.get(&id), Some(CachedSubquery::In(_))) {
        let rows = subquery_rows(plan, RowCache::Skip, id, row, ctx, None)?;
        let mut compared = Vec::with_capacity(rows.len());
        for subquery_row in rows {
            compared.push(project(subquery_exprs, subquery_row, ctx)?);
        }
        ctx.subquery_cache.insert(id, CachedSubquery::In(HashedRows::new(compared)));
    }
    // PostgreSQL's ExecHashSubPlan: an empty subquery is false without the left side.
    let cached = ctx.subquery_cache.get(&id);
    if matches!(cached, Some(CachedSubquery::In(hashed)) if hashed.is_empty()) {
        return Ok(Some(false));
    }
    let probe = eval_all(exprs, row, ctx)?;
    let Some(CachedSubquery::In(hashed)) = ctx.subquery_cache.get(&id) else {
        unreachable!("inserted above");
    };
    Ok(hashed.contains(&probe))
}

fn eval_all(exprs: &[Expr], row: &[Datum], ctx: &mut Ctx<'_>) -> Result<Row> {
    exprs.iter().map(|expr| eval(expr, row, ctx)).collect()
}

/// ANY: true when some result is, else NULL (None) when some is, else false. ALL: false
/// when some result is, else NULL when some is, else true.
fn any_or_all(quantifier: Quantifier, results: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    let decisive = quantifier == Quantifier::Any;
    let mut saw_null = false;
    for result in results {
        match result {
            Some(truth) if truth == decisive => return Some(decisive),
            Some(_) => {}
            None => saw_null = true,
        }
    }
    (!saw_null).then_some(!decisive)
}

/// PostgreSQL's row comparison (docs 9.24.5), None for NULL: `=` is false when a pair
/// differs, else NULL when a pair has a NULL; `<>` the reverse; `<` `<=` `>` `>=` compare
/// pairs from the left, the first pair that is not equal deciding (NULL when it has a
/// NULL), and all pairs equal deciding as the operator does on equal values.
fn compare_rows(op: CompareOp, left: &[Datum], right: &[Datum]) -> Option<bool> {
    assert_eq!(left.len(), right.len(), "rows compared have the binder's equal widths");
    if matches!(op, CompareOp::Eq | CompareOp::NotEq) {
        let mut saw_null = false;
        for (left, right) in left.iter().zip(right) {
            match pair_ordering(left, right) {
                Some(Ordering::Equal) => {}
                Some(_) => return Some(op == CompareOp::NotEq),
                None => saw_null = true,
            }
        }
        return (!saw_null).then_some(op == CompareOp::Eq);
    }
    for (left, right) in left.iter().zip(right) {
        let ordering = pair_ordering(left, right)?;
        if ordering != Ordering::Equal {
            return Some(match op {
                CompareOp::Lt | CompareOp::LtEq => ordering == Ordering::Less,
                _ => ordering == Ordering::Greater,
            });
        }
    }
    Some(matches!(op, CompareOp::LtEq | CompareOp::GtEq))
}

fn pair_ordering(left: &Datum, right: &Datum) -> Option<Ordering> {
    if left.is_null() || right.is_null() {
        return None;
    }
    left.compare(right)
}
