//! The graph's invariant check (docs/design/014-vector-indexes.md, "Invariant check"): two
//! walks from the entry point over the index's pages. The first, over every layer, reads
//! each node it reaches once (its level, the code its in-links must carry, its vector and
//! row key for the caller); the second, over layer 0 only, re-reads each node and checks
//! its neighbour lists against what the first found. Broken structure is reported as a
//! list of violations, never as an error: only a failed page read is one.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

use tierdb_common::PageId;
use tierdb_storage::StorageError;

use super::layout::{decode_free_list, CodeKind, NodeRef, FREE_LIST_PAGE_TYPE};
use super::search::{PageMap, PageSet};
use super::{read_meta, Hnsw, HnswError, Metric, Result};

/// Violations a report lists; past this many it only counts them.
pub const VIOLATIONS_LISTED_MAX: usize = 100;

/// One broken invariant, at the page where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub page_id: PageId,
    pub detail: String,
}

/// What `Hnsw::check_graph` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    /// The meta page's node count (nodes inserted and not removed by purge).
    pub node_count: u64,
    /// Freed node pages on the free list (the meta page's count, checked against the list).
    pub free_pages: u64,
    /// Readable nodes reachable from the entry point over all layers.
    pub nodes_reached: u64,
    /// Of those, the nodes reachable from the entry point on layer 0 alone.
    pub nodes_reached_layer0: u64,
    pub top_level: u8,
    /// Links checked, all layers.
    pub links: u64,
    /// Every violation found; the first `VIOLATIONS_LISTED_MAX` are in `violations`.
    pub violation_count: u64,
    pub violations: Vec<Violation>,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.violation_count == 0
    }
}

/// What `Hnsw::check_graph` shows the caller of each readable node it reaches: its page,
/// exact vector and row key.
pub type NodeVisitor<'visit> = dyn FnMut(PageId, &[f32], &[u8]) + 'visit;

/// What the first walk learnt about one readable node.
struct NodeFacts {
    level: u8,
    /// A hash of the node's SQ8 code: every layer-0 link to it carries that code.
    code_hash: u64,
}

fn code_hash(code: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    code.hash(&mut hasher);
    hasher.finish()
}

/// The state of one check.
struct Walk<'visit> {
    entry: PageId,
    node_count: u64,
    top_level: u8,
    facts: PageMap<NodeFacts>,
    /// Pages linked to that are not readable nodes (each reported once).
    broken: PageSet,
    links: u64,
    report: Vec<Violation>,
    violation_count: u64,
    free_pages: u64,
    visit: &'visit mut NodeVisitor<'visit>,
}

impl Walk<'_> {
    fn violation(&mut self, page_id: PageId, detail: String) {
        self.violation_count += 1;
        if self.report.len() < VIOLATIONS_LISTED_MAX {
            self.report.push(Violation { page_id, detail });
        }
    }
}

/// A read's failure that is the graph's fault (a link to a page that is no node of this
/// index) rather than the store's: reported as a violation.
fn broken_structure(error: &HnswError) -> bool {
    matches!(
        error,
        HnswError::Corrupt { .. } | HnswError::Storage(StorageError::UnknownPage { .. })
    )
}

impl Hnsw {
    /// Checks the graph's invariants and returns the first violation as an error (tests of
    /// graphs that must be sound).
    pub fn check(&self) -> Result<CheckReport> {
        let report = self.check_graph(&mut |_, _, _| {})?;
        match report.violations.first() {
            Some(violation) => Err(HnswError::Corrupt {
                page_id: violation.page_id,
                detail: violation.detail.clone(),
            }),
            None => Ok(report),
        }
    }

    /// Walks the graph from the entry point and reports every broken invariant: links to
    /// pages that are no node of the index, to the node itself, to a node below the link's
    /// layer, twice to one node, or with a code other than the target's; lists over their
    /// capacity (2m on layer 0, m above); an empty layer-0 list in a graph of several nodes;
    /// levels above the top level; an entry point not on the top level; nodes not reachable
    /// on layer 0, or a node count unlike the nodes reached. `visit` sees each readable node
    /// reached (page, exact vector, row key) once. Blocks inserts meanwhile; errors only
    /// when a page cannot be read.
    pub fn check_graph(&self, visit: &mut NodeVisitor<'_>) -> Result<CheckReport> {
        let _writer = self.writer.lock();
        let meta = read_meta(&self.store, self.meta)?;
        let mut walk = Walk {
            entry: meta.entry.unwrap_or(PageId(0)),
            node_count: meta.node_count,
            top_level: meta.top_level,
            facts: PageMap::default(),
            broken: PageSet::default(),
            links: 0,
            report: Vec::new(),
            violation_count: 0,
            free_pages: 0,
            visit,
        };
        if meta.entry.is_none() {
            if meta.node_count != 0 {
                walk.violation(self.meta, format!("no entry point but count={}", meta.node_count));
            }
            self.verify_free_list(&mut walk, (meta.free_head, meta.free_count))?;
            return Ok(self.finish(walk, 0));
        }
        self.collect(&mut walk)?;
        let reached_layer0 = self.verify(&mut walk)?;
        self.verify_free_list(&mut walk, (meta.free_head, meta.free_count))?;
        Ok(self.finish(walk, reached_layer0))
    }

