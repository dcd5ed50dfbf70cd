//! SQL types and values: PostgreSQL's type system as far as tierdb supports it, the text
//! input and output functions, casts, comparison and the arithmetic rules clients observe
//! (integer overflow per width, numeric result scales, float output, bpchar padding).
//!
//! Storage mapping (engine `Value`): integers, dates and timestamps are `Int` (dates in days
//! and timestamps in microseconds since 2000-01-01, as PostgreSQL counts them), floats are
//! `Float`, numeric is `Numeric`, character types are `Text` (char(n) stored padded).

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::str::FromStr;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::{Decimal, RoundingStrategy};
use tierdb_access::KeyKind;
use tierdb_engine::Value;

use crate::error::{Result, SqlError};

/// A SQL type. Type modifiers (lengths, precision) are part of the type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SqlType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Numeric {
        precision: Option<u32>,
        scale: Option<u32>,
    },
    Text,
    Varchar(Option<u32>),
    /// char(n): blank-padded to n characters.
    Char(u32),
    Bytea,
    Date,
    Timestamp,
    TimestampTz,
    /// PostgreSQL's `oid` (catalog queries).
    Oid,
    /// PostgreSQL's `name` (catalog queries); behaves as text.
    Name,
    /// An untyped literal or parameter whose type is not decided yet.
    Unknown,
}

/// Days from 1970-01-01 to PostgreSQL's epoch 2000-01-01.
const POSTGRES_EPOCH_DAYS_FROM_UNIX: i64 = 10_957;
const MICROSECONDS_PER_DAY: i64 = 86_400_000_000;

impl SqlType {
    pub fn numeric() -> SqlType {
        SqlType::Numeric { precision: None, scale: None }
    }

    /// The PostgreSQL type OID (wire protocol, catalogs).
    pub fn oid(&self) -> u32 {
        match self {
            SqlType::Bool => 16,
            SqlType::Bytea => 17,
            SqlType::Name => 19,
            SqlType::Int8 => 20,
            SqlType::Int2 => 21,
            SqlType::Int4 => 23,
            SqlType::Text => 25,
            SqlType::Oid => 26,
            SqlType::Float4 => 700,
            SqlType::Float8 => 701,
            SqlType::Unknown => 705,
            SqlType::Char(_) => 1042,
            SqlType::Varchar(_) => 1043,
            SqlType::Date => 1082,
            SqlType::Timestamp => 1114,
            SqlType::TimestampTz => 1184,
            SqlType::Numeric { .. } => 1700,
        }
    }

    pub fn from_oid(oid: u32) -> Option<SqlType> {
        Some(match oid {
            16 => SqlType::Bool,
            17 => SqlType::Bytea,
            19 => SqlType::Name,
            20 => SqlType::Int8,
            21 => SqlType::Int2,
            23 => SqlType::Int4,
            25 => SqlType::Text,
            26 => SqlType::Oid,
            700 => SqlType::Float4,
            701 => SqlType::Float8,
            1042 => SqlType::Char(1),
            1043 => SqlType::Varchar(None),
            1082 => SqlType::Date,
            1114 => SqlType::Timestamp,
            1184 => SqlType::TimestampTz,
            1700 => SqlType::numeric(),
            _ => return None,
        })
    }

    /// The type modifier as PostgreSQL reports it (pg_attribute.atttypmod), -1 when none.
    pub fn typmod(&self) -> i32 {
        let header = 4;
        match self {
            SqlType::Varchar(Some(length)) | SqlType::Char(length) => {
                i32::try_from(*length).unwrap_or(i32::MAX - header) + header
            }
            SqlType::Numeric { precision: Some(precision), scale } => {
                let precision = i32::try_from(*precision).unwrap_or(0);
                let scale = i32::try_from(scale.unwrap_or(0)).unwrap_or(0);
                ((precision << 16) | scale) + header
            }
            _ => -1,
        }
    }

    /// Storage size in bytes as pg_type.typlen reports it (-1: variable).
    pub fn length(&self) -> i16 {
        match self {
            SqlType::Bool => 1,
            SqlType::Int2 => 2,
            SqlType::Int4 | SqlType::Float4 | SqlType::Date | SqlType::Oid => 4,
            SqlType::Int8 | SqlType::Float8 | SqlType::Timestamp | SqlType::TimestampTz => 8,
            SqlType::Name => 64,
            _ => -1,
        }
    }

