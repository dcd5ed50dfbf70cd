//! B+tree nodes against a model (an ordered map): random inserts, removes, compactions and
//! splits keep the node valid, ordered and equal to the model; every change, logged as the
//! page ops `compaction_of` and `plan_payload_change` plan and redone by the page store's `PageOp::apply` onto
//! the old image, reproduces the new image byte for byte; corrupt bytes are rejected or read
//! safely, never a panic.

use std::collections::BTreeMap;

use proptest::prelude::*;
use tierdb_access::{
    compaction_of, diff_ranges, leaf_cell_bytes, plan_payload_change, CellValue, Node, NodeMut,
    PayloadChange,
};
use tierdb_common::{Page, PageId, PageType, PAGE_PAYLOAD_SIZE};
use tierdb_storage::PageOp;

#[derive(Clone, Debug)]
enum Op {
    Insert(Vec<u8>, Vec<u8>),
    Remove(usize),
    /// An update of a row: the cell is removed and inserted again with `prefix` in front of
    /// its old value (a new version in front of the old ones).
    Prepend(usize, Vec<u8>),
    Compact,
    HighKey(Option<Vec<u8>>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::collection::vec(any::<u8>(), 0..40), prop::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(key, value)| Op::Insert(key, value)),
        3 => any::<usize>().prop_map(Op::Remove),
        3 => (any::<usize>(), prop::collection::vec(any::<u8>(), 0..60))
            .prop_map(|(choice, prefix)| Op::Prepend(choice, prefix)),
        1 => Just(Op::Compact),
        1 => prop::option::of(prop::collection::vec(any::<u8>(), 0..30)).prop_map(Op::HighKey),
    ]
}

fn leaf_contents(node: Node<'_>) -> BTreeMap<Vec<u8>, Vec<u8>> {
    (0..node.count())
        .map(|index| match node.value(index) {
            CellValue::Leaf(value) => (node.key(index).to_vec(), value.to_vec()),
            CellValue::Child(_) => panic!("leaf holds a child"),
        })
        .collect()
}

/// The page ops the tree logs for a change from `before` to `after`, redone by the page store
/// onto a page holding `before`; returns the redone payload.
fn redo_onto(before: &[u8], after: &[u8]) -> Vec<u8> {
    let page_id = PageId(7);
    // As `write_payload`: the `Compact` op if the change compacted the node, then the moves
    // and writes planned from the compacted page.
    let compaction = compaction_of(before, after);
    let mut planned_from = before.to_vec();
    let mut ops: Vec<PageOp> = Vec::new();
    if let Some(compaction) = compaction {
        compaction.apply(&mut planned_from);
        ops.push(PageOp::Compact { page_id, compaction });
    }
    let planned =
        plan_payload_change(&planned_from, after).into_iter().map(|change| match change {
            PayloadChange::Move { source, destination, length } => PageOp::Move {
                page_id,
                source: u16::try_from(source).unwrap(),
                destination: u16::try_from(destination).unwrap(),
                length: u16::try_from(length).unwrap(),
            },
            PayloadChange::Write(range) => PageOp::Write {
                page_id,
                offset: u16::try_from(range.start).unwrap(),
                bytes: after[range].to_vec(),
            },
        });
    ops.extend(planned);
    let mut page = Page::new_initialized(page_id, PageType::BtreeLeaf);
    page.payload_mut().copy_from_slice(before);
    for op in &ops {
        op.apply(&mut page);
    }
    page.payload().to_vec()
}

