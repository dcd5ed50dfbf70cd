//! Building a graph in memory: CREATE INDEX on a populated table (design 014, "Build").
//!
//! An insert per row costs a WAL record per node, re-reads of the neighbours' pages and,
//! for every full list it prunes, the distances from the list's owner to its links again
//! (measured at 1.1x to 2.4x pgvector's build time). pgvector builds its graph in
//! maintenance_work_mem and writes the pages once; so does this, in three steps:
//!
//! 1. levels drawn for every entry with the writer's generator (`draw_level`);
//! 2. the entries linked in DRAM by up to `BUILD_THREADS_MAX` threads, each taking the next
//!    entry and running `graph.rs`'s algorithm on it (the same layer search, neighbour
//!    heuristic, forced in-link and adoption), a lock per node guarding its lists; each link
//!    keeps its distance to the list's owner, so pruning a full list computes only the
//!    distances among its candidates;
//! 3. each node's page written once, `NODES_PER_MTR` nodes per mini-transaction, on page
//!    ids reserved up front (a link names a page written later), the meta page last.
//!
//! Everything is packed (`BuildEntries`, `Lists`): more entries fit maintenance_work_mem,
//! and the entries past it are inserted one by one, at several times the cost.
//! A crash before the meta page is written leaves pages that nothing names (the catalog
//! records the index only after the build), as a crash during a build of inserts does.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Mutex, RwLock};
use tierdb_common::{Lsn, PageId};

use super::graph::draw_level;
use super::layout::{Layout, Meta, META_PAGE_TYPE, NODE_PAGE_TYPE, VECTOR_PAGE_TYPE};
use super::{read_meta, Distance, Hnsw, HnswError, Metric, Result};

/// Threads linking a build's nodes at most (pgvector's default is 2 workers and the leader).
pub const BUILD_THREADS_MAX: usize = 8;
/// Entries below which a build runs on one thread: it takes well under a second, and one
/// thread builds the same graph every time (the interleaving of several changes it), which
/// exact answers from an index on a small table, as tests check them, rely on.
pub const PARALLEL_BUILD_ENTRIES_MIN: usize = 10_000;
/// Nodes written per mini-transaction: a WAL record of at most this many pages.
const NODES_PER_MTR: usize = 64;
/// What one node costs the build besides its vector, key and layer-0 list: the key's end,
/// the first slot of its lists, its level, its lock, a visit stamp per thread (two) and
/// its upper layers' share (one node in m has them: a count and m links each).
const NODE_OVERHEAD_BYTES: usize = 40;

/// A node's position in the build's entries.
type NodeIndex = u32;
/// A link: the neighbour and its distance to the list's owner.
type Link = (Distance, NodeIndex);

/// The entries of a build, packed end to end: a vector and a key per entry would cost two
/// allocations and their headers, a tenth of an entry at 128 dimensions.
pub struct BuildEntries {
    dimensions: usize,
    metric: Metric,
    vectors: Vec<f32>,
    keys: Vec<u8>,
    /// Where each entry's key ends in `keys`.
    key_ends: Vec<usize>,
}

impl BuildEntries {
    pub fn len(&self) -> usize {
        self.key_ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.key_ends.is_empty()
    }

    /// Adds an entry; false, adding nothing, for a vector with no distance under the
    /// metric (a zero vector under cosine), which `insert` does not index either.
    pub fn push(&mut self, vector: &[f32], key: &[u8]) -> Result<bool> {
        super::check_entry(self.dimensions, vector, key)?;
        if NodeIndex::try_from(self.len() + 1).is_err() {
            return Err(HnswError::InvalidArgument("too many entries for one build".into()));
        }
        if !self.metric.indexable(vector) {
            return Ok(false);
        }
        self.vectors.extend_from_slice(vector);
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        Ok(true)
    }

    fn vector(&self, node: usize) -> &[f32] {
        &self.vectors[node * self.dimensions..(node + 1) * self.dimensions]
    }

