//! The B+tree: ordered byte-string keys to byte-string values, in pages of the page store.
//!
//! Concurrency (docs/design/007-btree.md): every latch is taken top-down, or left to right
//! among siblings under a parent this thread holds exclusively, so latching cannot deadlock.
//! - Readers couple shared latches down one path (the child is latched before the parent is
//!   released).
//! - Writers first try optimistically: shared latches down to the leaf's parent, an exclusive
//!   latch on the leaf; if the change fits the leaf (no split or merge), it is done there.
//! - Otherwise they retry pessimistically: exclusive latches from the meta page down, releasing
//!   every ancestor as soon as a node is "safe" (cannot split, or cannot underflow). A delete
//!   also latches the merge partner of each unsafe node, left before right.
//! - The free-page list is latched last and only to allocate or free pages.
//! - Scans never hold a latch between batches: each batch descends to one leaf, copies its
//!   qualifying entries, and continues from that leaf's fence key (the separator bounding it).
//!
//! Every change goes through one `Mtr` per operation, logged as byte-range diffs of the pages
//! it changed: splits and merges are atomic in the WAL, and redo is physical.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use tierdb_common::{ErrorKind, Lsn, Page, PageId, PageType, PAGE_PAYLOAD_SIZE};
use tierdb_storage::{Mtr, MtrSlot, PageStore, StorageError};

use crate::delta::{plan_payload_change, PayloadChange};
mod batch;
mod destroy;
pub use destroy::DestroyProgress;
mod readahead;

use readahead::ScanReadAhead;

use crate::node::{
    internal_cell_bytes, leaf_cell_bytes, leaf_cell_size, CellValue, Node, NodeMut, HEADER_BYTES,
    INLINE_VALUE_BYTES_MAX, KEY_BYTES_MAX,
};

const META_MAGIC: &[u8; 4] = b"TBT1";
const ANCHOR_MAGIC: &[u8; 4] = b"TBF1";
/// Where the anchor page keeps the count of pages the tree took from the store (u64; 0 in
/// trees created before the count existed). Bytes 4..12 hold the free list's head.
const ANCHOR_PAGES_OFFSET: usize = 12;
/// Largest value: an operation is one WAL record, bounded at 16 MiB.
pub const VALUE_BYTES_MAX: usize = 8 << 20;
const NODE_CAPACITY: usize = PAGE_PAYLOAD_SIZE - HEADER_BYTES;
/// Below this many used bytes a non-root node is merged or rebalanced with a sibling.
const MIN_FILL_BYTES: usize = NODE_CAPACITY / 4;
/// Bulk loading fills nodes to this many bytes, leaving room for later inserts.
const BULK_FILL_BYTES: usize = NODE_CAPACITY * 9 / 10;
const TAG_INLINE: u8 = 0;
const TAG_OVERFLOW: u8 = 1;
const OVERFLOW_HEADER_BYTES: usize = 12;
const OVERFLOW_DATA_BYTES: usize = PAGE_PAYLOAD_SIZE - OVERFLOW_HEADER_BYTES;
/// A leaf's reference to a value in overflow pages: `TAG_OVERFLOW`, the value's length u32,
/// the first overflow page id u64.
const OVERFLOW_REFERENCE_BYTES: usize = 1 + 4 + 8;
/// Deepest tree accepted: a corrupt page cannot send a descent around in circles.
const HEIGHT_MAX: u8 = 32;

// An overflow reference fits where the value it replaces would not (values from
// `INLINE_VALUE_BYTES_MAX` bytes go to overflow pages).
const _: () = assert!(OVERFLOW_REFERENCE_BYTES < INLINE_VALUE_BYTES_MAX);
// A value's length is stored as u32 in its overflow reference, and a chunk's in its page.
const _: () = assert!(VALUE_BYTES_MAX <= u32::MAX as usize);
// Whole values are written in one WAL record, with room for the record's other fields.
const _: () = assert!(VALUE_BYTES_MAX < tierdb_storage::RECORD_BODY_BYTES_MAX);
// Bulk loading fills above the merge threshold, so loaded nodes are not merged at once.
const _: () = assert!(MIN_FILL_BYTES < BULK_FILL_BYTES && BULK_FILL_BYTES < NODE_CAPACITY);

#[derive(Debug, thiserror::Error)]
pub enum BTreeError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("corrupt b+tree page page_id={page_id}: {detail}")]
    Corrupt { page_id: PageId, detail: String },
    #[error("key too large bytes={bytes} limit={limit}")]
    KeyTooLarge { bytes: usize, limit: usize },
    #[error("value too large bytes={bytes} limit={limit}")]
    ValueTooLarge { bytes: usize, limit: usize },
    #[error("bulk load input is not strictly ascending at entry={index}")]
    UnsortedInput { index: usize },
}

impl BTreeError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            BTreeError::Storage(error) => error.kind(),
            BTreeError::Corrupt { .. } => ErrorKind::Corruption,
            BTreeError::KeyTooLarge { .. }
            | BTreeError::ValueTooLarge { .. }
            | BTreeError::UnsortedInput { .. } => ErrorKind::InvalidArgument,
        }
    }
}

pub type Result<T, E = BTreeError> = std::result::Result<T, E>;

fn corrupt(page_id: PageId, detail: impl Into<String>) -> BTreeError {
    BTreeError::Corrupt { page_id, detail: detail.into() }
}

fn open_node(page_id: PageId, page: &Page) -> Result<Node<'_>> {
    Node::open(page.payload()).map_err(|error| corrupt(page_id, error.0))
}

/// Opens a node on a shared-latched page, checking its format only when the page changed
/// (or was loaded) since the last check: internal nodes hold hundreds of slots, and a
/// descent would otherwise walk them all on every visit.
fn open_shared_node(page_id: PageId, page: &tierdb_storage::PageRef) -> Result<Node<'_>> {
    if page.format_checked() {
        return Ok(Node::open_prechecked(page.payload()));
    }
    let node = open_node(page_id, page)?;
    page.mark_format_checked();
    Ok(node)
}

fn get_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

/// Entries of a leaf as (key, stored value) and of an internal node as (key, child).
type LeafCells = Vec<(Vec<u8>, Vec<u8>)>;
type InternalCells = Vec<(Vec<u8>, u64)>;

fn leaf_cells(node: Node<'_>) -> LeafCells {
    (0..node.count())
        .map(|index| match node.value(index) {
            CellValue::Leaf(value) => (node.key(index).to_vec(), value.to_vec()),
            CellValue::Child(_) => unreachable!("leaf cell"),
        })
        .collect()
}

fn internal_cells(node: Node<'_>) -> InternalCells {
    (0..node.count())
        .map(|index| match node.value(index) {
            CellValue::Child(child) => (node.key(index).to_vec(), child),
            CellValue::Leaf(_) => unreachable!("internal cell"),
        })
        .collect()
}

fn build_leaf(cells: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
    let mut node = NodeMut::init(&mut bytes, 0);
    for (index, (key, value)) in cells.iter().enumerate() {
        assert!(node.insert_leaf(index, key, value), "leaf cells fit by construction");
    }
    bytes
}

fn build_internal(level: u8, leftmost: u64, cells: &[(Vec<u8>, u64)]) -> Vec<u8> {
    let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
    let mut node = NodeMut::init(&mut bytes, level);
    node.set_leftmost_child(leftmost);
    for (index, (key, child)) in cells.iter().enumerate() {
        assert!(node.insert_internal(index, key, *child), "internal cells fit by construction");
    }
    bytes
}

