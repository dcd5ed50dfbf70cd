//! End-to-end behaviour of the page store on the local volume: durability across clean and
//! unclean restarts, a working set larger than DRAM through the tier, and compaction.

use std::path::Path;
use std::time::Duration;

use crate::common::create_indexed_pages;
use tierdb_common::{PageId, PageType};
use tierdb_storage::{Gap, PageStore, RegionCompaction, StoreConfig};

fn config(directory: &Path, pool_pages: u64, tier_pages: u64) -> StoreConfig {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = pool_pages * 8192;
    if let Some(tier) = config.tier.as_mut() {
        tier.capacity_bytes = tier_pages * 8192;
    }
    config
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
        let ids = create_indexed_pages(&store, 200);
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
        let ids = create_indexed_pages(&store, 40);
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
    let ids = create_indexed_pages(&store, 400);
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
    let ids = create_indexed_pages(&store, 100);
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
    let ids = create_indexed_pages(&store, 300);
    store.flush_all().unwrap();
    for generation in 1..=6u64 {
        for &page_id in ids.iter().step_by(2) {
            set_generation(&store, page_id, generation);
        }
        store.flush_all().unwrap();
    }
    let before = store.space_usage();
    assert!(before.amplification() > 1.5, "test did not create garbage: {before:?}");
    store.compact().unwrap();
    store.checkpoint().unwrap();
    let after = store.space_usage();
    assert!(after.amplification() <= 1.5, "space amplification after compaction: {after:?}");
    for (index, &page_id) in ids.iter().enumerate() {
        assert_eq!(read_u64(&store, page_id, 0), index as u64);
        let expected = if index % 2 == 0 { 6 } else { 0 };
        assert_eq!(read_u64(&store, page_id, 8), expected);
    }
    drop(store);
}

/// Regression: a DRAM miss used to read the page's location before it had a frame, so the
/// page could be loaded, changed, flushed and evicted by others meanwhile, and the miss then
/// installed the older image: a stale read, and a lost update for the next writer.
#[test]
fn concurrent_misses_never_install_an_older_image() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let directory = tempfile::tempdir().unwrap();
    let store = PageStore::open(config(directory.path(), 16, 64)).unwrap();
    let ids = create_indexed_pages(&store, 200);
    let counter_page = ids[0];
    let acknowledged = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    const INCREMENTS: u64 = 3000;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..INCREMENTS {
                let mut mtr = store.mtr();
                let slot = mtr.latch(counter_page).unwrap();
                let value = u64::from_le_bytes(mtr.page(slot).payload()[8..16].try_into().unwrap());
                mtr.write(slot, 8, &(value + 1).to_le_bytes());
                store.wait_durable(mtr.commit().unwrap()).unwrap();
                acknowledged.store(value + 1, Ordering::Release);
            }
            done.store(true, Ordering::Release);
        });
        for writer in 0..2u64 {
            let (ids, done) = (&ids, &done);
            let store = &store;
            scope.spawn(move || {
                let mut generation = 0;
                while !done.load(Ordering::Acquire) {
                    generation += 1;
                    for &page_id in
                        ids[1..].iter().skip(usize::try_from(writer).unwrap()).step_by(2).take(20)
                    {
                        set_generation(store, page_id, generation);
                    }
                }
            });
        }
        for _ in 0..4 {
            let (acknowledged, done, store) = (&acknowledged, &done, &store);
            scope.spawn(move || {
                while !done.load(Ordering::Acquire) {
                    let floor = acknowledged.load(Ordering::Acquire);
                    let seen = read_u64(store, counter_page, 8);
                    assert!(seen >= floor, "stale read: saw {seen} after {floor} was acknowledged");
                }
            });
        }
    });
    assert_eq!(read_u64(&store, counter_page, 8), INCREMENTS, "lost update");
}

