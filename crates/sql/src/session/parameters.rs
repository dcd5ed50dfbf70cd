//! SET of a parameter that settings.rs does not implement itself, by PostgreSQL's rules
//! (pg_parameters.rs): nothing is accepted and ignored.
//!
//! | parameter                                   | SET answers                              |
//! |---------------------------------------------|------------------------------------------|
//! | `a.b` (custom placeholder)                  | accepted and shown, as in PostgreSQL     |
//! | not one of PostgreSQL's                     | 42704 unrecognized                       |
//! | internal / postmaster / sighup / backend    | 55P02, PostgreSQL's wording per context  |
//! | superuser context, role not a superuser     | 42501                                    |
//! | one whose effect tierdb lacks the feature for (`VACUOUS`) | any valid value, shown     |
//! | any other, at PostgreSQL's default value    | accepted (tierdb behaves as the default) |
//! | any other value                             | 0A000 naming the parameter              |

use super::pg_parameters::{pg_parameter, ParameterContext, ParameterKind, PgParameter};
use crate::error::{Result, SqlError};

/// Parameters whose every value behaves the same in tierdb because the feature they tune
/// does not exist here (no functions bodies to check, no row security policies, no XML,
/// no notices below WARNING that a client could hide or see more of, no JIT compilation:
/// `jit = on` compiles nothing, as in a PostgreSQL built without LLVM, so asyncpg's
/// `set_config('jit', 'off', false)` is exact; no scans that start in the middle of a table
/// to share reads: every scan starts at the beginning, which is what synchronize_seqscans =
/// off asks for and what on allows) or because they only label the session
/// (application_name); restrict_nonsystem_relation_kind (which pg_dump sets) restricts
/// views, which the binder honours (bind/views.rs), and foreign tables, of which tierdb has
/// none.
const VACUOUS: [&str; 9] = [
    "application_name",
    "check_function_bodies",
    "client_min_messages",
    "escape_string_warning",
    "jit",
    "restrict_nonsystem_relation_kind",
    "row_security",
    "synchronize_seqscans",
    "xmloption",
];

/// Prefixes of custom names that belong to tierdb (its own settings) and to pgvector's
/// index settings: a name under them that tierdb does not know is an error, not a new
/// placeholder (a misspelt `hnsw.ef_serch` must not be accepted and ignored).
const RESERVED_PREFIXES: [&str; 3] = ["tierdb", "hnsw", "ivfflat"];

/// The levels `client_min_messages` takes.
const MESSAGE_LEVELS: [&str; 9] =
    ["debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"];

/// The value to store for SET `name` = `value`, or PostgreSQL's (or tierdb's 0A000) error.
pub(super) fn check_parameter(name: &str, value: &str, superuser: bool) -> Result<String> {
    if let Some((prefix, _)) = name.split_once('.') {
        if RESERVED_PREFIXES.contains(&prefix) {
            // As PostgreSQL answers for a prefix an extension reserved (pgvector reserves
            // hnsw and ivfflat): the names tierdb knows were matched before this.
            return Err(SqlError::new(
                "42602",
                format!("invalid configuration parameter name \"{name}\""),
            ));
        }
        return Ok(value.to_string());
    }
    let parameter = pg_parameter(name).ok_or_else(|| unrecognized(name))?;
    check_context(parameter, superuser)?;
    if VACUOUS.contains(&parameter.name) {
        return valid_value(parameter, value);
    }
    if same_value(parameter.kind, value, parameter.default) {
        return Ok(value.to_string());
    }
    Err(SqlError::unsupported(format!(
        "parameter \"{}\" is not supported: tierdb runs as PostgreSQL's default \"{}\" (SET to \"{value}\" refused)",
        parameter.name, parameter.shown
    )))
}

/// The value SHOW prints for a PostgreSQL parameter tierdb does not implement (its
/// default), None for a name PostgreSQL does not have.
pub(super) fn default_shown(name: &str) -> Option<String> {
    pg_parameter(name).map(|parameter| parameter.shown.to_string())
}

/// 42704, PostgreSQL's wording.
pub(super) fn unrecognized(name: &str) -> SqlError {
    SqlError::new("42704", format!("unrecognized configuration parameter \"{name}\""))
}

fn check_context(parameter: &PgParameter, superuser: bool) -> Result<()> {
    let name = parameter.name;
    let cannot = |rest: &str| SqlError::new("55P02", format!("parameter \"{name}\" {rest}"));
    match parameter.context {
        ParameterContext::User => Ok(()),
        ParameterContext::Superuser if superuser => Ok(()),
        ParameterContext::Superuser => {
            Err(SqlError::new("42501", format!("permission denied to set parameter \"{name}\"")))
        }
        ParameterContext::Backend => Err(cannot("cannot be set after connection start")),
        ParameterContext::Reload => Err(cannot("cannot be changed now")),
        ParameterContext::Restart => Err(cannot("cannot be changed without restarting the server")),
        ParameterContext::Internal => Err(cannot("cannot be changed")),
    }
}

