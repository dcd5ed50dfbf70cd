//! Segments: immutable objects holding a batch of flushed page images.
//!
//! Pages are never overwritten in place. A flush writes the batch into a new segment under a
//! new name and only then points the page map at it, so a torn or failed segment write can
//! never damage the previous good image of any page.
//!
//! Layout (little-endian; docs/design/002-segments-page-map-manifest.md):
//!
//! | offset                 | size      | field                                        |
//! |-----------------------:|----------:|----------------------------------------------|
//! | 0                      | 8         | magic `TDBSEG01`                             |
//! | 8                      | 8         | segment id                                   |
//! | 16                     | 4         | slot count n                                 |
//! | 20                     | 4         | CRC32C of bytes 0..20                        |
//! | 24                     | 4072      | zero (pages start 4 KiB aligned)             |
//! | 4096 + 8192 i          | 8192      | page image in slot i, version = segment id   |
//! | 4096 + 8192 n          | 16 n      | footer: (page id u64, page lsn u64) per slot |
//! | 4096 + 8192 n + 16 n   | 4         | CRC32C of the footer entries                 |
//! | ...                    | 8         | magic `TDBSEGFT`                             |

use tierdb_common::{Lsn, Page, PageId, SegmentId, PAGE_SIZE};

use crate::codec::{usize_to_u32, usize_to_u64, Reader, Writer};

pub(crate) const SEGMENT_MAGIC: &[u8; 8] = b"TDBSEG01";
pub(crate) const SEGMENT_FOOTER_MAGIC: &[u8; 8] = b"TDBSEGFT";
pub(crate) const SEGMENT_HEADER_SIZE: usize = 4096;
/// Pages written in one segment at most: 256 pages is 2 MiB, one object-store PUT.
pub const SEGMENT_SLOTS_MAX: usize = 256;
pub(crate) const SEGMENT_PREFIX: &str = "segments/";

/// The header's fields: magic, segment id u64, slot count u32, CRC32C u32.
const SEGMENT_HEADER_FIELDS_BYTES: usize = SEGMENT_MAGIC.len() + 8 + 4 + 4;
// The fields fit the header, and page images start 4 KiB aligned after it.
const _: () = assert!(SEGMENT_HEADER_FIELDS_BYTES <= SEGMENT_HEADER_SIZE);
const _: () = assert!(SEGMENT_HEADER_SIZE.is_multiple_of(4096));
// The slot count is stored as u32.
const _: () = assert!(SEGMENT_SLOTS_MAX <= u32::MAX as usize);

pub(crate) fn segment_name(segment: SegmentId) -> String {
    format!("{SEGMENT_PREFIX}{segment}.seg")
}

pub(crate) fn parse_segment_name(name: &str) -> Option<SegmentId> {
    let hex = name.strip_prefix(SEGMENT_PREFIX)?.strip_suffix(".seg")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok().map(SegmentId)
}

/// Byte offset of slot `slot`'s page image within its segment.
pub(crate) fn slot_offset(slot: u32) -> u64 {
    usize_to_u64(SEGMENT_HEADER_SIZE) + u64::from(slot) * usize_to_u64(PAGE_SIZE)
}

/// Encodes a segment. Each page must already carry `image_version == segment` and be sealed.
pub(crate) fn encode_segment(segment: SegmentId, pages: &[&Page]) -> Vec<u8> {
    assert!(!pages.is_empty() && pages.len() <= SEGMENT_SLOTS_MAX, "slot count out of range");
    let slot_count = usize_to_u32(pages.len());
    let total = SEGMENT_HEADER_SIZE + pages.len() * (PAGE_SIZE + 16) + 12;
    let mut writer = Writer::with_capacity(total);
    writer.raw(SEGMENT_MAGIC);
    writer.u64(segment.0);
    writer.u32(slot_count);
    writer.seal();
    writer.bytes.resize(SEGMENT_HEADER_SIZE, 0);
    for page in pages {
        debug_assert_eq!(page.image_version(), segment, "page stamped with its segment");
        debug_assert!(page.verify(page.page_id()).is_ok(), "page sealed before encoding");
        writer.raw(page.as_bytes());
    }
    let footer_start = writer.bytes.len();
    for page in pages {
        writer.u64(page.page_id().0);
        writer.u64(page.lsn().0);
    }
    let footer_checksum = crc32c::crc32c(&writer.bytes[footer_start..]);
    writer.u32(footer_checksum);
    writer.raw(SEGMENT_FOOTER_MAGIC);
    debug_assert_eq!(writer.bytes.len(), total);
    writer.bytes
}

/// One slot of a decoded segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SegmentSlot {
    pub page_id: PageId,
    pub lsn: Lsn,
}

