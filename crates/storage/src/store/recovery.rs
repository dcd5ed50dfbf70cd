//! Opening a store: the newest manifest, its page map, then WAL replay in two passes.
//!
//! Pass 1 (`wal::recover`) validates the log, cuts a torn tail, applies `MapUpdate` and
//! `PagesFreed` records after the manifest's map LSN to the page map, finds the highest page
//! id and collects every page freed in the replayed log. Pass 2
//! (`wal::replay`, read-only) redoes page changes after the redo LSN through the normal
//! buffer pool, which may flush and evict (the WAL is open by then). Applying every map update
//! first is safe because page images only move forward: a change is applied to a page only
//! if the page's LSN is older than the change, and every image holds all changes up to its
//! LSN. Pass 2 skips changes to freed pages: every one of them precedes the free (ids are
//! never reused), and the page may have no image left to apply them to (store/free.rs).
//!
//! Segments on the volume that no map entry references after pass 1 are the remains of
//! flushes that crashed before their map update became durable: they are deleted.

use std::collections::{BTreeSet, HashSet};
use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};
use tierdb_common::{ErrorKind, Lsn, PageId, PageType, SegmentId};

use super::flush::CheckpointState;
use super::{frames_for, StoreConfig, StoreInner, StoreStats};
use crate::buffer_pool::{BufferPool, Pinned};
use crate::device::{Device, FileDevice};
use crate::error::{Result, StorageError};
use crate::manifest::{parse_manifest_name, unknown_magic, Manifest, MANIFEST_PREFIX};
use crate::page_map::{chunk_name, PageLocation, PageMap, MAP_PREFIX};
use crate::segment::{parse_segment_name, segment_name, SEGMENT_PREFIX};
use crate::tier::TierCache;
use crate::volume::{MeteredVolume, Volume};
use crate::wal::{self, PageOp, Wal, WalLocation, WalRecord};

