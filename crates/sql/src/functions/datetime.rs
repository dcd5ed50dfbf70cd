//! The date and time functions: extract / date_part, date_trunc, age, the justify and make
//! functions, to_timestamp(double), to_char, to_date and to_timestamp(text, text)
//! (types/datetime.rs and types/datetime_format.rs compute them).

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

use super::{no_function, Call, Coercion, Function, Signature};
use crate::error::{Result, SqlError};
use crate::types::{self, Datum, Field, Interval, SqlType};

const TEXT: SqlType = SqlType::Text;
const MICROSECONDS_PER_DAY: i64 = 86_400_000_000;

/// The date and time functions (a table of the registry).
pub(super) static DATETIME_FUNCTIONS: &[Function] = &[
    // `(start, end or interval) OVERLAPS (start, end or interval)` is bound as this call.
    function!(
        &["overlaps"],
        4..=4,
        overlaps_signature,
        overlaps,
        "DATE '2024-01-01', DATE '2024-01-10', DATE '2024-01-05', INTERVAL '1 day'",
        non_strict
    ),
    function!(&["extract"], 2..=2, field_and_value, extract, "'year', TIMESTAMP '2024-05-06'"),
    function!(&["date_part"], 2..=2, field_and_value, date_part, "'year', TIMESTAMP '2024-05-06'"),
    function!(
        &["date_trunc"],
        2..=3,
        field_and_value,
        date_trunc,
        "'month', TIMESTAMP '2024-05-06'"
    ),
    function!(
        &["age"],
        1..=2,
        age_signature,
        age,
        "TIMESTAMP '2024-05-06', TIMESTAMP '2020-01-31'"
    ),
    function!(
        &["justify_days"],
        1..=1,
        |_, t| Ok(intervals(t)),
        justify_days,
        "INTERVAL '35 days'"
    ),
    function!(
        &["justify_hours"],
        1..=1,
        |_, t| Ok(intervals(t)),
        justify_hours,
        "INTERVAL '27 hours'"
    ),
    function!(
        &["justify_interval"],
        1..=1,
        |_, t| Ok(intervals(t)),
        justify_interval,
        "INTERVAL '-1 mon 2 days'"
    ),
    function!(&["make_interval"], 0..=7, make_interval_signature, make_interval, "1, 2, 0, 3"),
    function!(
        &["make_date"],
        3..=3,
        |_, t| Ok(integers(t, SqlType::Date)),
        make_date,
        "2024, 2, 29"
    ),
    function!(&["make_time"], 3..=3, make_time_signature, make_time, "10, 20, 30.5"),
    function!(
        &["make_timestamp"],
        6..=6,
        make_timestamp_signature,
        make_timestamp,
        "2024, 2, 29, 10, 20, 30.5"
    ),
    function!(
        &["make_timestamptz"],
        6..=7,
        make_timestamptz_signature,
        make_timestamptz,
        "2024, 2, 29, 10, 20, 30.5, 'Asia/Kolkata'"
    ),
    function!(&["to_timestamp"], 1..=2, to_timestamp_signature, to_timestamp, "1700000000"),
    function!(
        &["to_date"],
        2..=2,
        |n, t| texts(n, t, SqlType::Date),
        to_date,
        "'2024-05-06', 'YYYY-MM-DD'"
    ),
    function!(&["to_char"], 2..=2, to_char_signature, to_char, "TIMESTAMP '2024-05-06', 'YYYY'"),
    function!(
        &["to_number"],
        2..=2,
        |n, t| texts(n, t, SqlType::numeric()),
        to_number,
        "'12,345.6', '99G999D9'"
    ),
    function!(
        &["timezone"],
        2..=2,
        timezone_signature,
        timezone,
        "'Asia/Kolkata', TIMESTAMPTZ '2024-05-06 12:00+00'"
    ),
];

