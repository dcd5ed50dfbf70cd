//! The rows of the json and jsonb set-returning functions (json[b]_array_elements[_text],
//! json[b]_object_keys, json[b]_each[_text]) with PostgreSQL's errors for the wrong kind
//! of value. A json value keeps its duplicate keys and each member's text as written.

use std::sync::Arc;

use crate::error::{Result, SqlError};
use crate::types::{parse_json, parse_text, ArrayValue, Datum, JsonKind, JsonNode, Jsonb, SqlType};

/// What a json set-returning function yields per element (json_each in FROM is two
/// calls in step: its keys and its values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonRows {
    /// json[b]_array_elements.
    Elements,
    /// json[b]_array_elements_text.
    ElementsText,
    /// json[b]_object_keys.
    Keys,
    /// json[b]_each and json[b]_each_text (`text`): the keys.
    EachKeys { text: bool },
    /// json[b]_each: the values.
    EachValues,
    /// json[b]_each_text: the values as text.
    EachTexts,
}

/// The function's name, for messages.
fn name(rows: JsonRows, json: bool) -> String {
    let base = match rows {
        JsonRows::Elements => "array_elements",
        JsonRows::ElementsText => "array_elements_text",
        JsonRows::Keys => "object_keys",
        JsonRows::EachKeys { text: false } | JsonRows::EachValues => "each",
        JsonRows::EachKeys { text: true } | JsonRows::EachTexts => "each_text",
    };
    format!("{}_{base}", if json { "json" } else { "jsonb" })
}

fn invalid(message: String) -> SqlError {
    SqlError::new("22023", message)
}

/// The rows of one call on `value` (a json text or a jsonb datum; not NULL).
pub fn json_set_rows(rows: JsonRows, json: bool, value: &Datum) -> Result<Vec<Datum>> {
    match value {
        Datum::Jsonb(tree) => jsonb_rows(rows, tree),
        Datum::Text(text) if json => json_rows(rows, &parse_json(text, false)?),
        _ => Err(SqlError::internal("a json set function's argument is json or jsonb")),
    }
}

fn jsonb_rows(rows: JsonRows, value: &Jsonb) -> Result<Vec<Datum>> {
    let text = |value: &Jsonb| value.as_text().map_or(Datum::Null, Datum::Text);
    match (rows, value) {
        (JsonRows::Elements, Jsonb::Array(items)) => {
            Ok(items.iter().map(|item| Datum::Jsonb(Arc::new(item.clone()))).collect())
        }
        (JsonRows::ElementsText, Jsonb::Array(items)) => Ok(items.iter().map(text).collect()),
        (JsonRows::Elements | JsonRows::ElementsText, Jsonb::Object(_)) => {
            Err(invalid("cannot extract elements from an object".into()))
        }
        (JsonRows::Elements | JsonRows::ElementsText, _) => {
            Err(invalid("cannot extract elements from a scalar".into()))
        }
        (JsonRows::Keys | JsonRows::EachKeys { .. }, Jsonb::Object(pairs)) => {
            Ok(pairs.iter().map(|(key, _)| Datum::Text(key.clone())).collect())
        }
        (JsonRows::EachValues, Jsonb::Object(pairs)) => {
            Ok(pairs.iter().map(|(_, value)| Datum::Jsonb(Arc::new(value.clone()))).collect())
        }
        (JsonRows::EachTexts, Jsonb::Object(pairs)) => {
            Ok(pairs.iter().map(|(_, value)| text(value)).collect())
        }
        (JsonRows::Keys, Jsonb::Array(_)) => {
            Err(invalid(format!("cannot call {} on an array", name(rows, false))))
        }
        (JsonRows::Keys, _) => {
            Err(invalid(format!("cannot call {} on a scalar", name(rows, false))))
        }
        _ => Err(invalid(format!("cannot call {} on a non-object", name(rows, false)))),
    }
}

