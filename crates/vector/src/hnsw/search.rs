//! Reading the graph: node pages, the best-first search of one layer, and queries.

use rustc_hash::{FxHashMap, FxHashSet};
use tierdb_common::PageId;

use super::layout::{CodeKind, NodeRef, NODE_PAGE_TYPE, VECTOR_PAGE_TYPE};
use super::sign_code::ListTerms;
use super::{Distance, Hnsw, HnswError, Result, SearchResult, NAVIGATION_BYTES_MAX};

/// Sets and maps keyed by page id: a query probes them thousands of times, and page ids
/// come from the index's own pages, so the std hasher's resistance to chosen keys buys
/// nothing.
pub(super) type PageSet = FxHashSet<PageId>;
pub(super) type PageMap<V> = FxHashMap<PageId, V>;

/// Exact vectors by page, kept for an insert's neighbour heuristic. An index's writer keeps
/// them across inserts up to `kept_bytes_max` (a build sets it: every node's vector is then
/// read from its page once per build instead of once per distance; a build measured 45% of
/// its time in those reads); past it, vectors are kept for one operation only.
#[derive(Default)]
pub(super) struct Vectors {
    kept: PageMap<Box<[f32]>>,
    kept_bytes: usize,
    pub kept_bytes_max: usize,
    /// Vectors beyond the budget, for the current operation only.
    overflow: PageMap<Box<[f32]>>,
}

/// What one kept vector costs besides its values: the map's entry and the box's header.
const VECTOR_OVERHEAD_BYTES: usize = 32;

impl Vectors {
    pub(super) fn get(&self, page_id: &PageId) -> Option<&[f32]> {
        self.kept.get(page_id).or_else(|| self.overflow.get(page_id)).map(|vector| &**vector)
    }

    pub(super) fn contains(&self, page_id: &PageId) -> bool {
        self.kept.contains_key(page_id) || self.overflow.contains_key(page_id)
    }

    pub(super) fn insert(&mut self, page_id: PageId, vector: &[f32]) {
        let bytes = std::mem::size_of_val(vector) + VECTOR_OVERHEAD_BYTES;
        if self.kept_bytes + bytes <= self.kept_bytes_max {
            if self.kept.insert(page_id, vector.into()).is_none() {
                self.kept_bytes += bytes;
            }
        } else {
            self.overflow.insert(page_id, vector.into());
        }
    }

    /// Drops the vectors kept for the operation that ends.
    pub(super) fn end_operation(&mut self) {
        self.overflow.clear();
    }

    /// Sets the budget; a smaller one drops every kept vector.
    pub(super) fn set_budget(&mut self, bytes_max: usize) {
        if bytes_max < self.kept_bytes {
            self.kept = PageMap::default();
            self.kept_bytes = 0;
        }
        self.kept_bytes_max = bytes_max;
    }
}

impl std::ops::Index<&PageId> for Vectors {
    type Output = [f32];

    fn index(&self, page_id: &PageId) -> &[f32] {
        self.get(page_id).expect("the vector was loaded by this operation")
    }
}

/// What one operation has read, by page: exact vectors (an insert keeps them for the
/// neighbour heuristic; a query does not), and for a query the exact result of each node
/// expanded on layer 0 (its page was read then, so re-ranking needs no re-read); and the
/// scratch vectors a query decodes into, so a distance allocates nothing.
#[derive(Default)]
pub(super) struct VectorCache {
    keep_vectors: bool,
    pub vectors: Vectors,
    pub expanded: PageMap<SearchResult>,
    pub exact: Vec<f32>,
    pub decoded: Vec<f32>,
    /// The terms of sign-code estimates for the list being read (its owner and the query).
    list_terms: ListTerms,
}

impl VectorCache {
    /// A cache that keeps every exact vector it reads (inserts), starting from `vectors`.
    pub(super) fn keeping(vectors: Vectors) -> VectorCache {
        VectorCache { keep_vectors: true, vectors, ..VectorCache::default() }
    }
}

