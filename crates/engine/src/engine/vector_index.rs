//! Vector indexes of a table, HNSW and ivfflat (docs/design/014-vector-indexes.md, "MVCC"):
//! one graph or set of lists per index (crate tierdb-vector) over one vector column, whose
//! values are stored as pgvector's little-endian f32 bytes. Entries are (vector, row key) with no visibility: a search reads
//! each row through the table and keeps it only if the snapshot sees it with the entry's
//! vector. DELETE leaves entries; an UPDATE that keeps the vector adds none. A partial index
//! (CREATE INDEX ... WHERE, `partial.rs`) holds entries of the versions its predicate
//! accepts only, and a search returns a row only if its visible version is accepted too.

use std::collections::{HashSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use tierdb_access::Direction;
use tierdb_common::{Lsn, PageId, SplitMix64};
use tierdb_vector::hnsw::{self, Hnsw, Metric, ScanOptions, SearchResult};
use tierdb_vector::ivfflat::{self, IvfFlat};

use crate::error::{EngineError, Result};
use crate::row::{decode_versions, Row, Value, Version};

use super::partial::IndexPredicates;
use super::table::{
    RowKey, Table, TableRef, VectorGraph, VectorIndex, VectorIndexDef, VectorMethod,
};
use super::{IndexPredicate, Shared, Transaction};

pub(super) fn metric_code(metric: Metric) -> i64 {
    i64::from(metric.code())
}

pub(super) fn metric_of(code: i64) -> Option<Metric> {
    u8::try_from(code).ok().and_then(Metric::from_code)
}

/// The packed bits of a bit column's stored form (the SQL layer's `bit_storage_bytes`: each
/// zero byte written as 0x00 0x01, then 0x00 0x00 and the bit count, u32 big-endian), or
/// None if it is not one.
fn stored_bits(stored: &[u8]) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(stored.len());
    let mut index = 0;
    loop {
        let (byte, next) = (*stored.get(index)?, *stored.get(index + 1)?);
        if byte == 0 && next == 0 {
            break;
        }
        if byte == 0 && next != 1 {
            return None;
        }
        bytes.push(byte);
        index += if byte == 0 { 2 } else { 1 };
    }
    let length: [u8; 4] = stored.get(index + 2..index + 6)?.try_into().ok()?;
    let bits = usize::try_from(u32::from_be_bytes(length)).ok()?;
    (bits.div_ceil(8) == bytes.len()).then_some(bytes)
}

/// The vector in `row[column]` (None for NULL). The SQL layer stores a vector as its f32
/// values, little-endian, in a bytes value; a bit index's vector is the column's packed bits
/// in words (`tierdb_vector::bits_to_words`).
pub(super) fn vector_of(row: &[Value], column: usize, metric: Metric) -> Result<Option<Vec<f32>>> {
    match row.get(column) {
        Some(Value::Null) => Ok(None),
        Some(Value::Bytes(stored)) if metric.is_bits() => match stored_bits(stored) {
            Some(bits) => Ok(Some(tierdb_vector::bits_to_words(&bits))),
            None => Err(EngineError::InvalidRow {
                detail: format!("column={column} of a bit index holds no bit string"),
            }),
        },
        // A halfvec column stores little-endian half bit patterns: widened exactly.
        Some(Value::Bytes(bytes)) if metric.is_half() && bytes.len() % 2 == 0 => Ok(Some(
            bytes
                .chunks_exact(2)
                .map(|chunk| tierdb_vector::f16::from_le_bytes([chunk[0], chunk[1]]).to_f32())
                .collect(),
        )),
        Some(Value::Bytes(bytes)) if !metric.is_half() && bytes.len() % 4 == 0 => Ok(Some(
            bytes
                .chunks_exact(4)
                .map(|chunk| f32::from_le_bytes(chunk.try_into().expect("4 bytes")))
                .collect(),
        )),
        _ => Err(EngineError::InvalidRow {
            detail: format!("column={column} of a vector index holds no vector"),
        }),
    }
}