    fn key(&self, node: usize) -> &[u8] {
        let start = if node == 0 { 0 } else { self.key_ends[node - 1] };
        &self.keys[start..self.key_ends[node]]
    }
}

impl Hnsw {
    /// An empty set of entries for `build`.
    pub fn build_entries(&self) -> BuildEntries {
        BuildEntries {
            dimensions: self.layout.dimensions,
            metric: self.metric,
            vectors: Vec::new(),
            keys: Vec::new(),
            key_ends: Vec::new(),
        }
    }

    /// Bytes an in-memory build needs per entry with a key of `key_bytes`: what a caller
    /// counts against maintenance_work_mem.
    pub fn build_entry_bytes(&self, key_bytes: usize) -> usize {
        let layer_zero = (1 + self.layout.capacity(0)) * std::mem::size_of::<AtomicU64>();
        4 * self.layout.dimensions + key_bytes + layer_zero + NODE_OVERHEAD_BYTES
    }

    /// Builds the graph of `entries` in memory and writes its pages; the index must be
    /// empty. Returns the LSN of the last WAL record. One thread per core (at most
    /// `BUILD_THREADS_MAX`), one below `PARALLEL_BUILD_ENTRIES_MIN` entries.
    pub fn build(&self, entries: BuildEntries) -> Result<Lsn> {
        let threads = if entries.len() < PARALLEL_BUILD_ENTRIES_MIN { 1 } else { build_threads() };
        self.build_on(entries, threads)
    }

    /// `build` on `threads` threads (tests run the parallel build on small sets with it).
    pub fn build_on(&self, entries: BuildEntries, threads: usize) -> Result<Lsn> {
        assert!((1..=BUILD_THREADS_MAX).contains(&threads), "threads within the bound");
        assert!(
            entries.dimensions == self.layout.dimensions && entries.metric == self.metric,
            "entries made by this index's build_entries"
        );
        let mut writer = self.writer.lock();
        let meta = read_meta(&self.store, self.meta)?;
        assert!(meta.entry.is_none() && meta.node_count == 0, "a build starts from an empty index");
        if entries.is_empty() {
            return Ok(self.store.durable_lsn());
        }
        let levels = (0..entries.len())
            .map(|_| draw_level(&mut writer.random, self.layout.m, self.layout.level_cap))
            .collect();
        let graph = MemoryGraph::new(self, &entries, levels);
        graph.link_all(threads);
        self.write_graph(&graph, meta)
    }

