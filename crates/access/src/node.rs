//! B+tree nodes: slotted pages of variable-length cells, operated on as plain bytes.
//!
//! A node lives in the payload of one page. Node operations are pure functions of the bytes
//! (no I/O, no logging), so they are tested exhaustively on their own; the tree applies them
//! to a copy of the payload and logs the changed byte ranges through the page store (see
//! `diff_ranges`), which keeps redo physical without full-page images.
//!
//! Layout of the payload (little-endian; docs/design/007-btree.md):
//!
//! | offset | size  | field                                                           |
//! |-------:|------:|-----------------------------------------------------------------|
//! | 0      | 1     | kind: 1 leaf, 2 internal                                        |
//! | 1      | 1     | level: 0 for leaves, parent = child + 1                         |
//! | 2      | 2     | cell count n                                                    |
//! | 4      | 2     | cell area start: lowest offset used by a cell                   |
//! | 6      | 2     | fragmented bytes: dead space inside the cell area               |
//! | 8      | 8     | right sibling page id (0: none)                                 |
//! | 16     | 8     | left sibling page id (0: none)                                  |
//! | 24     | 8     | leftmost child (internal nodes): keys below the first separator |
//! | 32     | 2     | high key offset (0: no high key, the node extends to +infinity) |
//! | 34     | 2     | high key length                                                 |
//! | 36     | 4     | reserved, zero                                                  |
//! | 40     | 2 n   | slot array: cell offsets in key order                           |
//! | ...    |       | free space                                                      |
//! | start  |       | cells, growing down from the end of the payload                 |
//!
//! Cell formats:
//! - leaf: key length u16, value length u32, key, value (the tree stores large values in
//!   overflow pages and a fixed-size reference here);
//! - internal: key length u16, child page id u64, key: the child holds keys >= key.

use std::cmp::Ordering;

use tierdb_common::PAGE_PAYLOAD_SIZE;

const KIND_OFFSET: usize = 0;
const LEVEL_OFFSET: usize = 1;
const COUNT_OFFSET: usize = 2;
const CELL_START_OFFSET: usize = 4;
pub(crate) const FRAGMENTED_OFFSET: usize = 6;
const RIGHT_SIBLING_OFFSET: usize = 8;
const LEFT_SIBLING_OFFSET: usize = 16;
const LEFTMOST_CHILD_OFFSET: usize = 24;
/// Where the high key's offset is stored (the offset of the key itself is the value).
const HIGH_KEY_AT_OFFSET: usize = 32;
const HIGH_KEY_LENGTH_OFFSET: usize = 34;
const RESERVED_OFFSET: usize = 36;
pub(crate) const HEADER_BYTES: usize = 40;
const SLOT_BYTES: usize = 2;
const LEAF_CELL_HEADER_BYTES: usize = 6;
const INTERNAL_CELL_HEADER_BYTES: usize = 10;
pub(crate) const KIND_LEAF: u8 = 1;
pub(crate) const KIND_INTERNAL: u8 = 2;

/// Largest key a node accepts. With `INLINE_VALUE_BYTES_MAX`, a maximal leaf cell takes
/// 6 + 1,024 + 960 + 2 (slot) = 1,992 bytes, so a node's 8,120 bytes always hold three of them
/// beside a maximal high key (3 x 1,992 + 1,024 = 7,000): a split of a full node can always
/// leave at least one cell, and room for the new one, on each side.
pub const KEY_BYTES_MAX: usize = 1024;
/// Largest stored value inline in a leaf (the tree's tag byte included): values of 959 bytes
/// and more go to overflow pages.
pub const INLINE_VALUE_BYTES_MAX: usize = 960;

