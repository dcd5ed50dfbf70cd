//! SQL type names (`varchar(10)`, `numeric(10,2)`, `serial`) as `SqlType`s.

use sqlparser::ast;

use super::*;
use crate::parse::names::object_name;
use crate::types::CHARACTER_LENGTH_MAX;

/// A declared character length (`varchar(n)`, `char(n)`) checked as PostgreSQL checks it
/// when it resolves the type: 1 to `CHARACTER_LENGTH_MAX`.
pub(crate) fn character_length(type_name: &str, length: u64) -> Result<u32> {
    if length < 1 {
        return Err(SqlError::new(
            "22023",
            format!("length for type {type_name} must be at least 1"),
        ));
    }
    if length > CHARACTER_LENGTH_MAX {
        return Err(SqlError::new(
            "22023",
            format!("length for type {type_name} cannot exceed {CHARACTER_LENGTH_MAX}"),
        ));
    }
    u32::try_from(length).map_err(|_| SqlError::internal("a checked length fits u32"))
}

/// The declared length of a type name's modifier (`varchar(n)` as a custom type name).
pub(crate) fn modifier_length(type_name: &str, modifiers: &[String]) -> Result<Option<u32>> {
    match modifiers.first() {
        None => Ok(None),
        Some(text) => {
            let length = text.trim().parse::<u64>().map_err(|_| {
                SqlError::new("22023", format!("invalid length for type {type_name}: {text}"))
            })?;
            character_length(type_name, length).map(Some)
        }
    }
}

/// bit(n) (bit alone is bit(1)) and bit varying(n) / varbit(n) (no length: unlimited).
fn bit_type(data_type: &ast::DataType) -> Result<SqlType> {
    use ast::DataType as D;
    Ok(match data_type {
        D::Bit(length) => SqlType::Bit(Some(match length {
            Some(length) => crate::types::bit_typmod("bit", *length)?,
            None => 1,
        })),
        D::BitVarying(length) | D::VarBit(length) => SqlType::VarBit(
            length.map(|length| crate::types::bit_typmod("varbit", length)).transpose()?,
        ),
        other => return Err(SqlError::internal(format!("{other} is not a bit type"))),
    })
}

/// The largest fractional-second precision of PostgreSQL's time, timestamp and interval
/// (MAX_TIMESTAMP_PRECISION): tierdb keeps microseconds, so only this precision (or one
/// above it, which PostgreSQL reduces to it with a warning) is what tierdb stores.
const DATETIME_PRECISION_MAX: u64 = 6;

/// A fractional-second precision `type_name(p)`: accepted when it keeps microseconds;
/// rounding to fewer digits is not built (0A000, never ignored).
fn check_datetime_precision(type_name: &str, precision: Option<u64>) -> Result<()> {
    match precision {
        Some(precision) if precision < DATETIME_PRECISION_MAX => Err(SqlError::unsupported(
            format!("{type_name}({precision}): a precision below 6 is not supported"),
        )),
        _ => Ok(()),
    }
}

/// A precision written as a type modifier of a type named by a string (`timestamptz(3)`).
fn modifier_precision(type_name: &str, modifiers: &[String]) -> Result<()> {
    match modifiers {
        [] => Ok(()),
        [precision] => match precision.trim().parse::<u64>() {
            Ok(precision) => check_datetime_precision(type_name, Some(precision)),
            Err(_) => Err(SqlError::syntax(format!("invalid type modifier of {type_name}"))),
        },
        _ => Err(SqlError::syntax(format!("invalid type modifier of {type_name}"))),
    }
}

/// interval and time without time zone; a precision below 6, interval's field qualifiers
/// and time with time zone are not supported (0A000).
fn interval_or_time(data_type: &ast::DataType) -> Result<SqlType> {
    use ast::DataType as D;
    Ok(match data_type {
        D::Interval { fields: None, precision } => {
            check_datetime_precision("interval", *precision)?;
            SqlType::Interval
        }
        D::Interval { .. } => {
            return Err(SqlError::unsupported("interval field qualifiers are not supported"))
        }
        D::Time(precision, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
            check_datetime_precision("time", *precision)?;
            SqlType::Time
        }
        _ => return Err(SqlError::unsupported("type time with time zone is not supported")),
    })
}