    /// Writes every node's page and then the meta page.
    fn write_graph(&self, graph: &MemoryGraph<'_>, meta: Meta) -> Result<Lsn> {
        let count = graph.entries.len();
        // Each node's page, then its vector pages (if any), side by side.
        let pages_per_node = 1 + self.layout.vector_pages;
        let pages = u64::try_from(count * pages_per_node).expect("count fits u64");
        let first = self.store.reserve_page_ids(pages);
        let stride = u64::try_from(pages_per_node).expect("a small count");
        let page_of = |node: NodeIndex| PageId(first.0 + u64::from(node) * stride);
        let mut last = Lsn::ZERO;
        let mut links = Vec::new();
        let nodes_per_mtr = (NODES_PER_MTR / pages_per_node).max(1);
        for start in (0..count).step_by(nodes_per_mtr) {
            let mut mtr = self.store.mtr();
            for node in start..count.min(start + nodes_per_mtr) {
                let node = NodeIndex::try_from(node).expect("checked by push");
                let slot = mtr.allocate_reserved(page_of(node), NODE_PAGE_TYPE)?;
                let vector = graph.entries.vector(index(node));
                let vector_pages: Vec<PageId> = (1..pages_per_node)
                    .map(|part| PageId(page_of(node).0 + u64::try_from(part).expect("small")))
                    .collect();
                for (part, &vector_page) in vector_pages.iter().enumerate() {
                    let vector_slot = mtr.allocate_reserved(vector_page, VECTOR_PAGE_TYPE)?;
                    let bytes = self.layout.encode_vector_page(page_of(node), part, vector);
                    mtr.write(vector_slot, 0, &bytes);
                }
                let lists: Vec<Vec<(PageId, &[f32])>> = (0..=usize::from(graph.level(node)))
                    .map(|layer| {
                        graph.lists.read(node, layer, &mut links);
                        let link = |&(_, neighbour): &Link| {
                            (page_of(neighbour), graph.entries.vector(index(neighbour)))
                        };
                        links.iter().map(link).collect()
                    })
                    .collect();
                let copied = lists[0].iter().map(|&(page_id, _)| page_id).collect();
                self.copy_built_node(page_of(node), vector, copied);
                let key = graph.entries.key(index(node));
                let bytes = self.layout.encode_node((vector, &vector_pages), key, &lists);
                mtr.write(slot, 0, &bytes);
            }
            last = mtr.commit()?;
        }
        let (entry, top_level) = graph.entry.read().expect("a non-empty build has an entry point");
        let fields = Meta {
            top_level,
            entry: Some(page_of(entry)),
            node_count: u64::try_from(count).expect("count fits u64"),
            ..meta
        };
        let mut mtr = self.store.mtr();
        let slot = mtr.latch(self.meta)?;
        assert!(mtr.page(slot).page_type() == META_PAGE_TYPE, "the meta page");
        mtr.write(slot, 0, &fields.encode());
        let lsn = mtr.commit()?;
        assert!(lsn >= last, "the meta page's record follows the nodes'");
        Ok(lsn)
    }
}

/// Threads for a build: the machine's cores, at most `BUILD_THREADS_MAX`.
fn build_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from).clamp(1, BUILD_THREADS_MAX)
}

fn index(node: NodeIndex) -> usize {
    usize::try_from(node).expect("a node index fits usize")
}

/// Every node's neighbour lists in one array of slots: per node, per layer up to its level,
/// a count slot and then `capacity(layer)` link slots, a link packed as its distance's f32
/// bits (high half) and the neighbour (low half). A node's lock orders every read and change
/// of its lists (so relaxed atomics suffice under it); no thread holds two.
struct Lists {
    layout: Layout,
    /// Each node's first slot.
    starts: Vec<usize>,
    slots: Vec<AtomicU64>,
    locks: Vec<Mutex<()>>,
}

impl Lists {
    fn new(levels: &[u8], layout: Layout) -> Lists {
        let mut starts = Vec::with_capacity(levels.len());
        let mut total = 0;
        for &level in levels {
            starts.push(total);
            total += Self::slots_below(layout, usize::from(level) + 1);
        }
        let slots = (0..total).map(|_| AtomicU64::new(0)).collect();
        let locks = (0..levels.len()).map(|_| Mutex::new(())).collect();
        Lists { layout, starts, slots, locks }
    }

    /// Slots of a node's lists on the layers below `layer`: a count slot and the links of each.
    fn slots_below(layout: Layout, layer: usize) -> usize {
        (0..layer).map(|below| 1 + layout.capacity(below)).sum()
    }

    fn capacity(&self, layer: usize) -> usize {
        self.layout.capacity(layer)
    }

    /// The count slot of `node`'s list on `layer`; its links follow it.
    fn start(&self, node: NodeIndex, layer: usize) -> usize {
        self.starts[index(node)] + Self::slots_below(self.layout, layer)
    }

    /// The links of `node` on `layer` into `out`, under the node's lock.
    fn read(&self, node: NodeIndex, layer: usize, out: &mut Vec<Link>) {
        let _lock = self.locks[index(node)].lock();
        self.read_locked(node, layer, out);
    }

    fn read_locked(&self, node: NodeIndex, layer: usize, out: &mut Vec<Link>) {
        let start = self.start(node, layer);
        let count = usize::try_from(self.slots[start].load(Ordering::Relaxed)).expect("count");
        out.clear();
        out.extend(self.slots[start + 1..=start + count].iter().map(|slot| {
            let packed = slot.load(Ordering::Relaxed);
            let distance = f32::from_bits(u32::try_from(packed >> 32).expect("high half"));
            (Distance(f64::from(distance)), u32::try_from(packed & 0xffff_ffff).expect("low half"))
        }));
    }

