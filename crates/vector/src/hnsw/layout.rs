//! Page formats of an HNSW index (docs/design/014-vector-indexes.md): the meta page and one
//! node per page, whose layer-0 neighbour list carries a compact code (per-vector SQ8, or
//! sign bits for wide vectors) of each neighbour so that one page read gives a hop's
//! distances.

use tierdb_common::{PageId, PageType, PAGE_PAYLOAD_SIZE};

use super::sign_code::{encode_sign_code, estimable, sign_code_bytes};
use super::{HnswError, Metric, Result};

pub(crate) const META_PAGE_TYPE: PageType = PageType::Other(30);
pub(crate) const NODE_PAGE_TYPE: PageType = PageType::Other(31);
/// A page of the free list: ids of freed node pages waiting to be reused by inserts.
pub(crate) const FREE_LIST_PAGE_TYPE: PageType = PageType::Other(35);
/// A part of the exact vector of a node too wide to hold it on its own page.
pub(crate) const VECTOR_PAGE_TYPE: PageType = PageType::Other(36);
const META_MAGIC: &[u8; 4] = b"THN1";
const NODE_KIND: u8 = 1;
/// A node that purge removed from the graph: its page is on the free list. Its vector and
/// lists stay as they were until an insert reuses the page, so a scan that started before
/// the purge and still holds the page id can step through it (it returns no result).
pub(crate) const FREED_KIND: u8 = 2;
/// Largest row key stored with a node: the B+tree's key limit, which bounds primary keys.
pub const ROW_KEY_BYTES_MAX: usize = 1024;
/// Highest level a node may have, whatever fits.
pub const LEVELS_MAX: u8 = 16;
/// pgvector's bounds of the `m` and `ef_construction` options.
pub const M_MIN: usize = 2;
pub const M_MAX: usize = 100;
pub const EF_CONSTRUCTION_MIN: usize = 4;
pub const EF_CONSTRUCTION_MAX: usize = 1000;
/// Levels wanted for 10^9 nodes; the index uses codes only if a node of this many levels
/// with a full row key still fits with them.
const NODES_PLANNED: u128 = 1_000_000_000;
const NODE_HEADER_BYTES: usize = 8;
const LIST_HEADER_BYTES: usize = 4;
const PAGE_ID_BYTES: usize = 8;
/// A code's `min` and `step` (f32 each) before its one byte per dimension.
const CODE_HEADER_BYTES: usize = 8;
const CODE_LEVELS: f32 = 255.0;
/// Fewest levels an index with sign codes must allow (the level cap): with `m` = 16, three
/// upper layers leave about 244 nodes per million on the top one, which the greedy descent
/// walks in DRAM (the navigation copy). Below it the index keeps no codes instead.
const SIGN_CODE_LEVELS_MIN: u8 = 3;
/// The meta page's code-kind byte: 0 for the kinds implied by the metric and `code_bytes`
/// (SQ8, exact words, none: what meta pages before sign codes hold), 1 for sign codes.
const META_CODE_KIND_OFFSET: usize = 14;
const META_SIGN_CODES: u8 = 1;
/// The meta page's vector-pages byte: how many vector pages each node has (0: the vector is
/// on the node page, what meta pages before vector pages hold).
const META_VECTOR_PAGES_OFFSET: usize = 15;
/// A vector page: owner node page id u64, part u16, value count u16, zero u32, the values.
const VECTOR_PAGE_HEADER_BYTES: usize = 16;
/// f32 values one vector page holds.
pub(crate) const VECTOR_PAGE_VALUES_MAX: usize = (PAGE_PAYLOAD_SIZE - VECTOR_PAGE_HEADER_BYTES) / 4;
/// Most vector pages a node may have: enough for pgvector's largest vector (16,000
/// dimensions).
pub const VECTOR_PAGES_MAX: usize = 8;
const _: () = assert!(VECTOR_PAGES_MAX * VECTOR_PAGE_VALUES_MAX >= 16_000);

fn get_u16(bytes: &[u8], offset: usize) -> u16 {
    u16::from_le_bytes(bytes[offset..offset + 2].try_into().expect("2 bytes"))
}

fn get_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

