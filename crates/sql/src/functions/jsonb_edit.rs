//! json and jsonb paths and edits: `#>` / `#>>` and json[b]_extract_path[_text], `?|` and
//! `?&`, `-` and `#-`, jsonb_set, jsonb_insert and json[b]_strip_nulls, as PostgreSQL's
//! jsonfuncs.c computes them (its setPath / setPathObject / setPathArray walk, with its
//! errors).

use std::sync::Arc;

use super::json::{fits, jsonb};
use super::{no_function, Call, Coercion, Function, Signature};
use crate::error::{Result, SqlError};
use crate::types::Datum;
use crate::types::{
    array_value, escape_json, parse_json, JsonKey, JsonKind, JsonNode, Jsonb, SqlType,
};

const TEXT: SqlType = SqlType::Text;

fn text_array() -> SqlType {
    SqlType::Array(Box::new(SqlType::Text))
}

/// A call whose arguments must read as `targets` (the first `targets.len()` arguments).
fn typed(name: &str, types: &[SqlType], targets: &[SqlType], output: SqlType) -> Result<Signature> {
    if types.len() > targets.len() || !types.iter().zip(targets).all(|(ty, to)| fits(ty, to)) {
        return Err(no_function(name, types));
    }
    let arguments = targets[..types.len()].iter().cloned().map(Coercion::Explicit).collect();
    Ok(Signature { arguments, output })
}

/// `#>` / `#>>`: json or jsonb on the left (an untyped literal could be either: 42725).
fn path_operator_signature(name: &str, types: &[SqlType], as_text: bool) -> Result<Signature> {
    let left = match &types[0] {
        ty @ (SqlType::Json | SqlType::Jsonb) => ty.clone(),
        SqlType::Unknown => {
            let names: Vec<String> = types.iter().map(SqlType::display_name).collect();
            let message = format!("function {name}({}) is not unique", names.join(", "));
            return Err(SqlError::new("42725", message));
        }
        _ => return Err(no_function(name, types)),
    };
    let output = if as_text { TEXT } else { left.clone() };
    typed(name, types, &[left, text_array()], output)
}

/// json[b]_extract_path[_text](from, VARIADIC path text[]).
fn extract_path_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let json = if name.starts_with("jsonb") { SqlType::Jsonb } else { SqlType::Json };
    let output = if name.ends_with("_text") { TEXT } else { json.clone() };
    let mut targets = vec![json];
    targets.resize(types.len(), TEXT);
    typed(name, types, &targets, output)
}

/// jsonb - text, jsonb - text[], jsonb - integer (an untyped literal reads as text).
fn delete_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let right = match &types[1] {
        ty if ty.is_integer() && *ty != SqlType::Int8 => SqlType::Int4,
        SqlType::Array(_) => text_array(),
        _ => TEXT,
    };
    typed(name, types, &[SqlType::Jsonb, right], SqlType::Jsonb)
}

/// jsonb_set and jsonb_insert: (jsonb, text[], jsonb [, boolean]).
fn set_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let targets = [SqlType::Jsonb, text_array(), SqlType::Jsonb, SqlType::Bool];
    typed(name, types, &targets, SqlType::Jsonb)
}

