//! Writing pages out: batched flushes into new segments, checkpoints, compaction, and the
//! background writer that drives them.
//!
//! Flush protocol (`StoreInner::flush_some`), in this order:
//! 1. copy each dirty page under its shared latch; mark it `write_pending` (not evictable);
//! 2. make the WAL durable up to the highest page LSN copied (WAL before data);
//! 3. stamp the copies with the new segment id as their version and PUT the segment;
//!    if the PUT fails its outcome is unknown, so the store is poisoned;
//! 4. under the page-map lock, point the pages at the segment and append a `MapUpdate`
//!    record, so that map order equals log order;
//! 5. clear `write_pending`; the frames are clean (unless changed meanwhile) and evictable.
//!
//! Checkpoint (`StoreInner::checkpoint`): redo LSN = the oldest recovery LSN of any frame
//! with unwritten changes (or the WAL end); the page-map chunks changed since the last
//! checkpoint are written under new names, then a new manifest; only then are superseded
//! chunks, older manifests, dead segments and WAL before the redo point deleted.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tierdb_common::{with_op_counters, Lsn, Page, PageId, SegmentId};

use super::StoreInner;
use crate::buffer_pool::Pinned;
use crate::codec::{usize_to_u32, usize_to_u64};
use crate::error::{Result, StorageError};
use crate::manifest::{manifest_name, parse_manifest_name, Manifest, MANIFEST_PREFIX};
use crate::page_map::{chunk_name, PageLocation};
use crate::segment::{
    decode_segment_index, encode_segment, segment_name, slot_offset, SEGMENT_SLOTS_MAX,
};
use crate::volume::Volume;
use crate::wal::WalRecord;

/// How often the background writer wakes when nothing asks it to.
const WRITER_TICK: Duration = Duration::from_millis(20);
/// The largest map update record: one entry (page id, slot) per slot of a full segment,
/// with its header, rounded up.
const MAP_UPDATE_BYTES_MAX: u64 = 16 * SEGMENT_SLOTS_MAX as u64 + 4096;
/// How often the background writer tries again while the disk is full.
const OUT_OF_SPACE_RETRY: Duration = Duration::from_secs(1);
/// How often the background writer looks for pages dirty since before the WAL budget.
const HORIZON_CHECK_INTERVAL: Duration = Duration::from_millis(500);
/// Segments compacted together at most in one step.
const COMPACTION_SEGMENTS_MAX: usize = 8;

#[derive(Default)]
pub(crate) struct CheckpointState {
    pub sequence: u64,
    /// Which checkpoint wrote the current object of each page-map chunk.
    pub chunk_sequences: BTreeMap<usize, u64>,
    pub wal_bytes_at_last: u64,
    /// The log end when the last checkpoint began: a timed checkpoint first writes the pages
    /// dirty since before it, so that the log it kept can go at this one.
    pub appended_at_last: Lsn,
    pub last_at: Option<Instant>,
    /// Objects to delete after the next successful checkpoint: chunk objects of failed
    /// checkpoints, and objects whose DELETE failed.
    pub orphans: Vec<String>,
}

impl StoreInner {
    /// Writes up to `limit` dirty pages into one new segment. Returns pages written.
    pub(crate) fn flush_some(&self, limit: usize) -> Result<usize> {
        self.flush_dirty(limit, None)
    }

    /// Writes up to `limit` dirty pages (only those whose recovery LSN is below `older_than`,
    /// if given) into one new segment. Returns pages written.
    pub(crate) fn flush_dirty(&self, limit: usize, older_than: Option<Lsn>) -> Result<usize> {
        self.flush_chosen(|pool| pool.dirty_frames(limit.min(SEGMENT_SLOTS_MAX), older_than))
    }