fn texts(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    if types.iter().any(|ty| !ty.is_text()) {
        return Err(no_function(name, types));
    }
    Ok(Signature { arguments: vec![Coercion::Explicit(TEXT); types.len()], output })
}

fn intervals(types: &[SqlType]) -> Signature {
    Signature {
        arguments: vec![Coercion::Implicit(SqlType::Interval); types.len()],
        output: SqlType::Interval,
    }
}

fn integers(types: &[SqlType], output: SqlType) -> Signature {
    Signature { arguments: vec![Coercion::Implicit(SqlType::Int4); types.len()], output }
}

/// PostgreSQL's 42725 for a call its argument types do not decide between overloads.
fn not_unique(name: &str, types: &[SqlType]) -> SqlError {
    let types: Vec<String> = types.iter().map(SqlType::display_name).collect();
    SqlError::new("42725", format!("function {}({}) is not unique", name, types.join(", ")))
}

/// extract, date_part, date_trunc: a text unit and a date/time value (a date is read as a
/// timestamp, except by extract and date_part, which have date overloads in PostgreSQL 15).
fn field_and_value(name: &str, types: &[SqlType]) -> Result<Signature> {
    if !types[0].is_text() {
        return Err(no_function(name, types));
    }
    // date_trunc(unit, timestamptz, zone): the wall-clock time in that zone.
    if types.len() == 3 {
        if name != "date_trunc" || !types[2].is_text() {
            return Err(no_function(name, types));
        }
        let zoned = SqlType::TimestampTz;
        let arguments = vec![
            Coercion::Explicit(TEXT),
            Coercion::Implicit(zoned.clone()),
            Coercion::Explicit(TEXT),
        ];
        return Ok(Signature { arguments, output: zoned });
    }
    let value = match (&types[1], name) {
        (SqlType::Unknown, _) => return Err(not_unique(name, types)),
        (SqlType::Date, "date_trunc") => SqlType::TimestampTz,
        (ty @ (SqlType::Timestamp | SqlType::TimestampTz | SqlType::Interval), _) => ty.clone(),
        (ty @ (SqlType::Date | SqlType::Time), "extract" | "date_part") => ty.clone(),
        _ => return Err(no_function(name, types)),
    };
    let output = match name {
        "extract" => SqlType::numeric(),
        "date_part" => SqlType::Float8,
        _ => value.clone(),
    };
    Ok(Signature { arguments: vec![Coercion::Explicit(TEXT), Coercion::Implicit(value)], output })
}

fn field_of(call: &Call<'_>, type_name: &str) -> Result<Field> {
    let name = call.text(0);
    Field::from_name(name).ok_or_else(|| types::unit_not_recognized(name, type_name))
}

/// What extract reads from a value: a number, or for infinity NULL (a field that repeats:
/// month, day) or an infinity (a field that grows: year, epoch), as PostgreSQL 15.
enum Extracted {
    Number(Decimal),
    Null,
    Infinity { negative: bool },
}

fn extract_value(call: &Call<'_>, value: &Datum, type_name: &str) -> Result<Extracted> {
    let field = field_of(call, type_name)?;
    let infinite = match value {
        Datum::Timestamp(micros) | Datum::TimestampTz(micros) => {
            types::infinite_date_of(*micros).map(|days| days < 0)
        }
        Datum::Date(days) if types::is_infinite_date(*days) => Some(*days < 0),
        _ => None,
    };
    if let Some(negative) = infinite {
        return extract_of_infinity(field, negative, type_name);
    }
    extract_number(value, field, type_name).map(Extracted::Number)
}

fn extract_of_infinity(field: Field, negative: bool, type_name: &str) -> Result<Extracted> {
    Ok(match field {
        Field::Year
        | Field::Decade
        | Field::Century
        | Field::Millennium
        | Field::Julian
        | Field::IsoYear
        | Field::Epoch => Extracted::Infinity { negative },
        field if type_name == "date" && time_of_day_field(field) => {
            return Err(types::unit_not_supported(types::field_name(field), "date"))
        }
        _ => Extracted::Null,
    })
}

