//! Row and version encodings.
//!
//! A row is a list of typed values. Its storage encoding, per column: tag u8 (0 NULL,
//! 1 boolean, 2 integer, 3 float, 4 text, 5 bytes, 6 numeric), then 1 byte (boolean), 8 bytes
//! little-endian (integer, float), u32 length and bytes (text, bytes) or the 16 bytes of
//! `Decimal::serialize` (numeric: flags u32 with the scale in bits 16..24 and the sign in bit
//! 31, then the 96-bit mantissa, all little-endian). Unlike the key encoding, the row keeps a
//! numeric's scale: 1.50 reads back as 1.50.
//!
//! A primary-key entry holds every version of its row, newest first: count u32, then per
//! version xmin u64, xmax u64 (0: not deleted), row length u32, row.

use tierdb_access::{Decimal, KeyValue};

use crate::error::{EngineError, Result};
use crate::txn::TxnId;

pub type Value = KeyValue;
pub type Row = Vec<Value>;

fn corrupt(detail: impl Into<String>) -> EngineError {
    EngineError::Corrupt { what: "row", detail: detail.into() }
}

pub fn encode_row(row: &[Value], out: &mut Vec<u8>) {
    for value in row {
        match value {
            Value::Null => out.push(0),
            Value::Bool(flag) => out.extend_from_slice(&[1, u8::from(*flag)]),
            Value::Int(number) => {
                out.push(2);
                out.extend_from_slice(&number.to_le_bytes());
            }
            Value::Float(number) => {
                out.push(3);
                out.extend_from_slice(&number.to_le_bytes());
            }
            Value::Text(text) => {
                out.push(4);
                out.extend_from_slice(&u32::try_from(text.len()).expect("fits").to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            Value::Bytes(bytes) => {
                out.push(5);
                out.extend_from_slice(&u32::try_from(bytes.len()).expect("fits").to_le_bytes());
                out.extend_from_slice(bytes);
            }
            Value::Numeric(number) => {
                out.push(6);
                out.extend_from_slice(&number.serialize());
            }
        }
    }
}

fn take<'a>(bytes: &'a [u8], position: &mut usize, length: usize) -> Result<&'a [u8]> {
    let slice = bytes.get(*position..*position + length).ok_or_else(|| corrupt("truncated"))?;
    *position += length;
    Ok(slice)
}

pub fn decode_row(bytes: &[u8]) -> Result<Row> {
    decode_row_columns(bytes, None)
}

/// `decode_row`, decoding only the columns marked in `columns` (None: all); the others read
/// as NULL without a copy of their bytes. A scan that feeds a join or an aggregate reads a
/// few of a row's columns, and copying every text column was most of its cost.
pub fn decode_row_columns(bytes: &[u8], columns: Option<&[bool]>) -> Result<Row> {
    let mut row = Vec::with_capacity(columns.map_or(0, <[bool]>::len));
    let mut position = 0;
    while position < bytes.len() {
        let wanted = columns.is_none_or(|columns| columns.get(row.len()).copied().unwrap_or(true));
        if !wanted {
            skip_value(bytes, &mut position)?;
            row.push(Value::Null);
            continue;
        }
        let tag = take(bytes, &mut position, 1)?[0];
        let value = match tag {
            0 => Value::Null,
            1 => Value::Bool(take(bytes, &mut position, 1)?[0] != 0),
            2 => Value::Int(i64::from_le_bytes(
                take(bytes, &mut position, 8)?.try_into().expect("8"),
            )),
            3 => Value::Float(f64::from_le_bytes(
                take(bytes, &mut position, 8)?.try_into().expect("8"),
            )),
            4 | 5 => {
                let length = usize::try_from(u32::from_le_bytes(
                    take(bytes, &mut position, 4)?.try_into().expect("4"),
                ))
                .expect("fits");
                let raw = take(bytes, &mut position, length)?.to_vec();
                if tag == 4 {
                    Value::Text(String::from_utf8(raw).map_err(|_| corrupt("text is not utf-8"))?)
                } else {
                    Value::Bytes(raw)
                }
            }
            6 => Value::Numeric(decode_numeric(
                take(bytes, &mut position, 16)?.try_into().expect("16"),
            )?),
            other => return Err(corrupt(format!("bad value tag={other}"))),
        };
        row.push(value);
    }
    Ok(row)
}

/// Moves past one encoded value without decoding it (its length is still checked).
fn skip_value(bytes: &[u8], position: &mut usize) -> Result<()> {
    let tag = take(bytes, position, 1)?[0];
    let length = match tag {
        0 => 0,
        1 => 1,
        2 | 3 => 8,
        4 | 5 => {
            usize::try_from(u32::from_le_bytes(take(bytes, position, 4)?.try_into().expect("4")))
                .expect("fits")
        }
        6 => 16,
        other => return Err(corrupt(format!("bad value tag={other}"))),
    };
    take(bytes, position, length)?;
    Ok(())
}

/// `Decimal::deserialize` masks unknown flag bits and rescales a scale above 28 rather than
/// failing: accept only what `serialize` writes.
fn decode_numeric(raw: [u8; 16]) -> Result<Decimal> {
    let flags = u32::from_le_bytes(raw[..4].try_into().expect("4"));
    let scale = (flags >> 16) & 0xFF;
    if flags & !0x80FF_0000 != 0 || scale > Decimal::MAX_SCALE {
        return Err(corrupt(format!("bad numeric flags={flags:#010x}")));
    }
    let number = Decimal::deserialize(raw);
    if number.serialize() != raw {
        return Err(corrupt("numeric does not round-trip"));
    }
    Ok(number)
}

