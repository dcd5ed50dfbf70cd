//! The bodies of `PageOps` records (docs/design/003-wal.md, 013-wal-node-records.md).
//!
//! Two encodings. Tag 4, written since issue 13's second step, is compact: varints for
//! the op count and page ids, a write's or move's offset as a signed delta from where the
//! previous op on the same page ended, and lengths up to 31 inside the op's code byte. A
//! B+tree change is a run of small ops on one page, mostly in offset order, so each op's
//! framing drops from 5 to 7 bytes to 2 or 3. Tag 1, the fixed-width encoding written
//! before, is still decoded so that a log written by an older binary replays unchanged.
//!
//! Compact op code byte (tag 4):
//!
//! | bits | meaning                                                                   |
//! |-----:|---------------------------------------------------------------------------|
//! | 0..2 | op: 1 `Init`, 2 `Write`, 3 `Move`, 0 an extended op named by bits 2..7    |
//! | 2..7 | a `Write`'s or `Move`'s length if 1..=31; 0: a varint length follows;     |
//! |      | with op 0: 1 `Compact` (wal_compact.rs), any other value is invalid       |
//! | 7    | same page as the op before it in the record: no page id follows           |

use tierdb_common::{Page, PageId, PageType, PAGE_PAYLOAD_SIZE};

use crate::codec::{usize_to_u64, DecodeResult, Reader, Writer};
use crate::wal_compact::RegionCompaction;

/// One change to one page, applied physically at redo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageOp {
    /// The page was (re)formatted as an empty page of `page_type`.
    Init { page_id: PageId, page_type: PageType },
    /// `bytes` were written at `offset` of the payload.
    Write { page_id: PageId, offset: u16, bytes: Vec<u8> },
    /// `length` payload bytes at `source` were copied to `destination` of the same payload
    /// (memmove: the ranges may overlap). Logs a shifted slot array, a cell slid by a
    /// compaction or an old row version kept in a rewritten cell without its bytes.
    Move { page_id: PageId, source: u16, destination: u16, length: u16 },
    /// The gaps of a region at the end of the payload were removed and the pointers into it
    /// relocated (`RegionCompaction`): a B+tree node's compaction, logged without its cells
    /// and slots.
    Compact { page_id: PageId, compaction: RegionCompaction },
}

impl PageOp {
    pub fn page_id(&self) -> PageId {
        match self {
            PageOp::Init { page_id, .. }
            | PageOp::Write { page_id, .. }
            | PageOp::Move { page_id, .. }
            | PageOp::Compact { page_id, .. } => *page_id,
        }
    }

    /// Applies the op to `page` (which must be the op's page): the one definition of what an
    /// op does, shared by redo and by the tests that check a logged change reproduces the
    /// page. Deterministic: the result depends only on the page's bytes and the op.
    pub fn apply(&self, page: &mut Page) {
        match self {
            PageOp::Init { page_id, page_type } => page.init(*page_id, *page_type),
            PageOp::Write { offset, bytes, .. } => {
                let offset = usize::from(*offset);
                page.payload_mut()[offset..offset + bytes.len()].copy_from_slice(bytes);
            }
            PageOp::Move { source, destination, length, .. } => {
                let source = usize::from(*source);
                page.payload_mut()
                    .copy_within(source..source + usize::from(*length), usize::from(*destination));
            }
            PageOp::Compact { compaction, .. } => compaction.apply(page.payload_mut()),
        }
    }

    /// The payload bytes the op sets (for the logical-bytes statistic).
    pub fn changed_bytes(&self) -> usize {
        match self {
            PageOp::Init { .. } => 0,
            PageOp::Write { bytes, .. } => bytes.len(),
            PageOp::Move { length, .. } => usize::from(*length),
            PageOp::Compact { compaction, .. } => compaction.changed_bytes(),
        }
    }
}

/// The tag of a compact `PageOps` body.
pub(crate) const TAG_PAGE_OPS: u8 = 4;
/// The tag of a fixed-width `PageOps` body (written before tag 4; decoded, never written).
pub(crate) const TAG_PAGE_OPS_FIXED: u8 = 1;