/// Regression: an oversized mini-transaction used to panic inside the WAL lock after taking the
/// shared buffer, losing other threads' acknowledged records.
#[test]
fn oversized_mtr_fails_cleanly_and_loses_nothing() {
    let directory = tempfile::tempdir().unwrap();
    let mut cfg = config(directory.path(), 4096, 64);
    cfg.background = false;
    let ids = {
        let store = PageStore::open(cfg.clone()).unwrap();
        let ids = create_indexed_pages(&store, 2100);
        set_generation(&store, ids[0], 41);
        // 2,100 whole-page writes: over the 16 MiB record limit.
        let mut mtr = store.mtr();
        let payload = vec![0xEE; tierdb_common::PAGE_PAYLOAD_SIZE];
        for &page_id in &ids {
            let slot = mtr.latch(page_id).unwrap();
            mtr.write(slot, 0, &payload);
        }
        let error = mtr.commit().unwrap_err();
        assert_eq!(error.kind(), tierdb_common::ErrorKind::ResourceExhausted, "{error}");
        assert!(error.to_string().contains("wal record too large"), "{error}");
        // The failed mtr restored its pages, and the store still works.
        assert_eq!(read_u64(&store, ids[5], 0), 5);
        set_generation(&store, ids[1], 42);
        store.abandon();
        ids
    };
    let store = PageStore::open(cfg).unwrap();
    assert_eq!(read_u64(&store, ids[0], 8), 41);
    assert_eq!(read_u64(&store, ids[1], 8), 42);
    assert_eq!(read_u64(&store, ids[5], 0), 5);
}

/// Losing the WAL directory while the volume survives is reported at open as corruption naming
/// the WAL, not a panic: the manifest needs log records that are gone.
#[test]
fn lost_wal_files_fail_open_with_a_clear_error() {
    let directory = tempfile::tempdir().unwrap();
    let mut cfg = config(directory.path(), 64, 64);
    cfg.background = false;
    {
        let store = PageStore::open(cfg.clone()).unwrap();
        let ids = create_indexed_pages(&store, 50);
        store.flush_all().unwrap();
        set_generation(&store, ids[0], 3);
        store.checkpoint().unwrap();
        store.abandon();
    }
    std::fs::remove_dir_all(directory.path().join("wal")).unwrap();
    let error = PageStore::open(cfg).err().expect("open must fail without the wal");
    assert_eq!(error.kind(), tierdb_common::ErrorKind::Corruption, "{error}");
    assert!(error.to_string().contains("wal"), "{error}");
}

/// A missing first WAL file (the one redo starts in) is corruption even when later files
/// survive: redo must not silently skip the records it held.
#[test]
fn missing_first_wal_file_fails_open() {
    let directory = tempfile::tempdir().unwrap();
    let mut cfg = config(directory.path(), 64, 64);
    cfg.background = false;
    cfg.checkpoint_wal_bytes = u64::MAX;
    {
        let store = PageStore::open(cfg.clone()).unwrap();
        let ids = create_indexed_pages(&store, 16);
        let payload = vec![0x5A; tierdb_common::PAGE_PAYLOAD_SIZE];
        // Over 64 MiB of log, so that it rolls to a second file.
        for round in 0..9_000usize {
            let mut mtr = store.mtr();
            let slot = mtr.latch(ids[round % ids.len()]).unwrap();
            mtr.write(slot, 0, &payload);
            mtr.commit().unwrap();
        }
        store.wait_durable(store.mtr().commit().unwrap()).unwrap();
        store.abandon();
    }
    let wal = directory.path().join("wal");
    let mut files: Vec<_> =
        std::fs::read_dir(&wal).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 2, "the log did not roll: {files:?}");
    std::fs::remove_file(&files[0]).unwrap();
    let error = PageStore::open(cfg).err().expect("open must fail without the first wal file");
    assert_eq!(error.kind(), tierdb_common::ErrorKind::Corruption, "{error}");
    assert!(error.to_string().contains("gap in log"), "{error}");
}

/// Writes `rounds` whole-page changes over `pages` (WAL grows about a page per round), each
/// page stamped with the round; syncs every 64 rounds and at the end.
fn rewrite_pages(store: &PageStore, pages: &[PageId], first_round: u64, rounds: u64) {
    let payload_bytes = tierdb_common::PAGE_PAYLOAD_SIZE;
    let mut lsn = tierdb_common::Lsn::ZERO;
    for round in first_round..first_round + rounds {
        let page_id = pages[usize::try_from(round).unwrap() % pages.len()];
        let mut mtr = store.mtr();
        let slot = mtr.latch(page_id).unwrap();
        let mut bytes = vec![u8::try_from(round % 251).unwrap(); payload_bytes];
        bytes[..8].copy_from_slice(&round.to_le_bytes());
        mtr.write(slot, 0, &bytes);
        lsn = mtr.commit().unwrap();
        if round % 64 == 0 {
            store.wait_durable(lsn).unwrap();
        }
    }
    store.wait_durable(lsn).unwrap();
}

