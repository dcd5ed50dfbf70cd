//! Changing the graph: insert (pgvector's algorithm, one mini-transaction per insert).

use tierdb_common::{Lsn, PageId, SplitMix64};
use tierdb_storage::Mtr;

use super::layout::{
    META_COUNT_OFFSET, META_ENTRY_OFFSET, META_TOP_LEVEL_OFFSET, NODE_PAGE_TYPE, VECTOR_PAGE_TYPE,
};
use super::purge::{pop_free, FreeList, Touched};
use super::search::{Candidate, Distances, VectorCache};
use super::{read_meta, Distance, Hnsw, HnswError, Result};

/// How an insert changes one neighbour's list on one layer.
enum ListChange {
    /// The list has room: the new node is appended after `count` links.
    Append { count: usize },
    /// The list was full: rebuilt by the heuristic over its links and the new node, which
    /// drops `dropped` from it.
    Rewrite { list: Vec<PageId>, dropped: Vec<PageId> },
}

/// A level drawn with pgvector's distribution, `floor(-ln(U) / ln(m))`: level `l` or higher
/// has probability `m^-l`, drawn as consecutive 1-in-m events (no float rounding).
pub(super) fn draw_level(random: &mut SplitMix64, m: usize, cap: u8) -> u8 {
    let bound = u64::try_from(m).expect("m fits in u64");
    let mut level = 0;
    while level < cap && random.below(bound) == 0 {
        level += 1;
    }
    level
}

/// Links the new node to the nodes its reverse links dropped from full lists, while its own
/// list has room. A dropped node may have had no other in-link: without this it could be
/// unreachable from then on (pgvector's graph has that flaw; found by the invariant check
/// in a crash test). The new node is reachable through the lists that dropped them (each
/// rewrite keeps it), so each adopted node stays reachable through it. Its vector is
/// loaded: it was a candidate of the rewrite's heuristic.
fn adopt(list: &mut Vec<PageId>, dropped: &[PageId], capacity: usize) {
    for &page_id in dropped {
        if list.len() == capacity {
            return;
        }
        if !list.contains(&page_id) {
            list.push(page_id);
        }
    }
    assert!(list.len() <= capacity, "a list within its capacity");
}

impl Hnsw {
    /// Adds `vector` with its row key; returns the LSN of its WAL record (to wait for with
    /// `PageStore::wait_durable`). Returns None, adding nothing, for a vector with no
    /// distance under the metric (a zero vector under cosine), as pgvector does.
    pub fn insert(&self, vector: &[f32], key: &[u8]) -> Result<Option<Lsn>> {
        super::check_entry(self.layout.dimensions, vector, key)?;
        if !self.metric.indexable(vector) {
            return Ok(None);
        }
        let mut writer = self.writer.lock();
        let writer = &mut *writer;
        let mut cache = VectorCache::keeping(std::mem::take(&mut writer.vectors));
        let outcome = self.insert_locked(
            (&mut writer.random, writer.touched.as_mut()),
            &mut cache,
            vector,
            key,
        );
        writer.vectors = cache.vectors;
        writer.vectors.end_operation();
        if outcome.is_err() {
            // The new node's page may not exist after all: forget every kept vector rather
            // than keep one under a page id that may be allocated again.
            let budget = writer.vectors.kept_bytes_max;
            writer.vectors.set_budget(0);
            writer.vectors.set_budget(budget);
        }
        outcome.map(Some)
    }

    /// Sets the bytes of exact vectors the writer keeps across inserts (a build's memory,
    /// maintenance_work_mem); 0 after the build frees them.
    pub fn keep_vectors(&self, bytes_max: usize) {
        self.writer.lock().vectors.set_budget(bytes_max);
    }