/// `unlogged`: the temp space of the server an unlogged store (temp tables) belongs to; such
/// a store starts empty in a fresh directory, logs nothing and shares that temp space.
pub(super) fn recover(
    config: StoreConfig,
    lock_file: File,
    unlogged: Option<Arc<crate::temp::TempSpace>>,
) -> Result<StoreInner> {
    let volume = Arc::new(MeteredVolume::new(Arc::clone(&config.volume)));
    let (manifest, highest_sequence) = load_newest_manifest(&volume)?;
    let mut map = PageMap::default();
    let mut checkpoint_state = CheckpointState::default();
    if let Some(manifest) = &manifest {
        load_map(&volume, manifest, &mut map)?;
        checkpoint_state.sequence = highest_sequence.max(manifest.sequence);
        checkpoint_state.chunk_sequences = manifest.chunks.iter().copied().collect();
    }
    let listed = list_segments(&volume)?;
    if let Some(missing) = map.segments().keys().find(|segment| !listed.contains(segment)) {
        return Err(StorageError::corrupt_file(
            format!("{}/{}", volume.describe(), segment_name(*missing)),
            "segment named by the manifest is missing",
        ));
    }
    let wal_location = if unlogged.is_some() {
        WalLocation::Discard
    } else if config.wal_in_volume {
        WalLocation::Volume(Arc::clone(&volume) as Arc<dyn Volume>)
    } else {
        WalLocation::Local {
            directory: config.data_dir.join("wal"),
            opener: Arc::clone(&config.wal_device_opener),
        }
    };
    let redo_lsn = manifest.as_ref().map_or(Lsn::ZERO, |manifest| manifest.redo_lsn);
    let replay_from =
        manifest.as_ref().map_or(Lsn::ZERO, |manifest| manifest.redo_lsn.min(manifest.map_lsn));
    let mut highest_page = map
        .max_page_id()
        .0
        .max(manifest.as_ref().map_or(0, |manifest| manifest.next_page.0.saturating_sub(1)));
    let mut freed: HashSet<PageId> = HashSet::new();
    let (sink, wal_end) = wal::recover(&wal_location, replay_from, &mut |_, end, record| {
        first_pass_visit(&mut map, &mut highest_page, &mut freed, &listed, &volume, end, record)
    })?;
    if let Some(manifest) = &manifest {
        let needed = manifest.wal_lsn;
        if wal_end < needed {
            return Err(StorageError::corrupt_file(
                wal_description(&config, &volume),
                format!("log ends at lsn={wal_end} but the manifest needs it up to lsn={needed}: wal files are missing"),
            ));
        }
    }
    delete_orphans(&volume, &map, &listed)?;
    let highest_chunk_sequence = delete_orphan_chunks(&volume, manifest.as_ref())?;
    checkpoint_state.sequence =
        checkpoint_state.sequence.max(highest_chunk_sequence).max(highest_sequence);
    let tier = open_tier(&config)?;
    let temp = match &unlogged {
        Some(temp) => Arc::clone(temp),
        None => crate::temp::TempSpace::open(&config.temp)?,
    };
    let next_segment = [
        manifest.as_ref().map_or(1, |manifest| manifest.next_segment.0),
        listed.iter().next_back().map_or(1, |segment| segment.0 + 1),
        tier.as_ref().map_or(1, |tier| tier.max_version().0 + 1),
        1,
    ]
    .into_iter()
    .max()
    .expect("non-empty");
    let inner = StoreInner {
        pool: BufferPool::new(
            frames_for(config.buffer_pool_bytes).max(crate::buffer_pool::POOL_FRAMES_MIN),
        ),
        tier,
        temp,
        wal: Wal::new(sink, wal_end),
        map: RwLock::new(map),
        next_segment: AtomicU64::new(next_segment),
        next_page: AtomicU64::new(highest_page + 1),
        dirty_frames: AtomicUsize::new(0),
        flush_lock: Mutex::new(()),
        checkpoint_state: Mutex::new(checkpoint_state),
        poisoned: Mutex::new(None),
        segments_full: AtomicBool::new(false),
        compaction_quarantine: Mutex::new(BTreeSet::new()),
        shutdown: AtomicBool::new(false),
        wake: (Mutex::new(false), Condvar::new()),
        stats: StoreStats::default(),
        working_set: crate::capacity::WorkingSet::new(),
        unlogged: unlogged.is_some(),
        volume,
        config,
        _lock_file: lock_file,
    };
    wal::replay(&wal_location, replay_from, wal_end, &mut |start, end, record| match record {
        WalRecord::PageOps(mut ops) if end > redo_lsn => {
            if !freed.is_empty() {
                ops.retain(|op| !freed.contains(&op.page_id()));
            }
            inner.redo(start, end, &ops)
        }
        _ => Ok(()),
    })?;
    Ok(inner)
}

/// Pass 1's visit of one record: map updates and frees after the map's LSN go into the map;
/// the highest page id and every freed page are noted for pass 2.
fn first_pass_visit(
    map: &mut PageMap,
    highest_page: &mut u64,
    freed: &mut HashSet<PageId>,
    listed: &BTreeSet<SegmentId>,
    volume: &MeteredVolume<Arc<dyn Volume>>,
    end: Lsn,
    record: WalRecord,
) -> Result<()> {
    match record {
        WalRecord::MapUpdate { segment, slots, entries } if end > map.applied_lsn => {
            if !listed.contains(&segment) {
                return Err(StorageError::corrupt_file(
                    format!("{}/{}", volume.describe(), segment_name(segment)),
                    format!("segment named by wal record lsn={end} is missing"),
                ));
            }
            map.register_segment(segment, slots);
            for (page_id, slot) in entries {
                map.set(page_id, PageLocation { segment, slot });
            }
            map.applied_lsn = end;
        }
        WalRecord::PageOps(ops) => {
            for op in &ops {
                *highest_page = (*highest_page).max(op.page_id().0);
            }
        }
        WalRecord::PagesFreed(pages) => {
            if end > map.applied_lsn {
                for &page_id in &pages {
                    map.set(page_id, PageLocation::default());
                }
                map.applied_lsn = end;
            }
            *highest_page = (*highest_page).max(pages.last().map_or(0, |page_id| page_id.0));
            freed.extend(pages);
        }
        WalRecord::MapUpdate { .. } | WalRecord::Opaque { .. } => {}
    }
    Ok(())
}

