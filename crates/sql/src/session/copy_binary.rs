//! PostgreSQL's binary COPY format (COPY ... (FORMAT binary), asyncpg's
//! copy_records_to_table), for both directions:
//!
//! ```text
//!   header:  "PGCOPY\n\377\r\n\0"  int32 flags (0)  int32 extension length, extension bytes
//!   tuple:   int16 field count, then per field int32 length (-1: NULL) and the value's
//!            binary form (its type's send / receive, types/binary.rs)
//!   trailer: int16 -1
//! ```
//!
//! Reading checks what PostgreSQL's CopyFrom checks, with its messages (22P04): the
//! signature, the flags (OIDs and unknown critical bits refused), each tuple's field count,
//! field sizes, data after the trailer, and a stream cut inside a tuple.

use crate::error::{Result, SqlError};
use crate::types::{binary_receive, binary_send, cast, Datum, SqlType};

/// The binary format's 11-byte signature.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
/// Flags bit 16: the data has OIDs (refused, as PostgreSQL 12 and later do).
const FLAG_OIDS: u32 = 1 << 16;
/// A tuple's field count in the trailer.
const TRAILER_COUNT: i16 = -1;

/// A record of binary COPY: each field's bytes, None for NULL.
pub(super) type BinaryRecord = Vec<Option<Vec<u8>>>;

/// The header COPY TO writes: signature, no flags, no extension.
pub(super) fn header() -> Vec<u8> {
    let mut out = SIGNATURE.to_vec();
    out.extend_from_slice(&0u32.to_be_bytes());
    out.extend_from_slice(&0u32.to_be_bytes());
    out
}

/// The trailer COPY TO writes after the last tuple.
pub(super) fn trailer() -> Vec<u8> {
    TRAILER_COUNT.to_be_bytes().to_vec()
}

/// One row as a tuple of the binary format.
pub(super) fn tuple(row: &[Datum], types: &[SqlType]) -> Result<Vec<u8>> {
    let too_large = || SqlError::new("54000", "COPY row is too large for the binary format");
    let count = i16::try_from(row.len()).map_err(|_| too_large())?;
    let mut out = count.to_be_bytes().to_vec();
    for (datum, ty) in row.iter().zip(types) {
        match binary_send(datum, ty)? {
            Some(bytes) if !datum.is_null() => {
                let length = i32::try_from(bytes.len()).map_err(|_| too_large())?;
                out.extend_from_slice(&length.to_be_bytes());
                out.extend_from_slice(&bytes);
            }
            _ => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    Ok(out)
}

/// A field of binary COPY decoded for its column: the type's receive function, whose
/// "did not use the whole field" error PostgreSQL words without a parameter, then the
/// column's type modifier (numeric's scale and precision, a character type's length),
/// which PostgreSQL's receive functions apply as its input functions do.
pub(super) fn receive(bytes: &[u8], ty: &SqlType) -> Result<Datum> {
    let datum = binary_receive(bytes, ty).map_err(|error| {
        if error.sqlstate == "22P03" {
            SqlError::new("22P03", "incorrect binary data format")
        } else {
            error
        }
    })?;
    let unmodified = match ty {
        SqlType::Numeric { precision: Some(_), .. } => SqlType::numeric(),
        SqlType::Varchar(Some(_)) | SqlType::Char(_) => SqlType::Text,
        _ => return Ok(datum),
    };
    cast(datum, &unmodified, ty, false)
}

fn bad_format(message: impl Into<String>) -> SqlError {
    SqlError::new("22P04", message)
}

/// The state of reading a binary COPY stream piece by piece.
#[derive(Default)]
pub(super) struct BinaryReader {
    header_read: bool,
    /// The trailer was read: any more data is an error.
    ended: bool,
}

/// A cursor over data that may end inside a tuple.
struct Cursor<'a> {
    data: &'a [u8],
    position: usize,
}

impl Cursor<'_> {
    /// The next `length` bytes, None when the data ends first.
    fn take(&mut self, length: usize) -> Option<&[u8]> {
        let end = self.position.checked_add(length)?;
        let bytes = self.data.get(self.position..end)?;
        self.position = end;
        Some(bytes)
    }

    fn int16(&mut self) -> Option<i16> {
        self.take(2).map(|bytes| i16::from_be_bytes([bytes[0], bytes[1]]))
    }

    fn int32(&mut self) -> Option<i32> {
        self.take(4).map(|bytes| i32::from_be_bytes(bytes.try_into().expect("four bytes")))
    }
}

