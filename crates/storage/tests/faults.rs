//! Fault injection: torn, lost and corrupted writes and failing reads and syncs on the volume,
//! the tier device and the WAL device, and corrupted files at open. The rules under test:
//! an acknowledged write is never lost, a read never returns wrong data (an error instead),
//! a durable write with an unknown outcome poisons the store (sticky), a full disk fails
//! writes with `DiskFull` without poisoning anything, and every corruption error names the
//! file or object involved.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use tierdb_common::{ErrorKind, Lsn, PageId, PageType, PAGE_SIZE};
use tierdb_storage::{
    DeviceFaultConfig, FaultConfig, FaultyVolume, LocalVolume, PageStore, StorageError, StoreConfig,
};

fn faulty_volume(dir: &Path, seed: u64) -> Arc<FaultyVolume<LocalVolume>> {
    Arc::new(FaultyVolume::new(
        LocalVolume::open(dir.join("volume")).unwrap(),
        FaultConfig::default(),
        seed,
    ))
}

fn open(config: StoreConfig) -> PageStore {
    PageStore::open(config).unwrap_or_else(|error| panic!("open failed: {error}"))
}

fn open_err(config: StoreConfig) -> StorageError {
    match PageStore::open(config) {
        Ok(_) => panic!("open succeeded over a corrupted file"),
        Err(error) => error,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().to_string()
}

/// Tries to change a page in one mtr and returns the commit's error.
fn commit_error(store: &PageStore, page_id: PageId) -> StorageError {
    let mut mtr = store.mtr();
    let slot = mtr.latch(page_id).unwrap();
    stamp(&mut mtr, slot, 0, 999, FILL_BYTES);
    match mtr.commit() {
        Ok(lsn) => panic!("commit succeeded on a poisoned store lsn={lsn:?}"),
        Err(error) => error,
    }
}

fn assert_poisoned(store: &PageStore, page_id: PageId) {
    let error = commit_error(store, page_id);
    assert_eq!(error.kind(), ErrorKind::Poisoned, "commit: {error}");
    let mut mtr = store.mtr();
    match mtr.allocate(PageType::Raw) {
        Ok(_) => panic!("allocate succeeded on a poisoned store"),
        Err(error) => assert_eq!(error.kind(), ErrorKind::Poisoned, "allocate: {error}"),
    }
    drop(mtr);
    let error = store.log_opaque(7, vec![1, 2, 3]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Poisoned, "log_opaque: {error}");
    let error = store.checkpoint().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Poisoned, "checkpoint: {error}");
    let error = store.flush_all().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Poisoned, "flush_all: {error}");
}

// ---------------------------------------------------------------------------------------------
// 1. Volume torn write during a flush.

