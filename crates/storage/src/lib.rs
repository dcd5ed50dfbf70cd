//! tierdb's tiered page store: 8 KiB pages in a DRAM buffer pool, then a local tier cache,
//! then a durable volume (a local directory or an S3-compatible object store), with a WAL.
//!
//! See ARCHITECTURE.md for the map and docs/design/ for the formats.

mod buffer_pool;
pub mod capacity;
mod codec;
mod device;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod manifest;
mod page_map;
mod segment;
mod store;
mod temp;
mod tier;
mod volume;
mod wal;
mod wal_compact;
mod wal_page_ops;

pub use buffer_pool::{PageRef, PoolStats, POOL_FRAMES_MIN};
pub use device::{Device, DeviceFaultConfig, FaultyDevice, FileDevice};
pub use error::{Result, StorageError};
pub use page_map::{PageLocation, SegmentUsage};
pub use segment::SEGMENT_SLOTS_MAX;
pub use store::{
    Mtr, MtrSlot, PageStore, ReadAheadStats, SpaceUsage, StoreConfig, StoreStats, TierConfig,
};
pub use temp::{
    MemoryGrant, MemoryPool, TempConfig, TempReader, TempRun, TempSpace, TempStats,
    TempTableVolume, TempUsage, TempWriter, MEMORY_GRANT_STEP_BYTES, TABLE_STORE_PREFIX,
    TEMP_BLOCK_BYTES, TEMP_FILE_PREFIX,
};
pub use tier::{TierCache, TierLookup, TierStats};
pub use volume::{
    FaultConfig, FaultyVolume, LocalVolume, MeteredVolume, ObjectInfo, Volume, VolumeStats,
    VolumeStatsSnapshot,
};
#[cfg(feature = "s3")]
pub use volume::{S3Config, S3Volume};
pub use wal::{
    DeviceOpener, PageOp, WalRecord, WalStats, FREED_PAGES_PER_RECORD_MAX, RECORD_BODY_BYTES_MAX,
    WAL_FILE_BYTES_MAX,
};
pub use wal_compact::{Gap, RegionCompaction};
