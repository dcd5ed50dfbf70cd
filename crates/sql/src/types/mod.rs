//! SQL types and values: PostgreSQL's type system as far as tierdb supports it, the text
//! input and output functions, casts, comparison and the arithmetic rules clients observe
//! (integer overflow per width, numeric result scales, float output, bpchar padding).
//!
//! Storage mapping (engine `Value`): integers, dates and timestamps are `Int` (dates in days
//! and timestamps in microseconds since 2000-01-01, as PostgreSQL counts them), floats are
//! `Float`, numeric is `Numeric`, character types are `Text` (char(n) stored padded).

mod arithmetic;
mod array;
mod binary;
mod bit;
mod bytea;
mod cast;
mod common_type;
mod datetime;
mod datetime_format;
mod datetime_input;
mod datetime_parse;
mod halfvec;
mod interval;
mod json;
pub mod jsonpath;
mod number_format;
mod reg;
pub(crate) mod regex_patterns;
mod sparsevec;
mod text;
mod time;
mod type_names;
mod uuid;
mod vector;
mod zone;

pub use arithmetic::*;
pub use array::*;
pub use binary::*;
pub use bit::*;
pub use bytea::*;
pub use cast::*;
pub use common_type::select_common_type;
pub use datetime::*;
pub use datetime_format::*;
pub use datetime_input::{
    clear_statement_time, install_statement_time, parse_date, parse_time, parse_timestamp,
    DATE_INFINITY, DATE_MINUS_INFINITY, TIMESTAMP_INFINITY, TIMESTAMP_MINUS_INFINITY,
};
pub(crate) use datetime_parse::{julian_to_date, EPOCH_JULIAN_DAY};
pub use datetime_parse::{
    parse_date_formatted, parse_timestamp_formatted, round_timestamp_to_digits,
};
pub use halfvec::*;
pub use interval::*;
pub use json::*;
pub use number_format::{format_number_pattern, parse_number_pattern, NumberValue};
pub use reg::*;
pub use regex_patterns::regex_is_match;
pub use sparsevec::*;
pub use text::*;
pub use time::*;
pub use type_names::*;
pub use uuid::*;
pub use vector::*;
pub use zone::*;

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::Arc;

use chrono::NaiveDate;
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
    /// interval: months, days and microseconds (`Datum::Interval`, types/interval.rs).
    Interval,
    /// time without time zone: microseconds since midnight (`Datum::Time`).
    Time,
    /// PostgreSQL's `oid` (catalog queries).
    Oid,
    /// PostgreSQL's `name` (catalog queries); behaves as text.
    Name,
    /// pgvector's `vector(n)`: `Some(n)` checks the dimension count on assignment.
    Vector(Option<u32>),
    /// pgvector's `halfvec(n)`: half-precision elements (`Datum::HalfVec`, types/halfvec.rs).
    HalfVec(Option<u32>),
    /// pgvector's `sparsevec(n)` (`Datum::SparseVec`, types/sparsevec.rs).
    SparseVec(Option<u32>),
    /// A one-dimensional array of the element type (types/array.rs).
    Array(Box<SqlType>),
    /// The catalog's `int2vector` (pg_index.indkey): smallints, subscripts from 0.
    Int2Vector,
    /// The catalog's `oidvector` (pg_index.indclass): oids, subscripts from 0.
    OidVector,
    /// An object identifier type (regclass, regtype, ...): an oid printed as a name.
    Object(ObjectKind),
    /// json: the input text, checked and kept as it was.
    Json,
    /// jsonb: parsed and normalised (`Datum::Jsonb`).
    Jsonb,
    /// jsonpath: its normalised text (`Datum::Text`), parsed again where it is used.
    JsonPath,
    /// uuid: 16 bytes (`Datum::Uuid`), ordered as bytes as PostgreSQL's uuid_cmp does.
    Uuid,
    /// bit(n): exactly n bits (`Datum::Bit`, types/bit.rs); `None` is bit without a typmod
    /// (a literal or an operator's result; the type name `bit` alone is bit(1)).
    Bit(Option<u32>),
    /// bit varying(n): at most n bits (`Datum::Bit`).
    VarBit(Option<u32>),
    /// An untyped literal or parameter whose type is not decided yet.
    Unknown,
    /// The pseudo-type `void`: what a function called for its effect returns
    /// (pg_advisory_unlock_all); its one value prints as the empty string.
    Void,
}

