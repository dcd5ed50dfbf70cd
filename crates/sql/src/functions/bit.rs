//! PostgreSQL's bit string functions and operators (varbit.c): `& | # ~ << >> ||`,
//! length / bit_length / octet_length / bit_count, get_bit / set_bit, position and
//! substring; and pgvector's functions over bit: hamming_distance (`<~>`),
//! jaccard_distance (`<%>`) and binary_quantize. length, octet_length, substring and
//! position share their registry entries with the text functions (`is_bit` picks).

use super::typing::*;
use super::{no_function, Call, Coercion, Function, Signature};
use crate::error::{Result, SqlError};
use crate::types::{bit_datum, bit_string, BitString, Datum, SqlType};

const BIT: SqlType = SqlType::Bit(None);
const VARBIT: SqlType = SqlType::VarBit(None);

fn is_bit_type(ty: &SqlType) -> bool {
    matches!(ty, SqlType::Bit(_) | SqlType::VarBit(_))
}

/// Whether the call resolved to the bit overload (its first argument is a bit string).
pub(super) fn is_bit(call: &Call<'_>) -> bool {
    matches!(call.args.first(), Some(Datum::Bit(_)))
}

/// Arguments as `kinds` says: `Some(BIT)` a bit string (bit and varbit, untyped literals
/// read as bit), `Some(other)` an implicit cast; the first must be a bit string or, when
/// `literal_first`, an untyped literal.
fn bits(name: &str, types: &[SqlType], kinds: &[SqlType], output: SqlType) -> Result<Signature> {
    let mut arguments = Vec::with_capacity(types.len());
    for (ty, kind) in types.iter().zip(kinds) {
        let bit_kind = is_bit_type(kind);
        let fits = if bit_kind {
            is_bit_type(ty) || *ty == SqlType::Unknown
        } else {
            ty.is_integer() || *ty == SqlType::Unknown
        };
        if !fits {
            return Err(no_function(name, types));
        }
        arguments.push(Coercion::Implicit(kind.clone()));
    }
    Ok(Signature { arguments, output })
}

/// The bit overload of a function shared with text, if the first argument is a bit string.
fn bit_overload(types: &[SqlType], kinds: &[SqlType], output: SqlType) -> Option<Signature> {
    let first = types.first()?;
    if !is_bit_type(first) {
        return None;
    }
    bits("", types, kinds, output).ok()
}

pub(super) fn length_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    match bit_overload(types, &[BIT], SqlType::Int4) {
        Some(signature) => Ok(signature),
        None => super::typing::length(name, types),
    }
}

/// substring(bit, int4 [, int4]) or the text function's signature: substring(text,
/// pattern [, escape]) when the second argument is text (an untyped literal too, as
/// PostgreSQL prefers the string category), else substr's positions.
pub(super) fn substring_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let kinds = [BIT, SqlType::Int4, SqlType::Int4];
    if let Some(signature) = bit_overload(types, &kinds, BIT) {
        return Ok(signature);
    }
    if name == "substring" && types.get(1).is_some_and(SqlType::is_text) {
        return texts(name, types, TEXT);
    }
    mixed(name, types, &[None, Some(SqlType::Int8), Some(SqlType::Int8)], TEXT)
}

/// Whether a text substring call has the pattern form (its second argument text).
pub(super) fn is_pattern_substring(call: &Call<'_>) -> bool {
    call.arg_types.get(1).is_some_and(|ty| *ty == SqlType::Text)
}

/// strpos's (position's) arguments: the string, then the substring.
pub(super) fn position_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    if types.iter().any(is_bit_type) {
        return bits(name, types, &[BIT, BIT], SqlType::Int4);
    }
    texts(name, types, SqlType::Int4)
}

/// bit_length(bit) or bit_length(text).
fn bit_length_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    match bit_overload(types, &[BIT], SqlType::Int4) {
        Some(signature) => Ok(signature),
        None => texts(name, types, SqlType::Int4),
    }
}

fn argument<'call>(call: &'call Call<'_>, index: usize) -> Result<&'call BitString> {
    bit_string(&call.args[index])
}

fn int4(value: usize) -> Result<Datum> {
    i32::try_from(value)
        .map(|value| Datum::Int(i64::from(value)))
        .map_err(|_| SqlError::out_of_range("integer"))
}

pub(super) fn length(call: &Call<'_>) -> Result<Datum> {
    int4(argument(call, 0)?.len())
}

pub(super) fn octet_length(call: &Call<'_>) -> Result<Datum> {
    int4(argument(call, 0)?.bytes().len())
}

fn bit_length(call: Call<'_>) -> Result<Datum> {
    if is_bit(&call) {
        return length(&call);
    }
    int4(call.text(0).len().saturating_mul(8))
}

fn bit_count(call: Call<'_>) -> Result<Datum> {
    let count = argument(&call, 0)?.count_ones();
    Ok(Datum::Int(i64::try_from(count).map_err(|_| SqlError::out_of_range("bigint"))?))
}