/// Op kind 0: an extended op, named by the code byte's length bits.
const OP_EXTENDED: u8 = 0;
/// The extended op `Compact` (the length bits of its code byte).
const EXTENDED_COMPACT: u8 = 1;
const OP_INIT: u8 = 1;
const OP_WRITE: u8 = 2;
const OP_MOVE: u8 = 3;
const OP_KIND_MASK: u8 = 0b11;
const OP_INLINE_LENGTH_SHIFT: u32 = 2;
/// The largest length carried inside the code byte (5 bits).
const OP_INLINE_LENGTH_MAX: usize = 31;
/// Set on an op's code when the op changes the same page as the op before it in the record:
/// the page id is then not repeated.
const OP_SAME_PAGE: u8 = 0x80;

/// The code byte's length field: `length` if it fits, else 0 (a varint follows).
fn inline_length(length: usize) -> u8 {
    if (1..=OP_INLINE_LENGTH_MAX).contains(&length) {
        u8::try_from(length).expect("at most 31") << OP_INLINE_LENGTH_SHIFT
    } else {
        0
    }
}

fn signed_delta(to: u16, from: u16) -> i64 {
    i64::from(to) - i64::from(from)
}

/// Encodes `ops` as a compact body (tag 4) onto `writer`.
pub(crate) fn encode_page_ops(ops: &[PageOp], writer: &mut Writer) {
    writer.u8(TAG_PAGE_OPS);
    writer.varint(usize_to_u64(ops.len()));
    let mut previous_page = None;
    // Where the previous op on this page ended: offsets are deltas from it.
    let mut cursor: u16 = 0;
    for op in ops {
        let (kind, length) = match op {
            PageOp::Compact { .. } => {
                (OP_EXTENDED | EXTENDED_COMPACT << OP_INLINE_LENGTH_SHIFT, None)
            }
            PageOp::Init { .. } => (OP_INIT, None),
            PageOp::Write { bytes, .. } => (OP_WRITE, Some(bytes.len())),
            PageOp::Move { length, .. } => (OP_MOVE, Some(usize::from(*length))),
        };
        let same_page = previous_page == Some(op.page_id());
        let mut code = kind | length.map_or(0, inline_length);
        if same_page {
            code |= OP_SAME_PAGE;
        } else {
            cursor = 0;
        }
        writer.u8(code);
        if !same_page {
            writer.varint(op.page_id().0);
        }
        previous_page = Some(op.page_id());
        let destination = match op {
            PageOp::Init { page_type, .. } => {
                writer.u8(page_type.code());
                cursor = 0;
                continue;
            }
            PageOp::Compact { compaction, .. } => {
                compaction.encode(writer);
                cursor = 0;
                continue;
            }
            PageOp::Write { offset, .. } => *offset,
            PageOp::Move { destination, .. } => *destination,
        };
        writer.signed_varint(signed_delta(destination, cursor));
        if let PageOp::Move { source, .. } = op {
            writer.signed_varint(signed_delta(*source, destination));
        }
        let length = length.expect("a write or a move has a length");
        if inline_length(length) == 0 {
            writer.varint(usize_to_u64(length));
        }
        if let PageOp::Write { bytes, .. } = op {
            writer.raw(bytes);
        }
        cursor = u16::try_from(usize::from(destination) + length).expect("within a payload");
    }
}

/// Fails unless `[start, start + length)` lies within a page's payload.
fn check_end(start: u16, length: usize, what: &str) -> DecodeResult<()> {
    let end = usize::from(start) + length;
    if end > PAGE_PAYLOAD_SIZE {
        return Err(format!("page {what} beyond payload end={end}"));
    }
    Ok(())
}

