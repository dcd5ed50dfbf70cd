//! PostgreSQL's bit strings, `bit(n)` and `bit varying(n)` (varbit.c): one value type for
//! both (`Datum::Bit`), as in PostgreSQL where they share their representation and most
//! operators. A value is a bit count and the bits packed most significant first, the unused
//! bits of the last byte zero (so equal values have equal bytes).
//!
//! Text input reads binary digits, or hexadecimal ones after an `x` (four bits each), with
//! an optional leading `b`; 22P02 names the first bad character. A typmod is applied as
//! PostgreSQL's length coercion functions `bit(bit, int, bool)` and `varbit(varbit, int,
//! bool)` do: an explicit cast pads with zeros or truncates, an assignment fails (22026 for
//! bit(n), 22001 for varbit(n)).
//!
//! Storage orders as bit_cmp does (the bytes compared as far as the shorter value's, then
//! the shorter bit count first), so that btree keys, which compare the stored bytes, range
//! scan correctly: each zero byte is written as 0x00 0x01, then the end mark 0x00 0x00,
//! then the bit count (u32, big-endian) for values whose bytes are equal.

use std::cmp::Ordering;
use std::sync::Arc;

use super::{Datum, SqlType};
use crate::error::{Result, SqlError};

/// pg_type's OIDs of bit, varbit and their array types.
pub const BIT_OID: u32 = 1560;
pub const BIT_ARRAY_OID: u32 = 1561;
pub const VARBIT_OID: u32 = 1562;
pub const VARBIT_ARRAY_OID: u32 = 1563;
/// PostgreSQL's largest typmod of bit(n) and varbit(n): MaxAttrSize (10 MB) in bits.
pub const BIT_TYPMOD_MAX: u32 = 10 * 1024 * 1024 * 8;
/// PostgreSQL's VARBITMAXLEN: the most bits a value holds.
const BIT_LENGTH_MAX: usize = i32::MAX as usize - 7;

/// A bit string: `length` bits packed most significant first, the unused bits zero.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BitString {
    length: usize,
    bytes: Vec<u8>,
}

impl BitString {
    /// `length` zero bits.
    pub fn zeros(length: usize) -> BitString {
        BitString { length, bytes: vec![0; length.div_ceil(8)] }
    }

    /// The bits of `bytes`, the first `length` of them (the rest are cleared).
    pub fn from_bytes(mut bytes: Vec<u8>, length: usize) -> BitString {
        assert!(bytes.len() == length.div_ceil(8), "{} bytes hold {length} bits", bytes.len());
        let mut bits = BitString { length, bytes: Vec::new() };
        if let Some(last) = bytes.last_mut() {
            *last &= last_byte_mask(length);
        }
        bits.bytes = bytes;
        bits
    }

    /// The bits of `bools` in order.
    pub fn from_bits(bools: impl ExactSizeIterator<Item = bool>) -> BitString {
        let mut bits = BitString::zeros(bools.len());
        for (index, bit) in bools.enumerate() {
            bits.set(index, bit);
        }
        bits
    }

    pub fn len(&self) -> usize {
        self.length
    }
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn get(&self, index: usize) -> bool {
        assert!(index < self.length);
        self.bytes[index / 8] & (0x80 >> (index % 8)) != 0
    }

    pub fn set(&mut self, index: usize, bit: bool) {
        assert!(index < self.length);
        let mask = 0x80 >> (index % 8);
        if bit {
            self.bytes[index / 8] |= mask;
        } else {
            self.bytes[index / 8] &= !mask;
        }
    }

    /// The bits from `start` (0-based), `length` of them (the range lies inside).
    pub fn slice(&self, start: usize, length: usize) -> BitString {
        assert!(start + length <= self.length);
        BitString::from_bits((start..start + length).map(|index| self.get(index)))
    }

    /// This value cut or padded with zeros to `length` bits.
    pub fn resized(&self, length: usize) -> BitString {
        let mut bytes = self.bytes.clone();
        bytes.resize(length.div_ceil(8), 0);
        BitString::from_bytes(bytes, length)
    }

    /// How many bits are set (bit_count).
    pub fn count_ones(&self) -> u64 {
        self.bytes.iter().map(|byte| u64::from(byte.count_ones())).sum()
    }
}

/// The mask of the used bits of the last byte of a `length`-bit value.
fn last_byte_mask(length: usize) -> u8 {
    match length % 8 {
        0 => 0xff,
        used => 0xff << (8 - used),
    }
}

/// bit_cmp: the bytes compared as far as the shorter value's, then the shorter first.
pub fn compare_bit_strings(a: &BitString, b: &BitString) -> Ordering {
    let common = a.bytes.len().min(b.bytes.len());
    a.bytes[..common].cmp(&b.bytes[..common]).then(a.length.cmp(&b.length))
}