fn get_f32(bytes: &[u8], offset: usize) -> f32 {
    f32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"))
}

fn to_u16(value: usize) -> u16 {
    u16::try_from(value).expect("a page offset or count fits in u16")
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|value| value.to_le_bytes()).collect()
}

/// The f32 values `f32_bytes` wrote.
fn f32_values(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes.chunks_exact(4).map(|chunk| f32::from_le_bytes(chunk.try_into().expect("4 bytes")))
}

/// The fixed geometry of one index's node pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub dimensions: usize,
    pub m: usize,
    /// Bytes of each layer-0 neighbour's code (0: the index keeps no codes).
    pub code_bytes: usize,
    pub codes: CodeKind,
    /// The index's metric: sign codes keep a norm term that depends on it.
    pub metric: Metric,
    /// Highest level a node of this index may have.
    pub level_cap: u8,
    /// Pages holding each node's exact vector besides its node page (0: the vector is on
    /// the node page).
    pub vector_pages: usize,
}

/// What a layer-0 slot carries besides the neighbour's page id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    /// Nothing: every layer-0 distance reads the neighbour's page.
    None,
    /// Per-vector SQ8: min, step, a byte per dimension.
    Sq8,
    /// The neighbour's exact words (bit indexes: a bit string is as small as its SQ8 code
    /// would be, and SQ8 of bits means nothing).
    Words,
    /// A bit per dimension with a scale and the norm (`sign_code.rs`), for vectors too wide
    /// for SQ8 codes.
    Signs,
}

/// Most candidates a search over sign codes keeps beyond `ef_search` (see
/// `CodeKind::candidates`).
const SIGN_CODE_EXTRA_CANDIDATES_MAX: usize = 20;

impl CodeKind {
    /// Candidates a query keeps and re-ranks to return up to `ef_search` results. A sign
    /// code's estimate orders candidates less well than SQ8 or exact distances (at 768-d,
    /// recall@10 0.72 at ef_search 10 against 0.90 with exact distances), so a search over
    /// sign codes keeps up to twice `ef_search` candidates and returns the `ef_search`
    /// nearest by exact distance: recall per ef_search then matches an exact search's (0.95
    /// at 10) for a fraction of its page reads (36 against 255 per query). A long list needs
    /// no doubling: at most `SIGN_CODE_EXTRA_CANDIDATES_MAX` more (at ef_search 100, 129 page
    /// fetches against 208 doubled, recall 1.0 either way; design 014, "Sign codes").
    pub fn candidates(self, ef_search: usize) -> usize {
        match self {
            CodeKind::Signs => ef_search + ef_search.min(SIGN_CODE_EXTRA_CANDIDATES_MAX),
            CodeKind::None | CodeKind::Sq8 | CodeKind::Words => ef_search,
        }
    }
}

impl Layout {
    /// The layout for `dimensions` (f32 slots), `m` and `metric`: SQ8 codes (exact words for
    /// a bit index) if a node of the planned number of levels fits with them; else sign codes
    /// if the metric has their estimate and a node of `SIGN_CODE_LEVELS_MIN` levels fits,
    /// first with the vector on the node page, then on vector pages of its own; else no
    /// codes, the vector on the node page if a node of one upper level fits, else on vector
    /// pages. The level cap is the highest level that then fits. Sign codes beat a vector on
    /// the node page without codes: a hop then reads the node's page and its vector's (to
    /// centre the estimates), not a page per neighbour.
    pub fn choose(dimensions: usize, m: usize, metric: Metric) -> Result<Layout> {
        assert!((M_MIN..=M_MAX).contains(&m), "m is validated by IndexParameters");
        if dimensions == 0 {
            return Err(HnswError::InvalidArgument("an hnsw index needs dimensions".into()));
        }
        let vector_pages = dimensions.div_ceil(VECTOR_PAGE_VALUES_MAX);
        if vector_pages > VECTOR_PAGES_MAX {
            return Err(HnswError::InvalidArgument(format!(
                "hnsw index on vectors of more than {} dimensions",
                dimensions_max(m)
            )));
        }
        let planned = planned_levels(m);
        let (codes, code_bytes) = if metric.is_bits() {
            (CodeKind::Words, 4 * dimensions)
        } else {
            (CodeKind::Sq8, CODE_HEADER_BYTES + dimensions)
        };
        let with_codes =
            Layout { dimensions, m, code_bytes, codes, metric, level_cap: 0, vector_pages: 0 };
        if let Some(layout) = with_codes.capped(planned) {
            return Ok(layout);
        }
        let signs = Layout {
            codes: CodeKind::Signs,
            code_bytes: sign_code_bytes(dimensions),
            ..with_codes
        };
        if !metric.is_bits() && estimable(metric) {
            let levels_min = SIGN_CODE_LEVELS_MIN.min(planned);
            let paged = Layout { vector_pages, ..signs };
            if let Some(layout) = signs.capped(levels_min).or_else(|| paged.capped(levels_min)) {
                return Ok(layout);
            }
        }
        let without_codes = Layout { codes: CodeKind::None, code_bytes: 0, ..with_codes };
        let paged = Layout { vector_pages, ..without_codes };
        without_codes.capped(1).or_else(|| paged.capped(1)).ok_or_else(|| {
            HnswError::InvalidArgument(format!(
                "hnsw index on vectors of more than {} dimensions at m={m}",
                dimensions_max(m)
            ))
        })
    }

