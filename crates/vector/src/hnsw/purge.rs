//! Purge of an HNSW index (docs/design/014-vector-indexes.md, "Purge"): removes the nodes
//! whose entries the caller says are dead, repairs the lists that linked to them, and puts
//! their pages on a free list that inserts reuse.
//!
//! 1. A walk from the entry point over every layer reads each node once (no writer lock:
//!    inserts go on) and asks the caller whether its entry is dead (the engine reads the
//!    row under its row lock; calling back under the writer's lock would invert the
//!    writers' lock order). It keeps every node's level and lists in memory.
//! 2. Under the writer's lock, the lists of the pages inserts wrote meanwhile are re-read,
//!    then the dead nodes are removed in chunks, one mini-transaction each: every list
//!    that links to a node of the chunk loses the link and, if its node lives, gets new
//!    neighbours by pgvector's heuristic among the dead nodes' own neighbours (following
//!    chains of dead nodes a few hops); a live node that loses its last layer-0 in-link is
//!    forced into a neighbour's list; a dead entry point is replaced by the highest node
//!    left; the chunk's nodes are marked freed and pushed on the free list; the meta page
//!    gets the new count. A crash between chunks leaves a sound graph whose remaining dead
//!    nodes are ordinary nodes, which the next purge finds again.

use rustc_hash::FxHashMap;
use tierdb_common::{Lsn, PageId};
use tierdb_storage::{Mtr, MtrSlot};

use super::layout::{
    decode_free_list, free_list_count_bytes, free_list_slot_offset, Layout, Meta, NodeRef,
    FREED_KIND, FREE_LIST_COUNT_OFFSET, FREE_LIST_IDS_MAX, FREE_LIST_PAGE_TYPE, META_COUNT_OFFSET,
    META_ENTRY_OFFSET, META_FREE_COUNT_OFFSET, META_FREE_HEAD_OFFSET, META_TOP_LEVEL_OFFSET,
    NODE_PAGE_TYPE,
};
use super::search::{PageMap, PageSet, VectorCache, Vectors};
use super::{read_meta, Distance, Hnsw, HnswError, Result};

/// Pages one purge mini-transaction latches about at most: a chunk takes dead nodes while
/// their referrers fit (at least one dead node, whatever its in-degree), so a WAL record
/// stays near this many list rewrites.
pub const PURGE_MTR_PAGES_MAX: usize = 64;
/// Dead nodes a repair steps through from a removed neighbour to find live candidates (a
/// run of deleted neighbours, e.g. a deleted cluster, still leaves candidates).
const REPAIR_DEAD_HOPS_MAX: usize = 3;
/// Exact vectors a purge keeps while repairing (maintenance_work_mem's default): a
/// candidate is read from its page once per purge instead of once per list it is tried in.
const PURGE_VECTORS_BYTES_MAX: usize = 64 << 20;

/// The caller's verdict on one node: whether the entry (row key, vector) is dead.
pub type IsDead<'check, E> = dyn FnMut(&[u8], &[f32]) -> std::result::Result<bool, E> + 'check;

/// What one purge did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeStats {
    /// Nodes the walk read (every node reachable from the entry point).
    pub nodes_walked: u64,
    /// Nodes removed and put on the free list.
    pub nodes_removed: u64,
    /// Lists rewritten: links to removed nodes dropped, new neighbours chosen.
    pub lists_repaired: u64,
    /// Live nodes that lost their last layer-0 in-link and were linked from a neighbour.
    pub in_links_forced: u64,
    /// Mini-transactions (WAL records) the removal took.
    pub mtrs: u64,
    /// The end of the last one's WAL record (for `PageStore::wait_durable`).
    pub lsn: Option<Lsn>,
}

/// The walk's nodes, its dead nodes in the order found, and those of them already freed.
type WalkResult = (PageMap<Walked>, Vec<PageId>, PageSet);

/// A node as the walk read it.
struct Walked {
    level: u8,
    lists: Vec<Vec<PageId>>,
}

/// What inserts wrote while a purge walked the graph without the writer's lock.
#[derive(Default)]
pub(super) struct Touched {
    /// Nodes whose lists an insert changed: re-read before the repair.
    pub lists: PageSet,
    /// Pages that inserts made new nodes in (a freed page reused among them): never dead.
    pub new_nodes: PageSet,
}

/// The free list's head and count as an mtr changes them (written to the meta page by it).
pub(super) struct FreeList {
    pub(super) head: Option<PageId>,
    pub(super) count: u64,
}

