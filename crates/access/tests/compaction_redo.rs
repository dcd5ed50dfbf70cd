//! Leaf compactions logged as the page store's `Compact` op (docs/design/013-wal-node-records.md,
//! "Compaction records"): the op reproduces `NodeMut::compact` byte for byte, a logged
//! compaction is redone after a crash to the identical page, and it is smaller than the moves
//! and writes it replaces.

use proptest::prelude::*;
use tierdb_access::{compaction_of, plan_payload_change, Node, NodeMut, PayloadChange};
use tierdb_common::{Page, PageId, PageType, PAGE_PAYLOAD_SIZE};
use tierdb_storage::{Mtr, MtrSlot, PageOp, PageStore, StoreConfig};

/// A full leaf of `value_bytes`-byte values with every `hole_every`-th cell removed (so it has
/// fragmented bytes and almost no free gap).
fn leaf_with_holes(value_bytes: usize, hole_every: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
    let mut node = NodeMut::init(&mut bytes, 0);
    for index in 0u32.. {
        let key = format!("key{index:06}").into_bytes();
        let value: Vec<u8> = (0..value_bytes)
            .map(|at| u8::try_from((at * 31 + 7 * usize::try_from(index).unwrap()) % 251).unwrap())
            .collect();
        let position = node.view().search(&key).expect_err("keys ascend");
        if !node.insert_leaf(position, &key, &value) {
            break;
        }
    }
    let count = node.view().count();
    for index in (1..count).step_by(hole_every).rev() {
        node.remove(index);
    }
    bytes
}

/// An update of cell `index` as the tree makes it: the old cell removed, the new version (a
/// `prefix_bytes`-byte prefix in front of the old value) inserted, compacting the leaf if its
/// free gap is too small; `None` if the new version does not fit.
fn updated(before: &[u8], index: usize, prefix_bytes: usize) -> Option<Vec<u8>> {
    let mut after = before.to_vec();
    let mut node = NodeMut::open(&mut after).unwrap();
    let key = node.view().key(index).to_vec();
    let tierdb_access::CellValue::Leaf(old) = node.view().value(index) else { panic!("a leaf") };
    let value = [vec![0xEE; prefix_bytes], old.to_vec()].concat();
    node.remove(index);
    node.insert_leaf(index, &key, &value).then_some(after)
}

/// Logs the change from the latched page to `after` as `write_payload` does (the `Compact` op
/// when `with_compact_op` and `compaction_of` finds one, then moves and writes).
fn log_change(mtr: &mut Mtr<'_>, slot: MtrSlot, after: &[u8], with_compact_op: bool) -> bool {
    let compaction = compaction_of(mtr.page(slot).payload(), after).filter(|_| with_compact_op);
    let compacted = compaction.is_some();
    if let Some(compaction) = compaction {
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
    assert_eq!(mtr.page(slot).payload(), after);
    compacted
}

#[test]
fn a_logged_compaction_is_redone_to_the_identical_page_and_is_small() {
    let directory = tempfile::tempdir().unwrap();
    let mut config = StoreConfig::local(directory.path()).unwrap();
    config.background = false;
    let before = leaf_with_holes(150, 5);
    let after = updated(&before, 3, 60).expect("the update fits after compaction");
    assert_ne!(Node::open(&before).unwrap().free_bytes(), 0);
    let (pages, images, new_bytes, old_bytes) = {
        let store = PageStore::open(config.clone()).unwrap();
        let mut mtr = store.mtr();
        let (first, first_id) = mtr.allocate(PageType::BtreeLeaf).unwrap();
        let (second, second_id) = mtr.allocate(PageType::BtreeLeaf).unwrap();
        mtr.write(first, 0, &before);
        mtr.write(second, 0, &before);
        mtr.commit().unwrap();
        let wal_bytes = || store.wal_stats().bytes.get();
        let start = wal_bytes();
        let mut mtr = store.mtr();
        let slot = mtr.latch(first_id).unwrap();
        assert!(log_change(&mut mtr, slot, &after, true), "the update compacted the leaf");
        mtr.commit().unwrap();
        let new_bytes = wal_bytes() - start;
        let start = wal_bytes();
        let mut mtr = store.mtr();
        let slot = mtr.latch(second_id).unwrap();
        assert!(!log_change(&mut mtr, slot, &after, false));
        let lsn = mtr.commit().unwrap();
        let old_bytes = wal_bytes() - start;
        store.wait_durable(lsn).unwrap();
        let pages = [first_id, second_id];
        let images: Vec<(Vec<u8>, u64)> = pages
            .iter()
            .map(|&page_id| {
                let page = store.read(page_id).unwrap();
                (page.payload().to_vec(), page.lsn().0)
            })
            .collect();
        // A crash: nothing flushed, the pages come back only through redo.
        store.abandon();
        (pages, images, new_bytes, old_bytes)
    };
    println!("WAL bytes of one leaf update that compacts: {new_bytes} with the Compact op, {old_bytes} as moves and writes");
    assert!(new_bytes * 2 < old_bytes, "{new_bytes} against {old_bytes}");
    let store = PageStore::open(config).unwrap();
    for (page_id, (payload, lsn)) in pages.iter().zip(&images) {
        let page = store.read(*page_id).unwrap();
        assert_eq!(page.payload(), &payload[..], "page {page_id} after redo");
        assert_eq!(page.payload(), &after[..]);
        assert_eq!(page.lsn().0, *lsn);
    }
}

proptest! {
    /// On a leaf with holes, `compaction_of(before, compacted)` finds the op, and the op alone
    /// yields exactly `NodeMut::compact`'s bytes (cells, slots, and the stale free gap), apart
    /// from the header fields the tree writes; an update that compacts is redone exactly.
    #[test]
    fn the_op_reproduces_node_compaction(
        value_bytes in 20usize..400,
        hole_every in 2usize..9,
        index_seed in any::<usize>(),
        prefix_bytes in 0usize..100,
    ) {
        let before = leaf_with_holes(value_bytes, hole_every);
        let mut compacted = before.clone();
        NodeMut::open(&mut compacted).unwrap().compact();
        // The hole at slot 1 lies above every later cell (keys were inserted ascending, each
        // below the ones before), so the compaction moves cells and is found.
        let compaction = compaction_of(&before, &compacted).expect("a compaction that moved cells");
        let mut page = Page::new_initialized(PageId(9), PageType::BtreeLeaf);
        page.payload_mut().copy_from_slice(&before);
        PageOp::Compact { page_id: PageId(9), compaction }.apply(&mut page);
        // Only the cell area start (4..6) and the fragmented bytes (6..8) differ.
        let mut expected = compacted.clone();
        expected[4..8].copy_from_slice(&before[4..8]);
        prop_assert_eq!(page.payload(), &expected[..]);
        let count = Node::open(&before).unwrap().count();
        let index = index_seed % count;
        if let Some(probe) = updated(&before, index, prefix_bytes) {
            let mut page = Page::new_initialized(PageId(9), PageType::BtreeLeaf);
            page.payload_mut().copy_from_slice(&before);
            if let Some(compaction) = compaction_of(&before, &probe) {
                PageOp::Compact { page_id: PageId(9), compaction }.apply(&mut page);
            }
            let changes = plan_payload_change(page.payload(), &probe);
            for change in changes {
                match change {
                    PayloadChange::Move { source, destination, length } => {
                        page.payload_mut().copy_within(source..source + length, destination)
                    }
                    PayloadChange::Write(range) => {
                        page.payload_mut()[range.clone()].copy_from_slice(&probe[range])
                    }
                }
            }
            prop_assert_eq!(page.payload(), &probe[..]);
        }
    }
}
