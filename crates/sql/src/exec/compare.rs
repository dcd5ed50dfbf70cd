//! Comparison of two values by a comparison operator, with SQL's NULL rules and bpchar's
//! trailing-blank-insensitive equality.

use std::cmp::Ordering;

use crate::plan::CompareOp;
use crate::types::Datum;

/// `left op right` as a datum: a boolean, or NULL when either side is NULL.
pub(crate) fn compare(op: CompareOp, left: &Datum, right: &Datum, bpchar: bool) -> Datum {
    compare_truth(op, left, right, bpchar).map_or(Datum::Null, Datum::Bool)
}

/// `compare` as a truth value (None: NULL), for predicates that need no datum.
pub(crate) fn compare_truth(
    op: CompareOp,
    left: &Datum,
    right: &Datum,
    bpchar: bool,
) -> Option<bool> {
    if left.is_null() || right.is_null() {
        return None;
    }
    let ordering = if bpchar {
        match (left, right) {
            (Datum::Text(a), Datum::Text(b)) => {
                a.trim_end_matches(' ').cmp(b.trim_end_matches(' '))
            }
            _ => left.compare(right).unwrap_or(Ordering::Equal),
        }
    } else {
        left.compare(right)?
    };
    Some(match op {
        CompareOp::Eq => ordering == Ordering::Equal,
        CompareOp::NotEq => ordering != Ordering::Equal,
        CompareOp::Lt => ordering == Ordering::Less,
        CompareOp::LtEq => ordering != Ordering::Greater,
        CompareOp::Gt => ordering == Ordering::Greater,
        CompareOp::GtEq => ordering != Ordering::Less,
    })
}
