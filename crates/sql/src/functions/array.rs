//! Array functions and the containment operators' functions, with PostgreSQL's
//! polymorphic typing: the element type is the common type of the array arguments'
//! elements and the element arguments (anycompatible), untyped literals taking it.

use std::sync::Arc;

use super::{count, no_function, Call, Coercion, Signature};
use crate::error::{Result, SqlError};
use crate::types::{array_of, array_value, ArrayValue, Datum, SqlType};

/// What one argument of a polymorphic array function is.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Kind {
    Array,
    Element,
    Int,
    Text,
}

/// What a polymorphic array function returns.
#[derive(Clone, Copy)]
pub(super) enum Output {
    Array,
    Int,
    IntArray,
    Text,
    Bool,
}

/// Resolves the element type of a polymorphic call (42804 when only untyped literals give
/// it, 42883 when an array argument is not an array or the types have no common type).
pub(super) fn polymorphic(
    name: &str,
    types: &[SqlType],
    kinds: &[Kind],
    output: Output,
) -> Result<Signature> {
    let mut element = SqlType::Unknown;
    for (ty, kind) in types.iter().zip(kinds) {
        let candidate = match (kind, ty) {
            (_, SqlType::Unknown) | (Kind::Int | Kind::Text, _) => continue,
            (Kind::Array, ty) => ty.array_element().ok_or_else(|| no_function(name, types))?,
            (Kind::Element, ty) => ty,
        };
        element = SqlType::common(&element, candidate).ok_or_else(|| no_function(name, types))?;
    }
    if element == SqlType::Unknown {
        return Err(SqlError::datatype_mismatch(
            "could not determine polymorphic type because input has type unknown",
        ));
    }
    let array = array_of(&element)?;
    let arguments = types
        .iter()
        .zip(kinds)
        .map(|(ty, kind)| match kind {
            Kind::Array => Coercion::Implicit(array.clone()),
            Kind::Element => Coercion::Implicit(element.clone()),
            Kind::Int => Coercion::Implicit(SqlType::Int4),
            Kind::Text if ty.is_text() => Coercion::Explicit(SqlType::Text),
            Kind::Text => Coercion::Implicit(SqlType::Text),
        })
        .collect();
    let output = match output {
        Output::Array => array,
        Output::Int => SqlType::Int4,
        Output::IntArray => SqlType::Array(Box::new(SqlType::Int4)),
        Output::Text => SqlType::Text,
        Output::Bool => SqlType::Bool,
    };
    Ok(Signature { arguments, output })
}

fn array_arg<'c>(call: &'c Call<'_>, index: usize) -> Result<&'c ArrayValue> {
    array_value(&call.args[index])
}

fn with_elements(lower: i32, elements: Vec<Datum>) -> Datum {
    Datum::Array(Arc::new(ArrayValue { lower, elements }))
}

/// IS NOT DISTINCT FROM, the equality array_position and array_remove use.
fn same(a: &Datum, b: &Datum) -> bool {
    match (a.is_null(), b.is_null()) {
        (true, true) => true,
        (false, false) => a.compare(b) == Some(std::cmp::Ordering::Equal),
        _ => false,
    }
}

fn checked(elements: Vec<Datum>) -> Result<Vec<Datum>> {
    if elements.len() > crate::types::ARRAY_ELEMENTS_MAX {
        return Err(crate::types::array_too_large());
    }
    Ok(elements)
}

pub(super) fn array_append(call: Call<'_>) -> Result<Datum> {
    let Some(array) = nullable_array(&call, 0)? else {
        return Ok(with_elements(1, vec![call.args[1].clone()]));
    };
    let mut elements = array.elements.clone();
    elements.push(call.args[1].clone());
    Ok(with_elements(array.lower, checked(elements)?))
}

pub(super) fn array_prepend(call: Call<'_>) -> Result<Datum> {
    let Some(array) = nullable_array(&call, 1)? else {
        return Ok(with_elements(1, vec![call.args[0].clone()]));
    };
    let mut elements = Vec::with_capacity(array.elements.len() + 1);
    elements.push(call.args[0].clone());
    elements.extend(array.elements.iter().cloned());
    Ok(with_elements(array.lower, checked(elements)?))
}