/// `value` if it is valid for a VACUOUS parameter (22023 otherwise, as PostgreSQL).
fn valid_value(parameter: &PgParameter, value: &str) -> Result<String> {
    let name = parameter.name;
    let invalid =
        || SqlError::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""));
    match (parameter.kind, name) {
        (ParameterKind::Bool, _) => match parse_bool(value) {
            Some(_) => Ok(value.to_string()),
            None => Err(SqlError::new(
                "22023",
                format!("parameter \"{name}\" requires a Boolean value"),
            )),
        },
        (_, "client_min_messages") => {
            let level = value.to_lowercase();
            MESSAGE_LEVELS.contains(&level.as_str()).then_some(level).ok_or_else(invalid)
        }
        (_, "restrict_nonsystem_relation_kind") => {
            // A list of relation kinds, kept as written (PostgreSQL shows it so).
            let kinds = value.split(',').map(str::trim).filter(|kind| !kind.is_empty());
            let unknown = kinds
                .into_iter()
                .find(|kind| !["view", "foreign-table"].contains(&kind.to_lowercase().as_str()));
            match unknown {
                None => Ok(value.to_string()),
                Some(_) => Err(invalid()),
            }
        }
        (_, "xmloption") => {
            let option = value.to_lowercase();
            ["content", "document"].contains(&option.as_str()).then_some(option).ok_or_else(invalid)
        }
        _ => Ok(value.to_string()),
    }
}

/// A Boolean setting as PostgreSQL's `parse_bool` reads it (unique prefixes included).
fn parse_bool(value: &str) -> Option<bool> {
    let lower = value.trim().to_lowercase();
    let prefix_of = |word: &str| !lower.is_empty() && word.starts_with(lower.as_str());
    match lower.as_str() {
        "1" | "on" => Some(true),
        "0" | "off" => Some(false),
        _ if prefix_of("true") || prefix_of("yes") => Some(true),
        _ if prefix_of("false") || prefix_of("no") => Some(false),
        _ => None,
    }
}

/// Whether `value` denotes the default `default` of a parameter of `kind`.
fn same_value(kind: ParameterKind, value: &str, default: &str) -> bool {
    match kind {
        ParameterKind::Bool => {
            parse_bool(value).is_some() && parse_bool(value) == parse_bool(default)
        }
        ParameterKind::Integer | ParameterKind::Real => {
            match (value.trim().parse::<f64>(), default.parse::<f64>()) {
                (Ok(given), Ok(default)) => given == default,
                _ => false,
            }
        }
        ParameterKind::Text | ParameterKind::Enum => value.trim().eq_ignore_ascii_case(default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlstate(name: &str, value: &str) -> &'static str {
        check_parameter(name, value, false).unwrap_err().sqlstate
    }

    #[test]
    fn parameters_are_honoured_at_their_default_or_refused() {
        assert!(check_parameter("enable_seqscan", "on", false).is_ok());
        assert!(check_parameter("enable_seqscan", "TRUE", false).is_ok());
        assert_eq!(sqlstate("enable_seqscan", "off"), "0A000");
        assert!(check_parameter("random_page_cost", "4", false).is_ok());
        assert_eq!(sqlstate("random_page_cost", "1.1"), "0A000");
        assert_eq!(sqlstate("synchronous_commit", "off"), "0A000");
        assert!(check_parameter("max_parallel_maintenance_workers", "2", false).is_ok());
    }

    #[test]
    fn contexts_and_names_answer_as_postgresql() {
        assert_eq!(sqlstate("no_such_parameter", "1"), "42704");
        assert!(check_parameter("myapp.tenant", "42", false).is_ok());
        assert_eq!(sqlstate("hnsw.ef_serch", "40"), "42602");
        assert_eq!(sqlstate("tierdb.min_capcity", "1"), "42602");
        assert_eq!(sqlstate("shared_buffers", "1GB"), "55P02");
        assert_eq!(sqlstate("server_version", "16"), "55P02");
        assert_eq!(sqlstate("max_wal_size", "2GB"), "55P02");
        assert_eq!(sqlstate("log_connections", "on"), "55P02");
        assert_eq!(sqlstate("session_replication_role", "replica"), "42501");
    }

    #[test]
    fn vacuous_parameters_take_any_valid_value() {
        assert_eq!(check_parameter("client_min_messages", "WARNING", false).unwrap(), "warning");
        assert_eq!(sqlstate("client_min_messages", "loud"), "22023");
        assert!(check_parameter("row_security", "off", false).is_ok());
        let kinds =
            check_parameter("restrict_nonsystem_relation_kind", "view, foreign-table", false);
        assert_eq!(kinds.unwrap(), "view, foreign-table");
        assert_eq!(sqlstate("restrict_nonsystem_relation_kind", "table"), "22023");
        assert_eq!(sqlstate("row_security", "maybe"), "22023");
        assert!(check_parameter("application_name", "my app", false).is_ok());
    }
}
