//! Freeing pages (`PageStore::free_pages`, store/free.rs): freed pages stop being readable,
//! their space is reclaimed by compaction and checkpoints, dirty frames of freed pages are
//! never written, and recovery after a crash neither brings a freed page back nor fails on
//! logged changes to one whose image is gone.

use std::path::Path;

use crate::common::create_indexed_pages;
use tierdb_common::PageId;
use tierdb_storage::{PageStore, StorageError, StoreConfig};

fn config(directory: &Path) -> StoreConfig {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 64 * 8192;
    config.background = false;
    config
}

fn stamp(store: &PageStore, page_id: PageId, value: u64) {
    let mut mtr = store.mtr();
    let slot = mtr.latch(page_id).unwrap();
    mtr.write(slot, 8, &value.to_le_bytes());
    store.wait_durable(mtr.commit().unwrap()).unwrap();
}

fn read_u64(store: &PageStore, page_id: PageId, offset: usize) -> u64 {
    let page = store.read(page_id).unwrap();
    u64::from_le_bytes(page.payload()[offset..offset + 8].try_into().unwrap())
}

fn assert_freed(store: &PageStore, page_id: PageId) {
    match store.read(page_id) {
        Err(StorageError::UnknownPage { page_id: unknown }) => assert_eq!(unknown, page_id),
        Err(other) => panic!("page_id={page_id} read failed with {other}, not UnknownPage"),
        Ok(_) => panic!("freed page_id={page_id} is still readable"),
    }
}

#[test]
fn freed_pages_are_gone_and_their_space_is_reclaimed() {
    let directory = tempfile::tempdir().unwrap();
    let store = PageStore::open(config(directory.path())).unwrap();
    let ids = create_indexed_pages(&store, 600);
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    let before = store.space_usage();
    assert_eq!(before.live_pages, 600);
    // Free every page but one in ten, as a dropped tree beside a live one would.
    let kept: Vec<(usize, PageId)> =
        ids.iter().copied().enumerate().filter(|(index, _)| index % 10 == 0).collect();
    let freed: Vec<PageId> =
        ids.iter().enumerate().filter(|(index, _)| index % 10 != 0).map(|(_, id)| *id).collect();
    store.wait_durable(store.free_pages(&freed).unwrap()).unwrap();
    assert_eq!(store.stats().pages_freed.get(), 540);
    assert_eq!(store.space_usage().live_pages, 60);
    for &page_id in &freed {
        assert_freed(&store, page_id);
    }
    store.compact().unwrap();
    store.checkpoint().unwrap();
    let after = store.space_usage();
    assert_eq!(after.live_pages, 60);
    assert!(
        after.segment_slots * 4 < before.segment_slots,
        "segments not reclaimed: before {before:?}, after {after:?}"
    );
    for (index, page_id) in kept {
        assert_eq!(read_u64(&store, page_id, 0), index as u64);
    }
}

#[test]
fn dirty_pages_freed_before_any_flush_are_never_written() {
    let directory = tempfile::tempdir().unwrap();
    let store = PageStore::open(config(directory.path())).unwrap();
    let ids = create_indexed_pages(&store, 40);
    let flushed_before = store.stats().pages_flushed.get();
    store.wait_durable(store.free_pages(&ids[..30]).unwrap()).unwrap();
    store.flush_all().unwrap();
    let written = store.stats().pages_flushed.get() - flushed_before;
    assert_eq!(written, 10, "only the ten pages still allocated are written");
    store.checkpoint().unwrap();
    assert_eq!(store.space_usage().live_pages, 10);
    for &page_id in &ids[..30] {
        assert_freed(&store, page_id);
    }
}

/// The redo point is held before a change to a page that is then freed, and the page's only
/// segment is deleted: recovery must skip that change (the page has no image to apply it
/// to) and must not bring the freed pages back.
#[test]
fn recovery_skips_changes_to_freed_pages_and_keeps_them_freed() {
    let directory = tempfile::tempdir().unwrap();
    let (kept, freed) = {
        let store = PageStore::open(config(directory.path())).unwrap();
        let kept = create_indexed_pages(&store, 3);
        store.flush_all().unwrap();
        let freed = create_indexed_pages(&store, 20);
        store.flush_all().unwrap();
        store.checkpoint().unwrap();
        // A change to a kept page holds the redo point before the changes below.
        stamp(&store, kept[0], 7);
        for &page_id in &freed {
            stamp(&store, page_id, 99);
        }
        store.wait_durable(store.free_pages(&freed).unwrap()).unwrap();
        // The freed pages' segment is dead now: the checkpoint deletes it, yet the redo
        // point stays before the stamps of the freed pages (kept[0] is still dirty).
        store.checkpoint().unwrap();
        stamp(&store, kept[1], 8);
        store.abandon();
        (kept, freed)
    };
    let store = PageStore::open(config(directory.path())).unwrap();
    assert_eq!(read_u64(&store, kept[0], 8), 7);
    assert_eq!(read_u64(&store, kept[1], 8), 8);
    assert_eq!(read_u64(&store, kept[2], 0), 2);
    for &page_id in &freed {
        assert_freed(&store, page_id);
    }
    assert_eq!(store.space_usage().live_pages, 3);
    // Page ids are never reused: a new page gets an id beyond every freed one.
    let new = create_indexed_pages(&store, 1)[0];
    assert!(new > *freed.last().unwrap(), "new page_id={new} reuses a freed id");
    store.close().unwrap();
    // A clean restart after the frees were checkpointed: still freed.
    let store = PageStore::open(config(directory.path())).unwrap();
    for &page_id in &freed {
        assert_freed(&store, page_id);
    }
    assert_eq!(read_u64(&store, new, 0), 0);
}

/// A free that was not made durable before the crash is lost with the log's tail: the pages
/// come back whole (the layer above frees them again, as it durably decided to).
#[test]
fn a_free_lost_in_a_crash_leaves_the_pages_readable() {
    let directory = tempfile::tempdir().unwrap();
    let ids = {
        let store = PageStore::open(config(directory.path())).unwrap();
        let ids = create_indexed_pages(&store, 5);
        store.flush_all().unwrap();
        store.checkpoint().unwrap();
        // Appended, not flushed: a crash may lose it.
        store.free_pages(&ids).unwrap();
        store.abandon();
        ids
    };
    let store = PageStore::open(config(directory.path())).unwrap();
    // abandon() leaves the buffered log unwritten, so the free is gone with it.
    for (index, &page_id) in ids.iter().enumerate() {
        assert_eq!(read_u64(&store, page_id, 0), index as u64);
    }
}

/// An unlogged store (temp tables) frees without a log record: the pages go the same way.
#[test]
fn an_unlogged_store_frees_pages_without_logging() {
    let directory = tempfile::tempdir().unwrap();
    let main = PageStore::open(config(directory.path())).unwrap();
    let store = PageStore::open_unlogged(main.temp_space(), 64 * 8192).unwrap();
    let ids = create_indexed_pages(&store, 20);
    store.flush_all().unwrap();
    let records_before = store.wal_stats().records.get();
    store.free_pages(&ids[..15]).unwrap();
    assert_eq!(store.wal_stats().records.get(), records_before, "an unlogged free logged");
    assert_eq!(store.space_usage().live_pages, 5);
    for &page_id in &ids[..15] {
        assert_freed(&store, page_id);
    }
    assert_eq!(read_u64(&store, ids[19], 0), 19);
}