    /// Replaces the links of `node` on `layer` (the caller holds the node's lock).
    fn write_locked(&self, node: NodeIndex, layer: usize, links: &[Link]) {
        assert!(links.len() <= self.capacity(layer), "a list within its capacity");
        let start = self.start(node, layer);
        for (slot, &(distance, neighbour)) in self.slots[start + 1..].iter().zip(links) {
            let bits = u64::from(narrow(distance.0).to_bits());
            slot.store(bits << 32 | u64::from(neighbour), Ordering::Relaxed);
        }
        let count = u64::try_from(links.len()).expect("count fits u64");
        self.slots[start].store(count, Ordering::Relaxed);
    }
}

/// Asks the CPU to load `vector`'s cache lines. A layer search computes the distances to
/// an expanded node's neighbours one after another, each a random vector of a graph far
/// larger than the caches: loading them all first overlaps the misses (profiled: 72% of
/// the distance kernel's time was its first load waiting for memory).
#[inline]
fn prefetch(vector: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    for line in vector.chunks(CACHE_LINE_FLOATS) {
        // SAFETY: a prefetch is a hint that never faults, and the address is in a live slice.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast(),
            );
        }
    }
}

/// f32 values per 64-byte cache line.
const CACHE_LINE_FLOATS: usize = 16;

/// A distance kept in a list as f32 (half the bytes of f64): its rounding can only move a
/// tie in the neighbour heuristic, never a query's results, which use the pages' vectors.
#[allow(clippy::cast_possible_truncation)]
fn narrow(distance: f64) -> f32 {
    distance as f32
}

/// The graph being built.
struct MemoryGraph<'build> {
    metric: Metric,
    entries: &'build BuildEntries,
    levels: Vec<u8>,
    lists: Lists,
    /// The entry point and its level (None until the first node).
    entry: RwLock<Option<(NodeIndex, u8)>>,
    ef_construction: usize,
}

/// One thread's search state, reused across its inserts: a visit stamp per node (a new
/// stamp per layer search instead of clearing a set) and scratch lists.
struct Searcher {
    stamps: Vec<u32>,
    stamp: u32,
    links: Vec<Link>,
}

impl Searcher {
    fn new(nodes: usize) -> Searcher {
        Searcher { stamps: vec![0; nodes], stamp: 0, links: Vec::new() }
    }

    fn next_stamp(&mut self) {
        if self.stamp == u32::MAX {
            self.stamps.fill(0);
            self.stamp = 0;
        }
        self.stamp += 1;
    }

    /// Marks `node` visited by this search; false if it already was.
    fn visit(&mut self, node: NodeIndex) -> bool {
        let slot = &mut self.stamps[index(node)];
        let first = *slot != self.stamp;
        *slot = self.stamp;
        first
    }
}