    /// This layout with its level cap, if a node of `levels_min` levels fits a page.
    fn capped(self, levels_min: u8) -> Option<Layout> {
        let level_cap = self.fitting_level().filter(|&level| level >= levels_min)?;
        Some(Layout { level_cap, ..self })
    }

    /// Highest level (at most `LEVELS_MAX`) whose node with a full row key fits a page.
    fn fitting_level(&self) -> Option<u8> {
        (0..=LEVELS_MAX)
            .rev()
            .find(|&level| self.node_bytes(level, ROW_KEY_BYTES_MAX) <= PAGE_PAYLOAD_SIZE)
    }

    pub fn capacity(&self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.m
        } else {
            self.m
        }
    }

    fn slot_bytes(&self, layer: usize) -> usize {
        if layer == 0 {
            PAGE_ID_BYTES + self.code_bytes
        } else {
            PAGE_ID_BYTES
        }
    }

    fn list_bytes(&self, layer: usize) -> usize {
        LIST_HEADER_BYTES + self.capacity(layer) * self.slot_bytes(layer)
    }

    fn vector_offset(&self) -> usize {
        NODE_HEADER_BYTES
    }

    /// Bytes of the node page's vector field: the vector itself, or its vector pages' ids.
    fn vector_field_bytes(&self) -> usize {
        if self.vector_pages == 0 {
            4 * self.dimensions
        } else {
            PAGE_ID_BYTES * self.vector_pages
        }
    }

    /// The values vector page `part` of a node holds.
    pub(crate) fn vector_part(&self, part: usize) -> std::ops::Range<usize> {
        assert!(part < self.vector_pages, "a vector page of this layout");
        let start = part * VECTOR_PAGE_VALUES_MAX;
        start..self.dimensions.min(start + VECTOR_PAGE_VALUES_MAX)
    }

    /// Payload offset of the neighbour list of `layer`.
    pub fn list_offset(&self, layer: usize) -> usize {
        let layer_zero = self.vector_offset() + self.vector_field_bytes();
        if layer == 0 {
            layer_zero
        } else {
            layer_zero + self.list_bytes(0) + (layer - 1) * self.list_bytes(1)
        }
    }

    fn slot_offset(&self, layer: usize, index: usize) -> usize {
        self.list_offset(layer) + LIST_HEADER_BYTES + index * self.slot_bytes(layer)
    }

    fn key_offset(&self, level: u8) -> usize {
        self.list_offset(usize::from(level) + 1)
    }

    pub fn node_bytes(&self, level: u8, key_bytes: usize) -> usize {
        self.key_offset(level) + key_bytes
    }

    /// A new node's payload: its vector (or the ids of `vector_pages`, which hold it),
    /// key and neighbour lists (`links[layer]`, each with the neighbour's vector for its
    /// code on layer 0).
    pub fn encode_node(
        &self,
        (vector, vector_pages): (&[f32], &[PageId]),
        key: &[u8],
        links: &[Vec<(PageId, &[f32])>],
    ) -> Vec<u8> {
        assert!(vector.len() == self.dimensions && key.len() <= ROW_KEY_BYTES_MAX);
        assert!(vector_pages.len() == self.vector_pages, "a node has its layout's vector pages");
        assert!(!links.is_empty() && links.len() <= usize::from(self.level_cap) + 1);
        let level = u8::try_from(links.len() - 1).expect("level within the cap");
        let mut bytes = vec![0u8; self.node_bytes(level, key.len())];
        bytes[0] = NODE_KIND;
        bytes[1] = level;
        bytes[2..4].copy_from_slice(&to_u16(self.dimensions).to_le_bytes());
        bytes[4..6].copy_from_slice(&to_u16(key.len()).to_le_bytes());
        let field =
            &mut bytes[self.vector_offset()..self.vector_offset() + self.vector_field_bytes()];
        if self.vector_pages == 0 {
            field.copy_from_slice(&f32_bytes(vector));
        } else {
            let ids: Vec<u8> = vector_pages.iter().flat_map(|page| page.0.to_le_bytes()).collect();
            field.copy_from_slice(&ids);
        }
        for (layer, list) in links.iter().enumerate() {
            let encoded = self.encode_list(layer, vector, list);
            let offset = self.list_offset(layer);
            bytes[offset..offset + encoded.len()].copy_from_slice(&encoded);
        }
        let key_offset = self.key_offset(level);
        bytes[key_offset..].copy_from_slice(key);
        bytes
    }

    /// Vector page `part` of the node in `owner` whose vector is `vector`: the owner, the
    /// part, the count and that part's values.
    pub fn encode_vector_page(&self, owner: PageId, part: usize, vector: &[f32]) -> Vec<u8> {
        assert!(vector.len() == self.dimensions, "the node's whole vector");
        let values = &vector[self.vector_part(part)];
        let mut bytes = Vec::with_capacity(VECTOR_PAGE_HEADER_BYTES + 4 * values.len());
        bytes.extend_from_slice(&owner.0.to_le_bytes());
        bytes.extend_from_slice(&to_u16(part).to_le_bytes());
        bytes.extend_from_slice(&to_u16(values.len()).to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
        bytes.extend_from_slice(&f32_bytes(values));
        bytes
    }

    /// Appends the values of vector page `part` of the node in `owner` to `out`, checking
    /// that the page is that part of that node's vector.
    pub(crate) fn decode_vector_page(
        &self,
        (page_id, bytes): (PageId, &[u8]),
        (owner, part): (PageId, usize),
        out: &mut Vec<f32>,
    ) -> Result<()> {
        let values = self.vector_part(part);
        let fits = get_u64(bytes, 0) == owner.0
            && usize::from(get_u16(bytes, 8)) == part
            && usize::from(get_u16(bytes, 10)) == values.len();
        if !fits {
            return Err(HnswError::Corrupt {
                page_id,
                detail: format!(
                    "not part {part} of the vector of node {} (owner={} part={} count={})",
                    owner.0,
                    get_u64(bytes, 0),
                    get_u16(bytes, 8),
                    get_u16(bytes, 10)
                ),
            });
        }
        let start = VECTOR_PAGE_HEADER_BYTES;
        out.extend(f32_values(&bytes[start..start + 4 * values.len()]));
        Ok(())
    }

    /// A neighbour list's bytes from its count on: count, zero, then the slots in use.
    /// `owner` is the vector of the node whose list it is (sign codes are relative to it).
    pub fn encode_list(&self, layer: usize, owner: &[f32], links: &[(PageId, &[f32])]) -> Vec<u8> {
        assert!(links.len() <= self.capacity(layer), "a list within its capacity");
        let mut bytes =
            Vec::with_capacity(LIST_HEADER_BYTES + links.len() * self.slot_bytes(layer));
        bytes.extend_from_slice(&to_u16(links.len()).to_le_bytes());
        bytes.extend_from_slice(&[0, 0]);
        for (page_id, vector) in links {
            bytes.extend_from_slice(&page_id.0.to_le_bytes());
            if layer == 0 {
                self.encode_code(vector, owner, &mut bytes);
            }
        }
        bytes
    }

    /// One slot of a list on `layer` of the node whose vector is `owner`: the page id and,
    /// on layer 0, the code of its vector.
    pub fn encode_slot(&self, layer: usize, owner: &[f32], link: (PageId, &[f32])) -> Vec<u8> {
        let mut slot = link.0 .0.to_le_bytes().to_vec();
        if layer == 0 {
            self.encode_code(link.1, owner, &mut slot);
        }
        slot
    }

    /// A list's bytes from its count on, from slots as `encode_slot` or `NodeRef::slot`
    /// give them.
    pub fn encode_slots(&self, layer: usize, slots: &[Vec<u8>]) -> Vec<u8> {
        assert!(slots.len() <= self.capacity(layer), "a list within its capacity");
        let mut bytes =
            Vec::with_capacity(LIST_HEADER_BYTES + slots.len() * self.slot_bytes(layer));
        bytes.extend_from_slice(&to_u16(slots.len()).to_le_bytes());
        bytes.extend_from_slice(&[0, 0]);
        for slot in slots {
            assert!(slot.len() == self.slot_bytes(layer), "a slot of this layer");
            bytes.extend_from_slice(slot);
        }
        bytes
    }

    /// The bytes (offset, contents) that append one link to a list holding `count` of the
    /// node whose vector is `owner`.
    pub fn append_link(
        &self,
        layer: usize,
        count: usize,
        owner: &[f32],
        link: (PageId, &[f32]),
    ) -> [(usize, Vec<u8>); 2] {
        assert!(count < self.capacity(layer), "appending to a full list");
        [
            (self.slot_offset(layer, count), self.encode_slot(layer, owner, link)),
            (self.list_offset(layer), to_u16(count + 1).to_le_bytes().to_vec()),
        ]
    }

    /// Appends the code of `vector` in the list of `owner`: its exact words, SQ8, sign bits
    /// of the residual, or nothing (no codes).
    pub(crate) fn encode_code(&self, vector: &[f32], owner: &[f32], out: &mut Vec<u8>) {
        match self.codes {
            CodeKind::Words => out.extend(vector.iter().flat_map(|word| word.to_le_bytes())),
            CodeKind::Sq8 => encode_code(vector, out),
            CodeKind::Signs => encode_sign_code(self.metric, vector, owner, out),
            CodeKind::None => {}
        }
    }

    /// Decodes a code into `out` (the exact or approximate vector), reusing its allocation.
    /// Sign codes are not vectors: their distances are estimated (`sign_code.rs`).
    pub(crate) fn decode_code(&self, code: &[u8], out: &mut Vec<f32>) {
        match self.codes {
            CodeKind::Words => {
                out.clear();
                out.extend(f32_values(code));
            }
            CodeKind::Sq8 => decode_code(code, out),
            CodeKind::Signs | CodeKind::None => {
                unreachable!("{:?} codes are not decoded", self.codes)
            }
        }
    }
}

