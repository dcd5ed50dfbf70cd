//! Functions of the session, the clock, the catalog, and PostgreSQL's text arrays.

use super::Call;
use super::{RelationSize, SequenceCall};
use crate::error::{Result, SqlError};
use crate::types::{self, Datum};

/// Microseconds in a day.
const DAY_MICROS: i64 = 86_400_000_000;

pub(super) fn now(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::TimestampTz(call.context.statement_time_micros))
}

/// localtimestamp and current_date: the wall-clock time now in the session zone.
pub(super) fn localtimestamp(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Timestamp(types::utc_to_session_local(call.context.statement_time_micros)))
}

pub(super) fn current_date(call: Call<'_>) -> Result<Datum> {
    let local = types::utc_to_session_local(call.context.statement_time_micros);
    let days = local.div_euclid(DAY_MICROS);
    i32::try_from(days).map(Datum::Date).map_err(|_| SqlError::out_of_range("date"))
}

pub(super) fn version(_call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(format!(
        "PostgreSQL 15.0 (tierdb {}) on x86_64-pc-linux-gnu, compiled by rustc, 64-bit",
        env!("CARGO_PKG_VERSION")
    )))
}

pub(super) fn current_database(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(call.context.database.to_string()))
}

/// current_schema(): the first schema of the search_path that exists, NULL for none.
pub(super) fn current_schema(call: Call<'_>) -> Result<Datum> {
    let schemas = (call.context.current_schemas)(false);
    Ok(schemas.into_iter().next().map_or(Datum::Null, Datum::Text))
}

pub(super) fn current_user(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(call.context.user.to_string()))
}

pub(super) fn empty_text(_call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text(String::new()))
}

pub(super) fn backend_pid(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Int(i64::from(call.context.backend_pid)))
}

pub(super) fn nextval(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Int((call.context.sequence)(SequenceCall::Next(call.text(0)))?))
}

pub(super) fn currval(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Int((call.context.sequence)(SequenceCall::Current(call.text(0)))?))
}

pub(super) fn lastval(call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Int((call.context.sequence)(SequenceCall::Last)?))
}

/// setval(sequence, value [, is_called]): is_called defaults to true.
pub(super) fn setval(call: Call<'_>) -> Result<Datum> {
    let is_called = !matches!(call.args.get(2), Some(Datum::Bool(false)));
    let set = SequenceCall::Set { name: call.text(0), value: call.int(1), is_called };
    Ok(Datum::Int((call.context.sequence)(set)?))
}

/// current_setting(name [, missing_ok]): 42704 for a name that is not a parameter, NULL
/// instead with missing_ok.
pub(super) fn current_setting(call: Call<'_>) -> Result<Datum> {
    let name = call.text(0);
    let missing_ok = matches!(call.args.get(1), Some(Datum::Bool(true)));
    match (call.context.setting)(name) {
        Some(value) => Ok(Datum::Text(value)),
        None if missing_ok => Ok(Datum::Null),
        None => Err(SqlError::new(
            "42704",
            format!("unrecognized configuration parameter \"{}\"", name.to_lowercase()),
        )),
    }
}

/// set_config(name, value, is_local): SET (LOCAL when is_local) as a function; a NULL value
/// resets the setting, a NULL is_local is false. Returns the new value.
pub(super) fn set_config(call: Call<'_>) -> Result<Datum> {
    let Some(name) = call.args[0].as_text() else {
        return Err(SqlError::new("22004", "SET requires parameter name"));
    };
    let value = call.args[1].as_text();
    let local = matches!(call.args[2], Datum::Bool(true));
    Ok(Datum::Text((call.context.change_setting)(name, value, local)?))
}

/// pg_get_userbyid(oid): the role's name, `unknown (OID=n)` for none (PostgreSQL's).
pub(super) fn role_name(call: Call<'_>) -> Result<Datum> {
    let Some(oid) = call.args[0].as_int() else { return Ok(Datum::Null) };
    let name = (call.context.role_name)(oid).unwrap_or_else(|| format!("unknown (OID={oid})"));
    Ok(Datum::Text(name))
}

/// acldefault(kind, owner): the privileges an object of `kind` has before any GRANT or
/// REVOKE, in aclitem's text form (`owner=privileges/grantor`, PUBLIC with no name); an
/// owner OID without a role prints as its number, as PostgreSQL's.
pub(super) fn default_privileges(call: Call<'_>) -> Result<Datum> {
    let (Some(kind), Some(owner)) = (call.args[0].as_text(), call.args[1].as_int()) else {
        return Ok(Datum::Null);
    };
    let (privileges, public) = match kind {
        "n" => ("UC", false),
        "r" => ("arwdDxt", false),
        "s" => ("rwU", false),
        "f" => ("X", true),
        "T" | "l" => ("U", true),
        "L" => ("rw", false),
        "F" | "S" => ("U", false),
        "d" => ("CTc", true),
        _ => {
            return Err(SqlError::new(
                "22023",
                format!("unrecognized object type abbreviation: {kind}"),
            ))
        }
    };
    let owner = (call.context.role_name)(owner).unwrap_or_else(|| owner.to_string());
    let mut items = Vec::new();
    if public {
        items.push(Datum::Text(format!("={privileges}/{owner}")));
    }
    items.push(Datum::Text(format!("{owner}={privileges}/{owner}")));
    Ok(one_dimension(items))
}

