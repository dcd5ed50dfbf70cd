//! Values in PostgreSQL's binary format (each type's send and receive functions): results
//! and parameters on the wire (tierdb-server's wire.rs) and the fields of COPY's binary
//! format (session/copy_binary.rs).
//!
//! Binary formats (all big-endian):
//!
//! | type | layout |
//! |---|---|
//! | bool | 1 byte (0 or 1) |
//! | int2 / int4 / int8 | 2 / 4 / 8 bytes two's complement |
//! | oid | 4 bytes unsigned |
//! | float4 / float8 | IEEE 754 bits, 4 / 8 bytes |
//! | text, varchar, bpchar, name, json | UTF-8 bytes (bpchar keeps its padding) |
//! | jsonb | version byte 1, then the text |
//! | bytea | raw bytes |
//! | date | int4 days since 2000-01-01 |
//! | timestamp, timestamptz | int8 microseconds since 2000-01-01 00:00:00 (UTC for tz) |
//! | numeric | ndigits i16, weight i16, sign u16 (0x0000 +, 0x4000 -), dscale u16, then ndigits base-10000 digits i16 |
//! | arrays | ndim, has-nulls flag, element type OID, length and lower bound, each element as length and its binary form |

use std::sync::Arc;

use rust_decimal::Decimal;

use super::{ArrayValue, Datum, SqlType};
use crate::error::{Result, SqlError};

/// The binary form of a value of type `ty` (its type's send function), None for NULL. An
/// integer outside its column type's range (the SQL layer checks ranges, so none should
/// reach here) is 22003, never a wrong value on the wire.
pub fn binary_send(datum: &Datum, ty: &SqlType) -> Result<Option<Vec<u8>>> {
    let out_of_range = || SqlError::out_of_range(ty.message_name());
    Ok(Some(match (datum, ty) {
        (Datum::Bool(flag), _) => vec![u8::from(*flag)],
        (Datum::Int(value), SqlType::Int2) => {
            i16::try_from(*value).map_err(|_| out_of_range())?.to_be_bytes().to_vec()
        }
        (Datum::Int(value), SqlType::Int4) => {
            i32::try_from(*value).map_err(|_| out_of_range())?.to_be_bytes().to_vec()
        }
        (Datum::Object(object), _) => object.oid.to_be_bytes().to_vec(),
        // jsonb's binary form: version 1, then the text.
        (Datum::Jsonb(value), _) => [&[1u8][..], value.output().as_bytes()].concat(),
        // jsonpath's too.
        (Datum::Text(text), SqlType::JsonPath) => [&[1u8][..], text.as_bytes()].concat(),
        (Datum::Int(value), SqlType::Oid | SqlType::Object(_)) => {
            u32::try_from(*value).map_err(|_| out_of_range())?.to_be_bytes().to_vec()
        }
        (Datum::Int(value), _) => value.to_be_bytes().to_vec(),
        (Datum::Float(value), SqlType::Float4) => {
            #[allow(clippy::cast_possible_truncation)]
            let single = *value as f32;
            single.to_be_bytes().to_vec()
        }
        (Datum::Float(value), _) => value.to_be_bytes().to_vec(),
        (Datum::Numeric(value), _) => numeric_send(value),
        (Datum::Text(text), _) => text.as_bytes().to_vec(),
        (Datum::Bytes(bytes), _) => bytes.clone(),
        (Datum::Uuid(bytes), _) => bytes.to_vec(),
        (Datum::Bit(bits), _) => super::bit_send(bits),
        (Datum::Interval(interval), _) => interval.send(),
        (Datum::Time(micros), _) => micros.to_be_bytes().to_vec(),
        (Datum::Vector(elements), _) => super::vector_send(elements),
        (Datum::HalfVec(elements), _) => super::halfvec_send(elements),
        (Datum::SparseVec(value), _) => super::sparsevec_send(value),
        (Datum::Array(array), _) => encode_array(array, ty)?,
        (Datum::Date(days), _) => days.to_be_bytes().to_vec(),
        (Datum::Timestamp(micros) | Datum::TimestampTz(micros), _) => micros.to_be_bytes().to_vec(),
        (Datum::Null, _) => return Ok(None),
    }))
}

