//! Text input and output of values: PostgreSQL's float, date and timestamp formats, and
//! the parsing of literals and COPY fields.

use super::*;

/// Shortest round-trip digits in PostgreSQL's layout: exponent form when the decimal
/// exponent is below -4 or at least `precision` (15 for double, 6 for real).
pub(crate) fn format_shortest(scientific: &str, precision: i32) -> String {
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if exponent < -4 || exponent >= precision {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{}{:02}", sign, exponent.abs());
    } else if exponent < 0 {
        out.push_str("0.");
        for _ in 0..(-exponent - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let integer_digits =
            usize::try_from(exponent).expect("this branch has a non-negative exponent") + 1;
        if digits.len() <= integer_digits {
            out.push_str(&digits);
            for _ in digits.len()..integer_digits {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..integer_digits]);
            out.push('.');
            out.push_str(&digits[integer_digits..]);
        }
    }
    out
}

pub(crate) fn format_special(number: f64) -> Option<String> {
    if number.is_nan() {
        Some("NaN".into())
    } else if number.is_infinite() {
        Some(if number > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else if number == 0.0 {
        Some(if number.is_sign_negative() { "-0" } else { "0" }.into())
    } else {
        None
    }
}

pub fn format_float8(number: f64) -> String {
    format_special(number).unwrap_or_else(|| {
        format_shortest(&ryu_scientific(ryu::Buffer::new().format_finite(number)), 15)
    })
}

pub fn format_float4(number: f64) -> String {
    #[allow(clippy::cast_possible_truncation)]
    let single = number as f32;
    format_special(number).unwrap_or_else(|| {
        format_shortest(&ryu_scientific(ryu::Buffer::new().format_finite(single)), 6)
    })
}

/// Ryu's shortest digits (PostgreSQL's float output is Ryu: a tie between two shortest
/// candidates goes to the even digit, where Rust's `{:e}` rounds up) as `d.ddde<exponent>`.
fn ryu_scientific(text: &str) -> String {
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
    let exponent: i32 = exponent.parse().expect("ryu writes a decimal exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(unsigned) => ("-", unsigned),
        None => ("", mantissa),
    };
    let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{integer}{fraction}");
    let leading_zeros = digits.len() - digits.trim_start_matches('0').len();
    let significant = digits.trim_start_matches('0').trim_end_matches('0');
    let significant = if significant.is_empty() { "0" } else { significant };
    let point = i32::try_from(integer.len()).expect("a float has few integer digits");
    let zeros = i32::try_from(leading_zeros).expect("a float has few leading zeros");
    format!("{sign}{significant}e{}", point - zeros - 1 + exponent)
}

pub(crate) fn epoch_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(2000, 1, 1).expect("valid date")
}

/// date_out in the ISO style: a year before 1 AD as PostgreSQL numbers it (the year 0 is
/// 1 BC) with " BC" after; years past 9999 in full.
pub fn format_date(days: i32) -> String {
    with_era(date_text(i64::from(days)))
}

/// timestamp_out in the ISO style (" BC" after the time, as for dates).
pub fn format_timestamp(micros: i64) -> String {
    with_era(timestamp_text(micros))
}

/// A date or time's text and whether it is before Christ, which adds " BC" at the end.
fn with_era((text, before_christ): (String, bool)) -> String {
    if before_christ {
        format!("{text} BC")
    } else {
        text
    }
}

/// A day number's date, without its era; a day outside the Julian-day routines' range (no
/// date or timestamp reaches one) prints as infinity, as it did through chrono.
fn date_text(days: i64) -> (String, bool) {
    match super::julian_to_date(days + super::EPOCH_JULIAN_DAY) {
        Ok((year, month, day)) if year > 0 => (format!("{year:04}-{month:02}-{day:02}"), false),
        Ok((year, month, day)) => (format!("{:04}-{month:02}-{day:02}", 1 - year), true),
        Err(_) => ("infinity".into(), false),
    }
}

fn timestamp_text(micros: i64) -> (String, bool) {
    let days = micros.div_euclid(MICROSECONDS_PER_DAY);
    let time = micros.rem_euclid(MICROSECONDS_PER_DAY);
    let (date, before_christ) = date_text(days);
    let seconds_total = time / 1_000_000;
    let fraction = time % 1_000_000;
    let mut text = format!(
        "{} {:02}:{:02}:{:02}",
        date,
        seconds_total / 3600,
        (seconds_total / 60) % 60,
        seconds_total % 60
    );
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    (text, before_christ)
}

/// The error for date/time input that does not parse: 22008 when it has the shape
/// year-month-day (and hour:minute) but a field is out of range (2023-02-29), else 22007.
pub(crate) fn date_input_error(type_name: &str, trimmed: &str, text: &str) -> SqlError {
    let date_part = trimmed.split([' ', 'T']).next().unwrap_or("");
    let fields: Vec<&str> = date_part.split('-').collect();
    let numeric = fields.len() == 3
        && fields
            .iter()
            .all(|field| !field.is_empty() && field.chars().all(|c| c.is_ascii_digit()));
    if numeric {
        let month: u32 = fields[1].parse().unwrap_or(0);
        let day: u32 = fields[2].parse().unwrap_or(0);
        let year: i32 = fields[0].parse().unwrap_or(0);
        if NaiveDate::from_ymd_opt(year, month, day).is_none() {
            return SqlError::new(
                "22008",
                format!("date/time field value out of range: \"{text}\""),
            );
        }
        // A well-formed date with a time whose fields are numbers but out of range.
        let time_part = trimmed.split([' ', 'T']).nth(1).unwrap_or("");
        let time_fields: Vec<&str> = time_part.split(':').collect();
        let time_numeric = time_fields.len() >= 2
            && time_fields.iter().all(|field| {
                !field.is_empty() && field.chars().all(|c| c.is_ascii_digit() || c == '.')
            });
        if time_numeric {
            let hour: u32 = time_fields[0].parse().unwrap_or(99);
            let minute: u32 = time_fields[1].parse().unwrap_or(99);
            let second: f64 =
                time_fields.get(2).and_then(|field| field.parse().ok()).unwrap_or(0.0);
            if hour > 24 || minute > 59 || second >= 61.0 {
                return SqlError::new(
                    "22008",
                    format!("date/time field value out of range: \"{text}\""),
                );
            }
        }
    }
    // invalid_datetime_format, PostgreSQL's code for unparsable date/time input.
    SqlError::new("22007", format!("invalid input syntax for type {type_name}: \"{text}\""))
}

pub fn parse_date(text: &str) -> Result<i32> {
    let (trimmed, before_christ) = split_era(text.trim());
    let body = with_input_era(trimmed, before_christ).ok_or_else(|| field_out_of_range(text))?;
    let date = NaiveDate::parse_from_str(&body, "%Y-%m-%d")
        .map_err(|_| date_input_error("date", trimmed, text))?;
    let days = (date - epoch_date()).num_days();
    if days < -super::EPOCH_JULIAN_DAY {
        return Err(SqlError::new("22008", format!("date out of range: \"{text}\"")));
    }
    i32::try_from(days).map_err(|_| SqlError::out_of_range("date"))
}

fn field_out_of_range(text: &str) -> SqlError {
    SqlError::new("22008", format!("date/time field value out of range: \"{text}\""))
}

/// Date and time input's era: a trailing "BC" or "AD" (any case, after a space), removed.
fn split_era(trimmed: &str) -> (&str, bool) {
    let Some((body, era)) = trimmed.rsplit_once(' ') else { return (trimmed, false) };
    match era.to_ascii_lowercase().as_str() {
        "bc" => (body.trim_end(), true),
        "ad" => (body.trim_end(), false),
        _ => (trimmed, false),
    }
}

/// The input with a year before Christ renumbered as PostgreSQL (and chrono) count years:
/// y BC is 1 - y, so that leap years (1 BC, 5 BC) are checked in that numbering. `None`
/// for a year below 1 (there is no "0000 BC").
fn with_input_era(body: &str, before_christ: bool) -> Option<std::borrow::Cow<'_, str>> {
    if !before_christ {
        return Some(std::borrow::Cow::Borrowed(body));
    }
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    let year = body[..digits].parse::<i64>().ok().filter(|year| *year >= 1)?;
    let renumbered = 1 - year;
    let year_text =
        if renumbered >= 0 { format!("{renumbered:04}") } else { format!("-{:04}", -renumbered) };
    Some(std::borrow::Cow::Owned(format!("{year_text}{}", &body[digits..])))
}

