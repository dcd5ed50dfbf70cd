//! The page map: page id -> (segment, slot) of the page's current durable image, and the
//! liveness of every segment.
//!
//! Updates are made durable by WAL records (`MapUpdate`) and, at checkpoints, by writing the
//! chunks changed since the last checkpoint as new objects. Page ids are allocated densely, so
//! the map is a vector of fixed-size chunks; a checkpoint rewrites only dirty chunks.
//!
//! Chunk object `map/{chunk:08x}.{checkpoint:016x}` (little-endian):
//!
//! | offset | size       | field                                             |
//! |-------:|-----------:|---------------------------------------------------|
//! | 0      | 8          | magic `TDBMAP01`                                  |
//! | 8      | 8          | chunk index                                       |
//! | 16     | 12 * 8192  | entries: segment id u64 (0 = none), slot u32      |
//! | end-4  | 4          | CRC32C of everything before                       |

use std::collections::{BTreeMap, BTreeSet};

use tierdb_common::{Lsn, PageId, SegmentId};

use crate::codec::{u64_to_usize, usize_to_u64, verify_sealed, Reader, Writer};

/// Entries per chunk: 8,192 pages (64 MiB of data) per 96 KiB chunk object, so that a
/// checkpoint after scattered updates rewrites little, while a 1 TiB database still has only
/// 16,384 chunks.
pub(crate) const CHUNK_ENTRIES: usize = 8_192;
const CHUNK_MAGIC: &[u8; 8] = b"TDBMAP01";
pub(crate) const MAP_PREFIX: &str = "map/";

/// Where a page's current durable image lives.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PageLocation {
    pub segment: SegmentId,
    pub slot: u32,
}

impl PageLocation {
    pub fn is_none(&self) -> bool {
        self.segment == SegmentId::NONE
    }
}

/// How much of a segment is still referenced.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SegmentUsage {
    pub slots: u32,
    pub live: u32,
}

#[derive(Default)]
pub(crate) struct PageMap {
    chunks: Vec<Box<[PageLocation]>>,
    dirty_chunks: BTreeSet<usize>,
    segments: BTreeMap<SegmentId, SegmentUsage>,
    /// End LSN of the last `MapUpdate` applied.
    pub applied_lsn: Lsn,
}

fn split(page_id: PageId) -> (usize, usize) {
    let index = u64_to_usize(page_id.0);
    (index / CHUNK_ENTRIES, index % CHUNK_ENTRIES)
}

impl PageMap {
    pub fn get(&self, page_id: PageId) -> Option<PageLocation> {
        let (chunk, entry) = split(page_id);
        let location = *self.chunks.get(chunk)?.get(entry)?;
        (!location.is_none()).then_some(location)
    }

    /// Points `page_id` at `location`, keeping segment liveness exact.
    pub fn set(&mut self, page_id: PageId, location: PageLocation) {
        let (chunk, entry) = split(page_id);
        while self.chunks.len() <= chunk {
            self.chunks.push(vec![PageLocation::default(); CHUNK_ENTRIES].into_boxed_slice());
        }
        let old = std::mem::replace(&mut self.chunks[chunk][entry], location);
        if !old.is_none() {
            let usage = self.segments.get_mut(&old.segment).expect("old segment is registered");
            assert!(usage.live > 0, "segment liveness underflow segment={}", old.segment);
            usage.live -= 1;
        }
        if !location.is_none() {
            let usage = self.segments.get_mut(&location.segment).expect("new segment registered");
            usage.live += 1;
            assert!(usage.live <= usage.slots, "segment liveness overflow");
        }
        self.dirty_chunks.insert(chunk);
    }

    pub fn register_segment(&mut self, segment: SegmentId, slots: u32) {
        self.segments.entry(segment).or_insert(SegmentUsage { slots, live: 0 });
    }

    pub fn forget_segment(&mut self, segment: SegmentId) {
        let usage = self.segments.remove(&segment);
        assert!(usage.is_none_or(|usage| usage.live == 0), "forgetting a live segment");
    }

    pub fn segments(&self) -> &BTreeMap<SegmentId, SegmentUsage> {
        &self.segments
    }

    pub fn max_segment(&self) -> SegmentId {
        self.segments.keys().next_back().copied().unwrap_or(SegmentId::NONE)
    }