// The header fields follow each other as in the table above.
const _: () = assert!(KIND_OFFSET + 1 == LEVEL_OFFSET && LEVEL_OFFSET + 1 == COUNT_OFFSET);
const _: () = assert!(COUNT_OFFSET + 2 == CELL_START_OFFSET);
const _: () = assert!(CELL_START_OFFSET + 2 == FRAGMENTED_OFFSET);
const _: () = assert!(FRAGMENTED_OFFSET + 2 == RIGHT_SIBLING_OFFSET);
const _: () = assert!(RIGHT_SIBLING_OFFSET + 8 == LEFT_SIBLING_OFFSET);
const _: () = assert!(LEFT_SIBLING_OFFSET + 8 == LEFTMOST_CHILD_OFFSET);
const _: () = assert!(LEFTMOST_CHILD_OFFSET + 8 == HIGH_KEY_AT_OFFSET);
const _: () = assert!(HIGH_KEY_AT_OFFSET + 2 == HIGH_KEY_LENGTH_OFFSET);
const _: () = assert!(HIGH_KEY_LENGTH_OFFSET + 2 == RESERVED_OFFSET);
const _: () = assert!(RESERVED_OFFSET + 4 == HEADER_BYTES);
// Offsets within the payload (cell area start, slots, high key) are stored as u16.
const _: () = assert!(PAGE_PAYLOAD_SIZE <= u16::MAX as usize);
// Key lengths are stored as u16 in cells and in the header.
const _: () = assert!(KEY_BYTES_MAX <= u16::MAX as usize);
/// The largest leaf cell with its slot: 6 + 1,024 + 960 + 2 = 1,992 bytes.
const LEAF_CELL_WITH_SLOT_BYTES_MAX: usize =
    LEAF_CELL_HEADER_BYTES + KEY_BYTES_MAX + INLINE_VALUE_BYTES_MAX + SLOT_BYTES;
/// The largest internal cell with its slot: 10 + 1,024 + 2 = 1,036 bytes.
const INTERNAL_CELL_WITH_SLOT_BYTES_MAX: usize =
    INTERNAL_CELL_HEADER_BYTES + KEY_BYTES_MAX + SLOT_BYTES;
// `KEY_BYTES_MAX`'s promise: a node holds three maximal cells beside a maximal high key, so
// a split of a full node leaves at least one cell, and room for the new one, on each side.
const _: () =
    assert!(3 * LEAF_CELL_WITH_SLOT_BYTES_MAX + KEY_BYTES_MAX <= PAGE_PAYLOAD_SIZE - HEADER_BYTES);
const _: () = assert!(
    3 * INTERNAL_CELL_WITH_SLOT_BYTES_MAX + KEY_BYTES_MAX <= PAGE_PAYLOAD_SIZE - HEADER_BYTES
);

fn get_u16(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes(bytes[offset..offset + 2].try_into().expect("2 bytes"))
}

fn get_u32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"))
}

fn get_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

fn put_u16(bytes: &mut [u8], offset: usize, value: u16) {
    bytes[offset..offset + 2].copy_from_slice(&value.to_le_bytes());
}

fn put_u32(bytes: &mut [u8], offset: usize, value: u32) {
    bytes[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
}

fn put_u64(bytes: &mut [u8], offset: usize, value: u64) {
    bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

fn to_u16(value: usize) -> u16 {
    u16::try_from(value).expect("offsets within a page fit in u16")
}

/// What a cell holds besides its key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CellValue<'a> {
    Leaf(&'a [u8]),
    Child(u64),
}

/// A read-only view of a node.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    bytes: &'a [u8],
}

/// A mutable node.
pub struct NodeMut<'a> {
    bytes: &'a mut [u8],
}

/// Why bytes are not a valid node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCorruption(pub String);