/// Parses a timestamp. With `with_zone`, a zone written after the time (an offset `+02`,
/// `-05:30`, `Z`, an abbreviation `EST`, a zone name `America/New_York`) places it; without
/// one it is wall-clock time in the session zone. Without `with_zone` a zone is ignored,
/// as PostgreSQL's timestamp_in ignores it.
pub fn parse_timestamp(text: &str, with_zone: bool) -> Result<i64> {
    // PostgreSQL's datetime input errors name timestamp without time zone "timestamp".
    let type_name = if with_zone { "timestamp with time zone" } else { "timestamp" };
    let bad = || date_input_error(type_name, text.trim(), text);
    let (trimmed, before_christ) = split_era(text.trim());
    let renumbered =
        with_input_era(trimmed, before_christ).ok_or_else(|| field_out_of_range(text))?;
    let (body, zone_text) = split_input_zone(&renumbered);
    let local = parse_wall_clock(&body).ok_or_else(bad)?;
    if before_christ {
        // A year before 4713 BC is outside the timestamp range.
        super::check_timestamp(local)?;
    }
    let zone = match zone_text {
        None => None,
        Some(zone_text) => Some(super::input_zone(zone_text).ok_or_else(|| {
            if zone_text.contains('/') {
                super::zone_not_recognized(&zone_text.to_lowercase())
            } else {
                bad()
            }
        })?),
    };
    if !with_zone {
        return Ok(local);
    }
    Ok(match zone {
        None => super::session_local_to_utc(local),
        Some(zone) => zone.local_to_utc(local),
    })
}