    /// First walk: every node reachable over any layer, read once.
    fn collect(&self, walk: &mut Walk<'_>) -> Result<()> {
        let mut queue = VecDeque::from([walk.entry]);
        let mut queued = PageSet::from_iter([walk.entry]);
        let mut code = Vec::with_capacity(self.layout.code_bytes);
        while let Some(page_id) = queue.pop_front() {
            let read = self.read_node(page_id, |node| {
                if node.is_freed() {
                    return Err(HnswError::Corrupt {
                        page_id,
                        detail: "a freed node (on the free list)".into(),
                    });
                }
                let mut vector = Vec::with_capacity(self.layout.dimensions);
                self.node_vector_into(page_id, node, &mut vector)?;
                code.clear();
                // A sign code depends on the list's owner too: verify_node checks those.
                if self.layout.codes != CodeKind::Signs {
                    self.layout.encode_code(&vector, &vector, &mut code);
                }
                (walk.visit)(page_id, &vector, node.key());
                let links: Vec<PageId> =
                    (0..=usize::from(node.level())).flat_map(|layer| node.links(layer)).collect();
                Ok((node.level(), links))
            });
            let (level, links) = match read {
                Ok(read) => read,
                Err(error) if broken_structure(&error) => {
                    walk.broken.insert(page_id);
                    walk.violation(page_id, format!("linked page is no readable node: {error}"));
                    continue;
                }
                Err(error) => return Err(error),
            };
            if level > walk.top_level {
                walk.violation(page_id, format!("level={level} above top={}", walk.top_level));
            }
            walk.facts.insert(page_id, NodeFacts { level, code_hash: code_hash(&code) });
            for target in links {
                if target != self.meta && queued.insert(target) {
                    queue.push_back(target);
                }
            }
        }
        Ok(())
    }

    /// Second walk: layer 0 from the entry point, checking every list of each node read;
    /// then the lists of the nodes it did not reach. Returns the nodes reached on layer 0.
    fn verify(&self, walk: &mut Walk<'_>) -> Result<u64> {
        let mut reached = PageSet::default();
        let mut queue = VecDeque::new();
        if walk.facts.contains_key(&walk.entry) {
            reached.insert(walk.entry);
            queue.push_back(walk.entry);
        }
        while let Some(page_id) = queue.pop_front() {
            for target in self.verify_node(walk, page_id)? {
                if walk.facts.contains_key(&target) && reached.insert(target) {
                    queue.push_back(target);
                }
            }
        }
        let mut missed: Vec<PageId> =
            walk.facts.keys().filter(|page_id| !reached.contains(page_id)).copied().collect();
        missed.sort_unstable();
        for page_id in missed {
            if self.every_node_reachable() {
                walk.violation(page_id, "not reachable from the entry point on layer 0".into());
            }
            self.verify_node(walk, page_id)?;
        }
        Ok(u64::try_from(reached.len()).expect("a count fits u64"))
    }

    /// Checks the lists of one node the first walk read; returns its layer-0 links.
    fn verify_node(&self, walk: &mut Walk<'_>, page_id: PageId) -> Result<Vec<PageId>> {
        let mut found = Vec::new();
        let mut owner = Vec::new();
        let lists = self.read_node(page_id, |node| {
            let codes = self.layout.code_bytes > 0;
            self.node_vector_into(page_id, node, &mut owner)?;
            Ok((0..=usize::from(node.level())).map(|layer| list_of(node, layer, codes)).collect())
        })?;
        let lists: Vec<Vec<(PageId, u64)>> = lists;
        let sign_codes = match self.layout.codes {
            CodeKind::Signs => Some(self.expected_sign_codes(walk, &owner, &lists[0])),
            _ => None,
        };
        for (layer, list) in lists.iter().enumerate() {
            self.verify_list(walk, (page_id, layer), list, sign_codes.as_ref(), &mut found);
        }
        Ok(found)
    }

    /// The hash of the sign code each readable node of a layer-0 list should have in the
    /// list of `owner` (a sign code is relative to its list's owner: one read per link).
    fn expected_sign_codes(
        &self,
        walk: &Walk<'_>,
        owner: &[f32],
        list: &[(PageId, u64)],
    ) -> PageMap<u64> {
        let mut expected = PageMap::default();
        let mut vector = Vec::with_capacity(self.layout.dimensions);
        let mut code = Vec::with_capacity(self.layout.code_bytes);
        for &(target, _) in list {
            if !walk.facts.contains_key(&target) {
                continue;
            }
            let read =
                self.read_node(target, |node| self.node_vector_into(target, node, &mut vector));
            if read.is_ok() {
                code.clear();
                self.layout.encode_code(&vector, owner, &mut code);
                expected.insert(target, code_hash(&code));
            }
        }
        expected
    }