    /// PostgreSQL's name for the type, as `format_type` prints it.
    pub fn display_name(&self) -> String {
        match self {
            SqlType::Bool => "boolean".into(),
            SqlType::Int2 => "smallint".into(),
            SqlType::Int4 => "integer".into(),
            SqlType::Int8 => "bigint".into(),
            SqlType::Float4 => "real".into(),
            SqlType::Float8 => "double precision".into(),
            SqlType::Numeric { precision: Some(precision), scale } => {
                format!("numeric({},{})", precision, scale.unwrap_or(0))
            }
            SqlType::Numeric { .. } => "numeric".into(),
            SqlType::Text => "text".into(),
            SqlType::Varchar(Some(length)) => format!("character varying({length})"),
            SqlType::Varchar(None) => "character varying".into(),
            SqlType::Char(length) => format!("character({length})"),
            SqlType::Bytea => "bytea".into(),
            SqlType::Date => "date".into(),
            SqlType::Timestamp => "timestamp without time zone".into(),
            SqlType::TimestampTz => "timestamp with time zone".into(),
            SqlType::Oid => "oid".into(),
            SqlType::Name => "name".into(),
            SqlType::Unknown => "unknown".into(),
        }
    }

    /// The short name used in messages ("integer", "bigint", "numeric", ...).
    pub fn message_name(&self) -> &'static str {
        match self {
            SqlType::Bool => "boolean",
            SqlType::Int2 => "smallint",
            SqlType::Int4 => "integer",
            SqlType::Int8 => "bigint",
            SqlType::Float4 => "real",
            SqlType::Float8 => "double precision",
            SqlType::Numeric { .. } => "numeric",
            SqlType::Text | SqlType::Unknown => "text",
            SqlType::Varchar(_) => "character varying",
            SqlType::Char(_) => "character",
            SqlType::Bytea => "bytea",
            SqlType::Date => "date",
            SqlType::Timestamp => "timestamp without time zone",
            SqlType::TimestampTz => "timestamp with time zone",
            SqlType::Oid => "oid",
            SqlType::Name => "name",
        }
    }

    /// The engine column kind that stores this type.
    pub fn key_kind(&self) -> KeyKind {
        match self {
            SqlType::Bool => KeyKind::Bool,
            SqlType::Int2
            | SqlType::Int4
            | SqlType::Int8
            | SqlType::Oid
            | SqlType::Date
            | SqlType::Timestamp
            | SqlType::TimestampTz => KeyKind::Int,
            SqlType::Float4 | SqlType::Float8 => KeyKind::Float,
            SqlType::Numeric { .. } => KeyKind::Numeric,
            SqlType::Bytea => KeyKind::Bytes,
            SqlType::Text
            | SqlType::Varchar(_)
            | SqlType::Char(_)
            | SqlType::Name
            | SqlType::Unknown => KeyKind::Text,
        }
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid)
    }
    pub fn is_numeric_family(&self) -> bool {
        self.is_integer()
            || matches!(self, SqlType::Float4 | SqlType::Float8 | SqlType::Numeric { .. })
    }
    pub fn is_text(&self) -> bool {
        matches!(
            self,
            SqlType::Text
                | SqlType::Varchar(_)
                | SqlType::Char(_)
                | SqlType::Name
                | SqlType::Unknown
        )
    }
    pub fn is_temporal(&self) -> bool {
        matches!(self, SqlType::Date | SqlType::Timestamp | SqlType::TimestampTz)
    }

    /// Integer range of the type (for overflow checks).
    fn integer_range(&self) -> (i64, i64) {
        match self {
            SqlType::Int2 => (i64::from(i16::MIN), i64::from(i16::MAX)),
            SqlType::Int4 => (i64::from(i32::MIN), i64::from(i32::MAX)),
            SqlType::Oid => (0, i64::from(u32::MAX)),
            _ => (i64::MIN, i64::MAX),
        }
    }

    /// Checks that `value` fits the integer type; the message is PostgreSQL's.
    pub fn check_integer(&self, value: i64) -> Result<i64> {
        let (low, high) = self.integer_range();
        if value < low || value > high {
            return Err(SqlError::out_of_range(self.message_name()));
        }
        Ok(value)
    }

    /// Rank in PostgreSQL's numeric promotion order (int2 < int4 < int8 < numeric < float4 <
    /// float8), for choosing the common type of mixed arithmetic.
    fn numeric_rank(&self) -> u8 {
        match self {
            SqlType::Int2 => 1,
            SqlType::Int4 | SqlType::Oid => 2,
            SqlType::Int8 => 3,
            SqlType::Numeric { .. } => 4,
            SqlType::Float4 => 5,
            SqlType::Float8 => 6,
            _ => 0,
        }
    }

    /// The common type of two operand types (UNION, CASE, COALESCE, comparisons).
    pub fn common(left: &SqlType, right: &SqlType) -> Option<SqlType> {
        if left == right {
            return Some(left.clone());
        }
        match (left, right) {
            (SqlType::Unknown, other) | (other, SqlType::Unknown) => Some(other.clone()),
            (a, b) if a.is_numeric_family() && b.is_numeric_family() => {
                let wider = if a.numeric_rank() >= b.numeric_rank() { a } else { b };
                // Differing inputs keep no type modifier: numeric(8,2) and integer give numeric.
                Some(match wider {
                    SqlType::Numeric { .. } => SqlType::numeric(),
                    other => other.clone(),
                })
            }
            (SqlType::Char(_), SqlType::Char(_)) => Some(SqlType::Char(1)),
            (a, b) if a.is_text() && b.is_text() => Some(SqlType::Text),
            (SqlType::Date, SqlType::Timestamp) | (SqlType::Timestamp, SqlType::Date) => {
                Some(SqlType::Timestamp)
            }
            (a, b) if a.is_temporal() && b.is_temporal() => Some(SqlType::TimestampTz),
            _ => None,
        }
    }

    /// Type of `left op right` for + - * / % on numbers.
    pub fn arithmetic(left: &SqlType, right: &SqlType) -> Option<SqlType> {
        let common = SqlType::common(left, right)?;
        // real with anything but real resolves to the float48/float84 operators (float8 is
        // the preferred type of the numeric category).
        if common == SqlType::Float4 && left != right {
            return Some(SqlType::Float8);
        }
        match common {
            SqlType::Numeric { .. } => Some(SqlType::numeric()),
            SqlType::Oid => Some(SqlType::Int8),
            ref other if other.is_numeric_family() => Some(common),
            _ => None,
        }
    }
}

