//! A fault-injecting volume for tests: I/O errors, added latency, torn writes, bit flips, and a
//! simulated crash after which nothing more reaches storage.
//!
//! Faults are drawn from a seeded generator so that a failing run can be replayed.

use std::time::Duration;

use parking_lot::Mutex;
use tierdb_common::SplitMix64;

use super::{ObjectInfo, Volume};
use crate::error::{Result, StorageError};

/// Probabilities are per request, in `0.0..=1.0`.
#[derive(Clone, Debug, Default)]
pub struct FaultConfig {
    /// A read (`get`, `read_range`) fails with an I/O error.
    pub read_error_probability: f64,
    /// A `put` fails with an I/O error before anything is stored.
    pub write_error_probability: f64,
    /// A `put` stores only a prefix of the data, then fails (a crash mid-write).
    pub torn_write_probability: f64,
    /// A `put` stores the data with one bit flipped and reports success (silent media
    /// corruption, as a lying disk or a bad network card would produce).
    pub write_bit_flip_probability: f64,
    /// A read returns the data with one bit flipped.
    pub read_bit_flip_probability: f64,
    /// Added to every request.
    pub latency: Duration,
    /// Every `put` fails with `DiskFull` (nothing stored) while set.
    pub no_space: bool,
}

struct FaultState {
    config: FaultConfig,
    random: SplitMix64,
    crashed: bool,
}

pub struct FaultyVolume<V> {
    inner: V,
    state: Mutex<FaultState>,
}

impl<V: Volume> FaultyVolume<V> {
    pub fn new(inner: V, config: FaultConfig, seed: u64) -> FaultyVolume<V> {
        FaultyVolume {
            inner,
            state: Mutex::new(FaultState { config, random: SplitMix64::new(seed), crashed: false }),
        }
    }

    pub fn set_config(&self, config: FaultConfig) {
        self.state.lock().config = config;
    }

    /// From now on every request fails, as if the process had died: nothing more is stored.
    pub fn crash(&self) {
        self.state.lock().crashed = true;
    }

    pub fn inner(&self) -> &V {
        &self.inner
    }

    /// Decides one fault: returns whether it fires, and a random number for its details.
    fn draw(&self, pick: impl Fn(&FaultConfig) -> f64) -> Result<(bool, u64)> {
        let mut state = self.state.lock();
        if state.crashed {
            return Err(crashed_error());
        }
        let probability = pick(&state.config);
        let fires = probability > 0.0 && state.random.next_f64() < probability;
        let detail = state.random.next_u64();
        let latency = state.config.latency;
        drop(state);
        if !latency.is_zero() {
            std::thread::sleep(latency);
        }
        Ok((fires, detail))
    }
}

fn crashed_error() -> StorageError {
    StorageError::VolumeIo {
        op: "any",
        object: "*".to_string(),
        detail: "injected fault: simulated crash".to_string(),
    }
}

fn injected(op: &'static str, name: &str, what: &str) -> StorageError {
    StorageError::VolumeIo {
        op,
        object: name.to_string(),
        detail: format!("injected fault: {what}"),
    }
}

fn flip_one_bit(data: &mut [u8], random: u64) {
    if data.is_empty() {
        return;
    }
    let bit = random % (u64::try_from(data.len()).expect("length fits") * 8);
    let byte = usize::try_from(bit / 8).expect("index fits");
    data[byte] ^= 1 << (bit % 8);
}

impl<V: Volume> Volume for FaultyVolume<V> {
    fn put(&self, name: &str, data: &[u8]) -> Result<()> {
        if self.state.lock().config.no_space {
            return Err(StorageError::DiskFull { op: "put", path: name.to_string() });
        }
        if self.draw(|config| config.write_error_probability)?.0 {
            return Err(injected("put", name, "write error"));
        }
        let (torn, cut) = self.draw(|config| config.torn_write_probability)?;
        if torn {
            let keep = usize::try_from(cut % u64::try_from(data.len().max(1)).expect("fits"))
                .expect("fits");
            self.inner.put(name, &data[..keep])?;
            return Err(injected("put", name, "torn write"));
        }
        let (flip, where_) = self.draw(|config| config.write_bit_flip_probability)?;
        if flip {
            let mut copy = data.to_vec();
            flip_one_bit(&mut copy, where_);
            return self.inner.put(name, &copy);
        }
        self.inner.put(name, data)
    }

    fn get(&self, name: &str) -> Result<Vec<u8>> {
        if self.draw(|config| config.read_error_probability)?.0 {
            return Err(injected("get", name, "read error"));
        }
        let mut data = self.inner.get(name)?;
        let (flip, where_) = self.draw(|config| config.read_bit_flip_probability)?;
        if flip {
            flip_one_bit(&mut data, where_);
        }
        Ok(data)
    }

    fn read_range(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<()> {
        if self.draw(|config| config.read_error_probability)?.0 {
            return Err(injected("read_range", name, "read error"));
        }
        self.inner.read_range(name, offset, buffer)?;
        let (flip, where_) = self.draw(|config| config.read_bit_flip_probability)?;
        if flip {
            flip_one_bit(buffer, where_);
        }
        Ok(())
    }

    fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.draw(|_| 0.0)?;
        self.inner.list(prefix)
    }

    fn delete(&self, name: &str) -> Result<()> {
        self.draw(|_| 0.0)?;
        self.inner.delete(name)
    }

    fn describe(&self) -> String {
        format!("faulty({})", self.inner.describe())
    }
}
