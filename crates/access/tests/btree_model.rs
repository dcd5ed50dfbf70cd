//! The B+tree against an in-memory model (an ordered map): random inserts, replacements,
//! deletes, point reads and range scans in both directions, with values from a few bytes to
//! overflow size; invariants checked throughout, and the tree reopened after a restart.
//! Concurrent histories: writers on disjoint key ranges plus scanning readers.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use tierdb_access::{BTree, Direction};
use tierdb_common::SplitMix64;
use tierdb_storage::{LocalVolume, PageStore, StoreConfig};

fn open_store(directory: &Path, pool_pages: u64) -> Arc<PageStore> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = pool_pages * 8192;
    if let Some(tier) = config.tier.as_mut() {
        tier.capacity_bytes = 512 * 8192;
    }
    Arc::new(PageStore::open(config).unwrap())
}

#[derive(Clone, Debug)]
enum Op {
    Insert(Vec<u8>, usize, u8),
    Delete(Vec<u8>),
    Get(Vec<u8>),
    Range(Option<(Vec<u8>, bool)>, Option<(Vec<u8>, bool)>, bool),
    Restart,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => prop::collection::vec(0u8..4, 0..6),
        2 => prop::collection::vec(any::<u8>(), 0..60),
        1 => prop::collection::vec(any::<u8>(), 900..1024),
    ]
}

fn value_length() -> impl Strategy<Value = usize> {
    prop_oneof![6 => 0usize..120, 3 => 300usize..959, 1 => 959usize..30_000]
}

fn op() -> impl Strategy<Value = Op> {
    let bound = || prop::option::of((key(), any::<bool>()));
    prop_oneof![
        10 => (key(), value_length(), any::<u8>()).prop_map(|(key, length, fill)| Op::Insert(key, length, fill)),
        5 => key().prop_map(Op::Delete),
        2 => key().prop_map(Op::Get),
        2 => (bound(), bound(), any::<bool>()).prop_map(|(lower, upper, backward)| Op::Range(lower, upper, backward)),
        1 => Just(Op::Restart),
    ]
}

fn value_of(length: usize, fill: u8) -> Vec<u8> {
    (0..length).map(|index| fill.wrapping_add(u8::try_from(index % 251).unwrap())).collect()
}

fn to_bound(bound: &Option<(Vec<u8>, bool)>) -> Bound<&[u8]> {
    match bound {
        None => Bound::Unbounded,
        Some((key, true)) => Bound::Included(key.as_slice()),
        Some((key, false)) => Bound::Excluded(key.as_slice()),
    }
}

fn bounds_valid(lower: Bound<&[u8]>, upper: Bound<&[u8]>) -> bool {
    match (lower, upper) {
        (
            Bound::Included(low) | Bound::Excluded(low),
            Bound::Included(high) | Bound::Excluded(high),
        ) => {
            low < high
                || (low == high
                    && matches!((lower, upper), (Bound::Included(_), Bound::Included(_))))
        }
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn tree_matches_model(ops in prop::collection::vec(op(), 1..400)) {
        let directory = tempfile::tempdir().unwrap();
        let mut store = open_store(directory.path(), 32);
        let mut tree = BTree::create(Arc::clone(&store)).unwrap();
        let meta = tree.meta_page();
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for (step, op) in ops.into_iter().enumerate() {
            match op {
                Op::Insert(key, length, fill) => {
                    let value = value_of(length, fill);
                    let (old, _) = tree.insert(&key, &value).unwrap();
                    prop_assert_eq!(old, model.insert(key, value));
                }
                Op::Delete(key) => {
                    let old = tree.delete(&key).unwrap().map(|(value, _)| value);
                    prop_assert_eq!(old, model.remove(&key));
                }
                Op::Get(key) => prop_assert_eq!(tree.get(&key).unwrap(), model.get(&key).cloned()),
                Op::Range(lower, upper, backward) => {
                    let (low, high) = (to_bound(&lower), to_bound(&upper));
                    if !bounds_valid(low, high) {
                        continue;
                    }
                    let direction = if backward { Direction::Backward } else { Direction::Forward };
                    let found: Vec<(Vec<u8>, Vec<u8>)> = tree.range(low, high, direction).map(Result::unwrap).collect();
                    let mut expected: Vec<(Vec<u8>, Vec<u8>)> = model
                        .range::<[u8], _>((low, high))
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect();
                    if backward {
                        expected.reverse();
                    }
                    prop_assert_eq!(found, expected);
                }
                Op::Restart => {
                    drop(tree);
                    Arc::try_unwrap(store).ok().expect("only owner").close().unwrap();
                    store = open_store(directory.path(), 32);
                    tree = BTree::open(Arc::clone(&store), meta).unwrap();
                }
            }
            if step % 25 == 0 {
                prop_assert_eq!(tree.check_invariants().unwrap(), u64::try_from(model.len()).unwrap());
            }
        }
        prop_assert_eq!(tree.check_invariants().unwrap(), u64::try_from(model.len()).unwrap());
        let all: Vec<Vec<u8>> = tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward).map(|entry| entry.unwrap().0).collect();
        prop_assert_eq!(all, model.keys().cloned().collect::<Vec<_>>());
    }
}