    fn verify_list(
        &self,
        walk: &mut Walk<'_>,
        (page_id, layer): (PageId, usize),
        list: &[(PageId, u64)],
        sign_codes: Option<&PageMap<u64>>,
        layer0_links: &mut Vec<PageId>,
    ) {
        assert!(list.len() <= self.layout.capacity(layer), "NodeRef::open checks capacity");
        if layer == 0 && list.is_empty() && walk.node_count > 1 {
            walk.violation(page_id, "no link on layer 0 in a graph of several nodes".into());
        }
        let mut seen = PageSet::default();
        for &(target, code) in list {
            walk.links += 1;
            let problem = if target == page_id {
                Some("links to itself".to_string())
            } else if !seen.insert(target) {
                Some(format!("links twice to {target}"))
            } else if target == self.meta || walk.broken.contains(&target) {
                Some(format!("links to {target}, no node of the index"))
            } else {
                let facts = &walk.facts[&target];
                if usize::from(facts.level) < layer {
                    Some(format!("links to {target} of level={}", facts.level))
                } else if layer == 0
                    && self.layout.code_bytes > 0
                    && sign_codes.map_or(Some(facts.code_hash), |codes| codes.get(&target).copied())
                        != Some(code)
                {
                    Some(format!("code of the link to {target} is not its vector's"))
                } else {
                    None
                }
            };
            if let Some(problem) = problem {
                walk.violation(page_id, format!("layer={layer}: {problem}"));
            }
            if layer == 0 {
                layer0_links.push(target);
            }
        }
    }

    /// The free list: every page it names is a freed node page that the walks did not
    /// reach, named once, and their number is the meta page's free count.
    fn verify_free_list(
        &self,
        walk: &mut Walk<'_>,
        (head, count): (Option<PageId>, u64),
    ) -> Result<()> {
        walk.free_pages = count;
        let mut listed = PageSet::default();
        let mut freed_listed = 0u64;
        let mut next = head;
        while let Some(list_page) = next {
            if !listed.insert(list_page) {
                walk.violation(list_page, "free list loops".into());
                break;
            }
            let page = self.store.read(list_page)?;
            if page.page_type() != FREE_LIST_PAGE_TYPE {
                walk.violation(list_page, "free list names a page of another type".into());
                break;
            }
            let (following, ids) = decode_free_list(list_page, page.payload())?;
            drop(page);
            for page_id in ids {
                freed_listed += 1;
                let freed = self.read_node(page_id, |node| Ok(node.is_freed()));
                if !matches!(freed, Ok(true)) || walk.facts.contains_key(&page_id) {
                    walk.violation(page_id, "on the free list but not a freed node".into());
                }
                if !listed.insert(page_id) {
                    walk.violation(page_id, "on the free list twice".into());
                }
            }
            next = following;
        }
        if freed_listed != count {
            walk.violation(self.meta, format!("free count={count} but {freed_listed} listed"));
        }
        Ok(())
    }

    /// Under the negated inner product the heuristic may leave nodes without in-links (a
    /// large-norm node is "nearer" to everything; pgvector's graph does the same), so only
    /// the other metrics require every node to be reachable.
    fn every_node_reachable(&self) -> bool {
        self.metric.base() != Metric::InnerProduct
    }

    fn finish(&self, mut walk: Walk<'_>, reached_layer0: u64) -> CheckReport {
        let reached = u64::try_from(walk.facts.len()).expect("a count fits u64");
        if let Some(entry) = walk.facts.get(&walk.entry) {
            if entry.level != walk.top_level {
                let detail = format!("entry level={} top={}", entry.level, walk.top_level);
                walk.violation(self.meta, detail);
            }
        }
        if reached > walk.node_count {
            walk.violation(self.meta, format!("reached={reached} above count={}", walk.node_count));
        }
        if reached < walk.node_count && self.every_node_reachable() {
            let detail =
                format!("count={} but reached={reached} from the entry point", walk.node_count);
            walk.violation(self.meta, detail);
        }
        CheckReport {
            node_count: walk.node_count,
            free_pages: walk.free_pages,
            nodes_reached: reached,
            nodes_reached_layer0: reached_layer0,
            top_level: walk.top_level,
            links: walk.links,
            violation_count: walk.violation_count,
            violations: walk.report,
        }
    }
}

/// A node's links on `layer` with a hash of each link's code (0 above layer 0 or without
/// codes).
fn list_of(node: &NodeRef<'_>, layer: usize, codes: bool) -> Vec<(PageId, u64)> {
    (0..node.count(layer))
        .map(|index| {
            let code = if layer == 0 && codes { code_hash(node.code(index)) } else { 0 };
            (node.link(layer, index), code)
        })
        .collect()
}
