//! Date and time arithmetic as PostgreSQL computes it: timestamp ± interval with month
//! arithmetic that clamps the day (timestamp_pl_interval), timestamp - timestamp
//! (timestamp_mi, then justify_hours), time ± interval modulo a day, age's field-wise
//! subtraction with borrow (timestamp_age), date_trunc and extract / date_part fields.
//!
//! Timestamps are microseconds since 2000-01-01; a timestamptz's are UTC, and its fields,
//! day arithmetic and truncation are those of the wall-clock time in the session zone
//! (zone.rs), as in PostgreSQL.

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;

use super::{epoch_date, Datum, Interval, MICROSECONDS_PER_DAY};
use crate::error::{Result, SqlError};

/// PostgreSQL's timestamp range: 4714-11-24 BC 00:00 to 294277-01-01 00:00 (exclusive).
const MICROSECONDS_PER_SECOND: i64 = 1_000_000;
const TIMESTAMP_MIN_MICROS: i64 = -211_813_488_000_000_000;
const TIMESTAMP_END_MICROS: i64 = 9_223_371_331_200_000_000;

pub fn timestamp_out_of_range() -> SqlError {
    SqlError::new("22008", "timestamp out of range")
}

/// Whether a date is `infinity` or `-infinity`, which arithmetic and casts keep as they are.
pub fn is_infinite_date(days: i32) -> bool {
    days == super::DATE_INFINITY || days == super::DATE_MINUS_INFINITY
}

/// Whether a timestamp (or timestamptz) is `infinity` or `-infinity`.
pub fn is_infinite_timestamp(micros: i64) -> bool {
    micros == super::TIMESTAMP_INFINITY || micros == super::TIMESTAMP_MINUS_INFINITY
}

/// The infinite timestamp of an infinite date, as date2timestamp maps them.
fn infinite_timestamp_of(days: i32) -> Option<i64> {
    match days {
        super::DATE_INFINITY => Some(super::TIMESTAMP_INFINITY),
        super::DATE_MINUS_INFINITY => Some(super::TIMESTAMP_MINUS_INFINITY),
        _ => None,
    }
}

/// The infinite date of an infinite timestamp (timestamp_date).
pub fn infinite_date_of(micros: i64) -> Option<i32> {
    match micros {
        super::TIMESTAMP_INFINITY => Some(super::DATE_INFINITY),
        super::TIMESTAMP_MINUS_INFINITY => Some(super::DATE_MINUS_INFINITY),
        _ => None,
    }
}

pub fn check_timestamp(micros: i64) -> Result<i64> {
    if !(TIMESTAMP_MIN_MICROS..TIMESTAMP_END_MICROS).contains(&micros) {
        return Err(timestamp_out_of_range());
    }
    Ok(micros)
}

/// date2timestamp: a date's midnight, 22008 for a date past the timestamp range (to_date
/// reaches dates up to 5874897 AD, whose microseconds overflow i64).
pub fn date_to_timestamp_micros(days: i32) -> Result<i64> {
    if let Some(infinite) = infinite_timestamp_of(days) {
        return Ok(infinite);
    }
    i64::from(days)
        .checked_mul(MICROSECONDS_PER_DAY)
        .filter(|micros| (TIMESTAMP_MIN_MICROS..TIMESTAMP_END_MICROS).contains(micros))
        .ok_or_else(date_out_of_range_for_timestamp)
}

fn date_out_of_range_for_timestamp() -> SqlError {
    SqlError::new("22008", "date out of range for timestamp")
}

/// date2timestamptz: a date's midnight in the session zone, range-checked as PostgreSQL does.
pub fn date_to_timestamptz_micros(days: i32) -> Result<i64> {
    if let Some(infinite) = infinite_timestamp_of(days) {
        return Ok(infinite);
    }
    let utc = super::session_local_to_utc(date_to_timestamp_micros(days)?);
    check_timestamp(utc).map_err(|_| date_out_of_range_for_timestamp())
}

/// A timestamp's calendar fields.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    pub year: i32,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub microsecond: i64,
}

pub fn date_of_days(days: i64) -> Result<NaiveDate> {
    epoch_date().checked_add_signed(chrono::Duration::days(days)).ok_or_else(timestamp_out_of_range)
}

