//! jsonb_set_lax and json[b]_object, as PostgreSQL's jsonfuncs.c, jsonb.c and json.c
//! compute them (their checks in their order, their errors).
//!
//! json[b]_object take a one- or two-dimensional text array; tierdb's arrays have one
//! dimension, so an untyped literal is read here (`{{a,1},{b,2}}`) rather than by the
//! array type.

use std::sync::Arc;

use super::json::fits;
use super::jsonb_edit::{delete_path, set};
use super::{no_function, Call, Coercion, Function, Signature};
use crate::error::{Result, SqlError};
use crate::types::{array_value, escape_json, parse_array, Datum, Jsonb, SqlType};

fn text_array() -> SqlType {
    SqlType::Array(Box::new(SqlType::Text))
}

/// jsonb_set_lax(target jsonb, path text[], new_value jsonb [, create_if_missing boolean
/// [, null_value_treatment text]]).
fn set_lax_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let targets = [SqlType::Jsonb, text_array(), SqlType::Jsonb, SqlType::Bool, SqlType::Text];
    if !types.iter().zip(&targets).all(|(ty, target)| fits(ty, target)) {
        return Err(no_function(name, types));
    }
    let arguments = targets[..types.len()].iter().cloned().map(Coercion::Explicit).collect();
    Ok(Signature { arguments, output: SqlType::Jsonb })
}

fn treatment_error() -> SqlError {
    SqlError::new(
        "22023",
        "null_value_treatment must be \"delete_key\", \"return_target\", \"use_json_null\", or \"raise_exception\"",
    )
}

/// jsonb_set_lax: jsonb_set, except that an SQL NULL new value is handled as
/// null_value_treatment says (default `use_json_null`).
fn set_lax(mut call: Call<'_>) -> Result<Datum> {
    let null_at = |index: usize| call.args.get(index).is_some_and(Datum::is_null);
    if null_at(0) || null_at(1) || null_at(3) {
        return Ok(Datum::Null);
    }
    if null_at(4) {
        return Err(treatment_error());
    }
    if !null_at(2) {
        return set(call);
    }
    let treatment = call.args.get(4).and_then(Datum::as_text).unwrap_or("use_json_null");
    match treatment {
        "raise_exception" => Err(SqlError::new("22004", "JSON value must not be null")),
        "use_json_null" => {
            call.args[2] = Datum::Jsonb(Arc::new(Jsonb::Null));
            set(call)
        }
        "delete_key" => delete_path(call),
        "return_target" => Ok(call.args.swap_remove(0)),
        _ => Err(treatment_error()),
    }
}

/// json[b]_object(text[]) and json[b]_object(keys text[], values text[]): an untyped
/// literal is read here (it may have two dimensions).
fn object_signature(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    let mut arguments = Vec::with_capacity(types.len());
    for ty in types {
        arguments.push(match ty {
            SqlType::Unknown => Coercion::Explicit(SqlType::Text),
            SqlType::Array(element) if element.is_text() => Coercion::Explicit(text_array()),
            _ => return Err(no_function(name, types)),
        });
    }
    Ok(Signature { arguments, output })
}

/// A text array argument by dimensions (PostgreSQL's ARR_NDIM): none for `{}`.
enum Shape {
    Empty,
    One(Vec<Option<String>>),
    Two(Vec<Vec<Option<String>>>),
}

fn subscripts_error() -> SqlError {
    SqlError::new("2202E", "wrong number of array subscripts")
}

fn one_dimension(elements: Vec<Option<String>>) -> Shape {
    if elements.is_empty() {
        Shape::Empty
    } else {
        Shape::One(elements)
    }
}

fn texts(datum: &Datum) -> Result<Vec<Option<String>>> {
    let array = array_value(datum)?;
    Ok(array.elements.iter().map(|item| item.as_text().map(str::to_string)).collect())
}

/// Argument `index`'s shape: a text[] value, or an untyped literal read as one.
fn shape(call: &Call<'_>, index: usize) -> Result<Shape> {
    match &call.args[index] {
        Datum::Text(text) => parse_shape(text),
        datum => Ok(one_dimension(texts(datum)?)),
    }
}

