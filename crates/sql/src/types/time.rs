//! PostgreSQL's `time` (without time zone): microseconds since midnight, 00:00:00 to
//! 24:00:00 inclusive, as time_in and time_out read and print it.

use crate::error::{Result, SqlError};

/// pg_type's OID of time, and of its array type `_time`.
pub const TIME_OID: u32 = 1083;
pub const TIME_ARRAY_OID: u32 = 1183;
const MICROSECONDS_PER_DAY: i64 = 86_400_000_000;

/// time_in: `h:m[:s[.f]]` with an optional AM / PM, and an optional leading date (ignored,
/// as PostgreSQL ignores it). 22007 when not a time, 22008 when a field is out of range.
pub fn parse_time(text: &str) -> Result<i64> {
    let syntax =
        || SqlError::new("22007", format!("invalid input syntax for type time: \"{text}\""));
    let range =
        || SqlError::new("22008", format!("date/time field value out of range: \"{text}\""));
    let lowered = text.trim().to_ascii_lowercase();
    let mut words: Vec<&str> = lowered.split_whitespace().collect();
    // A leading date (`2024-01-01 10:00`) is accepted and ignored by time_in.
    if words.len() > 1 && words[0].contains('-') && !words[0].contains(':') {
        super::parse_date(words[0]).map_err(|_| syntax())?;
        words.remove(0);
    }
    let (clock, meridiem) = match words.as_slice() {
        [clock] => match clock.strip_suffix("am").or_else(|| clock.strip_suffix("pm")) {
            Some(stripped) => (stripped, Some(clock.ends_with("pm"))),
            None => (*clock, None),
        },
        [clock, "am"] => (*clock, Some(false)),
        [clock, "pm"] => (*clock, Some(true)),
        _ => return Err(syntax()),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(syntax());
    }
    let integer = |part: &str| -> Result<i64> {
        if part.is_empty() || part.len() > 9 || !part.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(syntax());
        }
        part.parse().map_err(|_| syntax())
    };
    let mut hours = integer(parts[0])?;
    let minutes = integer(parts[1])?;
    let (seconds, fraction) = match parts.get(2) {
        None => (0, 0.0),
        Some(part) => {
            let (whole, fraction) = part.split_once('.').unwrap_or((part, ""));
            if !fraction.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(syntax());
            }
            let fraction: f64 = if fraction.is_empty() {
                0.0
            } else {
                format!("0.{fraction}").parse().unwrap_or(0.0)
            };
            (integer(whole)?, fraction)
        }
    };
    if let Some(afternoon) = meridiem {
        if hours > 12 {
            return Err(range());
        }
        hours = match (hours, afternoon) {
            (12, false) => 0,
            (12, true) => 12,
            (hour, true) => hour + 12,
            (hour, false) => hour,
        };
    }
    #[allow(clippy::cast_possible_truncation)]
    let fraction_micros = (fraction * 1e6).round_ties_even() as i64;
    let micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + fraction_micros;
    if hours > 24 || minutes > 59 || seconds > 60 || micros > MICROSECONDS_PER_DAY {
        return Err(range());
    }
    Ok(micros)
}

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
