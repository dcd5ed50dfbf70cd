//! Order-preserving key encoding: typed, possibly composite values become byte strings whose
//! `memcmp` order is PostgreSQL's sort order for the same values, so the B+tree compares keys
//! as plain bytes and never needs to know their types.
//!
//! Per column (docs/design/006-key-encoding.md):
//!
//! | part        | bytes | encoding                                                         |
//! |-------------|------:|------------------------------------------------------------------|
//! | null marker | 1     | value 0x01; NULL 0x00 if it must sort low before inversion (NULLS FIRST xor DESC), else 0x02 |
//! | boolean     | 1     | 0x00 false, 0x01 true                                            |
//! | integer     | 8     | big-endian two's complement with the sign bit flipped            |
//! | float       | 8     | IEEE 754 bits, big-endian: negative: all bits flipped; else sign bit flipped; -0 is 0; every NaN is one NaN, above +infinity (as in PostgreSQL) |
//! | text, bytes | n + 2 | each 0x00 as 0x00 0xFF, then terminator 0x00 0x01 (prefix-free)  |
//! | numeric     | 1 to 18 | see below                                                      |
//!
//! Numeric (a [`Decimal`]) is encoded by value, in PostgreSQL's `numeric` order: the display
//! scale is *not* part of the key. The encoding normalizes it (1.0, 1.00 and 1 have the same
//! bytes), so a primary-key lookup of 1.0 finds a row stored as 1.00, and `decode_key` returns
//! the value with the smallest scale (1.00 comes back as 1). The row encoding (engine) keeps
//! the scale. A nonzero value is written as `±0.g1 g2 ... gn × 100^E`, with base-100 digits
//! (groups) `g1` (first) and `gn` (last) nonzero, aligned on the decimal point:
//!
//! | part     | bytes  | positive             | zero  | negative                          |
//! |----------|-------:|----------------------|-------|-----------------------------------|
//! | sign     | 1      | 0x02                 | 0x01 (nothing follows) | 0x00             |
//! | exponent | 1      | E + 0x80             | -     | !(E + 0x80)                       |
//! | groups   | n      | each group g as g + 1 (0x01..=0x64) | - | each as !(g + 1) (0x9B..=0xFE) |
//! | end      | 1      | terminator 0x00      | -     | !0x00 = 0xFF                      |
//!
//! `E` is -13..=15 and `n` at most 15 for [`Decimal`]'s range (up to 29 significant digits,
//! scale at most 28). For positive values a larger exponent is a larger value, and with equal
//! exponents the groups compare as digits; a value whose groups are a prefix of another's is
//! the smaller, and its terminator 0x00 is below every group byte. Negative values invert the
//! exponent, groups and terminator, which reverses that order; the inverted terminator 0xFF is
//! above every inverted group byte. The terminator makes the encoding prefix-free, and the
//! nonzero first and last groups make it canonical (equal values, equal bytes).
//!
//! A descending column has every byte of its encoding (marker included) inverted; because
//! each column's encoding is prefix-free, inversion reverses its order without disturbing the
//! columns after it. Text compares by bytes, as PostgreSQL's "C" collation does.

use std::cmp::Ordering;

use rust_decimal::Decimal;

/// The type of a key column.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum KeyKind {
    Bool,
    /// Any integer width (smallint, integer, bigint), widened to 64 bits.
    Int,
    /// real or double precision, widened to 64 bits.
    Float,
    Text,
    Bytes,
    /// PostgreSQL `numeric`, as a [`Decimal`]: keys compare by numeric value, not scale.
    Numeric,
}

/// A key column: its type and sort direction. `nulls_first` defaults as in PostgreSQL:
/// true for descending columns, false for ascending ones.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct KeyColumn {
    pub kind: KeyKind,
    pub descending: bool,
    pub nulls_first: bool,
}

impl KeyColumn {
    pub fn ascending(kind: KeyKind) -> KeyColumn {
        KeyColumn { kind, descending: false, nulls_first: false }
    }

    pub fn descending(kind: KeyKind) -> KeyColumn {
        KeyColumn { kind, descending: true, nulls_first: true }
    }
}