impl FreeList {
    pub(super) fn of(meta: &Meta) -> FreeList {
        FreeList { head: meta.free_head, count: meta.free_count }
    }

    /// Writes the head and count into the meta page latched in `meta_slot`.
    pub(super) fn write(&self, mtr: &mut Mtr<'_>, meta_slot: MtrSlot) {
        mtr.write(
            meta_slot,
            META_FREE_HEAD_OFFSET,
            &self.head.map_or(0, |page| page.0).to_le_bytes(),
        );
        mtr.write(meta_slot, META_FREE_COUNT_OFFSET, &self.count.to_le_bytes());
    }
}

/// The graph as the walk and the repairs so far left it, and the removal's progress.
struct Repair {
    nodes: PageMap<Walked>,
    dead: PageSet,
    /// Dead nodes already removed (freed) by earlier chunks.
    removed: PageSet,
    /// Nodes the walk found freed already: their links go, they are not freed again.
    freed: PageSet,
    /// Per dead node, the (node, layer) lists that link to it.
    referrers: PageMap<Vec<(PageId, usize)>>,
    /// Layer-0 in-links of each node from nodes that are not dead.
    in_links: PageMap<u32>,
    meta: Meta,
    cache: VectorCache,
}

impl Hnsw {
    /// Removes the nodes for which `is_dead(row key, vector)` is true, repairing the graph
    /// around them, and frees their pages for reuse. Inserts run during the walk and wait
    /// during the removal; queries run throughout (a query that reaches a node being freed
    /// steps through it and does not return it).
    pub fn purge<E: From<HnswError>>(
        &self,
        is_dead: &mut IsDead<'_, E>,
    ) -> std::result::Result<PurgeStats, E> {
        self.purge_partially(is_dead, usize::MAX)
    }

    /// `purge` that stops after `chunks_max` chunks (one mtr each), as a crash between two
    /// of them would: for tests of what such a crash leaves.
    #[doc(hidden)]
    pub fn purge_partially<E: From<HnswError>>(
        &self,
        is_dead: &mut IsDead<'_, E>,
        chunks_max: usize,
    ) -> std::result::Result<PurgeStats, E> {
        let _purging = self.purging.lock();
        self.writer.lock().touched = Some(Touched::default());
        let walked = self.purge_walk(is_dead);
        let mut writer = self.writer.lock();
        let touched = writer.touched.take().unwrap_or_default();
        let (nodes, mut dead, freed) = walked?;
        // A page the walk saw freed or dead may since hold an insert's new node.
        dead.retain(|page_id| !touched.new_nodes.contains(page_id));
        let mut stats = PurgeStats {
            nodes_walked: u64::try_from(nodes.len()).expect("a count fits u64"),
            ..PurgeStats::default()
        };
        if dead.is_empty() {
            return Ok(stats);
        }
        let outcome = self.remove_dead((nodes, dead, freed), &touched, chunks_max, &mut stats);
        // Freed pages may be reused for other vectors: keep no vector by page id.
        let budget = writer.vectors.kept_bytes_max;
        writer.vectors.set_budget(0);
        writer.vectors.set_budget(budget);
        drop(writer);
        outcome?;
        Ok(stats)
    }

    /// The walk: every node reachable over any layer, its level and lists, and the dead
    /// ones in the order found. A node already freed (reached over a link that should not
    /// exist) is dead too, and listed in `freed`: only the links to it are removed.
    fn purge_walk<E: From<HnswError>>(
        &self,
        is_dead: &mut IsDead<'_, E>,
    ) -> std::result::Result<WalkResult, E> {
        let meta = read_meta(&self.store, self.meta)?;
        let mut nodes = PageMap::default();
        let mut dead = Vec::new();
        let mut freed_reached = PageSet::default();
        let Some(entry) = meta.entry else { return Ok((nodes, dead, freed_reached)) };
        let mut queue = std::collections::VecDeque::from([entry]);
        let mut queued = PageSet::from_iter([entry]);
        let mut vector = Vec::with_capacity(self.layout.dimensions);
        while let Some(page_id) = queue.pop_front() {
            let (freed, walked, key) = self.read_node(page_id, |node| {
                self.node_vector_into(page_id, node, &mut vector)?;
                let lists =
                    (0..=usize::from(node.level())).map(|layer| node.links(layer)).collect();
                Ok((node.is_freed(), Walked { level: node.level(), lists }, node.key().to_vec()))
            })?;
            if freed {
                freed_reached.insert(page_id);
            }
            if freed || is_dead(&key, &vector)? {
                dead.push(page_id);
            }
            for &target in walked.lists.iter().flatten() {
                if target != self.meta && queued.insert(target) {
                    queue.push_back(target);
                }
            }
            nodes.insert(page_id, walked);
        }
        Ok((nodes, dead, freed_reached))
    }