/// Index where the cells' cumulative size first reaches half of the total (at least 1, at
/// most len - 1), so both halves of a split or rebalance hold about the same bytes.
fn split_point(sizes: &[usize]) -> usize {
    let total: usize = sizes.iter().sum();
    let mut running = 0;
    for (index, size) in sizes.iter().enumerate() {
        running += size;
        if running * 2 >= total {
            return (index + 1).clamp(1, sizes.len() - 1);
        }
    }
    sizes.len() - 1
}

/// Split point for the rightmost leaf overfilled by a key appended at its end, the pattern
/// of a load in key order (INSERT of ascending keys, COPY, a serial column): the left node
/// keeps cells up to `BULK_FILL_BYTES` and the rest starts the new rightmost leaf. A halving
/// split would leave every loaded leaf half full, twice the pages to cache and read;
/// PostgreSQL's B-tree splits its rightmost page the same way, and SQLite's `balance_quick`
/// starts a new page for an append.
fn append_split_point(sizes: &[usize]) -> usize {
    let mut running = 0;
    for (index, size) in sizes.iter().enumerate() {
        running += size;
        if running > BULK_FILL_BYTES {
            return index.clamp(1, sizes.len() - 1);
        }
    }
    sizes.len() - 1
}

/// Replaces the payload of a latched page, logging the change as moves of bytes already on
/// the page and writes of the rest (`plan_payload_change`), after a `Compact` op if the
/// change compacted the node (`compaction_of`).
fn write_payload(mtr: &mut Mtr<'_>, slot: MtrSlot, after: &[u8]) {
    if let Some(compaction) = crate::compaction::compaction_of(mtr.page(slot).payload(), after) {
        mtr.compact_region(slot, compaction);
    }
    for change in plan_payload_change(mtr.page(slot).payload(), after) {
        match change {
            PayloadChange::Move { source, destination, length } => {
                mtr.move_bytes(slot, source, destination, length)
            }
            PayloadChange::Write(range) => mtr.write(slot, range.start, &after[range]),
        }
    }
    assert!(mtr.page(slot).payload() == after, "a logged node change reproduces the node");
}

/// `write_payload` for a page just allocated, with nothing on it worth moving: only the
/// differing ranges are written, without the search for moved runs (a bulk load writes
/// thousands of pages).
fn write_new_payload(mtr: &mut Mtr<'_>, slot: MtrSlot, after: &[u8]) {
    for range in crate::node::diff_ranges(mtr.page(slot).payload(), after) {
        mtr.write(slot, range.start, &after[range]);
    }
    debug_assert!(mtr.page(slot).payload() == after, "the writes reproduce the node");
}

/// A value stored in its leaf cell: the inline tag, then the bytes.
fn inline_value(value: &[u8]) -> Vec<u8> {
    let mut stored = Vec::with_capacity(value.len() + 1);
    stored.push(TAG_INLINE);
    stored.extend_from_slice(value);
    stored
}

/// The first overflow page of a leaf cell's value, if it is stored out of line.
fn overflow_of(node: Node<'_>, index: usize) -> Option<PageId> {
    match node.value(index) {
        CellValue::Leaf(stored) if stored.first() == Some(&TAG_OVERFLOW) => {
            Some(PageId(get_u64(stored, 5)))
        }
        _ => None,
    }
}

/// Where a child sits in its parent: 0 is the leftmost child, i + 1 the child of cell i.
fn child_position(node: Node<'_>, key: &[u8]) -> usize {
    match node.search(key) {
        Ok(index) => index + 1,
        Err(index) => index,
    }
}

pub(crate) fn child_at(node: Node<'_>, position: usize) -> u64 {
    if position == 0 {
        node.leftmost_child()
    } else {
        match node.value(position - 1) {
            CellValue::Child(child) => child,
            CellValue::Leaf(_) => unreachable!("internal cell"),
        }
    }
}

/// A B+tree: its meta page names the root; the tree handle is cheap to clone.
#[derive(Clone)]
pub struct BTree {
    store: Arc<PageStore>,
    meta: PageId,
    /// The free-list anchor page; fixed at creation, so cached (reading it from the meta page
    /// could wait on this thread's own exclusive meta latch).
    anchor: PageId,
    /// Shared by every clone of this handle (range iterators hold one): how many are alive
    /// tells whether anything may still read the tree (`has_other_handles`).
    handles: Arc<()>,
}

struct Meta {
    root: PageId,
    height: u8,
    anchor: PageId,
}

fn read_meta(page_id: PageId, page: &Page) -> Result<Meta> {
    let payload = page.payload();
    if &payload[..4] != META_MAGIC {
        return Err(corrupt(page_id, "not a b+tree meta page"));
    }
    let height = payload[12];
    if height == 0 || height > HEIGHT_MAX {
        return Err(corrupt(page_id, format!("bad tree height={height}")));
    }
    Ok(Meta { root: PageId(get_u64(payload, 4)), height, anchor: PageId(get_u64(payload, 16)) })
}

fn write_meta(mtr: &mut Mtr<'_>, slot: MtrSlot, meta: &Meta) {
    let mut bytes = [0u8; 24];
    bytes[..4].copy_from_slice(META_MAGIC);
    bytes[4..12].copy_from_slice(&meta.root.0.to_le_bytes());
    bytes[12] = meta.height;
    bytes[16..24].copy_from_slice(&meta.anchor.0.to_le_bytes());
    mtr.write(slot, 0, &bytes);
}

/// The parent of a merge or rebalance: what is needed to rewrite it with new cells.
struct ParentNode {
    slot: MtrSlot,
    level: u8,
    leftmost: u64,
}

impl ParentNode {
    fn write(&self, mtr: &mut Mtr<'_>, cells: &[(Vec<u8>, u64)]) {
        write_payload(mtr, self.slot, &build_internal(self.level, self.leftmost, cells));
    }
}

/// A latched node on a pessimistic path, with the merge partner latched beside it.
struct PathEntry {
    slot: MtrSlot,
    page_id: PageId,
    /// (slot, page id, partner is to the right)
    partner: Option<(MtrSlot, PageId, bool)>,
}

impl BTree {
    /// Creates an empty tree; its meta page id is the tree's durable name.
    pub fn create(store: Arc<PageStore>) -> Result<BTree> {
        let mut mtr = store.mtr();
        let (meta_slot, meta) = mtr.allocate(PageType::Meta)?;
        let (anchor_slot, anchor) = mtr.allocate(PageType::Meta)?;
        let (root_slot, root) = mtr.allocate(PageType::BtreeLeaf)?;
        write_payload(&mut mtr, root_slot, &build_leaf(&[]));
        let mut anchor_bytes = [0u8; 20];
        anchor_bytes[..4].copy_from_slice(ANCHOR_MAGIC);
        // The meta, anchor and root pages are the tree's first pages.
        anchor_bytes[ANCHOR_PAGES_OFFSET..].copy_from_slice(&3_u64.to_le_bytes());
        mtr.write(anchor_slot, 0, &anchor_bytes);
        write_meta(&mut mtr, meta_slot, &Meta { root, height: 1, anchor });
        mtr.commit()?;
        Ok(BTree { store, meta, anchor, handles: Arc::new(()) })
    }

    /// Opens the tree whose meta page is `meta`.
    pub fn open(store: Arc<PageStore>, meta: PageId) -> Result<BTree> {
        let page = store.read(meta)?;
        let anchor = read_meta(meta, &page)?.anchor;
        Ok(BTree { store, meta, anchor, handles: Arc::new(()) })
    }

    pub fn meta_page(&self) -> PageId {
        self.meta
    }

