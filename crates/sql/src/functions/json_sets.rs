//! The rows of the json and jsonb set-returning functions (json[b]_array_elements[_text],
//! json[b]_object_keys, json[b]_each[_text]) with PostgreSQL's errors for the wrong kind
//! of value. A json value keeps its duplicate keys and each member's text as written.

use std::sync::Arc;

use crate::error::{Result, SqlError};
use crate::types::{parse_json, Datum, JsonKind, JsonNode, Jsonb};

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
