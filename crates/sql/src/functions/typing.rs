//! The typing rules registry entries share: how a call's argument types resolve to a
//! signature.

use super::{no_function, Coercion, Signature};
use crate::error::{Result, SqlError};
use crate::types::{ObjectKind, SqlType};

pub(super) const TEXT: SqlType = SqlType::Text;

/// Every argument is text (character types and untyped literals convert; other types have
/// no implicit cast to text, so no such function exists).
pub(super) fn texts(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    if types.iter().any(|ty| !ty.is_text()) {
        return Err(no_function(name, types));
    }
    Ok(Signature { arguments: vec![Coercion::Explicit(TEXT); types.len()], output })
}

/// The sequence functions: a sequence named by text or regclass (its printed name, read
/// again as regclass reads it), then `rest` as `mixed` takes them.
pub(super) fn sequence_arguments(
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
pub(super) fn advisory_arguments(
    name: &str,
    types: &[SqlType],
    output: SqlType,
) -> Result<Signature> {
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
pub(super) fn mixed(
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
pub(super) fn any(types: &[SqlType], explicit: bool, output: SqlType) -> Signature {
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
pub(super) fn cast_to_text(types: &[SqlType]) -> Signature {
    Signature { arguments: vec![Coercion::Explicit(TEXT); types.len()], output: TEXT }
}

/// Every argument cast implicitly to `target`.
pub(super) fn all(types: &[SqlType], target: SqlType, output: SqlType) -> Signature {
    Signature { arguments: vec![Coercion::Implicit(target); types.len()], output }
}

pub(super) fn none(output: SqlType) -> Signature {
    Signature { arguments: Vec::new(), output }
}

/// length and its synonyms: bpchar is kept as it is (its padding does not count).
pub(super) fn length(name: &str, types: &[SqlType]) -> Result<Signature> {
    // length(bytea) and octet_length(bytea) count bytes (PostgreSQL has no char_length or
    // character_length of bytea).
    let bytea_length = matches!(name, "length" | "octet_length");
    if matches!(types, [SqlType::Char(_)]) || (bytea_length && types == [SqlType::Bytea]) {
        return Ok(Signature { arguments: vec![Coercion::Keep], output: SqlType::Int4 });
    }
    texts(name, types, SqlType::Int4)
}

/// coalesce, greatest, least: the arguments' common type by PostgreSQL's rules
/// (types::select_common_type; 42804 when there is none).
pub(super) fn common(name: &str, types: &[SqlType]) -> Result<Signature> {
    let common = crate::types::select_common_type(types).map_err(|(left, right)| {
        SqlError::datatype_mismatch(format!(
            "{} types {} and {} cannot be matched",
            name.to_uppercase(),
            left.display_name(),
            right.display_name()
        ))
    })?;
    Ok(all(types, common.clone(), common))
}

/// nullif(left, right): the type of the left operand of the `=` PostgreSQL picks. Where a
/// cross-type `=` exists (the integers, the floats, name with a string) or the right is an
/// untyped literal read as the left's type, that is the left's own type (nullif(smallint,
/// integer) is smallint); otherwise both take their common type (nullif(1, 2.5) is numeric,
/// a varchar compares as text).
pub(super) fn nullif(name: &str, types: &[SqlType]) -> Result<Signature> {
    let (left, right) = (&types[0], &types[1]);
    let keeps_left = match (left, right) {
        (SqlType::Varchar(_) | SqlType::Char(_) | SqlType::Unknown, _) => false,
        (_, SqlType::Unknown) => true,
        (a, b) if a.is_integer() && b.is_integer() => true,
        (SqlType::Float4 | SqlType::Float8, SqlType::Float4 | SqlType::Float8) => true,
        (SqlType::Name, b) => b.is_text() && !matches!(b, SqlType::Char(_)),
        _ => false,
    };
    if keeps_left {
        let second = if *right == SqlType::Unknown {
            Coercion::Implicit(left.clone())
        } else {
            Coercion::Keep
        };
        return Ok(Signature { arguments: vec![Coercion::Keep, second], output: left.clone() });
    }
    common_as_before(name, types)
}

/// The pairwise common type, strings as text (NULLIF's operands where no rule above holds).
fn common_as_before(name: &str, types: &[SqlType]) -> Result<Signature> {
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
pub(super) fn unary_numeric(name: &str, types: &[SqlType]) -> Result<Signature> {
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
pub(super) fn rounding(_name: &str, types: &[SqlType]) -> Result<Signature> {
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
pub(super) fn numeric_or_double(_name: &str, types: &[SqlType]) -> Result<Signature> {
    let numeric = types.iter().any(|ty| matches!(ty, SqlType::Numeric { .. }));
    let target = if numeric { SqlType::numeric() } else { SqlType::Float8 };
    Ok(all(types, target.clone(), target))
}

/// log(x) as `numeric_or_double`; log(base, x) over numeric only (PostgreSQL has no float8
/// form, and float8 has no implicit cast to numeric).
pub(super) fn logarithm(name: &str, types: &[SqlType]) -> Result<Signature> {
    if types.len() == 1 {
        return numeric_or_double(name, types);
    }
    if types.iter().any(|ty| matches!(ty, SqlType::Float4 | SqlType::Float8)) {
        return Err(no_function(name, types));
    }
    numerics(name, types, SqlType::numeric())
}

/// The argument types of a function over numbers: numeric-family types and untyped
/// literals, else no such function.
fn numbers(name: &str, types: &[SqlType]) -> Result<()> {
    if types.iter().all(|ty| ty.is_numeric_family() || *ty == SqlType::Unknown) {
        Ok(())
    } else {
        Err(no_function(name, types))
    }
}

/// A function on float8 only (trigonometry, degrees, radians).
pub(super) fn doubles(name: &str, types: &[SqlType]) -> Result<Signature> {
    numbers(name, types)?;
    Ok(all(types, SqlType::Float8, SqlType::Float8))
}

/// A function on numeric only (div, scale), returning `output`.
pub(super) fn numerics(name: &str, types: &[SqlType], output: SqlType) -> Result<Signature> {
    numbers(name, types)?;
    Ok(all(types, SqlType::numeric(), output))
}

/// gcd and lcm: integer (int4, or int8 if either argument is) or numeric.
pub(super) fn integers_or_numeric(name: &str, types: &[SqlType]) -> Result<Signature> {
    numbers(name, types)?;
    if types.iter().any(|ty| matches!(ty, SqlType::Float4 | SqlType::Float8)) {
        return Err(no_function(name, types));
    }
    let target = if types.iter().all(|ty| ty.is_integer() || *ty == SqlType::Unknown) {
        if types.contains(&SqlType::Int8) {
            SqlType::Int8
        } else {
            SqlType::Int4
        }
    } else {
        SqlType::numeric()
    };
    Ok(all(types, target.clone(), target))
}

/// width_bucket(operand, thresholds): the operand and the array's elements in their common
/// type; width_bucket(operand, low, high, count): numeric if a bound or operand is numeric and
/// none is a float, else float8 (PostgreSQL's preferred type of the numeric category).
pub(super) fn width_bucket(name: &str, types: &[SqlType]) -> Result<Signature> {
    if types.len() == 2 {
        // width_bucket(anycompatible, anycompatiblearray).
        use super::array::{polymorphic, Kind, Output};
        return polymorphic(name, types, &[Kind::Element, Kind::Array], Output::Int);
    }
    if types.len() != 4 {
        return Err(no_function(name, types));
    }
    numbers(name, types)?;
    let values = &types[..3];
    let numeric = values.iter().any(|ty| matches!(ty, SqlType::Numeric { .. }))
        && !values.iter().any(|ty| matches!(ty, SqlType::Float4 | SqlType::Float8));
    let target = if numeric { SqlType::numeric() } else { SqlType::Float8 };
    let mut arguments = vec![Coercion::Implicit(target); 3];
    arguments.push(Coercion::Implicit(SqlType::Int4));
    Ok(Signature { arguments, output: SqlType::Int4 })
}

/// to_hex: int8, or int4 for the smaller integer types.
pub(super) fn to_hex(name: &str, types: &[SqlType]) -> Result<Signature> {
    let target = match &types[0] {
        SqlType::Int8 => SqlType::Int8,
        ty if ty.is_integer() || *ty == SqlType::Unknown => SqlType::Int4,
        _ => return Err(no_function(name, types)),
    };
    Ok(all(types, target, TEXT))
}

/// format: the format string is text, the others "any" (untyped literals as text).
pub(super) fn format_arguments(name: &str, types: &[SqlType]) -> Result<Signature> {
    if !types.first().is_some_and(SqlType::is_text) {
        return Err(no_function(name, types));
    }
    let mut signature = any(types, true, TEXT);
    signature.arguments[0] = Coercion::Explicit(TEXT);
    Ok(signature)
}

/// A bytea argument first (an untyped literal is read as bytea; text has no implicit cast),
/// then text arguments.
pub(super) fn bytes_then_texts(
    name: &str,
    types: &[SqlType],
    output: SqlType,
) -> Result<Signature> {
    if !matches!(types.first(), Some(SqlType::Bytea | SqlType::Unknown)) {
        return Err(no_function(name, types));
    }
    let mut signature = mixed(name, &types[1..], &vec![None; types.len() - 1], output)?;
    signature.arguments.insert(0, Coercion::Implicit(SqlType::Bytea));
    Ok(signature)
}

/// overlay: text's, bytea's (when either string is bytea) or bit's (a gap: 0A000); the
/// start and count are int4.
pub(super) fn overlay_arguments(name: &str, types: &[SqlType]) -> Result<Signature> {
    let strings = &types[..2];
    if strings.iter().any(|ty| matches!(ty, SqlType::Bit(_) | SqlType::VarBit(_))) {
        return Err(SqlError::unsupported("overlay() of bit strings is not supported"));
    }
    let integers = [Some(SqlType::Int4), Some(SqlType::Int4)];
    if !strings.contains(&SqlType::Bytea) {
        let kinds = [None, None, integers[0].clone(), integers[1].clone()];
        return mixed(name, types, &kinds, TEXT);
    }
    if !strings.iter().all(|ty| matches!(ty, SqlType::Bytea | SqlType::Unknown)) {
        return Err(no_function(name, types));
    }
    let bytea = Some(SqlType::Bytea);
    let kinds = [bytea.clone(), bytea, integers[0].clone(), integers[1].clone()];
    mixed(name, types, &kinds, SqlType::Bytea)
}