/// The fields of a time of day and its zone, which extract of a date refuses (0A000 as
/// PostgreSQL's "unit ... not supported for type date").
fn time_of_day_field(field: Field) -> bool {
    matches!(
        field,
        Field::Microseconds
            | Field::Milliseconds
            | Field::Second
            | Field::Minute
            | Field::Hour
            | Field::Timezone
            | Field::TimezoneHour
            | Field::TimezoneMinute
    )
}

fn extract_number(value: &Datum, field: Field, type_name: &str) -> Result<Decimal> {
    match value {
        Datum::Timestamp(micros) => types::extract_timestamp(field, *micros, type_name),
        Datum::TimestampTz(micros) => types::extract_timestamptz(field, *micros),
        Datum::Date(_) if time_of_day_field(field) => {
            Err(types::unit_not_supported(types::field_name(field), "date"))
        }
        Datum::Date(days) => types::extract_date(field, *days),
        Datum::Time(micros) => types::extract_time(field, *micros),
        Datum::Interval(interval) => types::extract_interval(field, interval),
        other => Err(SqlError::internal(format!("extract bound for {other:?}"))),
    }
}

fn extract(call: Call<'_>) -> Result<Datum> {
    let type_name = call.arg_types[1].display_name();
    Ok(match extract_value(&call, &call.args[1], &type_name)? {
        Extracted::Number(value) => Datum::Numeric(value),
        Extracted::Null => Datum::Null,
        // PostgreSQL answers a numeric infinity, which tierdb's numeric cannot hold.
        Extracted::Infinity { .. } => {
            return Err(SqlError::unsupported(
                "extract of a field that grows from an infinite date or timestamp (a numeric infinity) is not supported; date_part returns it as double precision",
            ))
        }
    })
}

/// date_part: extract as double precision. PostgreSQL's date_part(text, date) is an SQL
/// function over the date cast to timestamp: a date past the timestamp range is an error
/// there, and a date has the time fields of its midnight.
fn date_part(call: Call<'_>) -> Result<Datum> {
    let (value, type_name) = match &call.args[1] {
        Datum::Date(days) => (
            Datum::Timestamp(types::date_to_timestamp_micros(*days)?),
            SqlType::Timestamp.display_name(),
        ),
        value => (value.clone(), call.arg_types[1].display_name()),
    };
    Ok(match extract_value(&call, &value, &type_name)? {
        Extracted::Number(value) => Datum::Float(value.to_f64().unwrap_or(0.0)),
        Extracted::Null => Datum::Null,
        Extracted::Infinity { negative: true } => Datum::Float(f64::NEG_INFINITY),
        Extracted::Infinity { negative: false } => Datum::Float(f64::INFINITY),
    })
}

fn date_trunc(call: Call<'_>) -> Result<Datum> {
    let type_name = call.arg_types[1].display_name();
    let field = field_of(&call, &type_name)?;
    Ok(match &call.args[1] {
        Datum::Timestamp(micros) => {
            Datum::Timestamp(types::truncate_timestamp(field, *micros, &type_name)?)
        }
        Datum::TimestampTz(micros) => {
            let zone = match call.args.get(2) {
                Some(name) => types::zone_of_text(name.as_text().unwrap_or(""))?,
                None => types::with_session_zone(Clone::clone),
            };
            Datum::TimestampTz(types::truncate_timestamptz(field, *micros, &zone)?)
        }
        Datum::Interval(interval) => Datum::Interval(types::truncate_interval(field, interval)?),
        other => return Err(SqlError::internal(format!("date_trunc bound for {other:?}"))),
    })
}