/// The entries of this module (the registry's table).
pub(super) static JSONB_EDIT: &[Function] = &[
    function!(
        &["jsonb_extract_path_op"],
        2..=2,
        |n, t| path_operator_signature(n, t, false),
        |call| extract_path(&call, false),
        "'{\"a\":[1]}'::jsonb, '{a,0}'"
    ),
    function!(
        &["jsonb_extract_path_text_op"],
        2..=2,
        |n, t| path_operator_signature(n, t, true),
        |call| extract_path(&call, true),
        "'{\"a\":[1]}'::json, '{a,0}'"
    ),
    function!(
        &["jsonb_extract_path", "json_extract_path"],
        2..=usize::MAX,
        extract_path_signature,
        |call| extract_path(&call, false),
        "'{\"a\":[1]}', 'a', '0'"
    ),
    function!(
        &["jsonb_extract_path_text", "json_extract_path_text"],
        2..=usize::MAX,
        extract_path_signature,
        |call| extract_path(&call, true),
        "'{\"a\":[1]}', 'a', '0'"
    ),
    function!(
        &["jsonb_exists_any"],
        2..=2,
        |n, t| typed(n, t, &[SqlType::Jsonb, text_array()], SqlType::Bool),
        |call| exists_keys(&call, false),
        "'{\"a\":1}', '{a,b}'"
    ),
    function!(
        &["jsonb_exists_all"],
        2..=2,
        |n, t| typed(n, t, &[SqlType::Jsonb, text_array()], SqlType::Bool),
        |call| exists_keys(&call, true),
        "'{\"a\":1}', '{a,b}'"
    ),
    function!(&["jsonb_delete"], 2..=2, delete_signature, delete, "'{\"a\":1}'::jsonb, 'a'"),
    function!(
        &["jsonb_delete_path"],
        2..=2,
        |n, t| typed(n, t, &[SqlType::Jsonb, text_array()], SqlType::Jsonb),
        delete_path,
        "'{\"a\":[1]}', '{a,0}'"
    ),
    function!(&["jsonb_set"], 3..=4, set_signature, set, "'{\"a\":1}', '{b}', '2'"),
    function!(&["jsonb_insert"], 3..=4, set_signature, insert, "'[1]', '{0}', '2'"),
    function!(
        &["jsonb_strip_nulls"],
        1..=1,
        |n, t| typed(n, t, &[SqlType::Jsonb], SqlType::Jsonb),
        |call| Ok(Datum::Jsonb(Arc::new(strip_nulls(&*jsonb(&call, 0)?)))),
        "'{\"a\":null}'"
    ),
    function!(
        &["json_strip_nulls"],
        1..=1,
        |n, t| typed(n, t, &[SqlType::Json], SqlType::Json),
        json_strip_nulls,
        "'{\"a\":null}'"
    ),
];

/// The elements of a text[] argument (None: a NULL element).
fn path<'a>(call: &'a Call<'_>, index: usize) -> Result<Vec<Option<&'a str>>> {
    let array = array_value(&call.args[index])?;
    Ok(array.elements.iter().map(Datum::as_text).collect())
}

/// The path of a call: a text[] argument (the operators) or the variadic text arguments.
fn call_path<'a>(call: &'a Call<'_>) -> Result<Vec<Option<&'a str>>> {
    if matches!(call.arg_types.get(1), Some(SqlType::Array(_))) {
        return path(call, 1);
    }
    Ok(call.args[1..].iter().map(Datum::as_text).collect())
}

/// C's strtol / strtoint as PostgreSQL applies them to a path element: leading white
/// space, a sign, decimal digits and nothing after; None when that fails or the value is
/// outside int4.
fn path_integer(text: &str) -> Option<i32> {
    let trimmed = text.trim_start_matches([' ', '\t', '\n', '\u{b}', '\u{c}', '\r']);
    let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    trimmed.strip_prefix('+').unwrap_or(trimmed).parse::<i32>().ok()
}

/// A path step as `->`'s key: into an array an integer index (None when the step is not
/// one), into anything else a field name.
fn step_key(is_array: bool, step: &str) -> Option<JsonKey<'_>> {
    if is_array {
        path_integer(step).map(|index| JsonKey::Index(i64::from(index)))
    } else {
        Some(JsonKey::Field(step))
    }
}

