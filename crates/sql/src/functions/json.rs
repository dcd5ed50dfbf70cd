//! json and jsonb functions and the operators bound to them (`->`, `->>`, `@>`, `<@`, `?`).

use std::sync::Arc;

use super::{count, no_function, Call, Coercion, Signature};
use crate::error::{Result, SqlError};
use crate::types::{
    array_index, escape_json, parse_json, to_json_text, to_jsonb, Datum, JsonKey, JsonKind,
    JsonNode, Jsonb, SqlType,
};

/// Whether `ty` is json or jsonb.
fn is_json(ty: &SqlType) -> bool {
    matches!(ty, SqlType::Json | SqlType::Jsonb)
}

/// One argument of type `target` (an untyped literal is read as one).
pub(super) fn one_json(
    name: &str,
    types: &[SqlType],
    target: SqlType,
    output: SqlType,
) -> Result<Signature> {
    match &types[0] {
        ty if *ty == target || *ty == SqlType::Unknown => {
            Ok(Signature { arguments: vec![Coercion::Implicit(target)], output })
        }
        _ => Err(no_function(name, types)),
    }
}

/// `->` and `->>`: json or jsonb on the left, an integer index or a text key on the right.
pub(super) fn get_signature(name: &str, types: &[SqlType], as_text: bool) -> Result<Signature> {
    let left = match &types[0] {
        ty if is_json(ty) => ty.clone(),
        // Both json's and jsonb's operator would take it (PostgreSQL's 42725).
        SqlType::Unknown => {
            let names: Vec<String> = types.iter().map(SqlType::display_name).collect();
            return Err(SqlError::new(
                "42725",
                format!("function {name}({}) is not unique", names.join(", ")),
            ));
        }
        _ => return Err(no_function(name, types)),
    };
    let key = match &types[1] {
        ty if ty.is_integer() && *ty != SqlType::Int8 => SqlType::Int4,
        ty if ty.is_text() => SqlType::Text,
        _ => return Err(no_function(name, types)),
    };
    let output = if as_text { SqlType::Text } else { left.clone() };
    Ok(Signature { arguments: vec![Coercion::Implicit(left), Coercion::Explicit(key)], output })
}

/// Whether an argument of type `ty` reads as `target` (an untyped literal does; any text
/// type reads as text, a text array as text[], smallint as integer).
pub(super) fn fits(ty: &SqlType, target: &SqlType) -> bool {
    match (ty, target) {
        (SqlType::Unknown, _) => true,
        (SqlType::Array(element), SqlType::Array(_)) => element.is_text(),
        (SqlType::Array(_), _) => false,
        (SqlType::Int2, SqlType::Int4) => true,
        _ => ty == target || (target.is_text() && ty.is_text()),
    }
}

/// jsonb on both sides (`@>`, `<@`), or jsonb and text (`?`).
pub(super) fn jsonb_pair(name: &str, types: &[SqlType], right: SqlType) -> Result<Signature> {
    if !fits(&types[0], &SqlType::Jsonb) || !fits(&types[1], &right) {
        return Err(no_function(name, types));
    }
    Ok(Signature {
        arguments: vec![Coercion::Implicit(SqlType::Jsonb), Coercion::Explicit(right)],
        output: SqlType::Bool,
    })
}

pub(super) fn jsonb(call: &Call<'_>, index: usize) -> Result<Arc<Jsonb>> {
    match call.args.get(index) {
        Some(Datum::Jsonb(value)) => Ok(Arc::clone(value)),
        _ => Err(SqlError::internal("a jsonb argument is bound as jsonb")),
    }
}

fn key<'a>(call: &'a Call<'_>) -> JsonKey<'a> {
    match &call.args[1] {
        Datum::Int(index) => JsonKey::Index(*index),
        other => JsonKey::Field(other.as_text().unwrap_or_default()),
    }
}

/// `->` (`as_text` false) and `->>` (true).
pub(super) fn get(call: Call<'_>, as_text: bool) -> Result<Datum> {
    if call.arg_types[0] == SqlType::Json {
        return json_get(&call, as_text);
    }
    let value = jsonb(&call, 0)?;
    let key = key(&call);
    // PostgreSQL stores a scalar as a one-element array, and its `->` / `->>` with an
    // integer read it so: element 0 (or -1) of a scalar is the scalar.
    let scalar_element = match (&*value, &key) {
        (Jsonb::Object(_) | Jsonb::Array(_), _) | (_, JsonKey::Field(_)) => None,
        (scalar, JsonKey::Index(index)) => array_index(*index, 1).map(|_| scalar),
    };
    Ok(match scalar_element.or_else(|| value.get(&key)) {
        None => Datum::Null,
        Some(found) if as_text => found.as_text().map_or(Datum::Null, Datum::Text),
        Some(found) => Datum::Jsonb(Arc::new(found.clone())),
    })
}

/// json's `->`: the text of the member as it was written (the last of equal keys).
fn json_get(call: &Call<'_>, as_text: bool) -> Result<Datum> {
    let node = parse_json(call.text(0), false)?;
    Ok(match node.get(&key(call)) {
        None => Datum::Null,
        Some(JsonNode { kind: JsonKind::Null, .. }) if as_text => Datum::Null,
        Some(JsonNode { kind: JsonKind::String(text), .. }) if as_text => Datum::Text(text.clone()),
        Some(found) => Datum::Text(found.text.to_string()),
    })
}

pub(super) fn contains(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Bool(jsonb(&call, 0)?.contains(&*jsonb(&call, 1)?)))
}