/// The bit string of a `Datum::Bit` (the binder typed the value).
pub fn bit_string(datum: &Datum) -> Result<&BitString> {
    match datum {
        Datum::Bit(bits) => Ok(bits),
        other => Err(SqlError::internal(format!("expected a bit string, got {other:?}"))),
    }
}

pub fn bit_datum(bits: BitString) -> Datum {
    Datum::Bit(Arc::new(bits))
}

/// bit_in / varbit_in without a typmod: binary digits, or hexadecimal after `x`.
pub fn parse_bit_string(text: &str) -> Result<BitString> {
    let (hexadecimal, digits) = match text.as_bytes().first() {
        Some(b'x' | b'X') => (true, &text[1..]),
        Some(b'b' | b'B') => (false, &text[1..]),
        _ => (false, text),
    };
    let bits_per_digit = if hexadecimal { 4 } else { 1 };
    let length = digits.len().saturating_mul(bits_per_digit);
    if length > BIT_LENGTH_MAX {
        return Err(SqlError::new(
            "54000",
            format!("bit string length exceeds the maximum allowed ({BIT_LENGTH_MAX})"),
        ));
    }
    let mut bits = BitString::zeros(length);
    for (index, character) in digits.chars().enumerate() {
        if hexadecimal {
            let value = character.to_digit(16).ok_or_else(|| {
                SqlError::new("22P02", format!("\"{character}\" is not a valid hexadecimal digit"))
            })?;
            for offset in 0..4 {
                bits.set(index * 4 + offset, value & (8 >> offset) != 0);
            }
        } else {
            match character {
                '0' => {}
                '1' => bits.set(index, true),
                other => {
                    return Err(SqlError::new(
                        "22P02",
                        format!("\"{other}\" is not a valid binary digit"),
                    ))
                }
            }
        }
    }
    Ok(bits)
}

/// bit_out / varbit_out: one `0` or `1` per bit.
pub fn format_bit_string(bits: &BitString) -> String {
    (0..bits.len()).map(|index| if bits.get(index) { '1' } else { '0' }).collect()
}

/// The typmod of `bit(n)` / `bit varying(n)` (anybit_typmodin): 1 to 83,886,080 bits.
pub fn bit_typmod(type_name: &str, length: u64) -> Result<u32> {
    if length < 1 {
        return Err(SqlError::new(
            "22023",
            format!("length for type {type_name} must be at least 1"),
        ));
    }
    if length > u64::from(BIT_TYPMOD_MAX) {
        return Err(SqlError::new(
            "22023",
            format!("length for type {type_name} cannot exceed {BIT_TYPMOD_MAX}"),
        ));
    }
    Ok(u32::try_from(length).unwrap_or(BIT_TYPMOD_MAX))
}

/// PostgreSQL's `bit(bit, int4, bool)`: a value as `bit(length)`, padded or truncated when
/// `explicit`, else 22026 when its length differs.
pub fn cast_to_bit(bits: &Arc<BitString>, length: Option<u32>, explicit: bool) -> Result<Datum> {
    let Some(length) = length.map(|length| length as usize) else {
        return Ok(Datum::Bit(bits.clone()));
    };
    if bits.len() == length {
        return Ok(Datum::Bit(bits.clone()));
    }
    if !explicit {
        return Err(SqlError::new(
            "22026",
            format!("bit string length {} does not match type bit({length})", bits.len()),
        ));
    }
    Ok(bit_datum(bits.resized(length)))
}

/// PostgreSQL's `varbit(varbit, int4, bool)`: truncated when `explicit`, else 22001 when
/// longer than `length`.
pub fn cast_to_varbit(bits: &Arc<BitString>, length: Option<u32>, explicit: bool) -> Result<Datum> {
    let Some(length) = length.map(|length| length as usize) else {
        return Ok(Datum::Bit(bits.clone()));
    };
    if bits.len() <= length {
        return Ok(Datum::Bit(bits.clone()));
    }
    if !explicit {
        return Err(SqlError::new(
            "22001",
            format!("bit string too long for type bit varying({length})"),
        ));
    }
    Ok(bit_datum(bits.resized(length)))
}

/// A value as type `ty` (bit(n) or bit varying(n)) by the length coercion functions.
pub fn apply_bit_typmod(bits: &Arc<BitString>, ty: &SqlType, explicit: bool) -> Result<Datum> {
    match ty {
        SqlType::Bit(length) => cast_to_bit(bits, *length, explicit),
        SqlType::VarBit(length) => cast_to_varbit(bits, *length, explicit),
        other => {
            Err(SqlError::internal(format!("{} is not a bit string type", other.display_name())))
        }
    }
}

/// bitfromint4 / bitfromint8: the low `length` bits of `value` (`width` bits wide), the
/// bits above its width filled with its sign.
pub fn bit_from_integer(value: i64, width: u32, length: Option<u32>) -> Datum {
    let length = length.unwrap_or(1) as usize;
    let bits = (0..length).map(|index| {
        let position = length - 1 - index;
        if position >= width as usize {
            value < 0
        } else {
            (value >> position) & 1 == 1
        }
    });
    bit_datum(BitString::from_bits(bits))
}