/// Levels needed so that `NODES_PLANNED` nodes leave about one on the top layer:
/// the smallest `l` with `m^l >= NODES_PLANNED`, at most `LEVELS_MAX`.
fn planned_levels(m: usize) -> u8 {
    let base = u128::try_from(m).expect("m fits");
    let mut reach = 1u128;
    let mut levels = 0;
    while reach < NODES_PLANNED && levels < LEVELS_MAX {
        reach = reach.saturating_mul(base);
        levels += 1;
    }
    levels
}

/// Largest dimension count an index with `m` accepts: as many as `VECTOR_PAGES_MAX` vector
/// pages hold, if a node with their ids, one upper level and a full key fits a page (it
/// does for every `m` up to `M_MAX`).
pub fn dimensions_max(m: usize) -> usize {
    let node_bytes = NODE_HEADER_BYTES
        + VECTOR_PAGES_MAX * PAGE_ID_BYTES
        + LIST_HEADER_BYTES
        + 2 * m * PAGE_ID_BYTES
        + LIST_HEADER_BYTES
        + m * PAGE_ID_BYTES
        + ROW_KEY_BYTES_MAX;
    assert!(node_bytes <= PAGE_PAYLOAD_SIZE, "a node of m <= M_MAX with vector pages fits");
    (VECTOR_PAGES_MAX * VECTOR_PAGE_VALUES_MAX).min(usize::from(u16::MAX))
}

