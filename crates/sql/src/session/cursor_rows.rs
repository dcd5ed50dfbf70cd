//! The rows of a cursor: written whole when it is declared (the executor is push-based),
//! then read forward by FETCH. Rows past work_mem go to an anonymous temp file, so a cursor
//! over a large result holds about work_mem in memory.
//!
//! `CursorRows` is the seam for the temp-file row store of the spilling operators
//! (storage/temp.rs): a store with push and a forward read is a one-line swap in `new`.

use std::collections::VecDeque;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use rust_decimal::Decimal;

use crate::error::{Result, SqlError};
use crate::types::{Datum, Row};

/// Rows handed out in the order they were pushed; every push comes before the first read.
pub(crate) trait CursorRows: Send {
    fn push(&mut self, row: Row) -> Result<()>;
    fn next(&mut self) -> Result<Option<Row>>;
}

/// The store a new cursor uses, holding at most `memory_bytes_max` of rows in memory.
pub(crate) fn new(memory_bytes_max: usize) -> Box<dyn CursorRows> {
    Box::new(SpillingRows::new(memory_bytes_max))
}

/// Rows in memory up to a bound, the rest in a temp file.
struct SpillingRows {
    memory: VecDeque<Row>,
    memory_bytes: usize,
    memory_bytes_max: usize,
    spill: Spill,
}

enum Spill {
    None,
    Writing(BufWriter<std::fs::File>),
    Reading(BufReader<std::fs::File>),
}

fn io_error(error: std::io::Error) -> SqlError {
    SqlError::new("58030", format!("could not use a cursor's temporary file: {error}"))
}

/// About what a row occupies in memory.
fn row_bytes(row: &Row) -> usize {
    let payload: usize = row
        .iter()
        .map(|datum| match datum {
            Datum::Text(text) => text.len(),
            Datum::Bytes(bytes) => bytes.len(),
            _ => 0,
        })
        .sum();
    std::mem::size_of::<Row>() + row.len() * std::mem::size_of::<Datum>() + payload
}

impl SpillingRows {
    fn new(memory_bytes_max: usize) -> SpillingRows {
        SpillingRows {
            memory: VecDeque::new(),
            memory_bytes: 0,
            memory_bytes_max,
            spill: Spill::None,
        }
    }
}

impl CursorRows for SpillingRows {
    fn push(&mut self, row: Row) -> Result<()> {
        let bytes = row_bytes(&row);
        if matches!(self.spill, Spill::None) && self.memory_bytes + bytes <= self.memory_bytes_max {
            self.memory_bytes += bytes;
            self.memory.push_back(row);
            return Ok(());
        }
        if matches!(self.spill, Spill::None) {
            let file = tempfile::tempfile().map_err(io_error)?;
            self.spill = Spill::Writing(BufWriter::with_capacity(64 << 10, file));
        }
        let Spill::Writing(writer) = &mut self.spill else {
            unreachable!("rows are pushed before the first read");
        };
        let mut encoded = Vec::new();
        encode_row(&row, &mut encoded)?;
        writer.write_all(&encoded).map_err(io_error)
    }

    fn next(&mut self) -> Result<Option<Row>> {
        if let Some(row) = self.memory.pop_front() {
            self.memory_bytes -= row_bytes(&row);
            return Ok(Some(row));
        }
        if let Spill::Writing(_) = self.spill {
            let Spill::Writing(writer) = std::mem::replace(&mut self.spill, Spill::None) else {
                unreachable!("matched above");
            };
            let mut file = writer.into_inner().map_err(|error| io_error(error.into_error()))?;
            file.seek(SeekFrom::Start(0)).map_err(io_error)?;
            self.spill = Spill::Reading(BufReader::with_capacity(64 << 10, file));
        }
        match &mut self.spill {
            Spill::Reading(reader) => decode_row(reader),
            _ => Ok(None),
        }
    }
}

