//! The table of scalar functions and the typing rules their entries share.

use super::array::{self, polymorphic, Kind, Output};
use super::text::Side;
use super::vector::{self, subvector_signature, vectors};
use super::{advisory, info, json, math, no_function, text, Coercion, Function, Signature};
use crate::error::{Result, SqlError};
use crate::types::{ObjectKind, SqlType};

const TEXT: SqlType = SqlType::Text;

/// Every argument is text (character types and untyped literals convert; other types have
/// no implicit cast to text, so no such function exists).
fn texts(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    if types.iter().any(|ty| !ty.is_text()) {
        return Err(no_function(name, types));
    }
    Ok(Signature { arguments: vec![Coercion::Explicit(TEXT); types.len()], output })
}

/// The sequence functions: a sequence named by text or regclass (its printed name, read
/// again as regclass reads it), then `rest` as `mixed` takes them.
fn sequence_arguments(
    name: &str,
    types: &[SqlType],
    rest: &[Option<SqlType>],
) -> Result<Signature> {
    let (Some(first), Some(others)) = (types.first(), types.get(1..)) else {
        return Err(no_function(name, types));
    };
    if !first.is_text() && *first != SqlType::Object(ObjectKind::Class) {
        return Err(no_function(name, types));
    }
    let mut signature = mixed(name, others, rest, SqlType::Int8)?;
    signature.arguments.insert(0, Coercion::Explicit(TEXT));
    Ok(signature)
}

/// The advisory lock functions' arguments: one bigint, or two integers.
/// Only the implicit integer casts apply: a bigint or numeric for an integer is 42883.
fn advisory_arguments(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    let fits = |ty: &SqlType, wide: bool| {
        matches!(ty, SqlType::Unknown | SqlType::Int2 | SqlType::Int4)
            || (wide && *ty == SqlType::Int8)
    };
    match types {
        [key] if fits(key, true) => mixed(name, types, &[Some(SqlType::Int8)], output),
        [high, low] if fits(high, false) && fits(low, false) => {
            mixed(name, types, &[Some(SqlType::Int4), Some(SqlType::Int4)], output)
        }
        _ => Err(no_function(name, types)),
    }
}

/// Arguments in `kinds` order: `Some(ty)` an implicit cast to `ty`, `None` text (as `texts`).
fn mixed(
    name: &str,
    types: &[SqlType],
    kinds: &[Option<SqlType>],
    output: SqlType,
) -> Result<Signature> {
    let mut arguments = Vec::with_capacity(types.len());
    for (ty, kind) in types.iter().zip(kinds) {
        arguments.push(match kind {
            Some(target) => Coercion::Implicit(target.clone()),
            None if ty.is_text() => Coercion::Explicit(TEXT),
            None => return Err(no_function(name, types)),
        });
    }
    Ok(Signature { arguments, output })
}

/// Arguments of "any" type: untyped literals become text (`explicit` as the function's
/// declared parameter is text or "any"), typed values are passed as they are.
fn any(types: &[SqlType], explicit: bool, output: SqlType) -> Signature {
    let arguments = types
        .iter()
        .map(|ty| match (ty, explicit) {
            (SqlType::Unknown, true) => Coercion::Explicit(TEXT),
            (SqlType::Unknown, false) => Coercion::Implicit(TEXT),
            _ => Coercion::Keep,
        })
        .collect();
    Signature { arguments, output }
}

/// Every argument cast to text as `::text` does (a boolean becomes `true`, not `t`).
fn cast_to_text(types: &[SqlType]) -> Signature {
    Signature { arguments: vec![Coercion::Explicit(TEXT); types.len()], output: TEXT }
}

/// Every argument cast implicitly to `target`.
fn all(types: &[SqlType], target: SqlType, output: SqlType) -> Signature {
    Signature { arguments: vec![Coercion::Implicit(target); types.len()], output }
}

fn none(output: SqlType) -> Signature {
    Signature { arguments: Vec::new(), output }
}

/// length and its synonyms: bpchar is kept as it is (its padding does not count).
fn length(name: &str, types: &[SqlType]) -> Result<Signature> {
    if matches!(types, [SqlType::Char(_)]) {
        return Ok(Signature { arguments: vec![Coercion::Keep], output: SqlType::Int4 });
    }
    texts(name, types, SqlType::Int4)
}

