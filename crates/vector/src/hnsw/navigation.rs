//! The navigation copy (design 014, "The navigation copy of layer 0"): what a query walks
//! in DRAM instead of reading node pages. The upper layers' exact vectors and lists, and a
//! bounded copy of layer 0: per node its layer-0 neighbour ids and its compact code (the SQ8 code,
//! or the exact words of a bit index, that every list holding it carries), so that a
//! layer-0 hop whose node and unvisited neighbours are in the copy reads no page. The
//! results are re-ranked with exact vectors read from their pages, all at once.
//!
//! Coherence: an entry is added only under the shared latch of the page it comes from
//! (a node's links and own code from its own page, a neighbour's code from a live node's
//! list), and every writer of a node page drops the entries of that page under its
//! exclusive latch (an insert's new node and changed lists, a purge's repaired lists and
//! freed nodes, a reused free page), so the copy never holds links older than a page
//! read concurrent with the change could give. Freed nodes add nothing.

use std::sync::atomic::{AtomicUsize, Ordering};

use rustc_hash::FxHashMap;
use tierdb_common::PageId;

use super::layout::{sq8_step, CodeKind, NodeRef};
use super::search::{Candidate, PageMap, PageSet, VectorCache};
use super::{Distance, Hnsw, Metric};

/// Default bytes of the layer-0 copy per index (`--hnsw-navigation-memory`): 64 MiB holds
/// about 150,000 128-d nodes at m = 16 (their codes and links), the whole layer 0 of the
/// larger-than-memory benchmark's 50,000 rows beside a buffer pool of 39 MB.
pub const LAYER_ZERO_COPY_BYTES_DEFAULT: usize = 64 << 20;

/// The process-wide bound each index's layer-0 copy takes when it is opened (the server's
/// `--hnsw-navigation-memory`; `Hnsw::set_layer_zero_copy_bytes_max` changes one index's).
static LAYER_ZERO_COPY_BYTES_MAX: AtomicUsize = AtomicUsize::new(LAYER_ZERO_COPY_BYTES_DEFAULT);

/// Sets the bound of the layer-0 copy of the indexes opened from now on (0: no copy).
pub fn set_layer_zero_copy_bytes_max(bytes: usize) {
    LAYER_ZERO_COPY_BYTES_MAX.store(bytes, Ordering::Relaxed);
}

pub(super) fn layer_zero_copy_bytes_max() -> usize {
    LAYER_ZERO_COPY_BYTES_MAX.load(Ordering::Relaxed)
}

/// What one entry of the copy costs besides its bytes: the map's slot (key, boxed slice,
/// control byte and load-factor slack) and the allocation's header.
const COPY_ENTRY_OVERHEAD_BYTES: usize = 48;

#[derive(Default)]
pub(crate) struct Navigation {
    /// The exact vectors of upper-layer nodes (`Hnsw::navigation`).
    pub vectors: PageMap<Box<[f32]>>,
    pub bytes: usize,
    /// Layer 0: each node's code, by page.
    codes: PageMap<Box<[u8]>>,
    /// Each node's neighbour ids, by page and layer: layer 0 with the codes, the upper
    /// layers (few nodes) beside the upper layers' exact vectors above.
    links: FxHashMap<(PageId, usize), Box<[PageId]>>,
    /// Bytes of `codes` and `links` with their overheads (at most the index's bound).
    pub copy_bytes: usize,
}

/// What the layer-0 copy holds now (tests and the design doc's figures).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerZeroCopyStats {
    pub codes: usize,
    pub links: usize,
    pub bytes: usize,
}

impl Navigation {
    fn fits(&self, bytes: usize, bytes_max: usize) -> bool {
        self.copy_bytes + bytes + COPY_ENTRY_OVERHEAD_BYTES <= bytes_max
    }

    fn add_code(&mut self, page_id: PageId, code: &[u8], bytes_max: usize) {
        if !self.codes.contains_key(&page_id) && self.fits(code.len(), bytes_max) {
            self.codes.insert(page_id, code.into());
            self.copy_bytes += code.len() + COPY_ENTRY_OVERHEAD_BYTES;
        }
    }