/// A row as its field count, then per field a tag byte and its payload.
fn encode_row(row: &Row, out: &mut Vec<u8>) -> Result<()> {
    let length = |length: usize| {
        u32::try_from(length).map_err(|_| SqlError::out_of_range("cursor row field length"))
    };
    out.extend_from_slice(&length(row.len())?.to_le_bytes());
    for datum in row {
        match datum {
            Datum::Null => out.push(0),
            Datum::Bool(value) => out.extend_from_slice(&[1, u8::from(*value)]),
            Datum::Int(value) => {
                out.push(2);
                out.extend_from_slice(&value.to_le_bytes());
            }
            Datum::Float(value) => {
                out.push(3);
                out.extend_from_slice(&value.to_bits().to_le_bytes());
            }
            Datum::Numeric(value) => {
                out.push(4);
                out.extend_from_slice(&value.serialize());
            }
            Datum::Text(text) => {
                out.push(5);
                out.extend_from_slice(&length(text.len())?.to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
            Datum::Bytes(bytes) => {
                out.push(6);
                out.extend_from_slice(&length(bytes.len())?.to_le_bytes());
                out.extend_from_slice(bytes);
            }
            Datum::Date(days) => {
                out.push(7);
                out.extend_from_slice(&days.to_le_bytes());
            }
            Datum::Timestamp(micros) => {
                out.push(8);
                out.extend_from_slice(&micros.to_le_bytes());
            }
            Datum::TimestampTz(micros) => {
                out.push(9);
                out.extend_from_slice(&micros.to_le_bytes());
            }
        }
    }
    Ok(())
}

fn read_array<const N: usize>(reader: &mut impl Read) -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    reader.read_exact(&mut bytes).map_err(io_error)?;
    Ok(bytes)
}

fn read_bytes(reader: &mut impl Read) -> Result<Vec<u8>> {
    let length = crate::convert::usize_from(u64::from(u32::from_le_bytes(read_array(reader)?)));
    let mut bytes = vec![0u8; length];
    reader.read_exact(&mut bytes).map_err(io_error)?;
    Ok(bytes)
}

/// The next row of the file, or None at its end.
fn decode_row(reader: &mut BufReader<std::fs::File>) -> Result<Option<Row>> {
    let mut count = [0u8; 4];
    match reader.read(&mut count[..1]).map_err(io_error)? {
        0 => return Ok(None),
        _ => reader.read_exact(&mut count[1..]).map_err(io_error)?,
    }
    let count = crate::convert::usize_from(u64::from(u32::from_le_bytes(count)));
    let mut row = Vec::with_capacity(count);
    for _ in 0..count {
        let [tag] = read_array::<1>(reader)?;
        row.push(match tag {
            0 => Datum::Null,
            1 => Datum::Bool(read_array::<1>(reader)?[0] != 0),
            2 => Datum::Int(i64::from_le_bytes(read_array(reader)?)),
            3 => Datum::Float(f64::from_bits(u64::from_le_bytes(read_array(reader)?))),
            4 => Datum::Numeric(Decimal::deserialize(read_array(reader)?)),
            5 => Datum::Text(String::from_utf8(read_bytes(reader)?).map_err(|_| corrupt())?),
            6 => Datum::Bytes(read_bytes(reader)?),
            7 => Datum::Date(i32::from_le_bytes(read_array(reader)?)),
            8 => Datum::Timestamp(i64::from_le_bytes(read_array(reader)?)),
            9 => Datum::TimestampTz(i64::from_le_bytes(read_array(reader)?)),
            _ => return Err(corrupt()),
        });
    }
    Ok(Some(row))
}

fn corrupt() -> SqlError {
    SqlError::new("XX001", "a cursor's temporary file is corrupt")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_past_the_memory_bound_come_back_from_the_file_in_order() {
        let mut rows = new(1 << 10);
        let row = |n: i64| {
            vec![
                Datum::Int(n),
                Datum::Text(format!("row {n}")),
                Datum::Null,
                Datum::Numeric(Decimal::new(n, 2)),
                Datum::Float(0.5),
            ]
        };
        for n in 0..1000 {
            rows.push(row(n)).unwrap();
        }
        for n in 0..1000 {
            let got = rows.next().unwrap().expect("a row");
            assert_eq!(format!("{got:?}"), format!("{:?}", row(n)));
        }
        assert!(rows.next().unwrap().is_none());
    }
}