/// Splits `2024-07-01 12:00:00+02` / `... EST` / `...Z` into the date-time and the zone.
fn split_input_zone(trimmed: &str) -> (String, Option<&str>) {
    let mut body = trimmed.to_string();
    // ISO 8601's `T` between the date and the time.
    if body.len() > 10 && matches!(body.as_bytes()[10], b'T' | b't') && body.is_char_boundary(11) {
        body.replace_range(10..11, " ");
    }
    // A zone word after a space: `... EST`, `... America/New_York`, `... +02:00`.
    if let Some(position) = body.rfind(' ').filter(|&position| position > 10) {
        let word = &trimmed[position + 1..];
        let starts_zone =
            word.starts_with(['+', '-']) || word.starts_with(|c: char| c.is_ascii_alphabetic());
        if starts_zone && !word.contains('.') {
            body.truncate(position);
            return (body.trim_end().to_string(), Some(word));
        }
    }
    // An offset or `Z` written against the time: `12:00:00+02`, `12:00Z`.
    if let Some(position) = body.rfind(['+', '-', 'Z', 'z']).filter(|&position| position > 10) {
        let zone = &trimmed[position..];
        body.truncate(position);
        return (body, Some(zone));
    }
    (body, None)
}

/// `YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]` as microseconds since 2000-01-01.
fn parse_wall_clock(body: &str) -> Option<i64> {
    let body = body.trim();
    let parsed = NaiveDateTime::parse_from_str(body, "%Y-%m-%d %H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(body, "%Y-%m-%d %H:%M"))
        .or_else(|_| {
            NaiveDate::parse_from_str(body, "%Y-%m-%d")
                .map(|date| date.and_hms_opt(0, 0, 0).expect("midnight"))
        })
        .ok()?;
    let days = (parsed.date() - epoch_date()).num_days();
    let time = i64::from(parsed.num_seconds_from_midnight()) * 1_000_000
        + i64::from(parsed.nanosecond() / 1000);
    Some(days * MICROSECONDS_PER_DAY + time)
}

/// timestamptz_out: the wall-clock time in the session zone and the zone's offset then.
pub fn format_timestamptz(utc_micros: i64) -> String {
    super::with_session_zone(|zone| {
        let offset_seconds = zone.offset_at_utc(utc_micros);
        let local = utc_micros.saturating_add(i64::from(offset_seconds) * 1_000_000);
        let (text, before_christ) = timestamp_text(local);
        with_era((format!("{text}{}", super::format_offset(offset_seconds, false)), before_christ))
    })
}

/// Microseconds since 2000-01-01 UTC now.
pub fn now_micros() -> i64 {
    let since_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(crate::convert::duration_micros)
        .unwrap_or(0);
    since_unix - POSTGRES_EPOCH_DAYS_FROM_UNIX * MICROSECONDS_PER_DAY
}

pub fn parse_bool(text: &str) -> Result<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "on" | "1" => Ok(true),
        "f" | "false" | "n" | "no" | "off" | "0" => Ok(false),
        _ => Err(SqlError::invalid_text("boolean", text)),
    }
}