/// Appends the per-vector SQ8 code of `vector`: min, step, one byte per dimension.
fn encode_code(vector: &[f32], out: &mut Vec<u8>) {
    let minimum = vector.iter().copied().fold(f32::INFINITY, f32::min);
    let maximum = vector.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let step = (maximum - minimum) / CODE_LEVELS;
    out.extend_from_slice(&minimum.to_le_bytes());
    out.extend_from_slice(&step.to_le_bytes());
    out.extend(vector.iter().map(|&value| quantize(value, minimum, step)));
}

// The value is clamped to [0, 255] first (vectors are finite: the SQL type rejects NaN
// and infinities), so the conversion to u8 is exact rounding, not truncation.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn quantize(value: f32, minimum: f32, step: f32) -> u8 {
    if step > 0.0 {
        ((value - minimum) / step).round().clamp(0.0, CODE_LEVELS) as u8
    } else {
        0
    }
}

/// Decodes a code into `out` (the approximate vector), reusing its allocation. A plain
/// multiply and add, not `mul_add`: without FMA in the baseline target that is a call to a
/// software fma per dimension (a tenth of a query's time when profiled), and a code's
/// distance is approximate anyway.
fn decode_code(code: &[u8], out: &mut Vec<f32>) {
    let minimum = get_f32(code, 0);
    let step = get_f32(code, 4);
    out.clear();
    out.extend(code[CODE_HEADER_BYTES..].iter().map(|&level| minimum + step * f32::from(level)));
}

