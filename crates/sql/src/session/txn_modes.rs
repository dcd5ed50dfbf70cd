//! Transaction modes: isolation levels (SERIALIZABLE is refused, never run as something
//! weaker) and READ ONLY (the commands a read-only transaction refuses, with PostgreSQL's
//! 25006 wording).

use sqlparser::ast;
use tierdb_engine::IsolationLevel;

use crate::bind::is_data_modifying;
use crate::error::{Result, SqlError};

/// 0A000 for SERIALIZABLE: tierdb has no serializable snapshot isolation, and running it as
/// REPEATABLE READ would let write skew commit.
pub fn serializable_unsupported() -> SqlError {
    SqlError::unsupported(
        "SERIALIZABLE isolation level is not supported: use REPEATABLE READ (retrying on \
         40001) or SELECT ... FOR UPDATE",
    )
}

/// An isolation level by its setting text: Ok(None) for an unknown name (the caller's 22023),
/// 0A000 for serializable.
pub fn parse_isolation(text: &str) -> Result<Option<IsolationLevel>> {
    Ok(match text.trim().to_lowercase().replace('_', " ").as_str() {
        "read committed" | "read uncommitted" => Some(IsolationLevel::ReadCommitted),
        "repeatable read" => Some(IsolationLevel::RepeatableRead),
        "serializable" => return Err(serializable_unsupported()),
        _ => None,
    })
}

/// The isolation level a BEGIN or SET TRANSACTION names, if any.
pub fn isolation_of(modes: &[ast::TransactionMode]) -> Result<Option<IsolationLevel>> {
    for mode in modes {
        if let ast::TransactionMode::IsolationLevel(level) = mode {
            return match level {
                ast::TransactionIsolationLevel::ReadCommitted
                | ast::TransactionIsolationLevel::ReadUncommitted => {
                    Ok(Some(IsolationLevel::ReadCommitted))
                }
                ast::TransactionIsolationLevel::RepeatableRead => {
                    Ok(Some(IsolationLevel::RepeatableRead))
                }
                _ => Err(serializable_unsupported()),
            };
        }
    }
    Ok(None)
}

/// READ ONLY (true) or READ WRITE (false) if a BEGIN or SET TRANSACTION names one.
pub fn read_only_of(modes: &[ast::TransactionMode]) -> Option<bool> {
    modes.iter().rev().find_map(|mode| match mode {
        ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadOnly) => Some(true),
        ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadWrite) => Some(false),
        _ => None,
    })
}

/// A boolean setting as PostgreSQL reads it (on/off, true/false, yes/no, 1/0 and prefixes).
pub fn parse_bool_setting(name: &str, value: &str) -> Result<bool> {
    let lower = value.trim().to_lowercase();
    let matches = |word: &str| !lower.is_empty() && word.starts_with(&lower);
    match lower.as_str() {
        "on" | "1" => Ok(true),
        "off" | "of" | "0" => Ok(false),
        _ if lower.len() > 1 || lower == "t" || lower == "y" => {
            if matches("true") || matches("yes") {
                Ok(true)
            } else if matches("false") || matches("no") {
                Ok(false)
            } else {
                Err(bool_error(name))
            }
        }
        "f" | "n" => Ok(false),
        _ => Err(bool_error(name)),
    }
}

fn bool_error(name: &str) -> SqlError {
    SqlError::new("22023", format!("parameter \"{name}\" requires a Boolean value"))
}

/// 25006 for `command` in a read-only transaction.
pub fn read_only_error(command: &str) -> SqlError {
    SqlError::new("25006", format!("cannot execute {command} in a read-only transaction"))
}

/// The command name PostgreSQL's 25006 message uses if `statement` writes (DML, DDL, a
/// locking SELECT); None for statements a read-only transaction may run.
pub fn write_command(statement: &ast::Statement) -> Option<String> {
    Some(match statement {
        ast::Statement::Insert(_) => "INSERT".into(),
        ast::Statement::Update(_) => "UPDATE".into(),
        ast::Statement::Delete(_) => "DELETE".into(),
        ast::Statement::Query(query) => {
            if let Some(command) = modifying_command(query) {
                return Some(command.into());
            }
            let clause = query
                .locks
                .iter()
                .map(|lock| lock.lock_type)
                .max_by_key(|lock_type| matches!(lock_type, ast::LockType::Update))?;
            format!("SELECT FOR {clause}")
        }
        ast::Statement::CreateTable(_) => "CREATE TABLE".into(),
        ast::Statement::CreateIndex(_) => "CREATE INDEX".into(),
        ast::Statement::CreateSequence { .. } => "CREATE SEQUENCE".into(),
        ast::Statement::AlterTable(_) => "ALTER TABLE".into(),
        ast::Statement::Truncate(_) => "TRUNCATE TABLE".into(),
        ast::Statement::Drop { object_type, .. } => format!("DROP {object_type}"),
        // EXPLAIN ANALYZE runs the statement.
        ast::Statement::Explain { statement, analyze: true, .. } => write_command(statement)?,
        _ => return None,
    })
}

/// The command PostgreSQL's 25006 names for a query that writes through its WITH: INSERT,
/// UPDATE or DELETE under a WITH is that command; a query whose own WITH list holds a
/// data-modifying statement is SELECT (the main statement's tag, as PostgreSQL words it).
/// A data-modifying statement in a deeper WITH list is refused when it is bound (0A000).
fn modifying_command(query: &ast::Query) -> Option<&'static str> {
    match query.body.as_ref() {
        ast::SetExpr::Insert(_) => return Some("INSERT"),
        ast::SetExpr::Update(_) => return Some("UPDATE"),
        ast::SetExpr::Delete(_) => return Some("DELETE"),
        _ => {}
    }
    let ctes = query.with.as_ref().map_or(&[][..], |with| &with.cte_tables[..]);
    ctes.iter().any(|cte| is_data_modifying(&cte.query.body)).then_some("SELECT")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_read_as_postgresql_reads_them() {
        for text in ["on", "ON", "true", "t", "yes", "y", "1", "tr"] {
            assert!(parse_bool_setting("x", text).unwrap(), "{text}");
        }
        for text in ["off", "false", "f", "no", "n", "0", "fa"] {
            assert!(!parse_bool_setting("x", text).unwrap(), "{text}");
        }
        for text in ["", "o", "maybe", "2"] {
            assert_eq!(parse_bool_setting("x", text).unwrap_err().sqlstate, "22023", "{text}");
        }
    }
}