    /// Replaces the links of `page_id` on `layer` (a page read gives its current list).
    fn set_links(&mut self, key: (PageId, usize), links: Vec<PageId>, bytes_max: usize) {
        self.drop_links(key);
        let bytes = std::mem::size_of_val(&*links);
        if self.fits(bytes, bytes_max) {
            self.links.insert(key, links.into_boxed_slice());
            self.copy_bytes += bytes + COPY_ENTRY_OVERHEAD_BYTES;
        }
    }

    fn drop_links(&mut self, key: (PageId, usize)) {
        if let Some(links) = self.links.remove(&key) {
            self.copy_bytes -= std::mem::size_of_val(&*links) + COPY_ENTRY_OVERHEAD_BYTES;
        }
    }

    fn drop_code(&mut self, page_id: PageId) {
        if let Some(code) = self.codes.remove(&page_id) {
            self.copy_bytes -= code.len() + COPY_ENTRY_OVERHEAD_BYTES;
        }
    }
}

impl Hnsw {
    /// Whether this index keeps a layer-0 copy: its codes must be the node's own (SQ8 or
    /// exact words); a sign code depends on the list's owner, so wide-vector indexes have
    /// none (PLANNED).
    fn copies_layer_zero(&self) -> bool {
        matches!(self.layout.codes, CodeKind::Sq8 | CodeKind::Words)
            && self.layer_zero_copy_bytes_max.load(Ordering::Relaxed) > 0
    }

    /// Sets this index's bound of the layer-0 copy; a smaller one empties the copy.
    pub fn set_layer_zero_copy_bytes_max(&self, bytes: usize) {
        let mut navigation = self.navigation.write();
        self.layer_zero_copy_bytes_max.store(bytes, Ordering::Relaxed);
        if navigation.copy_bytes > bytes {
            navigation.codes = PageMap::default();
            navigation.links = FxHashMap::default();
            navigation.copy_bytes = 0;
        }
    }

    pub fn layer_zero_copy_stats(&self) -> LayerZeroCopyStats {
        let navigation = self.navigation.read();
        LayerZeroCopyStats {
            codes: navigation.codes.len(),
            links: navigation.links.len(),
            bytes: navigation.copy_bytes,
        }
    }

    /// Copies what the page of `node` (in `page_id`) tells about layer 0: its links, its
    /// own code (from `vector`, its exact vector) and its neighbours' codes. Called under
    /// the node's shared latch (or the exclusive latch of the mtr that writes it); a freed
    /// node adds nothing (its lists may name freed or reused pages).
    pub(super) fn copy_node(&self, page_id: PageId, node: &NodeRef<'_>, vector: &[f32]) {
        if !self.copies_layer_zero() || node.is_freed() {
            return;
        }
        let bytes_max = self.layer_zero_copy_bytes_max.load(Ordering::Relaxed);
        let count = node.count(0);
        {
            let navigation = self.navigation.read();
            let complete = navigation.links.contains_key(&(page_id, 0))
                && navigation.codes.contains_key(&page_id)
                && (0..count).all(|index| navigation.codes.contains_key(&node.link(0, index)));
            if complete || !navigation.fits(0, bytes_max) {
                return;
            }
        }
        let mut own = Vec::with_capacity(self.layout.code_bytes);
        self.layout.encode_code(vector, vector, &mut own);
        let mut navigation = self.navigation.write();
        navigation.set_links((page_id, 0), node.links(0), bytes_max);
        navigation.add_code(page_id, &own, bytes_max);
        for index in 0..count {
            navigation.add_code(node.link(0, index), node.code(index), bytes_max);
        }
    }