proptest! {
    #[test]
    fn leaf_matches_model(ops in prop::collection::vec(op(), 1..200)) {
        let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut high_key: Option<Vec<u8>> = None;
        NodeMut::init(&mut bytes, 0);
        for op in ops {
            let before = bytes.clone();
            let mut node = NodeMut::open(&mut bytes).unwrap();
            match op {
                Op::Insert(key, value) => {
                    if let Err(index) = node.view().search(&key) {
                        let fits = node.view().free_bytes() >= leaf_cell_bytes(&key, &value);
                        prop_assert_eq!(node.insert_leaf(index, &key, &value), fits);
                        if fits {
                            model.insert(key, value);
                        }
                    }
                }
                Op::Remove(choice) => {
                    if !model.is_empty() {
                        let index = choice % model.len();
                        let key = node.view().key(index).to_vec();
                        node.remove(index);
                        model.remove(&key);
                    }
                }
                Op::Prepend(choice, prefix) => {
                    if !model.is_empty() {
                        let index = choice % model.len();
                        let key = node.view().key(index).to_vec();
                        let value = [prefix, model[&key].clone()].concat();
                        node.remove(index);
                        if node.insert_leaf(index, &key, &value) {
                            model.insert(key, value);
                        } else {
                            model.remove(&key);
                        }
                    }
                }
                Op::Compact => node.compact(),
                Op::HighKey(key) => {
                    // A change that does not fit leaves the old high key in place.
                    if node.set_high_key(key.as_deref()) {
                        high_key = key;
                    }
                }
            }
            let view = Node::open(&bytes).unwrap();
            prop_assert_eq!(leaf_contents(view), model.clone());
            prop_assert_eq!(view.high_key().map(<[u8]>::to_vec), high_key.clone());
            for (index, key) in model.keys().enumerate() {
                prop_assert_eq!(view.search(key), Ok(index));
            }
            // Redo of the logged change onto the old image reproduces the new one.
            prop_assert_eq!(redo_onto(&before, &bytes), bytes.clone());
        }
    }

    #[test]
    fn diff_ranges_match_a_byte_by_byte_diff(
        length in 0usize..300,
        seed in any::<u64>(),
        changes in prop::collection::vec((any::<usize>(), 1usize..40, any::<u8>()), 0..12),
    ) {
        let mut state = seed;
        let before: Vec<u8> = (0..length)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 60) as u8 // few distinct values: changed bytes often equal the old ones
            })
            .collect();
        let mut after = before.clone();
        for (at, span, value) in changes {
            if length == 0 {
                break;
            }
            let start = at % length;
            for byte in &mut after[start..(start + span).min(length)] {
                *byte = byte.wrapping_add(value);
            }
        }
        // The reference: maximal differing runs, merged across gaps under 6 bytes.
        let mut expected: Vec<std::ops::Range<usize>> = Vec::new();
        let mut index = 0;
        while index < length {
            if before[index] == after[index] {
                index += 1;
                continue;
            }
            let start = index;
            while index < length && before[index] != after[index] {
                index += 1;
            }
            match expected.last_mut() {
                Some(last) if start - last.end < 6 => last.end = index,
                _ => expected.push(start..index),
            }
        }
        prop_assert_eq!(diff_ranges(&before, &after), expected);
    }

    #[test]
    fn split_keeps_every_cell_in_order(keys in prop::collection::btree_set(prop::collection::vec(any::<u8>(), 1..30), 2..120), split_at_seed in any::<usize>()) {
        let mut left_bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
        let mut right_bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
        let mut left = NodeMut::init(&mut left_bytes, 0);
        let mut inserted = Vec::new();
        for key in &keys {
            let index = left.view().search(key).unwrap_err();
            if left.insert_leaf(index, key, b"value") {
                inserted.push(key.clone());
            }
        }
        inserted.sort();
        let split_at = split_at_seed % inserted.len();
        let mut right = NodeMut::init(&mut right_bytes, 0);
        left.move_tail(split_at, &mut right);
        let left_view = Node::open(&left_bytes).unwrap();
        let right_view = Node::open(&right_bytes).unwrap();
        let rejoined: Vec<Vec<u8>> = leaf_contents(left_view).into_keys().chain(leaf_contents(right_view).into_keys()).collect();
        prop_assert_eq!(rejoined, inserted);
        prop_assert_eq!(left_view.count(), split_at);
    }

    #[test]
    fn internal_node_routes_keys(separators in prop::collection::btree_set(prop::collection::vec(any::<u8>(), 1..8), 1..50), probe in prop::collection::vec(any::<u8>(), 0..8)) {
        let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
        let mut node = NodeMut::init(&mut bytes, 1);
        node.set_leftmost_child(1_000);
        for (index, key) in separators.iter().enumerate() {
            prop_assert!(node.insert_internal(index, key, u64::try_from(index).unwrap()));
        }
        let view = Node::open(&bytes).unwrap();
        // The child for a probe is the one after the greatest separator <= probe.
        let expected = separators.iter().enumerate().filter(|(_, key)| key.as_slice() <= probe.as_slice()).map(|(index, _)| u64::try_from(index).unwrap()).next_back().unwrap_or(1_000);
        prop_assert_eq!(view.child_for(&probe), expected);
    }

    #[test]
    fn corrupt_nodes_are_rejected_or_read_safely(seed_ops in prop::collection::vec(op(), 1..40), flips in prop::collection::vec((0usize..PAGE_PAYLOAD_SIZE, any::<u8>()), 1..8)) {
        let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
        NodeMut::init(&mut bytes, 0);
        for op in seed_ops {
            if let Op::Insert(key, value) = op {
                let mut node = NodeMut::open(&mut bytes).unwrap();
                if let Err(index) = node.view().search(&key) {
                    node.insert_leaf(index, &key, &value);
                }
            }
        }
        for (position, value) in flips {
            bytes[position] = value;
        }
        if let Ok(node) = Node::open(&bytes) {
            for index in 0..node.count() {
                let _ = node.key(index);
                let _ = node.value(index);
            }
            let _ = node.search(b"probe");
            let _ = node.free_bytes();
            let _ = node.high_key();
        }
    }
}