/// The step of a per-vector SQ8 code: each value decodes to within half of it.
pub(crate) fn sq8_step(code: &[u8]) -> f32 {
    get_f32(code, 4)
}

/// A node page's payload, checked against the index's layout when opened.
pub(crate) struct NodeRef<'page> {
    layout: Layout,
    bytes: &'page [u8],
}

impl<'page> NodeRef<'page> {
    pub fn open(layout: Layout, page_id: PageId, bytes: &'page [u8]) -> Result<NodeRef<'page>> {
        let corrupt = |detail: String| HnswError::Corrupt { page_id, detail };
        if bytes[0] != NODE_KIND && bytes[0] != FREED_KIND {
            return Err(corrupt(format!("not an hnsw node kind={}", bytes[0])));
        }
        if usize::from(get_u16(bytes, 2)) != layout.dimensions {
            return Err(corrupt(format!(
                "dimensions={} expected={}",
                get_u16(bytes, 2),
                layout.dimensions
            )));
        }
        let level = bytes[1];
        if level > layout.level_cap {
            return Err(corrupt(format!("level={level} above cap={}", layout.level_cap)));
        }
        let key_bytes = usize::from(get_u16(bytes, 4));
        if key_bytes > ROW_KEY_BYTES_MAX || layout.node_bytes(level, key_bytes) > bytes.len() {
            return Err(corrupt(format!("row key bytes={key_bytes} does not fit")));
        }
        let node = NodeRef { layout, bytes };
        for layer in 0..=usize::from(level) {
            if node.count(layer) > layout.capacity(layer) {
                return Err(corrupt(format!(
                    "layer={layer} count={} above capacity",
                    node.count(layer)
                )));
            }
        }
        Ok(node)
    }

    pub fn level(&self) -> u8 {
        self.bytes[1]
    }

    /// Whether purge removed this node (its page waits on the free list).
    pub fn is_freed(&self) -> bool {
        self.bytes[0] == FREED_KIND
    }

    /// The ids of the pages holding the node's vector (the layout has vector pages).
    pub fn vector_pages(&self) -> impl Iterator<Item = PageId> + '_ {
        let start = self.layout.vector_offset();
        (0..self.layout.vector_pages).map(move |part| PageId(get_u64(self.bytes, start + 8 * part)))
    }