impl VectorGraph {
    /// An empty index for `def` (ivfflat: over `centers`, `lists` × dimensions values).
    pub(super) fn create(
        store: &Arc<tierdb_storage::PageStore>,
        def: &VectorIndexDef,
        centers: &[f32],
    ) -> Result<VectorGraph> {
        let store = Arc::clone(store);
        Ok(match def.method {
            VectorMethod::Hnsw => VectorGraph::Hnsw(Hnsw::create(store, def.parameters)?),
            VectorMethod::IvfFlat { lists } => {
                let parameters = ivfflat::IndexParameters {
                    dimensions: def.parameters.dimensions,
                    metric: def.parameters.metric,
                    lists,
                };
                VectorGraph::IvfFlat(IvfFlat::create(store, parameters, centers)?)
            }
        })
    }

    pub(super) fn meta_page(&self) -> PageId {
        match self {
            VectorGraph::Hnsw(graph) => graph.meta_page(),
            VectorGraph::IvfFlat(lists) => lists.meta_page(),
        }
    }

    pub(super) fn metric(&self) -> Metric {
        match self {
            VectorGraph::Hnsw(graph) => graph.metric(),
            VectorGraph::IvfFlat(lists) => lists.metric(),
        }
    }

    fn insert(&self, vector: &[f32], key: &[u8]) -> Result<Option<Lsn>> {
        Ok(match self {
            VectorGraph::Hnsw(graph) => graph.insert(vector, key)?,
            VectorGraph::IvfFlat(lists) => lists.insert(vector, key)?,
        })
    }

    /// The centers a fresh copy of this index starts with (TRUNCATE keeps an ivfflat
    /// index's centers).
    pub(super) fn centers(&self) -> &[f32] {
        match self {
            VectorGraph::Hnsw(_) => &[],
            VectorGraph::IvfFlat(lists) => lists.centers(),
        }
    }
}

/// Bytes of (vector, row key) entries an ivfflat build collects before writing them, one
/// mtr per list of the batch (so a WAL record stays below this plus a few pages).
const BUILD_BATCH_BYTES: usize = 4 << 20;

/// The entries a build has collected and not yet written: an ivfflat build's batch, or
/// the entries of an HNSW build that fit `memory_bytes` (maintenance_work_mem), linked in
/// memory by `Hnsw::build`; the entries past them are inserted one by one, as pgvector
/// does once its graph outgrows maintenance_work_mem.
struct BuildBatch {
    entries: Vec<(Vec<f32>, Vec<u8>)>,
    /// An HNSW build's entries until the graph is built.
    hnsw: Option<hnsw::BuildEntries>,
    bytes: usize,
    memory_bytes: usize,
    /// The HNSW graph was built from the entries that fit: later ones are inserted.
    built: bool,
}

impl BuildBatch {
    fn new(memory_bytes: usize) -> BuildBatch {
        BuildBatch { entries: Vec::new(), hnsw: None, bytes: 0, memory_bytes, built: false }
    }
}

impl VectorIndex {
    /// The vector of `row` for this index (None for NULL), its dimensions checked (a bit
    /// index's words; the bit(n) column's type holds the bit count exact).
    fn indexed_vector(&self, row: &[Value]) -> Result<Option<Vec<f32>>> {
        let parameters = &self.def.parameters;
        let vector = vector_of(row, self.def.column, parameters.metric)?;
        if let Some(vector) = &vector {
            let elements = parameters.metric.elements(parameters.dimensions);
            if vector.len() != elements {
                return Err(EngineError::InvalidRow {
                    detail: format!("expected {elements} dimensions, not {}", vector.len()),
                });
            }
        }
        Ok(vector)
    }

    /// Adds the entry of one row version (nothing for NULL or, under cosine, a zero vector).
    fn add(&self, row: &[Value], key: &[u8]) -> Result<()> {
        if let Some(vector) = self.indexed_vector(row)? {
            self.graph.insert(&vector, key)?;
        }
        Ok(())
    }