    /// The removal, under the writer's lock: the touched lists re-read, then chunk by chunk.
    fn remove_dead(
        &self,
        (mut nodes, dead, freed): WalkResult,
        touched: &Touched,
        chunks_max: usize,
        stats: &mut PurgeStats,
    ) -> Result<()> {
        for &page_id in touched.lists.iter().chain(&touched.new_nodes) {
            let walked = self.read_node(page_id, |node| {
                let lists =
                    (0..=usize::from(node.level())).map(|layer| node.links(layer)).collect();
                Ok(Walked { level: node.level(), lists })
            })?;
            nodes.insert(page_id, walked);
        }
        let dead_set: PageSet = dead.iter().copied().collect();
        let mut referrers: PageMap<Vec<(PageId, usize)>> = PageMap::default();
        let mut in_links: PageMap<u32> = PageMap::default();
        for (&source, walked) in &nodes {
            for (layer, list) in walked.lists.iter().enumerate() {
                for &target in list {
                    if dead_set.contains(&target) {
                        referrers.entry(target).or_default().push((source, layer));
                    }
                    if layer == 0 && !dead_set.contains(&source) {
                        *in_links.entry(target).or_default() += 1;
                    }
                }
            }
        }
        let mut vectors = Vectors::default();
        vectors.set_budget(PURGE_VECTORS_BYTES_MAX);
        let mut repair = Repair {
            nodes,
            dead: dead_set,
            removed: PageSet::default(),
            freed,
            referrers,
            in_links,
            meta: read_meta(&self.store, self.meta)?,
            cache: VectorCache::keeping(vectors),
        };
        let mut start = 0;
        while start < dead.len() && stats.mtrs < u64::try_from(chunks_max).unwrap_or(u64::MAX) {
            let end = start + chunk_length(&repair, &dead[start..]);
            self.remove_chunk(&mut repair, &dead[start..end], stats)?;
            start = end;
        }
        Ok(())
    }
}

/// Dead nodes from the front of `dead` whose lists to repair fit one mtr (at least one).
fn chunk_length(repair: &Repair, dead: &[PageId]) -> usize {
    let mut pages = 2;
    let mut length = 0;
    for page_id in dead {
        let referrers = repair.referrers.get(page_id).map_or(0, Vec::len);
        if length > 0 && pages + 1 + referrers > PURGE_MTR_PAGES_MAX {
            break;
        }
        pages += 1 + referrers;
        length += 1;
    }
    length
}

impl Repair {
    fn is_live(&self, page_id: PageId) -> bool {
        !self.dead.contains(&page_id)
    }

    fn list(&self, page_id: PageId, layer: usize) -> &[PageId] {
        &self.nodes[&page_id].lists[layer]
    }
}

/// The lists one chunk changes: (node, layer) to its new list.
type Changes = FxHashMap<(PageId, usize), Vec<PageId>>;

impl Hnsw {
    /// Removes one chunk of dead nodes in one mini-transaction.
    fn remove_chunk(
        &self,
        repair: &mut Repair,
        chunk: &[PageId],
        stats: &mut PurgeStats,
    ) -> Result<()> {
        repair.removed.extend(chunk.iter().copied());
        let mut changes = Changes::default();
        let mut sources: Vec<(PageId, usize)> = chunk
            .iter()
            .flat_map(|page_id| repair.referrers.get(page_id).into_iter().flatten().copied())
            .filter(|(source, _)| !repair.removed.contains(source))
            .collect();
        sources.sort_unstable();
        sources.dedup();
        for (source, layer) in sources {
            let list = self.repaired_list(repair, (source, layer))?;
            changes.insert((source, layer), list);
        }
        self.force_in_links(repair, chunk, &mut changes, stats)?;
        let entry = new_entry(repair, chunk);
        stats.lsn = Some(self.write_chunk(repair, chunk, &changes, entry)?);
        stats.mtrs += 1;
        stats.nodes_removed += u64::try_from(chunk.len()).expect("a count fits u64");
        stats.lists_repaired += u64::try_from(changes.len()).expect("a count fits u64");
        for ((source, layer), list) in changes {
            repair.nodes.get_mut(&source).expect("a walked node").lists[layer] = list;
        }
        Ok(())
    }

