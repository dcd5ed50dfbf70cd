//! Date, timestamp, timestamptz and time input as PostgreSQL 15 reads it (datetime.c's
//! ParseDateTime, DecodeDateTime and DecodeTimeOnly, DateStyle ISO, MDY): ISO dates and
//! run-together ones (`20240229`), month names (`Feb 29 2024`, `29 Feb 2024`,
//! `2024-Feb-29`), MDY with slashes, ISO 8601's `T`, Julian days (`J2451187`), days of the
//! year (`2024.060`), AM / PM, BC, two-digit years, numeric zones, zone abbreviations and
//! names, and the special words (`epoch`, `infinity`, `now`, `today`, `allballs`).
//!
//! `lexer` cuts the input into fields, `decode` reads them into calendar fields (`Tm`) with
//! `fields`' readers of single fields, and this module makes the value and the error.

mod decode;
mod fields;
mod keywords;
mod lexer;

use std::cell::Cell;

use self::decode::{Clock, Decoded, Outcome, ZoneChoice};
use self::fields::Tm;
use crate::error::{Result, SqlError};
use crate::types::datetime_parse::{date_to_julian, valid_julian, DATE_END_JULIAN_DAY};
use crate::types::{EPOCH_JULIAN_DAY, MICROSECONDS_PER_DAY};

/// Why input is not a date or time (PostgreSQL's DTERR codes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum DateError {
    BadFormat,
    FieldOverflow,
    /// A month or day out of range: the order of the fields may be the cause.
    MonthDayOverflow,
    ZoneOverflow,
    ZoneNotRecognized(String),
}

/// Days from 2000-01-01 back to 1970-01-01, the `epoch`.
const UNIX_EPOCH_DAYS: i64 = -10_957;
/// PostgreSQL's infinite dates and timestamps (DATEVAL_NOEND, DT_NOEND and the begins).
pub const DATE_INFINITY: i32 = i32::MAX;
pub const DATE_MINUS_INFINITY: i32 = i32::MIN;
pub const TIMESTAMP_INFINITY: i64 = i64::MAX;
pub const TIMESTAMP_MINUS_INFINITY: i64 = i64::MIN;

thread_local! {
    /// The running statement's time (UTC microseconds since 2000-01-01), which `now`,
    /// `today`, `tomorrow` and `yesterday` read as now() does.
    static STATEMENT_TIME: Cell<Option<i64>> = const { Cell::new(None) };
}

/// Makes `utc_micros` the time that date/time input's `now` reads on this thread.
pub fn install_statement_time(utc_micros: i64) {
    STATEMENT_TIME.with(|time| time.set(Some(utc_micros)));
}

/// Forgets the statement's time once it ended, so that input read outside a statement (an
/// extended-protocol parameter decoded on a thread another session used) reads the clock,
/// not a time left by another statement.
pub fn clear_statement_time() {
    STATEMENT_TIME.with(|time| time.set(None));
}

/// The time `install_statement_time` made the statement's (the clock's time before any).
fn statement_time_micros() -> i64 {
    STATEMENT_TIME.with(Cell::get).unwrap_or_else(crate::types::now_micros)
}

fn statement_clock() -> Clock {
    let utc = statement_time_micros();
    crate::types::with_session_zone(|zone| {
        let offset_east_seconds = zone.offset_at_utc(utc);
        Clock {
            local_micros: utc + i64::from(offset_east_seconds) * 1_000_000,
            offset_east_seconds,
        }
    })
}

/// The error PostgreSQL's DateTimeParseError gives for `text` read as `type_name`.
fn input_error(error: DateError, text: &str, type_name: &str) -> SqlError {
    match error {
        DateError::BadFormat => {
            SqlError::new("22007", format!("invalid input syntax for type {type_name}: \"{text}\""))
        }
        DateError::FieldOverflow | DateError::MonthDayOverflow => {
            SqlError::new("22008", format!("date/time field value out of range: \"{text}\""))
        }
        DateError::ZoneOverflow => {
            SqlError::new("22009", format!("time zone displacement out of range: \"{text}\""))
        }
        DateError::ZoneNotRecognized(name) => crate::types::zone_not_recognized(&name),
    }
}

