//! The best-first search of one layer as a resumable state, and queries: a `Scan` returns
//! the `ef_search` nearest entries first and can continue past them (for iterative scans
//! that must fill a LIMIT after filtering), batch by batch.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use tierdb_common::PageId;

use super::search::{Candidate, Distances, PageSet, VectorCache};
use super::{read_meta, Distance, Hnsw, HnswError, Result, SearchResult};

/// Most entries a layer search reserves in its visited set up front (it grows past it).
const VISITED_RESERVE_MAX: usize = 1 << 16;

/// Frontier candidates whose pages a layer search asks the store to load ahead
/// (`PageStore::read_ahead`) before it expands the nearest one. Larger than memory, each
/// expansion is one synchronous page read (about 124 us from the tier, over 1 ms from a
/// network volume); with the next candidates loading meanwhile on the read-ahead workers
/// (4 of them, `READAHEAD_WORKERS`), the reads of the coming hops overlap the current one.
/// The best-first order is not known ahead (the expansion adds nearer candidates), so a
/// deeper look-ahead reads more pages the search never expands; 4 matches the workers and
/// was measured in docs/BENCHMARKS.md (issue 14, read-ahead). In DRAM it costs a few heap
/// operations per expansion and one residency check per page, never a read.
const READ_AHEAD_CANDIDATES: usize = 4;

/// A layer search that can be resumed. Every node it has evaluated is in `pending` until
/// taken, and in `frontier` until expanded. `advance(ef)` expands the nearest unexpanded
/// node until `ef` pending nodes are nearer than all unexpanded ones: from fresh entries
/// this is HNSW's SEARCH-LAYER; after `take_nearest` it continues where it stopped
/// (pgvector's relaxed-order iterative scan).
pub(super) struct LayerScan {
    layer: usize,
    distances: Distances,
    visited: PageSet,
    frontier: BinaryHeap<Reverse<Candidate>>,
    /// Every evaluated node not yet taken, nearest on top.
    pending: BinaryHeap<Reverse<Candidate>>,
    /// During `advance(ef)`: the `ef` nearest pending nodes, farthest on top. The search
    /// stops once the nearest unexpanded node is farther than all of them (a heap, so the
    /// check is a peek rather than a walk over `ef` pending nodes per expansion).
    best: BinaryHeap<Candidate>,
    /// The neighbours of the node being expanded (kept for its allocation).
    found: Vec<Candidate>,
    /// Pages already asked for by read-ahead: each is asked for once per scan.
    requested: PageSet,
    /// The candidates and pages of one read-ahead request (kept for their allocation).
    ahead: Vec<Candidate>,
    ahead_pages: Vec<PageId>,
}

/// Keeps `candidate` in `best` if it is among the `ef` nearest seen.
fn keep_best(best: &mut BinaryHeap<Candidate>, candidate: Candidate, ef: usize) {
    if best.len() < ef {
        best.push(candidate);
    } else if let Some(mut farthest) = best.peek_mut() {
        if candidate < *farthest {
            *farthest = candidate;
        }
    }
}

impl LayerScan {
    /// `ef` sizes the visited set: an expansion evaluates up to a list's capacity.
    pub(super) fn new(
        entries: &[Candidate],
        (layer, ef): (usize, usize),
        distances: Distances,
        capacity: usize,
    ) -> LayerScan {
        assert!(!entries.is_empty(), "a layer search needs an entry");
        let mut visited = PageSet::default();
        visited.reserve(ef.saturating_mul(capacity).min(VISITED_RESERVE_MAX));
        visited.extend(entries.iter().map(|entry| entry.1));
        LayerScan {
            layer,
            distances,
            visited,
            frontier: entries.iter().copied().map(Reverse).collect(),
            pending: entries.iter().copied().map(Reverse).collect(),
            best: BinaryHeap::new(),
            found: Vec::new(),
            requested: PageSet::default(),
            ahead: Vec::with_capacity(READ_AHEAD_CANDIDATES),
            ahead_pages: Vec::with_capacity(READ_AHEAD_CANDIDATES),
        }
    }

