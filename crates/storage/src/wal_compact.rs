//! The `Compact` page op: remove gaps from a region at the end of a payload, sliding the rest
//! of the region toward the end, and relocate a table of u16 offsets that point into it
//! (docs/design/013-wal-node-records.md, "Compaction records").
//!
//! The op is defined on bytes, not on B+tree nodes: the access layer recognises a node
//! compaction and describes it as a region (the cell area), gaps (the holes) and a pointer
//! array (the slot array). Redo replays it from the page itself, so a compaction that moved
//! every cell of a leaf is logged in a few bytes per hole instead of a move per run of
//! cells and a write of every moved cell's slot.

use tierdb_common::PAGE_PAYLOAD_SIZE;

use crate::codec::{u64_to_usize, usize_to_u64, DecodeResult, Reader, Writer};

/// A byte range of the region that the op removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    pub offset: u16,
    pub length: u16,
}

impl Gap {
    fn end(&self) -> usize {
        usize::from(self.offset) + usize::from(self.length)
    }
}

/// Most gaps one op may carry: every gap is at least one byte and is followed by at least one
/// kept byte or the payload's end, so a payload holds at most half its size in gaps.
pub const GAPS_MAX: usize = PAGE_PAYLOAD_SIZE / 2;

/// The region `[start, payload end)` loses `gaps` (ascending, disjoint, non-empty); the
/// `pointer_count` little-endian u16 values at `pointers` that point into the region are
/// relocated with the bytes they point to. Invariants (checked by `validate`, which decoding
/// and construction call): the pointer array lies below the region, the gaps within it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionCompaction {
    pub start: u16,
    pub pointers: u16,
    pub pointer_count: u16,
    pub gaps: Vec<Gap>,
}

impl RegionCompaction {
    /// Fails unless the op's ranges are in bounds and its gaps ascending, disjoint and
    /// non-empty: `apply` relies on it.
    pub fn validate(&self) -> Result<(), String> {
        let start = usize::from(self.start);
        let pointers_end = usize::from(self.pointers) + 2 * usize::from(self.pointer_count);
        if start > PAGE_PAYLOAD_SIZE || pointers_end > start {
            return Err(format!(
                "page compaction bounds start={start} pointers_end={pointers_end}"
            ));
        }
        if self.gaps.is_empty() || self.gaps.len() > GAPS_MAX {
            return Err(format!("page compaction gap count={}", self.gaps.len()));
        }
        let mut previous_end = start;
        for gap in &self.gaps {
            if gap.length == 0 || usize::from(gap.offset) < previous_end {
                return Err(format!(
                    "page compaction gap out of order offset={} length={} previous_end={previous_end}",
                    gap.offset, gap.length
                ));
            }
            previous_end = gap.end();
        }
        if previous_end > PAGE_PAYLOAD_SIZE {
            return Err(format!("page compaction gap beyond payload end={previous_end}"));
        }
        Ok(())
    }

    /// Applies the op to a payload: the one definition, used by `Mtr` and by redo. Each run of
    /// region bytes between gaps, highest first, moves up by the gaps above it (so no run's
    /// source is overwritten before it is copied); region bytes no run lands on keep their
    /// old values. Then each pointer `p` into the region gains the gaps at or above `p`.
    pub fn apply(&self, payload: &mut [u8]) {
        debug_assert!(self.validate().is_ok(), "applying an invalid compaction {self:?}");
        assert_eq!(payload.len(), PAGE_PAYLOAD_SIZE, "a whole payload");
        let mut shift = 0;
        let mut run_end = PAGE_PAYLOAD_SIZE;
        for gap in self.gaps.iter().rev() {
            if shift != 0 {
                payload.copy_within(gap.end()..run_end, gap.end() + shift);
            }
            shift += usize::from(gap.length);
            run_end = usize::from(gap.offset);
        }
        let start = usize::from(self.start);
        payload.copy_within(start..run_end, start + shift);
        // above[i]: the gap bytes of gaps i.. (those at or above the i-th gap's offset).
        let mut above = vec![0; self.gaps.len() + 1];
        for (index, gap) in self.gaps.iter().enumerate().rev() {
            above[index] = above[index + 1] + usize::from(gap.length);
        }
        for index in 0..usize::from(self.pointer_count) {
            let at = usize::from(self.pointers) + 2 * index;
            let pointer = usize::from(u16::from_le_bytes([payload[at], payload[at + 1]]));
            if pointer < start || pointer >= PAGE_PAYLOAD_SIZE {
                continue;
            }
            let first_above = self.gaps.partition_point(|gap| usize::from(gap.offset) < pointer);
            let moved = u16::try_from(pointer + above[first_above]).expect("within the payload");
            payload[at..at + 2].copy_from_slice(&moved.to_le_bytes());
        }
    }

