//! SQL names as PostgreSQL reads them: unquoted identifiers fold to lower case; a
//! qualified name's last part names the object.

use sqlparser::ast;

use crate::error::{Result, SqlError};

/// Normalizes an identifier as PostgreSQL does: unquoted names fold to lower case.
pub fn ident(ident: &ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The last part of a possibly schema-qualified name (`public.t`, `pg_catalog.pg_class`).
pub fn object_name(name: &ast::ObjectName) -> Result<String> {
    match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(part)) => Ok(ident(part)),
        _ => Err(SqlError::syntax(format!("invalid name {name}"))),
    }
}