    /// `add` during a build: an ivfflat entry waits in `batch` (written by `flush` once the
    /// batch holds `BUILD_BATCH_BYTES`); an HNSW entry waits while the batch fits its
    /// memory, and is inserted at once after the in-memory build.
    fn add_built(&self, row: &[Value], key: &[u8], batch: &mut BuildBatch) -> Result<()> {
        let Some(vector) = self.indexed_vector(row)? else { return Ok(()) };
        match &self.graph {
            VectorGraph::IvfFlat(_) => {
                batch.bytes += 4 * vector.len() + key.len();
                batch.entries.push((vector, key.to_vec()));
                if batch.bytes >= BUILD_BATCH_BYTES {
                    self.flush(batch)?;
                }
            }
            VectorGraph::Hnsw(graph) => {
                let bytes = graph.build_entry_bytes(key.len());
                if !batch.built && batch.bytes + bytes <= batch.memory_bytes {
                    batch.bytes += bytes;
                    batch.hnsw.get_or_insert_with(|| graph.build_entries()).push(&vector, key)?;
                    return Ok(());
                }
                if !batch.built {
                    self.flush(batch)?;
                }
                graph.insert(&vector, key)?;
            }
        }
        Ok(())
    }

    /// Writes the entries of `batch` and empties it (HNSW: builds the graph from them,
    /// once; the writer then keeps inserted vectors within the same memory).
    fn flush(&self, batch: &mut BuildBatch) -> Result<()> {
        let entries = std::mem::take(&mut batch.entries);
        batch.bytes = 0;
        match &self.graph {
            VectorGraph::IvfFlat(lists) => {
                let entries: Vec<(&[f32], &[u8])> = entries
                    .iter()
                    .map(|(vector, key)| (vector.as_slice(), key.as_slice()))
                    .collect();
                lists.insert_many(&entries)?;
            }
            VectorGraph::Hnsw(graph) if !batch.built => {
                assert!(entries.is_empty(), "an HNSW build's entries are packed");
                graph.build(batch.hnsw.take().unwrap_or_else(|| graph.build_entries()))?;
                batch.built = true;
                graph.keep_vectors(batch.memory_bytes);
            }
            VectorGraph::Hnsw(_) => assert!(entries.is_empty(), "entries after the build"),
        }
        Ok(())
    }
}

/// Adds entries for the row's new newest version if this transaction (`writer`) made it,
/// a partial index's predicate accepts it, and it changed the indexed vector or moved into
/// the predicate. Durable with the commit, whose record follows.
pub(super) fn maintain_vector_indexes(
    table: &Table,
    key: &[u8],
    versions: &[Version],
    writer: u64,
    predicates: &IndexPredicates,
) -> Result<()> {
    if table.vector_indexes.is_empty() {
        return Ok(());
    }
    let Some(newest) =
        versions.first().filter(|version| version.xmin == writer && version.xmax == 0)
    else {
        return Ok(());
    };
    let row = table.layout.decode(&newest.row)?;
    let previous = versions.get(1).map(|version| table.layout.decode(&version.row)).transpose()?;
    for index in &table.vector_indexes {
        let (column, name) = (index.def.column, index.def.name.as_str());
        if !predicates.covers_name(name, &row)? {
            continue;
        }
        // The previous version's entry serves this one only if the predicate accepted it.
        if let Some(previous) = &previous {
            if previous.get(column) == row.get(column) && predicates.covers_name(name, previous)? {
                continue;
            }
        }
        index.add(&row, key)?;
    }
    Ok(())
}