/// coalesce, greatest, least, nullif: the arguments' common type (42804 when none).
fn common(name: &str, types: &[SqlType]) -> Result<Signature> {
    let mut common = SqlType::Unknown;
    for ty in types {
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
        SqlType::Unknown | SqlType::Varchar(_) | SqlType::Name => TEXT,
        other => other,
    };
    Ok(all(types, common.clone(), common))
}

/// abs, ceil, floor, sign: numeric stays numeric, abs keeps integer and real types, the
/// others compute in double precision.
fn unary_numeric(name: &str, types: &[SqlType]) -> Result<Signature> {
    let ty = match &types[0] {
        SqlType::Unknown => SqlType::Float8,
        ty => ty.clone(),
    };
    if !ty.is_numeric_family() {
        return Err(no_function(name, &[ty]));
    }
    let output = match &ty {
        SqlType::Numeric { .. } => SqlType::numeric(),
        ty if name == "abs" && (ty.is_integer() || *ty == SqlType::Float4) => ty.clone(),
        _ => SqlType::Float8,
    };
    let target = if output == SqlType::Float8 && ty.is_integer() { SqlType::Float8 } else { ty };
    Ok(Signature { arguments: vec![Coercion::Implicit(target)], output })
}

/// round, trunc: numeric with places, or for numeric and integer values; else double.
fn rounding(_name: &str, types: &[SqlType]) -> Result<Signature> {
    let ty = match &types[0] {
        SqlType::Unknown => SqlType::numeric(),
        ty => ty.clone(),
    };
    if types.len() == 2 || matches!(ty, SqlType::Numeric { .. }) || ty.is_integer() {
        let mut arguments = vec![Coercion::Implicit(SqlType::numeric())];
        if types.len() == 2 {
            arguments.push(Coercion::Implicit(SqlType::Int4));
        }
        return Ok(Signature { arguments, output: SqlType::numeric() });
    }
    Ok(all(types, SqlType::Float8, SqlType::Float8))
}

/// power, sqrt, exp, ln, log, cbrt: numeric when an argument is numeric, else double.
fn numeric_or_double(_name: &str, types: &[SqlType]) -> Result<Signature> {
    let numeric = types.iter().any(|ty| matches!(ty, SqlType::Numeric { .. }));
    let target = if numeric { SqlType::numeric() } else { SqlType::Float8 };
    Ok(all(types, target.clone(), target))
}

/// Shorthand for an entry; `resolve`, `evaluate` and the flags are set per entry.
macro_rules! function {
    ($names:expr, $arguments:expr, $resolve:expr, $evaluate:expr, $example:expr) => {
        Function {
            names: $names,
            arguments: $arguments,
            strict: true,
            volatile: false,
            resolve: $resolve,
            evaluate: $evaluate,
            example: $example,
        }
    };
    ($names:expr, $arguments:expr, $resolve:expr, $evaluate:expr, $example:expr, non_strict) => {
        Function { strict: false, ..function!($names, $arguments, $resolve, $evaluate, $example) }
    };
    ($names:expr, $arguments:expr, $resolve:expr, $evaluate:expr, $example:expr, volatile) => {
        Function { volatile: true, ..function!($names, $arguments, $resolve, $evaluate, $example) }
    };
    ($names:expr, $arguments:expr, $resolve:expr, $evaluate:expr, $example:expr, volatile_non_strict) => {
        Function {
            volatile: true,
            strict: false,
            ..function!($names, $arguments, $resolve, $evaluate, $example)
        }
    };
}