    /// Asks the store to load the pages of the next `READ_AHEAD_CANDIDATES` frontier nodes
    /// the search would expand (those not farther than the `ef` best), not asked for yet.
    fn read_ahead(&mut self, index: &Hnsw, ef: usize) {
        let farthest = if self.best.len() >= ef { self.best.peek().copied() } else { None };
        self.ahead.clear();
        while self.ahead.len() < READ_AHEAD_CANDIDATES {
            let Some(&Reverse(candidate)) = self.frontier.peek() else { break };
            if farthest.is_some_and(|farthest| farthest < candidate) {
                break;
            }
            self.frontier.pop();
            self.ahead.push(candidate);
        }
        self.ahead_pages.clear();
        for &candidate in &self.ahead {
            self.frontier.push(Reverse(candidate));
            if self.requested.insert(candidate.1) {
                self.ahead_pages.push(candidate.1);
            }
        }
        if !self.ahead_pages.is_empty() {
            index.store.read_ahead(&self.ahead_pages);
        }
    }

    pub(super) fn advance(
        &mut self,
        index: &Hnsw,
        query: &[f32],
        ef: usize,
        cache: &mut VectorCache,
    ) -> Result<()> {
        assert!(ef > 0, "a layer search needs ef > 0");
        self.best.clear();
        for &Reverse(candidate) in &self.pending {
            keep_best(&mut self.best, candidate, ef);
        }
        while let Some(&Reverse(nearest)) = self.frontier.peek() {
            if self.best.len() >= ef && self.best.peek().is_some_and(|farthest| *farthest < nearest)
            {
                break;
            }
            self.frontier.pop();
            self.read_ahead(index, ef);
            self.found.clear();
            index.expand(
                query,
                (nearest.1, self.layer),
                self.distances,
                &mut self.visited,
                cache,
                &mut self.found,
            )?;
            for &found in &self.found {
                self.frontier.push(Reverse(found));
                self.pending.push(Reverse(found));
                keep_best(&mut self.best, found, ef);
            }
        }
        Ok(())
    }

    /// The `ef` nearest pending nodes, nearest first (right after `advance(ef)`).
    pub(super) fn nearest(&self, ef: usize) -> Vec<Candidate> {
        let mut nearest = self.best.clone().into_sorted_vec();
        nearest.truncate(ef);
        nearest
    }

    /// Removes and returns the `ef` nearest pending nodes, nearest first.
    fn take_nearest(&mut self, ef: usize) -> Vec<Candidate> {
        self.best.clear();
        (0..ef).map_while(|_| self.pending.pop().map(|Reverse(candidate)| candidate)).collect()
    }

    /// Returns a taken node to the pending queue (with its exact distance).
    fn put_back(&mut self, candidate: Candidate) {
        self.pending.push(Reverse(candidate));
    }

    /// The approximate distance of the nearest pending node.
    fn nearest_pending(&self) -> Option<f64> {
        self.pending.peek().map(|Reverse((distance, _))| distance.0)
    }

    /// Nodes evaluated so far (what bounds a scan's memory).
    fn evaluated(&self) -> usize {
        self.visited.len()
    }
}

/// How a scan continues past its first batch: pgvector's `hnsw.iterative_scan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterativeScan {
    /// One batch: the `ef_search` nearest entries, no more.
    Off,
    /// Batch after batch; a later batch may hold an entry nearer than the end of an
    /// earlier one.
    RelaxedOrder,
    /// Batch after batch, and an entry nearer than one already returned is dropped, so the
    /// results are in exact distance order (pgvector's rule, applied before visibility).
    StrictOrder,
}

/// Bytes of scan state per evaluated node: its visited-set entry (a page id in a hash set
/// with its control byte and load-factor slack) and its candidate in the pending heap.
const EVALUATED_NODE_BYTES: usize = 16 + std::mem::size_of::<Candidate>();
/// Bytes per page asked for by read-ahead (a page id in a hash set, as `visited`).
const REQUESTED_PAGE_BYTES: usize = 16;
/// Bytes per unexpanded candidate in the frontier heap.
const FRONTIER_CANDIDATE_BYTES: usize = std::mem::size_of::<Candidate>();
/// Bytes per expanded node's kept exact result, besides its row key.
const EXPANDED_RESULT_BYTES: usize = 16 + std::mem::size_of::<SearchResult>();