impl<'build> MemoryGraph<'build> {
    fn new(index: &Hnsw, entries: &'build BuildEntries, levels: Vec<u8>) -> MemoryGraph<'build> {
        MemoryGraph {
            metric: index.metric,
            entries,
            lists: Lists::new(&levels, index.layout),
            levels,
            entry: RwLock::new(None),
            ef_construction: index.ef_construction,
        }
    }

    /// Links every node, `threads` threads taking the next one in turn.
    fn link_all(&self, threads: usize) {
        let next = AtomicUsize::new(0);
        let count = self.entries.len();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    let mut searcher = Searcher::new(count);
                    loop {
                        let node = next.fetch_add(1, Ordering::Relaxed);
                        if node >= count {
                            break;
                        }
                        let node = NodeIndex::try_from(node).expect("checked by push");
                        self.insert(node, &mut searcher);
                    }
                });
            }
        });
    }

    fn level(&self, node: NodeIndex) -> u8 {
        self.levels[index(node)]
    }

    fn distance(&self, a: NodeIndex, b: NodeIndex) -> Distance {
        let vector = |node| self.entries.vector(index(node));
        Distance(self.metric.distance(vector(a), vector(b)))
    }

    /// `graph.rs`'s insert of `node`: its lists chosen by layer searches from the entry
    /// point, then the reverse links and the adoption of the nodes they drop.
    fn insert(&self, node: NodeIndex, searcher: &mut Searcher) {
        let level = self.level(node);
        let Some((entry, top_level)) = self.claim_entry(node, level) else { return };
        let start = usize::from(level.min(top_level));
        let mut nearest = vec![(self.distance(node, entry), entry)];
        for layer in (start + 1..=usize::from(top_level)).rev() {
            nearest = self.search_layer(node, &nearest, 1, layer, searcher);
        }
        let mut selected = vec![Vec::new(); start + 1];
        for layer in (0..=start).rev() {
            let found = self.search_layer(node, &nearest, self.ef_construction, layer, searcher);
            let capacity = self.lists.capacity(layer);
            selected[layer] = self.select(&found, capacity, None).expect("no node is required");
            nearest = found;
        }
        // The lists are in place before any reverse link makes the node reachable.
        {
            let _lock = self.lists.locks[index(node)].lock();
            for (layer, list) in selected.iter().enumerate() {
                self.lists.write_locked(node, layer, list);
            }
        }
        for (layer, list) in selected.iter().enumerate() {
            let dropped = self.link_back(node, layer, list);
            self.adopt(node, layer, &dropped, searcher);
        }
        if level > top_level {
            let mut entry = self.entry.write();
            if entry.is_some_and(|(_, top)| level > top) {
                *entry = Some((node, level));
            }
        }
    }

    /// The entry point to insert `node` from, or None if `node` became the entry point of
    /// an empty graph.
    fn claim_entry(&self, node: NodeIndex, level: u8) -> Option<(NodeIndex, u8)> {
        if let Some(entry) = *self.entry.read() {
            return Some(entry);
        }
        let mut entry = self.entry.write();
        match *entry {
            Some(existing) => Some(existing),
            None => {
                *entry = Some((node, level));
                None
            }
        }
    }

    /// Best-first search of `layer` from `entries` for the `ef` nodes nearest `query`,
    /// nearest first.
    fn search_layer(
        &self,
        query: NodeIndex,
        entries: &[Link],
        ef: usize,
        layer: usize,
        searcher: &mut Searcher,
    ) -> Vec<Link> {
        searcher.next_stamp();
        let mut candidates: BinaryHeap<Reverse<Link>> = BinaryHeap::new();
        let mut results: BinaryHeap<Link> = BinaryHeap::new();
        for &link in entries {
            if searcher.visit(link.1) {
                candidates.push(Reverse(link));
                results.push(link);
            }
        }
        while results.len() > ef {
            results.pop();
        }
        let mut links = std::mem::take(&mut searcher.links);
        while let Some(Reverse((distance, node))) = candidates.pop() {
            if results.len() >= ef && results.peek().is_some_and(|farthest| distance > farthest.0) {
                break;
            }
            self.lists.read(node, layer, &mut links);
            links.retain(|&(_, neighbour)| searcher.visit(neighbour));
            for &(_, neighbour) in &links {
                prefetch(self.entries.vector(index(neighbour)));
            }
            for &(_, neighbour) in &links {
                let distance = self.distance(query, neighbour);
                if results.len() < ef || results.peek().is_some_and(|far| distance < far.0) {
                    candidates.push(Reverse((distance, neighbour)));
                    results.push((distance, neighbour));
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
        searcher.links = links;
        results.into_sorted_vec()
    }

    /// pgvector's neighbour heuristic over `candidates` (nearest the base first): keep one
    /// if it is nearer to the base than to every one kept, up to `capacity`. None once it
    /// is clear that `required` is not kept.
    fn select(
        &self,
        candidates: &[Link],
        capacity: usize,
        required: Option<NodeIndex>,
    ) -> Option<Vec<Link>> {
        let mut kept: Vec<Link> = Vec::with_capacity(capacity);
        for &(distance, candidate) in candidates {
            if kept.len() == capacity {
                break;
            }
            if kept.iter().all(|&(_, other)| self.distance(candidate, other) > distance) {
                kept.push((distance, candidate));
            } else if required == Some(candidate) {
                return None;
            }
        }
        if required.is_some_and(|node| !kept.iter().any(|&(_, other)| other == node)) {
            return None;
        }
        Some(kept)
    }

    /// Links `node`'s `selected` neighbours on `layer` back to it, forcing the nearest's
    /// list to take it if every full list refused it; returns the nodes the rewritten
    /// lists dropped.
    fn link_back(&self, node: NodeIndex, layer: usize, selected: &[Link]) -> Vec<NodeIndex> {
        let mut dropped = Vec::new();
        let mut linked = false;
        for &link in selected {
            if let Some(lost) = self.reverse_link(link, (node, layer), false) {
                dropped.extend(lost);
                linked = true;
            }
        }
        if let Some(&nearest) = selected.first().filter(|_| !linked) {
            let lost = self.reverse_link(nearest, (node, layer), true);
            dropped.extend(lost.expect("a forced link is made"));
            linked = true;
        }
        assert!(linked || selected.is_empty(), "the new node has an in-link");
        dropped
    }

    /// Adds `node` to the list of `neighbour` on `layer`: appended if there is room, else
    /// the list rebuilt by the heuristic (None if that leaves `node` out and not `force`;
    /// forced: the heuristic's list without `node`, its farthest dropped if full, and
    /// `node`). Returns the links the list lost.
    fn reverse_link(
        &self,
        (distance, neighbour): Link,
        (node, layer): (NodeIndex, usize),
        force: bool,
    ) -> Option<Vec<NodeIndex>> {
        let capacity = self.lists.capacity(layer);
        let _lock = self.lists.locks[index(neighbour)].lock();
        let mut list = Vec::with_capacity(capacity + 1);
        self.lists.read_locked(neighbour, layer, &mut list);
        let old: Vec<NodeIndex> = list.iter().map(|&(_, link)| link).collect();
        list.push((distance, node));
        if old.len() < capacity {
            self.lists.write_locked(neighbour, layer, &list);
            return Some(Vec::new());
        }
        list.sort_unstable();
        let kept = match self.select(&list, capacity, Some(node)) {
            Some(kept) => kept,
            None if force => {
                list.retain(|&(_, candidate)| candidate != node);
                let mut kept = self.select(&list, capacity, None).expect("no node is required");
                if kept.len() == capacity {
                    kept.pop();
                }
                kept.push((distance, node));
                kept
            }
            None => return None,
        };
        self.lists.write_locked(neighbour, layer, &kept);
        let still = |link: &NodeIndex| kept.iter().any(|&(_, new)| new == *link);
        Some(old.into_iter().filter(|link| !still(link)).collect())
    }

    /// `graph.rs`'s `adopt`: `node` links to the nodes its reverse links dropped while its
    /// list on `layer` has room (a dropped node may have lost its last in-link).
    fn adopt(&self, node: NodeIndex, layer: usize, dropped: &[NodeIndex], searcher: &mut Searcher) {
        if dropped.is_empty() {
            return;
        }
        let capacity = self.lists.capacity(layer);
        let _lock = self.lists.locks[index(node)].lock();
        let list = &mut searcher.links;
        self.lists.read_locked(node, layer, list);
        for &other in dropped {
            if list.len() == capacity {
                break;
            }
            if other != node && !list.iter().any(|&(_, link)| link == other) {
                list.push((self.distance(node, other), other));
            }
        }
        self.lists.write_locked(node, layer, list);
    }
}
