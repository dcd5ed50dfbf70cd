//! A local block device: one file with positional reads and writes. The tier cache and the
//! local WAL sit on devices, so that a fault-injecting device can stand in for either.
//!
//! Contract: `write_at` may be lost, or torn at any 512-byte sector boundary, by a crash until
//! a later `sync` returns `Ok`. `read_at` fills the buffer or fails. After `sync` fails, the
//! state of unsynced writes is unknown (the kernel may have dropped them: "fsyncgate"), so
//! callers treat a failed sync as fatal for the data it covered.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use tierdb_common::SplitMix64;

use crate::error::{Result, StorageError};

/// Positional I/O on one file.
// A device's length is a file size, not a collection size: `is_empty` would mean nothing.
#[allow(clippy::len_without_is_empty)]
pub trait Device: Send + Sync + 'static {
    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<()>;
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()>;
    /// Makes every completed `write_at` durable.
    fn sync(&self) -> Result<()>;
    fn len(&self) -> Result<u64>;
    fn set_len(&self, length: u64) -> Result<()>;
    /// Reserves disk blocks for bytes `0..length` (`posix_fallocate`): the file grows to at
    /// least `length`, new bytes read as zeros, and later writes inside the range cannot
    /// fail for want of space. Fails with `DiskFull` when the blocks are not there.
    fn allocate(&self, length: u64) -> Result<()>;
    /// Whether reads and writes bypass the page cache (`O_DIRECT`).
    fn is_direct(&self) -> bool;
    fn path(&self) -> &Path;
}

/// A file on the local filesystem. With `direct`, it is opened with `O_DIRECT` where the
/// filesystem supports it (buffers and offsets must then be 4 KiB aligned), and falls back to
/// buffered I/O where it does not (tmpfs, some overlay filesystems).
pub struct FileDevice {
    file: File,
    path: PathBuf,
    direct: bool,
}

impl FileDevice {
    pub fn open(path: impl Into<PathBuf>, direct: bool) -> Result<FileDevice> {
        let path = path.into();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|error| StorageError::local_io("mkdir", parent, error))?;
        }
        if direct {
            let attempt = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .custom_flags(libc::O_DIRECT)
                .open(&path);
            if let Ok(file) = attempt {
                return Ok(FileDevice { file, path, direct: true });
            }
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|error| StorageError::local_io("open", &path, error))?;
        Ok(FileDevice { file, path, direct: false })
    }
}

impl Device for FileDevice {
    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<()> {
        self.file
            .read_exact_at(buffer, offset)
            .map_err(|error| StorageError::local_io("pread", &self.path, error))
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.file
            .write_all_at(data, offset)
            .map_err(|error| StorageError::local_io("pwrite", &self.path, error))
    }

    fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|error| StorageError::local_io("fdatasync", &self.path, error))
    }

    fn len(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|metadata| metadata.len())
            .map_err(|error| StorageError::local_io("stat", &self.path, error))
    }

    fn set_len(&self, length: u64) -> Result<()> {
        self.file
            .set_len(length)
            .map_err(|error| StorageError::local_io("truncate", &self.path, error))
    }

    fn allocate(&self, length: u64) -> Result<()> {
        let too_large =
            || std::io::Error::new(std::io::ErrorKind::InvalidInput, "length beyond off_t");
        let length = libc::off_t::try_from(length)
            .map_err(|_| StorageError::local_io("fallocate", &self.path, too_large()))?;
        // SAFETY: the descriptor is owned by `self.file` and open for the whole call;
        // posix_fallocate reads no memory of ours. It returns the error number rather than
        // setting errno (and glibc writes zeros itself where the file system lacks fallocate).
        let result = unsafe { libc::posix_fallocate(self.file.as_raw_fd(), 0, length) };
        if result == 0 {
            return Ok(());
        }
        Err(StorageError::local_io(
            "fallocate",
            &self.path,
            std::io::Error::from_raw_os_error(result),
        ))
    }

    fn is_direct(&self) -> bool {
        self.direct
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

/// Faults a device can be asked to inject; probabilities are per call.
#[derive(Clone, Debug, Default)]
pub struct DeviceFaultConfig {
    pub read_error_probability: f64,
    pub write_error_probability: f64,
    pub sync_error_probability: f64,
    pub read_bit_flip_probability: f64,
    pub latency: std::time::Duration,
    /// Writes and allocations fail with ENOSPC (a full disk) while set.
    pub no_space: bool,
}

const SECTOR_BYTES: usize = 512;

struct DeviceFaultState {
    config: DeviceFaultConfig,
    random: SplitMix64,
    /// Writes since the last successful sync, oldest first, with the bytes they replaced.
    unsynced: Vec<(u64, Vec<u8>, Vec<u8>)>,
    crashed: bool,
}

/// Wraps a device; remembers unsynced writes so that `simulate_crash` can lose or tear them.
pub struct FaultyDevice<D> {
    inner: D,
    state: Mutex<DeviceFaultState>,
}

impl<D: Device> FaultyDevice<D> {
    pub fn new(inner: D, config: DeviceFaultConfig, seed: u64) -> FaultyDevice<D> {
        FaultyDevice {
            inner,
            state: Mutex::new(DeviceFaultState {
                config,
                random: SplitMix64::new(seed),
                unsynced: Vec::new(),
                crashed: false,
            }),
        }
    }

    pub fn set_config(&self, config: DeviceFaultConfig) {
        self.state.lock().config = config;
    }

    /// Simulates power loss: each unsynced write is kept, lost, or torn at a sector boundary,
    /// at random; then every later call fails. Returns how many writes were lost or torn.
    pub fn simulate_crash(&self) -> Result<usize> {
        let mut state = self.state.lock();
        state.crashed = true;
        let unsynced = std::mem::take(&mut state.unsynced);
        let mut damaged = 0;
        // Undo newest first so that overlapping writes restore the right old bytes.
        for (offset, old, new) in unsynced.into_iter().rev() {
            match state.random.below(3) {
                0 => {}
                1 => {
                    self.inner.write_at(offset, &old)?;
                    damaged += 1;
                }
                _ => {
                    let sectors = old.len().div_ceil(SECTOR_BYTES);
                    let kept_sectors =
                        usize::try_from(state.random.below(u64::try_from(sectors).expect("fits")))
                            .expect("fits");
                    let mut torn = new.clone();
                    let cut = (kept_sectors * SECTOR_BYTES).min(torn.len());
                    torn[cut..].copy_from_slice(&old[cut..]);
                    self.inner.write_at(offset, &torn)?;
                    damaged += 1;
                }
            }
        }
        self.inner.sync()?;
        Ok(damaged)
    }

    /// Flips one random bit of the stored bytes in `offset..offset + length`, behind the
    /// caller's back (media decay).
    pub fn corrupt(&self, offset: u64, length: usize) -> Result<()> {
        let mut bytes = vec![0u8; length];
        self.inner.read_at(offset, &mut bytes)?;
        let bit = self.state.lock().random.below(u64::try_from(length * 8).expect("fits"));
        let byte = usize::try_from(bit / 8).expect("fits");
        bytes[byte] ^= 1 << (bit % 8);
        self.inner.write_at(offset, &bytes)
    }

    fn draw(&self, op: &'static str, pick: impl Fn(&DeviceFaultConfig) -> f64) -> Result<u64> {
        let mut state = self.state.lock();
        if state.crashed {
            return Err(self.injected(op, "simulated crash"));
        }
        let latency = state.config.latency;
        let probability = pick(&state.config);
        let fires = probability > 0.0 && state.random.next_f64() < probability;
        let detail = state.random.next_u64();
        drop(state);
        if !latency.is_zero() {
            std::thread::sleep(latency);
        }
        if fires {
            return Err(self.injected(op, "injected error"));
        }
        Ok(detail)
    }

    /// With `no_space`, a write or allocation that needs blocks beyond the file's current
    /// length fails with ENOSPC (overwriting allocated bytes still works, as on a full disk).
    fn check_space(&self, op: &'static str, end: u64) -> Result<()> {
        if self.state.lock().config.no_space && end > self.inner.len()? {
            return Err(StorageError::local_io(
                op,
                self.inner.path(),
                std::io::Error::from_raw_os_error(libc::ENOSPC),
            ));
        }
        Ok(())
    }

    fn injected(&self, op: &'static str, what: &str) -> StorageError {
        StorageError::local_io(
            op,
            self.inner.path(),
            std::io::Error::other(format!("injected fault: {what}")),
        )
    }
}

impl<D: Device> Device for FaultyDevice<D> {
    fn read_at(&self, offset: u64, buffer: &mut [u8]) -> Result<()> {
        self.draw("pread", |config| config.read_error_probability)?;
        self.inner.read_at(offset, buffer)?;
        let mut state = self.state.lock();
        let probability = state.config.read_bit_flip_probability;
        if probability > 0.0 && state.random.next_f64() < probability && !buffer.is_empty() {
            let bit = state.random.below(u64::try_from(buffer.len() * 8).expect("fits"));
            let byte = usize::try_from(bit / 8).expect("fits");
            buffer[byte] ^= 1 << (bit % 8);
        }
        Ok(())
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.draw("pwrite", |config| config.write_error_probability)?;
        self.check_space("pwrite", offset + u64::try_from(data.len()).expect("fits"))?;
        let mut old = vec![0u8; data.len()];
        let length = self.inner.len()?;
        if offset < length {
            let available =
                usize::try_from((length - offset).min(u64::try_from(data.len()).expect("fits")))
                    .expect("fits");
            self.inner.read_at(offset, &mut old[..available])?;
        }
        self.inner.write_at(offset, data)?;
        self.state.lock().unsynced.push((offset, old, data.to_vec()));
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.draw("fdatasync", |config| config.sync_error_probability)?;
        self.inner.sync()?;
        self.state.lock().unsynced.clear();
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        self.inner.len()
    }

    fn set_len(&self, length: u64) -> Result<()> {
        self.draw("truncate", |_| 0.0)?;
        self.inner.set_len(length)
    }

    fn allocate(&self, length: u64) -> Result<()> {
        self.draw("fallocate", |config| config.write_error_probability)?;
        self.check_space("fallocate", length)?;
        self.inner.allocate(length)
    }

    fn is_direct(&self) -> bool {
        self.inner.is_direct()
    }

    fn path(&self) -> &Path {
        self.inner.path()
    }
}