/// pgvector's default of `hnsw.max_scan_tuples`.
pub const MAX_SCAN_TUPLES_DEFAULT: usize = 20_000;
/// pgvector's bounds of `hnsw.max_scan_tuples` (an int4 setting).
pub const MAX_SCAN_TUPLES_MIN: usize = 1;
pub const MAX_SCAN_TUPLES_MAX: usize = i32::MAX as usize;

/// What a scan returns and how far it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanOptions {
    /// Candidates of the layer-0 search and entries per batch.
    pub ef_search: usize,
    pub iterative: IterativeScan,
    /// Once this many nodes have been evaluated, the scan expands no further and returns
    /// the entries it has already found, nearest first (pgvector's `hnsw.max_scan_tuples`).
    pub max_scan_tuples: usize,
    /// Likewise once the scan's state (`ScanState::memory_bytes`) exceeds this (pgvector's
    /// `work_mem` × `hnsw.scan_mem_multiplier`).
    pub memory_bytes_max: usize,
}

impl ScanOptions {
    /// A relaxed-order scan that goes on until the reachable graph is exhausted.
    pub fn unbounded(ef_search: usize) -> ScanOptions {
        ScanOptions {
            ef_search,
            iterative: IterativeScan::RelaxedOrder,
            max_scan_tuples: usize::MAX,
            memory_bytes_max: usize::MAX,
        }
    }
}

/// A query's results, batch by batch: each batch is the `ef_search` nearest entries not yet
/// returned, in exact distance order. The first batch is what `Hnsw::search` returns; later
/// ones follow `ScanOptions::iterative` (pgvector's `hnsw.iterative_scan`).
pub struct Scan<'index> {
    index: &'index Hnsw,
    state: ScanState,
    ready: VecDeque<SearchResult>,
}

/// A `Scan` without the borrow of its index: for a caller that keeps the index behind its
/// own handle (the engine's scan holds an `Arc` of it) and passes it to each call.
pub struct ScanState {
    query: Vec<f32>,
    options: ScanOptions,
    /// `None` for an empty index.
    layer: Option<LayerScan>,
    cache: VectorCache,
    /// Batches taken from the layer search so far.
    batches: u64,
    /// Strict order: the distance of the farthest entry returned so far.
    returned_distance_max: f64,
    /// Strict order: re-ranked entries held back for the next batch, because a pending
    /// node's approximate distance says a nearer entry may still come.
    held: Vec<SearchResult>,
    /// The current batch's candidates not yet re-ranked, each with a lower bound of its
    /// exact distance (`Hnsw::lower_bounds`), the lowest bound last.
    unranked: Vec<(f64, Candidate)>,
    /// The current batch's re-ranked entries not yet returned, nearest first.
    ranked: Vec<SearchResult>,
}

/// Candidates whose pages one step of a lazy re-rank reads together (`emit_certain`): a
/// LIMIT of 10 takes about 10 entries, and the store has 4 read-ahead workers.
const RERANK_STEP_CANDIDATES: usize = 8;

impl ScanState {
    /// The next batch of `index` (the index this state was started on; empty once the
    /// graph reachable from the entry point is exhausted, or after the first batch when
    /// the scan is not iterative).
    pub fn next_batch(&mut self, index: &Hnsw) -> Result<Vec<SearchResult>> {
        let mut batch = self.next_entries(index)?;
        while !self.unranked.is_empty() || !self.ranked.is_empty() {
            batch.extend(self.next_entries(index)?);
        }
        Ok(batch)
    }

    /// The next entries of `next_batch`'s order, as few as can be returned in it: the
    /// batch's candidates are re-ranked a step at a time (`emit_certain`), so a caller that
    /// stops after a LIMIT reads only the pages of the entries it needs (the engine's
    /// scan). Empty once the scan is exhausted.
    pub fn next_entries(&mut self, index: &Hnsw) -> Result<Vec<SearchResult>> {
        loop {
            let mut batch = self.next_raw_batch(index)?;
            if batch.is_empty() || self.options.iterative != IterativeScan::StrictOrder {
                return Ok(batch);
            }
            let returned = self.returned_distance_max;
            batch.retain(|result| result.distance >= returned);
            if let Some(last) = batch.last() {
                assert!(last.distance >= self.returned_distance_max, "strict order");
                self.returned_distance_max = last.distance;
                return Ok(batch);
            }
        }
    }

