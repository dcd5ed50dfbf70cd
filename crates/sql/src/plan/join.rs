//! Join choice: which conjuncts of a join's condition filter the inner side alone, which
//! are equalities between the sides (hash keys or index probes), and whether the inner side
//! can be read by index lookups instead of being scanned.

use crate::plan::*;

/// Whether `expr` reads only columns in `start..end`.
pub(crate) fn within(expr: &Expr, start: usize, end: usize) -> bool {
    let mut columns = Vec::new();
    expr.columns(&mut columns);
    columns.iter().all(|&column| column >= start && column < end)
}

/// A join condition's conjuncts, sorted by what they can do.
#[derive(Debug, Default)]
pub(crate) struct JoinConjuncts {
    /// Read only the right side (shifted to its own columns): filter it before the join.
    pub right_only: Vec<Expr>,
    /// `left = right` equalities (left expression, right expression over the combined row).
    pub equalities: Vec<(Expr, Expr)>,
    /// The rest, tested on each combined row.
    pub residual: Vec<Expr>,
}

/// The left side's width as a column shift (a plan's width fits isize: it is a Vec length).
pub(crate) fn left_shift(left_width: usize) -> isize {
    -isize::try_from(left_width).expect("a plan's column count fits isize")
}

/// Sorts `conjuncts` (over the combined row; the left side is columns `0..left_width` of
/// `total`).
pub(crate) fn split_join_conjuncts(
    conjuncts: Vec<Expr>,
    left_width: usize,
    total: usize,
) -> JoinConjuncts {
    let mut split = JoinConjuncts::default();
    for conjunct in conjuncts {
        if !conjunct.has_correlated_subquery() && within(&conjunct, left_width, total) {
            let mut moved = conjunct;
            moved.shift_columns(left_shift(left_width));
            split.right_only.push(moved);
            continue;
        }
        if let Expr::Compare { op: CompareOp::Eq, left: a, right: b, bpchar: false } = &conjunct {
            let sides = |l: &Expr, r: &Expr| {
                within(l, 0, left_width)
                    && within(r, left_width, total)
                    && !l.has_correlated_subquery()
            };
            if sides(a, b) {
                split.equalities.push(((**a).clone(), (**b).clone()));
                continue;
            }
            if sides(b, a) {
                split.equalities.push(((**b).clone(), (**a).clone()));
                continue;
            }
        }
        split.residual.push(conjunct);
    }
    split
}

/// The access path by which `right` can be read with index lookups keyed by the left row
/// (`equalities`: left expression, right expression over the combined row, the left side
/// `left_width` wide): Some when `right` is a full scan of a table whose key the equalities
/// pin.
pub(crate) fn lookup_access(
    right: &Plan,
    equalities: &[(Expr, Expr)],
    left_width: usize,
) -> Option<Access> {
    let PlanKind::Scan { table, access: Access::Full, .. } = &right.kind else {
        return None;
    };
    let keyed: Vec<Expr> = equalities
        .iter()
        .map(|(a, b)| {
            let mut b = b.clone();
            b.shift_columns(left_shift(left_width));
            Expr::Compare {
                op: CompareOp::Eq,
                left: Box::new(b),
                right: Box::new(a.clone()),
                bpchar: false,
            }
        })
        .collect();
    let access = choose_access(table, &keyed, Some(left_width));
    (!matches!(access, Access::Full)).then_some(access)
}

/// The right side read by index lookups with the left row as the probe: `Ok` with the scan
/// given an access path when `right` is a full scan of a table whose key the equalities
/// pin, else `Err(right)` unchanged.
pub(crate) fn index_lookup_inner(
    right: Box<Plan>,
    equalities: &[(Expr, Expr)],
    left_width: usize,
) -> std::result::Result<Box<Plan>, Box<Plan>> {
    let Some(access) = lookup_access(&right, equalities, left_width) else {
        return Err(right);
    };
    let Plan {
        kind: PlanKind::Scan { table, filter, emit_key, backward, projection, .. },
        columns,
        id,
    } = *right
    else {
        unreachable!("lookup_access accepts only a scan")
    };
    Ok(Box::new(Plan {
        kind: PlanKind::Scan { table, access, filter, emit_key, backward, projection },
        columns,
        id,
    }))
}

/// The equalities as conditions over the combined row (an index join re-tests them).
pub(crate) fn equality_conditions(equalities: Vec<(Expr, Expr)>) -> Vec<Expr> {
    equalities
        .into_iter()
        .map(|(a, b)| Expr::Compare {
            op: CompareOp::Eq,
            left: Box::new(a),
            right: Box::new(b),
            bpchar: false,
        })
        .collect()
}

/// The conjunction of `conjuncts`, None when there are none.
pub(crate) fn conjunction(conjuncts: Vec<Expr>) -> Option<Expr> {
    if conjuncts.is_empty() {
        None
    } else {
        Some(and_all(conjuncts))
    }
}