/// Days from 1970-01-01 to PostgreSQL's epoch 2000-01-01.
const POSTGRES_EPOCH_DAYS_FROM_UNIX: i64 = 10_957;
pub(crate) const MICROSECONDS_PER_DAY: i64 = 86_400_000_000;

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
            SqlType::Void => 2278,
            SqlType::Char(_) => 1042,
            SqlType::Varchar(_) => 1043,
            SqlType::Date => 1082,
            SqlType::Timestamp => 1114,
            SqlType::TimestampTz => 1184,
            SqlType::Interval => INTERVAL_OID,
            SqlType::Time => TIME_OID,
            SqlType::Numeric { .. } => 1700,
            SqlType::Vector(_) => VECTOR_OID,
            SqlType::HalfVec(_) => HALFVEC_OID,
            SqlType::SparseVec(_) => SPARSEVEC_OID,
            SqlType::Object(kind) => kind.type_oid(),
            SqlType::Json => 114,
            SqlType::Jsonb => 3802,
            SqlType::JsonPath => 4072,
            SqlType::Uuid => UUID_OID,
            SqlType::Bit(_) => BIT_OID,
            SqlType::VarBit(_) => VARBIT_OID,
            SqlType::Int2Vector => 22,
            SqlType::OidVector => 30,
            // The element types without an array type are refused when the array type is
            // made (`array_of`), so this is never reached with one.
            SqlType::Array(element) => array_type_oid(element).unwrap_or(1009),
        }
    }

    /// The element type of an array type (int2vector's is smallint).
    pub fn array_element(&self) -> Option<&SqlType> {
        const INT2: SqlType = SqlType::Int2;
        const OID: SqlType = SqlType::Oid;
        match self {
            SqlType::Array(element) => Some(element),
            SqlType::Int2Vector => Some(&INT2),
            SqlType::OidVector => Some(&OID),
            _ => None,
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
            INTERVAL_OID => SqlType::Interval,
            TIME_OID => SqlType::Time,
            1700 => SqlType::numeric(),
            VECTOR_OID => SqlType::Vector(None),
            HALFVEC_OID => SqlType::HalfVec(None),
            SPARSEVEC_OID => SqlType::SparseVec(None),
            22 => SqlType::Int2Vector,
            30 => SqlType::OidVector,
            114 => SqlType::Json,
            3802 => SqlType::Jsonb,
            4072 => SqlType::JsonPath,
            UUID_OID => SqlType::Uuid,
            BIT_OID => SqlType::Bit(None),
            VARBIT_OID => SqlType::VarBit(None),
            other => match array_element_of_oid(other) {
                Some(element) => SqlType::Array(Box::new(element)),
                None => SqlType::Object(ObjectKind::from_type_oid(other)?),
            },
        })
    }

    /// The type modifier as PostgreSQL reports it (pg_attribute.atttypmod), -1 when none.
    pub fn typmod(&self) -> i32 {
        let header = 4;
        match self {
            // The binder bounds lengths by CHARACTER_LENGTH_MAX (10 MiB) and numeric
            // precision by 1000, so these fit i32 with the header.
            SqlType::Varchar(Some(length)) | SqlType::Char(length) => {
                bounded_i32(u64::from(*length)) + header
            }
            SqlType::Numeric { precision: Some(precision), scale } => {
                let precision = bounded_i32(u64::from(*precision));
                let scale = bounded_i32(u64::from(scale.unwrap_or(0)));
                ((precision << 16) | scale) + header
            }
            // pgvector's typmod is the dimension count itself, without a header.
            SqlType::Vector(Some(dimensions)) | SqlType::HalfVec(Some(dimensions)) => {
                bounded_i32(u64::from(*dimensions))
            }
            // bit's typmod is the length itself, at most BIT_TYPMOD_MAX.
            SqlType::Bit(Some(length)) | SqlType::VarBit(Some(length)) => {
                bounded_i32(u64::from(*length))
            }
            // Up to 1,000,000,000 (the typmod's check), which fits i32.
            SqlType::SparseVec(Some(dimensions)) => i32::try_from(*dimensions).unwrap_or(-1),
            // An array column's typmod is its element's (varchar(10)[]).
            SqlType::Array(element) => element.typmod(),
            _ => -1,
        }
    }

    /// Storage size in bytes as pg_type.typlen reports it (-1: variable).
    pub fn length(&self) -> i16 {
        match self {
            SqlType::Bool => 1,
            SqlType::Int2 => 2,
            SqlType::Int4 | SqlType::Float4 | SqlType::Date | SqlType::Oid | SqlType::Object(_) => {
                4
            }
            SqlType::Int8
            | SqlType::Float8
            | SqlType::Timestamp
            | SqlType::TimestampTz
            | SqlType::Time => 8,
            SqlType::Uuid | SqlType::Interval => 16,
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
            SqlType::Interval => "interval".into(),
            SqlType::Time => "time without time zone".into(),
            SqlType::Oid => "oid".into(),
            SqlType::Name => "name".into(),
            SqlType::Vector(Some(dimensions)) => format!("vector({dimensions})"),
            SqlType::Vector(None) => "vector".into(),
            SqlType::HalfVec(Some(dimensions)) => format!("halfvec({dimensions})"),
            SqlType::HalfVec(None) => "halfvec".into(),
            SqlType::SparseVec(Some(dimensions)) => format!("sparsevec({dimensions})"),
            SqlType::SparseVec(None) => "sparsevec".into(),
            SqlType::Array(element) => format!("{}[]", element.display_name()),
            SqlType::Int2Vector => "int2vector".into(),
            SqlType::OidVector => "oidvector".into(),
            SqlType::Object(kind) => kind.type_name().into(),
            SqlType::Json => "json".into(),
            SqlType::Jsonb => "jsonb".into(),
            SqlType::JsonPath => "jsonpath".into(),
            SqlType::Uuid => "uuid".into(),
            SqlType::Bit(Some(length)) => format!("bit({length})"),
            SqlType::Bit(None) => "bit".into(),
            SqlType::VarBit(Some(length)) => format!("bit varying({length})"),
            SqlType::VarBit(None) => "bit varying".into(),
            SqlType::Unknown => "unknown".into(),
            SqlType::Void => "void".into(),
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
            SqlType::Void => "void",
            SqlType::Varchar(_) => "character varying",
            SqlType::Char(_) => "character",
            SqlType::Bytea => "bytea",
            SqlType::Date => "date",
            SqlType::Timestamp => "timestamp without time zone",
            SqlType::TimestampTz => "timestamp with time zone",
            SqlType::Interval => "interval",
            SqlType::Time => "time without time zone",
            SqlType::Oid => "oid",
            SqlType::Name => "name",
            SqlType::Vector(_) => "vector",
            SqlType::HalfVec(_) => "halfvec",
            SqlType::SparseVec(_) => "sparsevec",
            SqlType::Array(_) => "array",
            SqlType::Int2Vector => "int2vector",
            SqlType::OidVector => "oidvector",
            SqlType::Object(kind) => kind.type_name(),
            SqlType::Json => "json",
            SqlType::Jsonb => "jsonb",
            SqlType::JsonPath => "jsonpath",
            SqlType::Uuid => "uuid",
            SqlType::Bit(_) => "bit",
            SqlType::VarBit(_) => "bit varying",
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
            | SqlType::Object(_)
            | SqlType::Date
            | SqlType::Timestamp
            | SqlType::TimestampTz
            | SqlType::Time => KeyKind::Int,
            SqlType::Float4 | SqlType::Float8 => KeyKind::Float,
            SqlType::Numeric { .. } => KeyKind::Numeric,
            SqlType::Bytea
            | SqlType::Uuid
            | SqlType::Bit(_)
            | SqlType::VarBit(_)
            | SqlType::Interval
            | SqlType::Vector(_)
            | SqlType::HalfVec(_)
            | SqlType::SparseVec(_)
            | SqlType::Array(_)
            | SqlType::Int2Vector
            | SqlType::OidVector => KeyKind::Bytes,
            SqlType::Text
            | SqlType::Varchar(_)
            | SqlType::Char(_)
            | SqlType::Name
            | SqlType::Json
            | SqlType::Jsonb
            | SqlType::JsonPath
            | SqlType::Unknown
            | SqlType::Void => KeyKind::Text,
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
            (SqlType::Vector(_), SqlType::Vector(_)) => Some(SqlType::Vector(None)),
            // bit and varbit cast to each other implicitly; varbit is the preferred type.
            (SqlType::Bit(_), SqlType::Bit(_)) => Some(SqlType::Bit(None)),
            (SqlType::Bit(_) | SqlType::VarBit(_), SqlType::Bit(_) | SqlType::VarBit(_)) => {
                Some(SqlType::VarBit(None))
            }
            // vector to halfvec is pgvector's implicit cast (the reverse is assignment only).
            (SqlType::HalfVec(_), SqlType::HalfVec(_) | SqlType::Vector(_))
            | (SqlType::Vector(_), SqlType::HalfVec(_)) => Some(SqlType::HalfVec(None)),
            // vector and halfvec cast to sparsevec implicitly.
            (
                SqlType::SparseVec(_),
                SqlType::SparseVec(_) | SqlType::HalfVec(_) | SqlType::Vector(_),
            )
            | (SqlType::HalfVec(_) | SqlType::Vector(_), SqlType::SparseVec(_)) => {
                Some(SqlType::SparseVec(None))
            }
            (a, b) if a.array_element().is_some() && b.array_element().is_some() => {
                let element = SqlType::common(a.array_element()?, b.array_element()?)?;
                array_of(&element).ok()
            }
            // An object identifier compares with an oid or an integer as an oid (its
            // implicit casts to and from oid, int4 and int8).
            (SqlType::Object(_), other) | (other, SqlType::Object(_)) if other.is_integer() => {
                Some(SqlType::Oid)
            }
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
    /// A pgvector `vector`: finite elements, 1 to `VECTOR_DIMENSIONS_MAX` of them.
    Vector(Arc<[f32]>),
    /// A pgvector `halfvec`: finite halves, 1 to `VECTOR_DIMENSIONS_MAX` of them.
    HalfVec(Arc<[f16]>),
    /// A pgvector `sparsevec`.
    SparseVec(Arc<SparseVector>),
    /// An array (one dimension; types/array.rs).
    Array(Arc<ArrayValue>),
    /// A value of an object identifier type (`SqlType::Object`).
    Object(ObjectReference),
    /// A jsonb value (`SqlType::Jsonb`; json values are `Text`).
    Jsonb(Arc<Jsonb>),
    /// A uuid's 16 bytes, in the order they are written.
    Uuid([u8; UUID_LENGTH]),
    /// A bit(n) or bit varying(n) value (types/bit.rs).
    Bit(Arc<BitString>),
    /// An interval (`SqlType::Interval`).
    Interval(Interval),
    /// A time of day in microseconds since midnight, 0 to 24:00:00 (`SqlType::Time`).
    Time(i64),
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
            Datum::Object(object) => Some(i64::from(object.oid)),
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
            // numeric has no negative zero (a zero decimal may carry a sign bit).
            Datum::Numeric(decimal) if decimal.is_zero() => Some(0.0),
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
            // Across the types a wall-clock value is the instant it is in the session zone.
            (Timestamp(a), TimestampTz(b)) => session_local_to_utc(*a).cmp(b),
            (TimestampTz(a), Timestamp(b)) => a.cmp(&session_local_to_utc(*b)),
            // A date past the timestamp range (to_date reaches them) is after every
            // timestamp, as date2timestamp_no_overflow makes it.
            (Date(a), Timestamp(b)) => match date_to_timestamp_micros(*a) {
                Ok(a) => a.cmp(b),
                Err(_) => Ordering::Greater,
            },
            (Date(a), TimestampTz(b)) => match date_to_timestamp_micros(*a) {
                Ok(a) => session_local_to_utc(a).cmp(b),
                Err(_) => Ordering::Greater,
            },
            (Timestamp(_) | TimestampTz(_), Date(_)) => {
                return Some(other.compare(self)?.reverse())
            }
            (Vector(a), Vector(b)) => compare_vectors(a, b),
            (HalfVec(a), HalfVec(b)) => compare_halfvecs(a, b),
            (SparseVec(a), SparseVec(b)) => compare_sparsevecs(a, b),
            (Array(a), Array(b)) => compare_arrays(a, b),
            (Object(a), Object(b)) => a.oid.cmp(&b.oid),
            (Jsonb(a), Jsonb(b)) => a.compare(b),
            (Uuid(a), Uuid(b)) => a.cmp(b),
            (Bit(a), Bit(b)) => compare_bit_strings(a, b),
            (Interval(a), Interval(b)) => a.compare(b),
            (Time(a), Time(b)) => a.cmp(b),
            (Object(a), Int(b)) => i64::from(a.oid).cmp(b),
            (Int(a), Object(b)) => a.cmp(&i64::from(b.oid)),
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
            Datum::Object(object) => {
                // As the oid's integer: an object identifier equals its oid.
                out.push(2);
                write_decimal_digits(out, i64::from(object.oid));
                out.push(0);
            }
            Datum::Int(number) => {
                // The digits a normalized numeric of the same value prints (1 = 1.0), written
                // without going through a decimal: grouping and joins on integers are hot.
                out.push(2);
                write_decimal_digits(out, *number);
                out.push(0);
            }
            Datum::Numeric(number) => {
                out.push(2);
                let normalized = number.normalize();
                match normalized.to_i64().filter(|_| normalized.scale() == 0) {
                    Some(integer) => write_decimal_digits(out, integer),
                    None => out.extend_from_slice(normalized.to_string().as_bytes()),
                }
                out.push(0);
            }
            Datum::Float(number) => {
                out.push(3);
                // -0 = 0 and every NaN = NaN, as comparisons say.
                let number = if *number == 0.0 {
                    0.0
                } else if number.is_nan() {
                    f64::NAN
                } else {
                    *number
                };
                out.extend_from_slice(&number.to_bits().to_le_bytes());
            }
            Datum::Text(text) => {
                out.push(4);
                out.extend_from_slice(&count_u64(text.len()).to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            Datum::Bytes(bytes) => {
                out.push(5);
                out.extend_from_slice(&count_u64(bytes.len()).to_le_bytes());
                out.extend_from_slice(bytes);
            }
            Datum::Date(days) => {
                out.push(6);
                // As the timestamp it equals (infinite dates as infinite timestamps); a date
                // past the timestamp range keeps a key of its own, saturated.
                let micros = datetime::date_to_timestamp_micros(*days)
                    .unwrap_or_else(|_| i64::from(*days).saturating_mul(MICROSECONDS_PER_DAY));
                out.extend_from_slice(&micros.to_le_bytes());
            }
            Datum::Timestamp(micros) | Datum::TimestampTz(micros) => {
                out.push(6);
                out.extend_from_slice(&micros.to_le_bytes());
            }
            Datum::Jsonb(value) => {
                out.push(8);
                value.group_key(out);
            }
            Datum::Uuid(bytes) => {
                out.push(9);
                out.extend_from_slice(bytes);
            }
            Datum::Bit(bits) => {
                out.push(14);
                out.extend_from_slice(&bit_storage_bytes(bits));
            }
            Datum::Interval(interval) => {
                // The normalised span: '1 mon' and '30 days' are equal, so one group.
                out.push(10);
                out.extend_from_slice(&interval.span_micros().to_le_bytes());
            }
            Datum::Time(micros) => {
                out.push(11);
                out.extend_from_slice(&micros.to_le_bytes());
            }
            Datum::Vector(elements) => {
                // -0 = 0 as pgvector's comparison says (elements are never NaN).
                out.push(7);
                out.extend_from_slice(&count_u64(elements.len()).to_le_bytes());
                for element in elements.iter() {
                    let element = if *element == 0.0 { 0.0f32 } else { *element };
                    out.extend_from_slice(&element.to_bits().to_le_bytes());
                }
            }
            Datum::HalfVec(elements) => {
                // -0 = 0 as pgvector's comparison says (elements are never NaN).
                out.push(12);
                out.extend_from_slice(&count_u64(elements.len()).to_le_bytes());
                for element in elements.iter() {
                    let element = if element.to_f32() == 0.0 { f16::ZERO } else { *element };
                    out.extend_from_slice(&element.to_bits().to_le_bytes());
                }
            }
            Datum::SparseVec(value) => {
                // Equal values have equal elements (never -0: zeros are not stored).
                out.push(13);
                out.extend_from_slice(&sparsevec_storage_bytes(value));
            }
            Datum::Array(array) => {
                // Equal arrays (same bounds, equal elements) give equal keys.
                out.push(8);
                out.extend_from_slice(&array.lower.to_le_bytes());
                out.extend_from_slice(&count_u64(array.elements.len()).to_le_bytes());
                for element in &array.elements {
                    element.group_key(out);
                }
            }
        }
    }

    /// Approximate bytes this value occupies in memory (work_mem accounting).
    pub fn memory_size(&self) -> usize {
        let inline = std::mem::size_of::<Datum>();
        match self {
            Datum::Text(text) => inline + text.len(),
            Datum::Bytes(bytes) => inline + bytes.len(),
            Datum::Vector(elements) => inline + std::mem::size_of_val(&**elements),
            Datum::HalfVec(elements) => inline + std::mem::size_of_val(&**elements),
            Datum::Bit(bits) => inline + bits.bytes().len(),
            Datum::SparseVec(value) => inline + value.indices.len() * 8,
            Datum::Array(array) => {
                inline + array.elements.iter().map(Datum::memory_size).sum::<usize>()
            }
            Datum::Object(object) => inline + object.text.as_ref().map_or(0, |text| text.len()),
            // Its output's length: what it takes stored, a fair measure of the tree.
            Datum::Jsonb(value) => inline + value.output().len(),
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
            Datum::Vector(elements) => Value::Bytes(vector_storage_bytes(elements)),
            Datum::HalfVec(elements) => Value::Bytes(halfvec_storage_bytes(elements)),
            Datum::SparseVec(value) => Value::Bytes(sparsevec_storage_bytes(value)),
            Datum::Array(array) => {
                let element = ty.array_element().unwrap_or(&SqlType::Text);
                Value::Bytes(array_storage_bytes(array, element)?)
            }
            Datum::Object(object) => Value::Int(i64::from(object.oid)),
            Datum::Jsonb(value) => Value::Text(value.output()),
            Datum::Uuid(bytes) => Value::Bytes(bytes.to_vec()),
            Datum::Bit(bits) => Value::Bytes(bit_storage_bytes(bits)),
            Datum::Interval(interval) => Value::Bytes(interval.storage_bytes()),
            Datum::Time(micros) => Value::Int(*micros),
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
                SqlType::Time => Datum::Time(*number),
                _ => Datum::Int(*number),
            },
            Value::Float(number) => Datum::Float(*number),
            Value::Numeric(decimal) => Datum::Numeric(*decimal),
            Value::Text(text) if *ty == SqlType::Jsonb => jsonb_from_storage(text),
            Value::Text(text) => Datum::Text(text.clone()),
            Value::Bytes(bytes) => match ty {
                SqlType::Vector(_) => vector_from_storage(bytes),
                SqlType::HalfVec(_) => halfvec_from_storage(bytes),
                SqlType::SparseVec(_) => sparsevec_from_storage(bytes),
                SqlType::Uuid => uuid_from_storage(bytes),
                SqlType::Bit(_) | SqlType::VarBit(_) => bit_from_storage(bytes),
                SqlType::Interval => Datum::Interval(Interval::from_storage(bytes)),
                SqlType::Array(_) | SqlType::Int2Vector | SqlType::OidVector => {
                    array_from_storage(bytes, ty.array_element().expect("an array type"))
                }
                _ => Datum::Bytes(bytes.clone()),
            },
        }
    }

    /// As `from_value`, taking the value (strings and bytes move instead of being copied).
    pub fn from_owned_value(value: Value, ty: &SqlType) -> Datum {
        match value {
            Value::Text(text) if *ty != SqlType::Jsonb => Datum::Text(text),
            Value::Bytes(bytes)
                if !matches!(
                    ty,
                    SqlType::Vector(_)
                        | SqlType::HalfVec(_)
                        | SqlType::SparseVec(_)
                        | SqlType::Uuid
                        | SqlType::Bit(_)
                        | SqlType::VarBit(_)
                        | SqlType::Interval
                        | SqlType::Array(_)
                        | SqlType::Int2Vector
                        | SqlType::OidVector
                ) =>
            {
                Datum::Bytes(bytes)
            }
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
            // numeric has no negative zero: `0.00 * -1` prints 0.00, as in PostgreSQL.
            Datum::Numeric(decimal) if decimal.is_zero() => decimal.abs().to_string(),
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
            Datum::TimestampTz(micros) => format_timestamptz(*micros),
            Datum::Vector(elements) => format_vector(elements),
            Datum::HalfVec(elements) => format_halfvec(elements),
            Datum::SparseVec(value) => format_sparsevec(value),
            Datum::Array(array) => match ty {
                SqlType::Int2Vector | SqlType::OidVector => format_vector_array(array),
                _ => format_array(array, ty.array_element().unwrap_or(&SqlType::Unknown)),
            },
            Datum::Object(object) => object.output(),
            Datum::Jsonb(value) => value.output(),
            Datum::Uuid(bytes) => format_uuid(bytes),
            Datum::Bit(bits) => format_bit_string(bits),
            Datum::Interval(interval) => format_interval(interval),
            Datum::Time(micros) => format_time(*micros),
        })
    }
}

/// `number` in decimal digits (with a leading minus), appended without allocating.
fn write_decimal_digits(out: &mut Vec<u8>, number: i64) {
    use std::io::Write;
    write!(out, "{number}").expect("writing to a Vec cannot fail");
}

fn compare_floats(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// PostgreSQL's largest declared length of a character type (MaxAttrSize).
pub const CHARACTER_LENGTH_MAX: u64 = 10 * 1024 * 1024;

/// A length or precision the binder bounded (by 10 MiB at most) as i32.
fn bounded_i32(value: u64) -> i32 {
    assert!(value <= CHARACTER_LENGTH_MAX, "bounded at bind: {value}");
    i32::try_from(value).expect("CHARACTER_LENGTH_MAX fits i32")
}

pub(crate) use crate::convert::count_u64;

/// A stored jsonb value (its output text, written by `to_value`).
fn jsonb_from_storage(text: &str) -> Datum {
    let parsed = parse_jsonb(text);
    debug_assert!(parsed.is_ok(), "stored jsonb parses: {text}");
    parsed.unwrap_or(Datum::Null)
}