    /// Copies a node the build writes (before the meta page names any of them).
    pub(super) fn copy_built_node(&self, page_id: PageId, vector: &[f32], links: Vec<PageId>) {
        if !self.copies_layer_zero() {
            return;
        }
        let bytes_max = self.layer_zero_copy_bytes_max.load(Ordering::Relaxed);
        let mut own = Vec::with_capacity(self.layout.code_bytes);
        self.layout.encode_code(vector, vector, &mut own);
        let mut navigation = self.navigation.write();
        navigation.add_code(page_id, &own, bytes_max);
        navigation.set_links((page_id, 0), links, bytes_max);
    }

    /// Drops the links of `page_id` on `layer`, whose list a mini-transaction is changing
    /// (called under the page's exclusive latch).
    pub(super) fn forget_links(&self, page_id: PageId, layer: usize) {
        self.navigation.write().drop_links((page_id, layer));
    }

    /// Drops everything the copy holds of the node in `page_id`, which is being freed or
    /// reused (called under the page's exclusive latch).
    pub(super) fn forget_node(&self, page_id: PageId) {
        let mut navigation = self.navigation.write();
        for layer in 0..=usize::from(self.layout.level_cap) {
            navigation.drop_links((page_id, layer));
        }
        navigation.drop_code(page_id);
        if let Some(vector) = navigation.vectors.remove(&page_id) {
            navigation.bytes -= std::mem::size_of_val(&*vector);
        }
    }

    /// Expands `page_id` on layer 0 from the copy: its unvisited neighbours (marked visited)
    /// with their code distances to `query`, appended to `found`. False, changing nothing,
    /// when the copy lacks the node's links or an unvisited neighbour's code: the caller
    /// reads the page (which fills the copy).
    pub(super) fn expand_in_copy(
        &self,
        query: &[f32],
        page_id: PageId,
        visited: &mut PageSet,
        cache: &mut VectorCache,
        found: &mut Vec<Candidate>,
    ) -> bool {
        if !self.copies_layer_zero() {
            return false;
        }
        let navigation = self.navigation.read();
        let Some(links) = navigation.links.get(&(page_id, 0)) else { return false };
        let decoded = &mut cache.decoded;
        let distance = |neighbour: PageId| {
            self.layout.decode_code(&navigation.codes[&neighbour], decoded);
            self.metric.distance(query, decoded)
        };
        let known = |neighbour: &PageId| navigation.codes.contains_key(neighbour);
        expand_links(links, (visited, found), known, distance)
    }
}

/// The unvisited neighbours among `links` (marked visited) with the distances `distance`
/// gives, appended to `found`. False, changing nothing, when an unvisited neighbour is not
/// `known` (the copy lacks what its distance needs).
fn expand_links(
    links: &[PageId],
    (visited, found): (&mut PageSet, &mut Vec<Candidate>),
    known: impl Fn(&PageId) -> bool,
    mut distance: impl FnMut(PageId) -> f64,
) -> bool {
    if !links.iter().all(|neighbour| visited.contains(neighbour) || known(neighbour)) {
        return false;
    }
    for &neighbour in links {
        if visited.insert(neighbour) {
            found.push((Distance(distance(neighbour)), neighbour));
        }
    }
    true
}

impl Hnsw {
    /// Entries of the layer-0 copy that disagree with the pages (in a quiet index: none):
    /// links that are not the node's layer-0 list, a code that is not its vector's, or an
    /// entry for a freed node. For tests and the invariant check's callers.
    pub fn check_layer_zero_copy(&self) -> super::Result<Vec<PageId>> {
        let (links, codes) = {
            let navigation = self.navigation.read();
            (navigation.links.clone(), navigation.codes.clone())
        };
        let mut wrong = Vec::new();
        let mut exact = Vec::new();
        let mut own = Vec::new();
        for (&(page_id, layer), copied) in &links {
            let agrees = self.read_node(page_id, |node| {
                let on_layer = usize::from(node.level()) >= layer;
                Ok(!node.is_freed() && on_layer && *node.links(layer) == **copied)
            })?;
            if !agrees {
                wrong.push(page_id);
            }
        }
        for (page_id, code) in &codes {
            let agrees = self.read_node(*page_id, |node| {
                self.node_vector_into(*page_id, node, &mut exact)?;
                own.clear();
                self.layout.encode_code(&exact, &exact, &mut own);
                Ok(!node.is_freed() && own == **code)
            })?;
            if !agrees {
                wrong.push(*page_id);
            }
        }
        Ok(wrong)
    }
}