/// A SQL value.
/// One row of values, in the columns\' order.
pub type Row = Vec<Datum>;

#[derive(Clone, Debug)]
pub enum Datum {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Numeric(Decimal),
    Text(String),
    Bytes(Vec<u8>),
    /// Days since 2000-01-01.
    Date(i32),
    /// Microseconds since 2000-01-01 00:00:00.
    Timestamp(i64),
    /// Microseconds since 2000-01-01 00:00:00 UTC.
    TimestampTz(i64),
}

impl PartialEq for Datum {
    fn eq(&self, other: &Datum) -> bool {
        matches!(self.compare(other), Some(Ordering::Equal))
            || matches!((self, other), (Datum::Null, Datum::Null))
    }
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Datum::Bool(flag) => Some(*flag),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Datum::Int(number) => Some(*number),
            Datum::Numeric(decimal) => decimal.to_i64(),
            Datum::Float(number) => {
                if number.is_finite() && number.abs() < 9.2e18 {
                    Decimal::from_f64(number.round()).and_then(|rounded| rounded.to_i64())
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Datum::Int(number) => number.to_f64(),
            Datum::Float(number) => Some(*number),
            Datum::Numeric(decimal) => decimal.to_f64(),
            _ => None,
        }
    }

    pub fn as_decimal(&self) -> Option<Decimal> {
        match self {
            Datum::Int(number) => Some(Decimal::from(*number)),
            Datum::Numeric(decimal) => Some(*decimal),
            Datum::Float(number) => Decimal::from_f64(*number),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            Datum::Text(text) => Some(text),
            _ => None,
        }
    }

