//! Row and version encodings.
//!
//! A row is a list of typed values. Its storage encoding, per column: tag u8 (0 NULL,
//! 1 boolean, 2 integer, 3 float, 4 text, 5 bytes), then 1 byte (boolean), 8 bytes
//! little-endian (integer, float) or u32 length and bytes (text, bytes).
//!
//! A primary-key entry holds every version of its row, newest first: count u32, then per
//! version xmin u64, xmax u64 (0: not deleted), row length u32, row.

use tierdb_access::KeyValue;

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
        }
    }
}

fn take<'a>(bytes: &'a [u8], position: &mut usize, length: usize) -> Result<&'a [u8]> {
    let slice = bytes.get(*position..*position + length).ok_or_else(|| corrupt("truncated"))?;
    *position += length;
    Ok(slice)
}

pub fn decode_row(bytes: &[u8]) -> Result<Row> {
    let mut row = Vec::new();
    let mut position = 0;
    while position < bytes.len() {
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
            other => return Err(corrupt(format!("bad value tag={other}"))),
        };
        row.push(value);
    }
    Ok(row)
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
    let mut position = 0;
    let count = u32::from_le_bytes(take(bytes, &mut position, 4)?.try_into().expect("4"));
    let mut versions = Vec::with_capacity(usize::try_from(count).expect("fits").min(1024));
    for _ in 0..count {
        let xmin = u64::from_le_bytes(take(bytes, &mut position, 8)?.try_into().expect("8"));
        let xmax = u64::from_le_bytes(take(bytes, &mut position, 8)?.try_into().expect("8"));
        let length = usize::try_from(u32::from_le_bytes(
            take(bytes, &mut position, 4)?.try_into().expect("4"),
        ))
        .expect("fits");
        versions.push(Version { xmin, xmax, row: take(bytes, &mut position, length)?.to_vec() });
    }
    if position != bytes.len() {
        return Err(corrupt("trailing bytes after versions"));
    }
    Ok(versions)
}
