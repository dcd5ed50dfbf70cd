//! HNSW, the graph vector index, in pages of the page store (docs/design/014-vector-indexes.md).
//!
//! One node per page: the exact vector, the row key, and a neighbour list per layer; the
//! layer-0 list carries an SQ8 code of each neighbour, so that a query's hop costs one page
//! read. Every insert is one mini-transaction (one WAL record), so recovery is physical and
//! needs no HNSW code. Entries carry no visibility: the engine checks rows like it does for
//! B+tree secondary indexes.

mod build;
mod check;
mod graph;
mod layout;
mod navigation;
mod purge;
mod scan;
mod search;
mod sign_code;

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tierdb_common::{PageId, SplitMix64};
use tierdb_storage::PageStore;

pub(crate) use crate::index::Distance;
pub use crate::index::{HnswError, Metric, Result, SearchResult};
pub use build::{BuildEntries, BUILD_THREADS_MAX, PARALLEL_BUILD_ENTRIES_MIN};
pub use check::{CheckReport, NodeVisitor, Violation, VIOLATIONS_LISTED_MAX};
pub use layout::{
    dimensions_max, CodeKind, Layout, EF_CONSTRUCTION_MAX, EF_CONSTRUCTION_MIN, LEVELS_MAX, M_MAX,
    M_MIN, ROW_KEY_BYTES_MAX, VECTOR_PAGES_MAX,
};
use layout::{Meta, META_PAGE_TYPE};
use navigation::Navigation;
pub use navigation::{
    set_layer_zero_copy_bytes_max, LayerZeroCopyStats, LAYER_ZERO_COPY_BYTES_DEFAULT,
};
pub use purge::{IsDead, PurgeStats, PURGE_MTR_PAGES_MAX};
pub use scan::{
    IterativeScan, Scan, ScanOptions, ScanState, MAX_SCAN_TUPLES_DEFAULT, MAX_SCAN_TUPLES_MAX,
    MAX_SCAN_TUPLES_MIN,
};

/// pgvector's largest bit(n) an HNSW index takes (HNSW_MAX_DIM * 32). A node must also
/// fit a page: `bit_dimensions_max` is tierdb's own, lower limit at a given m.
pub const BIT_DIMENSIONS_MAX: usize = 64_000;

/// Largest bit(n) an index with `m` accepts (its words fit a node page, as
/// `dimensions_max` for f32 slots).
pub fn bit_dimensions_max(m: usize) -> usize {
    (dimensions_max(m) * crate::BITS_PER_WORD).min(BIT_DIMENSIONS_MAX)
}

/// pgvector's defaults.
pub const M_DEFAULT: usize = 16;
pub const EF_CONSTRUCTION_DEFAULT: usize = 64;
pub const EF_SEARCH_DEFAULT: usize = 40;
/// pgvector's bounds of `hnsw.ef_search`.
pub const EF_SEARCH_MIN: usize = 1;
pub const EF_SEARCH_MAX: usize = 1000;

/// The options of `CREATE INDEX ... USING hnsw ... WITH (...)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexParameters {
    pub dimensions: usize,
    pub metric: Metric,
    pub m: usize,
    pub ef_construction: usize,
}

impl IndexParameters {
    /// Checks the options against pgvector's bounds (its messages are the SQL layer's).
    pub fn validate(&self) -> Result<Layout> {
        if !(M_MIN..=M_MAX).contains(&self.m) {
            return Err(HnswError::InvalidArgument(format!("m={} out of bounds", self.m)));
        }
        if !(EF_CONSTRUCTION_MIN..=EF_CONSTRUCTION_MAX).contains(&self.ef_construction)
            || self.ef_construction < 2 * self.m
        {
            return Err(HnswError::InvalidArgument(format!(
                "ef_construction={} out of bounds for m={}",
                self.ef_construction, self.m
            )));
        }
        if self.metric.is_bits() && self.dimensions > BIT_DIMENSIONS_MAX {
            return Err(HnswError::InvalidArgument(format!(
                "hnsw index on {} bits (at most {BIT_DIMENSIONS_MAX})",
                self.dimensions
            )));
        }
        Layout::choose(self.metric.elements(self.dimensions), self.m, self.metric)
    }
}