    /// Total order used by sorts and comparisons; `None` when either side is NULL or the
    /// values are not comparable. Floats order NaN above everything, as PostgreSQL does.
    pub fn compare(&self, other: &Datum) -> Option<Ordering> {
        use Datum::*;
        Some(match (self, other) {
            (Null, _) | (_, Null) => return None,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => compare_floats(*a, *b),
            (Numeric(a), Numeric(b)) => a.cmp(b),
            (Int(a), Numeric(b)) => Decimal::from(*a).cmp(b),
            (Numeric(a), Int(b)) => a.cmp(&Decimal::from(*b)),
            (Float(_), Int(_) | Numeric(_)) | (Int(_) | Numeric(_), Float(_)) => {
                compare_floats(self.as_f64()?, other.as_f64()?)
            }
            (Text(a), Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Bytes(a), Bytes(b)) => a.cmp(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) | (TimestampTz(a), TimestampTz(b)) => a.cmp(b),
            (Timestamp(a), TimestampTz(b)) | (TimestampTz(a), Timestamp(b)) => a.cmp(b),
            (Date(a), Timestamp(b) | TimestampTz(b)) => {
                (i64::from(*a) * MICROSECONDS_PER_DAY).cmp(b)
            }
            (Timestamp(a) | TimestampTz(a), Date(b)) => {
                a.cmp(&(i64::from(*b) * MICROSECONDS_PER_DAY))
            }
            _ => return None,
        })
    }

    /// Sort order with NULLs placed by `nulls_first`.
    pub fn sort_compare(&self, other: &Datum, nulls_first: bool) -> Ordering {
        match (self.is_null(), other.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (false, false) => self.compare(other).unwrap_or(Ordering::Equal),
        }
    }