/// One value of a key.
#[derive(Clone, Debug)]
pub enum KeyValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
    /// A `numeric`. Equality and key order are by value (1.0 equals 1.00); the key encoding
    /// drops the scale, the row encoding keeps it.
    Numeric(Decimal),
}

impl PartialEq for KeyValue {
    fn eq(&self, other: &KeyValue) -> bool {
        match (self, other) {
            (KeyValue::Float(left), KeyValue::Float(right)) => {
                compare_floats(*left, *right) == Ordering::Equal
            }
            (KeyValue::Null, KeyValue::Null) => true,
            (KeyValue::Bool(left), KeyValue::Bool(right)) => left == right,
            (KeyValue::Int(left), KeyValue::Int(right)) => left == right,
            (KeyValue::Text(left), KeyValue::Text(right)) => left == right,
            (KeyValue::Bytes(left), KeyValue::Bytes(right)) => left == right,
            // Decimal's equality is by value: 1.0 == 1.00.
            (KeyValue::Numeric(left), KeyValue::Numeric(right)) => left == right,
            _ => false,
        }
    }
}

/// PostgreSQL's float order: -0 equals 0, NaN equals NaN and is above every other value.
pub(crate) fn compare_floats(left: f64, right: f64) -> Ordering {
    match (left.is_nan(), right.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => left.partial_cmp(&right).expect("no NaN here"),
    }
}

/// Why a key could not be encoded or decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("key has values={values} but columns={columns}")]
    Arity { values: usize, columns: usize },
    #[error("key column={column} expects kind={expected:?}")]
    Kind { column: usize, expected: KeyKind },
    #[error("corrupt key column={column}: {detail}")]
    Corrupt { column: usize, detail: &'static str },
}

const NULL_FIRST: u8 = 0x00;
const PRESENT: u8 = 0x01;
const NULL_LAST: u8 = 0x02;
const ESCAPE: u8 = 0xFF;
const TERMINATOR: u8 = 0x01;
const SIGN_BIT: u64 = 1 << 63;
const NUMERIC_NEGATIVE: u8 = 0x00;
const NUMERIC_ZERO: u8 = 0x01;
const NUMERIC_POSITIVE: u8 = 0x02;
const NUMERIC_EXPONENT_BIAS: i32 = 0x80;
const NUMERIC_TERMINATOR: u8 = 0x00;
/// The most base-100 groups of a [`Decimal`]: 29 digits, plus one when aligning an odd scale.
const NUMERIC_GROUPS_MAX: usize = 15;

/// Appends the encoding of `values` (one per column) to `out`.
pub fn encode_key(
    columns: &[KeyColumn],
    values: &[KeyValue],
    out: &mut Vec<u8>,
) -> Result<(), KeyError> {
    if columns.len() != values.len() {
        return Err(KeyError::Arity { values: values.len(), columns: columns.len() });
    }
    for (index, (column, value)) in columns.iter().zip(values).enumerate() {
        let start = out.len();
        encode_column(index, column, value, out)?;
        if column.descending {
            for byte in &mut out[start..] {
                *byte = !*byte;
            }
        }
    }
    Ok(())
}

fn encode_column(
    index: usize,
    column: &KeyColumn,
    value: &KeyValue,
    out: &mut Vec<u8>,
) -> Result<(), KeyError> {
    if matches!(value, KeyValue::Null) {
        // A descending column is inverted afterwards, marker included: choose the marker
        // that lands where NULLs belong after that inversion.
        let low = column.nulls_first != column.descending;
        out.push(if low { NULL_FIRST } else { NULL_LAST });
        return Ok(());
    }
    out.push(PRESENT);
    match (column.kind, value) {
        (KeyKind::Bool, KeyValue::Bool(flag)) => out.push(u8::from(*flag)),
        (KeyKind::Int, KeyValue::Int(number)) => {
            out.extend_from_slice(
                &(u64::from_ne_bytes(number.to_ne_bytes()) ^ SIGN_BIT).to_be_bytes(),
            );
        }
        (KeyKind::Float, KeyValue::Float(number)) => {
            out.extend_from_slice(&float_bits(*number).to_be_bytes())
        }
        (KeyKind::Text, KeyValue::Text(text)) => encode_bytes(text.as_bytes(), out),
        (KeyKind::Bytes, KeyValue::Bytes(bytes)) => encode_bytes(bytes, out),
        (KeyKind::Numeric, KeyValue::Numeric(number)) => encode_numeric(*number, out),
        _ => return Err(KeyError::Kind { column: index, expected: column.kind }),
    }
    Ok(())
}