impl<'a> Node<'a> {
    /// Views `bytes` (a page payload) as a node, checking every offset so that a corrupt page
    /// is an error, never a panic or an out-of-bounds read later.
    pub fn open(bytes: &'a [u8]) -> Result<Node<'a>, NodeCorruption> {
        assert_eq!(bytes.len(), PAGE_PAYLOAD_SIZE, "a node is one page payload");
        let node = Node { bytes };
        node.validate()?;
        Ok(node)
    }

    /// Views `bytes` as a node without checking it: only for bytes that passed `open` and
    /// have not changed since (the buffer pool's format-checked flag says so).
    pub(crate) fn open_prechecked(bytes: &'a [u8]) -> Node<'a> {
        assert_eq!(bytes.len(), PAGE_PAYLOAD_SIZE, "a node is one page payload");
        let node = Node { bytes };
        debug_assert!(node.validate().is_ok(), "a format-checked page changed unseen");
        node
    }

    fn validate(&self) -> Result<(), NodeCorruption> {
        let fail = |detail: String| Err(NodeCorruption(detail));
        let kind = self.bytes[KIND_OFFSET];
        if kind != KIND_LEAF && kind != KIND_INTERNAL {
            return fail(format!("bad node kind={kind}"));
        }
        if (kind == KIND_LEAF) != (self.level() == 0) {
            return fail(format!("kind={kind} disagrees with level={}", self.level()));
        }
        let count = self.count();
        let slots_end = HEADER_BYTES + count * SLOT_BYTES;
        let cell_start = usize::from(get_u16(self.bytes, CELL_START_OFFSET));
        if slots_end > cell_start || cell_start > PAGE_PAYLOAD_SIZE {
            return fail(format!(
                "slot array end={slots_end} overlaps cell area start={cell_start}"
            ));
        }
        for index in 0..count {
            let offset = self.slot(index);
            if offset < cell_start || offset + self.cell_header_bytes() > PAGE_PAYLOAD_SIZE {
                return fail(format!("slot={index} offset={offset} outside the cell area"));
            }
            let length = self.cell_length(offset);
            if offset + length > PAGE_PAYLOAD_SIZE {
                return fail(format!("slot={index} cell overruns the page"));
            }
        }
        let fragmented = usize::from(get_u16(self.bytes, FRAGMENTED_OFFSET));
        if fragmented > PAGE_PAYLOAD_SIZE - cell_start {
            return fail(format!("fragmented bytes={fragmented} exceed the cell area"));
        }
        let (high_offset, high_length) = self.high_key_span();
        if high_offset != 0
            && (high_offset < cell_start || high_offset + high_length > PAGE_PAYLOAD_SIZE)
        {
            return fail("high key outside the cell area".to_string());
        }
        Ok(())
    }

    /// Cells may not overlap: compaction copies them, and two slots sharing bytes would make
    /// a change to one silently change the other. Checked before a node is changed
    /// (`NodeMut::open`), not on every read: it walks every cell, and a read of overlapping
    /// cells stays within the page (`validate` bounds every cell).
    fn validate_disjoint_cells(&self) -> Result<(), NodeCorruption> {
        // One bit per payload byte (on the stack): marking each cell's span and finding a bit
        // already set is an overlap. Cheaper than sorting the spans, which showed in every
        // leaf change's profile.
        let mut used = [0u64; PAGE_PAYLOAD_SIZE.div_ceil(64)];
        let (high_offset, high_length) = self.high_key_span();
        let high = (high_offset != 0).then_some((high_offset, high_length));
        let cells = (0..self.count()).map(|index| {
            let offset = self.slot(index);
            (offset, self.cell_length(offset))
        });
        for (offset, length) in cells.chain(high) {
            if !mark_span(&mut used, offset, offset + length) {
                return Err(NodeCorruption("overlapping cells".to_string()));
            }
        }
        Ok(())
    }

    pub fn is_leaf(&self) -> bool {
        self.bytes[KIND_OFFSET] == KIND_LEAF
    }
    pub fn level(&self) -> u8 {
        self.bytes[LEVEL_OFFSET]
    }
    pub fn count(&self) -> usize {
        usize::from(get_u16(self.bytes, COUNT_OFFSET))
    }
    pub fn right_sibling(&self) -> u64 {
        get_u64(self.bytes, RIGHT_SIBLING_OFFSET)
    }
    pub fn left_sibling(&self) -> u64 {
        get_u64(self.bytes, LEFT_SIBLING_OFFSET)
    }
    pub fn leftmost_child(&self) -> u64 {
        get_u64(self.bytes, LEFTMOST_CHILD_OFFSET)
    }

    /// Where the cell area starts: the lowest offset a cell may use.
    pub(crate) fn cell_area_start(&self) -> usize {
        usize::from(get_u16(self.bytes, CELL_START_OFFSET))
    }

    /// The (offset, length) of cell `index`'s bytes.
    pub(crate) fn cell_span(&self, index: usize) -> (usize, usize) {
        let offset = self.slot(index);
        (offset, self.cell_length(offset))
    }

    /// The (offset, length) of the high key's bytes; offset 0: no high key.
    pub(crate) fn high_key_span(&self) -> (usize, usize) {
        (
            usize::from(get_u16(self.bytes, HIGH_KEY_AT_OFFSET)),
            usize::from(get_u16(self.bytes, HIGH_KEY_LENGTH_OFFSET)),
        )
    }

    /// The exclusive upper bound of keys in this node; `None` for +infinity.
    pub fn high_key(&self) -> Option<&'a [u8]> {
        let (offset, length) = self.high_key_span();
        (offset != 0).then(|| &self.bytes[offset..offset + length])
    }

    fn slot(&self, index: usize) -> usize {
        usize::from(get_u16(self.bytes, HEADER_BYTES + index * SLOT_BYTES))
    }

    fn cell_header_bytes(&self) -> usize {
        if self.is_leaf() {
            LEAF_CELL_HEADER_BYTES
        } else {
            INTERNAL_CELL_HEADER_BYTES
        }
    }

    fn cell_length(&self, offset: usize) -> usize {
        let key = usize::from(get_u16(self.bytes, offset));
        if self.is_leaf() {
            LEAF_CELL_HEADER_BYTES
                + key
                + usize::try_from(get_u32(self.bytes, offset + 2)).expect("fits")
        } else {
            INTERNAL_CELL_HEADER_BYTES + key
        }
    }

    pub fn key(&self, index: usize) -> &'a [u8] {
        let offset = self.slot(index);
        let length = usize::from(get_u16(self.bytes, offset));
        let start = offset + self.cell_header_bytes();
        &self.bytes[start..start + length]
    }