/// `&`, `|` and `#`: bit by bit over strings of one length (22026 otherwise).
fn bitwise(call: &Call<'_>, verb: &str, combine: fn(u8, u8) -> u8) -> Result<Datum> {
    let (a, b) = (argument(call, 0)?, argument(call, 1)?);
    if a.len() != b.len() {
        return Err(SqlError::new(
            "22026",
            format!("cannot {verb} bit strings of different sizes"),
        ));
    }
    let bytes = a.bytes().iter().zip(b.bytes()).map(|(x, y)| combine(*x, *y)).collect();
    Ok(bit_datum(BitString::from_bytes(bytes, a.len())))
}

fn not(call: Call<'_>) -> Result<Datum> {
    let bits = argument(&call, 0)?;
    let bytes = bits.bytes().iter().map(|byte| !byte).collect();
    Ok(bit_datum(BitString::from_bytes(bytes, bits.len())))
}

/// `<<` and `>>` (a negative shift goes the other way); the length stays.
fn shift(call: &Call<'_>, left: bool) -> Result<Datum> {
    let bits = argument(call, 0)?;
    let amount = call.int(1);
    let amount = if left { amount } else { amount.saturating_neg() };
    let length = bits.len();
    let shifted = (0..length).map(|index| {
        let source = i64::try_from(index).unwrap_or(i64::MAX).saturating_add(amount);
        usize::try_from(source).is_ok_and(|source| source < length && bits.get(source))
    });
    Ok(bit_datum(BitString::from_bits(shifted.collect::<Vec<_>>().into_iter())))
}

/// `||` (bitcat): a varbit of both strings' bits.
fn concatenate(call: Call<'_>) -> Result<Datum> {
    let (a, b) = (argument(&call, 0)?, argument(&call, 1)?);
    let bits = (0..a.len()).map(|index| a.get(index)).chain((0..b.len()).map(|index| b.get(index)));
    Ok(bit_datum(BitString::from_bits(bits.collect::<Vec<_>>().into_iter())))
}

/// The checked bit index of get_bit and set_bit (2202E outside the string).
fn bit_index(bits: &BitString, index: i64) -> Result<usize> {
    usize::try_from(index).ok().filter(|&index| index < bits.len()).ok_or_else(|| {
        SqlError::new(
            "2202E",
            format!(
                "bit index {index} out of valid range (0..{})",
                i64::try_from(bits.len()).unwrap_or(i64::MAX) - 1
            ),
        )
    })
}

fn get_bit(call: Call<'_>) -> Result<Datum> {
    let bits = argument(&call, 0)?;
    let index = bit_index(bits, call.int(1))?;
    Ok(Datum::Int(i64::from(bits.get(index))))
}

fn set_bit(call: Call<'_>) -> Result<Datum> {
    let bits = argument(&call, 0)?;
    let index = bit_index(bits, call.int(1))?;
    let bit = match call.int(2) {
        0 => false,
        1 => true,
        _ => return Err(SqlError::new("22023", "new bit must be 0 or 1")),
    };
    let mut changed = bits.clone();
    changed.set(index, bit);
    Ok(bit_datum(changed))
}

/// bitsubstr: the bits from `start` (1-based), `count` of them when given.
pub(super) fn substring(call: &Call<'_>) -> Result<Datum> {
    let bits = argument(call, 0)?;
    let length = i64::try_from(bits.len()).unwrap_or(i64::MAX);
    let start = call.int(1);
    let end = match call.args.get(2) {
        Some(_) => {
            let count = call.int(2);
            if count < 0 {
                return Err(SqlError::new("22011", "negative substring length not allowed"));
            }
            start.checked_add(count).ok_or_else(|| SqlError::out_of_range("integer"))?
        }
        None => length + 1,
    };
    let (first, end) = (start.max(1), end.min(length + 1));
    if first > length || end <= first {
        return Ok(bit_datum(BitString::zeros(0)));
    }
    // 1 <= first < end <= length + 1 here.
    let index = |value: i64| usize::try_from(value).unwrap_or(0);
    Ok(bit_datum(bits.slice(index(first - 1), index(end - first))))
}

/// bitposition: where the substring first starts (1-based), 0 when nowhere.
pub(super) fn position(call: &Call<'_>) -> Result<Datum> {
    let (string, substring) = (argument(call, 0)?, argument(call, 1)?);
    if string.is_empty() || substring.len() > string.len() {
        return Ok(Datum::Int(0));
    }
    let matches_at = |start: usize| {
        (0..substring.len()).all(|offset| string.get(start + offset) == substring.get(offset))
    };
    let found = (0..=string.len() - substring.len()).find(|&start| matches_at(start));
    int4(found.map_or(0, |start| start + 1))
}

/// pgvector's CheckDims for bit: 22000 when the lengths differ.
fn same_length_pair<'call>(call: &'call Call<'_>) -> Result<(&'call BitString, &'call BitString)> {
    let (a, b) = (argument(call, 0)?, argument(call, 1)?);
    if a.len() != b.len() {
        return Err(SqlError::new(
            "22000",
            format!("different bit lengths {} and {}", a.len(), b.len()),
        ));
    }
    Ok((a, b))
}

