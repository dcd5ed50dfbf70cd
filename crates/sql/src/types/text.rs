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
    match days {
        DATE_INFINITY => return "infinity".into(),
        DATE_MINUS_INFINITY => return "-infinity".into(),
        _ => {}
    }
    with_era(date_text(i64::from(days)))
}

/// timestamp_out in the ISO style (" BC" after the time, as for dates).
pub fn format_timestamp(micros: i64) -> String {
    if let Some(text) = infinite_timestamp_text(micros) {
        return text.into();
    }
    with_era(timestamp_text(micros))
}

/// "infinity" and "-infinity", the texts of the infinite timestamps.
fn infinite_timestamp_text(micros: i64) -> Option<&'static str> {
    match micros {
        TIMESTAMP_INFINITY => Some("infinity"),
        TIMESTAMP_MINUS_INFINITY => Some("-infinity"),
        _ => None,
    }
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

/// timestamptz_out: the wall-clock time in the session zone and the zone's offset then.
pub fn format_timestamptz(utc_micros: i64) -> String {
    if let Some(text) = infinite_timestamp_text(utc_micros) {
        return text.into();
    }
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

/// numeric input, exact: a value that needs more than the 28 significant digits tierdb's
/// numeric holds is 22003, never rounded (PostgreSQL would keep every digit).
pub fn parse_numeric(text: &str) -> Result<Decimal> {
    let trimmed = text.trim();
    let outcome = match scientific_to_plain(trimmed) {
        Some(plain) => Decimal::from_str_exact(&plain),
        None => Decimal::from_str_exact(trimmed),
    };
    outcome.map_err(|error| match error {
        rust_decimal::Error::ExceedsMaximumPossibleValue
        | rust_decimal::Error::LessThanMinimumPossibleValue
        | rust_decimal::Error::Underflow
        | rust_decimal::Error::ScaleExceedsMaximumPrecision(_) => SqlError::new(
            "22003",
            format!("numeric value {trimmed} is out of range: tierdb's numeric holds at most 28 significant digits"),
        ),
        _ => SqlError::invalid_text("numeric", text),
    })
}

/// The most an exponent in numeric input may shift the point (PostgreSQL's bound is far
/// wider; past this tierdb's 28 digits cannot hold the value anyway).
const NUMERIC_EXPONENT_MAX: i64 = 1_000;

/// `1.5e3` written out as `1500`, so that exact parsing applies to scientific input too;
/// None when `text` has no exponent or is not a number.
fn scientific_to_plain(text: &str) -> Option<String> {
    let (mantissa, exponent) = text.split_once(['e', 'E'])?;
    let exponent: i64 = exponent.parse().ok()?;
    if exponent.abs() > NUMERIC_EXPONENT_MAX {
        // Out of range either way: let the exact parse of an overlong number say so.
        let zeros = "0".repeat(60);
        return Some(if exponent > 0 {
            format!("{mantissa}{zeros}")
        } else {
            format!("0.{zeros}1")
        });
    }
    let (sign, unsigned) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits_ok = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits_ok(whole) || !digits_ok(fraction) {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let point = i64::try_from(whole.len()).ok()? + exponent;
    let plain = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(usize::try_from(-point).ok()?))
    } else if let Ok(point) = usize::try_from(point) {
        if point >= digits.len() {
            format!("{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    } else {
        return None;
    };
    Some(format!("{sign}{plain}"))
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