    /// Writes the dirty frames the CLOCK hand will reach next with usage count 0 (one
    /// segment at most), until `reusable_ahead` frames ahead of the hand are reusable: what
    /// the background writer cleans. Returns pages written.
    pub(crate) fn flush_ahead_of_hand(&self, reusable_ahead: usize) -> Result<usize> {
        self.flush_chosen(|pool| pool.dirty_frames_ahead_of_hand(SEGMENT_SLOTS_MAX, reusable_ahead))
    }

    /// Writes the dirty frames `choose` picks (under the flush lock) into one new segment.
    fn flush_chosen(
        &self,
        choose: impl FnOnce(&crate::buffer_pool::BufferPool) -> Vec<(PageId, Pinned)>,
    ) -> Result<usize> {
        let _flush = self.flush_lock.lock();
        self.check_poisoned()?;
        // The map update that must follow the segment has to fit the log's reserved space;
        // when it cannot, nothing is written (a checkpoint frees log files).
        self.wal.ensure_unbounded_room(MAP_UPDATE_BYTES_MAX)?;
        let candidates = choose(&self.pool);
        assert!(candidates.len() <= SEGMENT_SLOTS_MAX, "more pages than a segment holds");
        let mut images: Vec<Box<Page>> = Vec::with_capacity(candidates.len());
        let mut frames = Vec::with_capacity(candidates.len());
        for (page_id, pin) in candidates {
            // Skip pages latched exclusively: possibly by the very thread that needs a frame
            // (an Mtr holding a dirty page while it fetches another), which would deadlock.
            let Some(latch) = pin.frame().latch.try_read() else {
                continue;
            };
            if !pin.frame().begin_write(page_id) {
                continue;
            }
            self.dirty_frames.fetch_sub(1, Ordering::AcqRel);
            images.push(Box::new((**latch).clone()));
            drop(latch);
            frames.push(pin);
        }
        if images.is_empty() {
            return Ok(0);
        }
        let segment = match self.write_segment(&mut images) {
            Ok(segment) => segment,
            Err(error) if error.is_disk_full() => {
                // Nothing was written (a partial segment file is removed by the volume): the
                // pages are dirty again, to be written once space is freed; until then
                // changes are refused (`check_space`).
                self.restore_dirty(&frames);
                if !self.segments_full.swap(true, Ordering::AcqRel) {
                    tracing::warn!(%error, "segments do not fit on disk: changes fail with 53100 until space is freed");
                }
                return Err(error);
            }
            Err(error) => {
                self.poison(&error);
                return Err(error);
            }
        };
        let entries: Vec<(PageId, u32)> = images
            .iter()
            .enumerate()
            .map(|(slot, image)| (image.page_id(), usize_to_u32(slot)))
            .collect();
        self.publish_segment(segment, usize_to_u32(images.len()), &entries, None)?;
        for pin in &frames {
            pin.frame().finish_write(segment);
        }
        let written = images.len();
        self.stats.flushes.increment();
        self.stats.pages_flushed.add(usize_to_u64(written));
        with_op_counters(|counters| counters.pages_written += usize_to_u64(written));
        Ok(written)
    }