    fn insert_locked(
        &self,
        (random, touched): (&mut SplitMix64, Option<&mut Touched>),
        cache: &mut VectorCache,
        vector: &[f32],
        key: &[u8],
    ) -> Result<Lsn> {
        let meta = read_meta(&self.store, self.meta)?;
        let level = draw_level(random, self.layout.m, self.layout.level_cap);
        let mut mtr = self.store.mtr();
        // Nothing links to the new page until this mtr commits, so holding its exclusive
        // latch through the search blocks no reader (but a scan that still holds the id of
        // a reused freed page waits for this insert before reading it).
        let mut free = FreeList::of(&meta);
        let (node_slot, node_id, reused_vector_pages) =
            match pop_free(&mut mtr, &mut free, &self.layout)? {
                Some(reused) => reused,
                None => {
                    let (slot, page_id) = mtr.allocate(NODE_PAGE_TYPE)?;
                    (slot, page_id, Vec::new())
                }
            };
        // A reused page's old node: its entries in the navigation copy go (under the
        // page's exclusive latch, which this mtr holds).
        self.forget_node(node_id);
        cache.vectors.insert(node_id, vector);
        let mut lists = vec![Vec::new(); usize::from(level) + 1];
        let mut changes: Vec<(PageId, usize, ListChange)> = Vec::new();
        if let Some(entry) = meta.entry {
            let start = usize::from(level.min(meta.top_level));
            let mut nearest = self.descend(vector, entry, meta.top_level, start, cache)?;
            for layer in (0..=start).rev() {
                let found = self.search_layer(
                    vector,
                    &nearest,
                    self.ef_construction,
                    layer,
                    Distances::Exact,
                    cache,
                )?;
                let mut selected =
                    self.select_neighbours(&found, self.layout.capacity(layer), cache)?;
                self.link_back((node_id, layer), &mut selected, &mut changes, cache)?;
                lists[layer] = selected;
                nearest = found;
            }
        }
        // A neighbour's vector is the owner of its list's codes; loaded before the loop
        // latches the neighbours' pages (a read of a page this mtr holds would wait on it).
        for (neighbour, _, _) in &changes {
            self.load_vector(*neighbour, cache)?;
        }
        let with_vectors = |list: &[PageId]| -> Vec<(PageId, &[f32])> {
            list.iter().map(|page| (*page, &cache.vectors[page])).collect()
        };
        let node_links: Vec<_> = lists.iter().map(|list| with_vectors(list)).collect();
        let vector_pages =
            self.write_vector_pages(&mut mtr, node_id, reused_vector_pages, vector)?;
        let node = self.layout.encode_node((vector, &vector_pages), key, &node_links);
        mtr.write(node_slot, 0, &node);
        if let Some(touched) = touched {
            touched.new_nodes.insert(node_id);
            touched.lists.extend(changes.iter().map(|(neighbour, _, _)| *neighbour));
        }
        for (neighbour, layer, change) in changes {
            let slot = mtr.latch(neighbour)?;
            self.forget_links(neighbour, layer);
            let owner = &cache.vectors[&neighbour];
            match change {
                ListChange::Append { count } => {
                    let link = (node_id, vector);
                    for (offset, bytes) in self.layout.append_link(layer, count, owner, link) {
                        mtr.write(slot, offset, &bytes);
                    }
                }
                ListChange::Rewrite { list, .. } => {
                    let bytes = self.layout.encode_list(layer, owner, &with_vectors(&list));
                    mtr.write(slot, self.layout.list_offset(layer), &bytes);
                }
            }
        }
        let meta_slot = mtr.latch(self.meta)?;
        mtr.write(meta_slot, META_COUNT_OFFSET, &(meta.node_count + 1).to_le_bytes());
        if (free.head, free.count) != (meta.free_head, meta.free_count) {
            free.write(&mut mtr, meta_slot);
        }
        if meta.entry.is_none() || level > meta.top_level {
            mtr.write(meta_slot, META_TOP_LEVEL_OFFSET, &[level]);
            mtr.write(meta_slot, META_ENTRY_OFFSET, &node_id.0.to_le_bytes());
        }
        Ok(mtr.commit()?)
    }

    /// Writes `vector` on the vector pages of the new node in `node_id` (if the layout has
    /// any): over `reused` (the pages of the freed node whose page it reuses), else on new
    /// pages. Returns their ids. The node page's exclusive latch, held by `mtr`, guards
    /// them: a reader reaches a node's vector pages only under its node's latch.
    fn write_vector_pages(
        &self,
        mtr: &mut Mtr<'_>,
        node_id: PageId,
        reused: Vec<PageId>,
        vector: &[f32],
    ) -> Result<Vec<PageId>> {
        let mut vector_pages = Vec::with_capacity(self.layout.vector_pages);
        for part in 0..self.layout.vector_pages {
            let (slot, page_id) = match reused.get(part) {
                Some(&page_id) => {
                    let slot = mtr.latch(page_id)?;
                    if mtr.page(slot).page_type() != VECTOR_PAGE_TYPE {
                        return Err(HnswError::Corrupt {
                            page_id,
                            detail: "a freed node names a page that is no vector page".into(),
                        });
                    }
                    (slot, page_id)
                }
                None => mtr.allocate(VECTOR_PAGE_TYPE)?,
            };
            mtr.write(slot, 0, &self.layout.encode_vector_page(node_id, part, vector));
            vector_pages.push(page_id);
        }
        Ok(vector_pages)
    }

