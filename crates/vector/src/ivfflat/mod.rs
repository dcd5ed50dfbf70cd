//! ivfflat, the inverted-file vector index, in pages of the page store
//! (docs/design/014-vector-indexes.md, "ivfflat"): k-means centers in a chain of directory
//! pages, and per center (list) a chain of list pages holding each entry's exact vector and
//! row key. An insert appends to the list of its nearest center in one mini-transaction (one
//! WAL record), so recovery is physical and needs no ivfflat code. Entries carry no
//! visibility: the engine checks rows as it does for HNSW.

mod kmeans;
mod layout;
mod scan;

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tierdb_common::{Lsn, PageId, PAGE_PAYLOAD_SIZE};
use tierdb_storage::PageStore;

pub use crate::index::{IndexError, Metric, Result, SearchResult};
pub use kmeans::{centers, KMEANS_ITERATIONS_MAX, SAMPLES_PER_LIST};
use layout::*;
pub use scan::{IterativeScan, ScanOptions, ScanState};

/// pgvector's bounds and default of `lists`.
pub const LISTS_MIN: usize = 1;
pub const LISTS_MAX: usize = 32_768;
pub const LISTS_DEFAULT: usize = 100;
/// pgvector's bounds and default of `ivfflat.probes` and `ivfflat.max_probes`.
pub const PROBES_MIN: usize = 1;
pub const PROBES_MAX: usize = 32_768;
pub const PROBES_DEFAULT: usize = 1;
pub const MAX_PROBES_DEFAULT: usize = 32_768;
/// pgvector's largest dimension count of an ivfflat index on `vector`.
pub const DIMENSIONS_MAX: usize = 2_000;
/// pgvector's largest bit(n) of an ivfflat index (IVFFLAT_MAX_DIM * 32): 2,000 words.
pub const BIT_DIMENSIONS_MAX: usize = 64_000;
/// Largest row key stored with an entry (the B+tree's key limit).
pub const ROW_KEY_BYTES_MAX: usize = 1024;
/// Directory pages written per mini-transaction at creation (a WAL record stays ~2 MiB).
const DIRECTORY_PAGES_PER_MTR: usize = 256;

/// The options of `CREATE INDEX ... USING ivfflat ... WITH (lists = ..)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexParameters {
    /// The column's dimensions (bits for a bit metric).
    pub dimensions: usize,
    pub metric: Metric,
    pub lists: usize,
}

impl IndexParameters {
    pub fn validate(&self) -> Result<()> {
        if !(LISTS_MIN..=LISTS_MAX).contains(&self.lists) {
            return Err(IndexError::InvalidArgument(format!("lists={} out of bounds", self.lists)));
        }
        let maximum = if self.metric.is_bits() { BIT_DIMENSIONS_MAX } else { DIMENSIONS_MAX };
        if !(1..=maximum).contains(&self.dimensions) {
            return Err(IndexError::InvalidArgument(format!(
                "ivfflat index on {} dimensions (1..={maximum})",
                self.dimensions
            )));
        }
        if matches!(self.metric.base(), Metric::L1 | Metric::BitJaccard) {
            return Err(IndexError::InvalidArgument(format!(
                "ivfflat has no operator class for {:?}",
                self.metric
            )));
        }
        Ok(())
    }
}

/// Where a list's directory entry is, and its first and last page (0: empty list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ListHead {
    first: PageId,
    last: PageId,
    page: PageId,
    offset: usize,
}

/// A handle on one ivfflat index. Inserts are serialized by the handle; searches run
/// concurrently with them and with each other (a search takes one shared page latch at a
/// time; an insert is one mtr).
pub struct IvfFlat {
    store: Arc<PageStore>,
    meta: PageId,
    dimensions: usize,
    metric: Metric,
    /// The centers, `dimensions` each (never change after creation).
    centers: Vec<f32>,
    /// Each list's head, as on the directory pages (the writer updates both).
    heads: RwLock<Vec<ListHead>>,
    writer: Mutex<()>,
}

