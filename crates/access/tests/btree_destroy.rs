//! Destroying a B+tree (`BTree::destroy`, btree/destroy.rs): every page the tree holds
//! (nodes, overflow chains, its free list, anchor and meta) goes back to the page store, a
//! tree beside it is untouched, and a destroy done in steps, or cut by a crash, finishes when
//! run again.

use std::path::Path;
use std::sync::Arc;

use tierdb_access::BTree;
use tierdb_storage::{PageStore, StoreConfig};

fn open_store(directory: &Path) -> Arc<PageStore> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 256 * 8192;
    config.background = false;
    Arc::new(PageStore::open(config).unwrap())
}

fn key(index: u32) -> Vec<u8> {
    format!("key{index:08}").into_bytes()
}

/// A tree of `count` entries, every tenth with a value of three overflow pages, and a
/// quarter of them deleted again (so that its free list holds pages).
fn filled_tree(store: &Arc<PageStore>, count: u32) -> BTree {
    let tree = BTree::create(Arc::clone(store)).unwrap();
    for index in 0..count {
        let value = if index % 10 == 0 { vec![7u8; 20_000] } else { vec![1u8; 100] };
        tree.insert(&key(index), &value).unwrap();
    }
    for index in (0..count).step_by(4) {
        tree.delete(&key(index)).unwrap();
    }
    tree
}

/// Live pages once everything is written: what the store still holds.
fn live_pages(store: &PageStore) -> u64 {
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    store.space_usage().live_pages
}

#[test]
fn destroy_frees_every_page_and_leaves_other_trees_alone() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let kept = filled_tree(&store, 2_000);
    let baseline = live_pages(&store);
    let doomed = filled_tree(&store, 6_000);
    let pages = doomed.page_count().unwrap().expect("a new tree counts its pages");
    assert!(pages > 300, "the tree is not deep enough to test: {pages} pages");
    assert_eq!(live_pages(&store), baseline + pages);
    assert_eq!(doomed.destroy().unwrap().pages_freed, pages);
    assert_eq!(live_pages(&store), baseline, "pages of the destroyed tree are still live");
    let again = doomed.destroy().unwrap();
    assert_eq!((again.pages_freed, again.last_lsn), (0, None), "a second destroy finds nothing");
    assert_eq!(kept.check_invariants().unwrap(), 1_500);
    for index in (1..2_000).filter(|index| index % 4 != 0) {
        assert!(kept.get(&key(index)).unwrap().is_some(), "kept key {index}");
    }
    store.compact().unwrap();
    store.checkpoint().unwrap();
    let usage = store.space_usage();
    assert!(usage.amplification() < 1.5, "space not reclaimed: {usage:?}");
}

#[test]
fn destroy_in_steps_frees_each_page_once() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let baseline = live_pages(&store);
    let tree = filled_tree(&store, 4_000);
    let pages = tree.page_count().unwrap().unwrap();
    let mut freed = 0;
    let mut steps = 0;
    loop {
        let progress = tree.destroy_some(37).unwrap();
        freed += progress.pages_freed;
        steps += 1;
        if progress.done {
            break;
        }
        assert!(progress.pages_freed >= 37, "a step that is not the last frees its share");
    }
    assert_eq!(freed, pages, "each page freed exactly once over the steps");
    assert!(steps > pages / 40, "steps={steps} for pages={pages}");
    assert_eq!(live_pages(&store), baseline);
}

#[test]
fn a_destroy_cut_by_a_crash_finishes_after_recovery() {
    let directory = tempfile::tempdir().unwrap();
    let (meta, pages, baseline) = {
        let store = open_store(directory.path());
        let baseline = live_pages(&store);
        let tree = filled_tree(&store, 4_000);
        let pages = tree.page_count().unwrap().unwrap();
        store.flush_all().unwrap();
        // Part of the tree freed durably, then a crash.
        let progress = tree.destroy_some(pages / 3).unwrap();
        assert!(!progress.done);
        store.wait_durable(progress.last_lsn.expect("it freed pages")).unwrap();
        let meta = tree.meta_page();
        drop(tree);
        Arc::try_unwrap(store).ok().expect("the only handle").abandon();
        (meta, pages, baseline)
    };
    let store = open_store(directory.path());
    let tree = BTree::open(Arc::clone(&store), meta).unwrap();
    let rest = tree.destroy().unwrap().pages_freed;
    assert!(rest < pages && rest > 0, "rest={rest} of pages={pages}");
    assert_eq!(live_pages(&store), baseline);
}