impl BinaryReader {
    /// Splits the complete tuples at the start of `data` (the header first, on the first
    /// call), each checked to have `columns` fields; returns them with the bytes they took.
    /// `at_end`: no more data comes, so a partial tuple is an error (a stream that ends
    /// where a tuple would start ends the COPY, as in PostgreSQL, even without a trailer).
    pub(super) fn split(
        &mut self,
        data: &[u8],
        columns: usize,
        at_end: bool,
    ) -> Result<(Vec<BinaryRecord>, usize)> {
        let mut cursor = Cursor { data, position: 0 };
        if !self.header_read {
            match read_header(&mut cursor, at_end)? {
                true => self.header_read = true,
                false => return Ok((Vec::new(), 0)),
            }
        }
        let mut records = Vec::new();
        loop {
            if self.ended {
                if cursor.position < data.len() {
                    return Err(bad_format("received copy data after EOF marker"));
                }
                return Ok((records, cursor.position));
            }
            let start = cursor.position;
            match read_tuple(&mut cursor, columns)? {
                Tuple::Record(record) => records.push(record),
                Tuple::Trailer => self.ended = true,
                Tuple::Partial if at_end && data.len() - start >= 2 => {
                    return Err(bad_format("unexpected EOF in COPY data"));
                }
                // Less than a field count left at the end: PostgreSQL's end of data.
                Tuple::Partial if at_end => return Ok((records, data.len())),
                Tuple::Partial => return Ok((records, start)),
            }
        }
    }
}

/// Reads and checks the header: false when the data ends before it does (and more may
/// come), an error when it is wrong or the data ended inside it.
fn read_header(cursor: &mut Cursor<'_>, at_end: bool) -> Result<bool> {
    let available = cursor.data.len();
    let prefix = SIGNATURE.len().min(available);
    if cursor.data[..prefix] != SIGNATURE[..prefix] {
        return Err(bad_format("COPY file signature not recognized"));
    }
    if available < SIGNATURE.len() + 8 {
        return match (at_end, available) {
            (false, _) => Ok(false),
            (true, length) if length < SIGNATURE.len() => {
                Err(bad_format("COPY file signature not recognized"))
            }
            (true, length) if length < SIGNATURE.len() + 4 => {
                Err(bad_format("invalid COPY file header (missing flags)"))
            }
            (true, _) => Err(bad_format("invalid COPY file header (missing length)")),
        };
    }
    cursor.take(SIGNATURE.len());
    let flags = u32::from_be_bytes(cursor.int32().expect("checked").to_be_bytes());
    if flags & FLAG_OIDS != 0 {
        return Err(bad_format("invalid COPY file header (WITH OIDS)"));
    }
    if (flags & !FLAG_OIDS) >> 16 != 0 {
        return Err(bad_format("unrecognized critical flags in COPY file header"));
    }
    let extension = cursor.int32().expect("checked");
    let extension = usize::try_from(extension)
        .map_err(|_| bad_format("invalid COPY file header (missing length)"))?;
    if cursor.take(extension).is_none() {
        if at_end {
            return Err(bad_format("invalid COPY file header (wrong length)"));
        }
        cursor.position = 0;
        return Ok(false);
    }
    Ok(true)
}

enum Tuple {
    Record(BinaryRecord),
    Trailer,
    /// The data ends inside the tuple.
    Partial,
}

