//! A window's frame clause: ROWS, RANGE or GROUPS, its bounds and its exclusion, with
//! PostgreSQL 15's rules (gram.y's frame checks, parse_clause.c's transformWindowDefinitions
//! and transformFrameOffset).
//!
//! An offset is an expression without columns, evaluated when the Window node starts
//! (exec/window_frame.rs). ROWS and GROUPS offsets are bigints; a RANGE offset takes the
//! offset type of the in_range support function for the one ORDER BY column's type:
//! bigint for integers, numeric, double precision for floats, interval for date, time,
//! timestamp, timestamptz and interval.

use super::window::without_typmod;
use super::*;
use crate::plan::{FrameBound, FrameExclusion, FrameUnits, WindowFrame};

impl<'a> Binder<'a> {
    /// The frame of a window whose ORDER BY columns have `order_types`.
    pub(super) fn window_frame(
        &mut self,
        frame: Option<&ast::WindowFrame>,
        exclusion: FrameExclusion,
        order_types: &[SqlType],
        scope: &Scope,
    ) -> Result<WindowFrame> {
        let Some(frame) = frame else { return Ok(WindowFrame::DEFAULT) };
        check_bounds(frame)?;
        let (units, name) = match frame.units {
            ast::WindowFrameUnits::Rows => (FrameUnits::Rows, "ROWS"),
            ast::WindowFrameUnits::Range => (FrameUnits::Range, "RANGE"),
            ast::WindowFrameUnits::Groups => (FrameUnits::Groups, "GROUPS"),
        };
        let end = frame.end_bound.clone().unwrap_or(ast::WindowFrameBound::CurrentRow);
        let has_offset = [&frame.start_bound, &end].iter().any(|bound| {
            matches!(
                bound,
                ast::WindowFrameBound::Preceding(Some(_))
                    | ast::WindowFrameBound::Following(Some(_))
            )
        });
        if units == FrameUnits::Range && has_offset && order_types.len() != 1 {
            return Err(SqlError::new(
                "42P20",
                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
            ));
        }
        if units == FrameUnits::Groups && order_types.is_empty() {
            return Err(SqlError::new("42P20", "GROUPS mode requires an ORDER BY clause"));
        }
        let start = self.frame_bound(&frame.start_bound, units, name, order_types, scope)?;
        let end = self.frame_bound(&end, units, name, order_types, scope)?;
        Ok(WindowFrame { units, start, end, exclusion })
    }

    fn frame_bound(
        &mut self,
        bound: &ast::WindowFrameBound,
        units: FrameUnits,
        name: &str,
        order_types: &[SqlType],
        scope: &Scope,
    ) -> Result<FrameBound> {
        Ok(match bound {
            ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
            ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
            ast::WindowFrameBound::Preceding(Some(expr)) => {
                FrameBound::Preceding(self.frame_offset(expr, units, name, order_types, scope)?)
            }
            ast::WindowFrameBound::Following(Some(expr)) => {
                FrameBound::Following(self.frame_offset(expr, units, name, order_types, scope)?)
            }
        })
    }

    /// An offset: no columns (42P10), of the units' type.
    fn frame_offset(
        &mut self,
        expr: &ast::Expr,
        units: FrameUnits,
        name: &str,
        order_types: &[SqlType],
        scope: &Scope,
    ) -> Result<Expr> {
        let (bound, ty) = self.expr(expr, scope, None)?;
        let mut columns = Vec::new();
        bound.columns(&mut columns);
        if !columns.is_empty() {
            return Err(SqlError::new(
                "42P10",
                format!("argument of {name} must not contain variables"),
            ));
        }
        let target = match units {
            FrameUnits::Range => in_range_offset_type(&order_types[0], &ty)?,
            FrameUnits::Rows | FrameUnits::Groups => {
                if !implicitly_castable(&ty, &SqlType::Int8) {
                    return Err(SqlError::new(
                        "42804",
                        format!(
                            "argument of {name} must be type bigint, not type {}",
                            ty.display_name()
                        ),
                    ));
                }
                SqlType::Int8
            }
        };
        coerce(bound, &ty, &target, false)
    }
}

/// gram.y's checks of the bounds' kinds (42P20).
fn check_bounds(frame: &ast::WindowFrame) -> Result<()> {
    use ast::WindowFrameBound::{CurrentRow, Following, Preceding};
    let invalid = |message: &str| Err(SqlError::new("42P20", message.to_string()));
    let Some(end) = &frame.end_bound else {
        return match &frame.start_bound {
            Following(None) => invalid("frame start cannot be UNBOUNDED FOLLOWING"),
            Following(Some(_)) => {
                invalid("frame starting from following row cannot end with current row")
            }
            _ => Ok(()),
        };
    };
    match (&frame.start_bound, end) {
        (Following(None), _) => invalid("frame start cannot be UNBOUNDED FOLLOWING"),
        (_, Preceding(None)) => invalid("frame end cannot be UNBOUNDED PRECEDING"),
        (CurrentRow, Preceding(Some(_))) => {
            invalid("frame starting from current row cannot have preceding rows")
        }
        (Following(Some(_)), Preceding(Some(_)) | CurrentRow) => {
            invalid("frame starting from following row cannot have preceding rows")
        }
        _ => Ok(()),
    }
}

/// The offset type of the in_range support function for an ORDER BY column of type
/// `column` and an offset of type `offset` (0A000 when there is none, as PostgreSQL 15).
fn in_range_offset_type(column: &SqlType, offset: &SqlType) -> Result<SqlType> {
    let (target, accepted) = match column {
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => (SqlType::Int8, offset.is_integer()),
        SqlType::Numeric { .. } => {
            (SqlType::numeric(), offset.is_integer() || matches!(offset, SqlType::Numeric { .. }))
        }
        SqlType::Float4 | SqlType::Float8 => (SqlType::Float8, offset.is_numeric_family()),
        SqlType::Date
        | SqlType::Time
        | SqlType::Timestamp
        | SqlType::TimestampTz
        | SqlType::Interval => {
            (SqlType::Interval, matches!(offset, SqlType::Interval | SqlType::Time))
        }
        _ => {
            return Err(SqlError::unsupported(format!(
                "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                without_typmod(column.clone()).display_name()
            )))
        }
    };
    if accepted || *offset == SqlType::Unknown {
        return Ok(target);
    }
    Err(SqlError::unsupported(format!(
        "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {}",
        without_typmod(column.clone()).display_name(),
        without_typmod(offset.clone()).display_name()
    )))
}