fn float_bits(number: f64) -> u64 {
    let canonical = if number.is_nan() {
        f64::NAN
    } else if number == 0.0 {
        0.0
    } else {
        number
    };
    let bits = canonical.to_bits();
    if bits & SIGN_BIT != 0 {
        !bits
    } else {
        bits ^ SIGN_BIT
    }
}

fn encode_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        out.push(byte);
        if byte == 0 {
            out.push(ESCAPE);
        }
    }
    out.push(0);
    out.push(TERMINATOR);
}

fn encode_numeric(number: Decimal, out: &mut Vec<u8>) {
    if number.is_zero() {
        // -0 included.
        out.push(NUMERIC_ZERO);
        return;
    }
    let negative = number.is_sign_negative();
    let flip = if negative { 0xFF } else { 0x00 };
    let (exponent, groups) = numeric_groups(number);
    out.push(if negative { NUMERIC_NEGATIVE } else { NUMERIC_POSITIVE });
    out.push(
        u8::try_from(exponent + NUMERIC_EXPONENT_BIAS).expect("Decimal's exponent fits") ^ flip,
    );
    out.extend(groups.iter().map(|&group| (group + 1) ^ flip));
    out.push(NUMERIC_TERMINATOR ^ flip);
}

/// The magnitude of a nonzero `number` as `0.g1 g2 ... gn × 100^exponent`: the exponent and
/// the base-100 groups, most significant first, the first and the last nonzero.
fn numeric_groups(number: Decimal) -> (i32, Vec<u8>) {
    let mut magnitude = number.mantissa().unsigned_abs();
    let mut scale = number.scale();
    if scale % 2 == 1 {
        // Align on the decimal point: groups are pairs of digits on either side of it.
        magnitude *= 10;
        scale += 1;
    }
    let mut groups = Vec::with_capacity(NUMERIC_GROUPS_MAX);
    while magnitude > 0 {
        groups.push(u8::try_from(magnitude % 100).expect("below 100"));
        magnitude /= 100;
    }
    let exponent = i32::try_from(groups.len()).expect("at most 15 groups")
        - i32::try_from(scale / 2).expect("scale at most 28");
    // Trailing zero groups (least significant, at the front here) carry no value.
    let significant = groups.iter().position(|&group| group != 0).expect("nonzero");
    groups.drain(..significant);
    groups.reverse();
    (exponent, groups)
}

/// The inverse of `numeric_groups`, rejecting what it cannot produce. The result has the
/// smallest scale that represents the value.
fn numeric_from_groups(
    negative: bool,
    exponent: i32,
    groups: &[u8],
) -> Result<Decimal, &'static str> {
    if groups.first().is_none_or(|&group| group == 0) || groups.last() == Some(&0) {
        return Err("numeric not canonical");
    }
    if groups.len() > NUMERIC_GROUPS_MAX {
        return Err("numeric out of range");
    }
    let mut magnitude =
        groups.iter().fold(0u128, |magnitude, &group| magnitude * 100 + u128::from(group));
    let fraction_groups = i32::try_from(groups.len()).expect("at most 15") - exponent;
    let scale = if fraction_groups > 0 {
        let scale = u32::try_from(fraction_groups * 2).expect("positive");
        if magnitude % 10 == 0 {
            // An odd scale, aligned by the encoder: undo that, or 29 digits plus the padding
            // zero would exceed Decimal's 96-bit mantissa.
            magnitude /= 10;
            scale - 1
        } else {
            scale
        }
    } else if fraction_groups == 0 {
        0
    } else {
        let shift = u32::try_from(-fraction_groups).expect("positive");
        magnitude = 100u128
            .checked_pow(shift)
            .and_then(|factor| magnitude.checked_mul(factor))
            .ok_or("numeric out of range")?;
        0
    };
    let mut mantissa = i128::try_from(magnitude).map_err(|_| "numeric out of range")?;
    if negative {
        mantissa = -mantissa;
    }
    Decimal::try_from_i128_with_scale(mantissa, scale)
        .map(|number| number.normalize())
        .map_err(|_| "numeric out of range")
}