#[test]
fn volume_torn_write_during_flush_poisons_store_and_reopen_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let volume = faulty_volume(dir, 11);
    let store = open(store_config(dir, volume.clone(), 256, Some(512)));
    let ids = create_pages(&store, 120, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    // Acknowledged changes that live only in the WAL and in dirty frames.
    for key in (0..ids.len()).step_by(3) {
        generations[key] = 1;
        set_generation(&store, ids[key], key as u64, 1, FILL_BYTES);
    }

    volume.set_config(FaultConfig { torn_write_probability: 1.0, ..FaultConfig::default() });
    let error = store.flush_all().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
    assert!(error.to_string().contains("segments/"), "error does not name the segment: {error}");
    assert_poisoned(&store, ids[1]);
    // Healing the volume does not clear the poison: the outcome of the PUT is still unknown.
    volume.set_config(FaultConfig::default());
    assert_poisoned(&store, ids[2]);
    // Reads keep serving the acknowledged data.
    verify_all(&store, &ids, &generations, FILL_BYTES);
    let torn_segments = volume_files(dir, "segments").len();
    store.abandon();

    // Reopen over the same directory with a healthy volume.
    let store = open(store_config(dir, local_volume(dir), 256, Some(512)));
    verify_all(&store, &ids, &generations, FILL_BYTES);
    // The torn segment was an orphan and has been deleted.
    assert!(volume_files(dir, "segments").len() < torn_segments);
    for key in (1..ids.len()).step_by(3) {
        generations[key] = 2;
        set_generation(&store, ids[key], key as u64, 2, FILL_BYTES);
    }
    store.close().unwrap();
    let store = open(store_config(dir, local_volume(dir), 256, Some(512)));
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

/// A checkpoint whose page-map chunk PUT is torn must leave a store that reopens after a
/// crash: the torn chunk is not referenced by any manifest.
#[test]
fn volume_torn_page_map_chunk_during_checkpoint_then_crash_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let volume = faulty_volume(dir, 12);
    let store = open(store_config(dir, volume.clone(), 256, None));
    let ids = create_pages(&store, 60, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    for key in (0..ids.len()).step_by(2) {
        generations[key] = 1;
        set_generation(&store, ids[key], key as u64, 1, FILL_BYTES);
    }
    // The flush changes the page map, so the next checkpoint writes a chunk first.
    store.flush_all().unwrap();
    volume.set_config(FaultConfig { torn_write_probability: 1.0, ..FaultConfig::default() });
    let error = store.checkpoint().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
    assert!(error.to_string().contains("map/"), "{error}");
    store.abandon();

    let store = open(store_config(dir, local_volume(dir), 256, None));
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

/// The same for a torn manifest PUT: the previous manifest and the WAL (which the failed
/// checkpoint did not truncate) still describe every acknowledged write.
#[test]
fn volume_torn_manifest_during_checkpoint_then_crash_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let volume = faulty_volume(dir, 13);
    let store = open(store_config(dir, volume.clone(), 256, None));
    let ids = create_pages(&store, 60, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    // Acknowledged, not flushed: the page map is unchanged, so the checkpoint's first PUT is
    // its manifest.
    for key in (0..ids.len()).step_by(2) {
        generations[key] = 1;
        set_generation(&store, ids[key], key as u64, 1, FILL_BYTES);
    }
    volume.set_config(FaultConfig { torn_write_probability: 1.0, ..FaultConfig::default() });
    let error = store.checkpoint().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
    assert!(error.to_string().contains("manifest/"), "{error}");
    store.abandon();

    let store = match PageStore::open(store_config(dir, local_volume(dir), 256, None)) {
        Ok(store) => store,
        Err(error) => panic!("reopen after a torn manifest PUT failed: {error}"),
    };
    verify_all(&store, &ids, &generations, FILL_BYTES);
    store.close().unwrap();
    let store = open(store_config(dir, local_volume(dir), 256, None));
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

// ---------------------------------------------------------------------------------------------
// 2. Silent bit flip on a volume write.

/// Slots of a segment file whose page image fails its checksum, with the page id they hold.
fn damaged_slots(path: &Path) -> Vec<(usize, PageId)> {
    let bytes = std::fs::read(path).unwrap();
    let slots = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    let footer = 4096 + slots * 8192;
    (0..slots)
        .filter_map(|slot| {
            let image = &bytes[4096 + slot * 8192..4096 + (slot + 1) * 8192];
            let stored = u32::from_le_bytes(image[0..4].try_into().unwrap());
            let page_id = u64::from_le_bytes(
                bytes[footer + slot * 16..footer + slot * 16 + 8].try_into().unwrap(),
            );
            (stored != crc32c::crc32c(&image[4..])).then_some((slot, PageId(page_id)))
        })
        .collect()
}

#[test]
fn volume_write_bit_flip_is_reported_as_corruption_naming_the_segment() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let volume = faulty_volume(dir, 21);
    let store = open(store_config(dir, volume.clone(), 256, None));
    let ids = create_pages(&store, 64, FILL_BYTES);
    assert!(volume_files(dir, "segments").is_empty());
    volume.set_config(FaultConfig { write_bit_flip_probability: 1.0, ..FaultConfig::default() });
    // The PUT reports success: the corruption is silent.
    store.flush_all().unwrap();
    volume.set_config(FaultConfig::default());
    store.close().unwrap();

    let segments = volume_files(dir, "segments");
    assert_eq!(segments.len(), 1, "{segments:?}");
    let damaged = damaged_slots(&segments[0]);
    assert_eq!(damaged.len(), 1, "the seed should flip a bit inside one page image: {damaged:?}");
    let corrupt_page = damaged[0].1;
    let segment_name = file_name(&segments[0]);

    let store = open(store_config(dir, volume.clone(), 256, None));
    for attempt in 0..2 {
        let error = try_read(&store, corrupt_page, FILL_BYTES).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Corruption, "attempt {attempt}: {error}");
        let message = error.to_string();
        assert!(
            message.contains(&segment_name),
            "error does not name segment {segment_name}: {message}"
        );
    }
    // Every other page reads correctly, and the store still accepts writes.
    let mut corrupt_seen = 0;
    for (key, &page_id) in ids.iter().enumerate() {
        if page_id == corrupt_page {
            corrupt_seen += 1;
            continue;
        }
        assert_eq!(read(&store, page_id, FILL_BYTES), (key as u64, 0));
    }
    assert_eq!(corrupt_seen, 1);
    let healthy = *ids.iter().find(|&&page_id| page_id != corrupt_page).unwrap();
    let key = ids.iter().position(|&page_id| page_id == healthy).unwrap() as u64;
    set_generation(&store, healthy, key, 5, FILL_BYTES);
    assert_eq!(read(&store, healthy, FILL_BYTES), (key, 5));
}

// ---------------------------------------------------------------------------------------------
// 3. Read faults on the volume.

#[test]
fn volume_read_errors_and_bit_flips_return_errors_never_wrong_data() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ids = {
        let store = open(store_config(dir, local_volume(dir), 16, None));
        let ids = create_pages(&store, 200, FILL_BYTES);
        store.close().unwrap();
        ids
    };
    let mut generations = vec![0u64; ids.len()];
    let volume = faulty_volume(dir, 31);
    let store = open(store_config(dir, volume.clone(), 16, None));
    volume.set_config(FaultConfig {
        read_error_probability: 0.2,
        read_bit_flip_probability: 0.2,
        ..FaultConfig::default()
    });
    let (mut good, mut io_errors, mut corruption_errors) = (0, 0, 0);
    for _round in 0..3 {
        for (key, &page_id) in ids.iter().enumerate() {
            match try_read(&store, page_id, FILL_BYTES) {
                Ok(found) => {
                    assert_eq!(found, (key as u64, generations[key]), "page {page_id}");
                    good += 1;
                }
                Err(error) => match error.kind() {
                    ErrorKind::Io => io_errors += 1,
                    ErrorKind::Corruption => {
                        assert!(error.to_string().contains("segments/"), "{error}");
                        corruption_errors += 1;
                    }
                    other => panic!("unexpected error kind {other:?}: {error}"),
                },
            }
        }
    }
    assert!(
        good > 0 && io_errors > 0 && corruption_errors > 0,
        "good={good} io={io_errors} corruption={corruption_errors}"
    );
    // Changes under read faults: latching may fail, but a latched change commits.
    let mut changed = 0;
    for (key, &page_id) in ids.iter().enumerate().step_by(4) {
        let mut mtr = store.mtr();
        let Ok(slot) = mtr.latch(page_id) else {
            continue;
        };
        stamp(&mut mtr, slot, key as u64, 7, FILL_BYTES);
        let lsn = mtr.commit().unwrap();
        store.wait_durable(lsn).unwrap();
        generations[key] = 7;
        changed += 1;
    }
    assert!(changed > 0);
    volume.set_config(FaultConfig::default());
    verify_all(&store, &ids, &generations, FILL_BYTES);
    eprintln!("volume read faults: good={good} io={io_errors} corruption={corruption_errors}");
}