/// bittoint4 / bittoint8: the bits as a `width`-bit two's complement integer (22003 when
/// there are more bits than that).
pub fn bit_to_integer(bits: &BitString, width: u32, type_name: &str) -> Result<i64> {
    if bits.len() > width as usize {
        return Err(SqlError::out_of_range(type_name));
    }
    let mut value: u64 = 0;
    for index in 0..bits.len() {
        value = (value << 1) | u64::from(bits.get(index));
    }
    Ok(match u32::try_from(value) {
        Ok(value) if width == 32 => i64::from(value.cast_signed()),
        _ => value.cast_signed(),
    })
}

/// The order-preserving stored form (see the module comment).
pub fn bit_storage_bytes(bits: &BitString) -> Vec<u8> {
    let mut out = Vec::with_capacity(bits.bytes.len() + 6);
    for &byte in &bits.bytes {
        out.push(byte);
        if byte == 0 {
            out.push(1);
        }
    }
    out.extend_from_slice(&[0, 0]);
    let length = u32::try_from(bits.length).unwrap_or(u32::MAX);
    out.extend_from_slice(&length.to_be_bytes());
    out
}

/// The datum of a bit column's stored bytes (written by `bit_storage_bytes`).
pub(super) fn bit_from_storage(stored: &[u8]) -> Datum {
    let mut bytes = Vec::with_capacity(stored.len());
    let mut index = 0;
    while index + 1 < stored.len() {
        let byte = stored[index];
        if byte == 0 && stored[index + 1] == 0 {
            break;
        }
        bytes.push(byte);
        index += if byte == 0 { 2 } else { 1 };
    }
    let length = stored
        .get(index + 2..index + 6)
        .and_then(|length| <[u8; 4]>::try_from(length).ok())
        .map(u32::from_be_bytes);
    let valid = length.is_some_and(|length| (length as usize).div_ceil(8) == bytes.len());
    debug_assert!(valid, "a stored bit string is well formed");
    match length {
        Some(length) if valid => bit_datum(BitString::from_bytes(bytes, length as usize)),
        _ => Datum::Null,
    }
}

/// bit_send / varbit_send: the bit count (int4) and the bytes.
pub fn bit_send(bits: &BitString) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + bits.bytes.len());
    out.extend_from_slice(&u32::try_from(bits.length).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&bits.bytes);
    out
}

/// bit_recv / varbit_recv, before the typmod is applied.
pub fn bit_receive(bytes: &[u8]) -> Result<BitString> {
    let invalid = || SqlError::new("22P03", "invalid length in external bit string");
    let (header, rest) = bytes.split_first_chunk::<4>().ok_or_else(invalid)?;
    let length = i32::from_be_bytes(*header);
    let length = usize::try_from(length).ok().filter(|&length| length <= BIT_LENGTH_MAX);
    let length = length.ok_or_else(invalid)?;
    if rest.len() != length.div_ceil(8) {
        return Err(SqlError::new("08P01", "insufficient data left in message"));
    }
    Ok(BitString::from_bytes(rest.to_vec(), length))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(text: &str) -> BitString {
        parse_bit_string(text).expect("bits")
    }

    #[test]
    fn reads_binary_and_hexadecimal() {
        assert_eq!(format_bit_string(&bits("0101")), "0101");
        assert_eq!(format_bit_string(&bits("b0101")), "0101");
        assert_eq!(format_bit_string(&bits("x1F")), "00011111");
        assert_eq!(format_bit_string(&bits("")), "");
        assert!(parse_bit_string("012").is_err());
        assert!(parse_bit_string("x1G").is_err());
    }

    #[test]
    fn storage_orders_as_bit_cmp() {
        let values =
            ["", "0", "00", "000000000", "0000000001", "1", "10", "100000000", "11", "x00", "xff"];
        for a in values {
            for b in values {
                let (a, b) = (bits(a), bits(b));
                let stored = bit_storage_bytes(&a).cmp(&bit_storage_bytes(&b));
                assert_eq!(stored, compare_bit_strings(&a, &b), "{a:?} {b:?}");
                assert_eq!(bit_from_storage(&bit_storage_bytes(&a)), bit_datum(a.clone()));
            }
        }
    }

    #[test]
    fn integers_sign_fill() {
        let text = |datum: Datum| format_bit_string(bit_string(&datum).expect("bits"));
        assert_eq!(text(bit_from_integer(5, 32, Some(8))), "00000101");
        assert_eq!(text(bit_from_integer(-1, 32, Some(4))), "1111");
        assert_eq!(
            text(bit_from_integer(-2, 32, Some(36))),
            "111111111111111111111111111111111110"
        );
        assert_eq!(
            bit_to_integer(&bits("11111111111111111111111111111111"), 32, "integer").ok(),
            Some(-1)
        );
        assert!(bit_to_integer(&bits("x100000000"), 32, "integer").is_err());
    }
}
