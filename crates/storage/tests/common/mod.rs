//! Helpers shared by the fault-injection (`faults.rs`) and online-resize (`resize.rs`) tests:
//! store configurations, fault-injecting devices the test keeps a handle to, and a page
//! content scheme that lets every read prove it returned exactly what was written.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tierdb_common::{Page, PageId, PageType, PAGE_SIZE};
use tierdb_storage::{
    Device, DeviceFaultConfig, DeviceOpener, FaultyDevice, FileDevice, Mtr, MtrSlot, PageStore,
    StorageError, StoreConfig, TierConfig, Volume,
};

pub const PAGE_BYTES: u64 = PAGE_SIZE as u64;

/// `u64` to `usize` without a lossy cast (the workspace denies those).
pub fn to_usize(value: u64) -> usize {
    usize::try_from(value).expect("fits in usize")
}

/// A uniform index into a collection of `length` items.
pub fn pick_index(random: &mut tierdb_common::SplitMix64, length: usize) -> usize {
    to_usize(random.below(length as u64))
}

/// Forwards to a `FaultyDevice` the test also holds, so that it can crash or corrupt it.
pub struct SharedDevice(pub Arc<FaultyDevice<FileDevice>>);

impl Device for SharedDevice {
    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> tierdb_storage::Result<()> {
        self.0.read_at(offset, buffer)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> tierdb_storage::Result<()> {
        self.0.write_at(offset, data)
    }
    fn sync(&self) -> tierdb_storage::Result<()> {
        self.0.sync()
    }
    fn len(&self) -> tierdb_storage::Result<u64> {
        self.0.len()
    }
    fn set_len(&self, length: u64) -> tierdb_storage::Result<()> {
        self.0.set_len(length)
    }
    fn allocate(&self, length: u64) -> tierdb_storage::Result<()> {
        self.0.allocate(length)
    }
    fn is_direct(&self) -> bool {
        self.0.is_direct()
    }
    fn path(&self) -> &Path {
        self.0.path()
    }
}

/// A buffered (never `O_DIRECT`: `FaultyDevice` copies into unaligned buffers) faulty file.
pub fn faulty_file(path: &Path, seed: u64) -> Arc<FaultyDevice<FileDevice>> {
    Arc::new(FaultyDevice::new(
        FileDevice::open(path, false).unwrap(),
        DeviceFaultConfig::default(),
        seed,
    ))
}

/// An opener that always hands out `device` (for the single tier file).
pub fn fixed_opener(device: &Arc<FaultyDevice<FileDevice>>) -> DeviceOpener {
    let device = Arc::clone(device);
    Arc::new(move |_path: &Path| Ok(Box::new(SharedDevice(Arc::clone(&device))) as Box<dyn Device>))
}

/// Plain buffered files, no faults.
pub fn plain_opener() -> DeviceOpener {
    Arc::new(|path: &Path| Ok(Box::new(FileDevice::open(path, false)?) as Box<dyn Device>))
}

/// Opens a new `FaultyDevice` for every file asked for (the WAL opens one per log file, and
/// recovery opens files twice), remembering all of them.
pub struct DeviceFarm {
    devices: Mutex<Vec<(PathBuf, Arc<FaultyDevice<FileDevice>>)>>,
    config: Mutex<DeviceFaultConfig>,
    next_seed: AtomicU64,
}

impl DeviceFarm {
    pub fn new(seed: u64) -> Arc<DeviceFarm> {
        Arc::new(DeviceFarm {
            devices: Mutex::new(Vec::new()),
            config: Mutex::new(DeviceFaultConfig::default()),
            next_seed: AtomicU64::new(seed),
        })
    }

    pub fn opener(self: &Arc<Self>) -> DeviceOpener {
        let farm = Arc::clone(self);
        Arc::new(move |path: &Path| {
            let seed = farm.next_seed.fetch_add(0x9E37_79B9, Ordering::Relaxed);
            let device = Arc::new(FaultyDevice::new(
                FileDevice::open(path, false)?,
                farm.config.lock().unwrap().clone(),
                seed,
            ));
            farm.devices.lock().unwrap().push((path.to_path_buf(), Arc::clone(&device)));
            Ok(Box::new(SharedDevice(device)) as Box<dyn Device>)
        })
    }

    /// Applies `config` to every device opened so far and to later ones.
    pub fn set_config(&self, config: DeviceFaultConfig) {
        *self.config.lock().unwrap() = config.clone();
        for (_, device) in self.devices.lock().unwrap().iter() {
            device.set_config(config.clone());
        }
    }

    /// Power loss on every device: returns the writes lost or torn.
    pub fn simulate_crash(&self) -> usize {
        self.devices
            .lock()
            .unwrap()
            .iter()
            .map(|(_, device)| device.simulate_crash().unwrap())
            .sum()
    }