/// A node and its distance to the query (or to the node being linked).
pub(super) type Candidate = (Distance, PageId);

/// How a layer search computes the distance to a neighbour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Distances {
    /// From the neighbour's own page: one read per neighbour (cached per operation).
    Exact,
    /// From the code beside the link on the expanded node's page: no further read.
    Codes,
}

impl Hnsw {
    /// Runs `visit` on the node in `page_id`, holding its shared latch only meanwhile.
    pub(super) fn read_node<T>(
        &self,
        page_id: PageId,
        visit: impl FnOnce(&NodeRef<'_>) -> Result<T>,
    ) -> Result<T> {
        let page = self.store.read(page_id)?;
        if page.page_type() != NODE_PAGE_TYPE {
            return Err(HnswError::Corrupt {
                page_id,
                detail: format!("not an hnsw node page type={:?}", page.page_type()),
            });
        }
        visit(&NodeRef::open(self.layout, page_id, page.payload())?)
    }

    /// The exact vector of `node` (in `page_id`) into `out`: from the node page, or from its
    /// vector pages. Called under the node's shared (or an mtr's exclusive) latch, so the
    /// vector pages belong to the node throughout: an insert that reuses a freed node page
    /// rewrites its vector pages under the node's exclusive latch (design 014, "Vector
    /// pages"), and a node page keeps its vector pages for life.
    pub(super) fn node_vector_into(
        &self,
        page_id: PageId,
        node: &NodeRef<'_>,
        out: &mut Vec<f32>,
    ) -> Result<()> {
        if self.layout.vector_pages == 0 {
            node.vector_into(out);
            return Ok(());
        }
        out.clear();
        for (part, vector_page) in node.vector_pages().enumerate() {
            let page = self.store.read(vector_page)?;
            if page.page_type() != VECTOR_PAGE_TYPE {
                return Err(HnswError::Corrupt {
                    page_id: vector_page,
                    detail: format!("not an hnsw vector page type={:?}", page.page_type()),
                });
            }
            let parts = (vector_page, page.payload());
            self.layout.decode_vector_page(parts, (page_id, part), out)?;
        }
        assert!(out.len() == self.layout.dimensions, "vector pages hold every dimension");
        Ok(())
    }

    /// Loads the exact vector of `page_id` into `cache` (once per operation).
    pub(super) fn load_vector(&self, page_id: PageId, cache: &mut VectorCache) -> Result<()> {
        if cache.vectors.contains(&page_id) {
            return Ok(());
        }
        if let Some(vector) = self.navigation.read().vectors.get(&page_id) {
            cache.vectors.insert(page_id, vector);
            return Ok(());
        }
        let exact = &mut cache.exact;
        self.read_node(page_id, |node| {
            self.node_vector_into(page_id, node, exact)?;
            self.remember(page_id, node, exact);
            Ok(())
        })?;
        cache.vectors.insert(page_id, &cache.exact);
        Ok(())
    }

    /// Keeps the vector of an upper-layer node in the navigation copy while it has room.
    /// Called under the node's shared latch, so a purge that frees the node (under its
    /// exclusive latch) and then drops its entry never leaves one behind; a freed node is
    /// not kept (its page may be reused for another vector).
    fn remember(&self, page_id: PageId, node: &NodeRef<'_>, vector: &[f32]) {
        let bytes = std::mem::size_of_val(vector);
        if node.level() == 0
            || node.is_freed()
            || self.navigation.read().bytes + bytes > NAVIGATION_BYTES_MAX
        {
            return;
        }
        let mut navigation = self.navigation.write();
        if navigation.bytes + bytes <= NAVIGATION_BYTES_MAX
            && navigation.vectors.insert(page_id, vector.into()).is_none()
        {
            navigation.bytes += bytes;
        }
    }

    pub(super) fn exact_distance(
        &self,
        query: &[f32],
        page_id: PageId,
        cache: &mut VectorCache,
    ) -> Result<Distance> {
        if cache.keep_vectors {
            self.load_vector(page_id, cache)?;
        }
        if let Some(vector) = cache.vectors.get(&page_id) {
            return Ok(Distance(self.metric.distance(query, vector)));
        }
        if let Some(vector) = self.navigation.read().vectors.get(&page_id) {
            return Ok(Distance(self.metric.distance(query, vector)));
        }
        let exact = &mut cache.exact;
        self.read_node(page_id, |node| {
            self.node_vector_into(page_id, node, exact)?;
            self.remember(page_id, node, exact);
            Ok(Distance(self.metric.distance(query, exact)))
        })
    }

    /// Asks the store to load the pages of `page_ids` whose exact vectors are about to be
    /// read and are in neither `cache` nor the navigation copy: the reads of one hop's
    /// neighbours then run in parallel instead of one after the other.
    fn read_ahead_vectors(&self, page_ids: &[PageId], cache: &VectorCache) {
        if page_ids.len() < 2 {
            return;
        }
        let navigation = self.navigation.read();
        let unread: Vec<PageId> = page_ids
            .iter()
            .copied()
            .filter(|page_id| {
                !cache.vectors.contains(page_id) && !navigation.vectors.contains_key(page_id)
            })
            .collect();
        drop(navigation);
        if unread.len() > 1 {
            self.store.read_ahead(&unread);
        }
    }

    /// The unvisited neighbours of `page_id` on `layer` with their distances to `query`
    /// (marked visited), appended to `found`.
    pub(super) fn expand(
        &self,
        query: &[f32],
        (page_id, layer): (PageId, usize),
        distances: Distances,
        visited: &mut PageSet,
        cache: &mut VectorCache,
        found: &mut Vec<Candidate>,
    ) -> Result<()> {
        let use_codes = distances == Distances::Codes && layer == 0 && self.layout.code_bytes > 0;
        if use_codes && self.expand_in_copy(query, page_id, visited, cache, found) {
            return Ok(());
        }
        if layer > 0 && self.expand_upper_in_copy(query, (page_id, layer), visited, found) {
            return Ok(());
        }
        let mut unvisited = Vec::new();
        self.read_node(page_id, |node| {
            if usize::from(node.level()) < layer {
                // A freed page that an insert reused for a lower node since this search
                // read the link to it (the check reports such a link in a quiet graph).
                return Ok(());
            }
            if layer > 0 {
                self.copy_upper_links(page_id, node, layer);
            }
            // A node purge freed after this search read the link to it: its lists are
            // intact until its page is reused, so the search steps through it, but it is
            // no result.
            if use_codes {
                self.node_vector_into(page_id, node, &mut cache.exact)?;
                self.copy_node(page_id, node, &cache.exact);
                if self.layout.codes == CodeKind::Signs {
                    cache.list_terms.fill(self.metric, query, &cache.exact);
                }
            }
            if use_codes && !node.is_freed() {
                let result = SearchResult {
                    distance: self.metric.distance(query, &cache.exact),
                    key: node.key().to_vec(),
                };
                cache.expanded.insert(page_id, result);
            }
            for index in 0..node.count(layer) {
                let neighbour = node.link(layer, index);
                if !visited.insert(neighbour) {
                    continue;
                }
                if use_codes {
                    let distance = self.code_distance(query, node.code(index), cache);
                    found.push((Distance(distance), neighbour));
                } else {
                    unvisited.push(neighbour);
                }
            }
            Ok(())
        })?;
        self.read_ahead_vectors(&unvisited, cache);
        for neighbour in unvisited {
            found.push((self.exact_distance(query, neighbour, cache)?, neighbour));
        }
        Ok(())
    }

    /// The distance from `query` to a neighbour as its layer-0 code gives it: decoded
    /// (SQ8, exact words) or estimated (sign codes, from the list's terms).
    fn code_distance(&self, query: &[f32], code: &[u8], cache: &mut VectorCache) -> f64 {
        if self.layout.codes == CodeKind::Signs {
            return cache.list_terms.estimate(self.metric, code);
        }
        self.layout.decode_code(code, &mut cache.decoded);
        self.metric.distance(query, &cache.decoded)
    }
}