impl IvfFlat {
    /// Creates an empty index with `centers` (`lists` × the metric's `elements` values, from
    /// `centers`); its meta page id is its durable name. The meta page and the handle count
    /// f32 slots (a bit index's words) as dimensions.
    pub fn create(
        store: Arc<PageStore>,
        parameters: IndexParameters,
        centers: &[f32],
    ) -> Result<IvfFlat> {
        parameters.validate()?;
        let IndexParameters { dimensions, metric, lists } = parameters;
        let dimensions = metric.elements(dimensions);
        assert_eq!(centers.len(), lists * dimensions, "one center per list");
        let per_page = entries_per_directory_page(dimensions);
        assert!(per_page > 0, "DIMENSIONS_MAX fits a directory page");
        let chunks: Vec<&[f32]> = centers.chunks(per_page * dimensions).collect();
        // Written last page first, so that each page's next page id is known.
        let mut next = PageId(0);
        let mut pages = vec![PageId(0); chunks.len()];
        for group in (0..chunks.len()).rev().collect::<Vec<_>>().chunks(DIRECTORY_PAGES_PER_MTR) {
            let mut mtr = store.mtr();
            for &index in group {
                let (slot, page_id) = mtr.allocate(DIRECTORY_PAGE_TYPE)?;
                let count = chunks[index].len() / dimensions;
                let mut bytes =
                    encode_chain_header(next, count, directory_entry_offset(dimensions, count));
                for center in chunks[index].chunks_exact(dimensions) {
                    bytes.extend_from_slice(&encode_directory_entry(PageId(0), PageId(0), center));
                }
                mtr.write(slot, 0, &bytes);
                pages[index] = page_id;
                next = page_id;
            }
            mtr.commit()?;
        }
        let mut mtr = store.mtr();
        let (slot, meta) = mtr.allocate(META_PAGE_TYPE)?;
        let fields = Meta { dimensions, metric, lists, directory: next, entries: 0 };
        mtr.write(slot, 0, &fields.encode());
        mtr.commit()?;
        let heads = (0..lists)
            .map(|list| ListHead {
                first: PageId(0),
                last: PageId(0),
                page: pages[list / per_page],
                offset: directory_entry_offset(dimensions, list % per_page),
            })
            .collect();
        Ok(IvfFlat::from_parts(store, meta, fields, centers.to_vec(), heads))
    }

    /// Opens the index whose meta page is `meta`, reading its directory.
    pub fn open(store: Arc<PageStore>, meta: PageId) -> Result<IvfFlat> {
        let fields = read_meta(&store, meta)?;
        let dimensions = fields.dimensions;
        let mut centers = Vec::with_capacity(fields.lists * dimensions);
        let mut heads = Vec::with_capacity(fields.lists);
        let mut page_id = fields.directory;
        while heads.len() < fields.lists {
            if page_id.0 == 0 {
                return Err(IndexError::Corrupt {
                    page_id: meta,
                    detail: "short directory".into(),
                });
            }
            let page = store.read(page_id)?;
            let payload = page.payload();
            let (next, count, _) = decode_chain_header(page_id, payload)?;
            if count == 0 || count > entries_per_directory_page(dimensions) {
                return Err(IndexError::Corrupt { page_id, detail: "directory count".into() });
            }
            for index in 0..count {
                let offset = directory_entry_offset(dimensions, index);
                heads.push(ListHead {
                    first: PageId(get_u64(payload, offset)),
                    last: PageId(get_u64(payload, offset + 8)),
                    page: page_id,
                    offset,
                });
                centers.extend(get_vector(payload, offset + 16, dimensions));
            }
            page_id = next;
        }
        if heads.len() != fields.lists {
            return Err(IndexError::Corrupt { page_id: meta, detail: "directory length".into() });
        }
        Ok(IvfFlat::from_parts(store, meta, fields, centers, heads))
    }

    fn from_parts(
        store: Arc<PageStore>,
        meta: PageId,
        fields: Meta,
        centers: Vec<f32>,
        heads: Vec<ListHead>,
    ) -> IvfFlat {
        IvfFlat {
            store,
            meta,
            dimensions: fields.dimensions,
            metric: fields.metric,
            centers,
            heads: RwLock::new(heads),
            writer: Mutex::new(()),
        }
    }

    pub fn meta_page(&self) -> PageId {
        self.meta
    }