fn decode_date_time(text: &str, type_name: &str) -> Result<Decoded> {
    lexer::split_fields(text)
        .and_then(|fields| decode::decode_date_time(&fields, &statement_clock))
        .map_err(|error| input_error(error, text, type_name))
}

/// date_in: days since 2000-01-01; infinity and -infinity as PostgreSQL stores them.
pub fn parse_date(text: &str) -> Result<i32> {
    let decoded = decode_date_time(text, "date")?;
    let tm = match decoded.outcome {
        Outcome::Date => decoded.tm,
        Outcome::Epoch => return Ok(i32::try_from(UNIX_EPOCH_DAYS).expect("a small day number")),
        Outcome::Late => return Ok(DATE_INFINITY),
        Outcome::Early => return Ok(DATE_MINUS_INFINITY),
    };
    let out_of_range = || SqlError::new("22008", format!("date out of range: \"{text}\""));
    let julian = julian_day(&tm).ok_or_else(out_of_range)?;
    if !(0..DATE_END_JULIAN_DAY).contains(&julian) {
        return Err(out_of_range());
    }
    i32::try_from(julian - EPOCH_JULIAN_DAY).map_err(|_| out_of_range())
}

/// The Julian day of the fields' date, None past the Julian-day routines' range.
fn julian_day(tm: &Tm) -> Option<i64> {
    let (year, month) = (i64::from(tm.year), i64::from(tm.month));
    valid_julian(year, month).then(|| date_to_julian(year, month, i64::from(tm.day)))
}

/// timestamp_in and timestamptz_in: microseconds since 2000-01-01, wall-clock without
/// `with_zone` (a zone in the input is read and ignored), UTC with it.
pub fn parse_timestamp(text: &str, with_zone: bool) -> Result<i64> {
    let type_name = if with_zone { "timestamp with time zone" } else { "timestamp" };
    let decoded = decode_date_time(text, type_name)?;
    match decoded.outcome {
        Outcome::Date => {}
        Outcome::Epoch => return Ok(UNIX_EPOCH_DAYS * MICROSECONDS_PER_DAY),
        Outcome::Late => return Ok(TIMESTAMP_INFINITY),
        Outcome::Early => return Ok(TIMESTAMP_MINUS_INFINITY),
    }
    let out_of_range = || SqlError::new("22008", format!("timestamp out of range: \"{text}\""));
    let local = local_micros(&decoded.tm).ok_or_else(out_of_range)?;
    let micros =
        if with_zone { to_utc(local, &decoded.zone).ok_or_else(out_of_range)? } else { local };
    crate::types::check_timestamp(micros).map_err(|_| out_of_range())
}

/// tm2timestamp without a zone: None past the Julian-day routines or i64.
fn local_micros(tm: &Tm) -> Option<i64> {
    let days = julian_day(tm)? - EPOCH_JULIAN_DAY;
    days.checked_mul(MICROSECONDS_PER_DAY)?.checked_add(tm.time_micros())
}

fn to_utc(local: i64, zone: &ZoneChoice) -> Option<i64> {
    match zone {
        ZoneChoice::Session => Some(crate::types::session_local_to_utc(local)),
        ZoneChoice::OffsetEast(east_seconds) => {
            local.checked_sub(i64::from(*east_seconds) * 1_000_000)
        }
        ZoneChoice::Named(zone) => Some(zone.local_to_utc(local)),
    }
}

/// time_in: microseconds since midnight; a date and a zone in the input are read and
/// ignored.
pub fn parse_time(text: &str) -> Result<i64> {
    let tm = lexer::split_fields(text)
        .and_then(|fields| decode::decode_time_only(&fields, &statement_clock))
        .map_err(|error| input_error(error, text, "time"))?;
    Ok(tm.time_micros())
}

#[cfg(test)]
mod tests;