/// Decodes a key encoded with the same columns. Floats come back canonical (-0 as 0, one NaN),
/// numerics with the smallest scale (1.00 as 1).
pub fn decode_key(columns: &[KeyColumn], bytes: &[u8]) -> Result<Vec<KeyValue>, KeyError> {
    let mut position = 0;
    let mut values = Vec::with_capacity(columns.len());
    for (index, column) in columns.iter().enumerate() {
        let invert = |byte: u8| if column.descending { !byte } else { byte };
        let corrupt = |detail| KeyError::Corrupt { column: index, detail };
        let take = |position: &mut usize, length: usize| -> Result<Vec<u8>, KeyError> {
            let slice = bytes.get(*position..*position + length).ok_or(corrupt("truncated"))?;
            *position += length;
            Ok(slice.iter().map(|&byte| invert(byte)).collect())
        };
        let marker = take(&mut position, 1)?[0];
        if marker == NULL_FIRST || marker == NULL_LAST {
            values.push(KeyValue::Null);
            continue;
        }
        if marker != PRESENT {
            return Err(corrupt("bad null marker"));
        }
        let value = match column.kind {
            KeyKind::Bool => match take(&mut position, 1)?[0] {
                0 => KeyValue::Bool(false),
                1 => KeyValue::Bool(true),
                _ => return Err(corrupt("bad boolean")),
            },
            KeyKind::Int => {
                let raw = u64::from_be_bytes(take(&mut position, 8)?.try_into().expect("8 bytes"))
                    ^ SIGN_BIT;
                KeyValue::Int(i64::from_ne_bytes(raw.to_ne_bytes()))
            }
            KeyKind::Float => {
                let raw = u64::from_be_bytes(take(&mut position, 8)?.try_into().expect("8 bytes"));
                let bits = if raw & SIGN_BIT != 0 { raw ^ SIGN_BIT } else { !raw };
                KeyValue::Float(f64::from_bits(bits))
            }
            KeyKind::Text | KeyKind::Bytes => {
                let mut raw = Vec::new();
                loop {
                    let byte = take(&mut position, 1)?[0];
                    if byte != 0 {
                        raw.push(byte);
                        continue;
                    }
                    match take(&mut position, 1)?[0] {
                        ESCAPE => raw.push(0),
                        TERMINATOR => break,
                        _ => return Err(corrupt("bad escape")),
                    }
                }
                if column.kind == KeyKind::Text {
                    KeyValue::Text(
                        String::from_utf8(raw).map_err(|_| corrupt("text is not utf-8"))?,
                    )
                } else {
                    KeyValue::Bytes(raw)
                }
            }
            KeyKind::Numeric => {
                let flip = match take(&mut position, 1)?[0] {
                    NUMERIC_ZERO => {
                        values.push(KeyValue::Numeric(Decimal::ZERO));
                        continue;
                    }
                    NUMERIC_NEGATIVE => 0xFF,
                    NUMERIC_POSITIVE => 0x00,
                    _ => return Err(corrupt("bad numeric sign")),
                };
                let exponent = i32::from(take(&mut position, 1)?[0] ^ flip) - NUMERIC_EXPONENT_BIAS;
                let mut groups = Vec::new();
                loop {
                    let byte = take(&mut position, 1)?[0] ^ flip;
                    if byte == NUMERIC_TERMINATOR {
                        break;
                    }
                    if byte > 100 {
                        return Err(corrupt("bad numeric group"));
                    }
                    if groups.len() == NUMERIC_GROUPS_MAX {
                        return Err(corrupt("numeric out of range"));
                    }
                    groups.push(byte - 1);
                }
                KeyValue::Numeric(
                    numeric_from_groups(flip != 0, exponent, &groups).map_err(corrupt)?,
                )
            }
        };
        values.push(value);
    }
    if position != bytes.len() {
        return Err(KeyError::Corrupt { column: columns.len(), detail: "trailing bytes" });
    }
    Ok(values)
}