    pub fn value(&self, index: usize) -> CellValue<'a> {
        let offset = self.slot(index);
        if self.is_leaf() {
            let key = usize::from(get_u16(self.bytes, offset));
            let length = usize::try_from(get_u32(self.bytes, offset + 2)).expect("fits");
            let start = offset + LEAF_CELL_HEADER_BYTES + key;
            CellValue::Leaf(&self.bytes[start..start + length])
        } else {
            CellValue::Child(get_u64(self.bytes, offset + 2))
        }
    }

    /// Binary search: `Ok(index)` of an equal key, or `Err(index)` where it would go.
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let (mut low, mut high) = (0, self.count());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.key(middle).cmp(key) {
                Ordering::Less => low = middle + 1,
                Ordering::Greater => high = middle,
                Ordering::Equal => return Ok(middle),
            }
        }
        Err(low)
    }

    /// The child of an internal node that covers `key`.
    pub fn child_for(&self, key: &[u8]) -> u64 {
        debug_assert!(!self.is_leaf(), "child_for on a leaf");
        match self.search(key) {
            Ok(index) => self.child(index),
            Err(0) => self.leftmost_child(),
            Err(index) => self.child(index - 1),
        }
    }

    fn child(&self, index: usize) -> u64 {
        match self.value(index) {
            CellValue::Child(child) => child,
            CellValue::Leaf(_) => unreachable!("internal node cell"),
        }
    }

    /// Bytes free for new cells and slots, counting fragmented space (reclaimed by compaction).
    pub fn free_bytes(&self) -> usize {
        let slots_end = HEADER_BYTES + self.count() * SLOT_BYTES;
        let cell_start = usize::from(get_u16(self.bytes, CELL_START_OFFSET));
        cell_start - slots_end + usize::from(get_u16(self.bytes, FRAGMENTED_OFFSET))
    }

    /// Bytes of live cells, slots and high key.
    pub fn used_bytes(&self) -> usize {
        PAGE_PAYLOAD_SIZE - HEADER_BYTES - self.free_bytes()
    }
}

/// Space a cell needs, slot included.
pub fn leaf_cell_bytes(key: &[u8], value: &[u8]) -> usize {
    leaf_cell_size(key.len(), value.len())
}

/// `leaf_cell_bytes` from lengths, for a value not built yet.
pub fn leaf_cell_size(key_bytes: usize, value_bytes: usize) -> usize {
    LEAF_CELL_HEADER_BYTES + key_bytes + value_bytes + SLOT_BYTES
}

pub fn internal_cell_bytes(key: &[u8]) -> usize {
    INTERNAL_CELL_HEADER_BYTES + key.len() + SLOT_BYTES
}