/// The SQL type a type name denotes.
pub fn sql_type(data_type: &ast::DataType) -> Result<SqlType> {
    use ast::DataType as D;
    let length = |type_name: &str, length: &Option<ast::CharacterLength>| -> Result<Option<u32>> {
        match length {
            Some(ast::CharacterLength::IntegerLength { length, .. }) => {
                character_length(type_name, *length).map(Some)
            }
            _ => Ok(None),
        }
    };
    Ok(match data_type {
        D::SmallInt(_) | D::Int2(_) => SqlType::Int2,
        D::Int(_) | D::Integer(_) | D::Int4(_) => SqlType::Int4,
        D::BigInt(_) | D::Int8(_) => SqlType::Int8,
        D::Real | D::Float4 => SqlType::Float4,
        D::DoublePrecision | D::Float8 | D::Double(_) => SqlType::Float8,
        D::Float(info) => match info {
            ast::ExactNumberInfo::Precision(precision) if *precision <= 24 => SqlType::Float4,
            _ => SqlType::Float8,
        },
        D::Numeric(info) | D::Decimal(info) => match info {
            ast::ExactNumberInfo::None => SqlType::numeric(),
            ast::ExactNumberInfo::Precision(precision) => numeric_type(*precision, 0)?,
            ast::ExactNumberInfo::PrecisionAndScale(precision, scale) => numeric_type(
                *precision,
                u64::try_from(*scale).map_err(|_| {
                    SqlError::syntax("NUMERIC scale must be between 0 and precision")
                })?,
            )?,
        },
        D::Bool | D::Boolean => SqlType::Bool,
        D::Text | D::String(None) => SqlType::Text,
        D::Varchar(len) | D::CharacterVarying(len) | D::CharVarying(len) => {
            SqlType::Varchar(length("varchar", len)?)
        }
        D::Char(len) | D::Character(len) => SqlType::Char(length("char", len)?.unwrap_or(1)),
        D::Bytea => SqlType::Bytea,
        D::Array(definition) => array_type_name(definition)?,
        D::Regclass => SqlType::Object(ObjectKind::Class),
        D::JSON => SqlType::Json,
        D::JSONB => SqlType::Jsonb,
        D::Date => SqlType::Date,
        D::Timestamp(precision, ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz) => {
            check_datetime_precision("timestamptz", *precision)?;
            SqlType::TimestampTz
        }
        D::Timestamp(precision, _) => {
            check_datetime_precision("timestamp", *precision)?;
            SqlType::Timestamp
        }
        D::Custom(name, modifiers) => {
            let name = object_name(name)?;
            match name.as_str() {
                "serial" | "serial4" => SqlType::Int4,
                "bigserial" | "serial8" => SqlType::Int8,
                "smallserial" | "serial2" => SqlType::Int2,
                "int2" => SqlType::Int2,
                "int4" => SqlType::Int4,
                "int8" => SqlType::Int8,
                "float4" => SqlType::Float4,
                "float8" => SqlType::Float8,
                "bpchar" => SqlType::Char(modifier_length("char", modifiers)?.unwrap_or(1)),
                "timestamptz" => {
                    modifier_precision("timestamptz", modifiers)?;
                    SqlType::TimestampTz
                }
                "oid" => SqlType::Oid,
                "json" => SqlType::Json,
                "jsonb" => SqlType::Jsonb,
                "jsonpath" => SqlType::JsonPath,
                "uuid" => SqlType::Uuid,
                "interval" => {
                    modifier_precision("interval", modifiers)?;
                    SqlType::Interval
                }
                "time" => {
                    modifier_precision("time", modifiers)?;
                    SqlType::Time
                }
                "timetz" => return Err(SqlError::unsupported("type timetz is not supported")),
                "regclass" | "regtype" | "regproc" | "regnamespace" | "regrole" => {
                    SqlType::Object(ObjectKind::from_type_name(&name).ok_or_else(|| {
                        SqlError::internal("the object identifier type names are listed")
                    })?)
                }
                "name" => SqlType::Name,
                "numeric" | "decimal" => SqlType::numeric(),
                "text" => SqlType::Text,
                "varchar" => SqlType::Varchar(modifier_length("varchar", modifiers)?),
                "bool" | "boolean" => SqlType::Bool,
                "date" => SqlType::Date,
                "timestamp" => {
                    modifier_precision("timestamp", modifiers)?;
                    SqlType::Timestamp
                }
                "bytea" => SqlType::Bytea,
                "char" => SqlType::Char(1),
                "int" | "integer" => SqlType::Int4,
                "bigint" => SqlType::Int8,
                "smallint" => SqlType::Int2,
                "real" => SqlType::Float4,
                "float" => SqlType::Float8,
                "vector" => SqlType::Vector(crate::types::vector_typmod(modifiers)?),
                "halfvec" => SqlType::HalfVec(crate::types::halfvec_typmod(modifiers)?),
                "sparsevec" => SqlType::SparseVec(crate::types::sparsevec_typmod(modifiers)?),
                "int2vector" => SqlType::Int2Vector,
                "oidvector" => SqlType::OidVector,
                other if other.starts_with('_') => {
                    let oid = BUILTIN_TYPES
                        .iter()
                        .find(|(_, name, _)| *name == other)
                        .and_then(|(oid, _, _)| u32::try_from(*oid).ok());
                    match oid.and_then(SqlType::from_oid) {
                        Some(ty @ SqlType::Array(_)) => ty,
                        _ => {
                            return Err(SqlError::new(
                                "42704",
                                format!("type \"{other}\" does not exist"),
                            ))
                        }
                    }
                }
                other => {
                    return Err(SqlError::new("42704", format!("type \"{other}\" does not exist")))
                }
            }
        }
        D::Uuid => SqlType::Uuid,
        D::Interval { .. } | D::Time(..) => interval_or_time(data_type)?,
        // PostgreSQL's own types that tierdb has no values for yet: a missing feature.
        D::Bit(_) | D::BitVarying(_) | D::VarBit(_) => bit_type(data_type)?,
        D::TsVector | D::TsQuery => {
            let name = data_type.to_string().to_lowercase();
            return Err(SqlError::unsupported(format!("type {name} is not supported")));
        }
        other => return Err(SqlError::new("42704", format!("type \"{other}\" is not supported"))),
    })
}