/// One version of a row.
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    pub xmin: TxnId,
    pub xmax: TxnId,
    pub row: Vec<u8>,
}

pub fn encode_versions(versions: &[Version]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        2 + versions.iter().map(|version| 20 + version.row.len()).sum::<usize>(),
    );
    out.extend_from_slice(
        &u32::try_from(versions.len()).expect("bounded by the value limit").to_le_bytes(),
    );
    for version in versions {
        out.extend_from_slice(&version.xmin.to_le_bytes());
        out.extend_from_slice(&version.xmax.to_le_bytes());
        out.extend_from_slice(&u32::try_from(version.row.len()).expect("fits").to_le_bytes());
        out.extend_from_slice(&version.row);
    }
    out
}

pub fn decode_versions(bytes: &[u8]) -> Result<Vec<Version>> {
    let mut versions = Vec::new();
    let complete = walk_versions(bytes, |xmin, xmax, row| {
        versions.push(Version { xmin, xmax, row: row.to_vec() });
        Ok(true)
    })?;
    assert!(complete, "the visitor never stops early");
    Ok(versions)
}

/// Visits the encoded versions newest first as (xmin, xmax, row bytes), borrowing the rows:
/// readers look for one visible version and decode only that. `visit` returns whether to
/// go on; the result says whether every version was visited (and the encoding then checked
/// to its end).
pub fn walk_versions(
    bytes: &[u8],
    mut visit: impl FnMut(TxnId, TxnId, &[u8]) -> Result<bool>,
) -> Result<bool> {
    let mut position = 0;
    let count = u32::from_le_bytes(take(bytes, &mut position, 4)?.try_into().expect("4"));
    for _ in 0..count {
        let xmin = u64::from_le_bytes(take(bytes, &mut position, 8)?.try_into().expect("8"));
        let xmax = u64::from_le_bytes(take(bytes, &mut position, 8)?.try_into().expect("8"));
        let length = usize::try_from(u32::from_le_bytes(
            take(bytes, &mut position, 4)?.try_into().expect("4"),
        ))
        .expect("fits");
        if !visit(xmin, xmax, take(bytes, &mut position, length)?)? {
            return Ok(false);
        }
    }
    if position != bytes.len() {
        return Err(corrupt("trailing bytes after versions"));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(text: &str) -> Value {
        Value::Numeric(text.parse().expect("numeric literal"))
    }

    #[test]
    fn rows_keep_numeric_scale() {
        let row = vec![
            numeric("1.50"),
            numeric("-0.000"),
            numeric("79228162514264337593543950335"),
            numeric("-0.0000000000000000000000000001"),
            Value::Null,
            numeric("100"),
        ];
        let mut bytes = Vec::new();
        encode_row(&row, &mut bytes);
        let back = decode_row(&bytes).expect("decodes");
        assert_eq!(back, row);
        for (original, decoded) in row.iter().zip(&back) {
            if let (Value::Numeric(original), Value::Numeric(decoded)) = (original, decoded) {
                assert_eq!(decoded.to_string(), original.to_string());
                assert_eq!(decoded.scale(), original.scale());
            }
        }
    }

    #[test]
    fn projected_decode_reads_only_the_marked_columns() {
        let row = vec![
            Value::Int(7),
            Value::Text("skipped".to_string()),
            Value::Bytes(vec![1, 2, 3]),
            numeric("2.50"),
            Value::Null,
            Value::Bool(true),
        ];
        let mut bytes = Vec::new();
        encode_row(&row, &mut bytes);
        let mask = [true, false, true, false, false, true];
        let projected = decode_row_columns(&bytes, Some(&mask)).expect("decodes");
        assert_eq!(projected.len(), row.len());
        for ((original, decoded), keep) in row.iter().zip(&projected).zip(mask) {
            let expected = if keep { original.clone() } else { Value::Null };
            assert_eq!(*decoded, expected);
        }
        // A short mask decodes the columns past it; skipping still checks lengths.
        assert_eq!(decode_row_columns(&bytes, Some(&[false])).expect("decodes")[1..], row[1..]);
        // Cut inside the skipped text (after the 9 bytes of the integer, its tag and length).
        let inside_text = 9 + 5 + 3;
        assert!(decode_row_columns(&bytes[..inside_text], Some(&[false; 6])).is_err());
    }

    #[test]
    fn corrupt_numeric_is_an_error() {
        let mut bytes = Vec::new();
        encode_row(&[numeric("1.50")], &mut bytes);
        // Scale byte (flags bits 16..24) above 28, unknown flag bits, truncation.
        for (offset, value) in [(3, 29), (3, 0xFF), (1, 0x01), (2, 0x80), (4, 0x40)] {
            let mut corrupt = bytes.clone();
            corrupt[offset] = value;
            assert!(decode_row(&corrupt).is_err(), "offset={offset} value={value:#x}");
        }
        for cut in 1..bytes.len() {
            assert!(decode_row(&bytes[..cut]).is_err(), "cut={cut}");
        }
    }

    #[test]
    fn garbage_numeric_never_panics() {
        // Every flag byte value at each flag position, with a full mantissa.
        for position in 1..5 {
            for value in 0..=u8::MAX {
                let mut bytes = vec![6];
                bytes.extend_from_slice(&[0xFF; 16]);
                bytes[1..5].fill(0);
                bytes[position] = value;
                let _ = decode_row(&bytes);
            }
        }
    }
}