    /// The next entries of the current batch (starting the next batch when it is done)
    /// in exact distance order. A batch is the next `ef_search` pending entries: the
    /// layer search is continued first unless the scan has evaluated `max_scan_tuples`
    /// nodes (the first batch always searches). Its entries are re-ranked lazily
    /// (`emit_certain`), so a caller that stops after a LIMIT reads only the pages it needs.
    fn next_raw_batch(&mut self, index: &Hnsw) -> Result<Vec<SearchResult>> {
        let strict = self.options.iterative == IterativeScan::StrictOrder;
        loop {
            if self.unranked.is_empty() && self.ranked.is_empty() && !self.start_batch(index)? {
                // No batch is left: entries held back behind a pending node (which a purge
                // may have freed since) are the last ones.
                let mut last = std::mem::take(&mut self.held);
                last.sort_by(|left, right| left.distance.total_cmp(&right.distance));
                return Ok(last);
            }
            let mut results = self.emit_certain(index)?;
            // Strict order holds entries back behind the nearest pending node once per
            // batch, so the whole batch is ranked first: holding back at each lazy step
            // would force one more entry out past that node each time and drain the batch
            // before the search goes on, losing the nearer entries it finds next.
            while strict && !(self.unranked.is_empty() && self.ranked.is_empty()) {
                results.append(&mut self.emit_certain(index)?);
            }
            if results.is_empty() {
                // Every candidate left was freed by a purge since the search found it.
                continue;
            }
            if strict {
                results.append(&mut self.held);
                results.sort_by(|left, right| left.distance.total_cmp(&right.distance));
                self.hold_back(&mut results);
            }
            return Ok(results);
        }
    }

    /// Takes the next batch's candidates from the layer search; false when there is none.
    /// Under sign codes the search keeps more candidates (`CodeKind::candidates`) and
    /// re-ranks them all at once; the nearest `ef_search` are the batch and the others go
    /// back to the pending queue with their exact distances. Otherwise an expanded node's
    /// exact result is ready and the others wait in `unranked` with their lower bounds.
    fn start_batch(&mut self, index: &Hnsw) -> Result<bool> {
        let stopped = self.batches > 0 && self.options.iterative == IterativeScan::Off;
        if self.layer.is_none() || stopped {
            return Ok(false);
        }
        let ef_search = self.options.ef_search;
        let candidates = index.layout.codes.candidates(ef_search);
        let within_bounds = self.evaluated() < self.options.max_scan_tuples
            && self.memory_bytes() <= self.options.memory_bytes_max;
        let layer = self.layer.as_mut().expect("checked above");
        if self.batches == 0 || within_bounds {
            layer.advance(index, &self.query, candidates, &mut self.cache)?;
        }
        self.batches += 1;
        let nearest = layer.take_nearest(candidates);
        if nearest.is_empty() {
            return Ok(false);
        }
        if candidates > ef_search {
            let mut ranked = self.rerank(index, &nearest)?;
            ranked.sort_by(|left, right| left.0.distance.total_cmp(&right.0.distance));
            let layer = self.layer.as_mut().expect("checked above");
            for (result, page_id) in ranked.drain(ef_search.min(ranked.len())..) {
                layer.put_back((Distance(result.distance), page_id));
                self.cache.expanded.insert(page_id, result);
            }
            self.ranked = ranked.into_iter().map(|(result, _)| result).collect();
            return Ok(true);
        }
        let bounds = index.lower_bounds(&self.query, &nearest);
        for (bound, candidate) in bounds.into_iter().zip(nearest) {
            match self.cache.expanded.remove(&candidate.1) {
                Some(result) => self.ranked.push(result),
                None => self.unranked.push((bound, candidate)),
            }
        }
        self.ranked.sort_by(|left, right| left.distance.total_cmp(&right.distance));
        self.unranked.sort_by(|left, right| right.0.total_cmp(&left.0));
        Ok(true)
    }