/// A text array literal of one or two dimensions (a third is 2202E, as jsonb_object says).
fn parse_shape(text: &str) -> Result<Shape> {
    let trimmed = text.trim();
    let inner = trimmed.strip_prefix('{').map(str::trim_start);
    let Some(inner) = inner.filter(|inner| inner.starts_with('{')) else {
        return Ok(one_dimension(texts(&parse_array(text, &SqlType::Text)?)?));
    };
    let malformed = || SqlError::new("22P02", format!("malformed array literal: \"{text}\""));
    let mut rows: Vec<Vec<Option<String>>> = Vec::new();
    let mut rest = inner;
    loop {
        rest = rest.trim_start();
        if !rest.starts_with('{') {
            return Err(malformed());
        }
        if rest[1..].trim_start().starts_with('{') {
            return Err(subscripts_error());
        }
        let end = sub_array_end(rest).ok_or_else(malformed)?;
        rows.push(texts(&parse_array(&rest[..=end], &SqlType::Text)?)?);
        rest = rest[end + 1..].trim_start();
        match rest.as_bytes().first() {
            Some(b',') => rest = &rest[1..],
            Some(b'}') if rest[1..].trim().is_empty() => break,
            _ => return Err(malformed()),
        }
    }
    if rows.iter().any(|row| row.len() != rows[0].len()) {
        return Err(malformed());
    }
    Ok(Shape::Two(rows))
}

/// The byte offset of the `}` closing the sub-array `text` starts with (quotes and
/// backslashes respected).
fn sub_array_end(text: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (offset, character) in text.char_indices().skip(1) {
        match character {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(offset),
            _ => {}
        }
    }
    None
}

/// The (key, value) pairs of a json[b]_object call, PostgreSQL's checks in its order.
fn object_pairs(call: &Call<'_>) -> Result<Vec<(String, Option<String>)>> {
    let pairs: Vec<(Option<String>, Option<String>)> = if call.args.len() == 2 {
        let (keys, values) = match (shape(call, 0)?, shape(call, 1)?) {
            (Shape::Empty, Shape::Empty) => return Ok(Vec::new()),
            (Shape::One(keys), Shape::One(values)) => (keys, values),
            _ => return Err(subscripts_error()),
        };
        if keys.len() != values.len() {
            return Err(SqlError::new("2202E", "mismatched array dimensions"));
        }
        keys.into_iter().zip(values).collect()
    } else {
        match shape(call, 0)? {
            Shape::Empty => return Ok(Vec::new()),
            Shape::One(items) if items.len() % 2 != 0 => {
                return Err(SqlError::new("2202E", "array must have even number of elements"))
            }
            Shape::One(items) => {
                items.chunks(2).map(|pair| (pair[0].clone(), pair[1].clone())).collect()
            }
            Shape::Two(rows) if rows[0].len() != 2 => {
                return Err(SqlError::new("2202E", "array must have two columns"))
            }
            Shape::Two(rows) => {
                rows.into_iter().map(|row| (row[0].clone(), row[1].clone())).collect()
            }
        }
    };
    pairs
        .into_iter()
        .map(|(key, value)| {
            let key =
                key.ok_or_else(|| SqlError::new("22004", "null value not allowed for object key"))?;
            Ok((key, value))
        })
        .collect()
}

fn jsonb_object(call: Call<'_>) -> Result<Datum> {
    let pairs = object_pairs(&call)?
        .into_iter()
        .map(|(key, value)| (key, value.map_or(Jsonb::Null, Jsonb::String)))
        .collect();
    Ok(Datum::Jsonb(Arc::new(Jsonb::object(pairs))))
}

/// json_object: `{"a" : "1", "b" : null}`, duplicate keys kept.
fn json_object(call: Call<'_>) -> Result<Datum> {
    let mut out = String::from("{");
    for (index, (key, value)) in object_pairs(&call)?.into_iter().enumerate() {
        if index > 0 {
            out.push_str(", ");
        }
        escape_json(&key, &mut out);
        out.push_str(" : ");
        match value {
            Some(value) => escape_json(&value, &mut out),
            None => out.push_str("null"),
        }
    }
    out.push('}');
    Ok(Datum::Text(out))
}

/// The entries of this module (the registry's table).
pub(super) static JSONB_OBJECT: &[Function] = &[
    function!(
        &["jsonb_set_lax"],
        3..=5,
        set_lax_signature,
        set_lax,
        "'{\"a\":1}', '{a}', NULL, true, 'delete_key'",
        non_strict
    ),
    function!(
        &["jsonb_object"],
        1..=2,
        |n, t| object_signature(n, t, SqlType::Jsonb),
        jsonb_object,
        "'{{a,1},{b,2}}'"
    ),
    function!(
        &["json_object"],
        1..=2,
        |n, t| object_signature(n, t, SqlType::Json),
        json_object,
        "'{a,b}', '{1,2}'"
    ),
];