/// A date's day number since 2000-01-01.
pub fn days_of_date(date: NaiveDate) -> i64 {
    (date - epoch_date()).num_days()
}

pub fn decompose(micros: i64) -> Result<Fields> {
    let date = date_of_days(micros.div_euclid(MICROSECONDS_PER_DAY))?;
    let time = micros.rem_euclid(MICROSECONDS_PER_DAY);
    Ok(Fields {
        year: date.year(),
        month: date.month(),
        day: date.day(),
        hour: time / 3_600_000_000,
        minute: time / 60_000_000 % 60,
        second: time / 1_000_000 % 60,
        microsecond: time % 1_000_000,
    })
}

/// The timestamp of calendar fields; the day must exist in its month.
pub fn compose(fields: &Fields) -> Result<i64> {
    let date = NaiveDate::from_ymd_opt(fields.year, fields.month, fields.day)
        .ok_or_else(timestamp_out_of_range)?;
    let time =
        ((fields.hour * 60 + fields.minute) * 60 + fields.second) * 1_000_000 + fields.microsecond;
    days_of_date(date)
        .checked_mul(MICROSECONDS_PER_DAY)
        .and_then(|micros| micros.checked_add(time))
        .ok_or_else(timestamp_out_of_range)
        .and_then(check_timestamp)
}

pub fn days_in_month(year: i32, month: u32) -> u32 {
    let (next_year, next_month) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
    match (
        NaiveDate::from_ymd_opt(next_year, next_month, 1),
        NaiveDate::from_ymd_opt(year, month, 1),
    ) {
        (Some(next), Some(first)) => u32::try_from((next - first).num_days()).unwrap_or(31),
        _ => 31,
    }
}

/// timestamp_pl_interval: months first (the day clamped to the new month's length), then
/// days, then the time.
pub fn timestamp_plus_interval(micros: i64, interval: &Interval) -> Result<i64> {
    if is_infinite_timestamp(micros) {
        return Ok(micros);
    }
    let mut result = micros;
    if interval.months != 0 {
        let mut fields = decompose(result)?;
        let month_index =
            i64::from(fields.year) * 12 + i64::from(fields.month) - 1 + i64::from(interval.months);
        fields.year =
            i32::try_from(month_index.div_euclid(12)).map_err(|_| timestamp_out_of_range())?;
        fields.month = u32::try_from(month_index.rem_euclid(12) + 1).expect("1 to 12");
        fields.day = fields.day.min(days_in_month(fields.year, fields.month));
        result = compose(&fields)?;
    }
    let days_micros = i64::from(interval.days) * MICROSECONDS_PER_DAY;
    result = result
        .checked_add(days_micros)
        .and_then(|micros| micros.checked_add(interval.micros))
        .ok_or_else(timestamp_out_of_range)?;
    check_timestamp(result)
}

/// timestamptz_pl_interval: months and days move the wall-clock time in the session zone
/// (so `+ '1 day'` across a DST change is 23 or 25 hours), the time part moves the instant.
pub fn timestamptz_plus_interval(utc_micros: i64, interval: &Interval) -> Result<i64> {
    if is_infinite_timestamp(utc_micros) {
        return Ok(utc_micros);
    }
    let mut result = utc_micros;
    if interval.months != 0 || interval.days != 0 {
        let local = super::utc_to_session_local(utc_micros);
        let moved =
            timestamp_plus_interval(local, &Interval::new(interval.months, interval.days, 0))?;
        result = super::session_local_to_utc(moved);
    }
    result.checked_add(interval.micros).ok_or_else(timestamp_out_of_range).and_then(check_timestamp)
}

/// date_trunc on a timestamptz in `zone`: the wall-clock time truncated, then placed in the
/// zone again for units of a day or more; smaller units keep the instant's own offset (an
/// hour in a repeated fall-back hour stays in its half), as PostgreSQL's
/// timestamptz_trunc_internal.
pub fn truncate_timestamptz(field: Field, utc_micros: i64, zone: &super::Zone) -> Result<i64> {
    if is_infinite_timestamp(utc_micros) {
        return Ok(utc_micros);
    }
    let offset_micros = i64::from(zone.offset_at_utc(utc_micros)) * MICROSECONDS_PER_SECOND;
    let local = utc_micros.saturating_add(offset_micros);
    let truncated = truncate_timestamp(field, local, "timestamp with time zone")?;
    let below_day = matches!(
        field,
        Field::Hour | Field::Minute | Field::Second | Field::Milliseconds | Field::Microseconds
    );
    Ok(if below_day { truncated - offset_micros } else { zone.local_to_utc(truncated) })
}