/// age(timestamp[, timestamp]) and age(timestamptz[, timestamptz]).
fn age_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let zoned = types.iter().any(|ty| matches!(ty, SqlType::TimestampTz | SqlType::Date));
    let target = if zoned { SqlType::TimestampTz } else { SqlType::Timestamp };
    if types.iter().any(|ty| !(ty.is_temporal() || *ty == SqlType::Unknown)) {
        return Err(no_function(name, types));
    }
    if types.iter().all(|ty| *ty == SqlType::Unknown) {
        return Err(not_unique(name, types));
    }
    Ok(Signature {
        arguments: vec![Coercion::Implicit(target); types.len()],
        output: SqlType::Interval,
    })
}

/// A timestamp's microseconds; a timestamptz's wall-clock ones in the session zone (age
/// counts the fields PostgreSQL's timestamptz_age reads in it).
fn timestamp_micros(datum: &Datum) -> i64 {
    match datum {
        Datum::Timestamp(micros) => *micros,
        Datum::TimestampTz(micros) => types::utc_to_session_local(*micros),
        Datum::Date(days) => i64::from(*days).saturating_mul(MICROSECONDS_PER_DAY),
        _ => 0,
    }
}

fn age(call: Call<'_>) -> Result<Datum> {
    let left = timestamp_micros(&call.args[0]);
    let right = match call.args.get(1) {
        Some(datum) => timestamp_micros(datum),
        None => {
            // age(x) is age(current_date at midnight, x).
            let now = types::utc_to_session_local(call.context.statement_time_micros);
            let today = now.div_euclid(MICROSECONDS_PER_DAY);
            return types::age(today * MICROSECONDS_PER_DAY, left).map(Datum::Interval);
        }
    };
    types::age(left, right).map(Datum::Interval)
}

fn interval_argument(call: &Call<'_>) -> Result<Interval> {
    match &call.args[0] {
        Datum::Interval(interval) => Ok(*interval),
        other => Err(SqlError::internal(format!("an interval function bound for {other:?}"))),
    }
}

fn justify_days(call: Call<'_>) -> Result<Datum> {
    interval_argument(&call)?.justify_days().map(Datum::Interval)
}

fn justify_hours(call: Call<'_>) -> Result<Datum> {
    interval_argument(&call)?.justify_hours().map(Datum::Interval)
}

fn justify_interval(call: Call<'_>) -> Result<Datum> {
    interval_argument(&call)?.justify_interval().map(Datum::Interval)
}

/// make_interval(years, months, weeks, days, hours, mins, secs): integers and a double.
fn make_interval_signature(_name: &str, types: &[SqlType]) -> Result<Signature> {
    let mut arguments = vec![Coercion::Implicit(SqlType::Int4); types.len().min(6)];
    if types.len() == 7 {
        arguments.push(Coercion::Implicit(SqlType::Float8));
    }
    Ok(Signature { arguments, output: SqlType::Interval })
}

fn make_interval(call: Call<'_>) -> Result<Datum> {
    let value = |index: usize| call.args.get(index).and_then(Datum::as_int).unwrap_or(0);
    let seconds = call.args.get(6).and_then(Datum::as_f64).unwrap_or(0.0);
    let overflow = types::interval_out_of_range;
    let months = value(0).checked_mul(12).and_then(|months| months.checked_add(value(1)));
    let days = value(2).checked_mul(7).and_then(|days| days.checked_add(value(3)));
    let hours = i128::from(value(4)) * 3_600_000_000 + i128::from(value(5)) * 60_000_000;
    let micros = hours as f64 + (seconds * 1e6).round_ties_even();
    if !seconds.is_finite() || !(-9.2e18..9.2e18).contains(&micros) {
        return Err(overflow());
    }
    let months = months.and_then(|months| i32::try_from(months).ok()).ok_or_else(overflow)?;
    let days = days.and_then(|days| i32::try_from(days).ok()).ok_or_else(overflow)?;
    #[allow(clippy::cast_possible_truncation)]
    Ok(Datum::Interval(Interval::new(months, days, micros as i64)))
}

