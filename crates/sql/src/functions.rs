//! Scalar functions: name resolution and typing at bind time, evaluation at run time, and the
//! mapping from SQL type names to types.

use rust_decimal::prelude::FromPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};
use sqlparser::ast;

use crate::binder::coerce;
use crate::error::{Result, SqlError};
use crate::plan::{Expr, FunctionCall};
use crate::types::{self, Datum, SqlType};

/// PostgreSQL's largest declared length of a character type (MaxAttrSize).
pub const CHARACTER_LENGTH_MAX: u64 = 10 * 1024 * 1024;

/// PostgreSQL's largest text value: an allocation is at most 1 GB less one byte
/// (MaxAllocSize), of which 4 bytes are the value's header.
pub const TEXT_BYTES_MAX: usize = (1 << 30) - 1 - 4;

/// PostgreSQL's error for a text value that would exceed `TEXT_BYTES_MAX`.
pub fn text_too_large() -> SqlError {
    SqlError::new("54000", "requested length too large")
}

/// Fails with 54000 when a text value of `bytes` would exceed `TEXT_BYTES_MAX`.
pub fn check_text_bytes(bytes: usize) -> Result<()> {
    if bytes > TEXT_BYTES_MAX {
        return Err(text_too_large());
    }
    Ok(())
}

/// Fails with 54000 when replacing every `from` in `text` with `to` would build a text
/// over `TEXT_BYTES_MAX` (each match may grow it: checked before building it).
fn check_replaced_bytes(text: &str, from: &str, to: &str) -> Result<()> {
    let matches = text.matches(from).count();
    let growth = to.len().saturating_sub(from.len());
    check_text_bytes(text.len().saturating_add(matches.saturating_mul(growth)))
}

/// A declared character length (`varchar(n)`, `char(n)`) checked as PostgreSQL checks it
/// when it resolves the type: 1 to `CHARACTER_LENGTH_MAX`.
fn character_length(type_name: &str, length: u64) -> Result<u32> {
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
fn modifier_length(type_name: &str, modifiers: &[String]) -> Result<Option<u32>> {
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
        // Arrays appear only in catalog queries; their values are array text ({a,b}).
        D::Array(_) => SqlType::Text,
        D::Date => SqlType::Date,
        D::Timestamp(_, ast::TimezoneInfo::WithTimeZone)
        | D::Timestamp(_, ast::TimezoneInfo::Tz) => SqlType::TimestampTz,
        D::Timestamp(_, _) => SqlType::Timestamp,
        D::Custom(name, modifiers) => {
            let name = crate::binder::object_name(name)?;
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
                "timestamptz" => SqlType::TimestampTz,
                "oid" | "regclass" | "regtype" | "regproc" | "regnamespace" => SqlType::Oid,
                "name" => SqlType::Name,
                "numeric" | "decimal" => SqlType::numeric(),
                "text" => SqlType::Text,
                "varchar" => SqlType::Varchar(modifier_length("varchar", modifiers)?),
                "bool" | "boolean" => SqlType::Bool,
                "date" => SqlType::Date,
                "timestamp" => SqlType::Timestamp,
                "bytea" => SqlType::Bytea,
                "char" => SqlType::Char(1),
                "int" | "integer" => SqlType::Int4,
                "bigint" => SqlType::Int8,
                "smallint" => SqlType::Int2,
                "real" => SqlType::Float4,
                "float" => SqlType::Float8,
                other => {
                    return Err(SqlError::new("42704", format!("type \"{other}\" does not exist")))
                }
            }
        }
        other => return Err(SqlError::new("42704", format!("type \"{other}\" is not supported"))),
    })
}

fn numeric_type(precision: u64, scale: u64) -> Result<SqlType> {
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
        if matches!(crate::binder::object_name(name).as_deref(), Ok("serial" | "serial4" | "bigserial" | "serial8" | "smallserial" | "serial2")))
}

/// Arguments of a function whose parameters are all text: character types (and untyped
/// literals) convert; other types have no implicit cast to text, so no such function exists.
fn text_args(name: &str, args: Vec<(Expr, SqlType)>) -> Result<Vec<Expr>> {
    if args.iter().any(|(_, ty)| !ty.is_text()) {
        return Err(wrong_arguments(name, &args));
    }
    args.into_iter().map(|(expr, ty)| coerce(expr, &ty, &SqlType::Text, true)).collect()
}

/// One text parameter of a function with other parameters: `Err` (42883) when it is not text.
fn text_param(expr: Expr, ty: &SqlType, missing: &dyn Fn() -> SqlError) -> Result<Expr> {
    if !ty.is_text() {
        return Err(missing());
    }
    coerce(expr, ty, &SqlType::Text, true)
}

