//! Page formats of an ivfflat index (docs/design/014-vector-indexes.md, "ivfflat"): the meta
//! page, a chain of directory pages (each list's center and its first and last page) and
//! each list's chain of entry pages (exact vector and row key per entry).

use tierdb_common::{PageId, PageType, PAGE_PAYLOAD_SIZE};

use crate::index::{IndexError, Metric, Result};

pub(crate) const META_PAGE_TYPE: PageType = PageType::Other(32);
pub(crate) const DIRECTORY_PAGE_TYPE: PageType = PageType::Other(33);
pub(crate) const LIST_PAGE_TYPE: PageType = PageType::Other(34);
const META_MAGIC: &[u8; 4] = b"TIV1";

/// Meta page fields (payload offsets).
pub(crate) const META_BYTES: usize = 32;
pub(crate) const META_ENTRIES_OFFSET: usize = 16;
/// Directory and list page headers: next page id u64, entry count u16, bytes used u16.
pub(crate) const CHAIN_HEADER_BYTES: usize = 16;
pub(crate) const CHAIN_COUNT_OFFSET: usize = 8;
pub(crate) const CHAIN_USED_OFFSET: usize = 10;
/// A directory entry: first list page u64, last list page u64, then the center.
const DIRECTORY_ENTRY_HEADER_BYTES: usize = 16;
/// A list entry: row key length u16, then the vector, then the key.
const LIST_ENTRY_HEADER_BYTES: usize = 2;

pub(crate) fn get_u16(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes(bytes[offset..offset + 2].try_into().expect("2 bytes"))
}

pub(crate) fn get_u32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"))
}

pub(crate) fn get_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

pub(crate) fn get_vector(bytes: &[u8], offset: usize, dimensions: usize) -> Vec<f32> {
    bytes[offset..offset + 4 * dimensions]
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes(chunk.try_into().expect("4 bytes")))
        .collect()
}

pub(crate) fn put_vector(out: &mut Vec<u8>, vector: &[f32]) {
    for value in vector {
        out.extend_from_slice(&value.to_le_bytes());
    }
}

fn corrupt(page_id: PageId, detail: &str) -> IndexError {
    IndexError::Corrupt { page_id, detail: detail.to_string() }
}

/// The meta page of an ivfflat index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub dimensions: usize,
    pub metric: Metric,
    pub lists: usize,
    /// The first directory page.
    pub directory: PageId,
    pub entries: u64,
}

impl Meta {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(META_BYTES);
        out.extend_from_slice(META_MAGIC);
        out.extend_from_slice(&u16::try_from(self.dimensions).expect("checked").to_le_bytes());
        out.push(self.metric.code());
        out.push(0);
        out.extend_from_slice(&u32::try_from(self.lists).expect("checked").to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&self.entries.to_le_bytes());
        out.extend_from_slice(&self.directory.0.to_le_bytes());
        assert_eq!(out.len(), META_BYTES);
        out
    }

    pub fn decode(page_id: PageId, payload: &[u8]) -> Result<Meta> {
        if &payload[0..4] != META_MAGIC {
            return Err(corrupt(page_id, "not an ivfflat meta page"));
        }
        let dimensions = usize::from(get_u16(payload, 4));
        let metric = Metric::from_code(payload[6]).ok_or_else(|| corrupt(page_id, "metric"))?;
        let lists = usize::try_from(get_u32(payload, 8)).expect("u32 fits");
        if dimensions == 0 || lists == 0 || entries_per_directory_page(dimensions) == 0 {
            return Err(corrupt(page_id, "dimensions or lists"));
        }
        Ok(Meta {
            dimensions,
            metric,
            lists,
            entries: get_u64(payload, META_ENTRIES_OFFSET),
            directory: PageId(get_u64(payload, 24)),
        })
    }
}

/// Directory entries (lists) per directory page.
pub(crate) fn entries_per_directory_page(dimensions: usize) -> usize {
    (PAGE_PAYLOAD_SIZE - CHAIN_HEADER_BYTES) / directory_entry_bytes(dimensions)
}