fn make_date_value(year: i64, month: i64, day: i64) -> Result<i32> {
    let out_of_range = || {
        SqlError::new("22008", format!("date field value out of range: {year}-{month:02}-{day:02}"))
    };
    // Negative years are BC: year -1 is 1 BC, astronomical year 0.
    let astronomical = if year < 0 { year + 1 } else { year };
    if year == 0 {
        return Err(out_of_range());
    }
    let year = i32::try_from(astronomical).map_err(|_| out_of_range())?;
    let month = u32::try_from(month).map_err(|_| out_of_range())?;
    let day = u32::try_from(day).map_err(|_| out_of_range())?;
    let date = chrono::NaiveDate::from_ymd_opt(year, month, day).ok_or_else(out_of_range)?;
    i32::try_from(types::days_of_date(date)).map_err(|_| SqlError::out_of_range("date"))
}

fn make_date(call: Call<'_>) -> Result<Datum> {
    make_date_value(call.int(0), call.int(1), call.int(2)).map(Datum::Date)
}

fn make_time_signature(_name: &str, types: &[SqlType]) -> Result<Signature> {
    let mut signature = integers(&types[..2], SqlType::Time);
    signature.arguments.push(Coercion::Implicit(SqlType::Float8));
    Ok(signature)
}

fn time_micros(hour: i64, minute: i64, seconds: f64) -> Result<i64> {
    let micros = (seconds * 1e6).round_ties_even();
    let valid =
        (0..=24).contains(&hour) && (0..=59).contains(&minute) && (0.0..=60.0e6).contains(&micros);
    #[allow(clippy::cast_possible_truncation)]
    let total = (hour * 60 + minute) * 60_000_000 + micros as i64;
    if !valid || total > MICROSECONDS_PER_DAY {
        return Err(SqlError::new(
            "22008",
            format!(
                "time field value out of range: {hour}:{minute:02}:{:0>2}",
                types::format_float8(seconds)
            ),
        ));
    }
    Ok(total)
}

fn make_time(call: Call<'_>) -> Result<Datum> {
    let seconds = call.args[2].as_f64().unwrap_or(0.0);
    time_micros(call.int(0), call.int(1), seconds).map(Datum::Time)
}

fn make_timestamp_signature(_name: &str, types: &[SqlType]) -> Result<Signature> {
    let mut signature = integers(&types[..5], SqlType::Timestamp);
    signature.arguments.push(Coercion::Implicit(SqlType::Float8));
    Ok(signature)
}

fn make_timestamp(call: Call<'_>) -> Result<Datum> {
    make_wall_clock(&call).map(Datum::Timestamp)
}

/// The wall-clock microseconds of make_timestamp's and make_timestamptz's six fields.
fn make_wall_clock(call: &Call<'_>) -> Result<i64> {
    let days = make_date_value(call.int(0), call.int(1), call.int(2))?;
    let seconds = call.args[5].as_f64().unwrap_or(0.0);
    let time = time_micros(call.int(3), call.int(4), seconds)?;
    Ok(i64::from(days) * MICROSECONDS_PER_DAY + time)
}

/// make_timestamptz(year, month, day, hour, minute, seconds [, zone]).
fn make_timestamptz_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let mut signature = integers(&types[..5], SqlType::TimestampTz);
    signature.arguments.push(Coercion::Implicit(SqlType::Float8));
    if let Some(zone) = types.get(6) {
        if !zone.is_text() {
            return Err(no_function(name, types));
        }
        signature.arguments.push(Coercion::Explicit(TEXT));
    }
    Ok(signature)
}

/// The instant the wall-clock fields are in the zone given, else in the session's.
fn make_timestamptz(call: Call<'_>) -> Result<Datum> {
    let local = make_wall_clock(&call)?;
    let utc = match call.args.get(6) {
        Some(_) => types::zone_of_text(call.text(6))?.local_to_utc(local),
        None => types::session_local_to_utc(local),
    };
    types::check_timestamp(utc).map(Datum::TimestampTz)
}

