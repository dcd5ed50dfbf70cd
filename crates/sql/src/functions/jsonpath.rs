//! The SQL/JSON path functions (jsonb_path_exists, jsonb_path_match,
//! jsonb_path_query_array, jsonb_path_query_first and their `_tz` forms; jsonb_path_query
//! is a set-returning function, `jsonb_path_rows`) and the operators `@?` and `@@`, over
//! `types::jsonpath`. The `_tz` forms differ from the others only in `.datetime()`, which
//! is 0A000 in both.

use std::sync::Arc;

use super::json::fits;
use super::{no_function, Call, Coercion, Function, Signature};
use crate::error::{Result, SqlError};
use crate::types::jsonpath::{evaluate, parse_jsonpath, Outcome};
use crate::types::{Datum, Jsonb, SqlType};

/// (target jsonb, path jsonpath [, vars jsonb [, silent boolean]]).
pub(crate) fn path_signature(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    let targets = [SqlType::Jsonb, SqlType::JsonPath, SqlType::Jsonb, SqlType::Bool];
    if types.len() > targets.len() || !types.iter().zip(&targets).all(|(ty, to)| fits(ty, to)) {
        return Err(no_function(name, types));
    }
    let arguments = targets[..types.len()].iter().cloned().map(Coercion::Implicit).collect();
    Ok(Signature { arguments, output })
}

/// Runs the call's path over its target; `found` collects the items.
fn run(args: &[Datum], found: Option<&mut Vec<Jsonb>>) -> Result<(Outcome, bool)> {
    let (Some(Datum::Jsonb(target)), Some(path)) = (args.first(), args.get(1)) else {
        return Err(SqlError::internal("a jsonpath call's target is jsonb"));
    };
    let path = parse_jsonpath(path.as_text().unwrap_or_default())?;
    let vars = match args.get(2) {
        Some(Datum::Jsonb(vars)) => Some(Arc::clone(vars)),
        _ => None,
    };
    let silent = matches!(args.get(3), Some(Datum::Bool(true)));
    let outcome = evaluate(&path, target, vars.as_deref(), !silent, found)?;
    Ok((outcome, silent))
}

/// jsonb_path_exists: NULL after a suppressed error.
fn exists(call: Call<'_>) -> Result<Datum> {
    Ok(match run(&call.args, None)?.0 {
        Outcome::Found => Datum::Bool(true),
        Outcome::NotFound => Datum::Bool(false),
        Outcome::Suppressed => Datum::Null,
    })
}

/// jsonb_path_match: the one boolean (or null) item, 22038 otherwise unless silent.
fn path_match(call: Call<'_>) -> Result<Datum> {
    let mut found = Vec::new();
    let (_, silent) = run(&call.args, Some(&mut found))?;
    match found.as_slice() {
        [Jsonb::Bool(flag)] => Ok(Datum::Bool(*flag)),
        [Jsonb::Null] => Ok(Datum::Null),
        _ if silent => Ok(Datum::Null),
        _ => Err(SqlError::new("22038", "single boolean result is expected")),
    }
}

fn query_array(call: Call<'_>) -> Result<Datum> {
    let mut found = Vec::new();
    run(&call.args, Some(&mut found))?;
    Ok(Datum::Jsonb(Arc::new(Jsonb::Array(found))))
}

fn query_first(call: Call<'_>) -> Result<Datum> {
    let mut found = Vec::new();
    run(&call.args, Some(&mut found))?;
    Ok(found.into_iter().next().map_or(Datum::Null, |item| Datum::Jsonb(Arc::new(item))))
}

/// The operators: silent, without vars.
fn operator_arguments(call: &Call<'_>) -> Vec<Datum> {
    let mut args = call.args.clone();
    args.push(Datum::Jsonb(Arc::new(Jsonb::Object(Vec::new()))));
    args.push(Datum::Bool(true));
    args
}

/// The rows of jsonb_path_query (its arguments evaluated, none NULL).
pub fn jsonb_path_rows(args: &[Datum]) -> Result<Vec<Datum>> {
    let mut found = Vec::new();
    run(args, Some(&mut found))?;
    Ok(found.into_iter().map(|item| Datum::Jsonb(Arc::new(item))).collect())
}

/// The entries of this module (the registry's table).
pub(super) static JSONPATH: &[Function] = &[
    function!(
        &["jsonb_path_exists", "jsonb_path_exists_tz"],
        2..=4,
        |n, t| path_signature(n, t, SqlType::Bool),
        exists,
        "'{\"a\":[1,2]}', '$.a[*] ? (@ > 1)'"
    ),
    function!(
        &["jsonb_path_match", "jsonb_path_match_tz"],
        2..=4,
        |n, t| path_signature(n, t, SqlType::Bool),
        path_match,
        "'{\"a\":1}', '$.a == 1'"
    ),
    function!(
        &["jsonb_path_query_array", "jsonb_path_query_array_tz"],
        2..=4,
        |n, t| path_signature(n, t, SqlType::Jsonb),
        query_array,
        "'[1,2]', '$[*]'"
    ),
    function!(
        &["jsonb_path_query_first", "jsonb_path_query_first_tz"],
        2..=4,
        |n, t| path_signature(n, t, SqlType::Jsonb),
        query_first,
        "'[1,2]', '$[*]'"
    ),
    function!(
        &["jsonb_path_exists_opr"],
        2..=2,
        |n, t| path_signature(n, t, SqlType::Bool),
        |call| {
            let args = operator_arguments(&call);
            exists(Call { args, ..call })
        },
        "'[1,2]', '$[*] ? (@ > 1)'"
    ),
    function!(
        &["jsonb_path_match_opr"],
        2..=2,
        |n, t| path_signature(n, t, SqlType::Bool),
        |call| {
            let args = operator_arguments(&call);
            path_match(Call { args, ..call })
        },
        "'[1,2]', '$[0] == 1'"
    ),
];