    pub fn metric(&self) -> Metric {
        self.metric
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    pub fn lists(&self) -> usize {
        self.centers.len() / self.dimensions
    }

    /// The centers, `dimensions` values each.
    pub fn centers(&self) -> &[f32] {
        &self.centers
    }

    /// Entries in the index (the meta page's count).
    pub fn entry_count(&self) -> Result<u64> {
        Ok(read_meta(&self.store, self.meta)?.entries)
    }

    /// The distance from `vector` to each list's center that orders the lists to probe
    /// (pgvector's FUNCTION 1: l2², or the negated inner product, with the vector
    /// normalized first under cosine).
    fn center_distances(&self, vector: &[f32]) -> Vec<f64> {
        let vector = if self.metric.base() == Metric::Cosine {
            crate::dense::normalized(vector)
        } else {
            vector.to_vec()
        };
        self.centers
            .chunks_exact(self.dimensions)
            .map(|center| match self.metric.base() {
                Metric::L2 => f64::from(crate::l2_squared_distance(&vector, center)),
                Metric::BitHamming => self.metric.distance(&vector, center),
                _ => f64::from(-crate::inner_product(&vector, center)),
            })
            .collect()
    }

    fn check_vector(&self, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dimensions {
            return Err(IndexError::InvalidArgument(format!(
                "expected {} dimensions, not {}",
                self.dimensions,
                vector.len()
            )));
        }
        Ok(())
    }

    /// Adds `vector` with its row key to the list of its nearest center; returns the LSN of
    /// its WAL record. Returns None, adding nothing, for a vector with no distance under the
    /// metric (a zero vector under cosine), as pgvector does.
    pub fn insert(&self, vector: &[f32], key: &[u8]) -> Result<Option<Lsn>> {
        self.insert_many(&[(vector, key)])
    }

    /// Adds every (vector, row key) of `entries` (a build's batch): one mtr per list the
    /// batch touches, so at most `entries`' bytes plus a few pages per WAL record (the
    /// caller bounds the batch). Returns the LSN of the last record (None if nothing was
    /// indexable).
    pub fn insert_many(&self, entries: &[(&[f32], &[u8])]) -> Result<Option<Lsn>> {
        let mut by_list: Vec<Vec<Vec<u8>>> = vec![Vec::new(); self.lists()];
        for (vector, key) in entries {
            self.check_vector(vector)?;
            if key.len() > ROW_KEY_BYTES_MAX || !entry_fits(self.dimensions, key.len()) {
                return Err(IndexError::InvalidArgument(format!(
                    "index row size {} exceeds maximum {} for an ivfflat index",
                    list_entry_bytes(self.dimensions, key.len()),
                    PAGE_PAYLOAD_SIZE - CHAIN_HEADER_BYTES
                )));
            }
            if self.metric.indexable(vector) {
                by_list[self.nearest_list(vector)].push(encode_list_entry(vector, key));
            }
        }
        let _writer = self.writer.lock();
        let mut lsn = None;
        for (list, entries) in by_list.iter().enumerate().filter(|(_, e)| !e.is_empty()) {
            let head = self.heads.read()[list];
            let (appended, head) = self.append(head, entries)?;
            self.heads.write()[list] = head;
            lsn = Some(appended);
        }
        Ok(lsn)
    }

    /// The list whose center is nearest to `vector`.
    fn nearest_list(&self, vector: &[f32]) -> usize {
        let distances = self.center_distances(vector);
        (0..distances.len())
            .min_by(|a, b| distances[*a].total_cmp(&distances[*b]))
            .expect("at least one list")
    }

    /// Appends `entries` to the list whose head is `head` in one mtr (at the last page's
    /// bytes-used mark, then on new pages linked after it); returns the LSN and the list's
    /// new head.
    fn append(&self, head: ListHead, entries: &[Vec<u8>]) -> Result<(Lsn, ListHead)> {
        let mut mtr = self.store.mtr();
        let mut new_head = head;
        // The page being filled: (slot, entries, bytes used).
        let mut current = None;
        if head.last.0 != 0 {
            let slot = mtr.latch(head.last)?;
            let (_, count, used) = decode_chain_header(head.last, mtr.page(slot).payload())?;
            current = Some((slot, count, used));
        }
        for entry in entries {
            match current {
                Some((slot, count, used)) if used + entry.len() <= PAGE_PAYLOAD_SIZE => {
                    mtr.write(slot, used, entry);
                    let header = encode_chain_header(PageId(0), count + 1, used + entry.len());
                    mtr.write(slot, CHAIN_COUNT_OFFSET, &header[CHAIN_COUNT_OFFSET..]);
                    current = Some((slot, count + 1, used + entry.len()));
                }
                _ => {
                    let (slot, page_id) = mtr.allocate(LIST_PAGE_TYPE)?;
                    let used = CHAIN_HEADER_BYTES + entry.len();
                    let mut bytes = encode_chain_header(PageId(0), 1, used);
                    bytes.extend_from_slice(entry);
                    mtr.write(slot, 0, &bytes);
                    match current {
                        Some((previous, _, _)) => mtr.write(previous, 0, &page_id.0.to_le_bytes()),
                        None => new_head.first = page_id,
                    }
                    new_head.last = page_id;
                    current = Some((slot, 1, used));
                }
            }
        }
        if new_head != head {
            let directory = mtr.latch(head.page)?;
            mtr.write(directory, head.offset, &new_head.first.0.to_le_bytes());
            mtr.write(directory, head.offset + 8, &new_head.last.0.to_le_bytes());
        }
        let meta_slot = mtr.latch(self.meta)?;
        let count = get_u64(mtr.page(meta_slot).payload(), META_ENTRIES_OFFSET);
        let added = u64::try_from(entries.len()).expect("usize fits u64");
        mtr.write(meta_slot, META_ENTRIES_OFFSET, &(count + added).to_le_bytes());
        Ok((mtr.commit()?, new_head))
    }

    /// Calls `visit(vector, key)` for every entry of list `list`, page by page (one shared
    /// latch at a time).
    fn read_list(&self, list: usize, mut visit: impl FnMut(&[f32], &[u8])) -> Result<()> {
        let mut page_id = self.heads.read()[list].first;
        let mut vector = vec![0f32; self.dimensions];
        while page_id.0 != 0 {
            let page = self.store.read(page_id)?;
            page_id =
                for_each_list_entry(page_id, page.payload(), self.dimensions, |bytes, key| {
                    for (value, chunk) in vector.iter_mut().zip(bytes.chunks_exact(4)) {
                        *value = f32::from_le_bytes(chunk.try_into().expect("4 bytes"));
                    }
                    visit(&vector, key);
                })?;
        }
        Ok(())
    }
}

fn read_meta(store: &PageStore, meta: PageId) -> Result<Meta> {
    let page = store.read(meta)?;
    Meta::decode(meta, page.payload())
}
