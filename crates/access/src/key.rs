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
//!
//! A descending column has every byte of its encoding (marker included) inverted; because
//! each column's encoding is prefix-free, inversion reverses its order without disturbing the
//! columns after it. Text compares by bytes, as PostgreSQL's "C" collation does.

use std::cmp::Ordering;

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

/// Decodes a key encoded with the same columns. Floats come back canonical (-0 as 0, one NaN).
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
        };
        values.push(value);
    }
    if position != bytes.len() {
        return Err(KeyError::Corrupt { column: columns.len(), detail: "trailing bytes" });
    }
    Ok(values)
}