/// A handle on one HNSW index. Inserts are serialized by the handle; searches run
/// concurrently with them and with each other.
pub struct Hnsw {
    store: Arc<PageStore>,
    meta: PageId,
    layout: Layout,
    metric: Metric,
    ef_construction: usize,
    /// The single writer's lock, its level generator and the vectors it keeps.
    writer: Mutex<Writer>,
    /// The exact vectors of upper-layer nodes (level >= 1), by page, as searches read
    /// them: the greedy descent of every query and insert walks these few nodes (about
    /// 1/m of the index), and without them each upper-layer distance is a page read.
    /// A node's vector never changes; purge drops the entries of the nodes it frees under
    /// their exclusive latches (a reader adds none for a freed node, so none comes back).
    /// Bounded by `NAVIGATION_BYTES_MAX`; once full, new nodes are read from their pages.
    /// Beside them, a bounded copy of layer 0 (`navigation.rs`): each node's neighbour
    /// ids and code, bounded by `layer_zero_copy_bytes_max`.
    navigation: Box<RwLock<Navigation>>,
    layer_zero_copy_bytes_max: AtomicUsize,
    /// Held through a purge: one at a time (VACUUM and the purge thread may both start
    /// one), since each relies on the writer's `touched` record of its own walk.
    purging: Mutex<()>,
}

/// Bytes of vectors `Hnsw::navigation` holds at most per index (128 dimensions: 131,072
/// upper-layer nodes, the upper layers of about two million vectors at m = 16).
pub const NAVIGATION_BYTES_MAX: usize = 64 << 20;

struct Writer {
    random: SplitMix64,
    vectors: search::Vectors,
    /// While a purge walks the graph without the writer's lock: the pages each insert
    /// wrote (the new node and the neighbours whose lists changed), whose lists the purge
    /// re-reads before repairing, since they may link to nodes it is removing.
    touched: Option<purge::Touched>,
}

impl Hnsw {
    /// Creates an empty index; its meta page id is its durable name.
    pub fn create(store: Arc<PageStore>, parameters: IndexParameters) -> Result<Hnsw> {
        let layout = parameters.validate()?;
        let mut mtr = store.mtr();
        let (slot, meta) = mtr.allocate(META_PAGE_TYPE)?;
        let fields = Meta {
            layout,
            metric: parameters.metric,
            ef_construction: parameters.ef_construction,
            top_level: 0,
            entry: None,
            node_count: 0,
            free_head: None,
            free_count: 0,
        };
        mtr.write(slot, 0, &fields.encode());
        mtr.commit()?;
        Ok(Hnsw::from_meta(store, meta, fields))
    }

    pub fn open(store: Arc<PageStore>, meta: PageId) -> Result<Hnsw> {
        let fields = read_meta(&store, meta)?;
        Ok(Hnsw::from_meta(store, meta, fields))
    }

    fn from_meta(store: Arc<PageStore>, meta: PageId, fields: Meta) -> Hnsw {
        Hnsw {
            store,
            meta,
            layout: fields.layout,
            metric: fields.metric,
            ef_construction: fields.ef_construction,
            writer: Mutex::new(Writer {
                random: SplitMix64::new(meta.0 ^ fields.node_count.rotate_left(32)),
                vectors: search::Vectors::default(),
                touched: None,
            }),
            navigation: Box::new(RwLock::new(Navigation::default())),
            layer_zero_copy_bytes_max: AtomicUsize::new(navigation::layer_zero_copy_bytes_max()),
            purging: Mutex::new(()),
        }
    }

    pub fn meta_page(&self) -> PageId {
        self.meta
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// Nodes in the graph (the meta page's count).
    pub fn node_count(&self) -> Result<u64> {
        Ok(read_meta(&self.store, self.meta)?.node_count)
    }

    /// Freed node pages waiting on the free list for inserts to reuse them.
    pub fn free_pages(&self) -> Result<u64> {
        Ok(read_meta(&self.store, self.meta)?.free_count)
    }

    fn check_vector(&self, vector: &[f32]) -> Result<()> {
        check_dimensions(self.layout.dimensions, vector)
    }
}

fn check_dimensions(dimensions: usize, vector: &[f32]) -> Result<()> {
    if vector.len() != dimensions {
        return Err(HnswError::InvalidArgument(format!(
            "expected {dimensions} dimensions, not {}",
            vector.len()
        )));
    }
    Ok(())
}

/// The checks of an entry `insert` and a build take: the index's dimensions, a key that
/// fits a node.
fn check_entry(dimensions: usize, vector: &[f32], key: &[u8]) -> Result<()> {
    check_dimensions(dimensions, vector)?;
    if key.len() > layout::ROW_KEY_BYTES_MAX {
        return Err(HnswError::InvalidArgument(format!(
            "hnsw row key of {} bytes above {}",
            key.len(),
            layout::ROW_KEY_BYTES_MAX
        )));
    }
    Ok(())
}

fn read_meta(store: &PageStore, meta: PageId) -> Result<Meta> {
    let page = store.read(meta)?;
    Meta::decode(meta, page.payload())
}
