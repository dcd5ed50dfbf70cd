//! Scalar functions: name resolution and typing at bind time, evaluation at run time, and the
//! mapping from SQL type names to types.

use rust_decimal::prelude::FromPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};

use crate::error::{Result, SqlError};
use crate::plan::FunctionCall;
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