/// `base + delta` as a payload offset, or an error if it falls outside the payload.
fn offset_from(base: u16, delta: i64, what: &str) -> DecodeResult<u16> {
    // A hostile delta near i64::MAX must not overflow (a panic in checked builds).
    let Some(offset) = i64::from(base).checked_add(delta) else {
        return Err(format!("page {what} offset overflows base={base} delta={delta}"));
    };
    match u16::try_from(offset) {
        Ok(offset) if usize::from(offset) <= PAGE_PAYLOAD_SIZE => Ok(offset),
        _ => Err(format!("page {what} offset outside the payload offset={offset}")),
    }
}

fn decode_length(reader: &mut Reader<'_>, code: u8) -> DecodeResult<usize> {
    let inline = usize::from((code & !OP_SAME_PAGE) >> OP_INLINE_LENGTH_SHIFT);
    if inline != 0 {
        return Ok(inline);
    }
    let length = reader.varint()?;
    match usize::try_from(length) {
        Ok(length) if length <= PAGE_PAYLOAD_SIZE => Ok(length),
        _ => Err(format!("page op length beyond a payload length={length}")),
    }
}

/// One compact op after its code byte and page id; `cursor` is where the previous op on
/// this page ended, and is advanced past this one.
fn decode_compact_op(
    reader: &mut Reader<'_>,
    code: u8,
    page_id: PageId,
    cursor: &mut u16,
) -> DecodeResult<PageOp> {
    let kind = code & OP_KIND_MASK;
    if kind == OP_EXTENDED {
        let extended = (code & !OP_SAME_PAGE) >> OP_INLINE_LENGTH_SHIFT;
        if extended != EXTENDED_COMPACT {
            return Err(format!("unknown page op code={code:#04x}"));
        }
        *cursor = 0;
        return Ok(PageOp::Compact { page_id, compaction: RegionCompaction::decode(reader)? });
    }
    if kind == OP_INIT {
        if code & !(OP_SAME_PAGE | OP_KIND_MASK) != 0 {
            return Err(format!("page init with a length code={code:#04x}"));
        }
        *cursor = 0;
        return Ok(PageOp::Init { page_id, page_type: PageType::from_code(reader.u8()?) });
    }
    let destination = offset_from(*cursor, reader.signed_varint()?, "op")?;
    let op = match kind {
        OP_WRITE => {
            let length = decode_length(reader, code)?;
            check_end(destination, length, "write")?;
            PageOp::Write { page_id, offset: destination, bytes: reader.take(length)?.to_vec() }
        }
        OP_MOVE => {
            let source = offset_from(destination, reader.signed_varint()?, "move source")?;
            let length = decode_length(reader, code)?;
            check_end(source, length, "move source")?;
            check_end(destination, length, "move destination")?;
            let length = u16::try_from(length).expect("within a payload");
            PageOp::Move { page_id, source, destination, length }
        }
        _ => return Err(format!("unknown page op code={code:#04x}")),
    };
    let length = match &op {
        PageOp::Write { bytes, .. } => bytes.len(),
        PageOp::Move { length, .. } => usize::from(*length),
        PageOp::Init { .. } | PageOp::Compact { .. } => unreachable!("returned above"),
    };
    *cursor = u16::try_from(usize::from(destination) + length).expect("checked against the end");
    Ok(op)
}

/// The page of an op: the previous op's when `code` says so, else a page id read here.
fn op_page<'a>(
    reader: &mut Reader<'a>,
    code: u8,
    ops: &[PageOp],
    read_id: fn(&mut Reader<'a>) -> DecodeResult<u64>,
) -> DecodeResult<(PageId, bool)> {
    if code & OP_SAME_PAGE != 0 {
        let page = ops.last().map(PageOp::page_id);
        return Ok((page.ok_or_else(|| "first page op names no page".to_string())?, true));
    }
    let page_id = PageId(read_id(reader)?);
    // Page 0 is never allocated (`Page::init` asserts it): a record naming it is damaged.
    if page_id == PageId::INVALID {
        return Err("a page op names page 0, which is never allocated".to_string());
    }
    Ok((page_id, false))
}

