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
        let qualified = interval.leading_field.is_some()
            || interval.last_field.is_some()
            || interval.leading_precision.is_some()
            || interval.fractional_seconds_precision.is_some();
        if qualified {
            return Err(SqlError::unsupported(
                "interval field qualifiers and precision are not supported",
            ));
        }
        let (bound, ty) = self.expr(&interval.value, scope, Some(&SqlType::Interval))?;
        match (&bound, &ty) {
            (Expr::Literal(Datum::Text(text)), SqlType::Unknown) => Ok((
                Expr::Literal(Datum::Interval(types::parse_interval(text)?)),
                SqlType::Interval,
            )),
            _ => Err(SqlError::unsupported(
                "INTERVAL with a value other than a string literal is not supported",
            )),
        }
    }
}
