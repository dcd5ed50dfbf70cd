//! The date and time operators' typing (PostgreSQL's operator catalogue for interval, time,
//! date and timestamps) and INTERVAL literals.

use super::*;

/// The operand types `left op right` converts to and its result type, for the date and time
/// operators; `None` when no such operator applies (the numeric rules decide).
pub(crate) fn operator_types(
    op: ArithmeticOp,
    left: &SqlType,
    right: &SqlType,
) -> Result<Option<(SqlType, SqlType, SqlType)>> {
    use SqlType::Time;
    // time + time matches both time + interval and interval + time (time converts to
    // interval implicitly): PostgreSQL's 42725.
    if (op, left, right) == (ArithmeticOp::Add, &Time, &Time) {
        return Err(SqlError::new(
            "42725",
            "operator is not unique: time without time zone + time without time zone",
        ));
    }
    Ok(operator_result(op, left, right))
}

fn operator_result(
    op: ArithmeticOp,
    left: &SqlType,
    right: &SqlType,
) -> Option<(SqlType, SqlType, SqlType)> {
    use SqlType::{Date, Interval, Time, Timestamp, TimestampTz, Unknown};
    let same = |ty: &SqlType| Some((ty.clone(), ty.clone(), ty.clone()));
    let number = |ty: &SqlType| ty.is_numeric_family() || *ty == Unknown;
    match (op, left, right) {
        (ArithmeticOp::Add | ArithmeticOp::Subtract, Interval, Interval | Unknown)
        | (ArithmeticOp::Add | ArithmeticOp::Subtract, Unknown, Interval) => same(&Interval),
        (ArithmeticOp::Multiply | ArithmeticOp::Divide, Interval, other) if number(other) => {
            Some((Interval, SqlType::Float8, Interval))
        }
        (ArithmeticOp::Multiply, other, Interval) if number(other) => {
            Some((SqlType::Float8, Interval, Interval))
        }
        (ArithmeticOp::Add, Interval, ty @ (Timestamp | TimestampTz | Time)) => {
            Some((Interval, ty.clone(), ty.clone()))
        }
        (ArithmeticOp::Add, Interval, Date) => Some((Interval, Date, Timestamp)),
        (
            ArithmeticOp::Add | ArithmeticOp::Subtract,
            ty @ (Timestamp | TimestampTz | Time),
            Interval,
        ) => Some((ty.clone(), Interval, ty.clone())),
        (ArithmeticOp::Add | ArithmeticOp::Subtract, Date, Interval) => {
            Some((Date, Interval, Timestamp))
        }
        // An untyped literal added to a timestamp or a time is an interval.
        (ArithmeticOp::Add, ty @ (Timestamp | TimestampTz), Unknown) => {
            Some((ty.clone(), Interval, ty.clone()))
        }
        (ArithmeticOp::Add, Unknown, ty @ (Timestamp | TimestampTz)) => {
            Some((Interval, ty.clone(), ty.clone()))
        }
        (ArithmeticOp::Subtract, ty @ (Timestamp | TimestampTz), Unknown)
        | (ArithmeticOp::Subtract, Unknown, ty @ (Timestamp | TimestampTz)) => {
            Some((ty.clone(), ty.clone(), Interval))
        }
        (ArithmeticOp::Subtract, Timestamp, Timestamp) => Some((Timestamp, Timestamp, Interval)),
        (ArithmeticOp::Subtract, Timestamp | TimestampTz, Timestamp | TimestampTz) => {
            Some((TimestampTz, TimestampTz, Interval))
        }
        (ArithmeticOp::Subtract, Time, Time | Unknown)
        | (ArithmeticOp::Subtract, Unknown, Time) => Some((Time, Time, Interval)),
        (ArithmeticOp::Add, Date, Time) => Some((Date, Time, Timestamp)),
        (ArithmeticOp::Add, Time, Date) => Some((Time, Date, Timestamp)),
        _ => None,
    }
}

impl Binder<'_> {
    /// `INTERVAL 'text'`: the literal read by interval_in. Field qualifiers and precision
    /// (`INTERVAL '1' DAY`, `INTERVAL(3) '...'`) are not supported.
    pub(crate) fn interval_literal(
        &mut self,
        interval: &ast::Interval,
        scope: &Scope,
    ) -> Result<(Expr, SqlType)> {
        if interval.leading_precision.is_some() || interval.fractional_seconds_precision.is_some() {
            return Err(SqlError::unsupported("interval precision (INTERVAL(p)) is not supported"));
        }
        let leading = interval.leading_field.as_ref().map(interval_field).transpose()?;
        let last = interval.last_field.as_ref().map(interval_field).transpose()?;
        let (bound, ty) = self.expr(&interval.value, scope, Some(&SqlType::Interval))?;
        let (Expr::Literal(Datum::Text(text)), SqlType::Unknown) = (&bound, &ty) else {
            return Err(SqlError::unsupported(
                "INTERVAL with a value other than a string literal is not supported",
            ));
        };
        let value = match leading {
            Some(leading) => types::parse_qualified_interval(text, leading, last)?,
            None => types::parse_interval(text)?,
        };
        Ok((Expr::Literal(Datum::Interval(value)), SqlType::Interval))
    }
}

/// A field of an interval qualifier; PostgreSQL's grammar has only these six (42601).
fn interval_field(field: &ast::DateTimeField) -> Result<types::IntervalField> {
    use types::IntervalField as F;
    Ok(match field {
        ast::DateTimeField::Year => F::Year,
        ast::DateTimeField::Month => F::Month,
        ast::DateTimeField::Day => F::Day,
        ast::DateTimeField::Hour => F::Hour,
        ast::DateTimeField::Minute => F::Minute,
        ast::DateTimeField::Second => F::Second,
        other => return Err(SqlError::syntax(format!("syntax error at or near \"{other}\""))),
    })
}
