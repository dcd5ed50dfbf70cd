//! Values the system views share: a text datum, an optional number, every table's columns,
//! and a column's DEFAULT as PostgreSQL prints it.

use crate::catalog::{ColumnMeta, TableMeta};
use crate::types::{Datum, SqlType};

pub(super) fn text(value: &str) -> Datum {
    Datum::Text(value.to_string())
}

pub(super) fn optional(value: Option<i64>) -> Datum {
    value.map_or(Datum::Null, Datum::Int)
}

/// Each table's columns with their 0-based positions.
pub(super) fn columns(
    tables: &[std::sync::Arc<TableMeta>],
) -> impl Iterator<Item = (&TableMeta, usize, &ColumnMeta)> {
    tables.iter().flat_map(|table| {
        table.columns.iter().enumerate().map(move |(position, column)| (&**table, position, column))
    })
}

/// A column's DEFAULT as PostgreSQL prints it: a serial or identity column's
/// `nextval('t_id_seq')` with its regclass cast, `nextval('t_id_seq'::regclass)`; a literal
/// as the constant it became in the column's type (`'x'::text`, `'-1'::integer`).
pub(super) fn default_text(default: &str, ty: &SqlType, public_on_path: bool) -> Datum {
    match crate::catalog::sequence_of_default(default) {
        Some(sequence) if crate::catalog::split_temp_name(sequence).is_some() => {
            // A temp table's sequence: in pg_temp, which is always searched.
            let name = crate::catalog::relation_name(sequence);
            let name = crate::plan::deparse::quote_identifier(name).replace('\'', "''");
            Datum::Text(format!("nextval('{name}'::regclass)"))
        }
        Some(sequence) => {
            // As regclass prints the sequence: qualified when public is off the path.
            let schema = if public_on_path { "" } else { "public." };
            let name = crate::plan::deparse::quote_identifier(sequence).replace('\'', "''");
            Datum::Text(format!("nextval('{schema}{name}'::regclass)"))
        }
        // A DEFAULT calling a CREATE SEQUENCE sequence's nextval, stored as
        // `nextval('s'::regclass)` (session/alter_table.rs `checked_default`).
        None if let Some(quoted) = default
            .strip_prefix("nextval('")
            .and_then(|rest| rest.strip_suffix("'::regclass)"))
            .filter(|_| !public_on_path) =>
        {
            Datum::Text(format!("nextval('public.{quoted}'::regclass)"))
        }
        None => text(&literal_default(default, ty).unwrap_or_else(|| default.to_string())),
    }
}

/// A literal DEFAULT as PostgreSQL's get_const_expr prints the constant it was coerced to:
/// a string or a negative number quoted with the type's name (`'x'::text`, `'-1'::integer`,
/// a cast literal with its cast's type), other numbers and booleans bare. None for any other
/// expression, which is printed as written (a known gap: PostgreSQL prints its own deparse).
fn literal_default(default: &str, ty: &SqlType) -> Option<String> {
    use sqlparser::ast::{Expr, UnaryOperator, Value};
    let string = |expr: &Expr| match expr {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text) => {
                Some(text.clone())
            }
            _ => None,
        },
        _ => None,
    };
    let (text, ty) = match crate::parse::parse_stored_expression(default).ok()? {
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => match *expr {
            Expr::Value(value) => match value.value {
                Value::Number(digits, _) => (format!("-{digits}"), ty.clone()),
                _ => return None,
            },
            _ => return None,
        },
        Expr::Cast { expr, data_type, .. } => {
            (string(&expr)?, crate::types::sql_type(&data_type).ok()?)
        }
        other => (string(&other)?, ty.clone()),
    };
    // format_type without a modifier: bpchar for char(n), and `character varying` bare.
    let label = match ty {
        SqlType::Char(_) => "bpchar".to_string(),
        other => crate::types::type_output_name(other.oid())?,
    };
    Some(format!("'{}'::{label}", text.replace('\'', "''")))
}