    /// A hashable key for grouping, DISTINCT and hash joins: values that compare equal map to
    /// equal keys (1 = 1.0, numeric scale ignored).
    pub fn group_key(&self, out: &mut Vec<u8>) {
        match self {
            Datum::Null => out.push(0),
            Datum::Bool(flag) => out.extend_from_slice(&[1, u8::from(*flag)]),
            Datum::Int(_) | Datum::Numeric(_) => {
                out.push(2);
                let normalized = self.as_decimal().unwrap_or_default().normalize();
                out.extend_from_slice(normalized.to_string().as_bytes());
                out.push(0);
            }
            Datum::Float(number) => {
                out.push(3);
                let number = if *number == 0.0 { 0.0 } else { *number };
                out.extend_from_slice(&number.to_bits().to_le_bytes());
            }
            Datum::Text(text) => {
                out.push(4);
                out.extend_from_slice(&u64::try_from(text.len()).unwrap_or(0).to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            Datum::Bytes(bytes) => {
                out.push(5);
                out.extend_from_slice(&u64::try_from(bytes.len()).unwrap_or(0).to_le_bytes());
                out.extend_from_slice(bytes);
            }
            Datum::Date(days) => {
                out.push(6);
                out.extend_from_slice(&(i64::from(*days) * MICROSECONDS_PER_DAY).to_le_bytes());
            }
            Datum::Timestamp(micros) | Datum::TimestampTz(micros) => {
                out.push(6);
                out.extend_from_slice(&micros.to_le_bytes());
            }
        }
    }

    /// Approximate bytes this value occupies in memory (work_mem accounting).
    pub fn memory_size(&self) -> usize {
        let inline = std::mem::size_of::<Datum>();
        match self {
            Datum::Text(text) => inline + text.len(),
            Datum::Bytes(bytes) => inline + bytes.len(),
            _ => inline,
        }
    }

    /// The engine value stored for this datum in a column of type `ty`.
    pub fn to_value(&self, ty: &SqlType) -> Result<Value> {
        Ok(match self {
            Datum::Null => Value::Null,
            Datum::Bool(flag) => Value::Bool(*flag),
            Datum::Int(number) => match ty {
                SqlType::Float4 | SqlType::Float8 => Value::Float(self.as_f64().unwrap_or(0.0)),
                SqlType::Numeric { .. } => Value::Numeric(Decimal::from(*number)),
                _ => Value::Int(*number),
            },
            Datum::Float(number) => Value::Float(*number),
            Datum::Numeric(decimal) => Value::Numeric(*decimal),
            Datum::Text(text) => Value::Text(text.clone()),
            Datum::Bytes(bytes) => Value::Bytes(bytes.clone()),
            Datum::Date(days) => Value::Int(i64::from(*days)),
            Datum::Timestamp(micros) | Datum::TimestampTz(micros) => Value::Int(*micros),
        })
    }

    /// The datum of an engine value stored in a column of type `ty`.
    pub fn from_value(value: &Value, ty: &SqlType) -> Datum {
        match value {
            Value::Null => Datum::Null,
            Value::Bool(flag) => Datum::Bool(*flag),
            Value::Int(number) => match ty {
                SqlType::Date => {
                    // A stored date was written from a Datum::Date (`to_value`), an i32.
                    let days = i32::try_from(*number);
                    debug_assert!(days.is_ok(), "a stored date fits i32: {number}");
                    Datum::Date(days.unwrap_or(if *number < 0 { i32::MIN } else { i32::MAX }))
                }
                SqlType::Timestamp => Datum::Timestamp(*number),
                SqlType::TimestampTz => Datum::TimestampTz(*number),
                _ => Datum::Int(*number),
            },
            Value::Float(number) => Datum::Float(*number),
            Value::Numeric(decimal) => Datum::Numeric(*decimal),
            Value::Text(text) => Datum::Text(text.clone()),
            Value::Bytes(bytes) => Datum::Bytes(bytes.clone()),
        }
    }

    /// As `from_value`, taking the value (strings and bytes move instead of being copied).
    pub fn from_owned_value(value: Value, ty: &SqlType) -> Datum {
        match value {
            Value::Text(text) => Datum::Text(text),
            Value::Bytes(bytes) => Datum::Bytes(bytes),
            other => Datum::from_value(&other, ty),
        }
    }

    /// PostgreSQL's text output for a value of type `ty`; `None` for NULL.
    pub fn to_text(&self, ty: &SqlType) -> Option<String> {
        Some(match self {
            Datum::Null => return None,
            Datum::Bool(flag) => if *flag { "t" } else { "f" }.to_string(),
            Datum::Int(number) => number.to_string(),
            Datum::Float(number) => {
                if *ty == SqlType::Float4 {
                    format_float4(*number)
                } else {
                    format_float8(*number)
                }
            }
            Datum::Numeric(decimal) => decimal.to_string(),
            Datum::Text(text) => text.clone(),
            Datum::Bytes(bytes) => {
                let mut text = String::with_capacity(2 + bytes.len() * 2);
                text.push_str("\\x");
                for byte in bytes {
                    let _ = write!(text, "{byte:02x}");
                }
                text
            }
            Datum::Date(days) => format_date(*days),
            Datum::Timestamp(micros) => format_timestamp(*micros),
            Datum::TimestampTz(micros) => format!("{}+00", format_timestamp(*micros)),
        })
    }
}

fn compare_floats(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Shortest round-trip digits in PostgreSQL's layout: exponent form when the decimal
/// exponent is below -4 or at least `precision` (15 for double, 6 for real).
fn format_shortest(scientific: &str, precision: i32) -> String {
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
        let integer_digits = usize::try_from(exponent).unwrap_or(0) + 1;
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

fn format_special(number: f64) -> Option<String> {
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
    format_special(number).unwrap_or_else(|| format_shortest(&format!("{number:e}"), 15))
}

pub fn format_float4(number: f64) -> String {
    #[allow(clippy::cast_possible_truncation)]
    let single = number as f32;
    format_special(number).unwrap_or_else(|| format_shortest(&format!("{single:e}"), 6))
}

fn epoch_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(2000, 1, 1).expect("valid date")
}

pub fn format_date(days: i32) -> String {
    match epoch_date().checked_add_signed(chrono::Duration::days(i64::from(days))) {
        Some(date) => format!("{:04}-{:02}-{:02}", date.year(), date.month(), date.day()),
        None => "infinity".into(),
    }
}

pub fn format_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(MICROSECONDS_PER_DAY);
    let time = micros.rem_euclid(MICROSECONDS_PER_DAY);
    let date = format_date(i32::try_from(days).unwrap_or(i32::MAX));
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
    text
}

/// The error for date/time input that does not parse: 22008 when it has the shape
/// year-month-day (and hour:minute) but a field is out of range (2023-02-29), else 22007.
fn date_input_error(type_name: &str, trimmed: &str, text: &str) -> SqlError {
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
    let trimmed = text.trim();
    let date = NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
        .map_err(|_| date_input_error("date", trimmed, text))?;
    i32::try_from((date - epoch_date()).num_days()).map_err(|_| SqlError::out_of_range("date"))
}

/// Parses a timestamp; with `with_zone`, a trailing offset (`+02`, `-05:30`, `Z`) is applied
/// so the result is UTC.
pub fn parse_timestamp(text: &str, with_zone: bool) -> Result<i64> {
    // PostgreSQL's datetime input errors name timestamp without time zone "timestamp".
    let type_name = if with_zone { "timestamp with time zone" } else { "timestamp" };
    let bad = || date_input_error(type_name, text.trim(), text);
    let mut body = text.trim().replace('T', " ");
    let mut offset_seconds = 0i64;
    if let Some(stripped) = body.strip_suffix(" UTC").or_else(|| body.strip_suffix('Z')) {
        body = stripped.to_string();
    } else if let Some(position) = body.rfind(['+', '-']).filter(|&position| position > 10) {
        let zone = body[position..].to_string();
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let parts: Vec<&str> = zone[1..].split(':').collect();
        let hours: i64 = parts.first().and_then(|part| part.parse().ok()).ok_or_else(bad)?;
        let minutes: i64 = parts.get(1).map_or(Ok(0), |part| part.parse().map_err(|_| bad()))?;
        offset_seconds = sign * (hours * 3600 + minutes * 60);
        body.truncate(position);
    }
    let body = body.trim();
    let parsed = NaiveDateTime::parse_from_str(body, "%Y-%m-%d %H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(body, "%Y-%m-%d %H:%M"))
        .or_else(|_| {
            NaiveDate::parse_from_str(body, "%Y-%m-%d")
                .map(|date| date.and_hms_opt(0, 0, 0).expect("midnight"))
        })
        .map_err(|_| bad())?;
    let days = (parsed.date() - epoch_date()).num_days();
    let time = i64::from(parsed.num_seconds_from_midnight()) * 1_000_000
        + i64::from(parsed.nanosecond() / 1000);
    let local = days * MICROSECONDS_PER_DAY + time;
    if with_zone {
        Ok(local - offset_seconds * 1_000_000)
    } else {
        Ok(local)
    }
}

/// Microseconds since 2000-01-01 UTC now.
pub fn now_micros() -> i64 {
    let since_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX))
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
    let allowed = usize::try_from(precision.saturating_sub(scale)).unwrap_or(0);
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
    let length = usize::try_from(length).unwrap_or(usize::MAX);
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
    let length = usize::try_from(length).unwrap_or(usize::MAX);
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
    })
}