pub(super) fn array_cat(call: Call<'_>) -> Result<Datum> {
    let left = nullable_array(&call, 0)?;
    let right = nullable_array(&call, 1)?;
    Ok(match (left, right) {
        (None, None) => Datum::Null,
        (Some(_), None) => call.args[0].clone(),
        (None, Some(_)) => call.args[1].clone(),
        (Some(left), Some(right)) if right.elements.is_empty() => {
            with_elements(left.lower, left.elements.clone())
        }
        (Some(left), Some(right)) if left.elements.is_empty() => {
            with_elements(right.lower, right.elements.clone())
        }
        (Some(left), Some(right)) => {
            let mut elements = left.elements.clone();
            elements.extend(right.elements.iter().cloned());
            with_elements(left.lower, checked(elements)?)
        }
    })
}

/// An array argument of a non-strict function: None when NULL.
fn nullable_array<'c>(call: &'c Call<'_>, index: usize) -> Result<Option<&'c ArrayValue>> {
    if call.args[index].is_null() {
        return Ok(None);
    }
    array_arg(call, index).map(Some)
}

/// array_length, array_upper, array_lower for dimension 1 (NULL for another dimension or
/// an empty array).
fn dimension_fact(call: &Call<'_>, fact: fn(&ArrayValue) -> i64) -> Result<Datum> {
    let array = array_arg(call, 0)?;
    if call.int(1) != 1 || array.elements.is_empty() {
        return Ok(Datum::Null);
    }
    Ok(Datum::Int(fact(array)))
}

pub(super) fn array_length(call: Call<'_>) -> Result<Datum> {
    dimension_fact(&call, |array| i64::try_from(array.elements.len()).unwrap_or(i64::MAX))
}

pub(super) fn array_upper(call: Call<'_>) -> Result<Datum> {
    dimension_fact(&call, ArrayValue::upper)
}

pub(super) fn array_lower(call: Call<'_>) -> Result<Datum> {
    dimension_fact(&call, |array| i64::from(array.lower))
}

pub(super) fn cardinality(call: Call<'_>) -> Result<Datum> {
    count(array_arg(&call, 0)?.elements.len())
}

pub(super) fn array_ndims(call: Call<'_>) -> Result<Datum> {
    let array = array_arg(&call, 0)?;
    Ok(if array.elements.is_empty() { Datum::Null } else { Datum::Int(1) })
}

pub(super) fn array_dims(call: Call<'_>) -> Result<Datum> {
    let array = array_arg(&call, 0)?;
    Ok(if array.elements.is_empty() {
        Datum::Null
    } else {
        Datum::Text(format!("[{}:{}]", array.lower, array.upper()))
    })
}

/// Subscripts of the elements not distinct from the searched value, from `start` on.
fn positions(call: &Call<'_>) -> Result<Option<Vec<i64>>> {
    let Some(array) = nullable_array(call, 0)? else { return Ok(None) };
    let start = match call.args.get(2) {
        None => i64::from(array.lower),
        Some(Datum::Null) => {
            return Err(SqlError::new("22004", "initial position must not be null"))
        }
        Some(datum) => datum.as_int().unwrap_or(i64::from(array.lower)),
    };
    let searched = &call.args[1];
    let mut found = Vec::new();
    for (offset, element) in array.elements.iter().enumerate() {
        let subscript = i64::from(array.lower) + i64::try_from(offset).unwrap_or(i64::MAX);
        if subscript >= start && same(element, searched) {
            found.push(subscript);
        }
    }
    Ok(Some(found))
}

pub(super) fn array_position(call: Call<'_>) -> Result<Datum> {
    Ok(match positions(&call)? {
        Some(found) => found.first().map_or(Datum::Null, |&subscript| Datum::Int(subscript)),
        None => Datum::Null,
    })
}

pub(super) fn array_positions(call: Call<'_>) -> Result<Datum> {
    Ok(match positions(&call)? {
        Some(found) => with_elements(1, found.into_iter().map(Datum::Int).collect()),
        None => Datum::Null,
    })
}