/// current_schemas(include_implicit): the search_path's schemas that exist, in order.
pub(super) fn current_schemas(call: Call<'_>) -> Result<Datum> {
    let Some(Datum::Bool(implicit)) = call.args.first() else { return Ok(Datum::Null) };
    let schemas = (call.context.current_schemas)(*implicit);
    Ok(one_dimension(schemas.into_iter().map(Datum::Text).collect()))
}

/// A one-dimensional array with PostgreSQL's default lower bound, 1.
fn one_dimension(elements: Vec<Datum>) -> Datum {
    Datum::Array(std::sync::Arc::new(types::ArrayValue { lower: 1, elements }))
}

pub(super) fn sequence_last_value(call: Call<'_>) -> Result<Datum> {
    let Some(oid) = call.args[0].as_int() else { return Ok(Datum::Null) };
    let (last_value, _, is_called) = (call.context.sequence_state)(oid)?;
    Ok(if is_called { Datum::Int(last_value) } else { Datum::Null })
}

/// tierdb_sequence_state(sequence, field): a column of the row `SELECT * FROM seq` reads
/// (0 last_value, 1 log_cnt, 2 is_called as 0 / 1).
pub(super) fn sequence_state(call: Call<'_>) -> Result<Datum> {
    let Some(oid) = call.args[0].as_int() else { return Ok(Datum::Null) };
    let (last_value, log_count, is_called) = (call.context.sequence_state)(oid)?;
    Ok(Datum::Int(match call.args[1].as_int() {
        Some(0) => last_value,
        Some(1) => log_count,
        _ => i64::from(is_called),
    }))
}

/// pg_table_is_visible(oid): whether the relation's name, unqualified, finds it.
pub(super) fn relation_visible(call: Call<'_>) -> Result<Datum> {
    let Some(oid) = call.args[0].as_int() else { return Ok(Datum::Null) };
    Ok(Datum::Bool((call.context.relation_visible)(oid)))
}

/// pg_relation_size(rel [, fork]): NULL for an OID that names no relation, as PostgreSQL's.
/// Only the main fork has pages (tierdb keeps no free space map, visibility map or init
/// fork: their sizes are 0).
pub(super) fn relation_size(call: Call<'_>) -> Result<Datum> {
    match call.args.get(1) {
        None => {}
        Some(Datum::Null) => return Ok(Datum::Null),
        Some(Datum::Text(fork)) if fork == "main" => {}
        Some(Datum::Text(fork)) if matches!(fork.as_str(), "fsm" | "vm" | "init") => {
            return Ok(Datum::Int(0))
        }
        Some(_) => return Err(SqlError::new("22023", "invalid fork name")),
    }
    size_of(&call, RelationSize::Relation)
}

pub(super) fn table_size(call: Call<'_>) -> Result<Datum> {
    size_of(&call, RelationSize::Table)
}

pub(super) fn indexes_size(call: Call<'_>) -> Result<Datum> {
    size_of(&call, RelationSize::Indexes)
}

pub(super) fn total_relation_size(call: Call<'_>) -> Result<Datum> {
    size_of(&call, RelationSize::Total)
}

/// pg_database_size(name | oid): the bytes of every page in use in the store (tables,
/// indexes, the catalog, free pages trees keep for reuse; not the pages of dropped tables,
/// once freed), as PostgreSQL's counts the database directory's files. NULL for an OID naming no database, 3D000 for a name naming none.
pub(super) fn database_size(call: Call<'_>) -> Result<Datum> {
    if !super::privileges::this_database(&call.args[0], call.context.database)? {
        return Ok(Datum::Null);
    }
    let bytes = (call.context.database_pages)().saturating_mul(tierdb_common::PAGE_SIZE as u64);
    Ok(Datum::Int(i64::try_from(bytes).map_err(|_| SqlError::out_of_range("bigint"))?))
}

fn size_of(call: &Call<'_>, kind: RelationSize) -> Result<Datum> {
    let Some(oid) = call.args[0].as_int() else { return Ok(Datum::Null) };
    Ok((call.context.relation_size)(oid, kind)?.map_or(Datum::Null, Datum::Int))
}

pub(super) fn check_vector_index(call: Call<'_>) -> Result<Datum> {
    let Some(oid) = call.args[0].as_int() else { return Ok(Datum::Null) };
    (call.context.check_vector_index)(oid)
}

pub(super) fn format_type(call: Call<'_>) -> Result<Datum> {
    let Some(oid) = call.args[0].as_int() else { return Ok(Datum::Null) };
    let typmod = call.args.get(1).and_then(Datum::as_int).unwrap_or(-1);
    Ok(Datum::Text((call.context.format_type)(oid, typmod).unwrap_or_else(|| "???".into())))
}