    /// The re-ranked entries of the batch that no candidate left can precede (their exact
    /// distance is at most every unranked candidate's lower bound), re-ranking the
    /// candidates of lowest bound `RERANK_STEP_CANDIDATES` at a time (their pages read
    /// together) until there is one. Each call's entries continue the batch's exact order.
    fn emit_certain(&mut self, index: &Hnsw) -> Result<Vec<SearchResult>> {
        loop {
            let bound = self.unranked.last().map_or(f64::INFINITY, |&(bound, _)| bound);
            let certain = self.ranked.partition_point(|result| result.distance <= bound);
            if certain > 0 || self.unranked.is_empty() {
                return Ok(self.ranked.drain(..certain).collect());
            }
            let step_start = self.unranked.len().saturating_sub(RERANK_STEP_CANDIDATES);
            let step: Vec<Candidate> =
                self.unranked.drain(step_start..).rev().map(|(_, candidate)| candidate).collect();
            let ranked = self.rerank(index, &step)?;
            self.ranked.extend(ranked.into_iter().map(|(result, _)| result));
            self.ranked.sort_by(|left, right| left.distance.total_cmp(&right.distance));
        }
    }

    /// The exact results of `nearest` with their pages: an expanded node's was taken when
    /// its page was read; the others' pages are read now, all asked for at once.
    fn rerank(
        &mut self,
        index: &Hnsw,
        nearest: &[Candidate],
    ) -> Result<Vec<(SearchResult, PageId)>> {
        let unread: Vec<PageId> = nearest
            .iter()
            .map(|&(_, page_id)| page_id)
            .filter(|page_id| !self.cache.expanded.contains_key(page_id))
            .collect();
        if unread.len() > 1 {
            index.store.read_ahead(&unread);
        }
        let mut ranked = Vec::with_capacity(nearest.len());
        for &(_, page_id) in nearest {
            if let Some(result) = self.cache.expanded.remove(&page_id) {
                ranked.push((result, page_id));
                continue;
            }
            let exact = &mut self.cache.exact;
            let result = index.read_node(page_id, |node| {
                index.node_vector_into(page_id, node, exact)?;
                index.copy_node(page_id, node, exact);
                // Freed by a purge since the search evaluated it: no entry any more.
                Ok((!node.is_freed()).then(|| SearchResult {
                    distance: index.metric.distance(&self.query, exact),
                    key: node.key().to_vec(),
                }))
            })?;
            ranked.extend(result.map(|result| (result, page_id)));
        }
        Ok(ranked)
    }

    /// Strict order: the pending queue is ordered by approximate (code) distances, so a
    /// re-ranked batch may end with entries farther than the next pending node, whose
    /// exact distance may be smaller; strict order would then drop that node. Entries
    /// beyond the next pending node's distance wait for the next batch (at least one entry
    /// is returned, so the scan advances). pgvector's distances are exact and need none.
    fn hold_back(&mut self, results: &mut Vec<SearchResult>) {
        assert!(self.held.is_empty(), "held entries were merged into this batch");
        let Some(next) = self.layer.as_ref().and_then(LayerScan::nearest_pending) else {
            return;
        };
        let kept = results.partition_point(|result| result.distance <= next).max(1);
        if kept < results.len() {
            self.held = results.split_off(kept);
        }
    }

    /// Nodes whose distance the scan has computed so far (what `max_scan_tuples` bounds).
    pub fn evaluated(&self) -> usize {
        self.layer.as_ref().map_or(0, LayerScan::evaluated)
    }

    /// An estimate of the scan's memory: its visited set, heaps and kept exact results
    /// (what `ScanOptions::memory_bytes_max` bounds).
    pub fn memory_bytes(&self) -> usize {
        let Some(layer) = self.layer.as_ref() else { return 0 };
        let keys: usize = self.cache.expanded.values().map(|result| result.key.len()).sum();
        layer.evaluated() * EVALUATED_NODE_BYTES
            + layer.requested.len() * REQUESTED_PAGE_BYTES
            + layer.frontier.len() * FRONTIER_CANDIDATE_BYTES
            + (self.cache.expanded.len() + self.held.len() + self.ranked.len())
                * EXPANDED_RESULT_BYTES
            + self.unranked.len() * FRONTIER_CANDIDATE_BYTES
            + keys
    }
}