    /// The list of `source` on `layer` without its links to removed nodes; a live node's
    /// gets new neighbours in the freed slots by pgvector's heuristic (a candidate is kept
    /// if it is nearer to the node than to every link kept), the candidates being the live
    /// neighbours of the removed nodes, reached through at most `REPAIR_DEAD_HOPS_MAX` dead
    /// nodes. The links it keeps stay, so no other node loses an in-link.
    fn repaired_list(
        &self,
        repair: &mut Repair,
        (source, layer): (PageId, usize),
    ) -> Result<Vec<PageId>> {
        let old = repair.list(source, layer);
        let mut kept: Vec<PageId> =
            old.iter().copied().filter(|page_id| !repair.removed.contains(page_id)).collect();
        if !repair.is_live(source) {
            return Ok(kept);
        }
        let mut hop: Vec<PageId> =
            old.iter().copied().filter(|page_id| repair.removed.contains(page_id)).collect();
        let mut seen: PageSet = old.iter().copied().chain([source]).collect();
        let mut candidates = Vec::new();
        for _ in 0..REPAIR_DEAD_HOPS_MAX {
            let mut next = Vec::new();
            for dead in hop {
                let Some(walked) = repair.nodes.get(&dead) else { continue };
                for &target in walked.lists.get(layer).into_iter().flatten() {
                    if !seen.insert(target) {
                        continue;
                    }
                    if repair.is_live(target) {
                        candidates.push(target);
                    } else {
                        next.push(target);
                    }
                }
            }
            hop = next;
        }
        self.load_vector(source, &mut repair.cache)?;
        let base = repair.cache.vectors[&source].to_vec();
        let mut ranked = Vec::with_capacity(candidates.len());
        for page_id in candidates {
            ranked.push((self.exact_distance(&base, page_id, &mut repair.cache)?, page_id));
        }
        ranked.sort();
        for &page_id in &kept {
            self.load_vector(page_id, &mut repair.cache)?;
        }
        let capacity = self.layout.capacity(layer);
        for (distance, page_id) in ranked {
            if kept.len() == capacity {
                break;
            }
            let vectors = &repair.cache.vectors;
            if kept.iter().all(|other| {
                Distance(self.metric.distance(&vectors[&page_id], &vectors[other])) > distance
            }) {
                kept.push(page_id);
                if layer == 0 {
                    *repair.in_links.entry(page_id).or_default() += 1;
                }
            }
        }
        Ok(kept)
    }

    /// Links each live layer-0 neighbour of the chunk's nodes that has no in-link left from
    /// a live node into the list of its nearest live neighbour with room, or in place of
    /// that list's farthest link to a node with another in-link.
    fn force_in_links(
        &self,
        repair: &mut Repair,
        chunk: &[PageId],
        changes: &mut Changes,
        stats: &mut PurgeStats,
    ) -> Result<()> {
        let mut orphans: Vec<PageId> = chunk
            .iter()
            .flat_map(|dead| repair.list(*dead, 0).to_vec())
            .filter(|&page_id| repair.is_live(page_id))
            .filter(|page_id| repair.in_links.get(page_id).copied().unwrap_or(0) == 0)
            .collect();
        orphans.sort_unstable();
        orphans.dedup();
        for orphan in orphans {
            if orphan == repair.meta.entry.unwrap_or(PageId(0)) {
                continue;
            }
            if self.force_in_link(repair, orphan, changes)? {
                stats.in_links_forced += 1;
            }
        }
        Ok(())
    }

    fn force_in_link(
        &self,
        repair: &mut Repair,
        orphan: PageId,
        changes: &mut Changes,
    ) -> Result<bool> {
        self.load_vector(orphan, &mut repair.cache)?;
        let base = repair.cache.vectors[&orphan].to_vec();
        let mut hosts = Vec::new();
        for &host in repair.list(orphan, 0).to_vec().iter() {
            if repair.is_live(host) && repair.nodes.contains_key(&host) {
                hosts.push((self.exact_distance(&base, host, &mut repair.cache)?, host));
            }
        }
        hosts.sort();
        let capacity = self.layout.capacity(0);
        for (_, host) in hosts {
            let mut list =
                changes.get(&(host, 0)).cloned().unwrap_or_else(|| repair.list(host, 0).to_vec());
            if list.contains(&orphan) {
                return Ok(true);
            }
            if list.len() == capacity {
                let Some(position) = self.replaceable(repair, host, &list)? else { continue };
                let dropped = list.remove(position);
                *repair.in_links.entry(dropped).or_default() -= 1;
            }
            list.push(orphan);
            *repair.in_links.entry(orphan).or_default() += 1;
            changes.insert((host, 0), list);
            return Ok(true);
        }
        Ok(false)
    }