fn call(
    name: &str,
    args: Vec<Expr>,
    arg_types: Vec<SqlType>,
    output: SqlType,
) -> Result<(Expr, SqlType)> {
    Ok((
        Expr::Function(FunctionCall {
            name: name.to_string(),
            args,
            arg_types,
            output: output.clone(),
        }),
        output,
    ))
}

fn wrong_arguments(name: &str, args: &[(Expr, SqlType)]) -> SqlError {
    let types: Vec<String> = args.iter().map(|(_, ty)| ty.display_name()).collect();
    SqlError::undefined_function(&format!("{}({})", name, types.join(", ")))
}

/// Resolves a scalar function call and its result type.
pub fn bind_call(name: &str, args: Vec<(Expr, SqlType)>) -> Result<(Expr, SqlType)> {
    let count = args.len();
    let signature_error = wrong_arguments(name, &args);
    let missing = move || signature_error.clone();
    match (name, count) {
        ("length" | "char_length" | "character_length" | "octet_length", 1) => {
            let ty = args[0].1.clone();
            if matches!(ty, SqlType::Char(_)) {
                // bpchar: length ignores the padding, octet_length counts it.
                let name = if name == "octet_length" { name } else { "bpchar_length" };
                return call(name, vec![args[0].0.clone()], vec![ty], SqlType::Int4);
            }
            call(name, text_args(name, args)?, vec![SqlType::Text], SqlType::Int4)
        }
        ("upper" | "lower" | "initcap" | "md5" | "reverse", 1) => {
            call(name, text_args(name, args)?, vec![SqlType::Text], SqlType::Text)
        }
        ("btrim" | "ltrim" | "rtrim", 1 | 2) => {
            call(name, text_args(name, args)?, vec![SqlType::Text], SqlType::Text)
        }
        ("substr" | "substring", 2 | 3) => {
            let mut iter = args.into_iter();
            let (text, text_ty) = iter.next().expect("arg");
            let mut bound = vec![text_param(text, &text_ty, &missing)?];
            for (expr, ty) in iter {
                bound.push(coerce(expr, &ty, &SqlType::Int8, false)?);
            }
            call("substr", bound, vec![SqlType::Text], SqlType::Text)
        }
        ("left" | "right" | "repeat", 2) => {
            let mut iter = args.into_iter();
            let (text, text_ty) = iter.next().expect("arg");
            let (count, count_ty) = iter.next().expect("arg");
            let bound = vec![
                text_param(text, &text_ty, &missing)?,
                coerce(count, &count_ty, &SqlType::Int8, false)?,
            ];
            call(name, bound, vec![SqlType::Text], SqlType::Text)
        }
        ("lpad" | "rpad", 2 | 3) => {
            let mut iter = args.into_iter();
            let (text, text_ty) = iter.next().expect("arg");
            let (count, count_ty) = iter.next().expect("arg");
            let mut bound = vec![
                text_param(text, &text_ty, &missing)?,
                coerce(count, &count_ty, &SqlType::Int8, false)?,
            ];
            if let Some((fill, fill_ty)) = iter.next() {
                bound.push(text_param(fill, &fill_ty, &missing)?);
            }
            call(name, bound, vec![SqlType::Text], SqlType::Text)
        }
        ("replace", 3)
        | ("strpos", 2)
        | ("starts_with", 2)
        | ("split_part", 3)
        | ("translate", 3) => {
            let output = match name {
                "strpos" => SqlType::Int4,
                "starts_with" => SqlType::Bool,
                _ => SqlType::Text,
            };
            if name == "split_part" {
                let mut iter = args.into_iter();
                let (a, a_ty) = iter.next().expect("arg");
                let (b, b_ty) = iter.next().expect("arg");
                let (c, c_ty) = iter.next().expect("arg");
                let bound = vec![
                    text_param(a, &a_ty, &missing)?,
                    text_param(b, &b_ty, &missing)?,
                    coerce(c, &c_ty, &SqlType::Int8, false)?,
                ];
                return call(name, bound, vec![SqlType::Text], output);
            }
            call(name, text_args(name, args)?, vec![SqlType::Text], output)
        }
        // concat and concat_ws take "any": each value is converted by its output function
        // (bpchar keeps its padding, booleans print as t/f).
        ("concat", _) | ("concat_ws", 1..) => {
            let types: Vec<SqlType> = args
                .iter()
                .map(|(_, ty)| if *ty == SqlType::Unknown { SqlType::Text } else { ty.clone() })
                .collect();
            let bound = args
                .into_iter()
                .map(|(expr, ty)| {
                    if ty == SqlType::Unknown {
                        coerce(expr, &ty, &SqlType::Text, true)
                    } else {
                        Ok(expr)
                    }
                })
                .collect::<Result<Vec<Expr>>>()?;
            call(name, bound, types, SqlType::Text)
        }
        ("coalesce" | "greatest" | "least" | "nullif", _) if count >= 1 => {
            if name == "nullif" && count != 2 {
                return Err(wrong_arguments(name, &args));
            }
            let mut common = SqlType::Unknown;
            for (_, ty) in &args {
                common = SqlType::common(&common, ty).ok_or_else(|| {
                    SqlError::datatype_mismatch(format!(
                        "{} types {} and {} cannot be matched",
                        name.to_uppercase(),
                        common.display_name(),
                        ty.display_name()
                    ))
                })?;
            }
            let common = match common {
                SqlType::Unknown => SqlType::Text,
                SqlType::Varchar(_) | SqlType::Name => SqlType::Text,
                other => other,
            };
            let types: Vec<SqlType> = args.iter().map(|(_, ty)| ty.clone()).collect();
            let bound = args
                .into_iter()
                .map(|(expr, ty)| coerce(expr, &ty, &common, false))
                .collect::<Result<Vec<Expr>>>()?;
            call(name, bound, types, common)
        }
        ("abs", 1) | ("ceil" | "ceiling" | "floor" | "sign", 1) => {
            let (expr, ty) = args.into_iter().next().expect("arg");
            let ty = if ty == SqlType::Unknown { SqlType::Float8 } else { ty };
            if !ty.is_numeric_family() {
                return Err(SqlError::undefined_function(&format!(
                    "{name}({})",
                    ty.display_name()
                )));
            }
            let output = match (&ty, name) {
                (SqlType::Numeric { .. }, _) => SqlType::numeric(),
                (ty, "abs") if ty.is_integer() => ty.clone(),
                (SqlType::Float4, "abs") => SqlType::Float4,
                (ty, _) if ty.is_integer() && name != "abs" => SqlType::Float8,
                _ => SqlType::Float8,
            };
            let target = if output == SqlType::Float8 && ty.is_integer() {
                SqlType::Float8
            } else {
                ty.clone()
            };
            call(
                if name == "ceiling" { "ceil" } else { name },
                vec![coerce(expr, &ty, &target, false)?],
                vec![target],
                output,
            )
        }
        ("round" | "trunc", 1 | 2) => {
            let mut iter = args.into_iter();
            let (expr, ty) = iter.next().expect("arg");
            let ty = if ty == SqlType::Unknown { SqlType::numeric() } else { ty };
            if count == 2 || matches!(ty, SqlType::Numeric { .. }) || ty.is_integer() {
                let value = coerce(expr, &ty, &SqlType::numeric(), false)?;
                let mut bound = vec![value];
                if let Some((places, places_ty)) = iter.next() {
                    bound.push(coerce(places, &places_ty, &SqlType::Int4, false)?);
                }
                return call(name, bound, vec![SqlType::numeric()], SqlType::numeric());
            }
            call(
                name,
                vec![coerce(expr, &ty, &SqlType::Float8, false)?],
                vec![SqlType::Float8],
                SqlType::Float8,
            )
        }
        ("mod", 2) => {
            let mut iter = args.into_iter();
            let (left, left_ty) = iter.next().expect("arg");
            let (right, right_ty) = iter.next().expect("arg");
            let ty = SqlType::arithmetic(&left_ty, &right_ty)
                .ok_or_else(|| SqlError::undefined_function("mod"))?;
            Ok((
                Expr::Arithmetic {
                    op: crate::plan::ArithmeticOp::Modulo,
                    left: Box::new(coerce(left, &left_ty, &ty, false)?),
                    right: Box::new(coerce(right, &right_ty, &ty, false)?),
                    ty: ty.clone(),
                },
                ty,
            ))
        }
        ("power" | "pow", 2) => {
            let numeric = args.iter().any(|(_, ty)| matches!(ty, SqlType::Numeric { .. }));
            let target = if numeric { SqlType::numeric() } else { SqlType::Float8 };
            let bound = args
                .into_iter()
                .map(|(expr, ty)| coerce(expr, &ty, &target, false))
                .collect::<Result<Vec<Expr>>>()?;
            call("power", bound, vec![target.clone()], target)
        }
        ("sqrt" | "exp" | "ln" | "log" | "cbrt", 1) => {
            let (expr, ty) = args.into_iter().next().expect("arg");
            let target = if matches!(ty, SqlType::Numeric { .. }) {
                SqlType::numeric()
            } else {
                SqlType::Float8
            };
            call(name, vec![coerce(expr, &ty, &target, false)?], vec![target.clone()], target)
        }
        ("pi", 0) => call(name, Vec::new(), Vec::new(), SqlType::Float8),
        ("random", 0) => call(name, Vec::new(), Vec::new(), SqlType::Float8),
        (
            "now"
            | "current_timestamp"
            | "transaction_timestamp"
            | "statement_timestamp"
            | "clock_timestamp",
            0,
        ) => call("now", Vec::new(), Vec::new(), SqlType::TimestampTz),
        ("current_date", 0) => call(name, Vec::new(), Vec::new(), SqlType::Date),
        ("localtimestamp", 0) => call(name, Vec::new(), Vec::new(), SqlType::Timestamp),
        ("date_part", 2) => {
            let mut iter = args.into_iter();
            let (field, field_ty) = iter.next().expect("arg");
            let (value, value_ty) = iter.next().expect("arg");
            let field = coerce(field, &field_ty, &SqlType::Text, true)?;
            let value = coerce(value, &value_ty, &SqlType::Timestamp, false)?;
            call(name, vec![field, value], vec![SqlType::Text, SqlType::Timestamp], SqlType::Float8)
        }
        (
            "version"
            | "current_database"
            | "current_schema"
            | "current_user"
            | "session_user"
            | "user"
            | "pg_postmaster_start_time",
            0,
        ) => call(name, Vec::new(), Vec::new(), SqlType::Text),
        ("array_upper" | "array_length", 2) => {
            let mut iter = args.into_iter();
            let (array, array_ty) = iter.next().expect("arg");
            let (dimension, dimension_ty) = iter.next().expect("arg");
            let bound = vec![
                coerce(array, &array_ty, &SqlType::Text, true)?,
                coerce(dimension, &dimension_ty, &SqlType::Int4, false)?,
            ];
            call("array_upper", bound, vec![SqlType::Text, SqlType::Int4], SqlType::Int4)
        }
        ("array_element", 2) => {
            let mut iter = args.into_iter();
            let (array, array_ty) = iter.next().expect("arg");
            let (index, index_ty) = iter.next().expect("arg");
            let bound = vec![
                coerce(array, &array_ty, &SqlType::Text, true)?,
                coerce(index, &index_ty, &SqlType::Int4, false)?,
            ];
            // Array elements are untyped text: they take the type of what they meet.
            call(name, bound, vec![SqlType::Text, SqlType::Int4], SqlType::Unknown)
        }
        ("pg_relation_is_publishable", 1) => call("false", Vec::new(), Vec::new(), SqlType::Bool),
        ("pg_backend_pid", 0) => call(name, Vec::new(), Vec::new(), SqlType::Int4),
        ("nextval" | "currval", 1) => {
            call(name, text_args(name, args)?, vec![SqlType::Text], SqlType::Int8)
        }
        ("format_type", 2) => {
            let bound = args
                .into_iter()
                .map(|(expr, ty)| coerce(expr, &ty, &SqlType::Int8, false))
                .collect::<Result<Vec<Expr>>>()?;
            call(name, bound, vec![SqlType::Int8, SqlType::Int8], SqlType::Text)
        }
        ("pg_table_is_visible" | "pg_type_is_visible" | "pg_function_is_visible", 1) => {
            let bound = args
                .into_iter()
                .map(|(expr, ty)| coerce(expr, &ty, &SqlType::Int8, false))
                .collect::<Result<Vec<Expr>>>()?;
            call("true", bound, vec![SqlType::Int8], SqlType::Bool)
        }
        (
            "pg_get_indexdef"
            | "pg_get_statisticsobjdef_columns"
            | "pg_get_partkeydef"
            | "pg_get_partition_constraintdef"
            | "pg_get_ruledef"
            | "pg_get_serial_sequence"
            | "pg_get_function_arguments"
            | "pg_get_function_result"
            | "pg_get_constraintdef"
            | "pg_get_expr"
            | "obj_description"
            | "col_description"
            | "pg_get_userbyid"
            | "pg_get_triggerdef"
            | "pg_get_viewdef"
            | "pg_tablespace_location"
            | "pg_relation_size"
            | "pg_total_relation_size"
            | "pg_size_pretty"
            | "pg_encoding_to_char"
            | "has_table_privilege"
            | "has_schema_privilege"
            | "array_to_string"
            | "quote_ident",
            _,
        ) => {
            let output = match name {
                "pg_relation_size" | "pg_total_relation_size" => SqlType::Int8,
                "has_table_privilege" | "has_schema_privilege" => SqlType::Bool,
                _ => SqlType::Text,
            };
            let types: Vec<SqlType> = args.iter().map(|(_, ty)| ty.clone()).collect();
            let bound = args
                .into_iter()
                .map(|(expr, ty)| {
                    if ty == SqlType::Unknown {
                        coerce(expr, &ty, &SqlType::Text, false)
                    } else {
                        Ok(expr)
                    }
                })
                .collect::<Result<Vec<Expr>>>()?;
            call(name, bound, types, output)
        }
        ("tierdb_stat_tier_cache" | "tierdb_stat_reset", 0) => {
            call(name, Vec::new(), Vec::new(), SqlType::Text)
        }
        _ => Err(wrong_arguments(name, &args)),
    }
}