/// json's text of a member for the `_text` functions: a string unescaped, null as NULL.
fn node_text(node: &JsonNode<'_>) -> Datum {
    match &node.kind {
        JsonKind::Null => Datum::Null,
        JsonKind::String(text) => Datum::Text(text.clone()),
        _ => Datum::Text(node.text.to_string()),
    }
}

fn json_rows(rows: JsonRows, node: &JsonNode<'_>) -> Result<Vec<Datum>> {
    let own = |node: &JsonNode<'_>| Datum::Text(node.text.to_string());
    match (rows, &node.kind) {
        (JsonRows::Elements, JsonKind::Array(items)) => Ok(items.iter().map(own).collect()),
        (JsonRows::ElementsText, JsonKind::Array(items)) => {
            Ok(items.iter().map(node_text).collect())
        }
        (JsonRows::Elements | JsonRows::ElementsText, JsonKind::Object(_)) => {
            Err(invalid(format!("cannot call {} on a non-array", name(rows, true))))
        }
        (JsonRows::Elements | JsonRows::ElementsText | JsonRows::Keys, _)
            if !matches!(node.kind, JsonKind::Array(_) | JsonKind::Object(_)) =>
        {
            Err(invalid(format!("cannot call {} on a scalar", name(rows, true))))
        }
        (JsonRows::Keys | JsonRows::EachKeys { .. }, JsonKind::Object(pairs)) => {
            Ok(pairs.iter().map(|(key, _)| Datum::Text(key.clone())).collect())
        }
        (JsonRows::EachValues, JsonKind::Object(pairs)) => {
            Ok(pairs.iter().map(|(_, value)| own(value)).collect())
        }
        (JsonRows::EachTexts, JsonKind::Object(pairs)) => {
            Ok(pairs.iter().map(|(_, value)| node_text(value)).collect())
        }
        (JsonRows::Keys, _) => {
            Err(invalid(format!("cannot call {} on an array", name(rows, true))))
        }
        (_, JsonKind::Array(_)) => Err(invalid("cannot deconstruct an array as an object".into())),
        _ => Err(invalid("cannot deconstruct a scalar".into())),
    }
}

/// One member of an object as json[b]_to_record[set] converts it (PostgreSQL's
/// populate_record): its text (as written for json, jsonb's output for jsonb), a string's
/// unescaped text, an array's elements, and its jsonb value.
struct Member {
    text: String,
    string: Option<String>,
    items: Option<Vec<Member>>,
    value: Jsonb,
}

impl Member {
    fn of_jsonb(value: &Jsonb) -> Member {
        Member {
            text: value.output(),
            string: match value {
                Jsonb::String(text) => Some(text.clone()),
                _ => None,
            },
            items: match value {
                Jsonb::Array(items) => Some(items.iter().map(Member::of_jsonb).collect()),
                _ => None,
            },
            value: value.clone(),
        }
    }

    fn of_json(node: &JsonNode<'_>) -> Member {
        Member {
            text: node.text.to_string(),
            string: match &node.kind {
                JsonKind::String(text) => Some(text.clone()),
                _ => None,
            },
            items: match &node.kind {
                JsonKind::Array(items) => Some(items.iter().map(Member::of_json).collect()),
                _ => None,
            },
            value: Jsonb::from_node(node),
        }
    }

    /// The member as a value of `ty` (SQL NULL for JSON null).
    fn populate(&self, ty: &SqlType) -> Result<Datum> {
        if matches!(self.value, Jsonb::Null) {
            return Ok(Datum::Null);
        }
        match ty {
            SqlType::Jsonb => Ok(Datum::Jsonb(Arc::new(self.value.clone()))),
            SqlType::Json => Ok(Datum::Text(self.text.clone())),
            SqlType::Array(element) => {
                let Some(items) = &self.items else {
                    return Err(SqlError::new("22P02", "expected JSON array"));
                };
                let mut elements = Vec::with_capacity(items.len());
                for item in items {
                    if item.items.is_some() && !matches!(**element, SqlType::Json | SqlType::Jsonb)
                    {
                        return Err(SqlError::unsupported(
                            "multidimensional arrays are not supported",
                        ));
                    }
                    elements.push(item.populate(element)?);
                }
                Ok(Datum::Array(Arc::new(ArrayValue::new(elements))))
            }
            _ => parse_text(self.string.as_deref().unwrap_or(&self.text), ty),
        }
    }
}