pub(super) fn contained(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Bool(jsonb(&call, 1)?.contains(&*jsonb(&call, 0)?)))
}

pub(super) fn exists(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Bool(jsonb(&call, 0)?.has_key(call.text(1))))
}

/// The jsonb tree of argument 0 (a json argument is parsed; its keys then deduplicated,
/// which json_typeof and json_array_length do not observe).
fn tree(call: &Call<'_>) -> Result<Arc<Jsonb>> {
    match &call.args[0] {
        Datum::Jsonb(value) => Ok(Arc::clone(value)),
        Datum::Text(text) => Ok(Arc::new(Jsonb::from_node(&parse_json(text, false)?))),
        _ => Err(SqlError::internal("a json argument is bound as json")),
    }
}

pub(super) fn type_name(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(tree(&call)?.type_name().to_string()))
}

pub(super) fn array_length(call: Call<'_>) -> Result<Datum> {
    match &*tree(&call)? {
        Jsonb::Array(items) => count(items.len()),
        Jsonb::Object(_) => Err(SqlError::new("22023", "cannot get array length of a non-array")),
        _ => Err(SqlError::new("22023", "cannot get array length of a scalar")),
    }
}

pub(super) fn pretty(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(jsonb(&call, 0)?.pretty()))
}

pub(super) fn to_json(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(to_json_text(&call.args[0], &call.arg_types[0])))
}

pub(super) fn to_jsonb_value(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Jsonb(Arc::new(to_jsonb(&call.args[0], &call.arg_types[0])?)))
}

/// json_build_array: `[1, "a", null]`.
pub(super) fn build_array(call: Call<'_>) -> Result<Datum> {
    let items: Vec<String> =
        call.args.iter().zip(call.arg_types).map(|(arg, ty)| to_json_text(arg, ty)).collect();
    Ok(Datum::Text(format!("[{}]", items.join(", "))))
}

pub(super) fn build_array_jsonb(call: Call<'_>) -> Result<Datum> {
    let items = call
        .args
        .iter()
        .zip(call.arg_types)
        .map(|(arg, ty)| to_jsonb(arg, ty))
        .collect::<Result<Vec<Jsonb>>>()?;
    Ok(Datum::Jsonb(Arc::new(Jsonb::Array(items))))
}

/// The (key, value) pairs of json_build_object's arguments (`binary`: jsonb's), PostgreSQL's
/// errors for an odd count and a NULL key.
fn object_pairs<'a>(
    call: &'a Call<'_>,
    binary: bool,
) -> Result<Vec<(String, (&'a Datum, &'a SqlType))>> {
    if !call.args.len().is_multiple_of(2) {
        return Err(SqlError::new("22023", "argument list must have even number of elements"));
    }
    let mut pairs = Vec::with_capacity(call.args.len() / 2);
    for index in (0..call.args.len()).step_by(2) {
        let key = &call.args[index];
        let Some(text) = key.to_text(&call.arg_types[index]) else {
            let message = if binary {
                format!("argument {}: key must not be null", index + 1)
            } else {
                format!("argument {} cannot be null", index + 1)
            };
            return Err(SqlError::new("22023", message));
        };
        pairs.push((text, (&call.args[index + 1], &call.arg_types[index + 1])));
    }
    Ok(pairs)
}

/// A json object's text from the call's pairs, with the separators between pairs and
/// between a key and its value.
fn object_text(call: &Call<'_>, between_pairs: &str, after_key: &str) -> Result<Datum> {
    let mut out = String::from("{");
    for (index, (key, (value, ty))) in object_pairs(call, false)?.into_iter().enumerate() {
        if index > 0 {
            out.push_str(between_pairs);
        }
        escape_json(&key, &mut out);
        out.push_str(after_key);
        out.push_str(&to_json_text(value, ty));
    }
    out.push('}');
    Ok(Datum::Text(out))
}

/// json_build_object: `{"a" : 1, "b" : null}`.
pub(super) fn build_object(call: Call<'_>) -> Result<Datum> {
    object_text(&call, ", ", " : ")
}

/// row_to_json of a record (bind/whole_row.rs passes its columns as name, value pairs):
/// `{"a":1,"b":"x"}`, without spaces, the columns in order.
pub(super) fn row_fields(call: Call<'_>) -> Result<Datum> {
    object_text(&call, ",", ":")
}

pub(super) fn build_object_jsonb(call: Call<'_>) -> Result<Datum> {
    let pairs = object_pairs(&call, true)?
        .into_iter()
        .map(|(key, (value, ty))| Ok((key, to_jsonb(value, ty)?)))
        .collect::<Result<Vec<(String, Jsonb)>>>()?;
    Ok(Datum::Jsonb(Arc::new(Jsonb::object(pairs))))
}

/// `jsonb || jsonb`: objects merged (the right's keys win), arrays concatenated, anything
/// else wrapped in a one-element array first.
pub(super) fn concatenate(call: Call<'_>) -> Result<Datum> {
    let (left, right) = (jsonb(&call, 0)?, jsonb(&call, 1)?);
    let value = match (&*left, &*right) {
        (Jsonb::Object(mine), Jsonb::Object(theirs)) => {
            Jsonb::object(mine.iter().chain(theirs).cloned().collect())
        }
        (mine, theirs) => {
            let items = |value: &Jsonb| match value {
                Jsonb::Array(items) => items.clone(),
                other => vec![other.clone()],
            };
            Jsonb::Array([items(mine), items(theirs)].concat())
        }
    };
    Ok(Datum::Jsonb(Arc::new(value)))
}
