//! Which node change is a compaction, described as the page store's byte-level `Compact` op
//! (docs/design/013-wal-node-records.md, "Compaction records").
//!
//! `NodeMut::compact` slides every cell toward the end of the page and rewrites its slot.
//! Logged as moves and writes, that is a move per run of cells and a write of every moved
//! slot; the page store's `RegionCompaction` redoes it from the page instead, given the cell
//! area, its holes and the slot array. The page store knows nothing of nodes: this module
//! finds the holes and checks that the op reproduces where the node code put the cells.

use tierdb_common::PAGE_PAYLOAD_SIZE;
use tierdb_storage::{Gap, RegionCompaction};

use crate::node::{Node, FRAGMENTED_OFFSET, HEADER_BYTES};

/// The `Compact` op that turns `before` into a page whose kept cells (those `after` still
/// holds, byte for byte) sit where `after` has them, if the change compacted the node:
/// `before` had fragmented bytes, `after` has none, and every kept cell moved up by exactly
/// the holes above it (at least one moved). `None` otherwise, and for bytes that are not a
/// valid node; the caller plans the rest of the change from the compacted page, so a `None`
/// or an unhelpful op costs bytes, never correctness.
pub fn compaction_of(before: &[u8], after: &[u8]) -> Option<RegionCompaction> {
    // Every change of every node comes here: the header test first, before `Node::open`
    // walks the slots.
    if fragmented_field(before)? == 0 || fragmented_field(after)? != 0 {
        return None;
    }
    let old = Node::open(before).ok()?;
    let new = Node::open(after).ok()?;
    if new.is_leaf() != old.is_leaf() {
        return None;
    }
    // (offset in before, length, offset in after), by offset in before.
    let mut kept = kept_spans(&old, &new, before, after);
    kept.sort_unstable_by_key(|span| span.0);
    let start = old.cell_area_start();
    let gaps = gaps_between(start, &kept)?;
    let mut moved = false;
    for (offset, _, new_offset) in &kept {
        let above: usize = gaps
            .iter()
            .filter(|gap| usize::from(gap.offset) >= *offset)
            .map(|gap| usize::from(gap.length))
            .sum();
        if offset + above != *new_offset {
            return None;
        }
        moved |= above != 0;
    }
    let compaction = RegionCompaction {
        start: u16::try_from(start).ok()?,
        pointers: u16::try_from(HEADER_BYTES).expect("a header offset"),
        pointer_count: u16::try_from(old.count()).ok()?,
        gaps,
    };
    (moved && compaction.validate().is_ok()).then_some(compaction)
}

/// The fragmented-bytes field of a node's header, if `bytes` is a whole payload.
fn fragmented_field(bytes: &[u8]) -> Option<u16> {
    if bytes.len() != PAGE_PAYLOAD_SIZE {
        return None;
    }
    Some(u16::from_le_bytes([bytes[FRAGMENTED_OFFSET], bytes[FRAGMENTED_OFFSET + 1]]))
}

/// The cells of `old` that `new` holds unchanged (same key, same cell bytes), and the high key
/// if it is unchanged: (offset in old, length, offset in new).
fn kept_spans(
    old: &Node<'_>,
    new: &Node<'_>,
    before: &[u8],
    after: &[u8],
) -> Vec<(usize, usize, usize)> {
    let mut kept = Vec::with_capacity(old.count() + 1);
    for index in 0..old.count() {
        let (offset, length) = old.cell_span(index);
        let Ok(new_index) = new.search(old.key(index)) else { continue };
        let (new_offset, new_length) = new.cell_span(new_index);
        if new_length == length
            && before[offset..offset + length] == after[new_offset..new_offset + length]
        {
            kept.push((offset, length, new_offset));
        }
    }
    let (high_offset, high_length) = old.high_key_span();
    let (new_high_offset, new_high_length) = new.high_key_span();
    if high_offset != 0
        && new_high_offset != 0
        && new_high_length == high_length
        && before[high_offset..high_offset + high_length]
            == after[new_high_offset..new_high_offset + high_length]
    {
        kept.push((high_offset, high_length, new_high_offset));
    }
    kept
}

/// The parts of `[start, payload end)` that no kept span covers; `None` if there are none or
/// the spans overlap (a corrupt node: no op is worth logging for it).
fn gaps_between(start: usize, kept: &[(usize, usize, usize)]) -> Option<Vec<Gap>> {
    let mut gaps = Vec::new();
    let mut at = start;
    for (offset, length, _) in kept.iter().copied().chain([(PAGE_PAYLOAD_SIZE, 0, 0)]) {
        if offset < at {
            return None;
        }
        if offset > at {
            gaps.push(Gap {
                offset: u16::try_from(at).ok()?,
                length: u16::try_from(offset - at).ok()?,
            });
        }
        at = offset + length;
    }
    (!gaps.is_empty()).then_some(gaps)
}