/// Faults while opening: errors of the right kind naming what failed, never a panic.
#[test]
fn volume_faults_during_open_return_errors() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ids = store_with_pages(dir, None);
    let volume = faulty_volume(dir, 32);
    volume.set_config(FaultConfig { read_error_probability: 1.0, ..FaultConfig::default() });
    let error = open_err(store_config(dir, volume.clone(), 256, None));
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
    assert!(error.to_string().contains("manifest/"), "{error}");
    volume.set_config(FaultConfig { read_bit_flip_probability: 1.0, ..FaultConfig::default() });
    let error = open_err(store_config(dir, volume.clone(), 256, None));
    assert_eq!(error.kind(), ErrorKind::Corruption, "{error}");
    assert!(error.to_string().contains("manifest/"), "{error}");
    // The faults did no damage.
    volume.set_config(FaultConfig::default());
    let store = open(store_config(dir, volume, 256, None));
    verify_all(&store, &ids, &vec![0u64; ids.len()], FILL_BYTES);
}

// ---------------------------------------------------------------------------------------------
// 4. Tier corruption and read faults fall back to the volume.

#[test]
fn tier_corruption_and_read_faults_fall_back_to_the_volume() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let tier_slots = 1024u64;
    let device = faulty_file(&dir.join("tier").join("tier.dat"), 41);
    let mut config = store_config(dir, local_volume(dir), 16, Some(tier_slots));
    config.tier_device_opener = Some(fixed_opener(&device));
    let store = open(config);
    let ids = create_pages(&store, 200, FILL_BYTES);
    let generations = vec![0u64; ids.len()];
    store.flush_all().unwrap();
    populate_tier(&store, &ids, FILL_BYTES, 150);
    let tier = store.tier_stats().unwrap();
    assert_eq!(tier.corrupt_discards.get(), 0);

    // Media decay in every slot.
    for slot in 0..tier_slots {
        device.corrupt(slot * PAGE_BYTES, PAGE_SIZE).unwrap();
    }
    let discards = tier.corrupt_discards.get();
    verify_all(&store, &ids, &generations, FILL_BYTES);
    assert!(tier.corrupt_discards.get() > discards, "decayed slots were not discarded");

    // Every tier read returns a flipped bit.
    populate_tier(&store, &ids, FILL_BYTES, 150);
    device.set_config(DeviceFaultConfig {
        read_bit_flip_probability: 1.0,
        ..DeviceFaultConfig::default()
    });
    let (discards, hits) = (tier.corrupt_discards.get(), tier.hits.get());
    verify_all(&store, &ids, &generations, FILL_BYTES);
    assert!(tier.corrupt_discards.get() > discards, "flipped reads not discarded");
    assert_eq!(tier.hits.get(), hits, "a flipped tier read was served");

    // Every tier read fails.
    device.set_config(DeviceFaultConfig::default());
    populate_tier(&store, &ids, FILL_BYTES, 150);
    device.set_config(DeviceFaultConfig {
        read_error_probability: 1.0,
        ..DeviceFaultConfig::default()
    });
    let (errors, hits) = (tier.read_errors.get(), tier.hits.get());
    verify_all(&store, &ids, &generations, FILL_BYTES);
    assert!(tier.read_errors.get() > errors, "failed tier reads not counted");
    assert_eq!(tier.hits.get(), hits);

    // Healthy again: the tier serves pages.
    device.set_config(DeviceFaultConfig::default());
    populate_tier(&store, &ids, FILL_BYTES, 150);
    let (discards, hits) = (tier.corrupt_discards.get(), tier.hits.get());
    verify_all(&store, &ids, &generations, FILL_BYTES);
    assert!(tier.hits.get() > hits, "healthy tier served nothing");
    assert_eq!(tier.corrupt_discards.get(), discards);

    // Every tier write fails: admissions are counted as failed, reads come from the volume.
    device.set_config(DeviceFaultConfig {
        write_error_probability: 1.0,
        ..DeviceFaultConfig::default()
    });
    let (write_errors, writes) = (tier.write_errors.get(), tier.writes.get());
    // New versions of every page, so that evictions admit images the tier does not hold.
    let mut generations = generations;
    for (key, &page_id) in ids.iter().enumerate() {
        generations[key] = 2;
        set_generation(&store, page_id, key as u64, 2, FILL_BYTES);
    }
    store.flush_all().unwrap();
    for _ in 0..2 {
        verify_all(&store, &ids, &generations, FILL_BYTES);
    }
    settle_tier(&store);
    assert!(tier.write_errors.get() > write_errors, "failed tier writes not counted");
    assert_eq!(tier.writes.get(), writes, "a failed tier write was counted as written");

    // The tier device dies altogether (every call fails): the store keeps working.
    device.set_config(DeviceFaultConfig::default());
    device.simulate_crash().unwrap();
    for (key, &page_id) in ids.iter().enumerate().step_by(7) {
        generations[key] = 3;
        set_generation(&store, page_id, key as u64, 3, FILL_BYTES);
    }
    for _ in 0..2 {
        verify_all(&store, &ids, &generations, FILL_BYTES);
    }
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    store.abandon();
    let store = open(store_config(dir, local_volume(dir), 16, Some(tier_slots)));
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

// ---------------------------------------------------------------------------------------------
// 5. Torn and lost tier writes at a simulated power loss.