/// Bits set in both byte strings' combination (`combine` of each pair of bytes).
fn count_combined(a: &[u8], b: &[u8], combine: fn(u8, u8) -> u8) -> u64 {
    a.iter().zip(b).map(|(x, y)| u64::from(combine(*x, *y).count_ones())).sum()
}

/// pgvector's hamming_distance: the bits that differ.
fn hamming_distance(call: Call<'_>) -> Result<Datum> {
    let (a, b) = same_length_pair(&call)?;
    Ok(Datum::Float(count_combined(a.bytes(), b.bytes(), |x, y| x ^ y) as f64))
}

/// pgvector's jaccard_distance: 1 - |a and b| / |a or b|, 1 when no bit is in both.
fn jaccard_distance(call: Call<'_>) -> Result<Datum> {
    let (a, b) = same_length_pair(&call)?;
    let both = count_combined(a.bytes(), b.bytes(), |x, y| x & y);
    if both == 0 {
        return Ok(Datum::Float(1.0));
    }
    let either = a.count_ones() + b.count_ones() - both;
    Ok(Datum::Float(1.0 - both as f64 / either as f64))
}

/// binary_quantize(vector) and binary_quantize(halfvec): 1 where the element is > 0.
fn binary_quantize(call: Call<'_>) -> Result<Datum> {
    let bits = match &call.args[0] {
        Datum::Vector(elements) => {
            BitString::from_bits(elements.iter().map(|element| *element > 0.0))
        }
        Datum::HalfVec(elements) => {
            BitString::from_bits(elements.iter().map(|element| element.to_f32() > 0.0))
        }
        other => return Err(SqlError::internal(format!("binary_quantize of {other:?}"))),
    };
    Ok(bit_datum(bits))
}

/// binary_quantize's overloads: vector and halfvec (an untyped literal is ambiguous).
fn binary_quantize_signature(name: &str, types: &[SqlType]) -> Result<Signature> {
    let argument = match &types[0] {
        SqlType::Vector(_) => SqlType::Vector(None),
        SqlType::HalfVec(_) => SqlType::HalfVec(None),
        SqlType::Unknown => {
            return Err(SqlError::new("42725", format!("function {name}(unknown) is not unique")))
        }
        _ => return Err(no_function(name, types)),
    };
    Ok(Signature { arguments: vec![Coercion::Implicit(argument)], output: BIT })
}

/// The bit string functions, their operators' functions and pgvector's bit functions.
pub(super) static BIT_FUNCTIONS: &[Function] = &[
    function!(&["bit_length"], 1..=1, bit_length_signature, bit_length, "B'0101'"),
    function!(
        &["bit_count"],
        1..=1,
        |n, t| bits(n, t, &[BIT], SqlType::Int8),
        bit_count,
        "B'0101'"
    ),
    function!(
        &["get_bit"],
        2..=2,
        |n, t| bits(n, t, &[BIT, SqlType::Int4], SqlType::Int4),
        get_bit,
        "B'0101', 1"
    ),
    function!(
        &["set_bit"],
        3..=3,
        |n, t| bits(n, t, &[BIT, SqlType::Int4, SqlType::Int4], BIT),
        set_bit,
        "B'0101', 0, 1"
    ),
    function!(
        &["bitand"],
        2..=2,
        |n, t| bits(n, t, &[BIT, BIT], BIT),
        |c| bitwise(&c, "AND", |x, y| x & y),
        "B'01', B'11'"
    ),
    function!(
        &["bitor"],
        2..=2,
        |n, t| bits(n, t, &[BIT, BIT], BIT),
        |c| bitwise(&c, "OR", |x, y| x | y),
        "B'01', B'10'"
    ),
    function!(
        &["bitxor"],
        2..=2,
        |n, t| bits(n, t, &[BIT, BIT], BIT),
        |c| bitwise(&c, "XOR", |x, y| x ^ y),
        "B'01', B'11'"
    ),
    function!(&["bitnot"], 1..=1, |n, t| bits(n, t, &[BIT], BIT), not, "B'01'"),
    function!(
        &["bitshiftleft"],
        2..=2,
        |n, t| bits(n, t, &[BIT, SqlType::Int4], BIT),
        |c| shift(&c, true),
        "B'0101', 1"
    ),
    function!(
        &["bitshiftright"],
        2..=2,
        |n, t| bits(n, t, &[BIT, SqlType::Int4], BIT),
        |c| shift(&c, false),
        "B'0101', 1"
    ),
    function!(
        &["bitcat"],
        2..=2,
        |n, t| bits(n, t, &[VARBIT, VARBIT], VARBIT),
        concatenate,
        "B'01', B'1'"
    ),
    function!(
        &["hamming_distance"],
        2..=2,
        |n, t| bits(n, t, &[BIT, BIT], SqlType::Float8),
        hamming_distance,
        "B'0101', B'0011'"
    ),
    function!(
        &["jaccard_distance"],
        2..=2,
        |n, t| bits(n, t, &[BIT, BIT], SqlType::Float8),
        jaccard_distance,
        "B'0101', B'0011'"
    ),
    function!(
        &["binary_quantize"],
        1..=1,
        binary_quantize_signature,
        binary_quantize,
        "'[1,-1]'::vector"
    ),
];