impl Shared {
    /// Builds a vector index over every version of every row of `table` (in-progress
    /// versions too, so their rows are found once they commit), as `create_index` does.
    /// The caller holds the exclusive DDL lock and installs the index durably.
    pub(super) fn build_vector_index(
        &self,
        table: &Table,
        def: VectorIndexDef,
        memory_bytes: usize,
    ) -> Result<VectorIndex> {
        if def.column >= table.def.columns.len() {
            return Err(EngineError::InvalidRow { detail: "index column out of range".into() });
        }
        let centers = match def.method {
            VectorMethod::Hnsw => Vec::new(),
            VectorMethod::IvfFlat { lists } => self.ivfflat_centers(table, &def, lists)?,
        };
        let graph = VectorGraph::create(table.tree.store(), &def, &centers)?;
        let index = VectorIndex { graph, def, stale: Default::default() };
        let mut batch = BuildBatch::new(memory_bytes);
        for stored in table.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            let (key, bytes) = stored?;
            let mut added: Vec<Option<Value>> = Vec::new();
            for version in decode_versions(&bytes)? {
                let row = table.layout.decode(&version.row)?;
                if !self.index_predicates.covers_name(&index.def.name, &row)? {
                    continue; // outside a partial index's predicate
                }
                let value = row.get(index.def.column).cloned();
                if !added.contains(&value) {
                    index.add_built(&row, &key, &mut batch)?;
                    added.push(value);
                }
            }
        }
        index.flush(&mut batch)?;
        if let VectorGraph::Hnsw(graph) = &index.graph {
            graph.keep_vectors(0);
        }
        Ok(index)
    }

    /// The centers of a new ivfflat index: k-means over a uniform sample (reservoir) of at
    /// most `lists` × `SAMPLES_PER_LIST` of the table's newest row versions' indexable
    /// vectors (of those a partial index's predicate accepts), as pgvector samples rows.
    /// Fewer samples than lists: the samples and random
    /// centers (the SQL layer sends pgvector's NOTICE).
    fn ivfflat_centers(
        &self,
        table: &Table,
        def: &VectorIndexDef,
        lists: usize,
    ) -> Result<Vec<f32>> {
        let capacity = lists.saturating_mul(ivfflat::SAMPLES_PER_LIST);
        let metric = def.parameters.metric;
        let mut random = SplitMix64::new(0x1f_f1a7 ^ lists as u64);
        let mut samples: Vec<Vec<f32>> = Vec::new();
        let mut seen = 0u64;
        for stored in table.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            let (_, bytes) = stored?;
            let Some(newest) = decode_versions(&bytes)?.into_iter().next() else { continue };
            let row = table.layout.decode(&newest.row)?;
            if !self.index_predicates.covers_name(&def.name, &row)? {
                continue;
            }
            let Some(vector) = vector_of(&row, def.column, metric)? else { continue };
            let elements = metric.elements(def.parameters.dimensions);
            if vector.len() != elements || !metric.indexable(&vector) {
                continue;
            }
            seen += 1;
            if samples.len() < capacity {
                samples.push(vector);
            } else {
                let slot = random.below(seen);
                if let Some(sample) = usize::try_from(slot).ok().and_then(|s| samples.get_mut(s)) {
                    *sample = vector;
                }
            }
        }
        let dimensions = def.parameters.dimensions;
        Ok(ivfflat::centers(&samples, lists, dimensions, metric, 0x5eed ^ lists as u64))
    }

    /// Rows an ivfflat build of `index` (its predicate registered if it is partial) would
    /// sample from `table` for `lists` lists: pgvector's NOTICE "ivfflat index created with
    /// little data" is sent when this is below `lists`.
    pub(super) fn sampled_rows(
        &self,
        table: &Table,
        index: &str,
        column: usize,
        lists: usize,
    ) -> Result<usize> {
        let mut count = 0;
        for stored in table.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            let (_, bytes) = stored?;
            let Some(newest) = decode_versions(&bytes)?.into_iter().next() else { continue };
            let row = table.layout.decode(&newest.row)?;
            let has_vector = row.get(column).is_some_and(|value| !matches!(value, Value::Null));
            if has_vector && self.index_predicates.covers_name(index, &row)? {
                count += 1;
                if count >= lists {
                    break;
                }
            }
        }
        Ok(count)
    }

    /// Opens the vector index `def` whose graph's meta page is `meta` in `store` (its
    /// table's).
    pub(super) fn open_vector_index(
        &self,
        store: &Arc<tierdb_storage::PageStore>,
        def: VectorIndexDef,
        meta: PageId,
    ) -> Result<VectorIndex> {
        let store = Arc::clone(store);
        let graph = match def.method {
            VectorMethod::Hnsw => VectorGraph::Hnsw(Hnsw::open(store, meta)?),
            VectorMethod::IvfFlat { .. } => VectorGraph::IvfFlat(IvfFlat::open(store, meta)?),
        };
        Ok(VectorIndex { graph, def, stale: Default::default() })
    }
}