impl Scan<'_> {
    /// The next batch (empty once the graph reachable from the entry point is exhausted).
    pub fn next_batch(&mut self) -> Result<Vec<SearchResult>> {
        self.state.next_batch(self.index)
    }

    /// Nodes whose distance the scan has computed so far.
    pub fn evaluated(&self) -> usize {
        self.state.evaluated()
    }

    /// An estimate of the scan's memory (`ScanState::memory_bytes`).
    pub fn memory_bytes(&self) -> usize {
        self.state.memory_bytes()
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<SearchResult>;

    fn next(&mut self) -> Option<Result<SearchResult>> {
        if self.ready.is_empty() {
            match self.state.next_entries(self.index) {
                Ok(batch) => self.ready.extend(batch),
                Err(error) => return Some(Err(error)),
            }
        }
        self.ready.pop_front().map(Ok)
    }
}

impl Hnsw {
    /// Best-first search of `layer` from `entries`: the `ef` nearest nodes found, nearest
    /// first (HNSW's SEARCH-LAYER).
    pub(super) fn search_layer(
        &self,
        query: &[f32],
        entries: &[Candidate],
        ef: usize,
        layer: usize,
        distances: Distances,
        cache: &mut VectorCache,
    ) -> Result<Vec<Candidate>> {
        let mut scan = LayerScan::new(entries, (layer, ef), distances, self.layout.capacity(layer));
        scan.advance(self, query, ef, cache)?;
        Ok(scan.nearest(ef))
    }

    /// Greedy descent from `entry` (on `top_level`) to the nearest node on `layer`.
    pub(super) fn descend(
        &self,
        query: &[f32],
        entry: PageId,
        top_level: u8,
        layer: usize,
        cache: &mut VectorCache,
    ) -> Result<Vec<Candidate>> {
        let mut nearest = vec![(self.exact_distance(query, entry, cache)?, entry)];
        for upper in (layer + 1..=usize::from(top_level)).rev() {
            nearest = self.search_layer(query, &nearest, 1, upper, Distances::Exact, cache)?;
        }
        Ok(nearest)
    }

    /// Starts a query: greedy descent through the upper layers, then a resumable search of
    /// layer 0 with `ef_search` candidates (distances from codes, exact re-ranking).
    /// The scan goes on in relaxed order until the reachable graph is exhausted.
    pub fn scan(&self, query: &[f32], ef_search: usize) -> Result<Scan<'_>> {
        self.scan_with(query, ScanOptions::unbounded(ef_search))
    }

    /// `scan` with pgvector's iterative-scan options.
    pub fn scan_with(&self, query: &[f32], options: ScanOptions) -> Result<Scan<'_>> {
        Ok(Scan { index: self, state: self.scan_state(query, options)?, ready: VecDeque::new() })
    }

    /// `scan_with` without the borrow: pass this index to each `ScanState::next_batch`.
    pub fn scan_state(&self, query: &[f32], options: ScanOptions) -> Result<ScanState> {
        self.check_vector(query)?;
        let ef_search = options.ef_search;
        if ef_search == 0 || options.max_scan_tuples == 0 {
            return Err(HnswError::InvalidArgument(
                "ef_search and max_scan_tuples must be positive".into(),
            ));
        }
        let meta = read_meta(&self.store, self.meta)?;
        let mut cache = VectorCache::default();
        let layer = match meta.entry {
            Some(entry) => {
                let nearest = self.descend(query, entry, meta.top_level, 0, &mut cache)?;
                let capacity = self.layout.capacity(0);
                Some(LayerScan::new(&nearest, (0, ef_search), Distances::Codes, capacity))
            }
            None => None,
        };
        Ok(ScanState {
            query: query.to_vec(),
            options,
            layer,
            cache,
            batches: 0,
            returned_distance_max: f64::NEG_INFINITY,
            held: Vec::new(),
            unranked: Vec::new(),
            ranked: Vec::new(),
        })
    }

    /// The `ef_search` entries nearest to `query` as the graph finds them, in exact
    /// distance order (nearest first): the first batch of `scan`. An empty index gives none.
    pub fn search(&self, query: &[f32], ef_search: usize) -> Result<Vec<SearchResult>> {
        self.scan(query, ef_search)?.next_batch()
    }
}