/// `#>`, `#>>` and the extract_path functions: a NULL path element gives NULL; an array
/// step that is not an integer or out of range, or a step into a scalar, gives NULL.
fn extract_path(call: &Call<'_>, as_text: bool) -> Result<Datum> {
    let steps = call_path(call)?;
    let Some(steps) = steps.into_iter().collect::<Option<Vec<&str>>>() else {
        return Ok(Datum::Null);
    };
    if call.arg_types[0] == SqlType::Json {
        return json_extract_path(call.text(0), &steps, as_text);
    }
    let mut value = &*jsonb(call, 0)?;
    for step in steps {
        let found =
            step_key(matches!(value, Jsonb::Array(_)), step).and_then(|key| value.get(&key));
        let Some(found) = found else { return Ok(Datum::Null) };
        value = found;
    }
    Ok(if as_text {
        value.as_text().map_or(Datum::Null, Datum::Text)
    } else {
        Datum::Jsonb(Arc::new(value.clone()))
    })
}

/// json's path extraction: the text of the value as written (the last of equal keys).
fn json_extract_path(text: &str, steps: &[&str], as_text: bool) -> Result<Datum> {
    let root = parse_json(text, false)?;
    if steps.is_empty() && !as_text {
        return Ok(Datum::Text(text.to_string()));
    }
    let mut node = &root;
    for step in steps {
        let is_array = matches!(node.kind, JsonKind::Array(_));
        let Some(found) = step_key(is_array, step).and_then(|key| node.get(&key)) else {
            return Ok(Datum::Null);
        };
        node = found;
    }
    Ok(match &node.kind {
        JsonKind::Null if as_text => Datum::Null,
        JsonKind::String(unescaped) if as_text => Datum::Text(unescaped.clone()),
        _ if steps.is_empty() => Datum::Text(text.to_string()),
        _ => Datum::Text(node.text.to_string()),
    })
}

/// `?|` (any) and `?&` (all): NULL elements of the keys are skipped.
fn exists_keys(call: &Call<'_>, all: bool) -> Result<Datum> {
    let value = jsonb(call, 0)?;
    let keys = path(call, 1)?;
    let mut present = keys.into_iter().flatten().map(|key| value.has_key(key));
    Ok(Datum::Bool(if all { present.all(|found| found) } else { present.any(|found| found) }))
}

fn invalid_parameter(message: &str) -> SqlError {
    SqlError::new("22023", message)
}

/// `jsonb - text`, `jsonb - text[]` (an object's keys, an array's string elements) and
/// `jsonb - integer` (an array's element; negative counts from the end).
fn delete(call: Call<'_>) -> Result<Datum> {
    let value = jsonb(&call, 0)?;
    if !matches!(&*value, Jsonb::Object(_) | Jsonb::Array(_)) {
        return Err(invalid_parameter("cannot delete from scalar"));
    }
    let result = match (&*value, &call.args[1]) {
        (Jsonb::Object(_), Datum::Int(_)) => {
            return Err(invalid_parameter("cannot delete from object using integer index"))
        }
        (Jsonb::Array(items), Datum::Int(index)) => {
            let mut items = items.clone();
            let length = i64::try_from(items.len()).expect("an array's length fits i64");
            let position = match *index {
                index if index < 0 && -index > length => length,
                index if index < 0 => length + index,
                index => index,
            };
            if let Ok(position) = usize::try_from(position) {
                if position < items.len() {
                    items.remove(position);
                }
            }
            Jsonb::Array(items)
        }
        (container, Datum::Array(_)) => {
            let keys: Vec<&str> = path(&call, 1)?.into_iter().flatten().collect();
            remove_keys(container, &keys)
        }
        (container, key) => remove_keys(container, &[key.as_text().unwrap_or_default()]),
    };
    Ok(Datum::Jsonb(Arc::new(result)))
}

/// An object without `keys`, or an array without its string elements equal to one.
fn remove_keys(container: &Jsonb, keys: &[&str]) -> Jsonb {
    match container {
        Jsonb::Object(pairs) => Jsonb::Object(
            pairs.iter().filter(|(key, _)| !keys.contains(&key.as_str())).cloned().collect(),
        ),
        Jsonb::Array(items) => Jsonb::Array(
            items
                .iter()
                .filter(
                    |item| !matches!(item, Jsonb::String(text) if keys.contains(&text.as_str())),
                )
                .cloned()
                .collect(),
        ),
        scalar => scalar.clone(),
    }
}