    /// The position of the farthest link of `host`'s full `list` whose target is live and
    /// keeps another layer-0 in-link without it.
    fn replaceable(
        &self,
        repair: &mut Repair,
        host: PageId,
        list: &[PageId],
    ) -> Result<Option<usize>> {
        self.load_vector(host, &mut repair.cache)?;
        let base = repair.cache.vectors[&host].to_vec();
        let mut best: Option<(Distance, usize)> = None;
        for (position, &target) in list.iter().enumerate() {
            let spare = repair.in_links.get(&target).copied().unwrap_or(0) >= 2;
            if !spare || !repair.is_live(target) {
                continue;
            }
            let distance = self.exact_distance(&base, target, &mut repair.cache)?;
            if best.is_none_or(|(farthest, _)| distance > farthest) {
                best = Some((distance, position));
            }
        }
        Ok(best.map(|(_, position)| position))
    }

    /// The chunk's mini-transaction: the changed lists (slots of kept links copied from the
    /// page, new ones encoded), the nodes marked freed and pushed on the free list, and the
    /// meta page.
    fn write_chunk(
        &self,
        repair: &mut Repair,
        chunk: &[PageId],
        changes: &Changes,
        entry: Option<(PageId, u8)>,
    ) -> Result<Lsn> {
        let mut mtr = self.store.mtr();
        let mut sorted: Vec<_> = changes.iter().collect();
        sorted.sort_unstable_by_key(|(key, _)| **key);
        for (&(source, layer), list) in sorted {
            let slot = mtr.latch(source)?;
            self.forget_links(source, layer);
            let mut slots = Vec::with_capacity(list.len());
            // The owner of the list's codes, read from its page (this mtr holds its latch).
            let mut owner = Vec::with_capacity(self.layout.dimensions);
            {
                let page = mtr.page(slot);
                let node = NodeRef::open(self.layout, source, page.payload())?;
                self.node_vector_into(source, &node, &mut owner)?;
                let old = node.links(layer);
                for &target in list {
                    match old.iter().position(|&link| link == target) {
                        Some(index) => slots.push(node.slot(layer, index).to_vec()),
                        None => slots.push(Vec::new()),
                    }
                }
            }
            for (slot_bytes, &target) in slots.iter_mut().zip(list) {
                if slot_bytes.is_empty() {
                    self.load_vector(target, &mut repair.cache)?;
                    let link = (target, &repair.cache.vectors[&target]);
                    *slot_bytes = self.layout.encode_slot(layer, &owner, link);
                }
            }
            mtr.write(
                slot,
                self.layout.list_offset(layer),
                &self.layout.encode_slots(layer, &slots),
            );
        }
        let mut free = FreeList::of(&repair.meta);
        let freeing: Vec<PageId> =
            chunk.iter().copied().filter(|page_id| !repair.freed.contains(page_id)).collect();
        for &page_id in &freeing {
            let slot = mtr.latch(page_id)?;
            // Its navigation entries go under its exclusive latch: a reader adds none for
            // a freed node, so none comes back (design 014, "Purge").
            self.forget_node(page_id);
            mtr.write(slot, 0, &[FREED_KIND]);
            push_free(&mut mtr, &mut free, page_id)?;
        }
        let meta_slot = mtr.latch(self.meta)?;
        let removed = u64::try_from(freeing.len()).expect("a count fits u64");
        let meta = &mut repair.meta;
        meta.node_count =
            meta.node_count.checked_sub(removed).ok_or_else(|| HnswError::Corrupt {
                page_id: self.meta,
                detail: format!("node count={} below nodes removed", meta.node_count),
            })?;
        mtr.write(meta_slot, META_COUNT_OFFSET, &meta.node_count.to_le_bytes());
        if meta.entry.is_some_and(|page_id| chunk.contains(&page_id)) {
            meta.entry = entry.map(|(page_id, _)| page_id);
            meta.top_level = entry.map_or(0, |(_, level)| level);
            mtr.write(
                meta_slot,
                META_ENTRY_OFFSET,
                &meta.entry.map_or(0, |page| page.0).to_le_bytes(),
            );
            mtr.write(meta_slot, META_TOP_LEVEL_OFFSET, &[meta.top_level]);
        }
        free.write(&mut mtr, meta_slot);
        (meta.free_head, meta.free_count) = (free.head, free.count);
        Ok(mtr.commit()?)
    }
}