/// to_timestamp(double precision) (Unix seconds) or to_timestamp(text, format).
fn to_timestamp_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    if types.len() == 2 {
        return texts(name, types, SqlType::TimestampTz);
    }
    if !(types[0].is_numeric_family() || types[0] == SqlType::Unknown) {
        return Err(no_function(name, types));
    }
    Ok(Signature {
        arguments: vec![Coercion::Implicit(SqlType::Float8)],
        output: SqlType::TimestampTz,
    })
}

fn to_timestamp(call: Call<'_>) -> Result<Datum> {
    if call.args.len() == 2 {
        return formatted_timestamp(call.text(0), call.text(1));
    }
    let seconds = call.args[0].as_f64().unwrap_or(0.0);
    if seconds.is_nan() {
        return Err(SqlError::new("22008", "timestamp cannot be NaN"));
    }
    if seconds.is_infinite() {
        return Err(SqlError::unsupported("infinite timestamps are not supported"));
    }
    let micros = (seconds * 1e6).round_ties_even() - 946_684_800e6;
    if !(-211_813_488e9..9_223_371_331.2e9).contains(&micros) {
        return Err(SqlError::new(
            "22008",
            format!("timestamp out of range: \"{}\"", types::format_float8(seconds)),
        ));
    }
    #[allow(clippy::cast_possible_truncation)]
    Ok(Datum::TimestampTz(micros as i64))
}

/// to_timestamp(text, text): the wall-clock time read, in the zone TZH / TZM read or else
/// the session's, rounded to the digits FF1-FF6 read.
fn formatted_timestamp(input: &str, template: &str) -> Result<Datum> {
    let parsed = types::parse_timestamp_formatted(input, template)?;
    let utc = match parsed.offset_seconds {
        Some(offset_seconds) => parsed.local_micros.checked_sub(offset_seconds * 1_000_000),
        None => Some(types::session_local_to_utc(parsed.local_micros)),
    };
    let utc = utc.ok_or_else(types::timestamp_out_of_range).and_then(types::check_timestamp)?;
    Ok(Datum::TimestampTz(match parsed.fraction_digits {
        Some(digits) => types::round_timestamp_to_digits(utc, digits),
        None => utc,
    }))
}

fn to_date(call: Call<'_>) -> Result<Datum> {
    types::parse_date_formatted(call.text(0), call.text(1)).map(Datum::Date)
}

/// to_char(timestamp | timestamptz | interval | number, text).
fn to_char_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    if !types[1].is_text() {
        return Err(no_function(name, types));
    }
    let value = match &types[0] {
        SqlType::Date => SqlType::Timestamp,
        ty @ (SqlType::Timestamp | SqlType::TimestampTz | SqlType::Interval) => ty.clone(),
        ty
        @ (SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Float4 | SqlType::Float8) => {
            ty.clone()
        }
        SqlType::Numeric { .. } => SqlType::numeric(),
        SqlType::Unknown => return Err(not_unique(name, types)),
        _ => return Err(no_function(name, types)),
    };
    Ok(Signature {
        arguments: vec![Coercion::Implicit(value), Coercion::Explicit(TEXT)],
        output: TEXT,
    })
}

fn to_char(call: Call<'_>) -> Result<Datum> {
    let format = call.text(1);
    let text = match &call.args[0] {
        // An empty template gives NULL for a date or time and an empty text for a number,
        // as in PostgreSQL.
        Datum::Timestamp(_) | Datum::TimestampTz(_) | Datum::Interval(_) if format.is_empty() => {
            return Ok(Datum::Null)
        }
        // An infinite timestamp has no fields to write.
        Datum::Timestamp(micros) | Datum::TimestampTz(micros)
            if types::is_infinite_timestamp(*micros) =>
        {
            return Ok(Datum::Null)
        }
        Datum::Timestamp(micros) => types::format_timestamp_pattern(*micros, format, false)?,
        Datum::TimestampTz(micros) => types::format_timestamp_pattern(*micros, format, true)?,
        Datum::Interval(interval) => types::format_interval_pattern(interval, format)?,
        number => types::format_number_pattern(number_value(number, &call.arg_types[0])?, format)?,
    };
    Ok(Datum::Text(text))
}