/// A count in a numeric's binary layout: a rust_decimal has at most 29 significant digits
/// (8 base-10000 groups before the point, 7 after) and a scale of at most 28, so every
/// count fits 16 bits.
fn numeric_count<T: TryFrom<usize>>(count: usize) -> T {
    assert!(count <= 32, "a rust_decimal has at most 29 digits: {count}");
    T::try_from(count).ok().expect("32 fits 16 bits")
}

/// PostgreSQL's binary numeric: base-10000 digits around the decimal point.
pub fn numeric_send(value: &Decimal) -> Vec<u8> {
    let scale = value.scale();
    let text = value.abs().to_string();
    let (integer, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let integer = integer.trim_start_matches('0');
    // Integer part: groups of 4 from the right.
    let mut integer_groups = Vec::new();
    let mut end = integer.len();
    while end > 0 {
        let start = end.saturating_sub(4);
        // At most four decimal digits: 0..=9999.
        integer_groups.push(integer[start..end].parse::<i16>().expect("four digits fit i16"));
        end = start;
    }
    integer_groups.reverse();
    let mut fraction_text = fraction.to_string();
    while fraction_text.len() % 4 != 0 {
        fraction_text.push('0');
    }
    let fraction_groups: Vec<i16> = fraction_text
        .as_bytes()
        .chunks(4)
        .map(|chunk| {
            // Four ASCII digits of a decimal's text: 0..=9999.
            let digits = std::str::from_utf8(chunk).expect("a decimal's text is ASCII");
            digits.parse().expect("four digits fit i16")
        })
        .collect();
    let mut digits: Vec<i16> = integer_groups.clone();
    digits.extend(&fraction_groups);
    let mut weight = numeric_count::<i16>(integer_groups.len()) - 1;
    // Strip leading zero groups (adjusting the weight) and trailing zero groups.
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    let mut out = Vec::with_capacity(8 + digits.len() * 2);
    out.extend_from_slice(&numeric_count::<i16>(digits.len()).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    let sign: u16 = if value.is_sign_negative() && !value.is_zero() { 0x4000 } else { 0 };
    out.extend_from_slice(&sign.to_be_bytes());
    let scale = usize::try_from(scale).expect("a u32 fits usize on 64-bit targets");
    out.extend_from_slice(&numeric_count::<u16>(scale).to_be_bytes());
    for digit in digits {
        out.extend_from_slice(&digit.to_be_bytes());
    }
    out
}

/// array_send for one dimension: ndim, has-nulls flag, element type OID, then length and
/// lower bound, then each element as a length (-1 for NULL) and its binary form.
fn encode_array(array: &ArrayValue, ty: &SqlType) -> Result<Vec<u8>> {
    let element = ty.array_element().unwrap_or(&SqlType::Text);
    let too_large = || SqlError::new("54000", "array too large to send");
    let count = i32::try_from(array.elements.len()).map_err(|_| too_large())?;
    let has_nulls = array.elements.iter().any(Datum::is_null);
    let mut out = Vec::new();
    out.extend_from_slice(&i32::from(count > 0).to_be_bytes());
    out.extend_from_slice(&i32::from(has_nulls).to_be_bytes());
    out.extend_from_slice(&element.oid().to_be_bytes());
    if count > 0 {
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&array.lower.to_be_bytes());
    }
    for item in &array.elements {
        match binary_send(item, element)? {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(bytes) => {
                let length = i32::try_from(bytes.len()).map_err(|_| too_large())?;
                out.extend_from_slice(&length.to_be_bytes());
                out.extend_from_slice(&bytes);
            }
        }
    }
    Ok(out)
}

/// array_recv for at most one dimension, with PostgreSQL's checks (22P03 for a bad
/// layout, 42804 for another element type); more dimensions are refused (0A000).
fn decode_array(bytes: &[u8], ty: &SqlType) -> Result<Datum> {
    let element = ty.array_element().expect("an array type");
    let mut offset = 0usize;
    let take = |offset: &mut usize, length: usize| -> Result<&[u8]> {
        let end = offset.checked_add(length).ok_or_else(|| bad_binary(ty))?;
        let slice = bytes.get(*offset..end).ok_or_else(|| bad_binary(ty))?;
        *offset = end;
        Ok(slice)
    };
    let word = |offset: &mut usize| -> Result<i32> {
        Ok(i32::from_be_bytes(take(offset, 4)?.try_into().expect("four bytes")))
    };
    let dimensions = word(&mut offset)?;
    let _has_nulls = word(&mut offset)?;
    let element_oid = word(&mut offset)?;
    if dimensions > 1 {
        return Err(SqlError::new("0A000", "multidimensional arrays are not supported"));
    }
    if dimensions < 0 {
        return Err(SqlError::new("22P03", format!("invalid number of dimensions: {dimensions}")));
    }
    if u32::try_from(element_oid).ok() != Some(element.oid()) {
        return Err(SqlError::new(
            "42804",
            format!(
                "binary data has array element type {element_oid} instead of expected {}",
                element.oid()
            ),
        ));
    }
    let (count, lower) =
        if dimensions == 1 { (word(&mut offset)?, word(&mut offset)?) } else { (0, 1) };
    let count = usize::try_from(count).map_err(|_| bad_binary(ty))?;
    let mut elements = Vec::with_capacity(count.min(bytes.len() / 4));
    for _ in 0..count {
        let length = word(&mut offset)?;
        if length == -1 {
            elements.push(Datum::Null);
            continue;
        }
        let length = usize::try_from(length).map_err(|_| bad_binary(ty))?;
        let body = take(&mut offset, length)?;
        elements.push(binary_receive(body, element)?);
    }
    if offset != bytes.len() {
        return Err(bad_binary(ty));
    }
    Ok(Datum::Array(std::sync::Arc::new(ArrayValue { lower, elements })))
}

fn bad_binary(ty: &SqlType) -> SqlError {
    SqlError::new(
        "22P03",
        format!("incorrect binary data format in bind parameter of type {}", ty.message_name()),
    )
}

/// Decodes the binary form of a value of type `ty` (its type's receive function): a
/// parameter sent in binary, a field of binary COPY.
pub fn binary_receive(bytes: &[u8], ty: &SqlType) -> Result<Datum> {
    let fixed = |length: usize| -> Result<&[u8]> {
        if bytes.len() == length {
            Ok(bytes)
        } else {
            Err(bad_binary(ty))
        }
    };
    Ok(match ty {
        // void_recv ignores its input.
        SqlType::Void => Datum::Text(String::new()),
        SqlType::Bool => Datum::Bool(fixed(1)?[0] != 0),
        SqlType::Int2 => {
            Datum::Int(i64::from(i16::from_be_bytes(fixed(2)?.try_into().expect("2"))))
        }
        SqlType::Int4 => {
            Datum::Int(i64::from(i32::from_be_bytes(fixed(4)?.try_into().expect("4"))))
        }
        SqlType::Oid => Datum::Int(i64::from(u32::from_be_bytes(fixed(4)?.try_into().expect("4")))),
        SqlType::Int8 => Datum::Int(i64::from_be_bytes(fixed(8)?.try_into().expect("8"))),
        SqlType::Float4 => {
            Datum::Float(f64::from(f32::from_be_bytes(fixed(4)?.try_into().expect("4"))))
        }
        SqlType::Float8 => Datum::Float(f64::from_be_bytes(fixed(8)?.try_into().expect("8"))),
        SqlType::Date => Datum::Date(i32::from_be_bytes(fixed(4)?.try_into().expect("4"))),
        SqlType::Timestamp => {
            Datum::Timestamp(i64::from_be_bytes(fixed(8)?.try_into().expect("8")))
        }
        SqlType::TimestampTz => {
            Datum::TimestampTz(i64::from_be_bytes(fixed(8)?.try_into().expect("8")))
        }
        SqlType::Bytea => Datum::Bytes(bytes.to_vec()),
        SqlType::Uuid => super::uuid_from_binary(bytes)?,
        SqlType::Interval => Datum::Interval(super::Interval::receive(bytes)?),
        SqlType::Time => {
            Datum::Time(super::receive_time(i64::from_be_bytes(fixed(8)?.try_into().expect("8")))?)
        }
        // The binder types such parameters as text (their names resolve in a cast).
        SqlType::Object(kind) => {
            return Err(SqlError::unsupported(format!(
                "binary parameters of type {} are not supported",
                kind.type_name()
            )))
        }
        SqlType::Json => super::parse_text(utf8(bytes)?, ty)?,
        SqlType::JsonPath => match bytes.split_first() {
            Some((1, text)) => super::parse_text(utf8(text)?, ty)?,
            _ => return Err(SqlError::new("22P03", "unsupported jsonpath version number")),
        },
        SqlType::Jsonb => match bytes.split_first() {
            Some((1, text)) => super::parse_text(utf8(text)?, ty)?,
            _ => return Err(SqlError::new("22P03", "unsupported jsonb version number")),
        },
        SqlType::Vector(dimensions) => super::vector_receive(bytes, *dimensions)?,
        SqlType::HalfVec(dimensions) => super::halfvec_receive(bytes, *dimensions)?,
        SqlType::SparseVec(dimensions) => super::sparsevec_receive(bytes, *dimensions)?,
        SqlType::Bit(_) | SqlType::VarBit(_) => {
            super::apply_bit_typmod(&Arc::new(super::bit_receive(bytes)?), ty, false)?
        }
        SqlType::Array(_) | SqlType::Int2Vector | SqlType::OidVector => decode_array(bytes, ty)?,
        SqlType::Numeric { .. } => {
            Datum::Numeric(numeric_receive(bytes).ok_or_else(|| bad_binary(ty))?)
        }
        SqlType::Text
        | SqlType::Varchar(_)
        | SqlType::Char(_)
        | SqlType::Name
        | SqlType::Unknown => Datum::Text(utf8(bytes)?.to_string()),
    })
}

fn utf8(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes)
        .map_err(|_| SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\""))
}

