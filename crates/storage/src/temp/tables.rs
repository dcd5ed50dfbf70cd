//! The temp tables' share of the temp space (docs/design/019-temp-tables.md, "Unlogged
//! storage"): the directory of each unlogged page store, the volume that charges its
//! segments to the temp space's quota, and the startup sweep of directories a crash left.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::TempSpace;
use crate::error::{Result, StorageError};
use crate::volume::{LocalVolume, ObjectInfo, Volume};

/// Prefix of an unlogged store's directory in the temp space: `tierdb-tables-<pid>-<n>`.
pub const TABLE_STORE_PREFIX: &str = "tierdb-tables-";

/// Numbers the unlogged stores of this process (several engines may share one process and
/// one temp directory in tests).
static NEXT_TABLE_STORE: AtomicU64 = AtomicU64::new(0);

impl TempSpace {
    /// A directory name for a new unlogged store, unique within this process.
    pub(crate) fn next_table_store_dir(&self) -> PathBuf {
        let number = NEXT_TABLE_STORE.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{TABLE_STORE_PREFIX}{}-{number}", std::process::id()))
    }

    /// Bytes the temp tables' stores hold now (segments, map chunks, manifests); part of
    /// `bytes_in_use`, under the same quota.
    pub fn table_bytes(&self) -> u64 {
        self.table_bytes.load(Ordering::Relaxed)
    }

    /// Reserves `bytes` of an object an unlogged store is about to write; 53100 past the
    /// quota. Not charged to any session's temp_file_limit: PostgreSQL's limit does not
    /// count temp tables either.
    fn reserve_table_bytes(&self, bytes: u64) -> Result<()> {
        self.claim_quota(bytes)?;
        self.table_bytes.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    fn release_table_bytes(&self, bytes: u64) {
        let before = self.table_bytes.fetch_sub(bytes, Ordering::Relaxed);
        assert!(before >= bytes, "temp tables released more than they reserved");
        let before = self.bytes_in_use.fetch_sub(bytes, Ordering::Relaxed);
        assert!(before >= bytes, "temp space released more than it reserved");
    }
}

/// The volume of an unlogged store: a local directory in the temp space, written without
/// syncs, each object's bytes charged to the temp space while it exists.
pub struct TempTableVolume {
    local: LocalVolume,
    space: Arc<TempSpace>,
    /// Bytes of each object written and not deleted, to release on delete and drop.
    sizes: Mutex<HashMap<String, u64>>,
}

impl TempTableVolume {
    pub fn new(local: LocalVolume, space: Arc<TempSpace>) -> TempTableVolume {
        TempTableVolume { local: local.without_sync(), space, sizes: Mutex::new(HashMap::new()) }
    }
}

impl Volume for TempTableVolume {
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        let bytes = u64::try_from(data.len()).expect("usize fits u64");
        self.space.reserve_table_bytes(bytes)?;
        if let Err(error) = self.local.put(name, data) {
            self.space.release_table_bytes(bytes);
            return Err(error);
        }
        let replaced = self.sizes.lock().insert(name.to_string(), bytes);
        assert!(replaced.is_none(), "an object name is written at most once: {name}");
        Ok(())
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        self.local.get(name)
    }

    fn read_range(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<()> {
        self.local.read_range(name, offset, buffer)
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.local.list(prefix)
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.local.delete(name)?;
        if let Some(bytes) = self.sizes.lock().remove(name) {
            self.space.release_table_bytes(bytes);
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("temp-tables:{}", self.local.describe())
    }
}

impl Drop for TempTableVolume {
    fn drop(&mut self) {
        // The store's directory goes with it (PageStore's drop): so does its charge.
        let total: u64 = self.sizes.get_mut().values().sum();
        self.space.release_table_bytes(total);
    }
}

/// Removes the unlogged stores' directories in `dir` that no live store holds (its `LOCK`
/// is not flocked: the process that made it is gone); returns how many.
pub(super) fn sweep_table_stores(dir: &Path) -> Result<u64> {
    let entries =
        std::fs::read_dir(dir).map_err(|error| StorageError::local_io("readdir", dir, error))?;
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(|error| StorageError::local_io("readdir", dir, error))?;
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with(TABLE_STORE_PREFIX) || held(&path) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed += 1,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(StorageError::local_io("rmdir", &path, error)),
        }
    }
    Ok(removed)
}

/// Whether a live store holds the directory's lock (the store's `lock_data_dir`).
fn held(store_dir: &Path) -> bool {
    let Ok(file) = File::open(store_dir.join("LOCK")) else { return false };
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    // Closing `file` releases the lock just taken.
    locked != 0
}
