//! End-to-end behaviour of the page store on the local volume: durability across clean and
//! unclean restarts, a working set larger than DRAM through the tier, and compaction.

use std::path::Path;
use std::time::Duration;

use tierdb_common::{PageId, PageType};
use tierdb_storage::{PageStore, StoreConfig};

fn config(directory: &Path, pool_pages: u64, tier_pages: u64) -> StoreConfig {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = pool_pages * 8192;
    if let Some(tier) = config.tier.as_mut() {
        tier.capacity_bytes = tier_pages * 8192;
    }
    config
}

/// Allocates `count` pages, each stamped with its index and `generation`.
fn create_pages(store: &PageStore, count: u64) -> Vec<PageId> {
    let mut ids = Vec::new();
    for index in 0..count {
        let mut mtr = store.mtr();
        let (slot, page_id) = mtr.allocate(PageType::Raw).unwrap();
        mtr.write(slot, 0, &index.to_le_bytes());
        mtr.write(slot, 8, &0u64.to_le_bytes());
        let lsn = mtr.commit().unwrap();
        store.wait_durable(lsn).unwrap();
        ids.push(page_id);
    }
    ids
}

fn set_generation(store: &PageStore, page_id: PageId, generation: u64) {
    let mut mtr = store.mtr();
    let slot = mtr.latch(page_id).unwrap();
    mtr.write(slot, 8, &generation.to_le_bytes());
    let lsn = mtr.commit().unwrap();
    store.wait_durable(lsn).unwrap();
}

fn read_u64(store: &PageStore, page_id: PageId, offset: usize) -> u64 {
    let page = store.read(page_id).unwrap();
    u64::from_le_bytes(page.payload()[offset..offset + 8].try_into().unwrap())
}

#[test]
fn pages_survive_clean_restart() {
    let directory = tempfile::tempdir().unwrap();
    let ids = {
        let store = PageStore::open(config(directory.path(), 64, 256)).unwrap();
        let ids = create_pages(&store, 200);
        for (index, &page_id) in ids.iter().enumerate() {
            assert_eq!(read_u64(&store, page_id, 0), index as u64);
        }
        store.close().unwrap();
        ids
    };
    let store = PageStore::open(config(directory.path(), 64, 256)).unwrap();
    for (index, &page_id) in ids.iter().enumerate() {
        assert_eq!(read_u64(&store, page_id, 0), index as u64, "page {page_id}");
    }
    // After a clean close the tier index was persisted: reads come from the tier, not the volume.
    let tier_hits = store.stats().tier_hits.get();
    assert!(tier_hits > 0, "tier served nothing after a clean restart");
}

#[test]
fn acknowledged_writes_survive_abandon_without_flush() {
    let directory = tempfile::tempdir().unwrap();
    let mut cfg = config(directory.path(), 64, 64);
    cfg.background = false;
    let ids = {
        let store = PageStore::open(cfg.clone()).unwrap();
        let ids = create_pages(&store, 40);
        for (generation, &page_id) in ids.iter().enumerate() {
            set_generation(&store, page_id, generation as u64 + 1000);
        }
        store.abandon();
        ids
    };
    let store = PageStore::open(cfg).unwrap();
    for (generation, &page_id) in ids.iter().enumerate() {
        assert_eq!(read_u64(&store, page_id, 0), generation as u64);
        assert_eq!(read_u64(&store, page_id, 8), generation as u64 + 1000);
    }
}

#[test]
fn working_set_larger_than_pool_goes_through_tier() {
    let directory = tempfile::tempdir().unwrap();
    let store = PageStore::open(config(directory.path(), 32, 1024)).unwrap();
    let ids = create_pages(&store, 400);
    store.flush_all().unwrap();
    for round in 0..3 {
        for (index, &page_id) in ids.iter().enumerate() {
            assert_eq!(read_u64(&store, page_id, 0), index as u64, "round {round}");
        }
        // Admissions are asynchronous: give the tier writer a moment between rounds.
        std::thread::sleep(Duration::from_millis(200));
    }
    let tier = store.tier_stats().unwrap();
    assert!(tier.writes.get() > 0, "nothing admitted to the tier");
    assert!(store.stats().tier_hits.get() > 0, "no tier hits");
    assert_eq!(tier.corrupt_discards.get(), 0);
}

#[test]
fn modified_page_is_never_served_stale_from_tier() {
    let directory = tempfile::tempdir().unwrap();
    let store = PageStore::open(config(directory.path(), 16, 1024)).unwrap();
    let ids = create_pages(&store, 100);
    for generation in 1..=5u64 {
        for &page_id in &ids {
            set_generation(&store, page_id, generation);
        }
        std::thread::sleep(Duration::from_millis(50));
        for &page_id in &ids {
            assert_eq!(read_u64(&store, page_id, 8), generation);
        }
    }
}

#[test]
fn compaction_bounds_space_amplification() {
    let directory = tempfile::tempdir().unwrap();
    let mut cfg = config(directory.path(), 64, 64);
    cfg.background = false;
    let store = PageStore::open(cfg).unwrap();
    let ids = create_pages(&store, 300);
    store.flush_all().unwrap();
    for generation in 1..=6u64 {
        for &page_id in ids.iter().step_by(2) {
            set_generation(&store, page_id, generation);
        }
        store.flush_all().unwrap();
    }
    let before = store.space_usage();
    assert!(
        before.amplification() > 1.5,
        "test did not create garbage: {before:?}"
    );
    store.compact().unwrap();
    store.checkpoint().unwrap();
    let after = store.space_usage();
    assert!(
        after.amplification() <= 1.5,
        "space amplification after compaction: {after:?}"
    );
    for (index, &page_id) in ids.iter().enumerate() {
        assert_eq!(read_u64(&store, page_id, 0), index as u64);
        let expected = if index % 2 == 0 { 6 } else { 0 };
        assert_eq!(read_u64(&store, page_id, 8), expected);
    }
    drop(store);
}