#[test]
fn deep_tree_splits_and_merges_back() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path(), 64);
    let tree = BTree::create(Arc::clone(&store)).unwrap();
    let mut model = BTreeMap::new();
    let mut random = SplitMix64::new(5);
    for _ in 0..20_000 {
        let key = random.below(50_000).to_be_bytes().to_vec();
        let value = value_of(usize::try_from(random.below(300)).unwrap(), 3);
        tree.insert(&key, &value).unwrap();
        model.insert(key, value);
    }
    assert_eq!(tree.check_invariants().unwrap(), u64::try_from(model.len()).unwrap());
    let grown = tree.height().unwrap();
    assert!(grown >= 3, "20,000 entries should need three levels, height={grown}");
    let pages_after_growth = store.max_page_id();
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for (index, key) in keys.iter().enumerate() {
        if index % 10 != 0 {
            assert_eq!(tree.delete(key).unwrap().map(|(value, _)| value), model.remove(key));
        }
    }
    assert_eq!(tree.check_invariants().unwrap(), u64::try_from(model.len()).unwrap());
    let found: Vec<Vec<u8>> = tree
        .range(Bound::Unbounded, Bound::Unbounded, Direction::Backward)
        .map(|entry| entry.unwrap().0)
        .collect();
    assert_eq!(found, model.keys().rev().cloned().collect::<Vec<_>>());
    let shrunk = tree.height().unwrap();
    assert!(shrunk < grown, "merges should remove a level: height {grown} -> {shrunk}");
    // Freed pages are reused: growing again allocates no new page ids until the free list
    // is used up.
    for index in 0..2_000u64 {
        tree.insert(&(100_000 + index).to_be_bytes(), &[1; 200]).unwrap();
    }
    assert_eq!(
        store.max_page_id(),
        pages_after_growth,
        "inserts after merges should reuse freed pages"
    );
}

#[test]
fn bulk_load_builds_a_valid_tree() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path(), 64);
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..30_000u64)
        .map(|index| {
            (index.to_be_bytes().to_vec(), value_of(usize::try_from(index % 200).unwrap(), 1))
        })
        .chain(std::iter::once((u64::MAX.to_be_bytes().to_vec(), value_of(6 * 1024, 9))))
        .collect();
    let tree = BTree::bulk_load(Arc::clone(&store), entries.clone()).unwrap();
    assert_eq!(tree.check_invariants().unwrap(), u64::try_from(entries.len()).unwrap());
    for (key, value) in entries.iter().step_by(97) {
        assert_eq!(tree.get(key).unwrap().as_ref(), Some(value));
    }
    assert_eq!(tree.get(&u64::MAX.to_be_bytes()).unwrap().unwrap().len(), 6 * 1024);
    // Unsorted input is refused.
    let unsorted = vec![(vec![2], vec![]), (vec![1], vec![])];
    assert!(BTree::bulk_load(Arc::clone(&store), unsorted).is_err());
}

#[test]
fn concurrent_writers_and_scanners_keep_the_tree_consistent() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path(), 48);
    let tree = BTree::create(Arc::clone(&store)).unwrap();
    let done = AtomicBool::new(false);
    const WRITERS: u8 = 4;
    let models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let tree = tree.clone();
                scope.spawn(move || {
                    let mut random = SplitMix64::new(u64::from(writer) + 100);
                    let mut model = BTreeMap::new();
                    for _ in 0..4_000 {
                        let mut key = vec![writer];
                        key.extend_from_slice(&random.below(2_000).to_be_bytes());
                        if random.below(3) == 0 {
                            assert_eq!(
                                tree.delete(&key).unwrap().map(|(value, _)| value),
                                model.remove(&key)
                            );
                        } else {
                            let value =
                                value_of(usize::try_from(random.below(400)).unwrap(), writer);
                            assert_eq!(
                                tree.insert(&key, &value).unwrap().0,
                                model.insert(key, value)
                            );
                        }
                    }
                    model
                })
            })
            .collect();
        for backward in [false, true] {
            let (tree, done) = (tree.clone(), &done);
            scope.spawn(move || {
                let direction = if backward { Direction::Backward } else { Direction::Forward };
                while !done.load(Ordering::Acquire) {
                    let keys: Vec<Vec<u8>> = tree
                        .range(Bound::Unbounded, Bound::Unbounded, direction)
                        .map(|entry| entry.unwrap().0)
                        .collect();
                    let ordered = keys.windows(2).all(|pair| {
                        if backward {
                            pair[0] > pair[1]
                        } else {
                            pair[0] < pair[1]
                        }
                    });
                    assert!(ordered, "scan returned keys out of order or twice");
                }
            });
        }
        let models = writers.into_iter().map(|writer| writer.join().unwrap()).collect();
        done.store(true, Ordering::Release);
        models
    });
    let mut expected = BTreeMap::new();
    for model in models {
        expected.extend(model);
    }
    assert_eq!(tree.check_invariants().unwrap(), u64::try_from(expected.len()).unwrap());
    let found: Vec<(Vec<u8>, Vec<u8>)> = tree
        .range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
        .map(Result::unwrap)
        .collect();
    assert_eq!(found, expected.into_iter().collect::<Vec<_>>());
}