/// extract(field from timestamptz): the session zone's wall-clock fields and offset; the
/// epoch is the instant's.
pub fn extract_timestamptz(field: Field, utc_micros: i64) -> Result<Decimal> {
    const TYPE_NAME: &str = "timestamp with time zone";
    let offset_seconds = super::with_session_zone(|zone| zone.offset_at_utc(utc_micros));
    Ok(match field {
        Field::Epoch => return extract_timestamp(field, utc_micros, TYPE_NAME),
        Field::Timezone => Decimal::from(offset_seconds),
        Field::TimezoneHour => Decimal::from(offset_seconds / 3600),
        Field::TimezoneMinute => Decimal::from(offset_seconds / 60 % 60),
        _ => {
            let local =
                utc_micros.saturating_add(i64::from(offset_seconds) * MICROSECONDS_PER_SECOND);
            return extract_timestamp(field, local, TYPE_NAME);
        }
    })
}

/// timestamp_mi: the difference in microseconds, whole days moved into days.
pub fn timestamp_difference(left: i64, right: i64) -> Result<Interval> {
    if is_infinite_timestamp(left) || is_infinite_timestamp(right) {
        return Err(SqlError::new("22008", "cannot subtract infinite timestamps"));
    }
    let micros = left.checked_sub(right).ok_or_else(super::interval_out_of_range)?;
    Interval::new(0, 0, micros).justify_hours()
}

/// time ± interval: the interval's time added modulo a day.
fn time_plus_interval(micros: i64, interval: &Interval) -> i64 {
    let sum = (i128::from(micros) + i128::from(interval.micros))
        .rem_euclid(i128::from(MICROSECONDS_PER_DAY));
    i64::try_from(sum).expect("below a day")
}

/// `left + right` for the date and time operand pairs; `None` for other operands.
pub fn add_datetime(left: &Datum, right: &Datum) -> Result<Option<Datum>> {
    Ok(Some(match (left, right) {
        (Datum::Interval(a), Datum::Interval(b)) => Datum::Interval(a.checked_add(b)?),
        (Datum::Timestamp(micros), Datum::Interval(interval))
        | (Datum::Interval(interval), Datum::Timestamp(micros)) => {
            Datum::Timestamp(timestamp_plus_interval(*micros, interval)?)
        }
        (Datum::TimestampTz(micros), Datum::Interval(interval))
        | (Datum::Interval(interval), Datum::TimestampTz(micros)) => {
            Datum::TimestampTz(timestamptz_plus_interval(*micros, interval)?)
        }
        (Datum::Date(days), Datum::Interval(interval))
        | (Datum::Interval(interval), Datum::Date(days)) => {
            Datum::Timestamp(timestamp_plus_interval(date_to_timestamp_micros(*days)?, interval)?)
        }
        (Datum::Time(micros), Datum::Interval(interval))
        | (Datum::Interval(interval), Datum::Time(micros)) => {
            Datum::Time(time_plus_interval(*micros, interval))
        }
        (Datum::Date(days), Datum::Time(micros)) | (Datum::Time(micros), Datum::Date(days)) => {
            let midnight = date_to_timestamp_micros(*days)?;
            let infinite = is_infinite_timestamp(midnight);
            Datum::Timestamp(if infinite { midnight } else { check_timestamp(midnight + micros)? })
        }
        _ => return Ok(None),
    }))
}

/// `left - right` for the date and time operand pairs; `None` for other operands.
pub fn subtract_datetime(left: &Datum, right: &Datum) -> Result<Option<Datum>> {
    Ok(Some(match (left, right) {
        (Datum::Interval(a), Datum::Interval(b)) => Datum::Interval(a.checked_sub(b)?),
        (
            Datum::Timestamp(_) | Datum::TimestampTz(_) | Datum::Date(_) | Datum::Time(_),
            Datum::Interval(interval),
        ) => return add_datetime(left, &Datum::Interval(interval.checked_negate()?)),
        (
            Datum::Timestamp(a) | Datum::TimestampTz(a),
            Datum::Timestamp(b) | Datum::TimestampTz(b),
        ) => Datum::Interval(timestamp_difference(*a, *b)?),
        (Datum::Time(a), Datum::Time(b)) => Datum::Interval(Interval::new(0, 0, a - b)),
        _ => return Ok(None),
    }))
}

