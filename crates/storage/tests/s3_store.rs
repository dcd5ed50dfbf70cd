//! The page store on a real S3 server (MinIO on loopback).
//!
//! With `wal_in_volume`, an acknowledged commit is durable in the object store itself: the
//! test writes, abandons the process state, deletes the whole local data directory (WAL
//! files, tier, lock) as if the machine were lost, and recovers on a fresh directory from the
//! bucket alone.

#![cfg(feature = "s3")]

use std::sync::Arc;

use tierdb_common::{PageId, PageType};
use tierdb_storage::{PageStore, S3Config, S3Volume, StoreConfig, Volume};
use tierdb_testkit::{MinioServer, ACCESS_KEY, BUCKET, REGION, SECRET_KEY};

fn volume(server: &MinioServer, prefix: &str) -> Arc<dyn Volume> {
    Arc::new(
        S3Volume::open(S3Config {
            endpoint: Some(server.endpoint().to_string()),
            bucket: BUCKET.to_string(),
            prefix: prefix.to_string(),
            region: REGION.to_string(),
            access_key_id: ACCESS_KEY.to_string(),
            secret_access_key: SECRET_KEY.to_string(),
            allow_http: true,
        })
        .expect("open s3 volume"),
    )
}

fn config(
    directory: &std::path::Path,
    volume: Arc<dyn Volume>,
    wal_in_volume: bool,
) -> StoreConfig {
    let mut config = StoreConfig::with_volume(directory, volume);
    config.buffer_pool_bytes = 32 * 8192;
    if let Some(tier) = config.tier.as_mut() {
        tier.capacity_bytes = 256 * 8192;
    }
    config.wal_in_volume = wal_in_volume;
    config
}

fn write_generation(store: &PageStore, pages: &[PageId], generation: u64) {
    for &page_id in pages {
        let mut mtr = store.mtr();
        let slot = mtr.latch(page_id).unwrap();
        mtr.write(slot, 0, &page_id.0.to_le_bytes());
        mtr.write(slot, 8, &generation.to_le_bytes());
        let lsn = mtr.commit().unwrap();
        store.wait_durable(lsn).unwrap();
    }
}

fn check_generation(store: &PageStore, pages: &[PageId], generation: u64) {
    for &page_id in pages {
        let page = store.read(page_id).unwrap();
        assert_eq!(page.payload()[..8], page_id.0.to_le_bytes(), "page {page_id}");
        assert_eq!(page.payload()[8..16], generation.to_le_bytes(), "page {page_id}");
    }
}

#[test]
fn acknowledged_commits_survive_losing_the_machine() {
    let Some(server) = MinioServer::start("acknowledged_commits_survive_losing_the_machine") else {
        return;
    };
    let first_machine = tempfile::tempdir().unwrap();
    let pages: Vec<PageId> = {
        let store =
            PageStore::open(config(first_machine.path(), volume(&server, "lost"), true)).unwrap();
        let mut pages = Vec::new();
        for _ in 0..100 {
            let mut mtr = store.mtr();
            let (_, page_id) = mtr.allocate(PageType::Raw).unwrap();
            store.wait_durable(mtr.commit().unwrap()).unwrap();
            pages.push(page_id);
        }
        write_generation(&store, &pages, 1);
        store.flush_all().unwrap();
        // Acknowledged but never flushed: these exist only in the WAL objects.
        write_generation(&store, &pages, 2);
        store.abandon();
        pages
    };
    drop(first_machine);
    let second_machine = tempfile::tempdir().unwrap();
    let store =
        PageStore::open(config(second_machine.path(), volume(&server, "lost"), true)).unwrap();
    check_generation(&store, &pages, 2);
    assert!(store.volume_stats().snapshot().get_requests > 0);
}

#[test]
fn store_on_s3_reads_through_tier_and_survives_restart() {
    let Some(server) = MinioServer::start("store_on_s3_reads_through_tier_and_survives_restart")
    else {
        return;
    };
    let directory = tempfile::tempdir().unwrap();
    let pages: Vec<PageId> = {
        let store =
            PageStore::open(config(directory.path(), volume(&server, "basic"), false)).unwrap();
        let mut pages = Vec::new();
        for _ in 0..300 {
            let mut mtr = store.mtr();
            let (_, page_id) = mtr.allocate(PageType::Raw).unwrap();
            mtr.commit().unwrap();
            pages.push(page_id);
        }
        write_generation(&store, &pages, 7);
        store.close().unwrap();
        pages
    };
    let store = PageStore::open(config(directory.path(), volume(&server, "basic"), false)).unwrap();
    for _ in 0..2 {
        check_generation(&store, &pages, 7);
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let tier_hits = store.stats().tier_hits.get();
    let volume_reads = store.stats().volume_reads.get();
    assert!(tier_hits > 0, "no tier hits on S3 tier_hits={tier_hits} volume_reads={volume_reads}");
    let requests = store.volume_stats().snapshot();
    assert!(requests.get_requests >= volume_reads, "every volume read is a counted GET");
}
