//! Reading the graph: node pages, the best-first search of one layer, and queries.

use std::collections::hash_map::Entry;

use rustc_hash::{FxHashMap, FxHashSet};
use tierdb_common::PageId;

use super::layout::{decode_code, NodeRef, NODE_PAGE_TYPE};
use super::{Distance, Hnsw, HnswError, Result, SearchResult, NAVIGATION_BYTES_MAX};

/// Sets and maps keyed by page id: a query probes them thousands of times, and page ids
/// come from the index's own pages, so the std hasher's resistance to chosen keys buys
/// nothing.
pub(super) type PageSet = FxHashSet<PageId>;
pub(super) type PageMap<V> = FxHashMap<PageId, V>;

/// What one operation has read, by page: exact vectors (an insert keeps them for the
/// neighbour heuristic; a query does not), and for a query the exact result of each node
/// expanded on layer 0 (its page was read then, so re-ranking needs no re-read); and the
/// scratch vectors a query decodes into, so a distance allocates nothing.
#[derive(Default)]
pub(super) struct VectorCache {
    keep_vectors: bool,
    pub vectors: PageMap<Vec<f32>>,
    pub expanded: PageMap<SearchResult>,
    pub exact: Vec<f32>,
    decoded: Vec<f32>,
}

impl VectorCache {
    /// A cache that keeps every exact vector it reads (inserts).
    pub(super) fn keeping_vectors() -> VectorCache {
        VectorCache { keep_vectors: true, ..VectorCache::default() }
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

    /// Loads the exact vector of `page_id` into `cache` (once per operation).
    pub(super) fn load_vector(&self, page_id: PageId, cache: &mut VectorCache) -> Result<()> {
        if let Entry::Vacant(slot) = cache.vectors.entry(page_id) {
            if let Some(vector) = self.navigation.read().vectors.get(&page_id) {
                slot.insert(vector.to_vec());
                return Ok(());
            }
            let vector = self.read_node(page_id, |node| {
                let vector = node.vector();
                self.remember(page_id, node.level(), &vector);
                Ok(vector)
            })?;
            slot.insert(vector);
        }
        Ok(())
    }

    /// Keeps the vector of an upper-layer node in the navigation copy while it has room.
    fn remember(&self, page_id: PageId, level: u8, vector: &[f32]) {
        let bytes = std::mem::size_of_val(vector);
        if level == 0 || self.navigation.read().bytes + bytes > NAVIGATION_BYTES_MAX {
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
            node.vector_into(exact);
            self.remember(page_id, node.level(), exact);
            Ok(Distance(self.metric.distance(query, exact)))
        })
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
        let mut unvisited = Vec::new();
        self.read_node(page_id, |node| {
            if usize::from(node.level()) < layer {
                return Err(HnswError::Corrupt {
                    page_id,
                    detail: format!("reached on layer={layer} above its level={}", node.level()),
                });
            }
            if use_codes {
                node.vector_into(&mut cache.exact);
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
                    decode_code(node.code(index), &mut cache.decoded);
                    let distance = self.metric.distance(query, &cache.decoded);
                    found.push((Distance(distance), neighbour));
                } else {
                    unvisited.push(neighbour);
                }
            }
            Ok(())
        })?;
        for neighbour in unvisited {
            found.push((self.exact_distance(query, neighbour, cache)?, neighbour));
        }
        Ok(())
    }
}