    pub fn device_count(&self) -> usize {
        self.devices.lock().unwrap().len()
    }
}

/// A store over `volume` in `dir` with `pool_pages` of DRAM and, optionally, a buffered tier of
/// `tier_pages`. No background writer unless the caller turns it on.
pub fn store_config(
    dir: &Path,
    volume: Arc<dyn Volume>,
    pool_pages: u64,
    tier_pages: Option<u64>,
) -> StoreConfig {
    let mut config = StoreConfig::with_volume(dir, volume);
    config.buffer_pool_bytes = pool_pages * PAGE_BYTES;
    config.tier = tier_pages.map(|pages| TierConfig {
        path: dir.join("tier").join("tier.dat"),
        capacity_bytes: pages * PAGE_BYTES,
        direct_io: false,
    });
    config.wal_device_opener = plain_opener();
    config.background = false;
    config
}

/// The local volume of `dir` (the same one `StoreConfig::local(dir)` uses).
pub fn local_volume(dir: &Path) -> Arc<dyn Volume> {
    Arc::new(tierdb_storage::LocalVolume::open(dir.join("volume")).unwrap())
}

/// Bytes written after the (key, generation) header of a page.
pub fn filler(key: u64, generation: u64, length: usize) -> Vec<u8> {
    let mut state =
        key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ generation.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    (0..length)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect()
}

pub const FILL_BYTES: usize = 512;

/// Writes (key, generation, filler) into a latched page.
pub fn stamp(mtr: &mut Mtr<'_>, slot: MtrSlot, key: u64, generation: u64, fill: usize) {
    mtr.write(slot, 0, &key.to_le_bytes());
    mtr.write(slot, 8, &generation.to_le_bytes());
    mtr.write(slot, 16, &filler(key, generation, fill));
}

/// (key, generation) of a page, after checking that its filler matches them exactly.
pub fn decode(page: &Page, fill: usize) -> (u64, u64) {
    let payload = page.payload();
    let key = u64::from_le_bytes(payload[0..8].try_into().unwrap());
    let generation = u64::from_le_bytes(payload[8..16].try_into().unwrap());
    assert!(
        payload[16..16 + fill] == filler(key, generation, fill)[..],
        "page {} holds a torn or wrong image key={key} generation={generation}",
        page.page_id()
    );
    (key, generation)
}

/// Reads a page and returns (key, generation), or the store's error.
pub fn try_read(
    store: &PageStore,
    page_id: PageId,
    fill: usize,
) -> Result<(u64, u64), StorageError> {
    let page = store.read(page_id)?;
    assert_eq!(page.page_id(), page_id, "read returned another page");
    Ok(decode(&page, fill))
}

pub fn read(store: &PageStore, page_id: PageId, fill: usize) -> (u64, u64) {
    try_read(store, page_id, fill).unwrap_or_else(|error| panic!("read page {page_id}: {error}"))
}

/// Allocates `count` pages with keys `0..count`, generation 0, each commit acknowledged.
pub fn create_pages(store: &PageStore, count: u64, fill: usize) -> Vec<PageId> {
    (0..count)
        .map(|key| {
            let mut mtr = store.mtr();
            let (slot, page_id) = mtr.allocate(PageType::Raw).unwrap();
            stamp(&mut mtr, slot, key, 0, fill);
            let lsn = mtr.commit().unwrap();
            store.wait_durable(lsn).unwrap();
            page_id
        })
        .collect()
}

/// Sets a page's generation in one acknowledged mtr.
pub fn set_generation(store: &PageStore, page_id: PageId, key: u64, generation: u64, fill: usize) {
    let mut mtr = store.mtr();
    let slot = mtr.latch(page_id).unwrap();
    stamp(&mut mtr, slot, key, generation, fill);
    let lsn = mtr.commit().unwrap();
    store.wait_durable(lsn).unwrap();
}

/// Asserts that page `ids[key]` holds (key, generations[key]) for every key.
pub fn verify_all(store: &PageStore, ids: &[PageId], generations: &[u64], fill: usize) {
    for (key, (&page_id, &generation)) in ids.iter().zip(generations).enumerate() {
        assert_eq!(read(store, page_id, fill), (key as u64, generation), "page {page_id}");
    }
}

/// Polls `condition` every 20 ms for up to `limit`; returns whether it became true.
pub fn wait_until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads every page until the tier holds at least `entries` pages (admissions are
/// asynchronous), then waits for the admission queue to drain.
pub fn populate_tier(store: &PageStore, ids: &[PageId], fill: usize, entries: u64) {
    let tier = store.tier().expect("tier enabled");
    let reached = wait_until(Duration::from_secs(10), || {
        for &page_id in ids {
            read(store, page_id, fill);
        }
        tier.usage().1 >= entries
    });
    assert!(reached, "tier holds only {} pages (wanted {entries})", tier.usage().1);
    settle_tier(store);
}

/// Waits until the tier writer has been idle for a while (three quiet samples in a row).
pub fn settle_tier(store: &PageStore) {
    let tier = store.tier_stats().expect("tier enabled");
    let mut last = u64::MAX;
    let mut quiet = 0;
    wait_until(Duration::from_secs(5), || {
        std::thread::sleep(Duration::from_millis(30));
        let now = tier.writes.get() + tier.dropped_admissions.get() + tier.write_errors.get();
        quiet = if now == last { quiet + 1 } else { 0 };
        last = now;
        quiet >= 3
    });
}

/// Names of the objects under `dir/volume/{prefix}`.
pub fn volume_files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir.join("volume").join(prefix)) {
        Ok(entries) => entries
            .map(|entry| entry.unwrap().path())
            .filter(|path| !path.file_name().unwrap().to_string_lossy().starts_with(".tmp."))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// XORs `mask` into the byte at `offset` of a file.
pub fn flip_byte(path: &Path, offset: usize, mask: u8) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset] ^= mask;
    std::fs::write(path, bytes).unwrap();
}

/// Allocates `count` pages, each stamped with its index at offset 0 and 0 at offset 8;
/// durable.
pub fn create_indexed_pages(store: &PageStore, count: u64) -> Vec<PageId> {
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