/// Decodes and fully verifies a segment: header, footer and every page image. Returns why it
/// is invalid otherwise; the caller names the object.
#[cfg(test)]
pub(crate) fn decode_segment(segment: SegmentId, bytes: &[u8]) -> Result<Vec<SegmentSlot>, String> {
    let slots = decode_segment_index(segment, bytes)?;
    let mut image = Page::new_boxed();
    for (slot, entry) in slots.iter().enumerate() {
        let start = SEGMENT_HEADER_SIZE + slot * PAGE_SIZE;
        image.as_bytes_mut().copy_from_slice(&bytes[start..start + PAGE_SIZE]);
        image
            .verify_version(entry.page_id, segment)
            .map_err(|reason| format!("slot={slot} page_id={}: {reason}", entry.page_id))?;
        if image.lsn() != entry.lsn {
            return Err(format!(
                "slot={slot} page_id={}: footer lsn disagrees with page",
                entry.page_id
            ));
        }
    }
    Ok(slots)
}

/// Decodes and verifies a segment's header and footer (not the page images, which each carry
/// their own checksum and are verified when used).
pub(crate) fn decode_segment_index(
    segment: SegmentId,
    bytes: &[u8],
) -> Result<Vec<SegmentSlot>, String> {
    let mut reader = Reader::new(bytes);
    reader.expect_magic(SEGMENT_MAGIC)?;
    let found_id = reader.u64()?;
    let slot_count = reader.u32()?;
    let stored = reader.u32()?;
    let computed = crc32c::crc32c(&bytes[..20]);
    if stored != computed {
        return Err(format!(
            "header checksum mismatch stored={stored:#010x} computed={computed:#010x}"
        ));
    }
    if found_id != segment.0 {
        return Err(format!("wrong segment id expected={segment} found={}", SegmentId(found_id)));
    }
    let slots = usize::try_from(slot_count).expect("u32 fits in usize");
    if slots == 0 || slots > SEGMENT_SLOTS_MAX {
        return Err(format!("slot count out of range slots={slots}"));
    }
    let expected_length = SEGMENT_HEADER_SIZE + slots * (PAGE_SIZE + 16) + 12;
    if bytes.len() != expected_length {
        return Err(format!("wrong length expected={expected_length} found={}", bytes.len()));
    }
    let footer_start = SEGMENT_HEADER_SIZE + slots * PAGE_SIZE;
    let footer = &bytes[footer_start..footer_start + slots * 16];
    let mut trailer = Reader::new(&bytes[footer_start + slots * 16..]);
    let stored_footer = trailer.u32()?;
    trailer.expect_magic(SEGMENT_FOOTER_MAGIC)?;
    if crc32c::crc32c(footer) != stored_footer {
        return Err("footer checksum mismatch".to_string());
    }
    let mut footer_reader = Reader::new(footer);
    let mut decoded = Vec::with_capacity(slots);
    for _ in 0..slots {
        let page_id = PageId(footer_reader.u64()?);
        let lsn = Lsn(footer_reader.u64()?);
        decoded.push(SegmentSlot { page_id, lsn });
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tierdb_common::PageType;

    use super::*;

    fn sealed_page(page_id: u64, lsn: u64, segment: SegmentId, fill: u8) -> Box<Page> {
        let mut page = Page::new_initialized(PageId(page_id), PageType::Raw);
        page.payload_mut().fill(fill);
        page.set_lsn(Lsn(lsn));
        page.set_image_version(segment);
        page.seal();
        page
    }

    proptest! {
        #[test]
        fn segment_round_trips(segment in 1u64..u64::MAX, pages in prop::collection::vec((1u64..1 << 40, any::<u64>(), any::<u8>()), 1..12)) {
            let segment = SegmentId(segment);
            let images: Vec<Box<Page>> = pages.iter().map(|&(id, lsn, fill)| sealed_page(id, lsn, segment, fill)).collect();
            let references: Vec<&Page> = images.iter().map(|image| &**image).collect();
            let bytes = encode_segment(segment, &references);
            let slots = decode_segment(segment, &bytes).unwrap();
            prop_assert_eq!(slots.len(), pages.len());
            for (slot, &(id, lsn, fill)) in slots.iter().zip(&pages) {
                prop_assert_eq!(slot.page_id, PageId(id));
                prop_assert_eq!(slot.lsn, Lsn(lsn));
                let _ = fill;
            }
            prop_assert_eq!(parse_segment_name(&segment_name(segment)), Some(segment));
        }

        #[test]
        fn any_segment_bit_flip_or_truncation_is_detected(bit in 0usize..(SEGMENT_HEADER_SIZE + 2 * PAGE_SIZE + 2 * 16 + 12) * 8, cut in 1usize..100) {
            let segment = SegmentId(7);
            let images = [sealed_page(1, 10, segment, 1), sealed_page(2, 11, segment, 2)];
            let bytes = encode_segment(segment, &[&images[0], &images[1]]);
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            // A flip in the header's zero padding changes no field: only check the covered bytes.
            let in_padding = (24..SEGMENT_HEADER_SIZE).contains(&(bit / 8));
            prop_assert!(in_padding || decode_segment(segment, &flipped).is_err());
            prop_assert!(decode_segment(segment, &bytes[..bytes.len() - cut]).is_err());
            prop_assert!(decode_segment(SegmentId(8), &bytes).is_err());
        }
    }
}