pub(super) fn array_remove(call: Call<'_>) -> Result<Datum> {
    let Some(array) = nullable_array(&call, 0)? else { return Ok(Datum::Null) };
    let searched = &call.args[1];
    let elements: Vec<Datum> =
        array.elements.iter().filter(|element| !same(element, searched)).cloned().collect();
    Ok(with_elements(array.lower, elements))
}

pub(super) fn array_replace(call: Call<'_>) -> Result<Datum> {
    let Some(array) = nullable_array(&call, 0)? else { return Ok(Datum::Null) };
    let (searched, replacement) = (&call.args[1], &call.args[2]);
    let elements = array
        .elements
        .iter()
        .map(|element| if same(element, searched) { replacement.clone() } else { element.clone() })
        .collect();
    Ok(with_elements(array.lower, elements))
}

/// array_to_string(array, delimiter [, null_string]): NULL elements skipped unless a
/// null string is given.
pub(super) fn array_to_string(call: Call<'_>) -> Result<Datum> {
    if call.args[0].is_null() || call.args[1].is_null() {
        return Ok(Datum::Null);
    }
    let array = array_arg(&call, 0)?;
    let element = call.arg_types[0].array_element().unwrap_or(&SqlType::Text).clone();
    let null_text = call.args.get(2).and_then(Datum::as_text);
    let mut parts = Vec::with_capacity(array.elements.len());
    for item in &array.elements {
        match (item.to_text(&element), null_text) {
            (Some(text), _) => parts.push(text),
            (None, Some(null_text)) => parts.push(null_text.to_string()),
            (None, None) => {}
        }
    }
    let text = parts.join(call.text(1));
    super::check_text_bytes(text.len())?;
    Ok(Datum::Text(text))
}

/// string_to_array(text, delimiter [, null_string]): a NULL delimiter splits into
/// characters, an empty one gives the whole text as one element; fields equal to the
/// null string are NULL.
pub(super) fn string_to_array(call: Call<'_>) -> Result<Datum> {
    let Some(text) = call.args[0].as_text() else { return Ok(Datum::Null) };
    if text.is_empty() {
        return Ok(with_elements(1, Vec::new()));
    }
    let fields: Vec<String> = match call.args[1].as_text() {
        None => text.chars().map(String::from).collect(),
        Some("") => vec![text.to_string()],
        Some(delimiter) => text.split(delimiter).map(str::to_string).collect(),
    };
    let null_text = call.args.get(2).and_then(Datum::as_text);
    let elements = fields
        .into_iter()
        .map(
            |field| {
                if Some(field.as_str()) == null_text {
                    Datum::Null
                } else {
                    Datum::Text(field)
                }
            },
        )
        .collect();
    Ok(with_elements(1, checked(elements)?))
}

/// `@>`: every element of the right array is in the left one (NULL elements match
/// nothing).
pub(super) fn contains(call: Call<'_>) -> Result<Datum> {
    let (left, right) = (array_arg(&call, 0)?, array_arg(&call, 1)?);
    Ok(Datum::Bool(contains_all(left, right)))
}

/// `<@`: the left array is contained in the right one.
pub(super) fn contained(call: Call<'_>) -> Result<Datum> {
    let (left, right) = (array_arg(&call, 0)?, array_arg(&call, 1)?);
    Ok(Datum::Bool(contains_all(right, left)))
}

/// `&&`: the arrays share a (non-NULL) element.
pub(super) fn overlap(call: Call<'_>) -> Result<Datum> {
    let (left, right) = (array_arg(&call, 0)?, array_arg(&call, 1)?);
    let shared = right.elements.iter().any(|item| member(left, item));
    Ok(Datum::Bool(shared))
}

fn member(array: &ArrayValue, item: &Datum) -> bool {
    !item.is_null()
        && array
            .elements
            .iter()
            .any(|element| element.compare(item) == Some(std::cmp::Ordering::Equal))
}

fn contains_all(outer: &ArrayValue, inner: &ArrayValue) -> bool {
    inner.elements.iter().all(|item| member(outer, item))
}
