//! Column values a statement writes: the columns' defaults, the assignability of a value's
//! type to a column's, and SET lists (UPDATE's and ON CONFLICT DO UPDATE's).

use super::*;
use crate::catalog::sequence_of_default;
use crate::catalog::ColumnMeta;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// Each column's default as an expression (None without one); a serial column's is its
/// sequence's nextval.
pub(crate) fn bind_defaults(
    binder: &mut Binder<'_>,
    table: &TableMeta,
) -> Result<Vec<Option<Expr>>> {
    let scope = super::Scope::default();
    table
        .columns
        .iter()
        .map(|column| match &column.default {
            Some(text) => {
                if let Some(sequence) = sequence_of_default(text) {
                    let name = Expr::Literal(Datum::Text(sequence.to_string()));
                    let (call, _) = bind_call("nextval", vec![(name, SqlType::Text)])?;
                    return Ok(Some(Expr::Cast {
                        expr: Box::new(call),
                        from: SqlType::Int8,
                        to: column.ty.clone(),
                        explicit: false,
                    }));
                }
                // Parsed with the limit its CREATE TABLE was parsed with.
                let expr = Parser::new(&PostgreSqlDialect {})
                    .with_recursion_limit(depth::PARSER_RECURSION_LIMIT)
                    .try_with_sql(text)
                    .and_then(|mut parser| parser.parse_expr())
                    .map_err(|error| {
                        SqlError::internal(format!("stored default does not parse: {error}"))
                    })?;
                let (bound, from) = binder.expr(&expr, &scope, Some(&column.ty))?;
                Ok(Some(super::coerce(bound, &from, &column.ty, false)?))
            }
            None => Ok(None),
        })
        .collect()
}

pub(crate) fn assignable(from: &SqlType, to: &SqlType) -> bool {
    from == to
        || *from == SqlType::Unknown
        || (from.is_numeric_family() && to.is_numeric_family())
        || to.is_text()
        || (from.is_temporal() && to.is_temporal())
        || super::coerce::pgvector_castable(from, to)
        || matches!(
            (from, to),
            (SqlType::Bit(_) | SqlType::VarBit(_), SqlType::Bit(_) | SqlType::VarBit(_))
        )
}

/// A column's type as PostgreSQL names it in an assignment error (format_type_be: bit(n)
/// is `bit`, without its length).
pub(crate) fn column_type_name(ty: &SqlType) -> String {
    match ty {
        SqlType::Bit(_) | SqlType::VarBit(_) => ty.message_name().to_string(),
        other => other.display_name(),
    }
}

pub(crate) fn assignment_error(error: SqlError, column: &ColumnMeta, from: &SqlType) -> SqlError {
    if error.sqlstate == "42804" {
        SqlError::datatype_mismatch(format!(
            "column \"{}\" is of type {} but expression is of type {}",
            column.name,
            column_type_name(&column.ty),
            from.display_name()
        ))
    } else {
        error
    }
}

/// UPDATE's (and ON CONFLICT DO UPDATE's) SET list: each target column's position and its
/// new value, coerced to the column's type (DEFAULT is the column default).
pub(crate) fn bind_assignments(
    binder: &mut Binder<'_>,
    table: &BoundTable,
    assignments: &[ast::Assignment],
    scope: &Scope,
) -> Result<Vec<(usize, Expr)>> {
    let mut bound = Vec::new();
    for assignment in assignments {
        let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
            return Err(SqlError::unsupported("multi-column assignment"));
        };
        // PostgreSQL reads `SET a.b` as field b of a composite column a (never as a
        // qualified column name): 42703 naming a when the table has no column a.
        if column.0.len() > 1 {
            let first = ast::ObjectName(column.0[..1].to_vec());
            let first = object_name(&first)?;
            if table.column_index(&first).is_none() {
                return Err(SqlError::new(
                    "42703",
                    format!("column \"{first}\" of relation \"{}\" does not exist", table.name),
                ));
            }
            return Err(SqlError::unsupported("assigning to a field of a composite column"));
        }
        let column = object_name(column)?;
        let position = table.column_index(&column).ok_or_else(|| {
            SqlError::new(
                "42703",
                format!("column \"{column}\" of relation \"{}\" does not exist", table.name),
            )
        })?;
        let ty = table.columns[position].ty.clone();
        let is_default = is_default_keyword(&assignment.value);
        if !is_default && table.columns[position].identity == Some(crate::catalog::Identity::Always)
        {
            return Err(SqlError::new(
                "428C9",
                format!("column \"{column}\" can only be updated to DEFAULT"),
            ));
        }
        let expr = if is_default {
            bind_defaults(binder, table)?[position].clone().unwrap_or(Expr::Literal(Datum::Null))
        } else {
            let (expr, from) = binder.expr(&assignment.value, scope, Some(&ty))?;
            super::coerce(expr, &from, &ty, false)
                .map_err(|error| assignment_error(error, &table.columns[position], &from))?
        };
        bound.push((position, expr));
    }
    Ok(bound)
}

/// Whether a value is the keyword DEFAULT (unquoted), in a VALUES row or a SET list.
pub(crate) fn is_default_keyword(expr: &ast::Expr) -> bool {
    matches!(expr, ast::Expr::Identifier(name) if name.quote_style.is_none() && name.value.eq_ignore_ascii_case("default"))
}