    /// Whether a clone of this handle (or a range iterator over it) is alive elsewhere. A
    /// tree opened twice has two independent families of handles: the caller that destroys a
    /// tree once nobody else holds it must have opened it once.
    pub fn has_other_handles(&self) -> bool {
        let others = Arc::strong_count(&self.handles) > 1;
        // The count is read relaxed: order it after the other handles' last uses (their
        // drops release) before the caller frees what they read.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        others
    }

    /// The pages the tree holds: its meta and free-list anchor pages, its nodes, overflow
    /// pages and free list (PostgreSQL's relation size counts the pages a relation's file
    /// holds, free ones too). None for a tree created before the anchor kept the count.
    pub fn page_count(&self) -> Result<Option<u64>> {
        let page = self.store.read(self.anchor)?;
        let payload = page.payload();
        if &payload[..4] != ANCHOR_MAGIC {
            return Err(corrupt(self.anchor, "not a free-list anchor"));
        }
        let pages = get_u64(payload, ANCHOR_PAGES_OFFSET);
        Ok((pages != 0).then_some(pages))
    }

    /// Levels in the tree (1: the root is a leaf).
    pub fn height(&self) -> Result<u8> {
        let page = self.store.read(self.meta)?;
        Ok(read_meta(self.meta, &page)?.height)
    }

    pub fn store(&self) -> &Arc<PageStore> {
        &self.store
    }

    fn check_sizes(key: &[u8], value: Option<&[u8]>) -> Result<()> {
        if key.len() > KEY_BYTES_MAX {
            return Err(BTreeError::KeyTooLarge { bytes: key.len(), limit: KEY_BYTES_MAX });
        }
        if let Some(value) = value {
            if value.len() > VALUE_BYTES_MAX {
                return Err(BTreeError::ValueTooLarge {
                    bytes: value.len(),
                    limit: VALUE_BYTES_MAX,
                });
            }
        }
        Ok(())
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Self::check_sizes(key, None)?;
        let leaf =
            self.descend_shared(Fences::Skip, |node| child_position(node, key), &mut |_, _, _| {})?;
        let node = open_shared_node(leaf.page_id, &leaf.page)?;
        match node.search(key) {
            Ok(index) => Ok(Some(self.load_value(leaf.page_id, node, index)?)),
            Err(_) => Ok(None),
        }
    }

