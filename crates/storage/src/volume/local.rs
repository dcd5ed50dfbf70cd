//! The default volume: objects are files under a local directory.
//!
//! `put` writes a temporary file, syncs it, renames it into place and syncs the directory, so
//! that a crash leaves either no object or the whole object. Readers keep a bounded cache of
//! open files because a page read is one `pread` and opening a file would double its cost.
//!
//! `read_latency` adds a fixed sleep to every read so that benchmarks can model network
//! storage on one machine; every report that uses it says so.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::{ObjectInfo, Volume};
use crate::error::{Result, StorageError};

/// Open read handles kept at most; beyond it an arbitrary one is closed.
const OPEN_FILES_MAX: usize = 512;

pub struct LocalVolume {
    root: PathBuf,
    read_latency: Duration,
    open_files: Mutex<HashMap<String, Arc<File>>>,
    temporary_sequence: AtomicU64,
    /// Whether `put` syncs the object and its directory (durable). Off only for the temp
    /// tables' store (`without_sync`), whose objects are never read after a restart.
    synced: bool,
}

impl LocalVolume {
    /// Opens (creating if needed) a volume rooted at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<LocalVolume> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|error| StorageError::local_io("mkdir", &root, error))?;
        Ok(LocalVolume {
            root,
            read_latency: Duration::ZERO,
            open_files: Mutex::new(HashMap::new()),
            temporary_sequence: AtomicU64::new(0),
            synced: true,
        })
    }

    /// A volume whose `put` does not sync: atomic within the running process (rename), not
    /// durable. For stores nothing reads after a crash (temp tables, design 019).
    pub fn without_sync(mut self) -> LocalVolume {
        self.synced = false;
        self
    }

    /// Adds `latency` to every read (`get`, `read_range`), to model remote storage.
    pub fn with_read_latency(mut self, latency: Duration) -> LocalVolume {
        self.read_latency = latency;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, name: &str) -> Result<PathBuf> {
        let valid = !name.is_empty()
            && !name.starts_with('/')
            && name.split('/').all(|part| !part.is_empty() && part != "." && part != "..");
        if !valid {
            return Err(StorageError::InvalidConfig { detail: format!("bad object name={name}") });
        }
        Ok(self.root.join(name))
    }

    fn simulate_latency(&self) {
        if !self.read_latency.is_zero() {
            std::thread::sleep(self.read_latency);
        }
    }

    fn open_for_read(&self, name: &str) -> Result<Arc<File>> {
        if let Some(file) = self.open_files.lock().get(name) {
            return Ok(Arc::clone(file));
        }
        let path = self.path_of(name)?;
        let file = File::open(&path).map_err(|error| not_found_or(name, &path, "open", error))?;
        let file = Arc::new(file);
        let mut open_files = self.open_files.lock();
        if open_files.len() >= OPEN_FILES_MAX {
            let victim = open_files.keys().next().cloned().expect("cache is not empty");
            open_files.remove(&victim);
        }
        open_files.insert(name.to_string(), Arc::clone(&file));
        Ok(file)
    }
}

fn not_found_or(name: &str, path: &Path, op: &'static str, error: std::io::Error) -> StorageError {
    if error.kind() == std::io::ErrorKind::NotFound {
        StorageError::NotFound { object: name.to_string() }
    } else {
        StorageError::local_io(op, path, error)
    }
}

fn sync_directory(directory: &Path) -> Result<()> {
    File::open(directory)
        .and_then(|handle| handle.sync_all())
        .map_err(|error| StorageError::local_io("fsync-dir", directory, error))
}

impl Volume for LocalVolume {
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        let path = self.path_of(name)?;
        let directory = path.parent().expect("object path has a parent").to_path_buf();
        fs::create_dir_all(&directory)
            .map_err(|error| StorageError::local_io("mkdir", &directory, error))?;
        let sequence = self.temporary_sequence.fetch_add(1, Ordering::Relaxed);
        let temporary = directory.join(format!(".tmp.{}.{sequence}", std::process::id()));
        let written = OpenOptions::new().write(true).create_new(true).open(&temporary).and_then(
            |mut file| {
                file.write_all(data)?;
                if self.synced {
                    file.sync_data()?;
                }
                Ok(())
            },
        );
        if let Err(error) = written {
            let _ = fs::remove_file(&temporary);
            return Err(StorageError::local_io("write", &temporary, error));
        }
        if let Err(error) = fs::rename(&temporary, &path) {
            let _ = fs::remove_file(&temporary);
            return Err(StorageError::local_io("rename", &path, error));
        }
        if !self.synced {
            return Ok(());
        }
        sync_directory(&directory)
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        self.simulate_latency();
        let path = self.path_of(name)?;
        fs::read(&path).map_err(|error| not_found_or(name, &path, "read", error))
    }

    fn read_range(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<()> {
        self.simulate_latency();
        let file = self.open_for_read(name)?;
        file.read_exact_at(buffer, offset).map_err(|error| StorageError::VolumeIo {
            op: "read_range",
            object: name.to_string(),
            detail: format!("offset={offset} length={} error={error}", buffer.len()),
        })
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let mut found = Vec::new();
        list_recursive(&self.root, &self.root, prefix, &mut found)?;
        Ok(found)
    }

    fn delete(&self, name: &str) -> Result<()> {
        let path = self.path_of(name)?;
        self.open_files.lock().remove(name);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(StorageError::local_io("delete", &path, error)),
        }
    }

    fn describe(&self) -> String {
        if self.read_latency.is_zero() {
            format!("local:{}", self.root.display())
        } else {
            format!(
                "local:{} (+{} us simulated read latency)",
                self.root.display(),
                self.read_latency.as_micros()
            )
        }
    }
}

fn list_recursive(
    root: &Path,
    directory: &Path,
    prefix: &str,
    found: &mut Vec<ObjectInfo>,
) -> Result<()> {
    let entries = match fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(StorageError::local_io("list", directory, error)),
    };
    for entry in entries {
        let entry = entry.map_err(|error| StorageError::local_io("list", directory, error))?;
        let path = entry.path();
        let file_name = entry.file_name();
        if file_name.to_string_lossy().starts_with(".tmp.") {
            continue;
        }
        let metadata =
            entry.metadata().map_err(|error| StorageError::local_io("stat", &path, error))?;
        let relative = path.strip_prefix(root).expect("under root").to_string_lossy().to_string();
        if metadata.is_dir() {
            let directory_name = format!("{relative}/");
            if directory_name.starts_with(prefix) || prefix.starts_with(&directory_name) {
                list_recursive(root, &path, prefix, found)?;
            }
        } else if relative.starts_with(prefix) {
            found.push(ObjectInfo { name: relative, size: metadata.len() });
        }
    }
    Ok(())
}