/// `interval * number`, `number * interval` and `interval / number`.
pub fn scale_interval(left: &Datum, right: &Datum, divide: bool) -> Result<Option<Datum>> {
    let (interval, factor) = match (left, right) {
        (Datum::Interval(interval), number) => (interval, number),
        (number, Datum::Interval(interval)) if !divide => (interval, number),
        _ => return Ok(None),
    };
    let Some(factor) = factor.as_f64() else { return Ok(None) };
    Ok(Some(Datum::Interval(if divide {
        interval.divide(factor)?
    } else {
        interval.multiply(factor)?
    })))
}

/// timestamp_age: field-wise difference, negative fields borrowing from the next larger
/// field (a day borrows the length of the earlier timestamp's month).
pub fn age(left: i64, right: i64) -> Result<Interval> {
    let first = decompose(left)?;
    let second = decompose(right)?;
    let mut microsecond = first.microsecond - second.microsecond;
    let mut second_field = first.second - second.second;
    let mut minute = first.minute - second.minute;
    let mut hour = first.hour - second.hour;
    let mut day = i64::from(first.day) - i64::from(second.day);
    let mut month = i64::from(first.month) - i64::from(second.month);
    let mut year = i64::from(first.year) - i64::from(second.year);
    let before = left < right;
    if before {
        for field in [
            &mut microsecond,
            &mut second_field,
            &mut minute,
            &mut hour,
            &mut day,
            &mut month,
            &mut year,
        ] {
            *field = -*field;
        }
    }
    while microsecond < 0 {
        microsecond += 1_000_000;
        second_field -= 1;
    }
    while second_field < 0 {
        second_field += 60;
        minute -= 1;
    }
    while minute < 0 {
        minute += 60;
        hour -= 1;
    }
    while hour < 0 {
        hour += 24;
        day -= 1;
    }
    while day < 0 {
        let reference = if before { &first } else { &second };
        day += i64::from(days_in_month(reference.year, reference.month));
        month -= 1;
    }
    while month < 0 {
        month += 12;
        year -= 1;
    }
    let sign = if before { -1 } else { 1 };
    let months = sign * (year * 12 + month);
    let micros = sign * (((hour * 60 + minute) * 60 + second_field) * 1_000_000 + microsecond);
    Ok(Interval::new(
        i32::try_from(months).map_err(|_| super::interval_out_of_range())?,
        i32::try_from(sign * day).map_err(|_| super::interval_out_of_range())?,
        micros,
    ))
}

/// The fields date_trunc, extract and date_part name (PostgreSQL's units and synonyms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Field {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    Epoch,
    DayOfWeek,
    IsoDayOfWeek,
    DayOfYear,
    IsoYear,
    Julian,
    Timezone,
    TimezoneHour,
    TimezoneMinute,
}

impl Field {
    pub fn from_name(name: &str) -> Option<Field> {
        Some(match name.to_ascii_lowercase().as_str() {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => {
                Field::Microseconds
            }
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => {
                Field::Milliseconds
            }
            "second" | "seconds" | "s" | "sec" | "secs" => Field::Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Field::Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Field::Hour,
            "day" | "days" | "d" => Field::Day,
            "week" | "weeks" | "w" => Field::Week,
            "month" | "months" | "mon" | "mons" => Field::Month,
            "quarter" | "qtr" => Field::Quarter,
            "year" | "years" | "y" | "yr" | "yrs" => Field::Year,
            "decade" | "decades" | "dec" | "decs" => Field::Decade,
            "century" | "centuries" | "c" | "cent" => Field::Century,
            "millennium" | "millennia" | "millenniums" | "mil" | "mils" => Field::Millennium,
            "epoch" => Field::Epoch,
            "dow" => Field::DayOfWeek,
            "isodow" => Field::IsoDayOfWeek,
            "doy" => Field::DayOfYear,
            "isoyear" => Field::IsoYear,
            "julian" | "j" => Field::Julian,
            "timezone" => Field::Timezone,
            "timezone_h" | "timezone_hour" => Field::TimezoneHour,
            "timezone_m" | "timezone_minute" => Field::TimezoneMinute,
            _ => return None,
        })
    }
}

