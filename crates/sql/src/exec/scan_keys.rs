//! The keys of a key-list scan (`Access::Keys`, see plan/key_lists.rs): every listed key
//! evaluated, cast to its column's type, sorted and deduplicated; `scan.rs` then reads each
//! as a one-key range of the clustered tree or of the secondary index. Sorting first makes
//! the reads ascend through the tree (neighbouring keys share pages) and returns rows in key
//! order, as PostgreSQL's index scan with an `= ANY` condition does; deduplicating returns a
//! repeated list value's rows once.

use std::cmp::Ordering;

use super::*;

/// The distinct keys of a key list on `columns` of `table` (its keys, or its one key
/// completed by each element of its array), evaluated and sorted (key order, or descending
/// with `backward`).
pub(super) fn listed_keys(
    table: &BoundTable,
    columns: &[usize],
    (keys, array): (&[Vec<Expr>], Option<&Expr>),
    backward: bool,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
) -> Result<Vec<Vec<Datum>>> {
    let mut values = match array {
        None => evaluate_keys(table, columns, keys, ctx, probe)?,
        Some(array) => array_keys(table, columns, keys, array, ctx, probe)?,
    };
    values.sort_by(|left, right| compare_keys(left, right));
    values.dedup_by(|left, right| compare_keys(left, right) == Ordering::Equal);
    if backward {
        values.reverse();
    }
    Ok(values)
}

/// A non-NULL key value as the key column's type `ty` stores it.
pub(super) fn key_datum(datum: Datum, ty: &SqlType) -> Result<Datum> {
    Ok(match (&datum, ty) {
        (Datum::Int(_), SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid) => datum,
        (Datum::Text(_), ty) if ty.is_text() => datum,
        _ => types::cast(datum.clone(), &datum_type(&datum), ty, true)?,
    })
}

/// The listed keys' values as their columns store them; a key with a NULL is left out
/// (an equality with NULL matches no row).
fn evaluate_keys(
    table: &BoundTable,
    columns: &[usize],
    keys: &[Vec<Expr>],
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
) -> Result<Vec<Vec<Datum>>> {
    let mut values = Vec::with_capacity(keys.len());
    'keys: for key in keys {
        assert!(!key.is_empty() && key.len() <= columns.len(), "a key pins leading columns");
        let mut datums = Vec::with_capacity(key.len());
        for (expr, &column) in key.iter().zip(columns) {
            let datum = eval(expr, probe, ctx)?;
            if datum.is_null() {
                continue 'keys;
            }
            datums.push(key_datum(datum, &table.columns[column].ty)?);
        }
        values.push(datums);
    }
    Ok(values)
}

/// The keys of `column = ANY (array)`: the one key of `keys` (the columns before) completed
/// by each non-NULL element of the array. A NULL array, or a NULL before, gives no key.
fn array_keys(
    table: &BoundTable,
    columns: &[usize],
    keys: &[Vec<Expr>],
    array: &Expr,
    ctx: &mut Ctx<'_>,
    probe: &[Datum],
) -> Result<Vec<Vec<Datum>>> {
    let [prefix] = keys else { unreachable!("an array completes one key") };
    assert!(prefix.len() < columns.len(), "the array's column is a key column");
    let mut before = Vec::with_capacity(prefix.len());
    for (expr, &column) in prefix.iter().zip(columns) {
        let datum = eval(expr, probe, ctx)?;
        if datum.is_null() {
            return Ok(Vec::new());
        }
        before.push(key_datum(datum, &table.columns[column].ty)?);
    }
    let Datum::Array(elements) = eval(array, probe, ctx)? else { return Ok(Vec::new()) };
    let column_ty = &table.columns[columns[prefix.len()]].ty;
    let mut values = Vec::with_capacity(elements.elements.len());
    for element in elements.elements.iter().filter(|element| !element.is_null()) {
        let mut key = before.clone();
        key.push(key_datum(element.clone(), column_ty)?);
        values.push(key);
    }
    Ok(values)
}

fn compare_keys(left: &[Datum], right: &[Datum]) -> Ordering {
    left.iter()
        .zip(right)
        .map(|(left, right)| left.sort_compare(right, false))
        .find(|ordering| ordering.is_ne())
        .unwrap_or_else(|| left.len().cmp(&right.len()))
}
