//! Reading the graph: node pages, the best-first search of one layer, and queries.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use tierdb_common::PageId;

use super::layout::{decode_code, NodeRef, NODE_PAGE_TYPE};
use super::{Distance, Hnsw, HnswError, Result, SearchResult};

/// What one operation has read, by page: exact vectors, and for a query the exact result of
/// each node expanded on layer 0 (its page was read then, so re-ranking needs no re-read).
#[derive(Default)]
pub(super) struct VectorCache {
    pub vectors: HashMap<PageId, Vec<f32>>,
    pub expanded: HashMap<PageId, SearchResult>,
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
            slot.insert(self.read_node(page_id, |node| Ok(node.vector()))?);
        }
        Ok(())
    }

    pub(super) fn exact_distance(
        &self,
        query: &[f32],
        page_id: PageId,
        cache: &mut VectorCache,
    ) -> Result<Distance> {
        self.load_vector(page_id, cache)?;
        Ok(Distance(self.metric.distance(query, &cache.vectors[&page_id])))
    }

    /// The unvisited neighbours of `page_id` on `layer` with their distances to `query`
    /// (marked visited).
    pub(super) fn expand(
        &self,
        query: &[f32],
        page_id: PageId,
        layer: usize,
        distances: Distances,
        visited: &mut HashSet<PageId>,
        cache: &mut VectorCache,
    ) -> Result<Vec<Candidate>> {
        let use_codes = distances == Distances::Codes && layer == 0 && self.layout.code_bytes > 0;
        let mut decoded = Vec::with_capacity(self.layout.dimensions);
        let mut coded = Vec::new();
        let links = self.read_node(page_id, |node| {
            if usize::from(node.level()) < layer {
                return Err(HnswError::Corrupt {
                    page_id,
                    detail: format!("reached on layer={layer} above its level={}", node.level()),
                });
            }
            if use_codes {
                let result = SearchResult {
                    distance: self.metric.distance(query, &node.vector()),
                    key: node.key().to_vec(),
                };
                cache.expanded.insert(page_id, result);
            }
            let mut unvisited = Vec::new();
            for index in 0..node.count(layer) {
                let neighbour = node.link(layer, index);
                if !visited.insert(neighbour) {
                    continue;
                }
                if use_codes {
                    decode_code(node.code(index), &mut decoded);
                    coded.push((Distance(self.metric.distance(query, &decoded)), neighbour));
                } else {
                    unvisited.push(neighbour);
                }
            }
            Ok(unvisited)
        })?;
        for neighbour in links {
            coded.push((self.exact_distance(query, neighbour, cache)?, neighbour));
        }
        Ok(coded)
    }
}