/// The entry point after `chunk` is removed: the node of the highest level left (a live
/// one if one is as high; the lowest page id among equals, so purges are repeatable).
fn new_entry(repair: &Repair, chunk: &[PageId]) -> Option<(PageId, u8)> {
    if !repair.meta.entry.is_some_and(|page_id| chunk.contains(&page_id)) {
        return None;
    }
    repair
        .nodes
        .iter()
        .filter(|(page_id, _)| !repair.removed.contains(page_id))
        .map(|(&page_id, walked)| {
            (walked.level, repair.is_live(page_id), std::cmp::Reverse(page_id))
        })
        .max()
        .map(|(level, _, std::cmp::Reverse(page_id))| (page_id, level))
}

/// Pushes a freed node page on the free list (a new free-list page when the head is full).
fn push_free(mtr: &mut Mtr<'_>, free: &mut FreeList, page_id: PageId) -> Result<()> {
    if let Some(head) = free.head {
        let slot = mtr.latch(head)?;
        let (_, ids) = decode_free_list(head, mtr.page(slot).payload())?;
        if ids.len() < FREE_LIST_IDS_MAX {
            mtr.write(slot, free_list_slot_offset(ids.len()), &page_id.0.to_le_bytes());
            mtr.write(slot, FREE_LIST_COUNT_OFFSET, &free_list_count_bytes(ids.len() + 1));
            free.count += 1;
            return Ok(());
        }
    }
    let (slot, new_head) = mtr.allocate(FREE_LIST_PAGE_TYPE)?;
    mtr.write(slot, 0, &free.head.map_or(0, |page| page.0).to_le_bytes());
    mtr.write(slot, free_list_slot_offset(0), &page_id.0.to_le_bytes());
    mtr.write(slot, FREE_LIST_COUNT_OFFSET, &free_list_count_bytes(1));
    free.head = Some(new_head);
    free.count += 1;
    Ok(())
}

/// A page for a new node: the last freed node page of the free list's head page, or the
/// head page itself once it is empty; None when nothing is free. The page is latched and
/// reinitialized as an empty node page in `mtr`. Also returns the ids of a freed node's
/// vector pages, if `layout` has them (a node page keeps its vector pages for life; a
/// free-list page taken as a node page has none yet, and the caller allocates them).
pub(super) fn pop_free(
    mtr: &mut Mtr<'_>,
    free: &mut FreeList,
    layout: &Layout,
) -> Result<Option<(MtrSlot, PageId, Vec<PageId>)>> {
    let Some(head) = free.head else { return Ok(None) };
    let slot = mtr.latch(head)?;
    if mtr.page(slot).page_type() != FREE_LIST_PAGE_TYPE {
        return Err(HnswError::Corrupt {
            page_id: head,
            detail: "free list head is no free-list page".into(),
        });
    }
    let (next, ids) = decode_free_list(head, mtr.page(slot).payload())?;
    let (node_slot, page_id) = match ids.last() {
        Some(&page_id) => {
            mtr.write(slot, FREE_LIST_COUNT_OFFSET, &free_list_count_bytes(ids.len() - 1));
            free.count = free.count.saturating_sub(1);
            let node_slot = mtr.latch(page_id)?;
            let page = mtr.page(node_slot);
            if page.page_type() != NODE_PAGE_TYPE || page.payload()[0] != FREED_KIND {
                return Err(HnswError::Corrupt {
                    page_id,
                    detail: "free list names a page in use".into(),
                });
            }
            (node_slot, page_id)
        }
        None => {
            free.head = next;
            (slot, head)
        }
    };
    let vector_pages = if layout.vector_pages == 0 || page_id == head {
        Vec::new()
    } else {
        NodeRef::open(*layout, page_id, mtr.page(node_slot).payload())?.vector_pages().collect()
    };
    mtr.reinit(node_slot, NODE_PAGE_TYPE);
    Ok(Some((node_slot, page_id, vector_pages)))
}