/// The newest valid manifest, and the highest manifest sequence listed (valid or not), so that
/// no name is ever reused.
///
/// A newest manifest that fails to decode is the remains of a checkpoint whose PUT was torn
/// and reported failed (a volume that breaks its atomic-PUT contract): that checkpoint deleted
/// nothing, so the manifest before it, with its chunks, segments and WAL, is still complete,
/// and recovery uses it. With no valid manifest at all, the error names the newest one. A
/// sealed manifest with a magic this binary does not know is not damage but a newer format:
/// the open fails rather than fall back past it (`unknown_magic`).
fn load_newest_manifest(
    volume: &MeteredVolume<Arc<dyn Volume>>,
) -> Result<(Option<Manifest>, u64)> {
    let mut listed: Vec<(u64, String)> = Vec::new();
    for info in volume.list(MANIFEST_PREFIX)? {
        let Some(sequence) = parse_manifest_name(&info.name) else {
            return Err(StorageError::corrupt_file(
                format!("{}/{}", volume.describe(), info.name),
                "unexpected object in manifest prefix",
            ));
        };
        listed.push((sequence, info.name));
    }
    listed.sort();
    let highest = listed.last().map_or(0, |(sequence, _)| *sequence);
    let mut first_failure = None;
    for (sequence, name) in listed.iter().rev() {
        let described = format!("{}/{name}", volume.describe());
        let mut newer = None;
        let decoded = volume.get(name).and_then(|bytes| {
            newer = unknown_magic(&bytes);
            let manifest = Manifest::decode(&bytes)
                .map_err(|detail| StorageError::corrupt_file(described.clone(), detail))?;
            if manifest.sequence != *sequence {
                return Err(StorageError::corrupt_file(
                    described.clone(),
                    format!("sequence={} disagrees with name", manifest.sequence),
                ));
            }
            Ok(manifest)
        });
        if let Some(magic) = newer {
            return Err(StorageError::corrupt_file(
                described,
                format!("manifest magic={magic} was written by a newer tierdb; downgrading is not supported"),
            ));
        }
        match decoded {
            Ok(manifest) => {
                if let Some(error) = &first_failure {
                    tracing::warn!(%error, sequence, "newest manifest is damaged; recovering from the previous one");
                }
                return Ok((Some(manifest), highest));
            }
            // Only damage falls back: an I/O error (perhaps transient) fails the open, which
            // can be retried, rather than recovering from an older manifest.
            Err(error) if error.kind() != ErrorKind::Corruption => return Err(error),
            Err(error) if first_failure.is_none() => first_failure = Some(error),
            Err(_) => {}
        }
    }
    match first_failure {
        Some(error) => Err(error),
        None => Ok((None, highest)),
    }
}

fn load_map(
    volume: &MeteredVolume<Arc<dyn Volume>>,
    manifest: &Manifest,
    map: &mut PageMap,
) -> Result<()> {
    for &(segment, slots) in &manifest.segments {
        map.register_segment(segment, slots);
    }
    for &(chunk, sequence) in &manifest.chunks {
        let name = chunk_name(chunk, sequence);
        let bytes = volume.get(&name)?;
        map.load_chunk(chunk, &bytes).map_err(|detail| {
            StorageError::corrupt_file(format!("{}/{name}", volume.describe()), detail)
        })?;
    }
    // Loaded chunks are already durable.
    map.take_dirty_chunks();
    map.applied_lsn = manifest.map_lsn;
    Ok(())
}

fn list_segments(volume: &MeteredVolume<Arc<dyn Volume>>) -> Result<BTreeSet<SegmentId>> {
    let mut segments = BTreeSet::new();
    for info in volume.list(SEGMENT_PREFIX)? {
        match parse_segment_name(&info.name) {
            Some(segment) => segments.insert(segment),
            None => {
                return Err(StorageError::corrupt_file(
                    format!("{}/{}", volume.describe(), info.name),
                    "unexpected object in segment prefix",
                ))
            }
        };
    }
    Ok(segments)
}