    /// Undoes step 1 of the flush protocol for frames whose segment was not written.
    fn restore_dirty(&self, frames: &[Pinned]) {
        for pin in frames {
            if pin.frame().abort_write() {
                self.dirty_frames.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    /// WAL first, then the segment. Stamps each image with the segment id as its version.
    fn write_segment(&self, images: &mut [Box<Page>]) -> Result<SegmentId> {
        let highest_lsn = images.iter().map(|image| image.lsn()).max().unwrap_or(Lsn::ZERO);
        self.wal.flush_to(highest_lsn)?;
        let segment = SegmentId(self.next_segment.fetch_add(1, Ordering::AcqRel));
        for image in images.iter_mut() {
            image.set_image_version(segment);
            image.seal();
        }
        let references: Vec<&Page> = images.iter().map(|image| &**image).collect();
        let bytes = encode_segment(segment, &references);
        self.volume.put(&segment_name(segment), &bytes)?;
        if self.segments_full.swap(false, Ordering::AcqRel) {
            tracing::info!("segments fit on disk again: changes accepted");
        }
        self.stats.segments_written.increment();
        self.stats.segment_bytes_written.add(usize_to_u64(bytes.len()));
        Ok(segment)
    }

    /// Points pages at their new slots and logs it. With `expected`, a page is moved only if
    /// it still lives at `expected[i]` (compaction must not undo a newer flush).
    fn publish_segment(
        &self,
        segment: SegmentId,
        slots: u32,
        entries: &[(PageId, u32)],
        expected: Option<&[PageLocation]>,
    ) -> Result<()> {
        let mut map = self.map.write();
        map.register_segment(segment, slots);
        let mut applied = Vec::with_capacity(entries.len());
        for (index, &(page_id, slot)) in entries.iter().enumerate() {
            if let Some(expected) = expected {
                if map.get(page_id) != Some(expected[index]) {
                    continue;
                }
            }
            map.set(page_id, PageLocation { segment, slot });
            applied.push((page_id, slot));
        }
        let record = WalRecord::MapUpdate { segment, slots, entries: applied };
        // Unbounded: the segment is written and the map changed; refusing the record for
        // space would leave the map ahead of the log.
        let end = self
            .wal
            .append_unbounded(&record, |_, _| {})
            .inspect_err(|error| self.poison(error))?;
        map.applied_lsn = end;
        Ok(())
    }

    /// Writes every page whose oldest unwritten change is before `lsn`.
    pub(crate) fn flush_older_than(&self, lsn: Lsn) -> Result<()> {
        let rounds = self.dirty_frames.load(Ordering::Acquire) / SEGMENT_SLOTS_MAX + 1;
        for _ in 0..rounds {
            if self.shutdown.load(Ordering::Acquire)
                || self.pool.min_recovery_lsn().is_none_or(|oldest| oldest >= lsn)
                || self.flush_dirty(SEGMENT_SLOTS_MAX, Some(lsn))? == 0
            {
                break;
            }
        }
        Ok(())
    }

    /// The log ran out of space: write every dirty page and checkpoint, which moves the redo
    /// point to the log end and deletes the files before it. Segments are not reserved like
    /// the log, so on a disk too full for the next log file they usually still fit; when
    /// they do not, this fails with `DiskFull` and is asked again by the next refused append.
    pub(crate) fn give_log_space_back(&self) -> Result<()> {
        tracing::info!("log out of space: writing dirty pages and checkpointing to free it");
        // Bounded by the pages dirty now: writers keep going meanwhile (their appends may
        // fit again as soon as a checkpoint frees a file).
        let rounds = self.dirty_frames.load(Ordering::Acquire) / SEGMENT_SLOTS_MAX + 1;
        let flushed = (|| {
            for _ in 0..rounds {
                if self.flush_some(SEGMENT_SLOTS_MAX)? == 0 {
                    break;
                }
            }
            Ok(())
        })();
        // Even when a segment did not fit: the checkpoint deletes the segments that the
        // flushes so far emptied and the log before the oldest page still dirty.
        let checkpointed = self.checkpoint();
        flushed.and(checkpointed)
    }

    /// Persists the page map and a new manifest; then deletes what they made unnecessary.
    pub(crate) fn checkpoint(&self) -> Result<()> {
        let mut state = self.checkpoint_state.lock();
        self.check_poisoned()?;
        let appended = self.wal.appended_lsn();
        let redo_lsn = self.pool.min_recovery_lsn().map_or(appended, |oldest| oldest.min(appended));
        self.wal.flush_to(appended).inspect_err(|error| self.poison(error))?;
        // A sequence is used once, even by a failed attempt whose PUTs may have landed:
        // object names are never reused.
        let sequence = state.sequence + 1;
        state.sequence = sequence;
        let (chunks, dirty, segments, dead, map_lsn) = {
            let mut map = self.map.write();
            let dirty = map.take_dirty_chunks();
            let chunks: Vec<(usize, Vec<u8>)> =
                dirty.iter().map(|&chunk| (chunk, map.encode_chunk(chunk))).collect();
            let dead: Vec<(SegmentId, u32)> = map
                .segments()
                .iter()
                .filter(|(_, usage)| usage.live == 0)
                .map(|(&segment, usage)| (segment, usage.slots))
                .collect();
            for (segment, _) in &dead {
                map.forget_segment(*segment);
            }
            let segments: Vec<(SegmentId, u32)> =
                map.segments().iter().map(|(&segment, usage)| (segment, usage.slots)).collect();
            (chunks, dirty, segments, dead, map.applied_lsn)
        };
        let mut chunk_sequences = state.chunk_sequences.clone();
        let mut written_bytes = 0u64;
        let written = (|| -> Result<()> {
            // The manifest will say the map reflects updates up to `map_lsn`; recovery skips
            // map updates before it, so they must be durable first.
            self.wal.flush_to(map_lsn).inspect_err(|error| self.poison(error))?;
            for (chunk, bytes) in &chunks {
                self.volume.put(&chunk_name(*chunk, sequence), bytes)?;
                written_bytes += usize_to_u64(bytes.len());
                chunk_sequences.insert(*chunk, sequence);
            }
            let manifest = Manifest {
                sequence,
                redo_lsn,
                map_lsn,
                wal_lsn: appended.max(map_lsn),
                next_segment: SegmentId(self.next_segment.load(Ordering::Acquire)),
                next_page: PageId(self.next_page.load(Ordering::Acquire)),
                chunks: chunk_sequences
                    .iter()
                    .map(|(&chunk, &written_by)| (chunk, written_by))
                    .collect(),
                segments,
            };
            let bytes = manifest.encode();
            written_bytes += usize_to_u64(bytes.len());
            self.volume.put(&manifest_name(sequence), &bytes)
        })();
        if let Err(error) = written {
            // The objects of this attempt may exist (a failed PUT may have landed) but the
            // next checkpoint supersedes them: delete them after it. The chunks stay dirty,
            // and the dead segments come back to be deleted by the next checkpoint.
            let mut map = self.map.write();
            map.restore_dirty_chunks(dirty);
            for &(segment, slots) in &dead {
                map.register_segment(segment, slots);
            }
            drop(map);
            state.orphans.extend(chunks.iter().map(|(chunk, _)| chunk_name(*chunk, sequence)));
            return Err(error);
        }
        let mut superseded: Vec<String> = chunks
            .iter()
            .filter_map(|(chunk, _)| {
                state.chunk_sequences.get(chunk).map(|&old| chunk_name(*chunk, old))
            })
            .collect();
        superseded.append(&mut state.orphans);
        state.chunk_sequences = chunk_sequences;
        state.wal_bytes_at_last = self.wal.stats.bytes.get();
        state.appended_at_last = appended;
        state.last_at = Some(Instant::now());
        drop(state);
        self.stats.checkpoints.increment();
        self.stats.checkpoint_bytes_written.add(written_bytes);
        self.delete_unreferenced(sequence, &superseded, &dead);
        // The checkpoint is durable; a failed truncation only keeps old log files longer.
        if let Err(error) = self.wal.truncate_before(redo_lsn.min(map_lsn)) {
            tracing::warn!(%error, "wal truncation failed; retried at the next checkpoint");
        }
        Ok(())
    }

    /// Deletes what a durable checkpoint made unnecessary. Best effort: a failed DELETE is
    /// logged and retried after the next checkpoint (the checkpoint itself already succeeded),
    /// and never stops the other deletes or the WAL truncation.
    fn delete_unreferenced(&self, sequence: u64, superseded: &[String], dead: &[(SegmentId, u32)]) {
        let mut names: Vec<String> = superseded.to_vec();
        match self.volume.list(MANIFEST_PREFIX) {
            Ok(listed) => names.extend(
                listed
                    .into_iter()
                    .filter(|info| {
                        parse_manifest_name(&info.name).is_some_and(|older| older < sequence)
                    })
                    .map(|info| info.name),
            ),
            Err(error) => {
                tracing::warn!(%error, "listing old manifests failed; retried next checkpoint")
            }
        }
        names.extend(dead.iter().map(|(segment, _)| segment_name(*segment)));
        let mut failed = Vec::new();
        for name in names {
            match self.volume.delete(&name) {
                Ok(()) => {
                    if name.starts_with(crate::segment::SEGMENT_PREFIX) {
                        self.stats.segments_deleted.increment();
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, object = %name, "delete failed; retried after the next checkpoint");
                    failed.push(name);
                }
            }
        }
        self.checkpoint_state.lock().orphans.extend(failed);
    }

    /// Rewrites the live pages of the emptiest segments into one new segment, when space
    /// amplification exceeds the configured maximum. Returns whether it did anything.
    pub(crate) fn compact_step(&self) -> Result<bool> {
        self.check_poisoned()?;
        self.wal.ensure_unbounded_room(MAP_UPDATE_BYTES_MAX)?;
        let quarantined = self.compaction_quarantine.lock().clone();
        let victims: Vec<SegmentId> = {
            let map = self.map.read();
            // Dead segments (no live page) are garbage the next checkpoint deletes; they are not
            // a reason to rewrite live pages.
            let amplification = map.referenced_amplification();
            if amplification <= self.config.space_amplification_max {
                return Ok(false);
            }
            let newest = map.max_segment();
            // Least live first: each rewritten page reclaims the most space there. Any
            // segment with garbage qualifies, so amplification converges to the target
            // (a "half dead" threshold would let it sit near 2.0).
            let mut candidates: Vec<(u64, u32, SegmentId)> = map
                .segments()
                .iter()
                .filter(|(&segment, usage)| {
                    segment != newest
                        && usage.live > 0
                        && usage.live < usage.slots
                        && !quarantined.contains(&segment)
                })
                .map(|(&segment, usage)| {
                    let live_per_million =
                        u64::from(usage.live) * 1_000_000 / u64::from(usage.slots);
                    (live_per_million, usage.live, segment)
                })
                .collect();
            candidates.sort();
            let mut chosen = Vec::new();
            let mut pages = 0usize;
            for (_, live, segment) in candidates.into_iter().take(COMPACTION_SEGMENTS_MAX) {
                if pages + live as usize > SEGMENT_SLOTS_MAX {
                    break;
                }
                pages += live as usize;
                chosen.push(segment);
            }
            chosen
        };
        if victims.is_empty() {
            return Ok(false);
        }
        let (mut images, expected) = match self.collect_live(&victims) {
            Ok(collected) => collected,
            Err(error) => {
                // A damaged segment would fail every step: set the victims aside (reads of
                // their damaged pages report the corruption) and let compaction go on.
                if error.kind() == tierdb_common::ErrorKind::Corruption {
                    tracing::error!(%error, "compaction victims set aside after finding damage");
                    self.compaction_quarantine.lock().extend(victims.iter().copied());
                }
                return Err(error);
            }
        };
        if images.is_empty() {
            // Every victim died meanwhile: the next checkpoint deletes it.
            return Ok(false);
        }
        let _flush = self.flush_lock.lock();
        let segment = self.write_segment(&mut images).inspect_err(|error| self.poison(error))?;
        let entries: Vec<(PageId, u32)> = images
            .iter()
            .enumerate()
            .map(|(slot, image)| (image.page_id(), usize_to_u32(slot)))
            .collect();
        self.publish_segment(segment, usize_to_u32(images.len()), &entries, Some(&expected))?;
        drop(_flush);
        self.stats.compactions.increment();
        self.stats.pages_compacted.add(usize_to_u64(images.len()));
        Ok(true)
    }

    /// Reads each victim segment once and returns its still-live page images.
    fn collect_live(&self, victims: &[SegmentId]) -> Result<(Vec<Box<Page>>, Vec<PageLocation>)> {
        let mut images = Vec::new();
        let mut expected = Vec::new();
        for &segment in victims {
            let name = segment_name(segment);
            let bytes = self.volume.get(&name)?;
            let object = || format!("{}/{name}", self.volume.describe());
            // Only live images must be intact: damage in a dead slot is garbage we are about
            // to delete, not a reason to stop compacting.
            let slots = decode_segment_index(segment, &bytes)
                .map_err(|detail| StorageError::corrupt_file(object(), detail))?;
            let map = self.map.read();
            for (slot, entry) in slots.iter().enumerate() {
                let location = PageLocation { segment, slot: usize_to_u32(slot) };
                if map.get(entry.page_id) != Some(location) {
                    continue;
                }
                let start = usize::try_from(slot_offset(location.slot)).expect("fits");
                let mut image = Page::new_boxed();
                image
                    .as_bytes_mut()
                    .copy_from_slice(&bytes[start..start + tierdb_common::PAGE_SIZE]);
                image.verify_version(entry.page_id, segment).map_err(|reason| {
                    StorageError::CorruptPage {
                        page_id: entry.page_id,
                        version: segment,
                        location: format!("{} slot={slot}", object()),
                        reason,
                    }
                })?;
                images.push(image);
                expected.push(location);
            }
        }
        Ok((images, expected))
    }
}

/// The background writer: keeps dirty pages below their limit, checkpoints on time or WAL
/// volume, compacts, and releases frames above the pool's target.
pub(crate) fn background_loop(inner: &StoreInner) {
    let mut horizon_checked_at: Option<std::time::Instant> = None;
    let mut out_of_space = false;
    while !inner.shutdown.load(Ordering::Acquire) {
        {
            let (flag, condvar) = &inner.wake;
            let mut woken = flag.lock();
            if !*woken {
                condvar.wait_for(&mut woken, WRITER_TICK);
            }
            *woken = false;
        }
        if inner.shutdown.load(Ordering::Acquire) {
            return;
        }
        match background_step(inner, &mut horizon_checked_at) {
            Ok(()) => {
                if std::mem::take(&mut out_of_space) {
                    tracing::info!("background writer: writing again, space was freed");
                }
            }
            Err(StorageError::Poisoned { .. }) => return,
            Err(error) if error.is_disk_full() => {
                // The step stopped at a segment that did not fit; a checkpoint needs only a
                // manifest and map chunks, and deletes the segments that earlier flushes
                // emptied and the log files before the redo point: space for the next try.
                if let Err(error) = inner.checkpoint() {
                    tracing::debug!(%error, "checkpoint while out of space failed");
                }
                // Said once, then retried every OUT_OF_SPACE_RETRY until space is freed.
                if !std::mem::replace(&mut out_of_space, true) {
                    tracing::warn!(%error, "background writer: out of space, retrying until space is freed");
                } else {
                    tracing::debug!(%error, "background writer: still out of space");
                }
                std::thread::sleep(OUT_OF_SPACE_RETRY);
            }
            Err(error) => {
                tracing::warn!(%error, "background writer step failed");
                std::thread::sleep(WRITER_TICK);
            }
        }
    }
}

fn background_step(
    inner: &StoreInner,
    horizon_checked_at: &mut Option<std::time::Instant>,
) -> Result<()> {
    if inner.wal.take_space_wanted() {
        inner.give_log_space_back()?;
    }
    if inner.segments_full.load(Ordering::Acquire) {
        // Changes wait for this: try a segment now rather than when the dirty limit asks.
        if inner.dirty_frames.load(Ordering::Acquire) == 0 {
            inner.segments_full.store(false, Ordering::Release);
        } else {
            inner.flush_some(SEGMENT_SLOTS_MAX)?;
        }
    }
    let target = inner.pool.target_frames();
    clean_ahead_of_hand(inner, target)?;
    // Pages dirty for long hold the redo point, and so the WAL, back: write the ones older
    // than the checkpoint WAL budget so that WAL and recovery time stay bounded.
    // Finding the oldest dirty page visits every frame, so it runs at most once per
    // HORIZON_CHECK_INTERVAL rather than every tick: the budget is a WAL volume, far more
    // than one interval of writing.
    if horizon_checked_at.is_none_or(|at| at.elapsed() >= HORIZON_CHECK_INTERVAL) {
        *horizon_checked_at = Some(std::time::Instant::now());
        let appended = inner.wal.appended_lsn();
        let horizon = Lsn(appended.0.saturating_sub(inner.config.checkpoint_wal_bytes));
        inner.flush_older_than(horizon)?;
    }
    if inner.pool.allocated_frames() > target {
        inner.flush_some(SEGMENT_SLOTS_MAX)?;
        inner.pool.release_excess(&|page_id, version, image| inner.admit(page_id, version, image));
    }
    // Dead segments are deleted by checkpoints: checkpoint early when they hold space
    // amplification above its target.
    let dead_segments_pending = {
        let map = inner.map.read();
        #[allow(clippy::cast_precision_loss)]
        let total = map.total_slots() as f64 / map.live_pages().max(1) as f64;
        total > inner.config.space_amplification_max.max(map.referenced_amplification()) + 0.1
    };
    let (due, timed, previous_start) = {
        let state = inner.checkpoint_state.lock();
        let wal_bytes = inner.wal.stats.bytes.get() - state.wal_bytes_at_last;
        let timed = state.last_at.is_none_or(|at| at.elapsed() >= inner.config.checkpoint_interval);
        let due = dead_segments_pending || wal_bytes >= inner.config.checkpoint_wal_bytes || timed;
        (due, timed, state.appended_at_last)
    };
    if timed {
        // As PostgreSQL's checkpoint writes the buffers dirty at its start: pages dirty since
        // before the previous checkpoint are written, so that an idle store's log shrinks to
        // the current file instead of the whole WAL budget (checkpoint_wal_bytes).
        inner.flush_older_than(previous_start)?;
    }
    if due {
        inner.checkpoint()?;
    }
    inner.compact_step()?;
    if let Err(error) = inner.wal.prepare_spare() {
        // Only an optimisation: the next file is then created when needed and appended to.
        tracing::warn!(%error, "preparing the next wal file failed");
    }
    Ok(())
}

/// Writes the dirty frames the CLOCK hand will evict next until enough frames ahead of it are
/// reusable (`StoreConfig::clean_ahead_fraction`). Only frames with usage count 0: a hot page
/// is written by the checkpoint's flushes (pages older than the WAL budget or than the
/// previous checkpoint), about once per checkpoint, not whenever the pool is busy. Writing
/// any dirty frame above a dirty limit wrote hot pages over and over: under sysbench over 4x
/// the pool, nine page writes per eviction (docs/BENCHMARKS.md).
fn clean_ahead_of_hand(inner: &StoreInner, target_frames: usize) -> Result<()> {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let reusable_min = ((target_frames as f64) * inner.config.clean_ahead_fraction) as usize;
    // Bounded: one pass of the hand's worth of segments.
    let rounds_max = target_frames / SEGMENT_SLOTS_MAX + 1;
    for _ in 0..rounds_max {
        if inner.shutdown.load(Ordering::Acquire) || inner.flush_ahead_of_hand(reusable_min)? == 0 {
            break;
        }
    }
    Ok(())
}