    /// Every page with a durable image, in page id order.
    pub fn entries(&self) -> impl Iterator<Item = (PageId, PageLocation)> + '_ {
        self.chunks.iter().enumerate().flat_map(|(chunk, entries)| {
            entries.iter().enumerate().filter(|(_, location)| !location.is_none()).map(
                move |(entry, location)| {
                    (PageId(usize_to_u64(chunk * CHUNK_ENTRIES + entry)), *location)
                },
            )
        })
    }

    pub fn max_page_id(&self) -> PageId {
        self.entries().last().map(|(page_id, _)| page_id).unwrap_or(PageId::INVALID)
    }

    pub fn take_dirty_chunks(&mut self) -> BTreeSet<usize> {
        std::mem::take(&mut self.dirty_chunks)
    }

    pub fn restore_dirty_chunks(&mut self, chunks: BTreeSet<usize>) {
        self.dirty_chunks.extend(chunks);
    }

    pub fn live_pages(&self) -> u64 {
        self.segments.values().map(|usage| u64::from(usage.live)).sum()
    }

    /// Slots of segments that still hold a live page, per live page: the space amplification
    /// that compaction can reduce (dead segments are deleted by the next checkpoint).
    pub fn referenced_amplification(&self) -> f64 {
        let live = self.live_pages();
        if live == 0 {
            return 1.0;
        }
        let referenced: u64 = self
            .segments
            .values()
            .filter(|usage| usage.live > 0)
            .map(|usage| u64::from(usage.slots))
            .sum();
        #[allow(clippy::cast_precision_loss)]
        let ratio = referenced as f64 / live as f64;
        ratio
    }

    pub fn total_slots(&self) -> u64 {
        self.segments.values().map(|usage| u64::from(usage.slots)).sum()
    }

    pub fn encode_chunk(&self, chunk: usize) -> Vec<u8> {
        let mut writer = Writer::with_capacity(16 + 12 * CHUNK_ENTRIES + 4);
        writer.raw(CHUNK_MAGIC);
        writer.u64(usize_to_u64(chunk));
        for location in self.chunks[chunk].iter() {
            writer.u64(location.segment.0);
            writer.u32(location.slot);
        }
        writer.seal();
        writer.bytes
    }

    /// Loads a chunk read from the volume. Liveness is rebuilt from the loaded entries, so
    /// every referenced segment must already be registered.
    pub fn load_chunk(&mut self, expected_chunk: usize, bytes: &[u8]) -> Result<(), String> {
        let body = verify_sealed(bytes)?;
        let mut reader = Reader::new(body);
        reader.expect_magic(CHUNK_MAGIC)?;
        let chunk = u64_to_usize(reader.u64()?);
        if chunk != expected_chunk {
            return Err(format!("wrong chunk index expected={expected_chunk} found={chunk}"));
        }
        if reader.remaining() != 12 * CHUNK_ENTRIES {
            return Err(format!("wrong entry bytes found={}", reader.remaining()));
        }
        for entry in 0..CHUNK_ENTRIES {
            let segment = SegmentId(reader.u64()?);
            let slot = reader.u32()?;
            if segment == SegmentId::NONE {
                continue;
            }
            let Some(usage) = self.segments.get(&segment) else {
                return Err(format!("entry={entry} references unknown segment={segment}"));
            };
            if slot >= usage.slots {
                return Err(format!("entry={entry} slot={slot} beyond segment={segment}"));
            }
            if usage.live >= usage.slots {
                return Err(format!(
                    "entry={entry} more live pages than slots in segment={segment}"
                ));
            }
            let page_id = PageId(usize_to_u64(chunk * CHUNK_ENTRIES + entry));
            self.set(page_id, PageLocation { segment, slot });
        }
        self.dirty_chunks.remove(&chunk);
        Ok(())
    }
}

pub(crate) fn chunk_name(chunk: usize, checkpoint: u64) -> String {
    format!("{MAP_PREFIX}{chunk:08x}.{checkpoint:016x}")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn chunk_round_trips_with_liveness(entries in prop::collection::btree_set(1u64..(CHUNK_ENTRIES as u64), 1..200)) {
            let mut map = PageMap::default();
            let mut loaded = PageMap::default();
            for segment in 1..4 {
                map.register_segment(SegmentId(segment), 100);
                loaded.register_segment(SegmentId(segment), 100);
            }
            for (index, &page) in entries.iter().enumerate() {
                let segment = SegmentId(1 + u64::try_from(index % 3).unwrap());
                let slot = u32::try_from(index / 3).unwrap();
                map.set(PageId(page), PageLocation { segment, slot });
            }
            let bytes = map.encode_chunk(0);
            loaded.load_chunk(0, &bytes).unwrap();
            prop_assert_eq!(loaded.entries().collect::<Vec<_>>(), map.entries().collect::<Vec<_>>());
            prop_assert_eq!(loaded.segments(), map.segments());
            prop_assert_eq!(loaded.live_pages(), u64::try_from(entries.len()).unwrap());
            let mut damaged = bytes.clone();
            damaged[100] ^= 4;
            prop_assert!(PageMap::default().load_chunk(0, &damaged).is_err());
            prop_assert!(loaded.load_chunk(1, &bytes).is_err());
        }
    }

    #[test]
    fn chunk_with_two_pages_in_one_slot_is_rejected_not_a_panic() {
        let mut map = PageMap::default();
        map.register_segment(SegmentId(1), 1);
        map.set(PageId(1), PageLocation { segment: SegmentId(1), slot: 0 });
        let mut bytes = map.encode_chunk(0);
        // Point page 2 at the same slot and reseal: a valid checksum over inconsistent content.
        let entry = 16 + 12 * 2;
        bytes[entry..entry + 8].copy_from_slice(&1u64.to_le_bytes());
        let body = bytes.len() - 4;
        let checksum = crc32c::crc32c(&bytes[..body]);
        bytes[body..].copy_from_slice(&checksum.to_le_bytes());
        let mut loaded = PageMap::default();
        loaded.register_segment(SegmentId(1), 1);
        assert!(loaded.load_chunk(0, &bytes).unwrap_err().contains("more live pages than slots"));
    }

    #[test]
    fn moving_a_page_moves_its_liveness() {
        let mut map = PageMap::default();
        map.register_segment(SegmentId(1), 2);
        map.register_segment(SegmentId(2), 2);
        map.set(PageId(3), PageLocation { segment: SegmentId(1), slot: 0 });
        map.set(PageId(3), PageLocation { segment: SegmentId(2), slot: 1 });
        assert_eq!(map.segments()[&SegmentId(1)].live, 0);
        assert_eq!(map.segments()[&SegmentId(2)].live, 1);
        assert_eq!(map.get(PageId(3)), Some(PageLocation { segment: SegmentId(2), slot: 1 }));
        assert_eq!(map.get(PageId(4)), None);
    }
}