fn text(datum: &Datum) -> &str {
    datum.as_text().unwrap_or("")
}

fn int(datum: &Datum) -> i64 {
    datum.as_int().unwrap_or(0)
}

/// Facts about the session that some functions report.
pub struct FunctionContext<'a> {
    pub database: &'a str,
    pub user: &'a str,
    pub backend_pid: i32,
    pub statement_time_micros: i64,
    pub nextval: &'a dyn Fn(&str) -> Result<i64>,
    pub format_type: &'a dyn Fn(i64, i64) -> Option<String>,
    pub index_definition: &'a dyn Fn(i64) -> Option<String>,
}

/// Evaluates a scalar function on evaluated arguments (NULL handling per function).
pub fn evaluate(
    call: &FunctionCall,
    args: Vec<Datum>,
    context: &FunctionContext<'_>,
) -> Result<Datum> {
    let strict = !matches!(
        call.name.as_str(),
        "coalesce"
            | "concat"
            | "concat_ws"
            | "greatest"
            | "least"
            | "nullif"
            | "format_type"
            | "true"
    );
    if strict && args.iter().any(Datum::is_null) {
        return Ok(Datum::Null);
    }
    let name = call.name.as_str();
    Ok(match name {
        "length" | "char_length" | "character_length" => {
            Datum::Int(i64::try_from(text(&args[0]).chars().count()).unwrap_or(0))
        }
        "octet_length" => Datum::Int(i64::try_from(text(&args[0]).len()).unwrap_or(0)),
        "bpchar_length" => Datum::Int(
            i64::try_from(text(&args[0]).trim_end_matches(' ').chars().count()).unwrap_or(0),
        ),
        "upper" => Datum::Text(text(&args[0]).to_uppercase()),
        "lower" => Datum::Text(text(&args[0]).to_lowercase()),
        "reverse" => Datum::Text(text(&args[0]).chars().rev().collect()),
        "initcap" => {
            let mut out = String::new();
            let mut start = true;
            for c in text(&args[0]).chars() {
                if c.is_alphanumeric() {
                    if start {
                        out.extend(c.to_uppercase())
                    } else {
                        out.extend(c.to_lowercase())
                    }
                    start = false;
                } else {
                    out.push(c);
                    start = true;
                }
            }
            Datum::Text(out)
        }
        "md5" => return Err(SqlError::unsupported("md5() is not supported")),
        "btrim" | "ltrim" | "rtrim" => {
            let characters: Vec<char> =
                args.get(1).map_or(vec![' '], |set| text(set).chars().collect());
            let value = text(&args[0]);
            let trimmed = match name {
                "btrim" => value.trim_matches(|c| characters.contains(&c)),
                "ltrim" => value.trim_start_matches(|c| characters.contains(&c)),
                _ => value.trim_end_matches(|c| characters.contains(&c)),
            };
            Datum::Text(trimmed.to_string())
        }
        "substr" => {
            let chars: Vec<char> = text(&args[0]).chars().collect();
            let start = int(&args[1]);
            let end = match args.get(2) {
                Some(length) => {
                    let length = int(length);
                    if length < 0 {
                        return Err(SqlError::new(
                            "22011",
                            "negative substring length not allowed",
                        ));
                    }
                    start.saturating_add(length)
                }
                None => i64::MAX,
            };
            let from = usize::try_from(start.max(1) - 1).unwrap_or(0).min(chars.len());
            let to = usize::try_from((end - 1).max(0)).unwrap_or(usize::MAX).min(chars.len());
            Datum::Text(if to > from { chars[from..to].iter().collect() } else { String::new() })
        }
        "left" | "right" => {
            let chars: Vec<char> = text(&args[0]).chars().collect();
            let n = int(&args[1]);
            let length = i64::try_from(chars.len()).unwrap_or(0);
            let take = if n >= 0 { n.min(length) } else { (length + n).max(0) };
            let take = usize::try_from(take).unwrap_or(0);
            Datum::Text(if name == "left" {
                chars[..take].iter().collect()
            } else {
                chars[chars.len() - take..].iter().collect()
            })
        }
        "repeat" => {
            let count = usize::try_from(int(&args[1]).max(0))
                .map_err(|_| SqlError::internal("a non-negative count fits usize"))?;
            check_text_bytes(text(&args[0]).len().saturating_mul(count))?;
            Datum::Text(text(&args[0]).repeat(count))
        }
        "lpad" | "rpad" => {
            let value: Vec<char> = text(&args[0]).chars().collect();
            let length = usize::try_from(int(&args[1]).max(0))
                .map_err(|_| SqlError::internal("a non-negative length fits usize"))?;
            // As PostgreSQL: room for `length` characters of up to 4 bytes (UTF-8).
            check_text_bytes(length.saturating_mul(4))?;
            let fill: Vec<char> =
                args.get(2).map_or(vec![' '], |fill| text(fill).chars().collect());
            if value.len() >= length || fill.is_empty() {
                return Ok(Datum::Text(value.iter().take(length).collect()));
            }
            let padding: String = fill.iter().cycle().take(length - value.len()).collect();
            let value: String = value.iter().collect();
            Datum::Text(if name == "lpad" { padding + &value } else { value + &padding })
        }
        "replace" => Datum::Text(if text(&args[1]).is_empty() {
            text(&args[0]).to_string()
        } else {
            check_replaced_bytes(text(&args[0]), text(&args[1]), text(&args[2]))?;
            text(&args[0]).replace(text(&args[1]), text(&args[2]))
        }),
        "translate" => {
            let from: Vec<char> = text(&args[1]).chars().collect();
            let to: Vec<char> = text(&args[2]).chars().collect();
            Datum::Text(
                text(&args[0])
                    .chars()
                    .filter_map(|c| match from.iter().position(|&f| f == c) {
                        Some(i) => to.get(i).copied(),
                        None => Some(c),
                    })
                    .collect(),
            )
        }
        "strpos" => {
            let haystack = text(&args[0]);
            Datum::Int(match haystack.find(text(&args[1])) {
                Some(byte) => i64::try_from(haystack[..byte].chars().count()).unwrap_or(0) + 1,
                None => 0,
            })
        }
        "starts_with" => Datum::Bool(text(&args[0]).starts_with(text(&args[1]))),
        "split_part" => {
            let field = int(&args[2]);
            if field == 0 {
                return Err(SqlError::new("22023", "field position must not be zero"));
            }
            let parts: Vec<&str> = if text(&args[1]).is_empty() {
                vec![text(&args[0])]
            } else {
                text(&args[0]).split(text(&args[1])).collect()
            };
            let index = if field > 0 {
                usize::try_from(field - 1).ok()
            } else {
                parts.len().checked_sub(usize::try_from(-field).unwrap_or(usize::MAX))
            };
            Datum::Text(
                index.and_then(|i| parts.get(i)).map_or(String::new(), |part| part.to_string()),
            )
        }
        "concat" | "concat_ws" => {
            // Output-function text of each non-NULL argument.
            let texts: Vec<Option<String>> = args
                .iter()
                .zip(call.arg_types.iter().chain(std::iter::repeat(&SqlType::Text)))
                .map(|(arg, ty)| arg.to_text(ty))
                .collect();
            let separators = texts.first().cloned().flatten().map_or(0, |separator| {
                if name == "concat" {
                    0
                } else {
                    separator.len().saturating_mul(texts.len())
                }
            });
            check_text_bytes(
                texts.iter().flatten().map(String::len).fold(separators, usize::saturating_add),
            )?;
            if name == "concat" {
                Datum::Text(texts.into_iter().flatten().collect())
            } else {
                let Some(Some(separator)) = texts.first() else { return Ok(Datum::Null) };
                let parts: Vec<String> = texts[1..].iter().flatten().cloned().collect();
                Datum::Text(parts.join(separator))
            }
        }
        "coalesce" => args.into_iter().find(|arg| !arg.is_null()).unwrap_or(Datum::Null),
        "nullif" => {
            if args[0].compare(&args[1]) == Some(std::cmp::Ordering::Equal) {
                Datum::Null
            } else {
                args[0].clone()
            }
        }
        "greatest" | "least" => {
            let mut best: Option<Datum> = None;
            for arg in args.into_iter().filter(|arg| !arg.is_null()) {
                best = Some(match best {
                    None => arg,
                    Some(current) => {
                        let ordering = arg.compare(&current).unwrap_or(std::cmp::Ordering::Equal);
                        let take =
                            if name == "greatest" { ordering.is_gt() } else { ordering.is_lt() };
                        if take {
                            arg
                        } else {
                            current
                        }
                    }
                });
            }
            best.unwrap_or(Datum::Null)
        }
        "abs" => match &args[0] {
            Datum::Int(value) => Datum::Int(
                call.output.check_integer(
                    value
                        .checked_abs()
                        .ok_or_else(|| SqlError::out_of_range(call.output.message_name()))?,
                )?,
            ),
            Datum::Numeric(value) => Datum::Numeric(value.abs()),
            other => Datum::Float(other.as_f64().unwrap_or(0.0).abs()),
        },
        "sign" => match &args[0] {
            Datum::Numeric(value) => Datum::Numeric(if value.is_zero() {
                Decimal::ZERO
            } else if value.is_sign_negative() {
                Decimal::NEGATIVE_ONE
            } else {
                Decimal::ONE
            }),
            other => Datum::Float(other.as_f64().unwrap_or(0.0).signum()),
        },
        "ceil" | "floor" => match &args[0] {
            Datum::Numeric(value) => {
                Datum::Numeric(if name == "ceil" { value.ceil() } else { value.floor() })
            }
            other => {
                let value = other.as_f64().unwrap_or(0.0);
                Datum::Float(if name == "ceil" { value.ceil() } else { value.floor() })
            }
        },
        "round" | "trunc" => match &args[0] {
            Datum::Numeric(value) => {
                let places = args.get(1).map_or(0, int);
                let strategy = if name == "round" {
                    RoundingStrategy::MidpointAwayFromZero
                } else {
                    RoundingStrategy::ToZero
                };
                if places >= 0 {
                    let places = u32::try_from(places.min(28)).unwrap_or(0);
                    let mut rounded = value.round_dp_with_strategy(places, strategy);
                    rounded.rescale(places);
                    Datum::Numeric(rounded)
                } else {
                    let factor = Decimal::from_i128_with_scale(
                        10i128.pow(u32::try_from(-places).unwrap_or(0).min(27)),
                        0,
                    );
                    Datum::Numeric((value / factor).round_dp_with_strategy(0, strategy) * factor)
                }
            }
            other => {
                let value = other.as_f64().unwrap_or(0.0);
                Datum::Float(if name == "round" { value.round_ties_even() } else { value.trunc() })
            }
        },
        "power" => match (&args[0], &args[1]) {
            (Datum::Numeric(base), Datum::Numeric(exponent)) => {
                Datum::Numeric(types::numeric_power(*base, *exponent)?)
            }
            (base, exponent) => {
                let base = base.as_f64().unwrap_or(0.0);
                let exponent = exponent.as_f64().unwrap_or(0.0);
                if base == 0.0 && exponent < 0.0 {
                    return Err(SqlError::new(
                        "2201F",
                        "zero raised to a negative power is undefined",
                    ));
                }
                Datum::Float(base.powf(exponent))
            }
        },
        "sqrt" | "exp" | "ln" | "log" | "cbrt" => {
            let value = args[0].as_f64().unwrap_or(0.0);
            if name == "sqrt" && value < 0.0 {
                return Err(SqlError::new("2201F", "cannot take square root of a negative number"));
            }
            if matches!(name, "ln" | "log") && value <= 0.0 {
                return Err(SqlError::new(
                    "2201E",
                    if value == 0.0 {
                        "cannot take logarithm of zero"
                    } else {
                        "cannot take logarithm of a negative number"
                    },
                ));
            }
            let result = match name {
                "sqrt" => value.sqrt(),
                "exp" => value.exp(),
                "ln" => value.ln(),
                "log" => value.log10(),
                _ => value.cbrt(),
            };
            if matches!(call.output, SqlType::Numeric { .. }) {
                let decimal =
                    Decimal::from_f64(result).ok_or_else(|| SqlError::out_of_range("numeric"))?;
                Datum::Numeric(decimal.round_dp(16))
            } else {
                Datum::Float(result)
            }
        }
        "pi" => Datum::Float(std::f64::consts::PI),
        "random" => Datum::Float(random_unit()),
        "now" => Datum::TimestampTz(context.statement_time_micros),
        "localtimestamp" => Datum::Timestamp(context.statement_time_micros),
        "current_date" => Datum::Date(
            i32::try_from(context.statement_time_micros.div_euclid(86_400_000_000)).unwrap_or(0),
        ),
        "date_part" => {
            let (Datum::Timestamp(micros) | Datum::TimestampTz(micros)) = args[1] else {
                return Ok(Datum::Null);
            };
            let text = types::format_timestamp(micros);
            let (date, time) = text.split_once(' ').unwrap_or((&text, "00:00:00"));
            let date_parts: Vec<f64> =
                date.split('-').filter_map(|part| part.parse().ok()).collect();
            let time_parts: Vec<f64> =
                time.split(':').filter_map(|part| part.parse().ok()).collect();
            Datum::Float(match self::text(&args[0]) {
                "year" => date_parts.first().copied().unwrap_or(0.0),
                "month" => date_parts.get(1).copied().unwrap_or(0.0),
                "day" => date_parts.get(2).copied().unwrap_or(0.0),
                "hour" => time_parts.first().copied().unwrap_or(0.0),
                "minute" => time_parts.get(1).copied().unwrap_or(0.0),
                "second" => time_parts.get(2).copied().unwrap_or(0.0),
                "epoch" => (micros as f64) / 1e6 + 946_684_800.0,
                other => {
                    return Err(SqlError::new("22023", format!("unit \"{other}\" not supported")))
                }
            })
        }
        "version" => Datum::Text(format!(
            "PostgreSQL 15.0 (tierdb {}) on x86_64-pc-linux-gnu, compiled by rustc, 64-bit",
            env!("CARGO_PKG_VERSION")
        )),
        "current_database" => Datum::Text(context.database.to_string()),
        "current_schema" => Datum::Text("public".into()),
        "current_user" | "session_user" | "user" => Datum::Text(context.user.to_string()),
        "pg_postmaster_start_time" => Datum::Text(String::new()),
        "pg_backend_pid" => Datum::Int(i64::from(context.backend_pid)),
        "nextval" => Datum::Int((context.nextval)(text(&args[0]))?),
        "currval" => return Err(SqlError::unsupported("currval() is not supported")),
        "format_type" => match (&args[0], args.get(1)) {
            (Datum::Null, _) => Datum::Null,
            (oid, typmod) => match (context.format_type)(
                int(oid),
                typmod.map_or(-1, |t| if t.is_null() { -1 } else { int(t) }),
            ) {
                Some(name) => Datum::Text(name),
                None => Datum::Text("???".into()),
            },
        },
        "true" => Datum::Bool(true),
        "false" => Datum::Bool(false),
        "array_upper" => {
            let items = text(&args[0]).trim_start_matches('{').trim_end_matches('}');
            if items.is_empty() {
                Datum::Null
            } else {
                Datum::Int(i64::try_from(items.split(',').count()).unwrap_or(0))
            }
        }
        "array_element" => {
            let items: Vec<&str> =
                text(&args[0]).trim_start_matches('{').trim_end_matches('}').split(',').collect();
            let index = usize::try_from(int(&args[1])).ok().and_then(|i| i.checked_sub(1));
            match index.and_then(|i| items.get(i)) {
                Some(item) if !item.is_empty() => Datum::Text((*item).to_string()),
                _ => Datum::Null,
            }
        }
        "pg_get_indexdef" => match (context.index_definition)(int(&args[0])) {
            Some(definition) => Datum::Text(definition),
            None => Datum::Null,
        },
        "pg_get_userbyid" => Datum::Text(context.user.to_string()),
        "pg_get_expr" => args[0].clone(),
        // Constraints are primary keys: their definition from the index's.
        "pg_get_constraintdef" => match (context.index_definition)(int(&args[0])) {
            Some(definition) => match definition.split_once("USING btree ") {
                Some((_, columns)) => Datum::Text(format!("PRIMARY KEY {columns}")),
                None => Datum::Null,
            },
            None => Datum::Null,
        },
        "pg_get_triggerdef"
        | "pg_get_statisticsobjdef_columns"
        | "pg_get_partkeydef"
        | "pg_get_partition_constraintdef"
        | "pg_get_ruledef"
        | "pg_get_serial_sequence"
        | "pg_get_function_arguments"
        | "pg_get_function_result"
        | "pg_get_viewdef"
        | "obj_description"
        | "col_description"
        | "pg_tablespace_location" => Datum::Null,
        "array_to_string" => {
            let separator = args.get(1).and_then(Datum::as_text).unwrap_or(",");
            let items = text(&args[0]).trim_start_matches('{').trim_end_matches('}');
            check_replaced_bytes(items, ",", separator)?;
            Datum::Text(items.replace(',', separator))
        }
        "array_contains" => Datum::Bool(
            text(&args[0])
                .trim_start_matches('{')
                .trim_end_matches('}')
                .split(',')
                .any(|item| item == text(&args[1])),
        ),
        "pg_size_pretty" => Datum::Text(format!("{} bytes", int(&args[0]))),
        "pg_encoding_to_char" => Datum::Text("UTF8".into()),
        "has_table_privilege" | "has_schema_privilege" => Datum::Bool(true),
        "pg_relation_size" | "pg_total_relation_size" => Datum::Int(0),
        "quote_ident" => Datum::Text(text(&args[0]).to_string()),
        "regex_match" | "regex_imatch" | "regex_not_match" | "regex_not_imatch" => {
            let insensitive = name.contains("imatch");
            let pattern = regex::RegexBuilder::new(text(&args[1]))
                .case_insensitive(insensitive)
                .size_limit(REGEX_SIZE_MAX_BYTES)
                .build()
                .map_err(|error| {
                    SqlError::new("2201B", format!("invalid regular expression: {error}"))
                })?;
            let matched = pattern.is_match(text(&args[0]));
            Datum::Bool(if name.contains("not") { !matched } else { matched })
        }
        other => return Err(SqlError::internal(format!("function {other} has no implementation"))),
    })
}

/// Compiled size bound of a regular expression (a hostile pattern cannot take the memory).
const REGEX_SIZE_MAX_BYTES: usize = 1 << 20;

fn random_unit() -> f64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |elapsed| u64::try_from(elapsed.as_nanos() & u128::from(u64::MAX)).unwrap_or(1)) | 1
        );
    }
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        let mantissa = x >> 11;
        #[allow(clippy::cast_precision_loss)]
        let value = mantissa as f64 / (1u64 << 53) as f64;
        value
    })
}
