//! A wrapper that counts every volume request and byte, and times reads. On object stores the
//! requests are the bill, so every report of a workload states requests per operation.

use std::time::Instant;

use tierdb_common::{Counter, Histogram};

use super::{ObjectInfo, Volume};
use crate::error::Result;

/// Request and byte counters of one volume.
#[derive(Default, Debug)]
pub struct VolumeStats {
    pub get_requests: Counter,
    pub put_requests: Counter,
    pub list_requests: Counter,
    pub delete_requests: Counter,
    pub bytes_read: Counter,
    pub bytes_written: Counter,
    pub errors: Counter,
    /// Latency of ranged reads (page reads), in nanoseconds.
    pub read_latency_ns: Histogram,
}

/// A copy of the counters at one moment.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct VolumeStatsSnapshot {
    pub get_requests: u64,
    pub put_requests: u64,
    pub list_requests: u64,
    pub delete_requests: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub errors: u64,
}

impl VolumeStats {
    pub fn snapshot(&self) -> VolumeStatsSnapshot {
        VolumeStatsSnapshot {
            get_requests: self.get_requests.get(),
            put_requests: self.put_requests.get(),
            list_requests: self.list_requests.get(),
            delete_requests: self.delete_requests.get(),
            bytes_read: self.bytes_read.get(),
            bytes_written: self.bytes_written.get(),
            errors: self.errors.get(),
        }
    }
}

impl VolumeStatsSnapshot {
    pub fn since(&self, earlier: &VolumeStatsSnapshot) -> VolumeStatsSnapshot {
        VolumeStatsSnapshot {
            get_requests: self.get_requests - earlier.get_requests,
            put_requests: self.put_requests - earlier.put_requests,
            list_requests: self.list_requests - earlier.list_requests,
            delete_requests: self.delete_requests - earlier.delete_requests,
            bytes_read: self.bytes_read - earlier.bytes_read,
            bytes_written: self.bytes_written - earlier.bytes_written,
            errors: self.errors - earlier.errors,
        }
    }

    pub fn requests(&self) -> u64 {
        self.get_requests + self.put_requests + self.list_requests + self.delete_requests
    }
}

/// Counts requests and bytes of the wrapped volume.
pub struct MeteredVolume<V> {
    inner: V,
    stats: VolumeStats,
}

impl<V: Volume> MeteredVolume<V> {
    pub fn new(inner: V) -> MeteredVolume<V> {
        MeteredVolume { inner, stats: VolumeStats::default() }
    }

    pub fn stats(&self) -> &VolumeStats {
        &self.stats
    }

    pub fn inner(&self) -> &V {
        &self.inner
    }

    fn count<T>(&self, result: Result<T>) -> Result<T> {
        if result.is_err() {
            self.stats.errors.increment();
        }
        result
    }
}

fn length_of(bytes: usize) -> u64 {
    u64::try_from(bytes).expect("usize fits in u64")
}

impl<V: Volume> Volume for MeteredVolume<V> {
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        self.stats.put_requests.increment();
        self.stats.bytes_written.add(length_of(data.len()));
        self.count(self.inner.put(name, data))
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        self.stats.get_requests.increment();
        let result = self.inner.get(name);
        if let Ok(data) = &result {
            self.stats.bytes_read.add(length_of(data.len()));
        }
        self.count(result)
    }

    fn read_range(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<()> {
        self.stats.get_requests.increment();
        let started = Instant::now();
        let result = self.inner.read_range(name, offset, buffer);
        self.stats.read_latency_ns.record_elapsed(started);
        if result.is_ok() {
            self.stats.bytes_read.add(length_of(buffer.len()));
        }
        self.count(result)
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.stats.list_requests.increment();
        self.count(self.inner.list(prefix))
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.stats.delete_requests.increment();
        self.count(self.inner.delete(name))
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}