fn delete_orphans(
    volume: &MeteredVolume<Arc<dyn Volume>>,
    map: &PageMap,
    listed: &BTreeSet<SegmentId>,
) -> Result<()> {
    for segment in listed.iter().filter(|segment| !map.segments().contains_key(segment)) {
        tracing::info!(segment = %segment, "deleting segment left by an interrupted flush");
        volume.delete(&segment_name(*segment))?;
    }
    Ok(())
}

fn wal_description(config: &StoreConfig, volume: &MeteredVolume<Arc<dyn Volume>>) -> String {
    if config.wal_in_volume {
        format!("{}/{}", volume.describe(), wal::WAL_PREFIX)
    } else {
        config.data_dir.join("wal").display().to_string()
    }
}

/// Deletes page-map chunk objects the manifest does not name (remains of failed checkpoints)
/// and returns the highest checkpoint sequence any chunk name carries, so that a sequence
/// whose chunks were written is never used again.
fn delete_orphan_chunks(
    volume: &MeteredVolume<Arc<dyn Volume>>,
    manifest: Option<&Manifest>,
) -> Result<u64> {
    let referenced: BTreeSet<String> = manifest
        .map(|manifest| {
            manifest.chunks.iter().map(|&(chunk, sequence)| chunk_name(chunk, sequence)).collect()
        })
        .unwrap_or_default();
    let mut highest = 0;
    for info in volume.list(MAP_PREFIX)? {
        if let Some(sequence) =
            info.name.rsplit('.').next().and_then(|hex| u64::from_str_radix(hex, 16).ok())
        {
            highest = highest.max(sequence);
        }
        if !referenced.contains(&info.name) {
            volume.delete(&info.name)?;
        }
    }
    Ok(highest)
}

fn open_tier(config: &StoreConfig) -> Result<Option<TierCache>> {
    let Some(tier) = &config.tier else {
        return Ok(None);
    };
    let device: Box<dyn Device> = match &config.tier_device_opener {
        Some(opener) => opener(&tier.path)?,
        None => Box::new(FileDevice::open(&tier.path, tier.direct_io)?),
    };
    let index_path = tier.path.with_extension("idx");
    Ok(Some(TierCache::open(device, &index_path, tier.capacity_bytes)?))
}

impl StoreInner {
    /// Redoes one logged group of page changes: each page changes only if its LSN is older
    /// than the record, so replaying a record twice changes nothing.
    fn redo(&self, start: Lsn, end: Lsn, ops: &[PageOp]) -> Result<()> {
        let mut touched: Vec<(PageId, Pinned, bool)> = Vec::new();
        for op in ops {
            let page_id = op.page_id();
            let index = match touched.iter().position(|(touched_id, _, _)| *touched_id == page_id) {
                Some(index) => index,
                None => {
                    let pin = self.redo_fetch(op, end)?;
                    let applies = pin.read().lsn() < end;
                    touched.push((page_id, pin, applies));
                    touched.len() - 1
                }
            };
            let (_, pin, applies) = &touched[index];
            if !applies {
                continue;
            }
            op.apply(&mut pin.write());
        }
        for (page_id, pin, applies) in touched {
            if applies {
                pin.write().set_lsn(end);
                if self.mark_dirty(&pin, start) {
                    if let Some(tier) = &self.tier {
                        tier.invalidate(page_id);
                    }
                }
            }
        }
        Ok(())
    }

    fn redo_fetch(&self, op: &PageOp, end: Lsn) -> Result<Pinned> {
        let page_id = op.page_id();
        match self.fetch(page_id) {
            Ok(pin) => Ok(pin),
            Err(StorageError::UnknownPage { .. }) if matches!(op, PageOp::Init { .. }) => {
                let pin = self.install_empty(page_id)?;
                pin.write().init(page_id, PageType::Free);
                Ok(pin)
            }
            Err(StorageError::UnknownPage { .. }) => Err(StorageError::corrupt_file(
                format!("wal lsn={end}"),
                format!("record changes page_id={page_id} that was never initialized"),
            )),
            Err(error) => Err(error),
        }
    }
}