/// A nearest-neighbour scan of one vector index under a transaction
/// (`Transaction::nearest_scan`): the graph gives the `ef_search` nearest entries (and,
/// with an iterative scan, batch after batch more, up to `max_scan_tuples` evaluated
/// nodes), and `Transaction::nearest_next` turns them into visible rows one at a time, so a
/// caller reads only the rows it needs (a LIMIT of 10 reads about 10 rows, not `ef_search`)
/// and the graph search continues only when the rows of its batches ran out.
pub struct NearestScan {
    table: Arc<Table>,
    index: Arc<VectorIndex>,
    query: Vec<f32>,
    graph: GraphScan,
    /// Entries of the batch taken, nearest first, not yet returned or skipped.
    ready: VecDeque<SearchResult>,
    /// Row keys returned: a row with several entries (its vector changed and changed back)
    /// is returned once.
    returned: HashSet<RowKey>,
    /// Whether the graph search is exhausted (or stopped, without iterative scans).
    exhausted: bool,
    /// A partial index's predicate: an entry whose row's visible version it rejects (the
    /// row was updated out of it, keeping its vector) is skipped.
    predicate: Option<Arc<dyn IndexPredicate>>,
}

/// The scan of the index's pages, by access method.
enum GraphScan {
    Hnsw(Box<hnsw::ScanState>),
    IvfFlat(ivfflat::ScanState),
}

/// What a nearest-neighbour scan reads: the session's settings of each access method
/// (`hnsw.*` for an HNSW index, `ivfflat.*` for an ivfflat one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NearestOptions {
    pub hnsw: ScanOptions,
    pub ivfflat: ivfflat::ScanOptions,
}

impl From<ScanOptions> for NearestOptions {
    fn from(hnsw: ScanOptions) -> NearestOptions {
        NearestOptions { hnsw, ivfflat: ivfflat::ScanOptions::default() }
    }
}

impl NearestScan {
    /// Nodes of the graph (HNSW) or entries of the lists (ivfflat) whose distance the scan
    /// has computed.
    pub fn evaluated(&self) -> usize {
        match &self.graph {
            GraphScan::Hnsw(scan) => scan.evaluated(),
            GraphScan::IvfFlat(scan) => scan.evaluated(),
        }
    }

    fn next_batch(&mut self) -> Result<Vec<SearchResult>> {
        Ok(match (&mut self.graph, &self.index.graph) {
            (GraphScan::Hnsw(scan), VectorGraph::Hnsw(graph)) => scan.next_entries(graph)?,
            (GraphScan::IvfFlat(scan), VectorGraph::IvfFlat(lists)) => scan.next_batch(lists)?,
            _ => unreachable!("a scan is started on its own index"),
        })
    }
}