pub fn parse_float(text: &str, ty: &SqlType) -> Result<f64> {
    let trimmed = text.trim();
    let value = match trimmed.to_ascii_lowercase().as_str() {
        "nan" => f64::NAN,
        "infinity" | "+infinity" | "inf" | "+inf" => f64::INFINITY,
        "-infinity" | "-inf" => f64::NEG_INFINITY,
        _ => trimmed.parse::<f64>().map_err(|_| SqlError::invalid_text(ty.message_name(), text))?,
    };
    if *ty == SqlType::Float4 && value.is_finite() {
        #[allow(clippy::cast_possible_truncation)]
        let single = value as f32;
        if single.is_infinite() {
            return Err(SqlError::new(
                "22003",
                format!("\"{trimmed}\" is out of range for type real"),
            ));
        }
        return Ok(f64::from(single));
    }
    if value.is_infinite() && !trimmed.to_ascii_lowercase().contains("inf") {
        return Err(SqlError::new(
            "22003",
            format!("\"{trimmed}\" is out of range for type double precision"),
        ));
    }
    Ok(value)
}

pub fn parse_integer(text: &str, ty: &SqlType) -> Result<i64> {
    let trimmed = text.trim();
    let value: i64 = match trimmed.parse::<i64>() {
        Ok(value) => value,
        Err(_) => {
            let digits = trimmed.trim_start_matches(['-', '+']);
            if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(SqlError::new(
                    "22003",
                    format!("value \"{trimmed}\" is out of range for type {}", ty.message_name()),
                ));
            }
            return Err(SqlError::invalid_text(ty.message_name(), text));
        }
    };
    let (low, high) = ty.integer_range();
    if value < low || value > high {
        return Err(SqlError::new(
            "22003",
            format!("value \"{trimmed}\" is out of range for type {}", ty.message_name()),
        ));
    }
    Ok(value)
}

pub fn parse_numeric(text: &str) -> Result<Decimal> {
    let trimmed = text.trim();
    Decimal::from_str(trimmed)
        .or_else(|_| Decimal::from_scientific(trimmed))
        .map_err(|_| SqlError::invalid_text("numeric", text))
}

/// Applies a numeric(p,s) type modifier: rounds half away from zero to `s` digits and checks
/// that at most `p - s` digits remain before the point.
pub fn apply_numeric_typmod(
    value: Decimal,
    precision: Option<u32>,
    scale: Option<u32>,
) -> Result<Decimal> {
    let Some(precision) = precision else { return Ok(value) };
    let scale = scale.unwrap_or(0);
    let rounded = value.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    let integer_digits = rounded.trunc().abs().to_string().trim_start_matches('0').len();
    let allowed = crate::convert::usize_from(precision.saturating_sub(scale));
    if integer_digits > allowed {
        return Err(SqlError::new(
            "22003",
            format!(
                "numeric field overflow: a field with precision {precision}, scale {scale} must round to an absolute value less than 10^{allowed}"
            ),
        ));
    }
    let mut padded = rounded;
    padded.rescale(scale);
    Ok(padded)
}