/// `element[]`, `element ARRAY`, `element[n]`: one array type whatever the dimensions
/// written (PostgreSQL does not enforce declared dimensions or sizes either).
fn array_type_name(definition: &ast::ArrayElemTypeDef) -> Result<SqlType> {
    let mut element = match definition {
        ast::ArrayElemTypeDef::None => {
            return Err(SqlError::syntax("syntax error at or near \"ARRAY\""))
        }
        ast::ArrayElemTypeDef::AngleBracket(inner)
        | ast::ArrayElemTypeDef::SquareBracket(inner, _)
        | ast::ArrayElemTypeDef::Parenthesis(inner)
        | ast::ArrayElemTypeDef::Qualified(inner, _) => sql_type(inner)?,
    };
    // int[][] is int[]: the element of a nested declaration is the scalar inside.
    while let SqlType::Array(inner) = element {
        element = *inner;
    }
    if matches!(element, SqlType::Int2Vector | SqlType::OidVector) {
        return Err(SqlError::unsupported("arrays of int2vector or oidvector are not supported"));
    }
    array_of(&element)
}

pub(crate) fn numeric_type(precision: u64, scale: u64) -> Result<SqlType> {
    if precision == 0 || precision > 1000 {
        return Err(SqlError::syntax(format!(
            "NUMERIC precision {precision} must be between 1 and 1000"
        )));
    }
    if scale > precision {
        return Err(SqlError::syntax(format!(
            "NUMERIC scale {scale} must be between 0 and precision {precision}"
        )));
    }
    Ok(SqlType::Numeric {
        precision: u32::try_from(precision).ok(),
        scale: u32::try_from(scale).ok(),
    })
}

/// Whether a data type is serial (an integer with a sequence default).
pub fn is_serial(data_type: &ast::DataType) -> bool {
    matches!(data_type, ast::DataType::Custom(name, _)
        if matches!(object_name(name).as_deref(), Ok("serial" | "serial4" | "bigserial" | "serial8" | "smallserial" | "serial2")))
}

/// The rows of `pg_type`: (OID, name, length), PostgreSQL's values. Also the names
/// `to_regtype` knows beyond the types tierdb binds (bit, varbit: drivers look them up).
pub(crate) const BUILTIN_TYPES: &[(i64, &str, i16)] = &[
    (16, "bool", 1),
    (17, "bytea", -1),
    (19, "name", 64),
    (20, "int8", 8),
    (21, "int2", 2),
    (23, "int4", 4),
    (25, "text", -1),
    (26, "oid", 4),
    (700, "float4", 4),
    (701, "float8", 8),
    (705, "unknown", -2),
    (2278, "void", 4),
    (1042, "bpchar", -1),
    (1043, "varchar", -1),
    (1082, "date", 4),
    (1114, "timestamp", 8),
    (1184, "timestamptz", 8),
    (1186, "interval", 16),
    (1187, "_interval", -1),
    (1083, "time", 8),
    (1183, "_time", -1),
    (1700, "numeric", -1),
    (22, "int2vector", -1),
    (30, "oidvector", -1),
    (1000, "_bool", -1),
    (1001, "_bytea", -1),
    (1003, "_name", -1),
    (1005, "_int2", -1),
    (1007, "_int4", -1),
    (1009, "_text", -1),
    (1014, "_bpchar", -1),
    (1015, "_varchar", -1),
    (1016, "_int8", -1),
    (1021, "_float4", -1),
    (1022, "_float8", -1),
    (1028, "_oid", -1),
    (1115, "_timestamp", -1),
    (1182, "_date", -1),
    (1185, "_timestamptz", -1),
    (1231, "_numeric", -1),
    (1560, "bit", -1),
    (1561, "_bit", -1),
    (1562, "varbit", -1),
    (1563, "_varbit", -1),
    (114, "json", -1),
    (199, "_json", -1),
    (3802, "jsonb", -1),
    (3807, "_jsonb", -1),
    (4072, "jsonpath", -1),
    (4073, "_jsonpath", -1),
    (2950, "uuid", 16),
    (2951, "_uuid", -1),
    (24, "regproc", 4),
    (2205, "regclass", 4),
    (2206, "regtype", 4),
    (4089, "regnamespace", 4),
    (4096, "regrole", 4),
    (crate::types::VECTOR_OID_I64, "vector", -1),
    (crate::types::VECTOR_ARRAY_OID_I64, "_vector", -1),
    (crate::types::HALFVEC_OID_I64, "halfvec", -1),
    (crate::types::HALFVEC_ARRAY_OID_I64, "_halfvec", -1),
    (crate::types::SPARSEVEC_OID_I64, "sparsevec", -1),
    (crate::types::SPARSEVEC_ARRAY_OID_I64, "_sparsevec", -1),
];