fn wal_files(directory: &Path) -> Vec<(String, u64)> {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(directory.join("wal"))
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (entry.file_name().to_string_lossy().to_string(), entry.metadata().unwrap().len())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn wal_rolls_into_a_preallocated_file_and_recovers_its_zeroed_tail() {
    const SPARE: &str = "next.prealloc";
    let file_bytes = tierdb_storage::WAL_FILE_BYTES_MAX;
    let directory = tempfile::tempdir().unwrap();
    let mut cfg = config(directory.path(), 256, 0);
    cfg.tier = None;
    // Keep every WAL file: no checkpoint truncates the log during the test.
    cfg.checkpoint_wal_bytes = u64::MAX;
    cfg.checkpoint_interval = Duration::from_secs(3600);
    let page_rounds = file_bytes / 8192;
    let store = PageStore::open(cfg.clone()).unwrap();
    let pages = create_indexed_pages(&store, 64);
    // Past half of the first file the background writer prepares the next one, zero-filled.
    rewrite_pages(&store, &pages, 1, page_rounds * 6 / 10);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !wal_files(directory.path()).iter().any(|(name, len)| name == SPARE && *len == file_bytes)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no spare: {:?}",
            wal_files(directory.path())
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Past the end of the first file the log continues in the spare, renamed.
    let written = page_rounds * 6 / 10;
    rewrite_pages(&store, &pages, 1 + written, page_rounds / 2);
    let last_round = written + page_rounds / 2;
    let files = wal_files(directory.path());
    let logs: Vec<&(String, u64)> =
        files.iter().filter(|(name, _)| name.ends_with(".wal")).collect();
    let newest = logs.last().unwrap();
    assert_ne!(newest.0, "0000000000000000.wal", "the log rolled: {files:?}");
    assert_eq!(newest.1, file_bytes, "the newest file is the preallocated one: {files:?}");
    // A crash (no close): recovery finds the log end inside the zeroed tail, keeps the file
    // preallocated, and every acknowledged change is there.
    store.abandon();
    std::fs::write(directory.path().join("wal").join(SPARE), b"left by a crash").unwrap();
    let mut quiet = cfg.clone();
    quiet.background = false;
    let store = PageStore::open(quiet.clone()).unwrap();
    for (index, &page_id) in pages.iter().enumerate() {
        let index = u64::try_from(index).unwrap();
        // The last round that wrote this page.
        let expected = (0..=last_round).rev().find(|round| *round >= 1 && round % 64 == index);
        if let Some(round) = expected {
            assert_eq!(read_u64(&store, page_id, 0), round, "page {page_id}");
        }
    }
    let files = wal_files(directory.path());
    assert!(!files.iter().any(|(name, _)| name == SPARE), "a leftover spare is removed: {files:?}");
    let logs: Vec<&(String, u64)> =
        files.iter().filter(|(name, _)| name.ends_with(".wal")).collect();
    assert_eq!(
        logs.last().unwrap().1,
        file_bytes,
        "recovery keeps the preallocated length: {files:?}"
    );
    // Appending after recovery continues at the log end, and a second crash recovers it.
    rewrite_pages(&store, &pages, last_round + 1, 64);
    store.abandon();
    let store = PageStore::open(quiet).unwrap();
    for (index, &page_id) in pages.iter().enumerate() {
        let round =
            last_round + 1 + (64 + u64::try_from(index).unwrap() - (last_round + 1) % 64) % 64;
        assert_eq!(read_u64(&store, page_id, 0), round, "page {page_id} after the second crash");
    }
}

#[test]
fn dropped_mtr_restores_overlapping_writes_and_reinitialisation() {
    let directory = tempfile::tempdir().unwrap();
    let store = PageStore::open(config(directory.path(), 64, 64)).unwrap();
    let ids = create_indexed_pages(&store, 2);
    let original: Vec<Vec<u8>> =
        ids.iter().map(|&page_id| store.read(page_id).unwrap().payload().to_vec()).collect();
    {
        let mut mtr = store.mtr();
        let first = mtr.latch(ids[0]).unwrap();
        mtr.write(first, 4, &[1; 16]);
        mtr.write(first, 0, &[2; 8]); // overlaps the first write
        mtr.write(first, 10, &[3; 100]);
        let second = mtr.latch(ids[1]).unwrap();
        mtr.write(second, 0, &[4; 32]);
        mtr.reinit(second, PageType::Raw); // the whole image, after a write
        mtr.write(second, 64, &[5; 64]);
        // Dropped without commit.
    }
    for (index, &page_id) in ids.iter().enumerate() {
        assert_eq!(store.read(page_id).unwrap().payload(), &original[index][..], "page {page_id}");
    }
}

/// The format-checked flag survives shared reads and is cleared by every exclusive latch (a
/// change, even one rolled back) and by a reload after eviction: a set flag always means the
/// bytes are the ones the layer above checked.
#[test]
fn format_checked_flag_is_cleared_by_writes_and_reloads() {
    let directory = tempfile::tempdir().unwrap();
    let store = PageStore::open(config(directory.path(), 16, 64)).unwrap();
    let ids = create_indexed_pages(&store, 1);
    let page_id = ids[0];
    let marked = |store: &PageStore| {
        let page = store.read(page_id).unwrap();
        let was = page.format_checked();
        page.mark_format_checked();
        was
    };
    marked(&store);
    assert!(marked(&store), "a shared read keeps the flag");
    {
        let mut mtr = store.mtr();
        let slot = mtr.latch(page_id).unwrap();
        mtr.write(slot, 0, &[9; 8]);
        mtr.commit().unwrap();
    }
    assert!(!marked(&store), "a committed change clears the flag");
    {
        let mut mtr = store.mtr();
        mtr.latch(page_id).unwrap();
        // Dropped without a change.
    }
    assert!(!marked(&store), "an exclusive latch clears the flag even without a change");
    assert!(marked(&store));
    // Push the page out of the 16-frame pool, then read it back.
    let others = create_indexed_pages(&store, 64);
    store.flush_all().unwrap();
    for &other in &others {
        drop(store.read(other).unwrap());
    }
    assert!(!marked(&store), "a page loaded again is checked again");
}

/// Moves within a page (overlapping both ways, mixed with writes, on two pages in one mtr) are
/// redone after a crash to exactly the bytes the forward path produced, and a dropped mtr's
/// moves are undone.
#[test]
fn moves_are_redone_byte_for_byte_and_undone_when_dropped() {
    let directory = tempfile::tempdir().unwrap();
    let mut cfg = config(directory.path(), 64, 64);
    cfg.background = false;
    let (ids, expected) = {
        let store = PageStore::open(cfg.clone()).unwrap();
        let ids = create_indexed_pages(&store, 2);
        let pattern: Vec<u8> = (0..600u32)
            .map(|value| u8::try_from((value * 7 + value / 251) % 256).unwrap())
            .collect();
        let mut mtr = store.mtr();
        let first = mtr.latch(ids[0]).unwrap();
        mtr.write(first, 100, &pattern);
        mtr.move_bytes(first, 100, 102, 300); // overlapping, up (a slot inserted)
        mtr.write(first, 100, &[0xAB, 0xCD]);
        mtr.move_bytes(first, 300, 250, 200); // overlapping, down (a slot removed)
        mtr.move_bytes(first, 100, 7000, 600); // a cell slid to the end
        let second = mtr.latch(ids[1]).unwrap();
        mtr.write(second, 0, &pattern[..64]);
        mtr.move_bytes(second, 0, 8000, 64);
        mtr.move_bytes(first, 7000, 50, 40); // back on the first page
        let lsn = mtr.commit().unwrap();
        store.wait_durable(lsn).unwrap();
        let expected: Vec<Vec<u8>> =
            ids.iter().map(|&page_id| store.read(page_id).unwrap().payload().to_vec()).collect();
        {
            let mut dropped = store.mtr();
            let slot = dropped.latch(ids[0]).unwrap();
            dropped.move_bytes(slot, 7000, 100, 600);
            dropped.write(slot, 120, &[9; 30]);
            dropped.move_bytes(slot, 0, 1, 4000);
        }
        for (index, &page_id) in ids.iter().enumerate() {
            assert_eq!(store.read(page_id).unwrap().payload(), &expected[index][..]);
        }
        store.abandon();
        (ids, expected)
    };
    let store = PageStore::open(cfg).unwrap();
    for (index, &page_id) in ids.iter().enumerate() {
        assert_eq!(store.read(page_id).unwrap().payload(), &expected[index][..], "page {page_id}");
    }
}

/// A `Compact` op (gaps removed from a region at the payload's end, pointers into it relocated),
/// mixed with writes, is redone after a crash to exactly the bytes the forward path produced,
/// and a dropped mtr's compaction is undone.
#[test]
fn compactions_are_redone_byte_for_byte_and_undone_when_dropped() {
    let directory = tempfile::tempdir().unwrap();
    let mut cfg = config(directory.path(), 64, 64);
    cfg.background = false;
    let compaction = RegionCompaction {
        start: 6_000,
        pointers: 40,
        pointer_count: 6,
        gaps: vec![
            Gap { offset: 6_000, length: 100 },
            Gap { offset: 6_500, length: 300 },
            Gap { offset: 7_900, length: 260 },
        ],
    };
    let (page_id, expected) = {
        let store = PageStore::open(cfg.clone()).unwrap();
        let page_id = create_indexed_pages(&store, 1)[0];
        let pattern: Vec<u8> = (0..2_160u32)
            .map(|value| u8::try_from((value * 7 + value / 251) % 256).unwrap())
            .collect();
        let mut mtr = store.mtr();
        let slot = mtr.latch(page_id).unwrap();
        mtr.write(slot, 6_000, &pattern);
        // Pointers into kept bytes, into a gap, and outside the region (left alone).
        for (index, pointer) in [6_100u16, 6_200, 6_450, 6_600, 7_950, 12].iter().enumerate() {
            mtr.write(slot, 40 + 2 * index, &pointer.to_le_bytes());
        }
        mtr.compact_region(slot, compaction.clone());
        mtr.write(slot, 4, &[0xAB, 0xCD]);
        let lsn = mtr.commit().unwrap();
        store.wait_durable(lsn).unwrap();
        let expected = store.read(page_id).unwrap().payload().to_vec();
        let pointer =
            |index: usize| u16::from_le_bytes([expected[40 + 2 * index], expected[41 + 2 * index]]);
        // 6,100 gains the gaps above it (300 + 260); 6,600 (inside the second gap) the last one;
        // 7,950 is inside the last gap (none above).
        assert_eq!([0, 1, 2, 3, 4, 5].map(pointer), [6_660, 6_760, 7_010, 6_860, 7_950, 12]);
        // The kept bytes just below the page's end are the last ones below the top gap.
        assert_eq!(expected[8_159], pattern[7_899 - 6_000]);
        {
            let mut dropped = store.mtr();
            let slot = dropped.latch(page_id).unwrap();
            dropped.compact_region(slot, compaction.clone());
            dropped.write(slot, 7_000, &[9; 30]);
        }
        assert_eq!(store.read(page_id).unwrap().payload(), &expected[..]);
        store.abandon();
        (page_id, expected)
    };
    let store = PageStore::open(cfg).unwrap();
    assert_eq!(store.read(page_id).unwrap().payload(), &expected[..]);
}

/// A sealed manifest whose magic this binary does not know was written by a newer binary: the
/// open fails naming it, instead of taking it for a torn PUT and recovering from the older
/// manifest beside it (left by a failed delete), whose log replay would meet records this
/// binary cannot decode and cut them as a torn tail.
#[test]
fn a_manifest_from_a_newer_binary_fails_the_open_instead_of_falling_back() {
    let directory = tempfile::tempdir().unwrap();
    let cfg = config(directory.path(), 64, 64);
    let store = PageStore::open(cfg.clone()).unwrap();
    create_indexed_pages(&store, 1);
    store.close().unwrap();
    let manifest_directory = directory.path().join("volume").join("manifest");
    let mut names: Vec<String> = std::fs::read_dir(&manifest_directory)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().to_string())
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort();
    let newest = names.last().expect("a manifest").clone();
    let bytes = std::fs::read(manifest_directory.join(&newest)).unwrap();
    let sequence = u64::from_str_radix(&newest, 16).unwrap() + 1;
    let mut newer = bytes[..bytes.len() - 4].to_vec();
    newer[..8].copy_from_slice(b"TDBMAN99");
    newer[8..16].copy_from_slice(&sequence.to_le_bytes());
    let checksum = crc32c::crc32c(&newer);
    newer.extend_from_slice(&checksum.to_le_bytes());
    std::fs::write(manifest_directory.join(format!("{sequence:016x}")), &newer).unwrap();
    let error = match PageStore::open(cfg.clone()) {
        Ok(_) => panic!("opened a store whose newest manifest is from a newer binary"),
        Err(error) => error,
    };
    assert!(error.to_string().contains("TDBMAN99"), "{error}");
    assert!(error.to_string().contains(&format!("{sequence:016x}")), "{error}");
    // Damage still falls back: the same object with a broken checksum is a torn PUT.
    let mut torn = newer.clone();
    let last = torn.len() - 1;
    torn[last] ^= 0xFF;
    std::fs::write(manifest_directory.join(format!("{sequence:016x}")), &torn).unwrap();
    PageStore::open(cfg).unwrap().close().unwrap();
}