/// Reads one tuple (or the trailer) at the cursor.
fn read_tuple(cursor: &mut Cursor<'_>, columns: usize) -> Result<Tuple> {
    let Some(count) = cursor.int16() else { return Ok(Tuple::Partial) };
    if count == TRAILER_COUNT {
        return Ok(Tuple::Trailer);
    }
    if usize::try_from(count).ok() != Some(columns) {
        return Err(bad_format(format!("row field count is {count}, expected {columns}")));
    }
    let mut record = Vec::with_capacity(columns);
    for _ in 0..columns {
        let Some(length) = cursor.int32() else { return Ok(Tuple::Partial) };
        if length == -1 {
            record.push(None);
            continue;
        }
        let length = usize::try_from(length).map_err(|_| bad_format("invalid field size"))?;
        let Some(bytes) = cursor.take(length) else { return Ok(Tuple::Partial) };
        record.push(Some(bytes.to_vec()));
    }
    Ok(Tuple::Record(record))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(tuples: &[&[Option<&[u8]>]]) -> Vec<u8> {
        let mut out = header();
        for fields in tuples {
            out.extend_from_slice(&i16::try_from(fields.len()).unwrap().to_be_bytes());
            for field in *fields {
                match field {
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(bytes) => {
                        out.extend_from_slice(&i32::try_from(bytes.len()).unwrap().to_be_bytes());
                        out.extend_from_slice(bytes);
                    }
                }
            }
        }
        out.extend_from_slice(&trailer());
        out
    }

    #[test]
    fn a_stream_split_at_every_byte_gives_the_same_records() {
        let data = stream(&[&[Some(b"ab"), None], &[Some(b""), Some(b"xyz")]]);
        let expected =
            vec![vec![Some(b"ab".to_vec()), None], vec![Some(Vec::new()), Some(b"xyz".to_vec())]];
        for cut in 0..data.len() {
            let mut reader = BinaryReader::default();
            let (mut records, used) = reader.split(&data[..cut], 2, false).unwrap();
            let (rest, rest_used) = reader.split(&data[used..], 2, true).unwrap();
            assert_eq!(used + rest_used, data.len(), "cut at {cut}");
            records.extend(rest);
            assert_eq!(records, expected, "cut at {cut}");
        }
    }

    #[test]
    fn bad_streams_fail_with_postgresql_messages() {
        let fail = |data: &[u8], columns: usize| {
            let error = BinaryReader::default().split(data, columns, true).unwrap_err();
            assert_eq!(error.sqlstate, "22P04");
            error.message
        };
        assert_eq!(fail(b"not binary copy data", 1), "COPY file signature not recognized");
        assert_eq!(fail(b"", 1), "COPY file signature not recognized");
        assert_eq!(fail(&SIGNATURE[..], 1), "invalid COPY file header (missing flags)");
        let mut oids = header();
        oids[11..15].copy_from_slice(&FLAG_OIDS.to_be_bytes());
        assert_eq!(fail(&oids, 1), "invalid COPY file header (WITH OIDS)");
        let mut critical = header();
        critical[11..15].copy_from_slice(&(1u32 << 20).to_be_bytes());
        assert_eq!(fail(&critical, 1), "unrecognized critical flags in COPY file header");
        let data = stream(&[&[Some(b"a")]]);
        assert_eq!(fail(&data, 2), "row field count is 1, expected 2");
        assert_eq!(fail(&data[..data.len() - 3], 1), "unexpected EOF in COPY data");
        let mut after = data.clone();
        after.push(0);
        assert_eq!(fail(&after, 1), "received copy data after EOF marker");
        let mut negative = header();
        negative.extend_from_slice(&1i16.to_be_bytes());
        negative.extend_from_slice(&(-2i32).to_be_bytes());
        assert_eq!(fail(&negative, 1), "invalid field size");
    }

    #[test]
    fn header_extension_is_skipped_and_missing_trailer_ends_the_data() {
        let mut data = SIGNATURE.to_vec();
        data.extend_from_slice(&0u32.to_be_bytes());
        data.extend_from_slice(&3u32.to_be_bytes());
        data.extend_from_slice(b"ext");
        data.extend_from_slice(&1i16.to_be_bytes());
        data.extend_from_slice(&1i32.to_be_bytes());
        data.push(b'z');
        let (records, used) = BinaryReader::default().split(&data, 1, true).unwrap();
        assert_eq!((records, used), (vec![vec![Some(b"z".to_vec())]], data.len()));
    }

    #[test]
    fn tuples_round_trip_through_send_and_receive() {
        let types = [SqlType::Int4, SqlType::Text, SqlType::Bool];
        let row = [Datum::Int(-7), Datum::Null, Datum::Bool(true)];
        let mut data = header();
        data.extend(tuple(&row, &types).unwrap());
        data.extend(trailer());
        let (records, _) = BinaryReader::default().split(&data, 3, true).unwrap();
        let decoded: Vec<Datum> = records[0]
            .iter()
            .zip(&types)
            .map(|(field, ty)| field.as_ref().map_or(Ok(Datum::Null), |bytes| receive(bytes, ty)))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(format!("{decoded:?}"), format!("{row:?}"));
        assert_eq!(
            receive(&[0, 0, 0], &SqlType::Int4).unwrap_err().message,
            "incorrect binary data format"
        );
    }

    #[test]
    fn received_fields_take_their_columns_type_modifiers() {
        let numeric = SqlType::Numeric { precision: Some(12), scale: Some(3) };
        let value = crate::types::numeric_send(&"1.5".parse().unwrap());
        assert_eq!(receive(&value, &numeric).unwrap().to_text(&numeric).unwrap(), "1.500");
        let too_wide = crate::types::numeric_send(&"1234567890.5".parse().unwrap());
        assert_eq!(receive(&too_wide, &numeric).unwrap_err().sqlstate, "22003");
        let char3 = SqlType::Char(3);
        assert_eq!(receive(b"a", &char3).unwrap().to_text(&char3).unwrap(), "a  ");
        assert_eq!(receive(b"abcd", &SqlType::Varchar(Some(3))).unwrap_err().sqlstate, "22001");
    }
}
