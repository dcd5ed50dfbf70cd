//! Coercion: implicit and explicit casts of bound expressions.

use super::*;

pub(crate) fn cast_expr(expr: Expr, from: &SqlType, to: &SqlType, explicit: bool) -> Expr {
    if from == to {
        return expr;
    }
    Expr::Cast { expr: Box::new(expr), from: from.clone(), to: to.clone(), explicit }
}

/// Coerces a bound expression of type `from` to `to`: untyped literals are converted now
/// (so a bad literal fails at bind time, 22P02), others get a cast node.
pub fn coerce(expr: Expr, from: &SqlType, to: &SqlType, explicit: bool) -> Result<Expr> {
    if from == to
        && !matches!(
            to,
            SqlType::Char(_)
                | SqlType::Varchar(Some(_))
                | SqlType::Numeric { precision: Some(_), .. }
        )
    {
        return Ok(expr);
    }
    if *to == SqlType::Unknown {
        return Ok(expr);
    }
    if let SqlType::Object(_) = to {
        return object_cast(expr, from, to, explicit);
    }
    match (&expr, from) {
        (Expr::Literal(Datum::Null), _) => Ok(expr),
        (Expr::Literal(Datum::Text(text)), SqlType::Unknown) => {
            let datum = if explicit {
                // A bit constant is read without the typmod, which the explicit length
                // coercion applies next (padding); other types read it as text.
                let from = match to {
                    SqlType::Bit(_) | SqlType::VarBit(_) => &SqlType::Unknown,
                    _ => &SqlType::Text,
                };
                types::cast(Datum::Text(text.clone()), from, to, true)?
            } else {
                types::parse_text(text, to)?
            };
            Ok(Expr::Literal(datum))
        }
        (Expr::Literal(datum), _) if !from.is_text() || explicit || to.is_text() => {
            if !explicit && !implicitly_castable(from, to) {
                return Err(SqlError::datatype_mismatch(format!(
                    "column is of type {} but expression is of type {}",
                    to.display_name(),
                    from.display_name()
                )));
            }
            Ok(Expr::Literal(types::cast(datum.clone(), from, to, explicit)?))
        }
        (Expr::Parameter(_), SqlType::Unknown) => {
            Ok(Expr::Cast { expr: Box::new(expr), from: SqlType::Text, to: to.clone(), explicit })
        }
        _ => {
            if !explicit && !implicitly_castable(from, to) {
                return Err(SqlError::datatype_mismatch(format!(
                    "column is of type {} but expression is of type {}",
                    to.display_name(),
                    from.display_name()
                )));
            }
            Ok(cast_expr(expr, from, to, explicit))
        }
    }
}

/// A cast to an object identifier type, never folded: resolving a name or an oid takes the
/// catalog, which the executor has (`system::objects`). Untyped input is read as text.
fn object_cast(expr: Expr, from: &SqlType, to: &SqlType, explicit: bool) -> Result<Expr> {
    if let Expr::Literal(Datum::Null) = expr {
        return Ok(expr);
    }
    let from = if *from == SqlType::Unknown { &SqlType::Text } else { from };
    if !explicit && !implicitly_castable(from, to) {
        return Err(SqlError::datatype_mismatch(format!(
            "column is of type {} but expression is of type {}",
            to.display_name(),
            from.display_name()
        )));
    }
    Ok(Expr::Cast { expr: Box::new(expr), from: from.clone(), to: to.clone(), explicit })
}

/// PostgreSQL's implicit and assignment casts that tierdb supports.
pub(crate) fn implicitly_castable(from: &SqlType, to: &SqlType) -> bool {
    if from == to || *from == SqlType::Unknown {
        return true;
    }
    if from.is_numeric_family() && to.is_numeric_family() {
        return true;
    }
    if to.is_text() {
        return true;
    }
    if from.is_temporal() && to.is_temporal() {
        return true;
    }
    // time to interval is implicit in PostgreSQL; a timestamp to time is an assignment.
    if matches!(
        (from, to),
        (SqlType::Time, SqlType::Interval)
            | (SqlType::Timestamp | SqlType::TimestampTz, SqlType::Time)
    ) {
        return true;
    }
    if pgvector_castable(from, to) {
        return true;
    }
    // bit and bit varying convert to each other implicitly (the length coercion runs).
    let bit = |ty: &SqlType| matches!(ty, SqlType::Bit(_) | SqlType::VarBit(_));
    if bit(from) && bit(to) {
        return true;
    }
    // Arrays convert element by element where the elements do (int4[] to int8[]).
    if let (Some(from), Some(to)) = (from.array_element(), to.array_element()) {
        return implicitly_castable(from, to);
    }
    // json and jsonb convert to each other on assignment (PostgreSQL's casts are
    // assignment casts).
    if matches!((from, to), (SqlType::Json, SqlType::Jsonb) | (SqlType::Jsonb, SqlType::Json)) {
        return true;
    }
    // Object identifiers and oid, int4 and int8 cast to each other implicitly.
    if matches!((from, to), (SqlType::Object(_), other) | (other, SqlType::Object(_)) if other.is_integer())
    {
        return true;
    }
    false
}

/// pgvector's implicit and assignment casts among vector, halfvec, sparsevec and arrays.
pub(crate) fn pgvector_castable(from: &SqlType, to: &SqlType) -> bool {
    // vector(n) to vector(m) checks the dimension count when it runs (pgvector's
    // `vector(vector, typmod)` cast is implicit).
    if matches!((from, to), (SqlType::Vector(_), SqlType::Vector(_))) {
        return true;
    }
    // pgvector: vector to halfvec is implicit, halfvec to vector and real[] and numeric
    // arrays to halfvec are assignment casts.
    if matches!(
        (from, to),
        (SqlType::Vector(_) | SqlType::HalfVec(_), SqlType::HalfVec(_))
            | (SqlType::HalfVec(_), SqlType::Vector(_))
    ) {
        return true;
    }
    // vector and halfvec to real[] (implicit and assignment casts).
    if let (SqlType::Vector(_) | SqlType::HalfVec(_), Some(SqlType::Float4)) =
        (from, to.array_element())
    {
        return true;
    }
    // vector and halfvec to sparsevec are implicit, sparsevec to them assignment casts.
    if matches!(
        (from, to),
        (SqlType::Vector(_) | SqlType::HalfVec(_) | SqlType::SparseVec(_), SqlType::SparseVec(_))
            | (SqlType::SparseVec(_), SqlType::Vector(_) | SqlType::HalfVec(_))
    ) {
        return true;
    }
    if let (Some(element), SqlType::Vector(_) | SqlType::HalfVec(_) | SqlType::SparseVec(_)) =
        (from.array_element(), to)
    {
        return matches!(
            element,
            SqlType::Int4 | SqlType::Float4 | SqlType::Float8 | SqlType::Numeric { .. }
        );
    }
    false
}