/// Every scalar function tierdb runs. Names are matched after identifier folding.
pub static FUNCTIONS: &[Function] = &[
    // pgvector (the operators bind to these; `vector_*` names are pgvector's own).
    function!(
        &["l2_distance"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::l2_distance,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_l2_squared_distance"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::l2_squared_distance,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["inner_product"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::inner_product,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_negative_inner_product"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::negative_inner_product,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["cosine_distance"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::cosine_distance,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["l1_distance"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::l1_distance,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_dims"],
        1..=1,
        |n, t| vectors(n, t, SqlType::Int4),
        vector::dimensions,
        "'[1,2]'::vector"
    ),
    function!(
        &["vector_norm"],
        1..=1,
        |n, t| vectors(n, t, SqlType::Float8),
        vector::norm,
        "'[3,4]'::vector"
    ),
    function!(
        &["l2_normalize"],
        1..=1,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::l2_normalize,
        "'[3,4]'::vector"
    ),
    function!(
        &["vector_add"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::add,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_sub"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::subtract,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_mul"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::multiply,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["vector_concat"],
        2..=2,
        |n, t| vectors(n, t, SqlType::Vector(None)),
        vector::concatenate,
        "'[1,2]'::vector, '[3,4]'::vector"
    ),
    function!(
        &["subvector"],
        3..=3,
        subvector_signature,
        vector::subvector,
        "'[1,2,3]'::vector, 2, 1"
    ),
    // json and jsonb (the operators `->`, `->>`, `@>`, `<@`, `?` bind to the first five).
    function!(
        &["json_get"],
        2..=2,
        |n, t| json::get_signature(n, t, false),
        |c| json::get(c, false),
        "'[1,2]'::jsonb, 1"
    ),
    function!(
        &["json_get_text"],
        2..=2,
        |n, t| json::get_signature(n, t, true),
        |c| json::get(c, true),
        "'{\"a\":1}'::json, 'a'"
    ),
    function!(
        &["jsonb_contains"],
        2..=2,
        |n, t| json::jsonb_pair(n, t, SqlType::Jsonb),
        json::contains,
        "'[1,2]'::jsonb, '[1]'"
    ),
    function!(
        &["jsonb_contained"],
        2..=2,
        |n, t| json::jsonb_pair(n, t, SqlType::Jsonb),
        json::contained,
        "'[1]'::jsonb, '[1,2]'"
    ),
    function!(
        &["jsonb_concat"],
        2..=2,
        |n, t| json::jsonb_pair(n, t, SqlType::Jsonb)
            .map(|signature| Signature { output: SqlType::Jsonb, ..signature }),
        json::concatenate,
        "'[1]'::jsonb, '[2]'"
    ),
    function!(
        &["jsonb_exists"],
        2..=2,
        |n, t| json::jsonb_pair(n, t, TEXT),
        json::exists,
        "'{\"a\":1}'::jsonb, 'a'"
    ),
    function!(
        &["json_typeof"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Json, TEXT),
        json::type_name,
        "'[]'"
    ),
    function!(
        &["jsonb_typeof"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Jsonb, TEXT),
        json::type_name,
        "'[]'"
    ),
    function!(
        &["json_array_length"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Json, SqlType::Int4),
        json::array_length,
        "'[1,2]'"
    ),
    function!(
        &["jsonb_array_length"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Jsonb, SqlType::Int4),
        json::array_length,
        "'[1,2]'"
    ),
    function!(
        &["jsonb_pretty"],
        1..=1,
        |n, t| json::one_json(n, t, SqlType::Jsonb, TEXT),
        json::pretty,
        "'{\"a\":[1]}'"
    ),
    function!(
        &["pg_typeof"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Object(ObjectKind::Type))),
        info::type_of,
        "1",
        non_strict
    ),
    function!(&["to_json"], 1..=1, |_, t| Ok(any(t, false, SqlType::Json)), json::to_json, "'a'"),
    function!(
        &["to_jsonb"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Jsonb)),
        json::to_jsonb_value,
        "1.5"
    ),
    function!(
        &["json_build_array"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Json)),
        json::build_array,
        "1, 'a', NULL",
        non_strict
    ),
    function!(
        &["jsonb_build_array"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Jsonb)),
        json::build_array_jsonb,
        "1, 'a', NULL",
        non_strict
    ),
    function!(
        &["json_build_object"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Json)),
        json::build_object,
        "'a', 1",
        non_strict
    ),
    function!(
        &["jsonb_build_object"],
        0..=usize::MAX,
        |_, t| Ok(any(t, false, SqlType::Jsonb)),
        json::build_object_jsonb,
        "'a', 1",
        non_strict
    ),
    // Text.
    function!(&["length", "char_length", "character_length"], 1..=1, length, text::length, "'abc'"),
    function!(&["octet_length"], 1..=1, length, text::octet_length, "'abc'"),
    function!(&["upper"], 1..=1, |n, t| texts(n, t, TEXT), text::upper, "'abc'"),
    function!(&["lower"], 1..=1, |n, t| texts(n, t, TEXT), text::lower, "'ABC'"),
    function!(&["initcap"], 1..=1, |n, t| texts(n, t, TEXT), text::initcap, "'hello world'"),
    function!(&["reverse"], 1..=1, |n, t| texts(n, t, TEXT), text::reverse, "'abc'"),
    function!(&["md5"], 1..=1, |n, t| texts(n, t, TEXT), text::md5, "'abc'"),
    function!(
        &["btrim"],
        1..=2,
        |n, t| texts(n, t, TEXT),
        |c| text::trim(c, Side::Both),
        "'xaxx', 'x'"
    ),
    function!(&["ltrim"], 1..=2, |n, t| texts(n, t, TEXT), |c| text::trim(c, Side::Start), "'  a'"),
    function!(&["rtrim"], 1..=2, |n, t| texts(n, t, TEXT), |c| text::trim(c, Side::End), "'a  '"),
    function!(
        &["substr", "substring"],
        2..=3,
        |n, t| mixed(n, t, &[None, Some(SqlType::Int8), Some(SqlType::Int8)], TEXT),
        text::substr,
        "'abcdef', 2, 3"
    ),
    function!(
        &["left"],
        2..=2,
        |n, t| mixed(n, t, &[None, Some(SqlType::Int8)], TEXT),
        text::left,
        "'abc', 2"
    ),
    function!(
        &["right"],
        2..=2,
        |n, t| mixed(n, t, &[None, Some(SqlType::Int8)], TEXT),
        text::right,
        "'abc', -1"
    ),
    function!(
        &["repeat"],
        2..=2,
        |n, t| mixed(n, t, &[None, Some(SqlType::Int8)], TEXT),
        text::repeat,
        "'ab', 3"
    ),
    function!(
        &["lpad"],
        2..=3,
        |n, t| mixed(n, t, &[None, Some(SqlType::Int8), None], TEXT),
        |c| text::pad(c, true),
        "'7', 3, '0'"
    ),
    function!(
        &["rpad"],
        2..=3,
        |n, t| mixed(n, t, &[None, Some(SqlType::Int8), None], TEXT),
        |c| text::pad(c, false),
        "'7', 3"
    ),
    function!(&["replace"], 3..=3, |n, t| texts(n, t, TEXT), text::replace, "'abc', 'b', 'x'"),
    function!(&["translate"], 3..=3, |n, t| texts(n, t, TEXT), text::translate, "'abc', 'ab', 'x'"),
    function!(&["ascii"], 1..=1, |n, t| texts(n, t, SqlType::Int4), text::ascii, "'x'"),
    function!(&["chr"], 1..=1, |n, t| mixed(n, t, &[Some(SqlType::Int4)], TEXT), text::chr, "65"),
    function!(&["strpos"], 2..=2, |n, t| texts(n, t, SqlType::Int4), text::strpos, "'abc', 'c'"),
    function!(
        &["starts_with"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        text::starts_with,
        "'abc', 'a'"
    ),
    function!(
        &["split_part"],
        3..=3,
        |n, t| mixed(n, t, &[None, None, Some(SqlType::Int8)], TEXT),
        text::split_part,
        "'a,b,c', ',', 2"
    ),
    // concat and concat_ws take "any": each value is converted by its output function.
    function!(
        &["concat"],
        0..=usize::MAX,
        |_, t| Ok(any(t, true, TEXT)),
        text::concat,
        "'a', 1, true",
        non_strict
    ),
    function!(
        &["concat_ws"],
        1..=usize::MAX,
        |_, t| Ok(any(t, true, TEXT)),
        text::concat_ws,
        "',', 'a', 2",
        non_strict
    ),
    function!(&["quote_ident"], 1..=1, |n, t| texts(n, t, TEXT), text::quote_ident, "'abc'"),
    // quote_literal(anyelement) and quote_nullable: the value cast to text, as a string
    // literal (asyncpg's copy_from_query inlines its arguments with quote_literal).
    function!(
        &["quote_literal"],
        1..=1,
        |_, t| Ok(cast_to_text(t)),
        text::quote_literal,
        "'it''s'"
    ),
    function!(
        &["quote_nullable"],
        1..=1,
        |_, t| Ok(cast_to_text(t)),
        text::quote_nullable,
        "'a\\b'",
        non_strict
    ),
    // The regular-expression operators (`~`, `~*`, `!~`, `!~*`) bind to these.
    function!(
        &["regex_match"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        |c| text::regex(c, false, false),
        "'abc', 'b'"
    ),
    function!(
        &["regex_imatch"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        |c| text::regex(c, true, false),
        "'abc', 'B'"
    ),
    function!(
        &["regex_not_match"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        |c| text::regex(c, false, true),
        "'abc', 'b'"
    ),
    function!(
        &["regex_not_imatch"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bool),
        |c| text::regex(c, true, true),
        "'abc', 'B'"
    ),
    // Conditional: not strict, NULLs are their business.
    function!(&["coalesce"], 1..=usize::MAX, common, info::coalesce, "NULL, 2", non_strict),
    function!(
        &["to_regtype"],
        1..=1,
        |n, t| texts(n, t, SqlType::Object(ObjectKind::Type)),
        info::to_regtype,
        "'integer'"
    ),
    function!(
        &["to_regclass"],
        1..=1,
        |n, t| texts(n, t, SqlType::Object(ObjectKind::Class)),
        |c| info::to_object(c, ObjectKind::Class),
        "'pg_class'"
    ),
    function!(
        &["to_regnamespace"],
        1..=1,
        |n, t| texts(n, t, SqlType::Object(ObjectKind::Namespace)),
        |c| info::to_object(c, ObjectKind::Namespace),
        "'public'"
    ),
    function!(
        &["to_regrole"],
        1..=1,
        |n, t| texts(n, t, SqlType::Object(ObjectKind::Role)),
        |c| info::to_object(c, ObjectKind::Role),
        "'tierdb'"
    ),
    function!(&["nullif"], 2..=2, common, info::nullif, "1, 1", non_strict),
    function!(
        &["greatest"],
        1..=usize::MAX,
        common,
        |c| info::extreme(c, true),
        "1, 3, 2",
        non_strict
    ),
    function!(
        &["least"],
        1..=usize::MAX,
        common,
        |c| info::extreme(c, false),
        "1, 3, 2",
        non_strict
    ),
    // Numeric.
    function!(&["abs"], 1..=1, unary_numeric, math::abs, "-2"),
    function!(&["ceil", "ceiling"], 1..=1, unary_numeric, math::ceil, "1.5"),
    function!(&["floor"], 1..=1, unary_numeric, math::floor, "1.5"),
    function!(&["sign"], 1..=1, unary_numeric, math::sign, "-1.5"),
    function!(&["round"], 1..=2, rounding, math::round, "2.567, 2"),
    function!(&["trunc"], 1..=2, rounding, math::trunc, "2.567, 1"),
    function!(&["power", "pow"], 2..=2, numeric_or_double, math::power, "2, 10"),
    function!(&["sqrt"], 1..=1, numeric_or_double, math::sqrt, "16"),
    function!(&["exp"], 1..=1, numeric_or_double, math::exp, "1"),
    function!(&["ln"], 1..=1, numeric_or_double, math::ln, "10"),
    function!(&["log"], 1..=1, numeric_or_double, math::log, "100"),
    function!(&["cbrt"], 1..=1, numeric_or_double, math::cbrt, "27"),
    function!(&["pi"], 0..=0, |_, _| Ok(none(SqlType::Float8)), math::pi, ""),
    function!(&["random"], 0..=0, |_, _| Ok(none(SqlType::Float8)), math::random, "", volatile),
    function!(
        &["gen_random_uuid"],
        0..=0,
        |_, _| Ok(none(SqlType::Uuid)),
        |_| crate::types::random_uuid(),
        "",
        volatile
    ),
    // Date and time: the statement's time, as PostgreSQL's transaction_timestamp.
    function!(
        &[
            "now",
            "current_timestamp",
            "transaction_timestamp",
            "statement_timestamp",
            "clock_timestamp"
        ],
        0..=0,
        |_, _| Ok(none(SqlType::TimestampTz)),
        info::now,
        ""
    ),
    function!(&["current_date"], 0..=0, |_, _| Ok(none(SqlType::Date)), info::current_date, ""),
    function!(
        &["localtimestamp"],
        0..=0,
        |_, _| Ok(none(SqlType::Timestamp)),
        info::localtimestamp,
        ""
    ),
    function!(
        &["date_part"],
        2..=2,
        |_, _| Ok(Signature {
            arguments: vec![Coercion::Explicit(TEXT), Coercion::Implicit(SqlType::Timestamp)],
            output: SqlType::Float8,
        }),
        info::date_part,
        "'year', TIMESTAMP '2024-05-06 07:08:09'"
    ),
    // Session.
    function!(&["version"], 0..=0, |_, _| Ok(none(TEXT)), info::version, ""),
    function!(&["current_database"], 0..=0, |_, _| Ok(none(TEXT)), info::current_database, ""),
    function!(&["current_schema"], 0..=0, |_, _| Ok(none(TEXT)), info::current_schema, ""),
    function!(
        &["current_user", "session_user", "current_role", "user"],
        0..=0,
        |_, _| Ok(none(TEXT)),
        info::current_user,
        ""
    ),
    function!(&["pg_postmaster_start_time"], 0..=0, |_, _| Ok(none(TEXT)), info::empty_text, ""),
    function!(
        &["current_setting"],
        1..=2,
        |n, t| mixed(n, t, &[None, Some(SqlType::Bool)], TEXT),
        info::current_setting,
        "'work_mem', false"
    ),
    function!(
        &["set_config"],
        3..=3,
        |n, t| mixed(n, t, &[None, None, Some(SqlType::Bool)], TEXT),
        info::set_config,
        "'application_name', 'registry', false",
        volatile_non_strict
    ),
    function!(&["pg_backend_pid"], 0..=0, |_, _| Ok(none(SqlType::Int4)), info::backend_pid, ""),
    // Advisory locks (catalog/advisory.rs): a bigint key, or two integers.
    function!(
        &["pg_advisory_lock"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Void),
        advisory::lock,
        "7",
        volatile
    ),
    function!(
        &["pg_advisory_lock_shared"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Void),
        advisory::lock_shared,
        "7",
        volatile
    ),
    function!(
        &["pg_advisory_xact_lock"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Void),
        advisory::xact_lock,
        "7",
        volatile
    ),
    function!(
        &["pg_advisory_xact_lock_shared"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Void),
        advisory::xact_lock_shared,
        "7",
        volatile
    ),
    function!(
        &["pg_try_advisory_lock"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Bool),
        advisory::try_lock,
        "7",
        volatile
    ),
    function!(
        &["pg_try_advisory_lock_shared"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Bool),
        advisory::try_lock_shared,
        "7",
        volatile
    ),
    function!(
        &["pg_try_advisory_xact_lock"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Bool),
        advisory::try_xact_lock,
        "7",
        volatile
    ),
    function!(
        &["pg_try_advisory_xact_lock_shared"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Bool),
        advisory::try_xact_lock_shared,
        "7",
        volatile
    ),
    function!(
        &["pg_advisory_unlock"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Bool),
        advisory::unlock,
        "7",
        volatile
    ),
    function!(
        &["pg_advisory_unlock_shared"],
        1..=2,
        |n, t| advisory_arguments(n, t, SqlType::Bool),
        advisory::unlock_shared,
        "7",
        volatile
    ),
    function!(
        &["pg_advisory_unlock_all"],
        0..=0,
        |_, _| Ok(none(SqlType::Void)),
        advisory::unlock_all,
        "",
        volatile
    ),
    function!(
        &["nextval"],
        1..=1,
        |n, t| sequence_arguments(n, t, &[]),
        info::nextval,
        "'registry_example_id_seq'",
        volatile
    ),
    // After nextval: the registry test calls them in order, and currval and lastval need
    // a nextval of the session first.
    function!(
        &["currval"],
        1..=1,
        |n, t| sequence_arguments(n, t, &[]),
        info::currval,
        "'registry_example_id_seq'",
        volatile
    ),
    function!(&["lastval"], 0..=0, |_, _| Ok(none(SqlType::Int8)), info::lastval, "", volatile),
    function!(
        &["setval"],
        2..=3,
        |n, t| sequence_arguments(n, t, &[Some(SqlType::Int8), Some(SqlType::Bool)]),
        info::setval,
        "'registry_example_id_seq', 5, true",
        volatile
    ),
    // Arrays (functions/array.rs).
    function!(
        &["array_append"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element], Output::Array),
        array::array_append,
        "ARRAY[1,2], 3",
        non_strict
    ),
    function!(
        &["array_prepend"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Element, Kind::Array], Output::Array),
        array::array_prepend,
        "0, ARRAY[1,2]",
        non_strict
    ),
    function!(
        &["array_cat"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Array], Output::Array),
        array::array_cat,
        "ARRAY[1], ARRAY[2]",
        non_strict
    ),
    function!(
        &["array_length"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Int], Output::Int),
        array::array_length,
        "ARRAY[1,2], 1"
    ),
    function!(
        &["array_upper"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Int], Output::Int),
        array::array_upper,
        "ARRAY[1,2], 1"
    ),
    function!(
        &["array_lower"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Int], Output::Int),
        array::array_lower,
        "ARRAY[1,2], 1"
    ),
    function!(
        &["cardinality"],
        1..=1,
        |n, t| polymorphic(n, t, &[Kind::Array], Output::Int),
        array::cardinality,
        "ARRAY[1,2]"
    ),
    function!(
        &["array_ndims"],
        1..=1,
        |n, t| polymorphic(n, t, &[Kind::Array], Output::Int),
        array::array_ndims,
        "ARRAY[1,2]"
    ),
    function!(
        &["array_dims"],
        1..=1,
        |n, t| polymorphic(n, t, &[Kind::Array], Output::Text),
        array::array_dims,
        "ARRAY[1,2]"
    ),
    function!(
        &["array_position"],
        2..=3,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element, Kind::Int], Output::Int),
        array::array_position,
        "ARRAY[1,2], 2",
        non_strict
    ),
    function!(
        &["array_positions"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element], Output::IntArray),
        array::array_positions,
        "ARRAY[1,2,1], 1",
        non_strict
    ),
    function!(
        &["array_remove"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element], Output::Array),
        array::array_remove,
        "ARRAY[1,2,1], 1",
        non_strict
    ),
    function!(
        &["array_replace"],
        3..=3,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Element, Kind::Element], Output::Array),
        array::array_replace,
        "ARRAY[1,2,1], 1, 3",
        non_strict
    ),
    function!(
        &["array_to_string"],
        2..=3,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Text, Kind::Text], Output::Text),
        array::array_to_string,
        "ARRAY[1,NULL,2], '-', '*'",
        non_strict
    ),
    function!(
        &["string_to_array"],
        2..=3,
        |n, t| Ok(Signature {
            arguments: vec![Coercion::Explicit(TEXT); t.len()],
            output: SqlType::Array(Box::new(TEXT)),
        })
        .and_then(|signature| texts(n, t, TEXT).map(|_| signature)),
        array::string_to_array,
        "'a,b,,c', ',', ''",
        non_strict
    ),
    function!(
        &["arraycontains"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Array], Output::Bool),
        array::contains,
        "ARRAY[1,2], ARRAY[2]"
    ),
    function!(
        &["arraycontained"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Array], Output::Bool),
        array::contained,
        "ARRAY[2], ARRAY[1,2]"
    ),
    function!(
        &["arrayoverlap"],
        2..=2,
        |n, t| polymorphic(n, t, &[Kind::Array, Kind::Array], Output::Bool),
        array::overlap,
        "ARRAY[1,2], ARRAY[2,3]"
    ),
    // Catalog functions clients call (psql's \d, drivers' metadata queries).
    function!(
        &["format_type"],
        2..=2,
        |_, t| Ok(all(t, SqlType::Int8, TEXT)),
        info::format_type,
        "23, -1",
        non_strict
    ),
    function!(
        &[
            "pg_table_is_visible",
            "pg_type_is_visible",
            "pg_function_is_visible",
            "pg_collation_is_visible"
        ],
        1..=1,
        |_, t| Ok(all(t, SqlType::Int8, SqlType::Bool)),
        info::constant_true,
        "1259",
        non_strict
    ),
    function!(
        &["pg_relation_is_publishable"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Bool)),
        info::constant_false,
        "1259",
        non_strict
    ),
    function!(
        &["pg_get_indexdef"],
        1..=3,
        |_, t| Ok(any(t, false, TEXT)),
        info::index_definition,
        "0"
    ),
    function!(
        &["pg_get_viewdef"],
        1..=2,
        |_, t| Ok(any(t, false, TEXT)),
        info::view_definition,
        "0"
    ),
    function!(
        &["pg_get_constraintdef"],
        1..=2,
        |_, t| Ok(any(t, false, TEXT)),
        info::constraint_definition,
        "0"
    ),
    function!(
        &["pg_get_userbyid"],
        1..=1,
        |_, t| Ok(any(t, false, SqlType::Name)),
        info::role_name,
        "10"
    ),
    function!(
        &["acldefault"],
        2..=2,
        |n, t| mixed(n, t, &[None, Some(SqlType::Oid)], SqlType::Array(Box::new(TEXT))),
        info::default_privileges,
        "'n', 10"
    ),
    function!(
        &["current_schemas"],
        1..=1,
        |n, t| mixed(n, t, &[Some(SqlType::Bool)], SqlType::Array(Box::new(SqlType::Name))),
        info::current_schemas,
        "true"
    ),
    function!(
        &["pg_sequence_last_value"],
        1..=1,
        |_, t| Ok(Signature {
            arguments: vec![match t.first() {
                Some(SqlType::Unknown) => Coercion::Explicit(SqlType::Object(ObjectKind::Class)),
                _ => Coercion::Implicit(SqlType::Object(ObjectKind::Class)),
            }],
            output: SqlType::Int8,
        }),
        info::sequence_last_value,
        "'registry_example_id_seq'",
        volatile
    ),
    function!(
        &["tierdb_sequence_state"],
        2..=2,
        |_, _| Ok(Signature {
            arguments: vec![
                Coercion::Implicit(SqlType::Object(ObjectKind::Class)),
                Coercion::Implicit(SqlType::Int4),
            ],
            output: SqlType::Int8,
        }),
        info::sequence_state,
        "'registry_example_id_seq', 0",
        volatile
    ),
    // tierdb's check of an HNSW index against its table (exec/vector_check.rs).
    function!(
        &["tierdb_check_vector_index"],
        1..=1,
        |_, t| Ok(Signature {
            arguments: vec![match t.first() {
                Some(SqlType::Unknown) => Coercion::Explicit(SqlType::Object(ObjectKind::Class)),
                _ => Coercion::Implicit(SqlType::Object(ObjectKind::Class)),
            }],
            output: SqlType::Jsonb,
        }),
        info::check_vector_index,
        "'registry_example_v_idx'",
        volatile
    ),
    function!(
        &["pg_is_in_recovery"],
        0..=0,
        |_, _| Ok(none(SqlType::Bool)),
        info::constant_false,
        ""
    ),
    function!(
        &["pg_get_expr"],
        2..=3,
        |_, t| Ok(any(t, false, TEXT)),
        info::first_argument,
        "'x', 0"
    ),
    function!(
        &[
            "pg_get_triggerdef",
            "pg_get_statisticsobjdef_columns",
            "pg_get_partkeydef",
            "pg_get_partition_constraintdef",
            "pg_get_ruledef",
            "pg_get_function_arguments",
            "pg_get_function_result",
            "pg_get_viewdef",
            "obj_description",
            "pg_tablespace_location",
        ],
        1..=2,
        |_, t| Ok(any(t, false, TEXT)),
        info::null,
        "0"
    ),
    function!(&["col_description"], 2..=2, |_, t| Ok(any(t, false, TEXT)), info::null, "'t', 'c'"),
    function!(
        &["pg_get_serial_sequence"],
        2..=2,
        |n, t| texts(n, t, TEXT),
        info::serial_sequence,
        "'registry_example', 'id'"
    ),
    function!(
        &["pg_relation_size", "pg_total_relation_size"],
        1..=2,
        |_, t| Ok(any(t, false, SqlType::Int8)),
        info::zero,
        "0"
    ),
    function!(
        &["pg_size_pretty"],
        1..=1,
        |_, t| Ok(any(t, false, TEXT)),
        info::size_pretty,
        "8192"
    ),
    function!(
        &["pg_encoding_to_char"],
        1..=1,
        |_, t| Ok(any(t, false, TEXT)),
        info::encoding_name,
        "6"
    ),
    function!(
        &["has_table_privilege", "has_schema_privilege"],
        2..=3,
        |_, t| Ok(any(t, false, SqlType::Bool)),
        info::constant_true,
        "'public', 'USAGE'"
    ),
];