    /// The exact vector into `out`, reusing its allocation (a query reads hundreds), when
    /// it is on the node page (`Hnsw::node_vector_into` reads vector pages).
    pub fn vector_into(&self, out: &mut Vec<f32>) {
        assert!(self.layout.vector_pages == 0, "the vector is on the node page");
        let start = self.layout.vector_offset();
        let bytes = &self.bytes[start..start + 4 * self.layout.dimensions];
        out.clear();
        out.extend(f32_values(bytes));
    }

    pub fn key(&self) -> &'page [u8] {
        let offset = self.layout.key_offset(self.level());
        &self.bytes[offset..offset + usize::from(get_u16(self.bytes, 4))]
    }

    /// Links on `layer` (callers check `layer <= level`).
    pub fn count(&self, layer: usize) -> usize {
        usize::from(get_u16(self.bytes, self.layout.list_offset(layer)))
    }

    pub fn link(&self, layer: usize, index: usize) -> PageId {
        PageId(get_u64(self.bytes, self.layout.slot_offset(layer, index)))
    }

    pub fn links(&self, layer: usize) -> Vec<PageId> {
        (0..self.count(layer)).map(|index| self.link(layer, index)).collect()
    }

    /// The bytes of slot `index` on `layer` (page id, and the code on layer 0).
    pub fn slot(&self, layer: usize, index: usize) -> &'page [u8] {
        let start = self.layout.slot_offset(layer, index);
        &self.bytes[start..start + self.layout.slot_bytes(layer)]
    }

    /// The code of the layer-0 link `index` (the index has codes).
    pub fn code(&self, index: usize) -> &'page [u8] {
        let start = self.layout.slot_offset(0, index) + PAGE_ID_BYTES;
        &self.bytes[start..start + self.layout.code_bytes]
    }
}

/// The meta page's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub layout: Layout,
    pub metric: Metric,
    pub ef_construction: usize,
    pub top_level: u8,
    /// The entry point (`None`: the index is empty).
    pub entry: Option<PageId>,
    pub node_count: u64,
    /// The first free-list page (None: no page is free). Meta pages written before purge
    /// existed hold zeros here.
    pub free_head: Option<PageId>,
    /// Freed node pages on the free list.
    pub free_count: u64,
}

pub(crate) const META_TOP_LEVEL_OFFSET: usize = 12;
pub(crate) const META_ENTRY_OFFSET: usize = 16;
pub(crate) const META_COUNT_OFFSET: usize = 24;
pub(crate) const META_FREE_HEAD_OFFSET: usize = 32;
pub(crate) const META_FREE_COUNT_OFFSET: usize = 40;
const META_BYTES: usize = 48;