#[test]
fn overlapping_cells_are_rejected_before_a_change() {
    let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
    let mut node = NodeMut::init(&mut bytes, 0);
    assert!(node.insert_leaf(0, b"a", b"one"));
    assert!(node.insert_leaf(1, b"b", b"two"));
    // Point the second slot at the first cell's bytes (slot array starts at offset 40).
    let first = [bytes[40], bytes[41]];
    bytes[42..44].copy_from_slice(&first);
    // A read stays within the page (every cell is bounded) ...
    let node = Node::open(&bytes).expect("bounded cells open for reading");
    assert_eq!(node.key(1), b"a");
    // ... but no change is made to a node whose cells overlap.
    let error = NodeMut::open(&mut bytes).err().expect("overlap must be rejected");
    assert!(error.0.contains("overlapping"), "{error:?}");
}

#[test]
fn failed_high_key_change_keeps_the_old_one() {
    let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
    let mut node = NodeMut::init(&mut bytes, 0);
    assert!(node.set_high_key(Some(b"old")));
    let mut index = 0;
    while node.insert_leaf(index, &u32::try_from(index).unwrap().to_be_bytes(), &[7; 200]) {
        index += 1;
    }
    assert!(!node.set_high_key(Some(&[9; 1000])));
    assert_eq!(node.view().high_key(), Some(&b"old"[..]));
}

#[test]
fn a_value_of_the_same_length_is_overwritten_in_place() {
    let mut bytes = vec![0u8; PAGE_PAYLOAD_SIZE];
    let mut node = NodeMut::init(&mut bytes, 0);
    assert!(node.insert_leaf(0, b"a", b"one"));
    assert!(node.insert_leaf(1, b"b", b"two"));
    let before = bytes.clone();
    let mut node = NodeMut::open(&mut bytes).unwrap();
    assert!(!node.overwrite_leaf_value(1, b"three"), "another length is not written in place");
    assert!(node.overwrite_leaf_value(1, b"TWO"));
    assert_eq!(node.view().value(1), CellValue::Leaf(b"TWO"));
    assert_eq!(node.view().value(0), CellValue::Leaf(b"one"));
    // Only the value's bytes changed: no header, slot or other cell.
    let ranges = diff_ranges(&before, &bytes);
    assert_eq!(ranges.len(), 1, "{ranges:?}");
    assert_eq!(ranges[0].len(), 3, "{ranges:?}");
}