/// Relative slack on a code's error bound and on a distance: the kernels sum in f32, so an
/// exact distance and the bound itself carry rounding errors of about 1e-6 relative.
const BOUND_SLACK: f64 = 1e-4;

impl Hnsw {
    /// For each candidate (its distance from a code or exact), a lower bound of its exact
    /// distance to `query`: its distance less the most its code can be off. A per-vector
    /// SQ8 code is within `step / 2` of the vector in every dimension, so by the triangle
    /// inequality an l2 distance is off by at most `step / 2 · sqrt(d)`, an l1 distance by
    /// `step / 2 · d` and an inner product by `|query| · step / 2 · sqrt(d)`; exact words
    /// are exact. A candidate whose code is not in the copy (or whose metric has no such
    /// bound: cosine, halfvec) gets no bound (minus infinity): it is re-ranked before
    /// anything is returned past it.
    pub(super) fn lower_bounds(&self, query: &[f32], candidates: &[Candidate]) -> Vec<f64> {
        let unbounded = || vec![f64::NEG_INFINITY; candidates.len()];
        if self.layout.codes == CodeKind::Words && self.metric.is_bits() {
            return candidates.iter().map(|(distance, _)| distance.0).collect();
        }
        if self.layout.codes != CodeKind::Sq8 {
            return unbounded();
        }
        let dimensions = f64::from(u32::try_from(self.layout.dimensions).expect("a small count"));
        let query_norm = || query.iter().map(|&value| f64::from(value).powi(2)).sum::<f64>().sqrt();
        let scale = match self.metric {
            Metric::L2 => dimensions.sqrt(),
            Metric::L1 => dimensions,
            Metric::InnerProduct => query_norm() * dimensions.sqrt(),
            _ => return unbounded(),
        };
        let navigation = self.navigation.read();
        candidates
            .iter()
            .map(|&(distance, page_id)| match navigation.codes.get(&page_id) {
                Some(code) => {
                    let step = f64::from(sq8_step(code));
                    let error = step / 2.0 * scale * (1.0 + BOUND_SLACK);
                    distance.0 - error - BOUND_SLACK * distance.0.abs().max(1.0)
                }
                None => f64::NEG_INFINITY,
            })
            .collect()
    }
}

impl Hnsw {
    /// Copies the links of `node` (in `page_id`) on upper `layer`, read from its page under
    /// its shared latch (a freed node, or one below `layer`, adds nothing).
    pub(super) fn copy_upper_links(&self, page_id: PageId, node: &NodeRef<'_>, layer: usize) {
        let bytes_max = self.layer_zero_copy_bytes_max.load(Ordering::Relaxed);
        if bytes_max == 0 || node.is_freed() || usize::from(node.level()) < layer {
            return;
        }
        if self.navigation.read().links.contains_key(&(page_id, layer)) {
            return;
        }
        self.navigation.write().set_links((page_id, layer), node.links(layer), bytes_max);
    }

    /// Expands `page_id` on upper `layer` from the copy: its unvisited neighbours (marked
    /// visited) with their exact distances from the upper layers' vectors. False, changing
    /// nothing, when the copy lacks its links or an unvisited neighbour's vector.
    pub(super) fn expand_upper_in_copy(
        &self,
        query: &[f32],
        (page_id, layer): (PageId, usize),
        visited: &mut PageSet,
        found: &mut Vec<Candidate>,
    ) -> bool {
        let navigation = self.navigation.read();
        let Some(links) = navigation.links.get(&(page_id, layer)) else { return false };
        let distance =
            |neighbour: PageId| self.metric.distance(query, &navigation.vectors[&neighbour]);
        let known = |neighbour: &PageId| navigation.vectors.contains_key(neighbour);
        expand_links(links, (visited, found), known, distance)
    }
}