/// date_trunc on a timestamp's fields.
pub fn truncate_timestamp(field: Field, micros: i64, type_name: &str) -> Result<i64> {
    if is_infinite_timestamp(micros) {
        return Ok(micros);
    }
    let mut fields = decompose(micros)?;
    match field {
        Field::Millennium => {
            fields.year = if fields.year > 0 {
                (fields.year + 999) / 1000 * 1000 - 999
            } else {
                -((999 - (fields.year - 1)) / 1000 * 1000) + 1
            };
            (fields.month, fields.day) = (1, 1);
        }
        Field::Century => {
            fields.year = if fields.year > 0 {
                (fields.year + 99) / 100 * 100 - 99
            } else {
                -((99 - (fields.year - 1)) / 100 * 100) + 1
            };
            (fields.month, fields.day) = (1, 1);
        }
        Field::Decade => {
            fields.year = if fields.year > 0 {
                fields.year / 10 * 10
            } else {
                -((8 - (fields.year - 1)) / 10 * 10)
            };
            (fields.month, fields.day) = (1, 1);
        }
        Field::Year => (fields.month, fields.day) = (1, 1),
        Field::Quarter => (fields.month, fields.day) = ((fields.month - 1) / 3 * 3 + 1, 1),
        Field::Month => fields.day = 1,
        Field::Week => {
            let date = date_of_days(micros.div_euclid(MICROSECONDS_PER_DAY))?;
            let monday =
                date - chrono::Duration::days(i64::from(date.weekday().num_days_from_monday()));
            return Ok(days_of_date(monday) * MICROSECONDS_PER_DAY);
        }
        Field::Day => {}
        Field::Hour | Field::Minute | Field::Second | Field::Milliseconds | Field::Microseconds => {
        }
        _ => return Err(unit_not_recognized(field_name(field), type_name)),
    }
    let keep_time = matches!(
        field,
        Field::Hour | Field::Minute | Field::Second | Field::Milliseconds | Field::Microseconds
    );
    if !keep_time {
        (fields.hour, fields.minute, fields.second, fields.microsecond) = (0, 0, 0, 0);
    }
    match field {
        Field::Hour => (fields.minute, fields.second, fields.microsecond) = (0, 0, 0),
        Field::Minute => (fields.second, fields.microsecond) = (0, 0),
        Field::Second => fields.microsecond = 0,
        Field::Milliseconds => fields.microsecond = fields.microsecond / 1000 * 1000,
        _ => {}
    }
    compose(&fields)
}

/// date_trunc on an interval: the fields below `field` cleared.
pub fn truncate_interval(field: Field, interval: &Interval) -> Result<Interval> {
    let years = interval.months / 12;
    let months = interval.months % 12;
    let hour_micros = 3_600_000_000i64;
    let time = interval.micros;
    let truncated_time = |unit: i64| time / unit * unit;
    Ok(match field {
        Field::Millennium => Interval::new(years / 1000 * 1000 * 12, 0, 0),
        Field::Century => Interval::new(years / 100 * 100 * 12, 0, 0),
        Field::Decade => Interval::new(years / 10 * 10 * 12, 0, 0),
        Field::Year => Interval::new(years * 12, 0, 0),
        Field::Quarter => Interval::new(years * 12 + months / 3 * 3, 0, 0),
        Field::Month => Interval::new(interval.months, 0, 0),
        Field::Day => Interval::new(interval.months, interval.days, 0),
        Field::Hour => Interval::new(interval.months, interval.days, truncated_time(hour_micros)),
        Field::Minute => Interval::new(interval.months, interval.days, truncated_time(60_000_000)),
        Field::Second => Interval::new(interval.months, interval.days, truncated_time(1_000_000)),
        Field::Milliseconds => Interval::new(interval.months, interval.days, truncated_time(1_000)),
        Field::Microseconds => *interval,
        Field::Week => {
            return Err(SqlError::new("0A000", "unit \"week\" not supported for type interval"))
        }
        _ => return Err(unit_not_supported(field_name(field), "interval")),
    })
}