/// Number of characters, as PostgreSQL counts them.
pub fn char_length(text: &str) -> usize {
    text.chars().count()
}

/// Pads or checks a value for char(n): an explicit cast truncates; an assignment fails unless
/// the excess is blanks.
pub fn to_bpchar(text: &str, length: u32, explicit: bool) -> Result<String> {
    let length = crate::convert::usize_from(length);
    let count = char_length(text);
    if count > length {
        let excess: String = text.chars().skip(length).collect();
        if explicit || excess.chars().all(|c| c == ' ') {
            return Ok(text.chars().take(length).collect());
        }
        return Err(SqlError::new("22001", format!("value too long for type character({length})")));
    }
    let mut padded = text.to_string();
    for _ in count..length {
        padded.push(' ');
    }
    Ok(padded)
}

pub fn to_varchar(text: &str, length: Option<u32>, explicit: bool) -> Result<String> {
    let Some(length) = length else { return Ok(text.to_string()) };
    let length = crate::convert::usize_from(length);
    if char_length(text) <= length {
        return Ok(text.to_string());
    }
    let excess: String = text.chars().skip(length).collect();
    if explicit || excess.chars().all(|c| c == ' ') {
        return Ok(text.chars().take(length).collect());
    }
    Err(SqlError::new("22001", format!("value too long for type character varying({length})")))
}

/// Parses text into a value of `ty` (PostgreSQL's input functions).
pub fn parse_text(text: &str, ty: &SqlType) -> Result<Datum> {
    Ok(match ty {
        // void_in ignores its input.
        SqlType::Void => Datum::Text(String::new()),
        SqlType::Bool => Datum::Bool(parse_bool(text)?),
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid => {
            Datum::Int(parse_integer(text, ty)?)
        }
        SqlType::Float4 | SqlType::Float8 => Datum::Float(parse_float(text, ty)?),
        SqlType::Numeric { precision, scale } => {
            Datum::Numeric(apply_numeric_typmod(parse_numeric(text)?, *precision, *scale)?)
        }
        SqlType::Text | SqlType::Name | SqlType::Unknown => Datum::Text(text.to_string()),
        SqlType::Varchar(length) => Datum::Text(to_varchar(text, *length, false)?),
        SqlType::Char(length) => Datum::Text(to_bpchar(text, *length, false)?),
        SqlType::Bytea => Datum::Bytes(parse_bytea(text)?),
        SqlType::Date => Datum::Date(parse_date(text)?),
        SqlType::Timestamp => Datum::Timestamp(parse_timestamp(text, false)?),
        SqlType::TimestampTz => Datum::TimestampTz(parse_timestamp(text, true)?),
        SqlType::Vector(dimensions) => parse_vector(text, *dimensions)?,
        SqlType::HalfVec(dimensions) => super::parse_halfvec(text, *dimensions)?,
        SqlType::SparseVec(dimensions) => super::parse_sparsevec(text, *dimensions)?,
        SqlType::Array(element) => parse_array(text, element)?,
        SqlType::Int2Vector => parse_vector_array(text, &SqlType::Int2)?,
        SqlType::OidVector => parse_vector_array(text, &SqlType::Oid)?,
        SqlType::Json => parse_json_text(text)?,
        SqlType::Jsonb => parse_jsonb(text)?,
        SqlType::JsonPath => Datum::Text(jsonpath::parse_jsonpath(text)?.output()),
        SqlType::Uuid => super::parse_uuid(text)?,
        SqlType::Bit(_) | SqlType::VarBit(_) => {
            super::apply_bit_typmod(&Arc::new(super::parse_bit_string(text)?), ty, false)?
        }
        SqlType::Interval => Datum::Interval(parse_interval(text)?),
        SqlType::Time => Datum::Time(parse_time(text)?),
        // Names resolve through the catalog: the binder makes such input a cast the
        // executor runs (`system::objects`), so no value reaches this without it.
        SqlType::Object(kind) => {
            return Err(SqlError::internal(format!(
                "input of type {} needs the catalog",
                kind.type_name()
            )))
        }
    })
}
