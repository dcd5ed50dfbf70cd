//! Evaluation of the array expressions: subscripts, slices and `op ANY/ALL (array)`.

use std::sync::Arc;

use super::compare::compare;
use crate::error::Result;
use crate::plan::CompareOp;
use crate::types::{array_value, ArrayValue, Datum};

/// `array[index]`: NULL outside the bounds or for a NULL array or index, as PostgreSQL.
/// `array[lower:upper]`: the elements within both the bounds given and the array's own,
/// renumbered from 1 (an empty array when none is).
pub(crate) fn subscript(
    array: &Datum,
    lower: Option<Datum>,
    upper: Option<Datum>,
    slice: bool,
) -> Result<Datum> {
    if array.is_null()
        || lower.as_ref().is_some_and(Datum::is_null)
        || upper.as_ref().is_some_and(Datum::is_null)
    {
        return Ok(Datum::Null);
    }
    let array = array_value(array)?;
    let bound = |datum: Option<Datum>| datum.and_then(|datum| datum.as_int());
    if !slice {
        let index = bound(lower).unwrap_or(i64::MIN);
        return Ok(array.get(index).cloned().unwrap_or(Datum::Null));
    }
    let first = bound(lower).unwrap_or(i64::from(array.lower)).max(i64::from(array.lower));
    let last = bound(upper).unwrap_or(array.upper()).min(array.upper());
    let mut elements = Vec::new();
    let mut index = first;
    while index <= last {
        elements.extend(array.get(index).cloned());
        index += 1;
    }
    Ok(Datum::Array(Arc::new(ArrayValue::new(elements))))
}

/// `left op ANY (array)` (`all` false) or `left op ALL (array)`: true (false for ALL) as
/// soon as one element decides; else NULL if a comparison was NULL; an empty array gives
/// false for ANY and true for ALL, even for a NULL left side.
pub(crate) fn any_all(op: CompareOp, left: &Datum, array: &Datum, all: bool) -> Result<Datum> {
    if array.is_null() {
        return Ok(Datum::Null);
    }
    let array = array_value(array)?;
    if array.elements.is_empty() {
        return Ok(Datum::Bool(all));
    }
    if left.is_null() {
        return Ok(Datum::Null);
    }
    let mut unknown = false;
    for element in &array.elements {
        match compare(op, left, element, false) {
            Datum::Bool(result) if result != all => return Ok(Datum::Bool(!all)),
            Datum::Bool(_) => {}
            _ => unknown = true,
        }
    }
    Ok(if unknown { Datum::Null } else { Datum::Bool(all) })
}
