//! PostgreSQL's `time` (without time zone): microseconds since midnight, 00:00:00 to
//! 24:00:00 inclusive, as time_in and time_out read and print it.

use crate::error::{Result, SqlError};

/// pg_type's OID of time, and of its array type `_time`.
pub const TIME_OID: u32 = 1083;
pub const TIME_ARRAY_OID: u32 = 1183;
const MICROSECONDS_PER_DAY: i64 = 86_400_000_000;

/// time_out: `hh:mm:ss` and the fraction's significant digits.
pub fn format_time(micros: i64) -> String {
    let seconds = micros / 1_000_000;
    let fraction = micros % 1_000_000;
    let mut text = format!("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
    if fraction != 0 {
        text.push('.');
        text.push_str(format!("{fraction:06}").trim_end_matches('0'));
    }
    text
}

/// time_recv: the microseconds, checked to lie within a day.
pub fn receive_time(micros: i64) -> Result<i64> {
    if !(0..=MICROSECONDS_PER_DAY).contains(&micros) {
        return Err(SqlError::new("22008", "time out of range"));
    }
    Ok(micros)
}