/// Keys inserted in ascending order (a load by INSERT or COPY) leave leaves about 90% full,
/// not half full: the rightmost leaf splits at the bulk fill instead of in the middle. Keys in
/// random order still split in the middle and end up between.
#[test]
fn ascending_inserts_fill_leaves() {
    let pages_for = |keys: &[u64]| {
        let directory = tempfile::tempdir().unwrap();
        let store = open_store(directory.path(), 256);
        let before = store.max_page_id().0;
        let tree = BTree::create(Arc::clone(&store)).unwrap();
        for &key in keys {
            tree.insert(&key.to_be_bytes(), &[7; 100]).unwrap();
        }
        assert_eq!(tree.check_invariants().unwrap(), u64::try_from(keys.len()).unwrap());
        for &key in keys.iter().step_by(101) {
            assert_eq!(tree.get(&key.to_be_bytes()).unwrap(), Some(vec![7; 100]));
        }
        store.max_page_id().0 - before
    };
    let ascending: Vec<u64> = (0..20_000).collect();
    let mut shuffled = ascending.clone();
    let mut random = SplitMix64::new(11);
    for index in (1..shuffled.len()).rev() {
        let other = usize::try_from(random.below(u64::try_from(index + 1).unwrap())).unwrap();
        shuffled.swap(index, other);
    }
    // A cell is the 8-byte key, the 101 stored bytes and a few bytes of header and slot.
    let cell_bytes = tierdb_access::leaf_cell_bytes(&[0; 8], &[0; 101]) as f64;
    let full_pages = 20_000.0 * cell_bytes / 8_000.0;
    let ascending_pages = pages_for(&ascending) as f64;
    let shuffled_pages = pages_for(&shuffled) as f64;
    assert!(
        ascending_pages < full_pages / 0.85,
        "ascending load used pages={ascending_pages}, full leaves would be {full_pages:.0}"
    );
    assert!(
        shuffled_pages > ascending_pages * 1.2,
        "random order used pages={shuffled_pages}, ascending {ascending_pages}"
    );
}

/// A scan of a tree several times the pool has its next leaves loaded ahead by the store's
/// read-ahead workers, in both directions, and still returns every entry once and in order.
/// Every volume read sleeps (remote storage, no tier), so the workers' reads in flight are
/// what the scan finds when it reaches a leaf.
#[test]
fn scans_larger_than_the_pool_read_leaves_ahead() {
    let directory = tempfile::tempdir().unwrap();
    let volume = LocalVolume::open(directory.path().join("volume"))
        .unwrap()
        .with_read_latency(std::time::Duration::from_micros(300));
    let mut config = StoreConfig::with_volume(directory.path(), Arc::new(volume));
    config.buffer_pool_bytes = 256 * 8192;
    config.tier = None;
    let store = Arc::new(PageStore::open(config).unwrap());
    let value = vec![7u8; 200];
    let entries: Vec<(Vec<u8>, Vec<u8>)> =
        (0..40_000u32).map(|key| (key.to_be_bytes().to_vec(), value.clone())).collect();
    let tree = BTree::bulk_load(Arc::clone(&store), entries.iter().cloned()).unwrap();
    store.flush_all().unwrap();
    for direction in [Direction::Forward, Direction::Backward] {
        let loaded_before = store.stats().readahead.pages_loaded.get();
        let keys: Vec<Vec<u8>> = tree
            .range(Bound::Unbounded, Bound::Unbounded, direction)
            .map(|entry| entry.unwrap().0)
            .collect();
        let mut expected: Vec<Vec<u8>> = entries.iter().map(|(key, _)| key.clone()).collect();
        if direction == Direction::Backward {
            expected.reverse();
        }
        assert_eq!(keys, expected, "{direction:?}");
        let loaded = store.stats().readahead.pages_loaded.get() - loaded_before;
        // About 1,100 leaves, over four times the pool: most of them are read ahead.
        assert!(loaded > 500, "{direction:?}: pages loaded ahead={loaded}");
    }
    // A short range (one leaf) asks for nothing ahead.
    let requested_before = store.stats().readahead.pages_requested.get();
    let short: Vec<_> = tree
        .range(
            Bound::Included(&[0, 0, 1, 0][..]),
            Bound::Excluded(&[0, 0, 1, 10][..]),
            Direction::Forward,
        )
        .collect();
    assert_eq!(short.len(), 10);
    assert_eq!(store.stats().readahead.pages_requested.get(), requested_before);
}