impl Meta {
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![0u8; META_BYTES];
        bytes[0..4].copy_from_slice(META_MAGIC);
        bytes[4..6].copy_from_slice(&to_u16(self.layout.dimensions).to_le_bytes());
        bytes[6] = u8::try_from(self.layout.m).expect("m <= 100");
        bytes[7] = self.metric.code();
        bytes[8..10].copy_from_slice(&to_u16(self.ef_construction).to_le_bytes());
        bytes[10..12].copy_from_slice(&to_u16(self.layout.code_bytes).to_le_bytes());
        bytes[META_TOP_LEVEL_OFFSET] = self.top_level;
        bytes[13] = self.layout.level_cap;
        if self.layout.codes == CodeKind::Signs {
            bytes[META_CODE_KIND_OFFSET] = META_SIGN_CODES;
        }
        bytes[META_VECTOR_PAGES_OFFSET] =
            u8::try_from(self.layout.vector_pages).expect("at most VECTOR_PAGES_MAX");
        bytes[16..24].copy_from_slice(&self.entry.map_or(0, |page| page.0).to_le_bytes());
        bytes[24..32].copy_from_slice(&self.node_count.to_le_bytes());
        let free_head = self.free_head.map_or(0, |page| page.0);
        bytes[META_FREE_HEAD_OFFSET..META_FREE_HEAD_OFFSET + 8]
            .copy_from_slice(&free_head.to_le_bytes());
        bytes[META_FREE_COUNT_OFFSET..META_BYTES].copy_from_slice(&self.free_count.to_le_bytes());
        bytes
    }

    pub fn decode(page_id: PageId, bytes: &[u8]) -> Result<Meta> {
        let corrupt = |detail: &str| HnswError::Corrupt { page_id, detail: detail.into() };
        if &bytes[0..4] != META_MAGIC {
            return Err(corrupt("not an hnsw meta page"));
        }
        let metric = Metric::from_code(bytes[7]).ok_or_else(|| corrupt("bad metric"))?;
        let m = usize::from(bytes[6]);
        let dimensions = usize::from(get_u16(bytes, 4));
        if !(M_MIN..=M_MAX).contains(&m) || dimensions == 0 {
            return Err(corrupt("bad m or dimensions"));
        }
        let code_bytes = usize::from(get_u16(bytes, 10));
        let codes = match (bytes[META_CODE_KIND_OFFSET], code_bytes) {
            (META_SIGN_CODES, _) => CodeKind::Signs,
            (0, 0) => CodeKind::None,
            (0, _) if metric.is_bits() => CodeKind::Words,
            (0, _) => CodeKind::Sq8,
            _ => return Err(corrupt("bad code kind")),
        };
        let expected_bytes = match codes {
            CodeKind::None => 0,
            CodeKind::Sq8 => CODE_HEADER_BYTES + dimensions,
            CodeKind::Words => 4 * dimensions,
            CodeKind::Signs => sign_code_bytes(dimensions),
        };
        if code_bytes != expected_bytes {
            return Err(corrupt("code bytes do not match the code kind"));
        }
        let vector_pages = usize::from(bytes[META_VECTOR_PAGES_OFFSET]);
        let pages_needed = dimensions.div_ceil(VECTOR_PAGE_VALUES_MAX);
        if vector_pages != 0 && (vector_pages != pages_needed || vector_pages > VECTOR_PAGES_MAX) {
            return Err(corrupt("vector pages do not match the dimensions"));
        }
        let level_cap = bytes[13];
        let layout = Layout { dimensions, m, code_bytes, codes, metric, level_cap, vector_pages };
        let top_level = bytes[META_TOP_LEVEL_OFFSET];
        if top_level > layout.level_cap
            || layout.node_bytes(layout.level_cap, 0) > PAGE_PAYLOAD_SIZE
        {
            return Err(corrupt("bad level cap or top level"));
        }
        let entry = get_u64(bytes, META_ENTRY_OFFSET);
        let free_head = get_u64(bytes, META_FREE_HEAD_OFFSET);
        Ok(Meta {
            layout,
            metric,
            ef_construction: usize::from(get_u16(bytes, 8)),
            top_level,
            entry: (entry != 0).then_some(PageId(entry)),
            node_count: get_u64(bytes, META_COUNT_OFFSET),
            free_head: (free_head != 0).then_some(PageId(free_head)),
            free_count: get_u64(bytes, META_FREE_COUNT_OFFSET),
        })
    }
}

/// A free-list page: next page u64, count u16, zero, then `count` freed node page ids.
pub(crate) const FREE_LIST_HEADER_BYTES: usize = 16;
pub(crate) const FREE_LIST_COUNT_OFFSET: usize = 8;
/// Page ids one free-list page holds.
pub(crate) const FREE_LIST_IDS_MAX: usize = (PAGE_PAYLOAD_SIZE - FREE_LIST_HEADER_BYTES) / 8;

/// A free-list page's fields: (next page, the freed page ids it holds).
pub(crate) fn decode_free_list(
    page_id: PageId,
    bytes: &[u8],
) -> Result<(Option<PageId>, Vec<PageId>)> {
    let count = usize::from(get_u16(bytes, FREE_LIST_COUNT_OFFSET));
    if count > FREE_LIST_IDS_MAX {
        return Err(HnswError::Corrupt { page_id, detail: format!("free list count={count}") });
    }
    let next = get_u64(bytes, 0);
    let ids =
        (0..count).map(|index| PageId(get_u64(bytes, free_list_slot_offset(index)))).collect();
    Ok(((next != 0).then_some(PageId(next)), ids))
}

pub(crate) fn free_list_slot_offset(index: usize) -> usize {
    FREE_LIST_HEADER_BYTES + 8 * index
}

pub(crate) fn free_list_count_bytes(count: usize) -> [u8; 2] {
    to_u16(count).to_le_bytes()
}
