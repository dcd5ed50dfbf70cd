//! The SQL layer's error: a specific internal cause with the PostgreSQL SQLSTATE a client sees.
//!
//! Messages follow PostgreSQL's wording where clients or tests match on them (for example
//! `relation "t" does not exist`), so that tools written for PostgreSQL keep working.

use tierdb_engine::EngineError;

#[derive(Debug, Clone, PartialEq)]
pub struct SqlError {
    pub sqlstate: &'static str,
    pub message: String,
    /// 1-based character position in the statement text, for syntax errors.
    pub position: Option<usize>,
}

impl SqlError {
    pub fn new(sqlstate: &'static str, message: impl Into<String>) -> SqlError {
        let mut message = message.into();
        if message.contains(TEMP_PREFIX) {
            message = without_temp_schemas(&message);
        }
        SqlError { sqlstate, message, position: None }
    }
    pub fn syntax(message: impl Into<String>) -> SqlError {
        SqlError::new("42601", message)
    }
    pub fn unsupported(message: impl Into<String>) -> SqlError {
        SqlError::new("0A000", message)
    }
    pub fn undefined_table(name: &str) -> SqlError {
        SqlError::new("42P01", format!("relation \"{name}\" does not exist"))
    }
    pub fn undefined_column(name: &str) -> SqlError {
        SqlError::new("42703", format!("column \"{name}\" does not exist"))
    }
    /// 42703 for `qualifier.name`: PostgreSQL writes a qualified name without quotes.
    pub fn undefined_qualified_column(qualifier: &str, name: &str) -> SqlError {
        SqlError::new("42703", format!("column {qualifier}.{name} does not exist"))
    }
    pub fn undefined_function(name: &str) -> SqlError {
        SqlError::new("42883", format!("function {name} does not exist"))
    }
    pub fn invalid_text(type_name: &str, text: &str) -> SqlError {
        SqlError::new("22P02", format!("invalid input syntax for type {type_name}: \"{text}\""))
    }
    pub fn out_of_range(type_name: &str) -> SqlError {
        SqlError::new("22003", format!("{type_name} out of range"))
    }
    pub fn division_by_zero() -> SqlError {
        SqlError::new("22012", "division by zero")
    }
    pub fn datatype_mismatch(message: impl Into<String>) -> SqlError {
        SqlError::new("42804", message)
    }
    /// 42883 with a message of its own (`could not identify an ordering operator ...`).
    pub fn undefined_function_message(message: impl Into<String>) -> SqlError {
        SqlError::new("42883", message)
    }
    pub fn undefined_operator(message: impl Into<String>) -> SqlError {
        SqlError::new("42883", message)
    }
    pub fn internal(message: impl Into<String>) -> SqlError {
        SqlError::new("XX000", message)
    }
    /// Whether the error ends the transaction block (everything does, as in PostgreSQL).
    pub fn is_retryable(&self) -> bool {
        matches!(self.sqlstate, "40001" | "40P01")
    }
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{} (sqlstate={})", self.message, self.sqlstate)
    }
}

impl std::error::Error for SqlError {}

impl From<EngineError> for SqlError {
    /// Storage failures (I/O, corruption, a poisoned store, a full disk) name server files and objects:
    /// the server's log gets the whole message, the client the SQLSTATE and a sentence
    /// without paths. Every other engine error goes to the client as it is.
    fn from(error: EngineError) -> SqlError {
        let sqlstate = error.sqlstate();
        let message = match sqlstate {
            "58030" => "could not read or write the database's storage (details in the server log)",
            "XX001" => "stored data failed verification (details in the server log)",
            "53100" => "could not write to the database's storage: No space left on device (free disk space; details in the server log)",
            _ => return SqlError::new(sqlstate, error.to_string()),
        };
        tracing::error!(sqlstate, %error, "storage failure reported to a client");
        SqlError::new(sqlstate, message)
    }
}

/// The start of a temp table's catalog name (catalog/temp.rs: `pg_temp_N.t`).
const TEMP_PREFIX: &str = "pg_temp_";

/// `message` with the `pg_temp_N.` of temp tables' catalog names (and of their indexes')
/// left out: users name them, and PostgreSQL's messages print them, without their schema.
fn without_temp_schemas(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(TEMP_PREFIX) {
        out.push_str(&rest[..start]);
        let after = &rest[start + TEMP_PREFIX.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 && after[digits..].starts_with('.') {
            rest = &after[digits + 1..];
        } else {
            out.push_str(TEMP_PREFIX);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

pub type Result<T, E = SqlError> = std::result::Result<T, E>;