#[test]
fn tier_torn_and_lost_writes_at_crash_never_serve_bad_data() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (pool, tier_slots) = (16, 64);
    // Phase 1: a populated tier with a persisted index (clean close).
    let (ids, mut generations) = {
        let store = open(store_config(dir, local_volume(dir), pool, Some(tier_slots)));
        let ids = create_pages(&store, 200, FILL_BYTES);
        store.flush_all().unwrap();
        populate_tier(&store, &ids, FILL_BYTES, tier_slots);
        store.close().unwrap();
        (ids, vec![0u64; 200])
    };
    assert!(dir.join("tier").join("tier.idx").exists());

    // Phase 2: churn through a faulty tier device, then lose power.
    let device = faulty_file(&dir.join("tier").join("tier.dat"), 51);
    let mut config = store_config(dir, local_volume(dir), pool, Some(tier_slots));
    config.tier_device_opener = Some(fixed_opener(&device));
    let store = open(config);
    for key in (0..ids.len()).step_by(3) {
        generations[key] = 1;
        set_generation(&store, ids[key], key as u64, 1, FILL_BYTES);
    }
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    for _ in 0..2 {
        verify_all(&store, &ids, &generations, FILL_BYTES);
    }
    for key in (0..ids.len()).step_by(5) {
        generations[key] += 10;
        set_generation(&store, ids[key], key as u64, generations[key], FILL_BYTES);
    }
    settle_tier(&store);
    assert!(store.tier_stats().unwrap().writes.get() > 0);
    store.abandon();
    let damaged = device.simulate_crash().unwrap();
    assert!(damaged > 0, "no unsynced tier write was lost or torn");

    // Phase 3: reopen over the damaged tier file with a healthy device.
    let store = open(store_config(dir, local_volume(dir), pool, Some(tier_slots)));
    for _ in 0..3 {
        verify_all(&store, &ids, &generations, FILL_BYTES);
    }
    let tier = store.tier_stats().unwrap();
    eprintln!(
        "tier after crash: damaged_writes={damaged} hits={} stale_discards={} corrupt_discards={}",
        tier.hits.get(),
        tier.stale_discards.get(),
        tier.corrupt_discards.get()
    );
    assert!(
        tier.stale_discards.get() + tier.corrupt_discards.get() > 0,
        "the persisted index named no outdated slot: the scenario did not happen"
    );
    store.close().unwrap();
}

// ---------------------------------------------------------------------------------------------
// 6. The tier never serves a stale image.