    /// The bytes the op sets, as a `Move` counts its length (for the logical-bytes
    /// statistic): the region bytes that move (those below the highest gap, gaps excluded)
    /// and the pointers.
    pub fn changed_bytes(&self) -> usize {
        let Some((highest, lower)) = self.gaps.split_last() else { return 0 };
        let lower_gaps: usize = lower.iter().map(|gap| usize::from(gap.length)).sum();
        usize::from(highest.offset) - usize::from(self.start) - lower_gaps
            + 2 * usize::from(self.pointer_count)
    }

    /// Encodes the fields after the code byte and page id (design 013's table).
    pub(crate) fn encode(&self, writer: &mut Writer) {
        writer.varint(u64::from(self.start));
        writer.varint(u64::from(self.pointers));
        writer.varint(u64::from(self.pointer_count));
        writer.varint(usize_to_u64(self.gaps.len()));
        let mut previous_end = usize::from(self.start);
        for gap in &self.gaps {
            writer.varint(usize_to_u64(usize::from(gap.offset) - previous_end));
            writer.varint(u64::from(gap.length));
            previous_end = gap.end();
        }
    }

    /// Decodes what `encode` wrote and validates it.
    pub(crate) fn decode(reader: &mut Reader<'_>) -> DecodeResult<RegionCompaction> {
        let start = payload_offset(reader, "region start")?;
        let pointers = payload_offset(reader, "pointer array")?;
        let pointer_count = payload_offset(reader, "pointer count")?;
        let count = u64_to_usize(reader.varint()?.min(usize_to_u64(GAPS_MAX + 1)));
        if count == 0 || count > GAPS_MAX {
            return Err(format!("page compaction gap count={count}"));
        }
        let mut gaps = Vec::with_capacity(count.min(64));
        let mut previous_end = usize::from(start);
        for _ in 0..count {
            let offset = previous_end + usize::from(payload_offset(reader, "gap")?);
            let length = payload_offset(reader, "gap length")?;
            let offset = u16::try_from(offset)
                .ok()
                .filter(|offset| usize::from(*offset) <= PAGE_PAYLOAD_SIZE)
                .ok_or_else(|| format!("page compaction gap beyond payload offset={offset}"))?;
            let gap = Gap { offset, length };
            previous_end = gap.end();
            gaps.push(gap);
        }
        let compaction = RegionCompaction { start, pointers, pointer_count, gaps };
        compaction.validate()?;
        Ok(compaction)
    }
}

/// A varint that must be at most the payload size.
fn payload_offset(reader: &mut Reader<'_>, what: &str) -> DecodeResult<u16> {
    let value = reader.varint()?;
    match u16::try_from(value) {
        Ok(value) if usize::from(value) <= PAGE_PAYLOAD_SIZE => Ok(value),
        _ => Err(format!("page compaction {what} beyond a payload value={value}")),
    }
}