/// The objects json[b]_to_record (`set` false: the one object) or json[b]_to_recordset
/// (the array's objects) reads, each as its members.
fn record_objects(set: bool, json: bool, value: &Datum) -> Result<Vec<Vec<(String, Member)>>> {
    let tree;
    let node;
    let (kind, items): (&str, Vec<Vec<(String, Member)>>) = match value {
        Datum::Jsonb(value) => {
            tree = Arc::clone(value);
            jsonb_objects(&tree)
        }
        Datum::Text(text) if json => {
            node = parse_json(text, false)?;
            json_objects(&node)
        }
        _ => return Err(SqlError::internal("a json record function's argument is json or jsonb")),
    };
    let function = if json { "json_to_recordset" } else { "jsonb_to_recordset" };
    match (set, kind) {
        (false, "object") | (true, "array") => Ok(items),
        (false, "array" | "array of others") => {
            Err(invalid("cannot call populate_composite on an array".into()))
        }
        (false, _) => Err(invalid("cannot call populate_composite on a scalar".into())),
        (true, "array of others") => {
            Err(invalid(format!("argument of {function} must be an array of objects")))
        }
        (true, _) if !json => Err(invalid(format!("cannot call {function} on a non-array"))),
        (true, "object") => Err(invalid(format!("cannot call {function} on an object"))),
        (true, _) => Err(invalid(format!("cannot call {function} on a scalar"))),
    }
}

/// What a value is ("object", "array", "array of others", "scalar") and its objects.
fn jsonb_objects(value: &Jsonb) -> (&'static str, Vec<Vec<(String, Member)>>) {
    let members = |pairs: &[(String, Jsonb)]| {
        pairs.iter().map(|(key, value)| (key.clone(), Member::of_jsonb(value))).collect()
    };
    match value {
        Jsonb::Object(pairs) => ("object", vec![members(pairs)]),
        Jsonb::Array(items) => {
            let mut objects = Vec::with_capacity(items.len());
            for item in items {
                let Jsonb::Object(pairs) = item else { return ("array of others", Vec::new()) };
                objects.push(members(pairs));
            }
            ("array", objects)
        }
        _ => ("scalar", Vec::new()),
    }
}

fn json_objects(node: &JsonNode<'_>) -> (&'static str, Vec<Vec<(String, Member)>>) {
    let members = |pairs: &[(String, JsonNode<'_>)]| {
        pairs.iter().map(|(key, value)| (key.clone(), Member::of_json(value))).collect()
    };
    match &node.kind {
        JsonKind::Object(pairs) => ("object", vec![members(pairs)]),
        JsonKind::Array(items) => {
            let mut objects = Vec::with_capacity(items.len());
            for item in items {
                let JsonKind::Object(pairs) = &item.kind else {
                    return ("array of others", Vec::new());
                };
                objects.push(members(pairs));
            }
            ("array", objects)
        }
        _ => ("scalar", Vec::new()),
    }
}

/// The values of column `key` (of type `ty`) of json[b]_to_record[set]'s rows: a missing
/// key is NULL, and of equal keys in json the last counts.
pub fn json_record_rows(
    set: bool,
    json: bool,
    value: &Datum,
    key: &str,
    ty: &SqlType,
) -> Result<Vec<Datum>> {
    let objects = record_objects(set, json, value)?;
    let mut rows = Vec::with_capacity(objects.len());
    for members in &objects {
        let member = members.iter().rev().find(|(own, _)| own == key);
        rows.push(match member {
            None => Datum::Null,
            Some((_, member)) => member.populate(ty)?,
        });
    }
    Ok(rows)
}