pub fn field_name(field: Field) -> &'static str {
    match field {
        Field::Microseconds => "microseconds",
        Field::Milliseconds => "milliseconds",
        Field::Second => "second",
        Field::Minute => "minute",
        Field::Hour => "hour",
        Field::Day => "day",
        Field::Week => "week",
        Field::Month => "month",
        Field::Quarter => "quarter",
        Field::Year => "year",
        Field::Decade => "decade",
        Field::Century => "century",
        Field::Millennium => "millennium",
        Field::Epoch => "epoch",
        Field::DayOfWeek => "dow",
        Field::IsoDayOfWeek => "isodow",
        Field::DayOfYear => "doy",
        Field::IsoYear => "isoyear",
        Field::Julian => "julian",
        Field::Timezone => "timezone",
        Field::TimezoneHour => "timezone_h",
        Field::TimezoneMinute => "timezone_m",
    }
}

/// PostgreSQL's 0A000 for a known unit a function does not take for a type.
pub fn unit_not_supported(unit: &str, type_name: &str) -> SqlError {
    SqlError::new("0A000", format!("unit \"{unit}\" not supported for type {type_name}"))
}

/// PostgreSQL's 22023 for a unit name it does not know.
pub fn unit_not_recognized(unit: &str, type_name: &str) -> SqlError {
    SqlError::new("22023", format!("unit \"{unit}\" not recognized for type {type_name}"))
}

/// Seconds with microseconds as a numeric of scale `scale` (extract's results).
fn micros_decimal(micros: i128, scale: u32) -> Decimal {
    let mut value = Decimal::from_i128_with_scale(micros, 6);
    value.rescale(scale);
    value
}

/// extract(field from date) as PostgreSQL 15's extract_date: whole numbers, read from the
/// calendar, so dates past the timestamp range (to 5874897 AD) have fields too. The
/// Gregorian calendar repeats every 400 years (146,097 days, whole weeks): the date is
/// read 400-year cycles nearer 2000, and the cycles added back to its year.
pub fn extract_date(field: Field, days: i32) -> Result<Decimal> {
    const DAYS_PER_400_YEARS: i64 = 146_097;
    let days = i64::from(days);
    let cycles = days.div_euclid(DAYS_PER_400_YEARS);
    let near = days - cycles * DAYS_PER_400_YEARS;
    let year_shift = i32::try_from(cycles * 400).map_err(|_| timestamp_out_of_range())?;
    let micros = near * MICROSECONDS_PER_DAY;
    let year = decompose(micros)?.year + year_shift;
    Ok(match field {
        Field::Year | Field::Decade | Field::Century | Field::Millennium => year_field(field, year),
        Field::IsoYear => {
            let iso_year = date_of_days(near)?.iso_week().year() + year_shift;
            Decimal::from(if iso_year <= 0 { iso_year - 1 } else { iso_year })
        }
        Field::Epoch => Decimal::from(days * 86_400 + 946_684_800),
        Field::Julian => Decimal::from(days + super::EPOCH_JULIAN_DAY),
        _ => extract_timestamp(field, micros, "date")?,
    })
}

/// The year-based fields of an astronomical year (1 BC is 0).
fn year_field(field: Field, year: i32) -> Decimal {
    Decimal::from(match field {
        Field::Year if year > 0 => year,
        Field::Year => year - 1,
        Field::Decade => year.div_euclid(10),
        Field::Century if year > 0 => (year + 99) / 100,
        Field::Century => -((99 - (year - 1)) / 100),
        Field::Millennium if year > 0 => (year + 999) / 1000,
        Field::Millennium => -((999 - (year - 1)) / 1000),
        _ => unreachable!("a year-based field"),
    })
}

