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
    encode_values(row.iter(), out);
}

/// `encode_row` of values given by reference (a layout's slots: the row's values and
/// NULLs, without cloning them).
pub fn encode_values<'a>(values: impl Iterator<Item = &'a Value>, out: &mut Vec<u8>) {
    for value in values {
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

/// Why a row's encoding is bad. Decoding works with this small error (a per-value
/// `Result<_, EngineError>` is a large value on every call of a scan) and turns it into
/// `EngineError::Corrupt` once, at the end.
#[derive(Clone, Copy, Debug)]
enum RowFault {
    Truncated,
    BadTag(u8),
    NotUtf8,
    NumericFlags(u32),
    NumericRoundTrip,
}

impl From<RowFault> for EngineError {
    #[cold]
    fn from(fault: RowFault) -> EngineError {
        corrupt(match fault {
            RowFault::Truncated => "truncated".to_string(),
            RowFault::BadTag(tag) => format!("bad value tag={tag}"),
            RowFault::NotUtf8 => "text is not utf-8".to_string(),
            RowFault::NumericFlags(flags) => format!("bad numeric flags={flags:#010x}"),
            RowFault::NumericRoundTrip => "numeric does not round-trip".to_string(),
        })
    }
}

fn take<'a>(
    bytes: &'a [u8],
    position: &mut usize,
    length: usize,
) -> std::result::Result<&'a [u8], RowFault> {
    let end = position.checked_add(length).ok_or(RowFault::Truncated)?;
    let slice = bytes.get(*position..end).ok_or(RowFault::Truncated)?;
    *position = end;
    Ok(slice)
}

fn take_array<const LENGTH: usize>(
    bytes: &[u8],
    position: &mut usize,
) -> std::result::Result<[u8; LENGTH], RowFault> {
    Ok(take(bytes, position, LENGTH)?.try_into().expect("LENGTH bytes"))
}

fn take_length(bytes: &[u8], position: &mut usize) -> std::result::Result<usize, RowFault> {
    Ok(usize::try_from(u32::from_le_bytes(take_array(bytes, position)?)).expect("fits"))
}

pub fn decode_row(bytes: &[u8]) -> Result<Row> {
    decode_row_columns(bytes, None)
}

/// `decode_row`, decoding only the columns marked in `columns` (None: all); the others read
/// as NULL without a copy of their bytes. A scan that feeds a join or an aggregate reads a
/// few of a row's columns, and copying every text column was most of its cost.
pub fn decode_row_columns(bytes: &[u8], columns: Option<&[bool]>) -> Result<Row> {
    Ok(decode_row_faults(bytes, columns)?)
}

fn decode_row_faults(bytes: &[u8], columns: Option<&[bool]>) -> std::result::Result<Row, RowFault> {
    let mut row = Vec::with_capacity(columns.map_or(0, <[bool]>::len));
    walk_values(bytes, columns, |value| row.push(value.unwrap_or(Value::Null)))?;
    Ok(row)
}

/// The checks of `decode_row_columns` without building the row, for a reader that needs
/// none of its values.
pub fn check_row_columns(bytes: &[u8], columns: Option<&[bool]>) -> Result<()> {
    Ok(walk_values(bytes, columns, drop)?)
}

/// Walks a row's values in order: decodes those `columns` marks (None: all) and hands them
/// to `visit`; skips the others (their lengths still checked) and hands over None.
fn walk_values(
    bytes: &[u8],
    columns: Option<&[bool]>,
    mut visit: impl FnMut(Option<Value>),
) -> std::result::Result<(), RowFault> {
    let mut position = 0;
    let mut column = 0;
    while position < bytes.len() {
        let wanted = columns.is_none_or(|columns| columns.get(column).copied().unwrap_or(true));
        if wanted {
            visit(Some(decode_value(bytes, &mut position)?));
        } else {
            skip_value(bytes, &mut position)?;
            visit(None);
        }
        column += 1;
    }
    Ok(())
}

fn decode_value(bytes: &[u8], position: &mut usize) -> std::result::Result<Value, RowFault> {
    let [tag] = take_array(bytes, position)?;
    Ok(match tag {
        0 => Value::Null,
        1 => Value::Bool(take_array::<1>(bytes, position)?[0] != 0),
        2 => Value::Int(i64::from_le_bytes(take_array(bytes, position)?)),
        3 => Value::Float(f64::from_le_bytes(take_array(bytes, position)?)),
        4 | 5 => {
            let length = take_length(bytes, position)?;
            let raw = take(bytes, position, length)?.to_vec();
            if tag == 4 {
                Value::Text(String::from_utf8(raw).map_err(|_| RowFault::NotUtf8)?)
            } else {
                Value::Bytes(raw)
            }
        }
        6 => Value::Numeric(decode_numeric(take_array(bytes, position)?)?),
        other => return Err(RowFault::BadTag(other)),
    })
}