pub(super) fn constant_true(_call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Bool(true))
}

pub(super) fn constant_false(_call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Bool(false))
}

pub(super) fn null(_call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Null)
}

pub(super) fn first_argument(call: Call<'_>) -> Result<Datum> {
    Ok(call.args[0].clone())
}

pub(super) fn index_definition(call: Call<'_>) -> Result<Datum> {
    // pg_get_indexdef(oid, column, pretty): the third argument asks for the pretty form.
    let pretty = matches!(call.args.get(2), Some(Datum::Bool(true)));
    Ok((call.context.index_definition)(call.int(0), pretty).map_or(Datum::Null, Datum::Text))
}

/// pg_get_viewdef(view [, pretty]): by OID (or regclass); a name in text is looked up as
/// `'name'::regclass` would be. The pretty flag changes nothing (design 018).
pub(super) fn view_definition(call: Call<'_>) -> Result<Datum> {
    let oid = match call.args.first() {
        Some(Datum::Text(name)) => {
            match (call.context.object_by_name)(crate::types::ObjectKind::Class, name)? {
                Some(Datum::Object(object)) => i64::from(object.oid),
                _ => return Err(SqlError::undefined_table(name)),
            }
        }
        _ => call.int(0),
    };
    Ok((call.context.view_definition)(oid).map_or(Datum::Null, Datum::Text))
}

/// Constraints are primary keys: their definition from the index's.
pub(super) fn constraint_definition(call: Call<'_>) -> Result<Datum> {
    let pretty = matches!(call.args.get(1), Some(Datum::Bool(true)));
    Ok((call.context.constraint_definition)(call.int(0), pretty).map_or(Datum::Null, Datum::Text))
}

pub(super) fn encoding_name(_call: Call<'_>) -> Result<Datum> {
    Ok(Datum::Text("UTF8".into()))
}

/// coalesce: the first non-NULL argument (the executor evaluates arguments lazily, so
/// later arguments' errors do not happen).
pub(super) fn coalesce(call: Call<'_>) -> Result<Datum> {
    Ok(call.args.into_iter().find(|arg| !arg.is_null()).unwrap_or(Datum::Null))
}

pub(super) fn nullif(call: Call<'_>) -> Result<Datum> {
    let mut args = call.args.into_iter();
    let (Some(first), Some(second)) = (args.next(), args.next()) else {
        return Err(SqlError::internal("nullif is bound with two arguments"));
    };
    Ok(if first.compare(&second) == Some(std::cmp::Ordering::Equal) { Datum::Null } else { first })
}

/// greatest/least: the largest (smallest) non-NULL argument.
pub(super) fn extreme(call: Call<'_>, greatest: bool) -> Result<Datum> {
    let mut best: Option<Datum> = None;
    for arg in call.args.into_iter().filter(|arg| !arg.is_null()) {
        best = Some(match best {
            None => arg,
            Some(current) => {
                let ordering = arg.compare(&current).unwrap_or(std::cmp::Ordering::Equal);
                let take = if greatest { ordering.is_gt() } else { ordering.is_lt() };
                if take {
                    arg
                } else {
                    current
                }
            }
        });
    }
    Ok(best.unwrap_or(Datum::Null))
}

/// `to_regtype(text)`: the type a name denotes (`integer`, `vector(3)`,
/// `pg_catalog.int4`), NULL when there is no such type. Drivers look extension types up
/// with it (psycopg's `TypeInfo.fetch`, which pgvector's `register_vector` calls).
pub(super) fn to_regtype(call: Call<'_>) -> Result<Datum> {
    Ok(types::type_oid_by_name(call.text(0)).map_or(Datum::Null, |oid| {
        let text = types::type_output_name(oid).map(std::sync::Arc::from);
        Datum::Object(types::ObjectReference { oid, text })
    }))
}

/// `to_regclass`, `to_regnamespace`, `to_regrole`, `to_regproc`: the object a name
/// denotes, NULL when there is none (a malformed name is still an error).
pub(super) fn to_object(call: Call<'_>, kind: types::ObjectKind) -> Result<Datum> {
    Ok((call.context.object_by_name)(kind, call.text(0))?.unwrap_or(Datum::Null))
}

/// `pg_get_serial_sequence(table, column)`: the sequence of a serial or identity column,
/// qualified (`public.t_id_seq`); NULL for a column without one.
pub(super) fn serial_sequence(call: Call<'_>) -> Result<Datum> {
    Ok((call.context.serial_sequence)(call.text(0), call.text(1))?.map_or(Datum::Null, Datum::Text))
}

/// `pg_typeof(any)`: the argument's type as regtype (an untyped literal is text here, as
/// the binder reads it; PostgreSQL says unknown).
pub(super) fn type_of(call: Call<'_>) -> Result<Datum> {
    let oid = call.arg_types[0].oid();
    let text = types::type_output_name(oid).map(std::sync::Arc::from);
    Ok(Datum::Object(types::ObjectReference { oid, text }))
}