    /// Descends with shared latch coupling, choosing each child with `choose`; returns the
    /// leaf with (when `fences` asks) the fence keys bounding it: keys in it are in
    /// [low, high). `at_leaf_parent` sees the leaf's parent (id, node, chosen position) while
    /// it is latched: a scan's read-ahead takes the next leaves' ids from it.
    fn descend_shared(
        &self,
        fences: Fences,
        choose: impl Fn(Node<'_>) -> usize,
        at_leaf_parent: &mut dyn FnMut(PageId, Node<'_>, usize),
    ) -> Result<Descent> {
        let meta_page = self.store.read(self.meta)?;
        let meta = read_meta(self.meta, &meta_page)?;
        let mut page = self.store.read(meta.root)?;
        drop(meta_page);
        let (mut page_id, mut level) = (meta.root, meta.height - 1);
        let (mut low, mut high): (Option<Vec<u8>>, Option<Vec<u8>>) = (None, None);
        loop {
            let node = open_shared_node(page_id, &page)?;
            if node.level() != level {
                return Err(corrupt(page_id, format!("level={} expected={level}", node.level())));
            }
            if node.is_leaf() {
                return Ok(Descent { page, page_id, low, high });
            }
            let position = choose(node).min(node.count());
            if level == 1 {
                at_leaf_parent(page_id, node, position);
            }
            if fences == Fences::Keep && position > 0 {
                low = Some(node.key(position - 1).to_vec());
            }
            if fences == Fences::Keep && position < node.count() {
                high = Some(node.key(position).to_vec());
            }
            let child = PageId(child_at(node, position));
            let next = self.store.read(child)?;
            page = next;
            page_id = child;
            level -= 1;
        }
    }

    fn load_value(&self, page_id: PageId, node: Node<'_>, index: usize) -> Result<Vec<u8>> {
        let mut value = Vec::new();
        self.append_value(page_id, node, index, &mut value)?;
        Ok(value)
    }

    /// Appends the value at `index` of leaf `node` to `out` (reading its overflow chain if
    /// it has one); returns the value's length.
    fn append_value(
        &self,
        page_id: PageId,
        node: Node<'_>,
        index: usize,
        out: &mut Vec<u8>,
    ) -> Result<usize> {
        let CellValue::Leaf(stored) = node.value(index) else { unreachable!("leaf") };
        match stored.first() {
            Some(&TAG_INLINE) => {
                out.extend_from_slice(&stored[1..]);
                Ok(stored.len() - 1)
            }
            Some(&TAG_OVERFLOW) if stored.len() == OVERFLOW_REFERENCE_BYTES => {
                let total =
                    usize::try_from(u32::from_le_bytes(stored[1..5].try_into().expect("4")))
                        .expect("fits");
                self.read_overflow(PageId(get_u64(stored, 5)), total, out)?;
                Ok(total)
            }
            _ => Err(corrupt(page_id, format!("bad stored value at index={index}"))),
        }
    }

    /// Appends the `total` bytes of the overflow chain starting at `first` to `out`.
    fn read_overflow(&self, first: PageId, total: usize, out: &mut Vec<u8>) -> Result<()> {
        out.reserve(total);
        let mut read = 0;
        let mut next = first;
        while read < total {
            if next == PageId::INVALID {
                return Err(corrupt(first, "overflow chain ends early"));
            }
            let page = self.store.read(next)?;
            if page.page_type() != PageType::Overflow {
                return Err(corrupt(next, "not an overflow page"));
            }
            let payload = page.payload();
            let length = usize::try_from(u32::from_le_bytes(payload[8..12].try_into().expect("4")))
                .expect("fits");
            if length == 0 || length > OVERFLOW_DATA_BYTES || read + length > total {
                return Err(corrupt(next, format!("bad overflow length={length}")));
            }
            out.extend_from_slice(&payload[OVERFLOW_HEADER_BYTES..OVERFLOW_HEADER_BYTES + length]);
            read += length;
            next = PageId(get_u64(payload, 0));
        }
        Ok(())
    }

    /// Inserts or replaces; returns the previous value. Returns the end LSN of the change in
    /// `lsn` so that a caller can wait for its durability.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<(Option<Vec<u8>>, Lsn)> {
        Self::check_sizes(key, Some(value))?;
        let stored_bytes = if value.len() < INLINE_VALUE_BYTES_MAX {
            value.len() + 1
        } else {
            OVERFLOW_REFERENCE_BYTES
        };
        if let Some(done) = self.insert_optimistic(key, value, stored_bytes)? {
            return Ok(done);
        }
        self.insert_pessimistic(key, value)
    }

    /// Latches the leaf for `key` exclusively (its parent shared while latching it). With
    /// `upper`, sets it to the separator bounding the leaf above (exclusive; left as is for the
    /// rightmost leaf): it holds while the leaf stays latched, because only a split, merge or
    /// rebalance that latches the leaf moves its range.
    fn latch_leaf(
        &self,
        mtr: &mut Mtr<'_>,
        key: &[u8],
        mut upper: Option<&mut Option<Vec<u8>>>,
    ) -> Result<(MtrSlot, PageId, bool)> {
        let meta_page = self.store.read(self.meta)?;
        let meta = read_meta(self.meta, &meta_page)?;
        if meta.height == 1 {
            if meta.root == self.meta {
                return Err(corrupt(self.meta, "root names the meta page"));
            }
            let slot = mtr.latch(meta.root)?;
            self.expect_leaf(mtr, slot, meta.root)?;
            return Ok((slot, meta.root, true));
        }
        let mut page = self.store.read(meta.root)?;
        drop(meta_page);
        let (mut page_id, mut level) = (meta.root, meta.height - 1);
        loop {
            let node = open_shared_node(page_id, &page)?;
            if node.level() != level || level == 0 {
                return Err(corrupt(page_id, format!("level={} expected={level}", node.level())));
            }
            let position = child_position(node, key);
            if let Some(upper) = upper.as_deref_mut().filter(|_| position < node.count()) {
                *upper = Some(node.key(position).to_vec());
            }
            let child = PageId(child_at(node, position));
            if child == page_id || child == self.meta {
                // Latching it would wait on our own shared latch forever.
                return Err(corrupt(
                    page_id,
                    format!("child pointer to a held page child={child}"),
                ));
            }
            if level == 1 {
                let slot = mtr.latch(child)?;
                self.expect_leaf(mtr, slot, child)?;
                return Ok((slot, child, false));
            }
            let next = self.store.read(child)?;
            page = next;
            page_id = child;
            level -= 1;
        }
    }

    /// Checks that a page reached as a leaf is one (a corrupt parent could point elsewhere).
    fn expect_leaf(&self, mtr: &Mtr<'_>, slot: MtrSlot, page_id: PageId) -> Result<()> {
        let node = open_node(page_id, mtr.page(slot))?;
        if !node.is_leaf() {
            return Err(corrupt(page_id, format!("expected a leaf, found level={}", node.level())));
        }
        Ok(())
    }

    fn insert_optimistic(
        &self,
        key: &[u8],
        value: &[u8],
        stored_bytes: usize,
    ) -> Result<Option<(Option<Vec<u8>>, Lsn)>> {
        let mut mtr = self.store.mtr();
        let (slot, page_id, _) = self.latch_leaf(&mut mtr, key, None)?;
        let node = open_node(page_id, mtr.page(slot))?;
        let existing = node.search(key);
        let freed = match existing {
            Ok(index) => match node.value(index) {
                CellValue::Leaf(old) => leaf_cell_bytes(key, old),
                CellValue::Child(_) => 0,
            },
            Err(_) => 0,
        };
        if node.free_bytes() + freed < leaf_cell_size(key.len(), stored_bytes) {
            return Ok(None);
        }
        let old = self.replace_in_leaf(&mut mtr, slot, page_id, key, value)?;
        let lsn = mtr.commit()?;
        Ok(Some((old, lsn)))
    }

    /// Puts `key` -> `value` into a latched leaf that has room for it; returns the old value.
    fn replace_in_leaf(
        &self,
        mtr: &mut Mtr<'_>,
        slot: MtrSlot,
        page_id: PageId,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let stored = self.store_value(mtr, value)?;
        self.edit_leaf(mtr, slot, page_id, key, Some(&stored))
    }

    /// Removes `key` from a latched leaf, freeing its overflow pages; returns its value.
    fn remove_from_leaf(
        &self,
        mtr: &mut Mtr<'_>,
        slot: MtrSlot,
        page_id: PageId,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.edit_leaf(mtr, slot, page_id, key, None)
    }

    /// Removes `key`'s cell from a latched leaf if it is there and, with `stored`, inserts
    /// the cell `key` -> `stored`; frees the old value's overflow pages and returns the old
    /// value. One copy of the page takes both changes, so a replacement is logged as one
    /// diff (the slot array is not logged shifted down and then back up).
    fn edit_leaf(
        &self,
        mtr: &mut Mtr<'_>,
        slot: MtrSlot,
        page_id: PageId,
        key: &[u8],
        stored: Option<&[u8]>,
    ) -> Result<Option<Vec<u8>>> {
        let node = open_node(page_id, mtr.page(slot))?;
        let found = node.search(key).ok();
        if found.is_none() && stored.is_none() {
            return Ok(None);
        }
        let old = found.map(|index| self.load_value(page_id, node, index)).transpose()?;
        let overflow = found.and_then(|index| overflow_of(node, index));
        let mut after = mtr.page(slot).payload().to_vec();
        let mut editable = NodeMut::open(&mut after).map_err(|error| corrupt(page_id, error.0))?;
        let in_place = match (found, stored) {
            (Some(index), Some(stored)) if overflow.is_none() => {
                editable.overwrite_leaf_value(index, stored)
            }
            _ => false,
        };
        if let Some(index) = found.filter(|_| !in_place) {
            editable.remove(index);
        }
        if let Some(stored) = stored.filter(|_| !in_place) {
            let index = editable.view().search(key).expect_err("removed above");
            assert!(editable.insert_leaf(index, key, stored), "caller checked the room");
        }
        write_payload(mtr, slot, &after);
        if let Some(first) = overflow {
            self.free_overflow(mtr, first)?;
        }
        Ok(old)
    }

    /// The bytes stored in a leaf cell for `value`: inline, or a reference to overflow pages
    /// written now.
    fn store_value(&self, mtr: &mut Mtr<'_>, value: &[u8]) -> Result<Vec<u8>> {
        if value.len() < INLINE_VALUE_BYTES_MAX {
            return Ok(inline_value(value));
        }
        let chunks: Vec<&[u8]> = value.chunks(OVERFLOW_DATA_BYTES).collect();
        let mut pages = Vec::with_capacity(chunks.len());
        for _ in &chunks {
            pages.push(self.allocate_page(mtr, PageType::Overflow)?);
        }
        for (index, chunk) in chunks.iter().enumerate() {
            let next = pages.get(index + 1).map_or(0, |(_, page_id): &(MtrSlot, PageId)| page_id.0);
            let mut payload = vec![0u8; OVERFLOW_HEADER_BYTES + chunk.len()];
            payload[..8].copy_from_slice(&next.to_le_bytes());
            payload[8..12]
                .copy_from_slice(&u32::try_from(chunk.len()).expect("fits").to_le_bytes());
            payload[OVERFLOW_HEADER_BYTES..].copy_from_slice(chunk);
            mtr.write(pages[index].0, 0, &payload);
        }
        let mut stored = vec![TAG_OVERFLOW];
        stored.extend_from_slice(&u32::try_from(value.len()).expect("fits").to_le_bytes());
        stored.extend_from_slice(&pages[0].1 .0.to_le_bytes());
        Ok(stored)
    }

    fn free_overflow(&self, mtr: &mut Mtr<'_>, first: PageId) -> Result<()> {
        let mut next = first;
        while next != PageId::INVALID {
            let slot = mtr.latch(next)?;
            if mtr.page(slot).page_type() != PageType::Overflow {
                return Err(corrupt(next, "not an overflow page"));
            }
            let following = PageId(get_u64(mtr.page(slot).payload(), 0));
            self.free_page(mtr, slot)?;
            next = following;
        }
        Ok(())
    }

    /// A page of `page_type` from the free list, or a new one.
    fn allocate_page(&self, mtr: &mut Mtr<'_>, page_type: PageType) -> Result<(MtrSlot, PageId)> {
        let (anchor_slot, head) = self.latch_anchor(mtr)?;
        if head == PageId::INVALID {
            // A page from the store: one more page the tree holds (pages it frees stay
            // in its free list). A tree from before the count has 0 and keeps it.
            let pages = get_u64(mtr.page(anchor_slot).payload(), ANCHOR_PAGES_OFFSET);
            if pages != 0 {
                mtr.write(anchor_slot, ANCHOR_PAGES_OFFSET, &(pages + 1).to_le_bytes());
            }
            return Ok(mtr.allocate(page_type)?);
        }
        let slot = mtr.latch(head)?;
        if mtr.page(slot).page_type() != PageType::Free {
            return Err(corrupt(head, "free list names a page in use"));
        }
        let next = get_u64(mtr.page(slot).payload(), 0);
        mtr.reinit(slot, page_type);
        mtr.write(anchor_slot, 4, &next.to_le_bytes());
        Ok((slot, head))
    }

    fn free_page(&self, mtr: &mut Mtr<'_>, slot: MtrSlot) -> Result<()> {
        let page_id = mtr.page_id(slot);
        let (anchor_slot, head) = self.latch_anchor(mtr)?;
        mtr.reinit(slot, PageType::Free);
        mtr.write(slot, 0, &head.0.to_le_bytes());
        mtr.write(anchor_slot, 4, &page_id.0.to_le_bytes());
        Ok(())
    }

    /// Latches the free-list anchor (always the last latch an operation takes).
    fn latch_anchor(&self, mtr: &mut Mtr<'_>) -> Result<(MtrSlot, PageId)> {
        let anchor = self.anchor;
        let slot = mtr.latch(anchor)?;
        let payload = mtr.page(slot).payload();
        if &payload[..4] != ANCHOR_MAGIC {
            return Err(corrupt(anchor, "not a free-list anchor"));
        }
        Ok((slot, PageId(get_u64(payload, 4))))
    }
}

impl BTree {
    /// Exclusive latches from the meta page down to the leaf for `key`, keeping only the
    /// nodes that a change at the leaf could still reach (released from the top as soon as a
    /// node is safe). With `for_delete`, each kept non-root node's merge partner is latched
    /// too, left before right. Returns the meta slot (if still held) and the path.
    fn latch_path(
        &self,
        mtr: &mut Mtr<'_>,
        key: &[u8],
        safe: &dyn Fn(Node<'_>, bool) -> bool,
        for_delete: bool,
    ) -> Result<(Option<MtrSlot>, Vec<PathEntry>)> {
        let meta_slot = mtr.latch(self.meta)?;
        let meta = read_meta(self.meta, mtr.page(meta_slot))?;
        let mut held_meta = Some(meta_slot);
        let mut path: Vec<PathEntry> = Vec::new();
        let root_slot = mtr.latch(meta.root)?;
        let mut entry = PathEntry { slot: root_slot, page_id: meta.root, partner: None };
        let mut level = meta.height - 1;
        loop {
            // What the node says, copied out before latches change.
            let (is_leaf, is_safe, step) = {
                let node = open_node(entry.page_id, mtr.page(entry.slot))?;
                if node.level() != level {
                    return Err(corrupt(
                        entry.page_id,
                        format!("level={} expected={level}", node.level()),
                    ));
                }
                let is_safe = safe(node, path.is_empty() && held_meta.is_some());
                let step = (!node.is_leaf()).then(|| {
                    let position = child_position(node, key).min(node.count());
                    let partner_position = if position < node.count() {
                        position + 1
                    } else {
                        position.saturating_sub(1)
                    };
                    let partner = (for_delete && node.count() > 0).then(|| {
                        (partner_position < position, PageId(child_at(node, partner_position)))
                    });
                    (PageId(child_at(node, position)), partner)
                });
                (node.is_leaf(), is_safe, step)
            };
            if is_safe {
                for held in path.drain(..) {
                    mtr.release(held.slot);
                    if let Some((partner, _, _)) = held.partner {
                        mtr.release(partner);
                    }
                }
                if let Some(meta_slot) = held_meta.take() {
                    mtr.release(meta_slot);
                }
                if let Some((partner, _, _)) = entry.partner.take() {
                    mtr.release(partner);
                }
            }
            if is_leaf {
                path.push(entry);
                return Ok((held_meta, path));
            }
            let (child, partner) = step.expect("internal node");
            path.push(entry);
            // Siblings are latched left to right.
            let next = match partner {
                Some((partner_is_left, partner)) => {
                    let (partner_slot, child_slot) = if partner_is_left {
                        let partner_slot = mtr.latch(partner)?;
                        (partner_slot, mtr.latch(child)?)
                    } else {
                        let child_slot = mtr.latch(child)?;
                        (mtr.latch(partner)?, child_slot)
                    };
                    let partner = Some((partner_slot, partner, !partner_is_left));
                    PathEntry { slot: child_slot, page_id: child, partner }
                }
                None => PathEntry { slot: mtr.latch(child)?, page_id: child, partner: None },
            };
            entry = next;
            level -= 1;
        }
    }

    fn insert_pessimistic(&self, key: &[u8], value: &[u8]) -> Result<(Option<Vec<u8>>, Lsn)> {
        let mut mtr = self.store.mtr();
        let stored_bytes = if value.len() < INLINE_VALUE_BYTES_MAX {
            value.len() + 1
        } else {
            OVERFLOW_REFERENCE_BYTES
        };
        let cell_bytes = leaf_cell_size(key.len(), stored_bytes);
        let separator_bytes = internal_cell_bytes(&[0; KEY_BYTES_MAX]);
        let safe = |node: Node<'_>, _is_root: bool| {
            if node.is_leaf() {
                node.free_bytes() >= cell_bytes
            } else {
                node.free_bytes() >= separator_bytes
            }
        };
        let (meta_slot, mut path) = self.latch_path(&mut mtr, key, &safe, false)?;
        let leaf = path.pop().expect("a path ends at a leaf");
        let old = self.remove_from_leaf(&mut mtr, leaf.slot, leaf.page_id, key)?;
        let stored = self.store_value(&mut mtr, value)?;
        let mut cells = leaf_cells(open_node(leaf.page_id, mtr.page(leaf.slot))?);
        let index = cells
            .binary_search_by(|(existing, _)| existing.as_slice().cmp(key))
            .expect_err("removed");
        cells.insert(index, (key.to_vec(), stored));
        let sizes: Vec<usize> =
            cells.iter().map(|(key, value)| leaf_cell_bytes(key, value)).collect();
        if sizes.iter().sum::<usize>() <= NODE_CAPACITY {
            write_payload(&mut mtr, leaf.slot, &build_leaf(&cells));
            return Ok((old, mtr.commit()?));
        }
        let appending = index == cells.len() - 1 && self.on_rightmost_path(&mtr, &path, key)?;
        let middle = if appending { append_split_point(&sizes) } else { split_point(&sizes) };
        let right_cells = cells.split_off(middle);
        let (right_slot, right_id) = self.allocate_page(&mut mtr, PageType::BtreeLeaf)?;
        write_payload(&mut mtr, leaf.slot, &build_leaf(&cells));
        write_payload(&mut mtr, right_slot, &build_leaf(&right_cells));
        let separator = right_cells[0].0.clone();
        self.insert_separator(&mut mtr, meta_slot, path, leaf.page_id, separator, right_id)?;
        Ok((old, mtr.commit()?))
    }

