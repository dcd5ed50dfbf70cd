//! Comparison of two values by a comparison operator, with SQL's NULL rules and bpchar's
//! trailing-blank-insensitive equality.

use std::cmp::Ordering;

use crate::plan::CompareOp;
use crate::types::Datum;

pub(crate) fn compare(op: CompareOp, left: &Datum, right: &Datum, bpchar: bool) -> Datum {
    if left.is_null() || right.is_null() {
        return Datum::Null;
    }
    let ordering = if bpchar {
        match (left, right) {
            (Datum::Text(a), Datum::Text(b)) => {
                a.trim_end_matches(' ').cmp(b.trim_end_matches(' '))
            }
            _ => left.compare(right).unwrap_or(Ordering::Equal),
        }
    } else {
        match left.compare(right) {
            Some(ordering) => ordering,
            None => return Datum::Null,
        }
    };
    Datum::Bool(match op {
        CompareOp::Eq => ordering == Ordering::Equal,
        CompareOp::NotEq => ordering != Ordering::Equal,
        CompareOp::Lt => ordering == Ordering::Less,
        CompareOp::LtEq => ordering != Ordering::Greater,
        CompareOp::Gt => ordering == Ordering::Greater,
        CompareOp::GtEq => ordering != Ordering::Less,
    })
}