/// A to_char argument as the number type it was bound as.
fn number_value(number: &Datum, ty: &SqlType) -> Result<types::NumberValue> {
    Ok(match (number, ty) {
        (Datum::Int(value), SqlType::Int2 | SqlType::Int4) => types::NumberValue::Int4(
            i32::try_from(*value).map_err(|_| SqlError::out_of_range("integer"))?,
        ),
        (Datum::Int(value), _) => types::NumberValue::Int8(*value),
        (Datum::Float(value), SqlType::Float4) => {
            #[allow(clippy::cast_possible_truncation)] // A real is stored widened from f32.
            let real = *value as f32;
            types::NumberValue::Float4(real)
        }
        (Datum::Float(value), _) => types::NumberValue::Float8(*value),
        (Datum::Numeric(value), _) => types::NumberValue::Numeric(*value),
        (other, _) => {
            return Err(SqlError::internal(format!("to_char of an unexpected value {other:?}")))
        }
    })
}

fn to_number(call: Call<'_>) -> Result<Datum> {
    Ok(match types::parse_number_pattern(call.text(0), call.text(1))? {
        Some(value) => Datum::Numeric(value),
        None => Datum::Null,
    })
}

/// timezone(zone, timestamp) and timezone(zone, timestamptz), which AT TIME ZONE calls: the
/// zone is text (a name, abbreviation or POSIX offset) or an interval (east of UTC).
fn timezone_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let zone = match &types[0] {
        SqlType::Interval => SqlType::Interval,
        ty if ty.is_text() => TEXT,
        _ => return Err(no_function(name, types)),
    };
    let (value, output) = match &types[1] {
        SqlType::Timestamp => (SqlType::Timestamp, SqlType::TimestampTz),
        SqlType::TimestampTz | SqlType::Date | SqlType::Unknown => {
            (SqlType::TimestampTz, SqlType::Timestamp)
        }
        _ => return Err(no_function(name, types)),
    };
    let zone = if zone == TEXT { Coercion::Explicit(zone) } else { Coercion::Implicit(zone) };
    Ok(Signature { arguments: vec![zone, Coercion::Implicit(value)], output })
}

/// `timestamp AT TIME ZONE zone` is the instant that wall-clock time is in the zone;
/// `timestamptz AT TIME ZONE zone` is the wall-clock time of the instant there.
fn timezone(call: Call<'_>) -> Result<Datum> {
    let zone = match &call.args[0] {
        Datum::Interval(interval) => {
            if interval.months != 0 || interval.days != 0 {
                return Err(SqlError::new(
                    "22023",
                    format!(
                        "interval time zone \"{}\" must not include months or days",
                        types::format_interval(interval)
                    ),
                ));
            }
            let seconds = i32::try_from(interval.micros / 1_000_000)
                .map_err(|_| SqlError::out_of_range("interval"))?;
            types::Zone::Fixed { east_seconds: seconds, name: String::new() }
        }
        _ => types::zone_of_text(call.text(0))?,
    };
    Ok(match &call.args[1] {
        // infinity is infinity in every zone.
        Datum::Timestamp(micros) if types::is_infinite_timestamp(*micros) => {
            Datum::TimestampTz(*micros)
        }
        Datum::TimestampTz(micros) if types::is_infinite_timestamp(*micros) => {
            Datum::Timestamp(*micros)
        }
        Datum::Timestamp(local) => {
            Datum::TimestampTz(types::check_timestamp(zone.local_to_utc(*local))?)
        }
        Datum::TimestampTz(utc) => {
            Datum::Timestamp(types::check_timestamp(zone.utc_to_local(*utc))?)
        }
        other => return Err(SqlError::internal(format!("timezone bound for {other:?}"))),
    })
}