#[test]
fn tier_never_serves_stale_images_after_modify_restart_or_crash() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let config = || store_config(dir, local_volume(dir), 16, Some(1024));
    let store = open(config());
    let ids = create_pages(&store, 100, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    store.flush_all().unwrap();
    populate_tier(&store, &ids, FILL_BYTES, 80);

    // a) Modified after admission, flushed and not.
    for generation in 1..=2u64 {
        for (key, &page_id) in ids.iter().enumerate() {
            set_generation(&store, page_id, key as u64, generation, FILL_BYTES);
            generations[key] = generation;
        }
        if generation == 1 {
            store.flush_all().unwrap();
        }
        verify_all(&store, &ids, &generations, FILL_BYTES);
        populate_tier(&store, &ids, FILL_BYTES, 0);
        verify_all(&store, &ids, &generations, FILL_BYTES);
    }
    assert!(store.tier_stats().unwrap().invalidations.get() > 0);

    // b) Clean restart.
    store.close().unwrap();
    let store = open(config());
    verify_all(&store, &ids, &generations, FILL_BYTES);
    assert!(store.stats().tier_hits.get() > 0, "persisted tier index unused");

    // c) Crash with flushed and unflushed acknowledged changes.
    for (key, &page_id) in ids.iter().enumerate() {
        generations[key] = 3;
        set_generation(&store, page_id, key as u64, 3, FILL_BYTES);
    }
    store.flush_all().unwrap();
    populate_tier(&store, &ids, FILL_BYTES, 0);
    for key in (0..ids.len()).step_by(2) {
        generations[key] = 4;
        set_generation(&store, ids[key], key as u64, 4, FILL_BYTES);
    }
    store.abandon();
    let store = open(config());
    verify_all(&store, &ids, &generations, FILL_BYTES);

    // d) The persisted index names the old version of pages changed after it was written.
    populate_tier(&store, &ids, FILL_BYTES, 0);
    store.close().unwrap();
    let store = open(config());
    // Ten pages changed, flushed, with the map update durable ...
    for key in 10..20 {
        generations[key] = 6;
        set_generation(&store, ids[key], key as u64, 6, FILL_BYTES);
    }
    store.flush_all().unwrap();
    let lsn = store.log_opaque(9, b"barrier".to_vec()).unwrap();
    store.wait_durable(lsn).unwrap();
    // ... and ten changed and not flushed (they fit in DRAM).
    for key in 0..10 {
        generations[key] = 5;
        set_generation(&store, ids[key], key as u64, 5, FILL_BYTES);
    }
    store.abandon();
    let store = open(config());
    let tier = store.tier_stats().unwrap();
    for _ in 0..2 {
        verify_all(&store, &ids, &generations, FILL_BYTES);
    }
    assert!(
        tier.stale_discards.get() > 0,
        "the persisted index was expected to name superseded versions"
    );
    store.close().unwrap();
    let store = open(config());
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

// ---------------------------------------------------------------------------------------------
// 7. Lost and torn unsynced WAL writes.

#[test]
fn wal_crash_keeps_acknowledged_and_whole_or_no_unacknowledged_mtrs() {
    const PAGES: u64 = 32;
    const GROUP: u64 = 4;
    const FILL: usize = 1500;
    let mut outcomes = Vec::new();
    for iteration in 0..12u64 {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let farm = DeviceFarm::new(1000 + iteration * 77);
        let mut config = store_config(dir, local_volume(dir), 256, None);
        config.wal_device_opener = farm.opener();
        let store = open(config);
        let ids = create_pages(&store, PAGES, FILL);
        // An acknowledged group commit: many mtrs, one wait.
        let mut last = Lsn::ZERO;
        for (key, &page_id) in ids.iter().enumerate() {
            let mut mtr = store.mtr();
            let slot = mtr.latch(page_id).unwrap();
            stamp(&mut mtr, slot, key as u64, 1, FILL);
            last = mtr.commit().unwrap();
        }
        store.wait_durable(last).unwrap();
        // Unacknowledged mtrs: each stamps its own group of pages with one generation.
        for group in 0..PAGES / GROUP {
            let mut mtr = store.mtr();
            for key in group * GROUP..(group + 1) * GROUP {
                let slot = mtr.latch(ids[to_usize(key)]).unwrap();
                stamp(&mut mtr, slot, key, 100 + group, FILL);
            }
            last = mtr.commit().unwrap();
        }
        // On odd iterations the unacknowledged records reach the file, but the sync fails.
        let written = iteration % 2 == 1;
        if written {
            farm.set_config(DeviceFaultConfig {
                sync_error_probability: 1.0,
                ..DeviceFaultConfig::default()
            });
            let error = store.wait_durable(last).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::Io, "{error}");
        }
        store.abandon();
        let damaged = farm.simulate_crash();

        let mut config = store_config(dir, local_volume(dir), 256, None);
        config.wal_device_opener = plain_opener();
        let store = open(config);
        let mut present = Vec::new();
        for group in 0..PAGES / GROUP {
            let found: Vec<u64> = (group * GROUP..(group + 1) * GROUP)
                .map(|key| {
                    let (found_key, generation) = read(&store, ids[to_usize(key)], FILL);
                    assert_eq!(found_key, key);
                    generation
                })
                .collect();
            if found.iter().all(|&generation| generation == 1) {
                present.push(false);
            } else if found.iter().all(|&generation| generation == 100 + group) {
                present.push(true);
            } else {
                panic!("iteration {iteration}: mtr of group {group} half applied: {found:?}");
            }
        }
        // The log is a sequence: a later mtr survives only if every earlier one did.
        let count = present.iter().filter(|&&kept| kept).count();
        assert!(
            present[..count].iter().all(|&kept| kept),
            "iteration {iteration}: surviving mtrs are not a prefix: {present:?}"
        );
        if !written {
            assert_eq!(count, 0, "iteration {iteration}: unwritten records survived");
        }
        outcomes.push((written, damaged, count));
        store.close().unwrap();
    }
    eprintln!("(written, damaged writes, surviving unacknowledged mtrs): {outcomes:?}");
    let counts: Vec<usize> =
        outcomes.iter().filter(|(written, _, _)| *written).map(|&(_, _, count)| count).collect();
    assert!(
        counts.iter().any(|&count| count > 0) && counts.iter().any(|&count| count < 8),
        "the seeds should produce both kept and lost unsynced records: {counts:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 8. A failed WAL sync poisons the store.

#[test]
fn wal_sync_error_poisons_store_until_restart() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let farm = DeviceFarm::new(81);
    let mut config = store_config(dir, local_volume(dir), 256, None);
    config.wal_device_opener = farm.opener();
    let store = open(config);
    let ids = create_pages(&store, 20, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    for key in 0..10 {
        generations[key] = 1;
        set_generation(&store, ids[key], key as u64, 1, FILL_BYTES);
    }

    farm.set_config(DeviceFaultConfig {
        sync_error_probability: 1.0,
        ..DeviceFaultConfig::default()
    });
    let mut mtr = store.mtr();
    let slot = mtr.latch(ids[0]).unwrap();
    stamp(&mut mtr, slot, 0, 2, FILL_BYTES);
    let lsn = mtr.commit().unwrap();
    let error = store.wait_durable(lsn).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
    assert!(error.to_string().contains(".wal"), "error names no wal file: {error}");
    let again = store.wait_durable(lsn).unwrap_err();
    assert_eq!(again.kind(), ErrorKind::Poisoned, "{again}");
    assert_poisoned(&store, ids[3]);
    // A healthy device does not clear it.
    farm.set_config(DeviceFaultConfig::default());
    assert_poisoned(&store, ids[4]);
    assert_eq!(store.wait_durable(lsn).unwrap_err().kind(), ErrorKind::Poisoned);
    // Reads still work.
    for key in 1..ids.len() {
        assert_eq!(read(&store, ids[key], FILL_BYTES), (key as u64, generations[key]));
    }
    store.abandon();
    farm.simulate_crash();

    let store = open(store_config(dir, local_volume(dir), 256, None));
    // The commit whose sync failed may or may not have survived; everything else did.
    let (key, generation) = read(&store, ids[0], FILL_BYTES);
    assert!(key == 0 && (generation == 1 || generation == 2), "{generation}");
    generations[0] = generation;
    verify_all(&store, &ids, &generations, FILL_BYTES);
    set_generation(&store, ids[5], 5, 3, FILL_BYTES);
    store.close().unwrap();
}

/// The background writer's WAL sync fails: the store must poison itself as well.
#[test]
fn wal_sync_error_in_background_flush_poisons_store() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let farm = DeviceFarm::new(82);
    let mut config = store_config(dir, local_volume(dir), 64, None);
    config.wal_device_opener = farm.opener();
    config.background = true;
    // The pool never fills here, so the writer has nothing to clean ahead of the CLOCK hand:
    // a WAL budget of one byte makes every change old enough for it to write (and a
    // checkpoint due after every change).
    config.checkpoint_wal_bytes = 1;
    let store = open(config);
    let ids = create_pages(&store, 40, FILL_BYTES);
    farm.set_config(DeviceFaultConfig {
        sync_error_probability: 1.0,
        ..DeviceFaultConfig::default()
    });
    // Unacknowledged changes older than the WAL budget: the writer must flush them, so it
    // must sync the WAL first, and that fails.
    let poisoned = wait_until(std::time::Duration::from_secs(10), || {
        let mut mtr = store.mtr();
        for (key, &page_id) in ids.iter().enumerate() {
            let Ok(slot) = mtr.latch(page_id) else {
                return false;
            };
            // Rewrites the byte already there: logged and dirtying, content unchanged.
            mtr.write(slot, 16, &filler(key as u64, 0, 1));
        }
        match mtr.commit() {
            Ok(_) => false,
            Err(error) => {
                assert_eq!(error.kind(), ErrorKind::Poisoned, "{error}");
                true
            }
        }
    });
    assert!(poisoned, "the store never noticed the failed background sync");
    assert_poisoned(&store, ids[0]);
    store.abandon();
    farm.simulate_crash();
    let store = open(store_config(dir, local_volume(dir), 64, None));
    verify_all(&store, &ids, &vec![0u64; ids.len()], FILL_BYTES);
}

// ---------------------------------------------------------------------------------------------
// 9. Corrupted files: clear errors naming the file, never a panic.

fn store_with_pages(dir: &Path, tier: Option<u64>) -> Vec<PageId> {
    let store = open(store_config(dir, local_volume(dir), 256, tier));
    let ids = create_pages(&store, 30, FILL_BYTES);
    store.close().unwrap();
    ids
}

#[test]
fn corrupt_manifest_fails_open_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    store_with_pages(dir, None);
    let manifests = volume_files(dir, "manifest");
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let length = to_usize(std::fs::metadata(&manifests[0]).unwrap().len());
    flip_byte(&manifests[0], length / 2, 0x04);
    let error = open_err(store_config(dir, local_volume(dir), 256, None));
    assert_eq!(error.kind(), ErrorKind::Corruption, "{error}");
    let name = file_name(&manifests[0]);
    assert!(error.to_string().contains(&name), "error does not name {name}: {error}");
}