fn parse_bytea(text: &str) -> Result<Vec<u8>> {
    let Some(hex) = text.strip_prefix("\\x") else { return Ok(text.as_bytes().to_vec()) };
    if hex.len() % 2 != 0 {
        return Err(SqlError::invalid_text("bytea", text));
    }
    (0..hex.len())
        .step_by(2)
        .map(|index| {
            u8::from_str_radix(&hex[index..index + 2], 16)
                .map_err(|_| SqlError::invalid_text("bytea", text))
        })
        .collect()
}

/// Casts `datum` (of type `from`) to `to`. `explicit` is true for CAST/`::` (truncating
/// character types) and false for assignment.
pub fn cast(datum: Datum, from: &SqlType, to: &SqlType, explicit: bool) -> Result<Datum> {
    if datum.is_null() {
        return Ok(Datum::Null);
    }
    if from == to && !matches!(to, SqlType::Numeric { precision: Some(_), .. }) {
        return Ok(datum);
    }
    let datum = match (&datum, from) {
        // bpchar loses its padding when it becomes another type.
        (Datum::Text(text), SqlType::Char(_)) if !matches!(to, SqlType::Char(_)) => {
            Datum::Text(text.trim_end_matches(' ').to_string())
        }
        _ => datum,
    };
    // The boolean-to-text cast spells the value out (the output function prints t/f).
    let as_text = |datum: &Datum| match datum {
        Datum::Bool(flag) => if *flag { "true" } else { "false" }.to_string(),
        other => other.to_text(from).unwrap_or_default(),
    };
    Ok(match to {
        SqlType::Text | SqlType::Name | SqlType::Unknown => Datum::Text(as_text(&datum)),
        SqlType::Varchar(length) => Datum::Text(to_varchar(&as_text(&datum), *length, explicit)?),
        SqlType::Char(length) => Datum::Text(to_bpchar(&as_text(&datum), *length, explicit)?),
        SqlType::Bool => match &datum {
            Datum::Bool(_) => datum,
            Datum::Text(text) => Datum::Bool(parse_bool(text)?),
            Datum::Int(number) => Datum::Bool(*number != 0),
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid => match &datum {
            Datum::Int(number) => Datum::Int(to.check_integer(*number)?),
            Datum::Float(number) => {
                let rounded = number.round_ties_even();
                if !rounded.is_finite() || rounded.abs() > 9.2e18 {
                    return Err(SqlError::out_of_range(to.message_name()));
                }
                let value = Decimal::from_f64(rounded)
                    .and_then(|decimal| decimal.to_i64())
                    .ok_or_else(|| SqlError::out_of_range(to.message_name()))?;
                Datum::Int(to.check_integer(value)?)
            }
            Datum::Numeric(decimal) => {
                let rounded =
                    decimal.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
                let value =
                    rounded.to_i64().ok_or_else(|| SqlError::out_of_range(to.message_name()))?;
                Datum::Int(to.check_integer(value)?)
            }
            Datum::Text(text) => Datum::Int(parse_integer(text, to)?),
            Datum::Bool(flag) if *to == SqlType::Int4 => Datum::Int(i64::from(*flag)),
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Float4 | SqlType::Float8 => match &datum {
            Datum::Text(text) => Datum::Float(parse_float(text, to)?),
            Datum::Int(_) | Datum::Float(_) | Datum::Numeric(_) => {
                let value = datum.as_f64().unwrap_or(0.0);
                if *to == SqlType::Float4 {
                    #[allow(clippy::cast_possible_truncation)]
                    let single = value as f32;
                    Datum::Float(f64::from(single))
                } else {
                    Datum::Float(value)
                }
            }
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Numeric { precision, scale } => {
            let value = match &datum {
                Datum::Text(text) => parse_numeric(text)?,
                Datum::Float(number) if !number.is_finite() => {
                    return Err(SqlError::unsupported("numeric NaN and infinity are not supported"))
                }
                Datum::Int(_) | Datum::Numeric(_) | Datum::Float(_) => {
                    datum.as_decimal().ok_or_else(|| SqlError::out_of_range(to.message_name()))?
                }
                _ => return Err(cannot_cast(from, to)),
            };
            Datum::Numeric(apply_numeric_typmod(value, *precision, *scale)?)
        }
        SqlType::Bytea => match &datum {
            Datum::Bytes(_) => datum,
            Datum::Text(text) => Datum::Bytes(parse_bytea(text)?),
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Date => match &datum {
            Datum::Date(_) => datum,
            Datum::Text(text) => Datum::Date(parse_date(text)?),
            Datum::Timestamp(micros) | Datum::TimestampTz(micros) => {
                Datum::Date(i32::try_from(micros.div_euclid(MICROSECONDS_PER_DAY)).unwrap_or(0))
            }
            _ => return Err(cannot_cast(from, to)),
        },
        SqlType::Timestamp | SqlType::TimestampTz => {
            let micros = match &datum {
                Datum::Text(text) => parse_timestamp(text, *to == SqlType::TimestampTz)?,
                Datum::Date(days) => i64::from(*days) * MICROSECONDS_PER_DAY,
                Datum::Timestamp(micros) | Datum::TimestampTz(micros) => *micros,
                _ => return Err(cannot_cast(from, to)),
            };
            if *to == SqlType::Timestamp {
                Datum::Timestamp(micros)
            } else {
                Datum::TimestampTz(micros)
            }
        }
    })
}

fn cannot_cast(from: &SqlType, to: &SqlType) -> SqlError {
    SqlError::new(
        "42846",
        format!("cannot cast type {} to {}", from.display_name(), to.display_name()),
    )
}

/// Base-10000 weight of a decimal's first non-zero digit group (PostgreSQL's numeric layout).
fn numeric_weight(value: &Decimal) -> (i64, u32) {
    let text = value.abs().normalize().to_string();
    let (integer, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let integer = integer.trim_start_matches('0');
    if !integer.is_empty() {
        let groups = i64::try_from(integer.len().div_ceil(4)).unwrap_or(0);
        let first_len = integer.len() - (usize::try_from(groups - 1).unwrap_or(0) * 4);
        let first: u32 = integer[..first_len].parse().unwrap_or(0);
        return (groups - 1, first);
    }
    // Fraction groups of 4 digits; weight -1 is the first group after the point.
    let mut padded = fraction.to_string();
    while padded.len() % 4 != 0 {
        padded.push('0');
    }
    for (index, chunk) in padded.as_bytes().chunks(4).enumerate() {
        let group: u32 = std::str::from_utf8(chunk).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
        if group != 0 {
            return (-1 - i64::try_from(index).unwrap_or(0), group);
        }
    }
    (0, 0)
}

/// PostgreSQL's result scale for numeric division (select_div_scale): at least 16
/// significant digits and no less than either input's scale.
pub fn division_scale(left: &Decimal, right: &Decimal) -> u32 {
    let (weight1, first1) = numeric_weight(left);
    let (weight2, first2) = numeric_weight(right);
    let mut quotient_weight = weight1 - weight2;
    if first1 <= first2 {
        quotient_weight -= 1;
    }
    let scale = 16 - quotient_weight * 4;
    let scale = scale.max(i64::from(left.scale())).max(i64::from(right.scale())).clamp(0, 1000);
    u32::try_from(scale).unwrap_or(0)
}

/// Numeric division with PostgreSQL's result scale (capped by the 28-digit decimal).
pub fn numeric_divide(left: Decimal, right: Decimal) -> Result<Decimal> {
    if right.is_zero() {
        return Err(SqlError::division_by_zero());
    }
    let scale = division_scale(&left, &right);
    let quotient = left.checked_div(right).ok_or_else(|| SqlError::out_of_range("numeric"))?;
    let mut rounded =
        quotient.round_dp_with_strategy(scale.min(28), RoundingStrategy::MidpointAwayFromZero);
    rounded.rescale(scale.min(28));
    Ok(rounded)
}

/// numeric ^ numeric with PostgreSQL's errors and result scale: at least 16 significant
/// digits (`NUMERIC_MIN_SIG_DIGITS` less the result's decimal weight for a fractional
/// exponent, 16 decimals for an integer one) and no less than either input's scale.
pub fn numeric_power(base: Decimal, exponent: Decimal) -> Result<Decimal> {
    use rust_decimal::MathematicalOps;
    let overflow = || SqlError::new("22003", "value overflows numeric format");
    if base.is_zero() && exponent.is_sign_negative() && !exponent.is_zero() {
        return Err(SqlError::new("2201F", "zero raised to a negative power is undefined"));
    }
    let integral = exponent.fract().is_zero();
    if base.is_sign_negative() && !base.is_zero() && !integral {
        return Err(SqlError::new(
            "2201F",
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    let result = if exponent.is_zero() {
        Decimal::ONE
    } else if base.is_zero() {
        Decimal::ZERO
    } else if integral {
        let power = exponent.trunc().to_i64().ok_or_else(overflow)?;
        base.checked_powi(power).ok_or_else(overflow)?
    } else {
        base.checked_ln()
            .and_then(|ln| ln.checked_mul(exponent))
            .and_then(|product| product.checked_exp())
            .ok_or_else(overflow)?
    };
    let weight = if integral || result.is_zero() {
        0
    } else {
        // (int) of the decimal logarithm, truncated toward zero as C does.
        let log10 = result.abs().to_f64().map_or(0.0, f64::log10);
        #[allow(clippy::cast_possible_truncation)]
        let weight = log10.trunc() as i64;
        weight
    };
    let scale =
        (16 - weight).max(i64::from(base.scale())).max(i64::from(exponent.scale())).clamp(0, 28);
    let scale = u32::try_from(scale).unwrap_or(0);
    let mut rounded = result.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    rounded.rescale(scale);
    Ok(rounded)
}
