//! Scalar function calls: argument coercion and result type per function.

use super::*;

/// Arguments of a function whose parameters are all text: character types (and untyped
/// literals) convert; other types have no implicit cast to text, so no such function exists.
pub(crate) fn text_args(name: &str, args: Vec<(Expr, SqlType)>) -> Result<Vec<Expr>> {
    if args.iter().any(|(_, ty)| !ty.is_text()) {
        return Err(wrong_arguments(name, &args));
    }
    args.into_iter().map(|(expr, ty)| coerce(expr, &ty, &SqlType::Text, true)).collect()
}

/// One text parameter of a function with other parameters: `Err` (42883) when it is not text.
pub(crate) fn text_param(expr: Expr, ty: &SqlType, missing: &dyn Fn() -> SqlError) -> Result<Expr> {
    if !ty.is_text() {
        return Err(missing());
    }
    coerce(expr, ty, &SqlType::Text, true)
}

pub(crate) fn call(
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

pub(crate) fn wrong_arguments(name: &str, args: &[(Expr, SqlType)]) -> SqlError {
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
