//! The registry's text, conditional, numeric, date and time, session, advisory lock and
//! sequence functions.

use super::text::Side;
use super::typing::*;
use super::{
    advisory, arithmetic, bit, digests, encoding, format, info, math, random, regex, text,
    trigonometry, unicode, Function, Signature,
};
use crate::types::{ObjectKind, SqlType};

/// An entry of a float8 function of one argument (trigonometry::unary by name).
macro_rules! float_function {
    ($name:literal, $example:literal) => {
        function!(&[$name], 1..=1, doubles, |c| trigonometry::unary($name, c), $example)
    };
}

/// An entry of a SHA-2 digest of bytea (digests::sha by name).
macro_rules! sha_function {
    ($name:literal) => {
        function!(
            &[$name],
            1..=1,
            |n, t| bytes_then_texts(n, t, SqlType::Bytea),
            |c| digests::sha(&c, $name),
            "'abc'"
        )
    };
}

/// Text, conditional, numeric, date and time, session, advisory lock and sequence functions.
pub(super) static CORE: &[Function] = &[
    // Text.
    function!(
        &["length", "char_length", "character_length"],
        1..=1,
        bit::length_signature,
        |c| if bit::is_bit(&c) { bit::length(&c) } else { text::length(c) },
        "'abc'"
    ),
    function!(
        &["octet_length"],
        1..=1,
        bit::length_signature,
        |c| if bit::is_bit(&c) { bit::octet_length(&c) } else { text::octet_length(c) },
        "'abc'"
    ),
    function!(&["upper"], 1..=1, |n, t| texts(n, t, TEXT), text::upper, "'abc'"),
    function!(&["lower"], 1..=1, |n, t| texts(n, t, TEXT), text::lower, "'ABC'"),
    function!(&["initcap"], 1..=1, |n, t| texts(n, t, TEXT), text::initcap, "'hello world'"),
    function!(&["reverse"], 1..=1, |n, t| texts(n, t, TEXT), text::reverse, "'abc'"),
    function!(&["md5"], 1..=1, |n, t| texts(n, t, TEXT), text::md5, "'abc'"),
    sha_function!("sha224"),
    sha_function!("sha256"),
    sha_function!("sha384"),
    sha_function!("sha512"),
    function!(&["unistr"], 1..=1, |n, t| texts(n, t, TEXT), unicode::unistr, "'d\\0061ta'"),
    function!(&["normalize"], 1..=2, |n, t| texts(n, t, TEXT), unicode::normalize, "'abc'"),
    function!(
        &["is_normalized"],
        1..=2,
        |n, t| texts(n, t, SqlType::Bool),
        unicode::is_normalized,
        "'abc', 'NFD'"
    ),
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
        bit::substring_signature,
        |c| match (bit::is_bit(&c), bit::is_pattern_substring(&c)) {
            (true, _) => bit::substring(&c),
            (false, true) => regex::substring(&c),
            (false, false) => text::substr(c),
        },
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
        |n, t| mixed(n, t, &[None, Some(SqlType::Int4), None], TEXT),
        |c| text::pad(c, true),
        "'7', 3, '0'"
    ),
    function!(
        &["rpad"],
        2..=3,
        |n, t| mixed(n, t, &[None, Some(SqlType::Int4), None], TEXT),
        |c| text::pad(c, false),
        "'7', 3"
    ),
    function!(&["replace"], 3..=3, |n, t| texts(n, t, TEXT), text::replace, "'abc', 'b', 'x'"),
    function!(&["translate"], 3..=3, |n, t| texts(n, t, TEXT), text::translate, "'abc', 'ab', 'x'"),
    function!(&["ascii"], 1..=1, |n, t| texts(n, t, SqlType::Int4), text::ascii, "'x'"),
    function!(&["chr"], 1..=1, |n, t| mixed(n, t, &[Some(SqlType::Int4)], TEXT), text::chr, "65"),
    function!(
        &["strpos"],
        2..=2,
        bit::position_signature,
        |c| if bit::is_bit(&c) { bit::position(&c) } else { text::strpos(c) },
        "'abc', 'c'"
    ),
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
    // format(text, VARIADIC "any"): not strict (a NULL argument is formatted as %s, %I or
    // %L says; a NULL format string gives NULL).
    function!(
        &["format"],
        1..=usize::MAX,
        format_arguments,
        format::format,
        "'%s-%L', 1, 'a'",
        non_strict
    ),
    function!(&["overlay"], 3..=4, overlay_arguments, encoding::overlay, "'Txxxxas', 'hom', 2, 4"),
    function!(
        &["encode"],
        2..=2,
        |n, t| bytes_then_texts(n, t, TEXT),
        encoding::encode,
        "'abc', 'hex'"
    ),
    function!(
        &["decode"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bytea),
        encoding::decode,
        "'YWJj', 'base64'"
    ),
    function!(
        &["convert_from"],
        2..=2,
        |n, t| bytes_then_texts(n, t, TEXT),
        encoding::convert_from,
        "'abc', 'UTF8'"
    ),
    function!(
        &["convert_to"],
        2..=2,
        |n, t| texts(n, t, SqlType::Bytea),
        encoding::convert_to,
        "'abc', 'UTF8'"
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
    function!(&["nullif"], 2..=2, nullif, info::nullif, "1, 1", non_strict),
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
    function!(&["log"], 1..=2, logarithm, math::log, "2, 8"),
    function!(&["log10"], 1..=1, numeric_or_double, math::log, "100"),
    function!(&["cbrt"], 1..=1, doubles, math::cbrt, "27"),
    // Float functions of PostgreSQL's float.c (trigonometry, degrees, radians).
    float_function!("sin", "1"),
    float_function!("cos", "0"),
    float_function!("tan", "1"),
    float_function!("cot", "1"),
    float_function!("asin", "1"),
    float_function!("acos", "0.5"),
    float_function!("atan", "1"),
    float_function!("sind", "30"),
    float_function!("cosd", "60"),
    float_function!("tand", "45"),
    float_function!("cotd", "45"),
    float_function!("asind", "0.5"),
    float_function!("acosd", "0.5"),
    float_function!("atand", "1"),
    float_function!("sinh", "1"),
    float_function!("cosh", "1"),
    float_function!("tanh", "0.5"),
    float_function!("asinh", "1"),
    float_function!("acosh", "2"),
    float_function!("atanh", "0.5"),
    float_function!("degrees", "pi()"),
    float_function!("radians", "180"),
    function!(&["atan2"], 2..=2, doubles, |c| trigonometry::atan2(false, c), "1, 1"),
    function!(&["atan2d"], 2..=2, doubles, |c| trigonometry::atan2(true, c), "1, 1"),
    function!(&["div"], 2..=2, |n, t| numerics(n, t, SqlType::numeric()), arithmetic::div, "9, 4"),
    function!(&["gcd"], 2..=2, integers_or_numeric, arithmetic::gcd, "12, 18"),
    function!(&["lcm"], 2..=2, integers_or_numeric, arithmetic::lcm, "4, 6"),
    function!(
        &["factorial"],
        1..=1,
        |_, t| Ok(all(t, SqlType::Int8, SqlType::numeric())),
        arithmetic::factorial,
        "5"
    ),
    function!(&["to_hex"], 1..=1, to_hex, arithmetic::to_hex, "255"),
    function!(
        &["width_bucket"],
        2..=4,
        width_bucket,
        arithmetic::width_bucket,
        "5.35, 0.024, 10.06, 5"
    ),
    function!(
        &["scale"],
        1..=1,
        |n, t| numerics(n, t, SqlType::Int4),
        |c| arithmetic::scale("scale", c),
        "12.3400"
    ),
    function!(
        &["min_scale"],
        1..=1,
        |n, t| numerics(n, t, SqlType::Int4),
        |c| arithmetic::scale("min_scale", c),
        "12.3400"
    ),
    function!(
        &["trim_scale"],
        1..=1,
        |n, t| numerics(n, t, SqlType::numeric()),
        |c| arithmetic::scale("trim_scale", c),
        "12.3400"
    ),
    function!(&["pi"], 0..=0, |_, _| Ok(none(SqlType::Float8)), math::pi, ""),
    function!(&["random"], 0..=0, |_, _| Ok(none(SqlType::Float8)), random::random, "", volatile),
    function!(
        &["setseed"],
        1..=1,
        |n, t| Ok(Signature { output: SqlType::Void, ..doubles(n, t)? }),
        random::setseed,
        "0.5",
        volatile
    ),
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
];