/// extract(field from timestamp) as PostgreSQL 15's numeric result.
pub fn extract_timestamp(field: Field, micros: i64, type_name: &str) -> Result<Decimal> {
    let fields = decompose(micros)?;
    let date = date_of_days(micros.div_euclid(MICROSECONDS_PER_DAY))?;
    let second_micros = i128::from(fields.second * 1_000_000 + fields.microsecond);
    Ok(match field {
        Field::Microseconds => Decimal::from(fields.second * 1_000_000 + fields.microsecond),
        Field::Milliseconds => micros_decimal(second_micros * 1000, 3),
        Field::Second => micros_decimal(second_micros, 6),
        Field::Minute => Decimal::from(fields.minute),
        Field::Hour => Decimal::from(fields.hour),
        Field::Day => Decimal::from(fields.day),
        Field::Month => Decimal::from(fields.month),
        Field::Quarter => Decimal::from((fields.month - 1) / 3 + 1),
        Field::Week => Decimal::from(date.iso_week().week()),
        Field::Year => Decimal::from(if fields.year > 0 { fields.year } else { fields.year - 1 }),
        Field::Decade => Decimal::from(fields.year.div_euclid(10)),
        Field::Century => Decimal::from(if fields.year > 0 {
            (fields.year + 99) / 100
        } else {
            -((99 - (fields.year - 1)) / 100)
        }),
        Field::Millennium => Decimal::from(if fields.year > 0 {
            (fields.year + 999) / 1000
        } else {
            -((999 - (fields.year - 1)) / 1000)
        }),
        Field::Epoch => {
            let unix = i128::from(micros) + 946_684_800_000_000;
            micros_decimal(unix, 6)
        }
        Field::DayOfWeek => Decimal::from(date.weekday().num_days_from_sunday()),
        Field::IsoDayOfWeek => Decimal::from(date.weekday().number_from_monday()),
        Field::DayOfYear => Decimal::from(date.ordinal()),
        Field::IsoYear => Decimal::from(date.iso_week().year()),
        Field::Julian => {
            // The Julian day number plus the fraction of the day passed.
            let julian_day = i128::from(days_of_date(date) + 2_451_545);
            let time = i128::from(micros.rem_euclid(MICROSECONDS_PER_DAY));
            let value = Decimal::from_i128_with_scale(julian_day, 0)
                + Decimal::from_i128_with_scale(time, 0) / Decimal::from(MICROSECONDS_PER_DAY);
            if time == 0 {
                Decimal::from_i128_with_scale(julian_day, 0)
            } else {
                value.normalize()
            }
        }
        _ => return Err(unit_not_supported(field_name(field), type_name)),
    })
}

/// extract(field from interval) as PostgreSQL 15's numeric result.
pub fn extract_interval(field: Field, interval: &Interval) -> Result<Decimal> {
    let time = interval.micros;
    let years = interval.months / 12;
    Ok(match field {
        Field::Microseconds => Decimal::from(time % 60_000_000),
        Field::Milliseconds => micros_decimal(i128::from(time % 60_000_000) * 1000, 3),
        Field::Second => micros_decimal(i128::from(time % 60_000_000), 6),
        Field::Minute => Decimal::from(time / 60_000_000 % 60),
        Field::Hour => Decimal::from(time / 3_600_000_000),
        Field::Day => Decimal::from(interval.days),
        Field::Month => Decimal::from(interval.months % 12),
        Field::Quarter => Decimal::from(interval.months % 12 / 3 + 1),
        Field::Year => Decimal::from(years),
        Field::Decade => Decimal::from(years / 10),
        Field::Century => Decimal::from(years / 100),
        Field::Millennium => Decimal::from(years / 1000),
        Field::Epoch => {
            // A year is 365.25 days here, the remaining months 30 days each.
            let year_seconds = i128::from(years) * 31_557_600;
            let month_seconds = i128::from(interval.months % 12) * 2_592_000;
            let day_seconds = i128::from(interval.days) * 86_400;
            let seconds = year_seconds + month_seconds + day_seconds;
            micros_decimal(seconds * 1_000_000 + i128::from(time), 6)
        }
        _ => return Err(unit_not_supported(field_name(field), "interval")),
    })
}

/// extract(field from time) as PostgreSQL 15's numeric result.
pub fn extract_time(field: Field, micros: i64) -> Result<Decimal> {
    let second_micros = i128::from(micros % 60_000_000);
    Ok(match field {
        Field::Microseconds => Decimal::from(micros % 60_000_000),
        Field::Milliseconds => micros_decimal(second_micros * 1000, 3),
        Field::Second => micros_decimal(second_micros, 6),
        Field::Minute => Decimal::from(micros / 60_000_000 % 60),
        Field::Hour => Decimal::from(micros / 3_600_000_000),
        Field::Epoch => micros_decimal(i128::from(micros), 6),
        _ => return Err(unit_not_supported(field_name(field), "time without time zone")),
    })
}