pub(crate) fn directory_entry_bytes(dimensions: usize) -> usize {
    DIRECTORY_ENTRY_HEADER_BYTES + 4 * dimensions
}

/// Payload offset of directory entry `index` of its page.
pub(crate) fn directory_entry_offset(dimensions: usize, index: usize) -> usize {
    CHAIN_HEADER_BYTES + index * directory_entry_bytes(dimensions)
}

/// A chain page's header: next page, entry count, bytes used.
pub(crate) fn encode_chain_header(next: PageId, count: usize, used: usize) -> Vec<u8> {
    assert!(used <= PAGE_PAYLOAD_SIZE && count <= used);
    let mut out = Vec::with_capacity(CHAIN_HEADER_BYTES);
    out.extend_from_slice(&next.0.to_le_bytes());
    out.extend_from_slice(&u16::try_from(count).expect("bounded by the page").to_le_bytes());
    out.extend_from_slice(&u16::try_from(used).expect("bounded by the page").to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out
}

/// A chain page's header as (next page, entry count, bytes used), checked against the page.
pub(crate) fn decode_chain_header(
    page_id: PageId,
    payload: &[u8],
) -> Result<(PageId, usize, usize)> {
    let next = PageId(get_u64(payload, 0));
    let count = usize::from(get_u16(payload, CHAIN_COUNT_OFFSET));
    let used = usize::from(get_u16(payload, CHAIN_USED_OFFSET));
    if !(CHAIN_HEADER_BYTES..=PAGE_PAYLOAD_SIZE).contains(&used) {
        return Err(corrupt(page_id, "bytes used out of range"));
    }
    Ok((next, count, used))
}

/// One directory entry: first and last list page (0: the list is empty) and the center.
pub(crate) fn encode_directory_entry(first: PageId, last: PageId, center: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(directory_entry_bytes(center.len()));
    out.extend_from_slice(&first.0.to_le_bytes());
    out.extend_from_slice(&last.0.to_le_bytes());
    put_vector(&mut out, center);
    out
}

/// Bytes of one list entry.
pub(crate) fn list_entry_bytes(dimensions: usize, key_bytes: usize) -> usize {
    LIST_ENTRY_HEADER_BYTES + 4 * dimensions + key_bytes
}

/// Whether an entry fits an empty list page (else the row cannot be indexed).
pub(crate) fn entry_fits(dimensions: usize, key_bytes: usize) -> bool {
    CHAIN_HEADER_BYTES + list_entry_bytes(dimensions, key_bytes) <= PAGE_PAYLOAD_SIZE
}

pub(crate) fn encode_list_entry(vector: &[f32], key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(list_entry_bytes(vector.len(), key.len()));
    out.extend_from_slice(&u16::try_from(key.len()).expect("bounded key").to_le_bytes());
    put_vector(&mut out, vector);
    out.extend_from_slice(key);
    out
}

/// Calls `visit(vector, key)` for each entry of a list page; returns the next page.
pub(crate) fn for_each_list_entry(
    page_id: PageId,
    payload: &[u8],
    dimensions: usize,
    mut visit: impl FnMut(&[u8], &[u8]),
) -> Result<PageId> {
    let (next, count, used) = decode_chain_header(page_id, payload)?;
    let mut offset = CHAIN_HEADER_BYTES;
    for _ in 0..count {
        if offset + LIST_ENTRY_HEADER_BYTES > used {
            return Err(corrupt(page_id, "list entry beyond the bytes used"));
        }
        let key_bytes = usize::from(get_u16(payload, offset));
        let end = offset + list_entry_bytes(dimensions, key_bytes);
        if end > used {
            return Err(corrupt(page_id, "list entry beyond the bytes used"));
        }
        let vector_at = offset + LIST_ENTRY_HEADER_BYTES;
        let key_at = vector_at + 4 * dimensions;
        visit(&payload[vector_at..key_at], &payload[key_at..end]);
        offset = end;
    }
    Ok(next)
}