/// What setPath does at the path's end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Edit {
    /// jsonb_set with create_if_missing false.
    Replace,
    /// jsonb_set: replace, or add a missing last key / element.
    Create,
    Delete,
    InsertBefore,
    InsertAfter,
}

impl Edit {
    fn adds(self) -> bool {
        matches!(self, Edit::Create | Edit::InsertBefore | Edit::InsertAfter)
    }
}

fn is_scalar(value: &Jsonb) -> bool {
    !matches!(value, Jsonb::Object(_) | Jsonb::Array(_))
}

fn is_empty(value: &Jsonb) -> bool {
    matches!(value, Jsonb::Object(pairs) if pairs.is_empty())
        || matches!(value, Jsonb::Array(items) if items.is_empty())
}

/// jsonb_set(target, path, new_value [, create_if_missing true]).
pub(super) fn set(call: Call<'_>) -> Result<Datum> {
    let target = jsonb(&call, 0)?;
    let create = !matches!(call.args.get(3), Some(Datum::Bool(false)));
    if is_scalar(&target) {
        return Err(invalid_parameter("cannot set path in scalar"));
    }
    let steps = path(&call, 1)?;
    if (is_empty(&target) && !create) || steps.is_empty() {
        return Ok(Datum::Jsonb(target));
    }
    let new = jsonb(&call, 2)?;
    let edit = if create { Edit::Create } else { Edit::Replace };
    Ok(Datum::Jsonb(Arc::new(set_path(&target, &steps, 0, &new, edit)?)))
}

/// jsonb_insert(target, path, new_value [, insert_after false]).
fn insert(call: Call<'_>) -> Result<Datum> {
    let target = jsonb(&call, 0)?;
    let after = matches!(call.args.get(3), Some(Datum::Bool(true)));
    if is_scalar(&target) {
        return Err(invalid_parameter("cannot set path in scalar"));
    }
    let steps = path(&call, 1)?;
    if steps.is_empty() {
        return Ok(Datum::Jsonb(target));
    }
    let new = jsonb(&call, 2)?;
    let edit = if after { Edit::InsertAfter } else { Edit::InsertBefore };
    Ok(Datum::Jsonb(Arc::new(set_path(&target, &steps, 0, &new, edit)?)))
}

/// `jsonb #- text[]`.
pub(super) fn delete_path(call: Call<'_>) -> Result<Datum> {
    let target = jsonb(&call, 0)?;
    if is_scalar(&target) {
        return Err(invalid_parameter("cannot delete path in scalar"));
    }
    let steps = path(&call, 1)?;
    if is_empty(&target) || steps.is_empty() {
        return Ok(Datum::Jsonb(target));
    }
    Ok(Datum::Jsonb(Arc::new(set_path(&target, &steps, 0, &Jsonb::Null, Edit::Delete)?)))
}

/// setPath: the value with the edit applied at `steps[level..]`; a scalar on the way is
/// kept as it is (the path does not match).
fn set_path(
    value: &Jsonb,
    steps: &[Option<&str>],
    level: usize,
    new: &Jsonb,
    edit: Edit,
) -> Result<Jsonb> {
    assert!(level < steps.len(), "setPath is called within the path");
    let Some(step) = steps[level] else {
        return Err(SqlError::new(
            "22004",
            format!("path element at position {} is null", level + 1),
        ));
    };
    match value {
        Jsonb::Object(pairs) => set_path_object(pairs, step, steps, level, new, edit),
        Jsonb::Array(items) => set_path_array(items, step, steps, level, new, edit),
        scalar => Ok(scalar.clone()),
    }
}