pub fn numeric_receive(bytes: &[u8]) -> Option<Decimal> {
    let word = |index: usize| -> Option<u16> {
        Some(u16::from_be_bytes(bytes.get(index..index + 2)?.try_into().ok()?))
    };
    let ndigits = usize::from(word(0)?);
    let weight = i64::from(i16::from_be_bytes(word(2)?.to_be_bytes()));
    let sign = word(4)?;
    let scale = u32::from(word(6)?);
    if bytes.len() != 8 + ndigits * 2 || sign == 0xC000 || scale > 28 {
        return None;
    }
    let mut text = String::new();
    for index in 0..ndigits {
        let digit = word(8 + index * 2)?;
        if digit >= 10_000 {
            return None;
        }
        text.push_str(&format!("{digit:04}"));
    }
    // The digits represent digit groups with the first at position `weight`.
    let integer_groups = weight + 1;
    let digits_len = i64::try_from(ndigits).ok()?;
    let mut value = if ndigits == 0 {
        "0".to_string()
    } else if integer_groups <= 0 {
        format!("0.{}{}", "0000".repeat(usize::try_from(-integer_groups).ok()?), text)
    } else if integer_groups >= digits_len {
        format!("{}{}", text, "0000".repeat(usize::try_from(integer_groups - digits_len).ok()?))
    } else {
        let split = usize::try_from(integer_groups * 4).ok()?;
        format!("{}.{}", &text[..split], &text[split..])
    };
    if sign == 0x4000 {
        value.insert(0, '-');
    }
    let mut decimal: Decimal =
        value.parse().ok().or_else(|| Decimal::from_scientific(&value).ok())?;
    decimal = decimal.round_dp(scale);
    decimal.rescale(scale);
    Some(decimal)
}
