//! nextval, currval, lastval and setval (PostgreSQL's sequence.c) over the catalog's
//! sequences, and the session's memory of the values nextval returned.
//!
//! Sequence changes are not transactional, as in PostgreSQL: a value nextval handed out
//! stays used, and setval stays in effect when the calling transaction rolls back. The
//! session remembers, per sequence, the last value nextval returned (or setval set with
//! is_called), which currval reads, and which sequence nextval advanced last, which lastval
//! reads. DISCARD SEQUENCES (and DISCARD ALL) forget both.

use super::objects::{sequence_by_name, sequence_by_oid};
use crate::error::{Result, SqlError};
use crate::functions::SequenceCall;
use crate::system::{SequenceRef, SessionInfo};
use crate::types::SqlType;

/// Runs one sequence function for the session.
pub fn sequence_call(call: SequenceCall<'_>, session: &SessionInfo<'_>) -> Result<i64> {
    match call {
        SequenceCall::Next(name) => {
            let sequence = resolve(name, session)?;
            let value = if sequence.standalone {
                let meta = session.catalog.sequence_object(&sequence.name);
                let options = meta
                    .as_ref()
                    .and_then(|meta| meta.sequence.as_ref())
                    .ok_or_else(|| SqlError::undefined_table(&sequence.name))?;
                session.catalog.nextval_object(&sequence.name, options)?
            } else {
                session.catalog.nextval(&sequence.name, sequence_max(&sequence.ty))?
            };
            let mut values = session.sequence_values.borrow_mut();
            values.current.insert(sequence.oid, value);
            values.last_advanced = Some(sequence.oid);
            Ok(value)
        }
        SequenceCall::Current(name) => {
            let sequence = resolve(name, session)?;
            let values = session.sequence_values.borrow();
            values.current.get(&sequence.oid).copied().ok_or_else(|| {
                SqlError::new(
                    "55000",
                    format!(
                        "currval of sequence \"{}\" is not yet defined in this session",
                        sequence.name
                    ),
                )
            })
        }
        SequenceCall::Last => {
            let not_defined =
                || SqlError::new("55000", "lastval is not yet defined in this session");
            let oid = session.sequence_values.borrow().last_advanced.ok_or_else(not_defined)?;
            // A dropped sequence has no last value (PostgreSQL's check that it still exists).
            sequence_by_oid(i64::from(oid), session).map_err(|_| not_defined())?;
            let values = session.sequence_values.borrow();
            values.current.get(&oid).copied().ok_or_else(not_defined)
        }
        SequenceCall::Set { name, value, is_called } => {
            let sequence = resolve(name, session)?;
            set_value(&sequence, value, is_called, session)
        }
    }
}

/// The sequence `name` names, resolved once per statement (a serial column's DEFAULT calls
/// nextval for every row inserted).
fn resolve(name: &str, session: &SessionInfo<'_>) -> Result<SequenceRef> {
    if let Some(sequence) = session.sequence_refs.borrow().get(name) {
        return Ok(sequence.clone());
    }
    let sequence = sequence_by_name(name, session)?;
    session.sequence_refs.borrow_mut().insert(name.to_string(), sequence.clone());
    Ok(sequence)
}

/// setval: `value` must lie within the sequence's bounds (22003); with is_called the next
/// nextval returns the value after it, and currval returns it (lastval is unchanged).
fn set_value(
    sequence: &SequenceRef,
    value: i64,
    is_called: bool,
    session: &SessionInfo<'_>,
) -> Result<i64> {
    let (minimum, maximum) = (sequence.minimum, sequence.maximum);
    if !(minimum..=maximum).contains(&value) {
        return Err(SqlError::new(
            "22003",
            format!(
                "setval: value {value} is out of bounds for sequence \"{}\" ({minimum}..{maximum})",
                sequence.name
            ),
        ));
    }
    if sequence.standalone {
        session.catalog.write_state(&sequence.name, value, is_called)?;
    } else {
        session.catalog.setval(&sequence.name, value, is_called)?;
    }
    if is_called {
        session.sequence_values.borrow_mut().current.insert(sequence.oid, value);
    }
    Ok(value)
}

/// The smallest value of a serial or identity column's sequence (its START and MINVALUE).
pub const SEQUENCE_MIN: i64 = 1;

/// The largest value of a sequence whose column has type `ty` (PostgreSQL's MAXVALUE of
/// smallserial, serial and bigserial).
pub fn sequence_max(ty: &SqlType) -> i64 {
    match ty {
        SqlType::Int2 => i64::from(i16::MAX),
        SqlType::Int4 => i64::from(i32::MAX),
        _ => i64::MAX,
    }
}