/// overlaps: the periods' points in their common date or time type (an untyped literal
/// takes it; when all are untyped PostgreSQL finds no best candidate: 42725); an interval
/// as the second point of a period is its length (a date with one becomes a timestamp).
fn overlaps_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let is_length = |index: usize| index % 2 == 1 && types[index] == SqlType::Interval;
    let mut common = SqlType::Unknown;
    for index in (0..4).filter(|index| !is_length(*index)) {
        let ty = &types[index];
        common = SqlType::common(&common, ty).ok_or_else(|| no_function(name, types))?;
    }
    // An untyped second point could be an interval, as well as a point, when a period has
    // an interval or the points are times (both overloads exist): no best candidate.
    let untyped_end = types[1] == SqlType::Unknown || types[3] == SqlType::Unknown;
    let ambiguous = untyped_end && ((0..4).any(is_length) || common == SqlType::Time);
    let point = match common {
        _ if ambiguous => return Err(not_unique(name, types)),
        SqlType::Unknown => return Err(not_unique(name, types)),
        SqlType::Date if (0..4).any(is_length) => SqlType::Timestamp,
        SqlType::Date | SqlType::Time | SqlType::Timestamp | SqlType::TimestampTz => common,
        _ => return Err(no_function(name, types)),
    };
    let arguments = (0..4)
        .map(
            |index| {
                if is_length(index) {
                    Coercion::Keep
                } else {
                    Coercion::Implicit(point.clone())
                }
            },
        )
        .collect();
    Ok(Signature { arguments, output: SqlType::Bool })
}

/// overlaps_timestamp's rules: each period's points ordered (a NULL point takes the
/// other's place), then NULL wherever a missing point could decide the answer.
fn overlaps(call: Call<'_>) -> Result<Datum> {
    let (Some((start1, end1)), Some((start2, end2))) =
        (period(&call.args[0], &call.args[1])?, period(&call.args[2], &call.args[3])?)
    else {
        return Ok(Datum::Null);
    };
    let less = |a: &Datum, b: &Datum| a.compare(b) == Some(std::cmp::Ordering::Less);
    let answer = match start1.compare(&start2) {
        Some(std::cmp::Ordering::Greater) => match (&end2, &end1) {
            (None, _) => None,
            (Some(end2), _) if less(&start1, end2) => Some(true),
            (_, None) => None,
            _ => Some(false),
        },
        Some(std::cmp::Ordering::Less) => match (&end1, &end2) {
            (None, _) => None,
            (Some(end1), _) if less(&start2, end1) => Some(true),
            (_, None) => None,
            _ => Some(false),
        },
        _ => (end1.is_some() && end2.is_some()).then_some(true),
    };
    Ok(answer.map_or(Datum::Null, Datum::Bool))
}

/// A period's (lesser point, other point or None when NULL); None when both are NULL. An
/// interval second point is added to the first.
fn period(start: &Datum, end: &Datum) -> Result<Option<(Datum, Option<Datum>)>> {
    let end = match end {
        Datum::Interval(_) if start.is_null() => Datum::Null,
        Datum::Interval(_) => types::add_datetime(start, end)?
            .ok_or_else(|| SqlError::internal("OVERLAPS bound a point and an interval"))?,
        other => other.clone(),
    };
    Ok(match (start.is_null(), end.is_null()) {
        (true, true) => None,
        (true, false) => Some((end, None)),
        (false, true) => Some((start.clone(), None)),
        (false, false) if start.compare(&end) == Some(std::cmp::Ordering::Greater) => {
            Some((end, Some(start.clone())))
        }
        (false, false) => Some((start.clone(), Some(end))),
    })
}