impl<'a> NodeMut<'a> {
    /// Formats `bytes` as an empty node.
    pub fn init(bytes: &'a mut [u8], level: u8) -> NodeMut<'a> {
        assert_eq!(bytes.len(), PAGE_PAYLOAD_SIZE, "a node is one page payload");
        bytes.fill(0);
        bytes[KIND_OFFSET] = if level == 0 { KIND_LEAF } else { KIND_INTERNAL };
        bytes[LEVEL_OFFSET] = level;
        put_u16(bytes, CELL_START_OFFSET, to_u16(PAGE_PAYLOAD_SIZE));
        NodeMut { bytes }
    }

    /// A mutable view of a valid node.
    pub fn open(bytes: &'a mut [u8]) -> Result<NodeMut<'a>, NodeCorruption> {
        Node::open(bytes)?.validate_disjoint_cells()?;
        Ok(NodeMut { bytes })
    }

    pub fn view(&self) -> Node<'_> {
        Node { bytes: self.bytes }
    }

    pub fn set_right_sibling(&mut self, page: u64) {
        put_u64(self.bytes, RIGHT_SIBLING_OFFSET, page);
    }
    pub fn set_left_sibling(&mut self, page: u64) {
        put_u64(self.bytes, LEFT_SIBLING_OFFSET, page);
    }
    pub fn set_leftmost_child(&mut self, page: u64) {
        put_u64(self.bytes, LEFTMOST_CHILD_OFFSET, page);
    }

    /// Sets (or with `None` clears) the high key. Returns false if it does not fit.
    pub fn set_high_key(&mut self, key: Option<&[u8]>) -> bool {
        let (old_offset, old_length) = self.view().high_key_span();
        let needed = key.map_or(0, <[u8]>::len);
        if needed > self.view().free_bytes() + old_length {
            // Leave the node unchanged when the new key cannot fit.
            return false;
        }
        if old_offset != 0 {
            self.add_fragmented(old_length);
            put_u16(self.bytes, HIGH_KEY_AT_OFFSET, 0);
            put_u16(self.bytes, HIGH_KEY_LENGTH_OFFSET, 0);
        }
        let Some(key) = key else { return true };
        let Some(offset) = self.allocate(key.len(), 0) else { return false };
        self.bytes[offset..offset + key.len()].copy_from_slice(key);
        put_u16(self.bytes, HIGH_KEY_AT_OFFSET, to_u16(offset));
        put_u16(self.bytes, HIGH_KEY_LENGTH_OFFSET, to_u16(key.len()));
        true
    }

    fn add_fragmented(&mut self, bytes: usize) {
        let fragmented = usize::from(get_u16(self.bytes, FRAGMENTED_OFFSET)) + bytes;
        put_u16(self.bytes, FRAGMENTED_OFFSET, to_u16(fragmented));
    }

    /// Reserves `length` bytes in the cell area (compacting if needed) plus `slot_bytes` for the
    /// slot array; returns the cell offset or `None` if it does not fit.
    fn allocate(&mut self, length: usize, slot_bytes: usize) -> Option<usize> {
        if self.view().free_bytes() < length + slot_bytes {
            return None;
        }
        let slots_end = HEADER_BYTES + self.view().count() * SLOT_BYTES;
        let mut cell_start = usize::from(get_u16(self.bytes, CELL_START_OFFSET));
        if cell_start - slots_end < length + slot_bytes {
            self.compact();
            cell_start = usize::from(get_u16(self.bytes, CELL_START_OFFSET));
            if cell_start - slots_end < length + slot_bytes {
                return None;
            }
        }
        let offset = cell_start - length;
        put_u16(self.bytes, CELL_START_OFFSET, to_u16(offset));
        Some(offset)
    }

    /// Slides the cells (and the high key) together at the end of the page, dropping
    /// fragmented space. Cells keep their physical order, so the ones already packed against
    /// the end do not move: a change is logged as the bytes that differ, and a compaction
    /// that rewrote every cell cost a page-sized WAL record. The freed gap is not cleared
    /// (free space is never read), which would log it too.
    pub fn compact(&mut self) {
        const HIGH_KEY: usize = usize::MAX;
        let view = self.view();
        let count = view.count();
        // (offset, length, slot index or HIGH_KEY), highest offset first.
        let mut cells: Vec<(usize, usize, usize)> = (0..count)
            .map(|index| {
                let offset = view.slot(index);
                (offset, view.cell_length(offset), index)
            })
            .collect();
        let (high_offset, high_length) = view.high_key_span();
        if high_offset != 0 {
            cells.push((high_offset, high_length, HIGH_KEY));
        }
        cells.sort_unstable_by_key(|cell| std::cmp::Reverse(cell.0));
        let mut end = PAGE_PAYLOAD_SIZE;
        for (offset, length, index) in cells {
            end -= length;
            assert!(end >= offset, "cells only move toward the page end");
            if end != offset {
                self.bytes.copy_within(offset..offset + length, end);
            }
            let pointer = if index == HIGH_KEY { 32 } else { HEADER_BYTES + index * SLOT_BYTES };
            put_u16(self.bytes, pointer, to_u16(end));
        }
        put_u16(self.bytes, CELL_START_OFFSET, to_u16(end));
        put_u16(self.bytes, FRAGMENTED_OFFSET, 0);
    }

    /// Inserts a leaf cell at `index` (from `search`). Returns false if it does not fit.
    pub fn insert_leaf(&mut self, index: usize, key: &[u8], value: &[u8]) -> bool {
        debug_assert!(self.view().is_leaf(), "leaf insert into an internal node");
        let length = LEAF_CELL_HEADER_BYTES + key.len() + value.len();
        let Some(offset) = self.allocate(length, SLOT_BYTES) else { return false };
        put_u16(self.bytes, offset, to_u16(key.len()));
        put_u32(self.bytes, offset + 2, u32::try_from(value.len()).expect("value fits a page"));
        let key_start = offset + LEAF_CELL_HEADER_BYTES;
        self.bytes[key_start..key_start + key.len()].copy_from_slice(key);
        self.bytes[key_start + key.len()..offset + length].copy_from_slice(value);
        self.insert_slot(index, offset);
        true
    }

    /// Inserts an internal cell (separator `key`, `child` holds keys >= key) at `index`.
    pub fn insert_internal(&mut self, index: usize, key: &[u8], child: u64) -> bool {
        debug_assert!(!self.view().is_leaf(), "internal insert into a leaf");
        let length = INTERNAL_CELL_HEADER_BYTES + key.len();
        let Some(offset) = self.allocate(length, SLOT_BYTES) else { return false };
        put_u16(self.bytes, offset, to_u16(key.len()));
        put_u64(self.bytes, offset + 2, child);
        self.bytes[offset + INTERNAL_CELL_HEADER_BYTES..offset + length].copy_from_slice(key);
        self.insert_slot(index, offset);
        true
    }

    fn insert_slot(&mut self, index: usize, offset: usize) {
        let count = self.view().count();
        assert!(index <= count, "slot index out of range");
        let at = HEADER_BYTES + index * SLOT_BYTES;
        let end = HEADER_BYTES + count * SLOT_BYTES;
        self.bytes.copy_within(at..end, at + SLOT_BYTES);
        put_u16(self.bytes, at, to_u16(offset));
        put_u16(self.bytes, COUNT_OFFSET, to_u16(count + 1));
    }

    /// Overwrites the value of leaf cell `index` in place with `value` if it has the old
    /// value's length (returns false otherwise): the cell keeps its place, so the change is
    /// the changed bytes only (a version's `xmin` frozen or `xmax` set), not a cell moved.
    pub fn overwrite_leaf_value(&mut self, index: usize, value: &[u8]) -> bool {
        let view = self.view();
        debug_assert!(view.is_leaf(), "leaf value of an internal node");
        assert!(index < view.count(), "slot index out of range");
        let offset = view.slot(index);
        let key = usize::from(get_u16(self.bytes, offset));
        let length = usize::try_from(get_u32(self.bytes, offset + 2)).expect("fits");
        if length != value.len() {
            return false;
        }
        let start = offset + LEAF_CELL_HEADER_BYTES + key;
        self.bytes[start..start + length].copy_from_slice(value);
        true
    }

    /// Removes the cell at `index`.
    pub fn remove(&mut self, index: usize) {
        let view = self.view();
        let count = view.count();
        assert!(index < count, "slot index out of range");
        let offset = view.slot(index);
        let length = view.cell_length(offset);
        self.add_fragmented(length);
        let at = HEADER_BYTES + index * SLOT_BYTES;
        let end = HEADER_BYTES + count * SLOT_BYTES;
        self.bytes.copy_within(at + SLOT_BYTES..end, at);
        put_u16(self.bytes, end - SLOT_BYTES, 0);
        put_u16(self.bytes, COUNT_OFFSET, to_u16(count - 1));
    }

    /// Moves the cells from `from` on into `right` (an empty node of the same level), which
    /// keeps them in order. Used by splits.
    pub fn move_tail(&mut self, from: usize, right: &mut NodeMut<'_>) {
        let count = self.view().count();
        for index in from..count {
            let view = self.view();
            let moved = match view.value(index) {
                CellValue::Leaf(value) => right.insert_leaf(index - from, view.key(index), value),
                CellValue::Child(child) => {
                    right.insert_internal(index - from, view.key(index), child)
                }
            };
            assert!(moved, "the right half of a split fits an empty node");
        }
        for index in (from..count).rev() {
            self.remove(index);
        }
        self.compact();
    }
}

/// Sets the bits of `[start, end)` in `used`; false if any was already set. `validate`
/// has checked that the span lies inside the payload.
fn mark_span(used: &mut [u64], start: usize, end: usize) -> bool {
    let mut position = start;
    while position < end {
        let word = position / 64;
        let bit = position % 64;
        let bits = (end - position).min(64 - bit);
        let mask = if bits == 64 { u64::MAX } else { ((1u64 << bits) - 1) << bit };
        if used[word] & mask != 0 {
            return false;
        }
        used[word] |= mask;
        position += bits;
    }
    true
}

/// The first index at or after `from` where `before` and `after` differ, comparing eight
/// bytes at a time (most of a page is unchanged by an edit).
fn next_difference(before: &[u8], after: &[u8], from: usize) -> Option<usize> {
    let mut index = from;
    while index + 8 <= before.len() {
        let left = u64::from_le_bytes(before[index..index + 8].try_into().expect("8 bytes"));
        let right = u64::from_le_bytes(after[index..index + 8].try_into().expect("8 bytes"));
        let differing = left ^ right;
        if differing != 0 {
            let byte = usize::try_from(differing.trailing_zeros() / 8).expect("below 8");
            return Some(index + byte);
        }
        index += 8;
    }
    (index..before.len()).find(|&position| before[position] != after[position])
}

/// The first index at or after `from` where `before` and `after` hold the same byte (or the
/// end), eight bytes at a time: a word is skipped when none of its bytes is equal (no zero
/// byte in the XOR of the words). New cells written over free space differ over kilobytes.
fn next_equal(before: &[u8], after: &[u8], from: usize) -> usize {
    const LOW_BITS: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let mut index = from;
    while index + 8 <= before.len() {
        let left = u64::from_le_bytes(before[index..index + 8].try_into().expect("8 bytes"));
        let right = u64::from_le_bytes(after[index..index + 8].try_into().expect("8 bytes"));
        let differing = left ^ right;
        if differing.wrapping_sub(LOW_BITS) & !differing & HIGH_BITS != 0 {
            break;
        }
        index += 8;
    }
    while index < before.len() && before[index] != after[index] {
        index += 1;
    }
    index
}

/// The byte ranges where `after` differs from `before`, with ranges closer than `GAP_BYTES`
/// merged: a write after another on the same page costs 5 bytes besides its data
/// (docs/design/013-wal-node-records.md), so logging a gap of up to 5 equal bytes is no
/// dearer than a new write.
pub fn diff_ranges(before: &[u8], after: &[u8]) -> Vec<std::ops::Range<usize>> {
    const GAP_BYTES: usize = 6;
    assert_eq!(before.len(), after.len(), "diff of equal-length buffers");
    let mut ranges: Vec<std::ops::Range<usize>> = Vec::new();
    let mut index = 0;
    while let Some(start) = next_difference(before, after, index) {
        index = next_equal(before, after, start);
        match ranges.last_mut() {
            Some(last) if start - last.end < GAP_BYTES => last.end = index,
            _ => ranges.push(start..index),
        }
    }
    ranges
}