    /// Whether `key` descends to the rightmost leaf: through the last child of every internal
    /// node on `path` (latched by `mtr`).
    fn on_rightmost_path(&self, mtr: &Mtr<'_>, path: &[PathEntry], key: &[u8]) -> Result<bool> {
        for entry in path {
            let node = open_node(entry.page_id, mtr.page(entry.slot))?;
            if child_position(node, key) != node.count() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// After `left_id` split off `right_id` starting at `separator`, links the new node into
    /// its parent, splitting ancestors (and growing a new root) as needed.
    fn insert_separator(
        &self,
        mtr: &mut Mtr<'_>,
        meta_slot: Option<MtrSlot>,
        mut path: Vec<PathEntry>,
        mut left_id: PageId,
        mut separator: Vec<u8>,
        mut right_id: PageId,
    ) -> Result<()> {
        loop {
            let Some(parent) = path.pop() else {
                // The root split: a new root above it. The meta page is held, because a node
                // that could split kept every latch above it.
                let meta_slot = meta_slot.expect("meta latched when the root can split");
                let meta = read_meta(self.meta, mtr.page(meta_slot))?;
                if meta.height >= HEIGHT_MAX {
                    return Err(corrupt(self.meta, "tree too high"));
                }
                let (root_slot, root_id) = self.allocate_page(mtr, PageType::BtreeInternal)?;
                write_payload(
                    mtr,
                    root_slot,
                    &build_internal(meta.height, left_id.0, &[(separator, right_id.0)]),
                );
                write_meta(
                    mtr,
                    meta_slot,
                    &Meta { root: root_id, height: meta.height + 1, anchor: meta.anchor },
                );
                return Ok(());
            };
            let node = open_node(parent.page_id, mtr.page(parent.slot))?;
            let level = node.level();
            let leftmost = node.leftmost_child();
            let mut cells = internal_cells(node);
            let index = cells
                .binary_search_by(|(key, _)| key.as_slice().cmp(&separator))
                .unwrap_or_else(|index| index);
            cells.insert(index, (separator, right_id.0));
            let sizes: Vec<usize> = cells.iter().map(|(key, _)| internal_cell_bytes(key)).collect();
            if sizes.iter().sum::<usize>() <= NODE_CAPACITY {
                write_payload(mtr, parent.slot, &build_internal(level, leftmost, &cells));
                return Ok(());
            }
            // Split the parent: the middle separator moves up; its child becomes the new right
            // node's leftmost child.
            let middle = split_point(&sizes).min(cells.len() - 1);
            let mut right_cells = cells.split_off(middle);
            let (up_key, up_child) = right_cells.remove(0);
            let (new_slot, new_id) = self.allocate_page(mtr, PageType::BtreeInternal)?;
            write_payload(mtr, parent.slot, &build_internal(level, leftmost, &cells));
            write_payload(mtr, new_slot, &build_internal(level, up_child, &right_cells));
            left_id = parent.page_id;
            separator = up_key;
            right_id = new_id;
        }
    }
}

impl BTree {
    /// Removes `key`; returns its value and the change's end LSN (`None` if absent).
    pub fn delete(&self, key: &[u8]) -> Result<Option<(Vec<u8>, Lsn)>> {
        Self::check_sizes(key, None)?;
        {
            let mut mtr = self.store.mtr();
            let (slot, page_id, is_root) = self.latch_leaf(&mut mtr, key, None)?;
            let node = open_node(page_id, mtr.page(slot))?;
            let Ok(index) = node.search(key) else { return Ok(None) };
            let cell = match node.value(index) {
                CellValue::Leaf(stored) => leaf_cell_bytes(key, stored),
                CellValue::Child(_) => 0,
            };
            if is_root || node.used_bytes() - cell >= MIN_FILL_BYTES {
                let old =
                    self.remove_from_leaf(&mut mtr, slot, page_id, key)?.expect("found above");
                return Ok(Some((old, mtr.commit()?)));
            }
        }
        self.delete_pessimistic(key)
    }

    fn delete_pessimistic(&self, key: &[u8]) -> Result<Option<(Vec<u8>, Lsn)>> {
        let mut mtr = self.store.mtr();
        let separator_bytes = internal_cell_bytes(&[0; KEY_BYTES_MAX]);
        let safe = |node: Node<'_>, is_root: bool| {
            if is_root {
                node.is_leaf() || node.count() >= 2
            } else if node.is_leaf() {
                let cell = node.search(key).ok().map_or(0, |index| match node.value(index) {
                    CellValue::Leaf(stored) => leaf_cell_bytes(key, stored),
                    CellValue::Child(_) => 0,
                });
                node.used_bytes() - cell >= MIN_FILL_BYTES
            } else {
                node.used_bytes().saturating_sub(separator_bytes) >= MIN_FILL_BYTES
            }
        };
        let (meta_slot, mut path) = self.latch_path(&mut mtr, key, &safe, true)?;
        let leaf = path.last().expect("a path ends at a leaf");
        let Some(old) = self.remove_from_leaf(&mut mtr, leaf.slot, leaf.page_id, key)? else {
            return Ok(None);
        };
        self.rebalance(&mut mtr, meta_slot, &mut path)?;
        Ok(Some((old, mtr.commit()?)))
    }

    /// Fixes underflow from the bottom of `path` upward: merges a node with its latched
    /// partner when both fit in one node, else moves cells across so both are half full, and
    /// collapses a root left with a single child.
    fn rebalance(
        &self,
        mtr: &mut Mtr<'_>,
        meta_slot: Option<MtrSlot>,
        path: &mut Vec<PathEntry>,
    ) -> Result<()> {
        while let Some(entry) = path.pop() {
            let node = open_node(entry.page_id, mtr.page(entry.slot))?;
            let Some(parent) = path.last() else {
                if !node.is_leaf() && node.count() == 0 {
                    let meta_slot = meta_slot.expect("meta latched when the root can collapse");
                    let meta = read_meta(self.meta, mtr.page(meta_slot))?;
                    let child = PageId(node.leftmost_child());
                    write_meta(
                        mtr,
                        meta_slot,
                        &Meta { root: child, height: meta.height - 1, anchor: meta.anchor },
                    );
                    self.free_page(mtr, entry.slot)?;
                }
                return Ok(());
            };
            if node.used_bytes() >= MIN_FILL_BYTES {
                return Ok(());
            }
            let Some((partner_slot, partner_id, partner_is_right)) = entry.partner else {
                return Ok(());
            };
            let (left, right) = if partner_is_right {
                ((entry.slot, entry.page_id), (partner_slot, partner_id))
            } else {
                ((partner_slot, partner_id), (entry.slot, entry.page_id))
            };
            let (parent_slot, parent_id) = (parent.slot, parent.page_id);
            if !self.merge_or_shift(mtr, parent_slot, parent_id, left, right)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Merges `right` into `left` (removing its separator from the parent and freeing it) if
    /// they fit in one node; otherwise redistributes their cells. Returns whether the parent
    /// lost a cell (and may now underflow).
    fn merge_or_shift(
        &self,
        mtr: &mut Mtr<'_>,
        parent_slot: MtrSlot,
        parent_id: PageId,
        left: (MtrSlot, PageId),
        right: (MtrSlot, PageId),
    ) -> Result<bool> {
        let parent = open_node(parent_id, mtr.page(parent_slot))?;
        let Some(separator_index) =
            (0..parent.count()).find(|&index| child_at(parent, index + 1) == right.1 .0)
        else {
            return Err(corrupt(parent_id, format!("no separator for child={}", right.1)));
        };
        let separator = parent.key(separator_index).to_vec();
        let (parent_level, parent_leftmost) = (parent.level(), parent.leftmost_child());
        let parent_edit =
            ParentNode { slot: parent_slot, level: parent_level, leftmost: parent_leftmost };
        let mut parent_cells = internal_cells(parent);
        let left_node = open_node(left.1, mtr.page(left.0))?;
        let right_node = open_node(right.1, mtr.page(right.0))?;
        if left_node.level() != right_node.level() || left_node.level() + 1 != parent_level {
            return Err(corrupt(
                parent_id,
                format!("children of different levels left={} right={}", left.1, right.1),
            ));
        }
        if left_node.is_leaf() {
            let mut cells = leaf_cells(left_node);
            cells.extend(leaf_cells(right_node));
            let sizes: Vec<usize> =
                cells.iter().map(|(key, value)| leaf_cell_bytes(key, value)).collect();
            if sizes.iter().sum::<usize>() <= NODE_CAPACITY {
                self.merge_into_left(
                    mtr,
                    left.0,
                    &build_leaf(&cells),
                    right.0,
                    &parent_edit,
                    &mut parent_cells,
                    separator_index,
                )?;
                return Ok(true);
            }
            let right_cells = cells.split_off(split_point(&sizes));
            let new_separator = right_cells[0].0.clone();
            if !self.replace_separator(&mut parent_cells, separator_index, new_separator) {
                return Ok(false);
            }
            write_payload(mtr, left.0, &build_leaf(&cells));
            write_payload(mtr, right.0, &build_leaf(&right_cells));
            parent_edit.write(mtr, &parent_cells);
            return Ok(false);
        }
        // Internal nodes: the separator comes down between the two halves.
        let level = left_node.level();
        let left_leftmost = left_node.leftmost_child();
        let mut cells = internal_cells(left_node);
        cells.push((separator, right_node.leftmost_child()));
        cells.extend(internal_cells(right_node));
        let sizes: Vec<usize> = cells.iter().map(|(key, _)| internal_cell_bytes(key)).collect();
        if sizes.iter().sum::<usize>() <= NODE_CAPACITY {
            let merged = build_internal(level, left_leftmost, &cells);
            self.merge_into_left(
                mtr,
                left.0,
                &merged,
                right.0,
                &parent_edit,
                &mut parent_cells,
                separator_index,
            )?;
            return Ok(true);
        }
        let middle = split_point(&sizes).min(cells.len() - 1);
        let mut right_cells = cells.split_off(middle);
        let (up_key, up_child) = right_cells.remove(0);
        if !self.replace_separator(&mut parent_cells, separator_index, up_key) {
            return Ok(false);
        }
        write_payload(mtr, left.0, &build_internal(level, left_leftmost, &cells));
        write_payload(mtr, right.0, &build_internal(level, up_child, &right_cells));
        parent_edit.write(mtr, &parent_cells);
        Ok(false)
    }

    /// Completes a merge: `left` gets `merged`, `right` is freed, and the parent loses the
    /// separator that pointed at it.
    #[allow(clippy::too_many_arguments)]
    fn merge_into_left(
        &self,
        mtr: &mut Mtr<'_>,
        left: MtrSlot,
        merged: &[u8],
        right: MtrSlot,
        parent: &ParentNode,
        parent_cells: &mut InternalCells,
        separator_index: usize,
    ) -> Result<()> {
        write_payload(mtr, left, merged);
        self.free_page(mtr, right)?;
        parent_cells.remove(separator_index);
        parent.write(mtr, parent_cells);
        Ok(())
    }

    /// Replaces a separator if the parent still fits; a longer separator that does not fit
    /// leaves the pair unbalanced (still correct, merely underfull).
    fn replace_separator(
        &self,
        cells: &mut InternalCells,
        index: usize,
        separator: Vec<u8>,
    ) -> bool {
        let child = cells[index].1;
        let used: usize = cells.iter().map(|(key, _)| internal_cell_bytes(key)).sum();
        if used - internal_cell_bytes(&cells[index].0) + internal_cell_bytes(&separator)
            > NODE_CAPACITY
        {
            return false;
        }
        cells[index] = (separator, child);
        true
    }
}

/// Which way a scan walks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    Forward,
    Backward,
}

/// Entries with keys within bounds, in key order (or reverse). Each batch is one leaf, copied
/// out under a shared latch; no latch is held between calls, so the caller may change the
/// tree while iterating (a concurrent change may or may not be seen; none is seen twice).
pub struct RangeIter {
    tree: BTree,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    direction: Direction,
    /// The in-range entries of the last leaf read, keys and values back to back in `data`;
    /// `entries` holds (start, key length, value length) in walk order. One buffer per leaf
    /// instead of two allocations per entry.
    data: Vec<u8>,
    entries: VecDeque<(usize, usize, usize)>,
    finished: bool,
    readahead: ScanReadAhead,
}

fn above_lower(key: &[u8], lower: &Bound<Vec<u8>>) -> bool {
    match lower {
        Bound::Included(bound) => key >= bound.as_slice(),
        Bound::Excluded(bound) => key > bound.as_slice(),
        Bound::Unbounded => true,
    }
}

fn below_upper(key: &[u8], upper: &Bound<Vec<u8>>) -> bool {
    match upper {
        Bound::Included(bound) => key <= bound.as_slice(),
        Bound::Excluded(bound) => key < bound.as_slice(),
        Bound::Unbounded => true,
    }
}

impl RangeIter {
    fn fill(&mut self) -> Result<()> {
        while self.entries.is_empty() && !self.finished {
            let readahead = &mut self.readahead;
            let store = &self.tree.store;
            let descent = match self.direction {
                Direction::Forward => {
                    let lower = self.lower.clone();
                    self.tree.descend_shared(
                        Fences::Keep,
                        move |node| match &lower {
                            Bound::Unbounded => 0,
                            Bound::Included(key) | Bound::Excluded(key) => {
                                child_position(node, key)
                            }
                        },
                        &mut |parent, node, position| {
                            readahead.plan(store, parent, node, position, Direction::Forward)
                        },
                    )?
                }
                Direction::Backward => {
                    let upper = self.upper.clone();
                    // The child holding the greatest key below the bound: the last one whose
                    // separator is below it (at or below, for an inclusive bound).
                    self.tree.descend_shared(
                        Fences::Keep,
                        move |node| match &upper {
                            Bound::Unbounded => node.count(),
                            Bound::Included(key) => child_position(node, key),
                            Bound::Excluded(key) => match node.search(key) {
                                Ok(index) | Err(index) => index,
                            },
                        },
                        &mut |parent, node, position| {
                            readahead.plan(store, parent, node, position, Direction::Backward)
                        },
                    )?
                }
            };
            let node = open_shared_node(descent.page_id, &descent.page)?;
            self.data.clear();
            let count = node.count();
            // A leaf's keys ascend: when its first and last keys are within the bounds, all
            // are, and the entries need no comparison each (most leaves of a long scan).
            let all_within = count > 0
                && above_lower(node.key(0), &self.lower)
                && below_upper(node.key(count - 1), &self.upper);
            for index in 0..count {
                let key = node.key(index);
                if all_within || (above_lower(key, &self.lower) && below_upper(key, &self.upper)) {
                    let start = self.data.len();
                    self.data.extend_from_slice(key);
                    let value_length =
                        self.tree.append_value(descent.page_id, node, index, &mut self.data)?;
                    self.entries.push_back((start, key.len(), value_length));
                }
            }
            match self.direction {
                Direction::Forward => match descent.high {
                    Some(high) if below_upper(&high, &self.upper) => {
                        self.lower = Bound::Included(high)
                    }
                    _ => self.finished = true,
                },
                Direction::Backward => {
                    match descent.low {
                        Some(low)
                            if above_lower(&low, &self.lower)
                                || matches!(self.lower, Bound::Unbounded) =>
                        {
                            self.upper = Bound::Excluded(low);
                        }
                        Some(low) if matches!(&self.lower, Bound::Included(bound) | Bound::Excluded(bound) if bound.as_slice() < low.as_slice()) =>
                        {
                            self.upper = Bound::Excluded(low);
                        }
                        _ => self.finished = true,
                    }
                    self.entries.make_contiguous().reverse();
                }
            }
        }
        Ok(())
    }
}

impl RangeIter {
    /// The next entry as borrowed (key, value), valid until the next call: a caller that
    /// keeps few of the entries copies only those.
    pub fn next_entry(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        if let Err(error) = self.fill() {
            self.finished = true;
            self.entries.clear();
            return Some(Err(error));
        }
        let (start, key_length, value_length) = self.entries.pop_front()?;
        let key_end = start + key_length;
        Some(Ok((&self.data[start..key_end], &self.data[key_end..key_end + value_length])))
    }
}

impl Iterator for RangeIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_entry().map(|entry| entry.map(|(key, value)| (key.to_vec(), value.to_vec())))
    }
}

impl BTree {
    /// Entries with keys in (`lower`, `upper`), walking in `direction`.
    pub fn range(
        &self,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
    ) -> RangeIter {
        RangeIter {
            tree: self.clone(),
            lower: lower.map(<[u8]>::to_vec),
            upper: upper.map(<[u8]>::to_vec),
            direction,
            data: Vec::new(),
            entries: VecDeque::new(),
            finished: false,
            readahead: ScanReadAhead::default(),
        }
    }