/// Decodes a compact body after its tag.
pub(crate) fn decode_page_ops(reader: &mut Reader<'_>) -> DecodeResult<Vec<PageOp>> {
    let count = reader.varint()?;
    let mut ops = Vec::new();
    let mut cursor = 0;
    for _ in 0..count {
        let code = reader.u8()?;
        let (page_id, same_page) = op_page(reader, code, &ops, Reader::varint)?;
        if !same_page {
            cursor = 0;
        }
        ops.push(decode_compact_op(reader, code, page_id, &mut cursor)?);
    }
    Ok(ops)
}

/// Decodes a fixed-width body (tag 1) after its tag: op count u32; per op a code byte (bits
/// 0..6 the op, bit 7 same page), the page id u64 unless bit 7, then `Init`: page type u8;
/// `Write`: offset u16, length u16, bytes; `Move`: source u16, destination u16, length u16.
pub(crate) fn decode_page_ops_fixed(reader: &mut Reader<'_>) -> DecodeResult<Vec<PageOp>> {
    let count = reader.u32()?;
    let mut ops: Vec<PageOp> = Vec::new();
    for _ in 0..count {
        let code = reader.u8()?;
        let (page_id, _) = op_page(reader, code, &ops, Reader::u64)?;
        let op = match code & !OP_SAME_PAGE {
            OP_INIT => PageOp::Init { page_id, page_type: PageType::from_code(reader.u8()?) },
            OP_WRITE => {
                let offset = reader.u16()?;
                let length = usize::from(reader.u16()?);
                check_end(offset, length, "write")?;
                PageOp::Write { page_id, offset, bytes: reader.take(length)?.to_vec() }
            }
            OP_MOVE => {
                let source = reader.u16()?;
                let destination = reader.u16()?;
                let length = reader.u16()?;
                check_end(source, usize::from(length), "move source")?;
                check_end(destination, usize::from(length), "move destination")?;
                PageOp::Move { page_id, source, destination, length }
            }
            other => return Err(format!("unknown page op={other}")),
        };
        ops.push(op);
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(ops: &[PageOp]) -> Vec<u8> {
        let mut writer = Writer::with_capacity(64);
        encode_page_ops(ops, &mut writer);
        writer.bytes
    }

    fn decoded(body: &[u8]) -> DecodeResult<Vec<PageOp>> {
        let mut reader = Reader::new(body);
        let ops = match reader.u8()? {
            TAG_PAGE_OPS => decode_page_ops(&mut reader)?,
            TAG_PAGE_OPS_FIXED => decode_page_ops_fixed(&mut reader)?,
            other => return Err(format!("tag={other}")),
        };
        assert_eq!(reader.remaining(), 0);
        Ok(ops)
    }

    #[test]
    fn a_commit_bit_and_a_slot_shift_are_small() {
        let page_id = PageId(3_000);
        // The commit-log change of one transaction: 1 byte at offset 1,000.
        let clog = [PageOp::Write { page_id, offset: 1_000, bytes: vec![1] }];
        // tag, count, code, page id (2), offset (2), byte: 8 bytes (fixed width: 19).
        assert_eq!(encoded(&clog).len(), 8);
        assert_eq!(decoded(&encoded(&clog)).unwrap(), clog);
        // An insert in the middle of a leaf: header, slot tail moved by 2, slot, cell.
        let insert = [
            PageOp::Write { page_id, offset: 0, bytes: vec![9; 4] },
            PageOp::Move { page_id, source: 40, destination: 42, length: 120 },
            PageOp::Write { page_id, offset: 40, bytes: vec![7; 2] },
            PageOp::Write { page_id, offset: 6_000, bytes: vec![5; 30] },
        ];
        let body = encoded(&insert);
        // tag 1, count 1; write: code, page id 2, offset 0, 4 bytes; move: code, destination
        // +38, source -2, length 120 as a varint; write: code, offset -122 (2), 2 bytes;
        // write: code, offset +5,958 (2), 30 bytes.
        assert_eq!(body.len(), 2 + 8 + 5 + 4 + 33);
        assert_eq!(decoded(&body).unwrap(), insert);
    }

    #[test]
    fn a_fixed_width_body_written_before_tag_4_decodes_unchanged() {
        // Bytes as the fixed-width encoder wrote them: init of page 7, a write on it (same
        // page bit), a move on page 9.
        let mut body = vec![TAG_PAGE_OPS_FIXED, 3, 0, 0, 0];
        body.extend([OP_INIT, 7, 0, 0, 0, 0, 0, 0, 0, PageType::BtreeLeaf.code()]);
        body.extend([OP_WRITE | OP_SAME_PAGE, 16, 0, 2, 0, 0xaa, 0xbb]);
        body.extend([OP_MOVE, 9, 0, 0, 0, 0, 0, 0, 0, 10, 0, 20, 0, 5, 0]);
        let page_7 = PageId(7);
        assert_eq!(
            decoded(&body).unwrap(),
            vec![
                PageOp::Init { page_id: page_7, page_type: PageType::BtreeLeaf },
                PageOp::Write { page_id: page_7, offset: 16, bytes: vec![0xaa, 0xbb] },
                PageOp::Move { page_id: PageId(9), source: 10, destination: 20, length: 5 },
            ]
        );
    }

    #[test]
    fn a_compaction_between_writes_round_trips_and_other_extended_ops_are_errors() {
        use crate::wal_compact::Gap;
        let page_id = PageId(3_000);
        let compaction = RegionCompaction {
            start: 7_000,
            pointers: 40,
            pointer_count: 20,
            gaps: vec![Gap { offset: 7_100, length: 200 }],
        };
        let ops = [
            PageOp::Compact { page_id, compaction },
            PageOp::Write { page_id, offset: 4, bytes: vec![1, 2, 3, 4] },
            PageOp::Write { page_id: PageId(5), offset: 40, bytes: vec![9] },
        ];
        let body = encoded(&ops);
        // tag, count; code 0x04, page id 2, start 2, pointers 1, count 1, gap count 1, delta
        // 1, length 2; write: code, offset +4 from cursor 0, 4 bytes; write on another page:
        // code, page id, offset, byte.
        assert_eq!(body[2], 0x04);
        assert_eq!(body.len(), 2 + 11 + 6 + 4);
        assert_eq!(decoded(&body).unwrap(), ops);
        for extended in [0u8, 2, 31] {
            let mut unknown = body.clone();
            unknown[2] = extended << OP_INLINE_LENGTH_SHIFT;
            assert!(decoded(&unknown).unwrap_err().contains("unknown page op"), "{extended}");
        }
        // A fixed-width body (tag 1) has no extended ops.
        let fixed = [TAG_PAGE_OPS_FIXED, 1, 0, 0, 0, 0x04, 1, 0, 0, 0, 0, 0, 0, 0];
        assert!(decoded(&fixed).unwrap_err().contains("unknown page op"));
    }

    #[test]
    fn offsets_outside_the_payload_are_errors() {
        let page_id = PageId(1);
        let mut body = encoded(&[PageOp::Write { page_id, offset: 8_000, bytes: vec![1; 20] }]);
        // Rewrite the offset delta (8,000: 2 varint bytes after tag, count, code, page id)
        // to -1.
        body.splice(4..6, [1]);
        assert!(decoded(&body).unwrap_err().contains("outside the payload"));
        let beyond = encoded(&[PageOp::Write { page_id, offset: 8_150, bytes: vec![1; 10] }]);
        assert_eq!(decoded(&beyond).unwrap().len(), 1);
        let mut past = beyond.clone();
        past[2] = OP_WRITE | inline_length(11);
        past.push(0);
        assert!(decoded(&past).unwrap_err().contains("beyond payload"));
        let first_same_page = [TAG_PAGE_OPS, 1, OP_WRITE | OP_SAME_PAGE | inline_length(1), 0, 1];
        assert!(decoded(&first_same_page).unwrap_err().contains("names no page"));
    }
}