impl Transaction {
    /// Starts a scan of the vector index `index` of `table` for the entries nearest to
    /// `query` (the graph search runs here); `nearest_next` returns its rows.
    pub fn nearest_scan(
        &mut self,
        table: &(impl TableRef + ?Sized),
        index: &str,
        query: &[f32],
        options: impl Into<NearestOptions>,
    ) -> Result<NearestScan> {
        let options = options.into();
        self.run(|txn| {
            let table = table.resolve(txn)?.table()?;
            let Some(found) = table.vector_indexes.iter().find(|found| found.def.name == index)
            else {
                return Err(EngineError::UndefinedTable { name: index.to_string() });
            };
            let index = Arc::clone(found);
            // A bit index's query is in words; the SQL layer checks its bit count first.
            let dimensions = index.def.parameters.metric.elements(index.def.parameters.dimensions);
            if query.len() != dimensions {
                // pgvector's error from the distance to a center (ivfflat: the index's
                // dimensions first) or to the entry point (hnsw: the query's first).
                let (first, second) = match index.def.method {
                    VectorMethod::Hnsw => (query.len(), dimensions),
                    VectorMethod::IvfFlat { .. } => (dimensions, query.len()),
                };
                return Err(EngineError::DataException {
                    message: format!("different vector dimensions {first} and {second}"),
                });
            }
            let graph = match &index.graph {
                VectorGraph::Hnsw(graph) => {
                    GraphScan::Hnsw(Box::new(graph.scan_state(query, options.hnsw)?))
                }
                VectorGraph::IvfFlat(lists) => {
                    GraphScan::IvfFlat(lists.scan_state(query, options.ivfflat)?)
                }
            };
            let predicate = txn.index_predicate(&index.def.name);
            Ok(NearestScan {
                table,
                index,
                query: query.to_vec(),
                graph,
                ready: VecDeque::new(),
                returned: HashSet::new(),
                exhausted: false,
                predicate,
            })
        })
    }

    /// The next row of `scan` visible to this transaction, nearest first, with the
    /// operator's value; None when the scan's entries are exhausted. Entries whose row is
    /// invisible, now holds another vector or (partial index) is now outside the
    /// predicate are skipped (stale entries).
    pub fn nearest_next(&mut self, scan: &mut NearestScan) -> Result<Option<(f64, RowKey, Row)>> {
        self.run(|txn| loop {
            let Some(result) = scan.ready.pop_front() else {
                if scan.exhausted {
                    return Ok(None);
                }
                let batch = scan.next_batch()?;
                scan.exhausted = batch.is_empty();
                scan.ready.extend(batch);
                continue;
            };
            if scan.returned.contains(&result.key) {
                continue;
            }
            let Some(bytes) = scan.table.tree.get(&result.key)? else { continue };
            let Some(row) = txn.visible_row_stored(&scan.table.layout, &bytes)? else { continue };
            let index = &scan.index.def;
            let current = vector_of(&row, index.column, index.parameters.metric)?;
            // A stale entry: the visible version holds another vector.
            let matches = current.is_some_and(|vector| {
                scan.index.graph.metric().distance(&scan.query, &vector).to_bits()
                    == result.distance.to_bits()
            });
            let accepted = match (&scan.predicate, matches) {
                (Some(predicate), true) => predicate.matches(&row)?,
                _ => matches,
            };
            if accepted {
                scan.returned.insert(result.key.clone());
                return Ok(Some((result.distance, result.key, row)));
            }
        })
    }

    /// Up to `limit` rows visible to this transaction among the entries of the vector index
    /// `index` nearest to `query` that a scan with `options` returns, nearest first, with
    /// the operator's value. Entries whose row is invisible or now holds another vector are
    /// skipped, so without iterative scans fewer than `limit` rows may come back (pgvector
    /// does the same).
    pub fn nearest_rows(
        &mut self,
        table: &(impl TableRef + ?Sized),
        index: &str,
        query: &[f32],
        options: impl Into<NearestOptions>,
        limit: usize,
    ) -> Result<Vec<(f64, RowKey, Row)>> {
        let mut scan = self.nearest_scan(table, index, query, options)?;
        let mut rows = Vec::new();
        while rows.len() < limit {
            match self.nearest_next(&mut scan)? {
                Some(row) => rows.push(row),
                None => break,
            }
        }
        Ok(rows)
    }
}