    /// pgvector's neighbour selection heuristic: walking `candidates` nearest first, keep one
    /// if it is nearer to the base than to every neighbour already kept, up to `capacity`.
    fn select_neighbours(
        &self,
        candidates: &[Candidate],
        capacity: usize,
        cache: &mut VectorCache,
    ) -> Result<Vec<PageId>> {
        let kept = self.select_neighbours_keeping(candidates, (capacity, None), cache)?;
        Ok(kept.expect("no candidate is required"))
    }

    /// `select_neighbours`, or None as soon as it is clear that the heuristic does not keep
    /// `required` (a caller that wants the list only with it: pruning a full list stops at
    /// the new node when it is left out, instead of checking the candidates after it).
    fn select_neighbours_keeping(
        &self,
        candidates: &[Candidate],
        (capacity, required): (usize, Option<PageId>),
        cache: &mut VectorCache,
    ) -> Result<Option<Vec<PageId>>> {
        for &(_, page_id) in candidates {
            self.load_vector(page_id, cache)?;
        }
        let mut kept: Vec<PageId> = Vec::with_capacity(capacity);
        for &(distance, page_id) in candidates {
            if kept.len() == capacity {
                break;
            }
            let vector = &cache.vectors[&page_id];
            let nearer_to_base = kept.iter().all(|other| {
                Distance(self.metric.distance(vector, &cache.vectors[other])) > distance
            });
            if nearer_to_base {
                kept.push(page_id);
            } else if required == Some(page_id) {
                return Ok(None);
            }
        }
        if required.is_some_and(|page_id| !kept.contains(&page_id)) {
            return Ok(None);
        }
        Ok(Some(kept))
    }

    /// The reverse links of the new node on `layer` to its `selected` neighbours, appended
    /// to `changes`. The new node gets at least one in-link: if the heuristic keeps it in
    /// no full list, the nearest neighbour's list is forced to take it. The nodes rewritten
    /// lists drop are adopted by the new node's list while it has room (`adopt`).
    fn link_back(
        &self,
        (node_id, layer): (PageId, usize),
        selected: &mut Vec<PageId>,
        changes: &mut Vec<(PageId, usize, ListChange)>,
        cache: &mut VectorCache,
    ) -> Result<()> {
        let mut dropped = Vec::new();
        let mut record = |target: PageId, change: Option<ListChange>| {
            let Some(change) = change else { return false };
            if let ListChange::Rewrite { dropped: lost, .. } = &change {
                dropped.extend_from_slice(lost);
            }
            changes.push((target, layer, change));
            true
        };
        let mut linked = false;
        for &neighbour in selected.iter() {
            let change = self.reverse_link(neighbour, (node_id, layer), false, cache)?;
            linked |= record(neighbour, change);
        }
        if let Some(&nearest) = selected.first().filter(|_| !linked) {
            // Every full list refused it (the nearest's too, so it has no change yet).
            let change = self.reverse_link(nearest, (node_id, layer), true, cache)?;
            linked = record(nearest, change);
        }
        assert!(linked || selected.is_empty(), "the new node has an in-link");
        adopt(selected, &dropped, self.layout.capacity(layer));
        Ok(())
    }

    /// The change that links `neighbour` back to the new node on `layer` (None: the
    /// heuristic keeps the neighbour's full list as it is, unless `force`: then the
    /// heuristic's list over the old links, its farthest dropped if it is full, and the
    /// new node).
    fn reverse_link(
        &self,
        neighbour: PageId,
        (node_id, layer): (PageId, usize),
        force: bool,
        cache: &mut VectorCache,
    ) -> Result<Option<ListChange>> {
        let links = self.read_node(neighbour, |node| Ok(node.links(layer)))?;
        let capacity = self.layout.capacity(layer);
        if links.len() < capacity {
            return Ok(Some(ListChange::Append { count: links.len() }));
        }
        self.load_vector(neighbour, cache)?;
        let base = cache.vectors[&neighbour].to_vec();
        let mut candidates = Vec::with_capacity(links.len() + 1);
        for &page_id in links.iter().chain(std::iter::once(&node_id)) {
            candidates.push((self.exact_distance(&base, page_id, cache)?, page_id));
        }
        candidates.sort();
        let kept = self.select_neighbours_keeping(&candidates, (capacity, Some(node_id)), cache)?;
        let list = match kept {
            Some(list) => list,
            None if force => {
                candidates.retain(|&(_, page_id)| page_id != node_id);
                let mut list = self.select_neighbours(&candidates, capacity, cache)?;
                if list.len() == capacity {
                    list.pop();
                }
                list.push(node_id);
                list
            }
            None => return Ok(None),
        };
        let dropped = links.iter().filter(|link| !list.contains(link)).copied().collect();
        Ok(Some(ListChange::Rewrite { list, dropped }))
    }
}