    /// Builds a tree from strictly ascending entries, filling nodes to 90% bottom-up: one
    /// write per page instead of one insert per entry.
    pub fn bulk_load(
        store: Arc<PageStore>,
        entries: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>,
    ) -> Result<BTree> {
        let tree = BTree::create(Arc::clone(&store))?;
        let mut level_nodes: Vec<(Vec<u8>, PageId)> = Vec::new();
        let mut cells: LeafCells = Vec::new();
        let mut used = 0;
        let mut previous: Option<Vec<u8>> = None;
        for (index, (key, value)) in entries.into_iter().enumerate() {
            Self::check_sizes(&key, Some(&value))?;
            if previous.as_ref().is_some_and(|previous| previous.as_slice() >= key.as_slice()) {
                return Err(BTreeError::UnsortedInput { index });
            }
            previous = Some(key.clone());
            // An inline value needs no page: no mini-transaction either.
            let stored = if value.len() < INLINE_VALUE_BYTES_MAX {
                inline_value(&value)
            } else {
                let mut mtr = store.mtr();
                let stored = tree.store_value(&mut mtr, &value)?;
                mtr.commit()?;
                stored
            };
            let size = leaf_cell_bytes(&key, &stored);
            if used + size > BULK_FILL_BYTES && !cells.is_empty() {
                level_nodes.push(tree.write_bulk_node(
                    &build_leaf(&cells),
                    cells[0].0.clone(),
                    PageType::BtreeLeaf,
                )?);
                cells.clear();
                used = 0;
            }
            used += size;
            cells.push((key, stored));
        }
        if !cells.is_empty() || level_nodes.is_empty() {
            let first = cells.first().map(|(key, _)| key.clone()).unwrap_or_default();
            level_nodes.push(tree.write_bulk_node(
                &build_leaf(&cells),
                first,
                PageType::BtreeLeaf,
            )?);
        }
        let mut level = 0u8;
        while level_nodes.len() > 1 {
            level += 1;
            level_nodes = tree.build_bulk_level(level, &level_nodes)?;
        }
        let (_, root) = level_nodes[0];
        let mut mtr = store.mtr();
        let meta_slot = mtr.latch(tree.meta)?;
        let meta = read_meta(tree.meta, mtr.page(meta_slot))?;
        // The empty root made by `create` goes back to the free list.
        let old_root = mtr.latch(meta.root)?;
        write_meta(&mut mtr, meta_slot, &Meta { root, height: level + 1, anchor: meta.anchor });
        tree.free_page(&mut mtr, old_root)?;
        mtr.commit()?;
        Ok(tree)
    }