#[test]
fn corrupt_page_map_chunk_fails_open_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    store_with_pages(dir, None);
    let chunks = volume_files(dir, "map");
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    flip_byte(&chunks[0], 16 + 12 * 5, 0x01);
    let error = open_err(store_config(dir, local_volume(dir), 256, None));
    assert_eq!(error.kind(), ErrorKind::Corruption, "{error}");
    let name = file_name(&chunks[0]);
    assert!(error.to_string().contains(&name), "error does not name {name}: {error}");
}

#[test]
fn corrupt_segment_fails_reads_of_that_page_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ids = store_with_pages(dir, None);
    let segments = volume_files(dir, "segments");
    assert_eq!(segments.len(), 1, "{segments:?}");
    let bytes = std::fs::read(&segments[0]).unwrap();
    let slots = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    let footer = 4096 + slots * 8192;
    let victim = PageId(u64::from_le_bytes(bytes[footer..footer + 8].try_into().unwrap()));
    flip_byte(&segments[0], 4096 + 32 + 100, 0x80);

    let store = open(store_config(dir, local_volume(dir), 256, None));
    let error = try_read(&store, victim, FILL_BYTES).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Corruption, "{error}");
    let name = file_name(&segments[0]);
    assert!(error.to_string().contains(&name), "error does not name {name}: {error}");
    for (key, &page_id) in ids.iter().enumerate() {
        if page_id != victim {
            assert_eq!(read(&store, page_id, FILL_BYTES), (key as u64, 0));
        }
    }
}

#[test]
fn corrupt_wal_record_followed_by_valid_ones_fails_open_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = open(store_config(dir, local_volume(dir), 256, None));
    let from = store.durable_lsn();
    create_pages(&store, 30, FILL_BYTES);
    let end = store.durable_lsn();
    store.abandon();

    let mut files: Vec<_> =
        std::fs::read_dir(dir.join("wal")).unwrap().map(|entry| entry.unwrap().path()).collect();
    files.sort();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let file_start = u64::from_str_radix(file_name(file).trim_end_matches(".wal"), 16).unwrap();
    let bytes = std::fs::read(file).unwrap();
    // Record boundaries from the file start: (offset, body length).
    let mut records = Vec::new();
    let mut position = 0usize;
    while position + 8 <= bytes.len() {
        let length = u32::from_le_bytes(bytes[position..position + 4].try_into().unwrap()) as usize;
        if length == 0 {
            break;
        }
        records.push((position, length));
        position += (8 + length).next_multiple_of(8);
    }
    let after: Vec<_> = records
        .iter()
        .filter(|(offset, _)| *offset as u64 + file_start >= from.0)
        .copied()
        .collect();
    assert!(after.len() >= 10, "too few records after the redo point: {}", after.len());
    assert!(end.0 - file_start <= bytes.len() as u64);
    let (offset, length) = after[after.len() / 2];
    flip_byte(file, offset + 8 + length / 2, 0x20);

    let error = open_err(store_config(dir, local_volume(dir), 256, None));
    assert_eq!(error.kind(), ErrorKind::Corruption, "{error}");
    let name = file_name(file);
    assert!(error.to_string().contains(&name), "error does not name {name}: {error}");
}

/// A damaged tier index is not an error: the tier starts cold and counts the discard.
#[test]
fn corrupt_tier_index_is_discarded_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ids = {
        let store = open(store_config(dir, local_volume(dir), 16, Some(256)));
        let ids = create_pages(&store, 100, FILL_BYTES);
        store.flush_all().unwrap();
        populate_tier(&store, &ids, FILL_BYTES, 50);
        store.close().unwrap();
        ids
    };
    let index = dir.join("tier").join("tier.idx");
    let length = to_usize(std::fs::metadata(&index).unwrap().len());
    flip_byte(&index, length / 2, 0x02);
    let store = open(store_config(dir, local_volume(dir), 16, Some(256)));
    assert!(store.tier_stats().unwrap().corrupt_discards.get() >= 1);
    verify_all(&store, &ids, &vec![0u64; ids.len()], FILL_BYTES);
}

// ---------------------------------------------------------------------------------------------
// More volume failures: a failed checkpoint PUT, the WAL on the volume, and power loss under
// concurrent load.