/// Random valid compactions, for the proptests here and of whole records (wal.rs).
#[cfg(test)]
pub(crate) fn arbitrary_compaction() -> impl proptest::strategy::Strategy<Value = RegionCompaction>
{
    proptest::strategy::Strategy::prop_filter_map(
        (
            0usize..200,
            0u16..30,
            1usize..8_000,
            proptest::collection::vec((0u16..300, 1u16..300), 1..30),
        ),
        "gaps fit the payload",
        |(pointers, count, start, spans)| {
            let start = start.max(pointers + 2 * usize::from(count));
            let mut gaps = Vec::new();
            let mut at = start;
            for (skip, length) in spans {
                let offset = at + usize::from(skip);
                if offset + usize::from(length) > PAGE_PAYLOAD_SIZE {
                    break;
                }
                gaps.push(Gap { offset: u16::try_from(offset).ok()?, length });
                at = offset + usize::from(length);
            }
            let compaction = RegionCompaction {
                start: u16::try_from(start).ok()?,
                pointers: u16::try_from(pointers).ok()?,
                pointer_count: count,
                gaps,
            };
            compaction.validate().is_ok().then_some(compaction)
        },
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn round_trip(compaction: &RegionCompaction) -> (usize, RegionCompaction) {
        let mut writer = Writer::with_capacity(32);
        compaction.encode(&mut writer);
        let mut reader = Reader::new(&writer.bytes);
        let decoded = RegionCompaction::decode(&mut reader).expect("decodes");
        assert_eq!(reader.remaining(), 0);
        (writer.bytes.len(), decoded)
    }

    /// The op's meaning spelled out byte by byte, for comparison with `apply`.
    fn reference(before: &[u8], compaction: &RegionCompaction) -> Vec<u8> {
        let start = usize::from(compaction.start);
        let in_gap = |at: usize| {
            compaction.gaps.iter().any(|gap| (usize::from(gap.offset)..gap.end()).contains(&at))
        };
        let kept: Vec<u8> =
            (start..PAGE_PAYLOAD_SIZE).filter(|at| !in_gap(*at)).map(|at| before[at]).collect();
        let mut after = before.to_vec();
        after[PAGE_PAYLOAD_SIZE - kept.len()..].copy_from_slice(&kept);
        for index in 0..usize::from(compaction.pointer_count) {
            let at = usize::from(compaction.pointers) + 2 * index;
            let pointer = usize::from(u16::from_le_bytes([before[at], before[at + 1]]));
            if (start..PAGE_PAYLOAD_SIZE).contains(&pointer) {
                let gaps_above: usize = compaction
                    .gaps
                    .iter()
                    .filter(|gap| usize::from(gap.offset) >= pointer)
                    .map(|gap| usize::from(gap.length))
                    .sum();
                let moved = u16::try_from(pointer + gaps_above).unwrap();
                after[at..at + 2].copy_from_slice(&moved.to_le_bytes());
            }
        }
        after
    }

    #[test]
    fn a_leaf_compaction_is_a_few_bytes_per_gap() {
        let compaction = RegionCompaction {
            start: 6_000,
            pointers: 40,
            pointer_count: 30,
            gaps: vec![
                Gap { offset: 6_000, length: 250 },
                Gap { offset: 6_900, length: 260 },
                Gap { offset: 7_400, length: 255 },
                Gap { offset: 7_900, length: 250 },
            ],
        };
        let (size, decoded) = round_trip(&compaction);
        assert_eq!(decoded, compaction);
        // Moved: 6,250..6,900, 7,160..7,400 and 7,655..7,900; 30 pointers.
        assert_eq!(compaction.changed_bytes(), 650 + 240 + 245 + 60);
        // start 2, pointers 1, count 1, gap count 1; gaps: delta 1 + length 2 (first), then
        // deltas of 650, 240, 245 (2 bytes each) + lengths 2.
        assert_eq!(size, 5 + 3 + 4 + 4 + 4);
    }

    #[test]
    fn invalid_compactions_are_rejected() {
        let valid = RegionCompaction {
            start: 100,
            pointers: 40,
            pointer_count: 30,
            gaps: vec![Gap { offset: 200, length: 10 }],
        };
        assert!(valid.validate().is_ok());
        let cases = [
            RegionCompaction { pointer_count: 31, ..valid.clone() },
            RegionCompaction { gaps: vec![], ..valid.clone() },
            RegionCompaction { gaps: vec![Gap { offset: 90, length: 10 }], ..valid.clone() },
            RegionCompaction { gaps: vec![Gap { offset: 200, length: 0 }], ..valid.clone() },
            RegionCompaction { gaps: vec![Gap { offset: 8_150, length: 11 }], ..valid.clone() },
            RegionCompaction {
                gaps: vec![Gap { offset: 200, length: 10 }, Gap { offset: 205, length: 10 }],
                ..valid.clone()
            },
        ];
        for case in cases {
            assert!(case.validate().is_err(), "{case:?}");
            let mut writer = Writer::with_capacity(32);
            case.encode(&mut writer);
            assert!(RegionCompaction::decode(&mut Reader::new(&writer.bytes)).is_err());
        }
        // A gap count beyond what a payload can hold, without the gaps.
        let mut writer = Writer::with_capacity(16);
        for value in [100, 40, 30, 1 << 40] {
            writer.varint(value);
        }
        let error = RegionCompaction::decode(&mut Reader::new(&writer.bytes)).unwrap_err();
        assert!(error.contains("gap count"), "{error}");
    }

    proptest! {
        #[test]
        fn apply_matches_the_reference_and_round_trips(
            compaction in arbitrary_compaction(),
            seed in any::<u64>(),
            pointer_targets in prop::collection::vec(any::<u16>(), 30),
        ) {
            let mut state = seed;
            let mut before: Vec<u8> = (0..PAGE_PAYLOAD_SIZE)
                .map(|_| {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    state.to_le_bytes()[7]
                })
                .collect();
            // Pointers anywhere, mostly into the region (kept bytes and gaps alike).
            for (index, target) in pointer_targets.iter().take(usize::from(compaction.pointer_count)).enumerate() {
                let span = PAGE_PAYLOAD_SIZE - usize::from(compaction.start) + 64;
                let value = usize::from(compaction.start) + usize::from(*target) % span;
                let value = u16::try_from(value).unwrap().saturating_sub(32);
                let at = usize::from(compaction.pointers) + 2 * index;
                before[at..at + 2].copy_from_slice(&value.to_le_bytes());
            }
            let mut applied = before.clone();
            compaction.apply(&mut applied);
            prop_assert_eq!(&applied, &reference(&before, &compaction));
            let (_, decoded) = round_trip(&compaction);
            prop_assert_eq!(decoded, compaction);
        }
    }
}