    fn build_bulk_level(
        &self,
        level: u8,
        children: &[(Vec<u8>, PageId)],
    ) -> Result<Vec<(Vec<u8>, PageId)>> {
        let mut parents = Vec::new();
        let mut start = 0;
        while start < children.len() {
            let mut used = 0;
            let mut end = start + 1;
            while end < children.len()
                && used + internal_cell_bytes(&children[end].0) <= BULK_FILL_BYTES
            {
                used += internal_cell_bytes(&children[end].0);
                end += 1;
            }
            // Never leave a lone child for the next node: an internal node needs a separator.
            if end + 1 == children.len() && end - start > 2 {
                end -= 1;
            }
            let cells: InternalCells =
                children[start + 1..end].iter().map(|(key, page)| (key.clone(), page.0)).collect();
            let bytes = build_internal(level, children[start].1 .0, &cells);
            parents.push(self.write_bulk_node(
                &bytes,
                children[start].0.clone(),
                PageType::BtreeInternal,
            )?);
            start = end;
        }
        Ok(parents)
    }

    fn write_bulk_node(
        &self,
        payload: &[u8],
        first_key: Vec<u8>,
        page_type: PageType,
    ) -> Result<(Vec<u8>, PageId)> {
        let mut mtr = self.store.mtr();
        let (slot, page_id) = self.allocate_page(&mut mtr, page_type)?;
        write_new_payload(&mut mtr, slot, payload);
        mtr.commit()?;
        Ok((first_key, page_id))
    }