/// A checkpoint that fails on a clean PUT error is retried by the next one, and the segments
/// that became dead meanwhile are still deleted (nothing leaks on the volume).
#[test]
fn volume_write_error_during_checkpoint_is_retried_without_leaking_segments() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let volume = faulty_volume(dir, 14);
    let store = open(store_config(dir, volume.clone(), 256, None));
    let ids = create_pages(&store, 40, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    assert_eq!(volume_files(dir, "segments").len(), 1);
    // Rewrite every page: the first segment has no live page left.
    for (key, &page_id) in ids.iter().enumerate() {
        generations[key] = 1;
        set_generation(&store, page_id, key as u64, 1, FILL_BYTES);
    }
    store.flush_all().unwrap();
    volume.set_config(FaultConfig { write_error_probability: 1.0, ..FaultConfig::default() });
    let error = store.checkpoint().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
    volume.set_config(FaultConfig::default());
    store.checkpoint().unwrap();
    store.checkpoint().unwrap();
    let usage = store.space_usage();
    let files = volume_files(dir, "segments");
    assert_eq!(
        files.len() as u64,
        usage.segments,
        "segment objects on the volume vs segments the store knows: {files:?} {usage:?}"
    );
    verify_all(&store, &ids, &generations, FILL_BYTES);
    store.abandon();
    let store = open(store_config(dir, local_volume(dir), 256, None));
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

/// With the WAL on the volume, a group commit whose PUT was torn was never acknowledged: after
/// a crash it is a torn tail to discard, not corruption that prevents opening.
#[test]
fn wal_on_volume_torn_put_is_discarded_at_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let volume = faulty_volume(dir, 91);
    let mut config = store_config(dir, volume.clone(), 256, None);
    config.wal_in_volume = true;
    let store = open(config);
    let ids = create_pages(&store, 20, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    for key in 0..10 {
        generations[key] = 1;
        set_generation(&store, ids[key], key as u64, 1, FILL_BYTES);
    }
    volume.set_config(FaultConfig { torn_write_probability: 1.0, ..FaultConfig::default() });
    let mut mtr = store.mtr();
    let slot = mtr.latch(ids[15]).unwrap();
    stamp(&mut mtr, slot, 15, 2, FILL_BYTES);
    let lsn = mtr.commit().unwrap();
    let error = store.wait_durable(lsn).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Io, "{error}");
    assert!(error.to_string().contains("wal/"), "{error}");
    assert_poisoned(&store, ids[3]);
    store.abandon();

    let mut config = store_config(dir, local_volume(dir), 256, None);
    config.wal_in_volume = true;
    let store = match PageStore::open(config.clone()) {
        Ok(store) => store,
        Err(error) => panic!("reopen after a torn wal PUT failed: {error}"),
    };
    verify_all(&store, &ids, &generations, FILL_BYTES);
    // The store appends after the discarded tail and survives another crash.
    set_generation(&store, ids[19], 19, 3, FILL_BYTES);
    generations[19] = 3;
    store.abandon();
    let store = open(config);
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

/// The healthy path of the same configuration, so that the test above fails only on the tear.
#[test]
fn wal_on_volume_keeps_acknowledged_writes_across_crash() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut config = store_config(dir, local_volume(dir), 256, None);
    config.wal_in_volume = true;
    let store = open(config.clone());
    let ids = create_pages(&store, 20, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    for key in 0..10 {
        generations[key] = 1;
        set_generation(&store, ids[key], key as u64, 1, FILL_BYTES);
    }
    store.abandon();
    let store = open(config.clone());
    verify_all(&store, &ids, &generations, FILL_BYTES);
    set_generation(&store, ids[19], 19, 3, FILL_BYTES);
    generations[19] = 3;
    store.abandon();
    let store = open(config);
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

/// Power loss while two writers commit and the background writer flushes, checkpoints and
/// compacts: the volume stops storing anything and unsynced WAL writes are lost or torn.
/// Every page must come back at least at its last acknowledged generation and at most at the
/// last one attempted, with an untorn image.
#[test]
fn power_loss_under_concurrent_load_keeps_every_acknowledged_write() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tierdb_common::SplitMix64;

    const PAGES: usize = 120;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let volume = faulty_volume(dir, 101);
    let farm = DeviceFarm::new(102);
    let mut config = store_config(dir, volume.clone(), 32, Some(64));
    config.wal_device_opener = farm.opener();
    config.background = true;
    config.checkpoint_interval = std::time::Duration::from_millis(100);
    let store = open(config);
    let ids = create_pages(&store, PAGES as u64, FILL_BYTES);
    let crashed = AtomicBool::new(false);
    // Per page: (last acknowledged generation, last attempted generation).
    let bounds: Vec<Vec<(usize, u64, u64)>> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..2usize)
            .map(|thread| {
                let (store, ids, crashed) = (&store, &ids, &crashed);
                scope.spawn(move || {
                    let mine: Vec<usize> = (thread..PAGES).step_by(2).collect();
                    let mut acknowledged = vec![0u64; PAGES];
                    let mut attempted = vec![0u64; PAGES];
                    let mut random = SplitMix64::new(7 + thread as u64);
                    for round in 1.. {
                        let key = mine[pick_index(&mut random, mine.len())];
                        let generation = round;
                        attempted[key] = generation;
                        let mut mtr = store.mtr();
                        let Ok(slot) = mtr.latch(ids[key]) else { break };
                        stamp(&mut mtr, slot, key as u64, generation, FILL_BYTES);
                        let Ok(lsn) = mtr.commit() else { break };
                        if store.wait_durable(lsn).is_err() {
                            break;
                        }
                        if crashed.load(Ordering::SeqCst) {
                            break;
                        }
                        acknowledged[key] = generation;
                    }
                    mine.iter()
                        .map(|&key| (key, acknowledged[key], attempted[key]))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        crashed.store(true, Ordering::SeqCst);
        volume.crash();
        farm.simulate_crash();
        writers.into_iter().map(|writer| writer.join().unwrap()).collect()
    });
    let flushes = store.stats().flushes.get();
    let checkpoints = store.stats().checkpoints.get();
    store.abandon();
    assert!(flushes > 0 && checkpoints > 1, "flushes={flushes} checkpoints={checkpoints}");

    let store = open(store_config(dir, local_volume(dir), 32, Some(64)));
    let mut acknowledged_writes = 0;
    for (key, acknowledged, attempted) in bounds.into_iter().flatten() {
        let (found_key, generation) = read(&store, ids[key], FILL_BYTES);
        assert_eq!(found_key, key as u64);
        assert!(
            generation >= acknowledged && generation <= attempted.max(acknowledged),
            "page {key}: generation={generation} acknowledged={acknowledged} attempted={attempted}"
        );
        acknowledged_writes += u64::from(acknowledged > 0);
    }
    assert!(acknowledged_writes > 0);
    eprintln!("power loss: flushes={flushes} checkpoints={checkpoints} pages_acknowledged={acknowledged_writes}");
}

/// A full disk (every WAL allocation and volume PUT fails with ENOSPC): changes fail with
/// `DiskFull` before anything is logged, nothing is poisoned, reads go on, every change
/// acknowledged before stays; once space is back the same store takes changes again without
/// a restart, and a crash after that loses nothing acknowledged.
#[test]
fn disk_full_fails_changes_without_poison_and_resumes_when_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let farm = DeviceFarm::new(91);
    let volume = faulty_volume(dir, 92);
    let mut config = store_config(dir, volume.clone(), 256, None);
    config.wal_device_opener = farm.opener();
    let store = open(config.clone());
    let ids = create_pages(&store, 20, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];

    let full = DeviceFaultConfig { no_space: true, ..DeviceFaultConfig::default() };
    farm.set_config(full);
    volume.set_config(FaultConfig { no_space: true, ..FaultConfig::default() });
    // Each change is acknowledged (durable) until the log's allocated file is used up.
    let mut refused = None;
    for attempt in 0..200_000u64 {
        let key = to_usize(attempt % 20);
        let mut mtr = store.mtr();
        let slot = mtr.latch(ids[key]).unwrap();
        stamp(&mut mtr, slot, key as u64, generations[key] + 1, FILL_BYTES);
        match mtr.commit() {
            Ok(lsn) => {
                store.wait_durable(lsn).unwrap_or_else(|error| {
                    panic!("an appended change must become durable: {error}")
                });
                generations[key] += 1;
            }
            Err(error) => {
                refused = Some(error);
                break;
            }
        }
    }
    let error = refused.expect("the log never ran out of space");
    assert_eq!(error.kind(), ErrorKind::DiskFull, "{error}");
    assert_eq!(error.kind().sqlstate(), "53100");
    // Refused again, still not poisoned; the page kept its last acknowledged image.
    assert_eq!(commit_error(&store, ids[0]).kind(), ErrorKind::DiskFull);
    verify_all(&store, &ids, &generations, FILL_BYTES);
    let flushed = store.flush_all().unwrap_err();
    assert_eq!(flushed.kind(), ErrorKind::DiskFull, "{flushed}");
    verify_all(&store, &ids, &generations, FILL_BYTES);

    // While segments do not fit, changes are refused even where the log has room.
    assert_eq!(commit_error(&store, ids[1]).kind(), ErrorKind::DiskFull);

    farm.set_config(DeviceFaultConfig::default());
    volume.set_config(FaultConfig::default());
    // The first segment that fits (the background writer's retry, here by hand) lets
    // changes in again.
    store.flush_all().unwrap();
    for key in 0..ids.len() {
        generations[key] += 1;
        set_generation(&store, ids[key], key as u64, generations[key], FILL_BYTES);
    }
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    generations[3] += 1;
    set_generation(&store, ids[3], 3, generations[3], FILL_BYTES);
    store.abandon();
    farm.simulate_crash();
    let store = open(config);
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

/// Pages are written out of place, so evicting a dirty page needs free space: with every
/// frame dirty and the disk full, a read that misses would fail too. Reads must go on (the
/// pool lends a bounded number of frames beyond its target), changes stay refused, and the
/// lent frames are given back once segments fit again.
#[test]
fn reads_go_on_when_every_frame_is_dirty_and_segments_do_not_fit() {
    const POOL_PAGES: u64 = 32;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let volume = faulty_volume(dir, 93);
    let config = store_config(dir, volume.clone(), POOL_PAGES, None);
    let store = open(config.clone());
    let ids = create_pages(&store, 4 * POOL_PAGES, FILL_BYTES);
    store.flush_all().unwrap();
    let mut generations = vec![0u64; ids.len()];

    volume.set_config(FaultConfig { no_space: true, ..FaultConfig::default() });
    // The log has room; only segments do not fit. Fill the pool with dirty pages (each load
    // evicts a clean frame, so no write is needed yet).
    for key in 0..to_usize(POOL_PAGES) {
        generations[key] += 1;
        set_generation(&store, ids[key], key as u64, generations[key], FILL_BYTES);
    }
    let (allocated, target) = store.buffer_pool_frames();
    assert_eq!(allocated, target, "the pool is at its target before the reads");
    // Every other page must be read from the volume: each miss finds no clean frame.
    verify_all(&store, &ids, &generations, FILL_BYTES);
    let lent = store.pool_stats().frames_over_target.get();
    assert!(lent > 0, "no frame was lent: the test did not reach a fully dirty pool");
    let (allocated, _) = store.buffer_pool_frames();
    assert!(allocated > target && allocated <= target + 256, "allocated {allocated} frames");
    // Changes stay refused while the dirty pages cannot be written.
    assert_eq!(commit_error(&store, ids[0]).kind(), ErrorKind::DiskFull);
    verify_all(&store, &ids, &generations, FILL_BYTES);

    volume.set_config(FaultConfig::default());
    store.flush_all().unwrap();
    let allocated = store
        .resize_buffer_pool(POOL_PAGES * PAGE_BYTES, std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(allocated, target, "the lent frames were given back");
    generations[1] += 1;
    set_generation(&store, ids[1], 1, generations[1], FILL_BYTES);
    store.abandon();
    let store = open(config);
    verify_all(&store, &ids, &generations, FILL_BYTES);
}

/// A crash right after the log created its next file, before any record reached it (here: an
/// empty file named at the log's end): the first write after recovery takes that file's
/// place instead of adding a second entry of the same name, so the next checkpoint's
/// truncation cannot delete the file being written, and a later crash loses nothing.
#[test]
fn empty_last_wal_file_at_the_log_end_is_replaced_not_deleted_under_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let config = store_config(dir, local_volume(dir), 256, None);
    let store = open(config.clone());
    let ids = create_pages(&store, 8, FILL_BYTES);
    let mut generations = vec![0u64; ids.len()];
    let end = store.durable_lsn();
    store.abandon();
    let empty = dir.join("wal").join(format!("{:016x}.wal", end.0));
    std::fs::write(&empty, b"").unwrap();

    let store = open(config.clone());
    for key in 0..ids.len() {
        generations[key] = 1;
        set_generation(&store, ids[key], key as u64, 1, FILL_BYTES);
    }
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    assert!(empty.exists(), "the checkpoint deleted the log file being written");
    generations[2] = 2;
    set_generation(&store, ids[2], 2, 2, FILL_BYTES);
    store.abandon();
    let store = open(config);
    verify_all(&store, &ids, &generations, FILL_BYTES);
}