fn set_path_object(
    pairs: &[(String, Jsonb)],
    step: &str,
    steps: &[Option<&str>],
    level: usize,
    new: &Jsonb,
    edit: Edit,
) -> Result<Jsonb> {
    let last = level + 1 == steps.len();
    let mut out = Vec::with_capacity(pairs.len() + 1);
    let mut done = false;
    for (key, value) in pairs {
        if done || key != step {
            out.push((key.clone(), value.clone()));
            continue;
        }
        done = true;
        if !last {
            out.push((key.clone(), set_path(value, steps, level + 1, new, edit)?));
            continue;
        }
        if matches!(edit, Edit::InsertBefore | Edit::InsertAfter) {
            return Err(invalid_parameter("cannot replace existing key"));
        }
        if edit != Edit::Delete {
            out.push((key.clone(), new.clone()));
        }
    }
    if !done && last && edit.adds() {
        out.push((step.to_string(), new.clone()));
    }
    Ok(Jsonb::object(out))
}

fn set_path_array(
    items: &[Jsonb],
    step: &str,
    steps: &[Option<&str>],
    level: usize,
    new: &Jsonb,
    edit: Edit,
) -> Result<Jsonb> {
    let Some(index) = path_integer(step) else {
        return Err(SqlError::new(
            "22P02",
            format!("path element at position {} is not an integer: \"{step}\"", level + 1),
        ));
    };
    let length = i64::try_from(items.len()).expect("an array's length fits i64");
    let index = i64::from(index);
    // Before the start (setPathArray's INT_MIN): an added value is prepended.
    let before_start = index < 0 && -index > length;
    let position = if index < 0 { length + index } else { index.min(length) };
    let last = level + 1 == steps.len();
    let mut out = Vec::with_capacity(items.len() + 1);
    let mut done = false;
    if (before_start || items.is_empty()) && last && edit.adds() {
        out.push(new.clone());
        done = true;
    }
    for (item, at) in items.iter().zip(0i64..) {
        if before_start || at != position {
            out.push(item.clone());
            continue;
        }
        done = true;
        if !last {
            out.push(set_path(item, steps, level + 1, new, edit)?);
            continue;
        }
        match edit {
            Edit::InsertBefore => out.extend([new.clone(), item.clone()]),
            Edit::InsertAfter => out.extend([item.clone(), new.clone()]),
            Edit::Replace | Edit::Create => out.push(new.clone()),
            Edit::Delete => {}
        }
    }
    if !done && last && edit.adds() {
        out.push(new.clone());
    }
    Ok(Jsonb::Array(out))
}

/// jsonb_strip_nulls: object members whose value is null, at every level (array
/// elements stay).
fn strip_nulls(value: &Jsonb) -> Jsonb {
    match value {
        Jsonb::Object(pairs) => Jsonb::Object(
            pairs
                .iter()
                .filter(|(_, value)| !matches!(value, Jsonb::Null))
                .map(|(key, value)| (key.clone(), strip_nulls(value)))
                .collect(),
        ),
        Jsonb::Array(items) => Jsonb::Array(items.iter().map(strip_nulls).collect()),
        scalar => scalar.clone(),
    }
}

/// json_strip_nulls: the json rewritten without white space, strings re-escaped, numbers
/// as written, duplicate keys kept.
fn json_strip_nulls(call: Call<'_>) -> Result<Datum> {
    let root = parse_json(call.text(0), false)?;
    let mut out = String::with_capacity(root.text.len());
    write_stripped(&root, &mut out);
    Ok(Datum::Text(out))
}

fn write_stripped(node: &JsonNode<'_>, out: &mut String) {
    match &node.kind {
        JsonKind::Object(pairs) => {
            out.push('{');
            let kept = pairs.iter().filter(|(_, value)| !matches!(value.kind, JsonKind::Null));
            for (index, (key, value)) in kept.enumerate() {
                if index > 0 {
                    out.push(',');
                }
                escape_json(key, out);
                out.push(':');
                write_stripped(value, out);
            }
            out.push('}');
        }
        JsonKind::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_stripped(item, out);
            }
            out.push(']');
        }
        JsonKind::String(text) => escape_json(text, out),
        JsonKind::Null => out.push_str("null"),
        JsonKind::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        JsonKind::Number(text) => out.push_str(text),
    }
}