    /// Walks the whole tree checking its invariants (keys ordered within nodes and within
    /// their fences, levels consistent, overflow chains readable); returns the entry count.
    pub fn check_invariants(&self) -> Result<u64> {
        let page = self.store.read(self.meta)?;
        let meta = read_meta(self.meta, &page)?;
        drop(page);
        self.check_node(meta.root, meta.height - 1, None, None)
    }

    fn check_node(
        &self,
        page_id: PageId,
        level: u8,
        low: Option<&[u8]>,
        high: Option<&[u8]>,
    ) -> Result<u64> {
        let page = self.store.read(page_id)?;
        let node = open_node(page_id, &page)?;
        if node.level() != level {
            return Err(corrupt(page_id, format!("level={} expected={level}", node.level())));
        }
        for index in 0..node.count() {
            let key = node.key(index);
            if index > 0 && node.key(index - 1) >= key {
                return Err(corrupt(page_id, format!("keys out of order at index={index}")));
            }
            if low.is_some_and(|low| key < low) || high.is_some_and(|high| key >= high) {
                return Err(corrupt(page_id, format!("key outside its fences at index={index}")));
            }
        }
        if node.is_leaf() {
            for index in 0..node.count() {
                self.load_value(page_id, node, index)?;
            }
            return Ok(u64::try_from(node.count()).expect("fits"));
        }
        let keys: Vec<Vec<u8>> = (0..node.count()).map(|index| node.key(index).to_vec()).collect();
        let children: Vec<PageId> =
            (0..=node.count()).map(|position| PageId(child_at(node, position))).collect();
        drop(page);
        let mut total = 0;
        for (position, child) in children.into_iter().enumerate() {
            let child_low = if position == 0 { low } else { Some(keys[position - 1].as_slice()) };
            let child_high =
                if position < keys.len() { Some(keys[position].as_slice()) } else { high };
            total += self.check_node(child, level - 1, child_low, child_high)?;
        }
        Ok(total)
    }
}

/// Whether a shared descent collects the leaf's fence keys (a range walk needs them to move
/// to the next leaf; a point lookup does not, and skips two copies per level).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fences {
    Keep,
    Skip,
}

/// A leaf reached by a shared descent, with its fence keys.
struct Descent {
    page: tierdb_storage::PageRef,
    page_id: PageId,
    low: Option<Vec<u8>>,
    high: Option<Vec<u8>>,
}