/// Moves past one encoded value without decoding it (its length is still checked).
fn skip_value(bytes: &[u8], position: &mut usize) -> std::result::Result<(), RowFault> {
    let [tag] = take_array(bytes, position)?;
    let length = match tag {
        0 => 0,
        1 => 1,
        2 | 3 => 8,
        4 | 5 => take_length(bytes, position)?,
        6 => 16,
        other => return Err(RowFault::BadTag(other)),
    };
    take(bytes, position, length)?;
    Ok(())
}

/// `Decimal::deserialize` masks unknown flag bits and rescales a scale above 28 rather than
/// failing: accept only what `serialize` writes.
fn decode_numeric(raw: [u8; 16]) -> std::result::Result<Decimal, RowFault> {
    let flags = u32::from_le_bytes(raw[..4].try_into().expect("4"));
    let scale = (flags >> 16) & 0xFF;
    if flags & !0x80FF_0000 != 0 || scale > Decimal::MAX_SCALE {
        return Err(RowFault::NumericFlags(flags));
    }
    let number = Decimal::deserialize(raw);
    if number.serialize() != raw {
        return Err(RowFault::NumericRoundTrip);
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
    let mut versions = Versions::new(bytes);
    while let Some(version) = versions.next_version() {
        if !visit(version.xmin, version.xmax, version.row)? {
            return Ok(false);
        }
    }
    versions.finish()?;
    Ok(true)
}

/// One encoded version, borrowing its row bytes.
#[derive(Clone, Copy, Debug)]
pub struct VersionRef<'a> {
    pub xmin: TxnId,
    pub xmax: TxnId,
    pub row: &'a [u8],
}

/// The encoded versions of a primary-key entry, newest first, parsed one at a time. A scan
/// calls this for every entry: each step returns a small `Option` (a malformed encoding
/// stops the walk and is reported once, by `finish`) instead of a `Result` the size of
/// `EngineError` per field read, which the row-scan profile showed as stack traffic.
pub struct Versions<'a> {
    bytes: &'a [u8],
    position: usize,
    /// Versions left to read; None until the count is read.
    remaining: Option<u32>,
    malformed: bool,
}

impl<'a> Versions<'a> {
    pub fn new(bytes: &'a [u8]) -> Versions<'a> {
        Versions { bytes, position: 0, remaining: None, malformed: false }
    }

    fn take(&mut self, length: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.position..self.position.checked_add(length)?)?;
        self.position += length;
        Some(slice)
    }

    fn take_u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }

    fn take_u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn parse_next(&mut self) -> Option<VersionRef<'a>> {
        let remaining = match self.remaining {
            Some(remaining) => remaining,
            None => self.take_u32()?,
        };
        if remaining == 0 {
            self.remaining = Some(0);
            return None;
        }
        let xmin = self.take_u64()?;
        let xmax = self.take_u64()?;
        let length = usize::try_from(self.take_u32()?).expect("fits");
        let row = self.take(length)?;
        self.remaining = Some(remaining - 1);
        Some(VersionRef { xmin, xmax, row })
    }

    /// The next version; None after the last or at a malformed encoding (see `finish`).
    pub fn next_version(&mut self) -> Option<VersionRef<'a>> {
        if self.malformed {
            return None;
        }
        let version = self.parse_next();
        if version.is_none() && self.remaining != Some(0) {
            self.malformed = true;
        }
        version
    }

    /// After `next_version` returned None: whether the encoding was whole, without bytes
    /// after its last version.
    pub fn finish(&self) -> Result<()> {
        if self.malformed {
            return Err(corrupt("truncated"));
        }
        assert_eq!(self.remaining, Some(0), "finish follows the last version");
        if self.position != self.bytes.len() {
            return Err(corrupt("trailing bytes after versions"));
        }
        Ok(())
    }
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
    fn versions_walk_newest_first_and_reject_malformed_encodings() {
        let versions = vec![
            Version { xmin: 9, xmax: 0, row: vec![2, 1, 0, 0, 0, 0, 0, 0, 0] },
            Version { xmin: 5, xmax: 9, row: Vec::new() },
            Version { xmin: 3, xmax: 5, row: vec![0] },
        ];
        let bytes = encode_versions(&versions);
        assert_eq!(decode_versions(&bytes).expect("decodes"), versions);
        // Stopping at the first version checks nothing after it.
        let mut walk = Versions::new(&bytes);
        let first = walk.next_version().expect("a first version");
        assert_eq!((first.xmin, first.xmax, first.row), (9, 0, versions[0].row.as_slice()));
        // Every cut is an error, and so is a byte after the last version.
        for cut in 0..bytes.len() {
            assert!(decode_versions(&bytes[..cut]).is_err(), "cut={cut}");
            let mut walk = Versions::new(&bytes[..cut]);
            while walk.next_version().is_some() {}
            assert!(walk.finish().is_err(), "cut={cut}");
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(decode_versions(&trailing).is_err());
        // No versions at all.
        assert_eq!(decode_versions(&encode_versions(&[])).expect("decodes"), Vec::new());
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
