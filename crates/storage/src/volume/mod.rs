//! Durable storage ("volume"): a flat namespace of immutable objects.
//!
//! Contract shared by every backend (local directory, S3, fault injector):
//! - `put` stores a whole object atomically and durably: when it returns `Ok`, a reader sees
//!   all of `data`, and so does a reader after a crash. When it returns `Err`, the object may
//!   be absent, complete, or (on a faulty device) incomplete; the caller cannot know which,
//!   and must never reference the name without verifying it.
//! - tierdb never overwrites an object: each segment, page-map chunk, manifest and WAL object
//!   gets a fresh name. Backends may therefore assume that a name is written at most once.
//! - `read_range` fills `buffer` exactly, or fails; a short object is an error.
//! - `list` returns every object whose name starts with `prefix`, in no particular order.
//! - `delete` of a missing object succeeds (deletes are retried after crashes).

mod faulty;
mod local;
mod metered;
#[cfg(feature = "s3")]
mod s3;

pub use faulty::{FaultConfig, FaultyVolume};
pub use local::LocalVolume;
pub use metered::{MeteredVolume, VolumeStats, VolumeStatsSnapshot};
#[cfg(feature = "s3")]
pub use s3::{S3Config, S3Volume};

use crate::error::Result;

/// An object's name and size, as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    pub name: String,
    pub size: u64,
}

/// Durable object storage. See the module documentation for the contract.
pub trait Volume: Send + Sync + 'static {
    /// Stores `data` as object `name`, atomically and durably.
    fn put(&self, name: &str, data: &[u8]) -> Result<()>;

    /// Reads the whole object.
    fn get(&self, name: &str) -> Result<Vec<u8>>;

    /// Reads `buffer.len()` bytes of object `name` starting at `offset`.
    fn read_range(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<()>;

    /// Lists the objects whose names start with `prefix`.
    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>>;

    /// Deletes object `name`; deleting a missing object succeeds.
    fn delete(&self, name: &str) -> Result<()>;

    /// A short human description for logs and reports, e.g. `local:/data` or `s3://bucket/p`.
    fn describe(&self) -> String;
}

impl<V: Volume + ?Sized> Volume for std::sync::Arc<V> {
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        (**self).put(name, data)
    }
    fn get(&self, name: &str) -> Result<Vec<u8>> {
        (**self).get(name)
    }
    fn read_range(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<()> {
        (**self).read_range(name, offset, buffer)
    }
    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        (**self).list(prefix)
    }
    fn delete(&self, name: &str) -> Result<()> {
        (**self).delete(name)
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
}
