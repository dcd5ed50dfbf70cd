//! The HNSW invariant check (`Hnsw::check_graph`): a built graph passes it and shows every
//! node once to the caller; each kind of damage written into a node or the meta page through
//! the page store's ordinary mini-transactions is reported as a violation at its page.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tierdb_common::{PageId, SplitMix64};
use tierdb_storage::{PageStore, StoreConfig};
use tierdb_vector::hnsw::{CheckReport, Hnsw, IndexParameters, Metric};

const DIMENSIONS: usize = 16;
const NODES: usize = 300;
const LIST_HEADER_BYTES: usize = 4;
const PAGE_ID_BYTES: usize = 8;
/// Payload offset of the meta page's node count (docs/design/014-vector-indexes.md).
const META_COUNT_OFFSET: usize = 24;

fn open_store(directory: &Path) -> Arc<PageStore> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 8192 * 8192;
    Arc::new(PageStore::open(config).unwrap())
}

fn vectors(seed: u64, count: usize, dimensions: usize) -> Vec<Vec<f32>> {
    let mut random = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            (0..dimensions).map(|_| f32::from(u16::try_from(random.below(1000)).unwrap())).collect()
        })
        .collect()
}

fn key_of(index: usize) -> Vec<u8> {
    u32::try_from(index).unwrap().to_be_bytes().to_vec()
}

fn build(store: &Arc<PageStore>, data: &[Vec<f32>], metric: Metric) -> Hnsw {
    let parameters =
        IndexParameters { dimensions: data[0].len(), metric, m: 16, ef_construction: 64 };
    let index = Hnsw::create(Arc::clone(store), parameters).unwrap();
    for (position, vector) in data.iter().enumerate() {
        assert!(index.insert(vector, &key_of(position)).unwrap().is_some());
    }
    index
}

/// Each node the check showed, by row key: its page and vector.
type Nodes = HashMap<Vec<u8>, (PageId, Vec<f32>)>;

/// The report and every node the check showed.
fn check(index: &Hnsw) -> (CheckReport, Nodes) {
    let mut nodes = HashMap::new();
    let report = index
        .check_graph(&mut |page_id, vector, key| {
            let previous = nodes.insert(key.to_vec(), (page_id, vector.to_vec()));
            assert!(previous.is_none(), "each node is shown once");
        })
        .unwrap();
    (report, nodes)
}

fn assert_sound(index: &Hnsw, data: &[Vec<f32>]) {
    let (report, nodes) = check(index);
    assert!(report.is_ok(), "{:?}", report.violations);
    let count = u64::try_from(data.len()).unwrap();
    assert_eq!(report.node_count, count);
    assert_eq!((report.nodes_reached, report.nodes_reached_layer0), (count, count));
    assert!(report.links >= count, "every node has a layer-0 link: {report:?}");
    for (position, vector) in data.iter().enumerate() {
        assert_eq!(&nodes[&key_of(position)].1, vector, "node {position} holds its vector");
    }
}

#[test]
fn built_graphs_pass_the_check() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = vectors(1, NODES, DIMENSIONS);
    for metric in [Metric::L2, Metric::Cosine, Metric::L1] {
        let index = build(&store, &data, metric);
        assert_sound(&index, &data);
    }
    // At m = 100 a layer-0 list with codes does not fit a page: an index without codes.
    let wide = vectors(2, 120, 64);
    let parameters =
        IndexParameters { dimensions: 64, metric: Metric::L2, m: 100, ef_construction: 200 };
    assert_eq!(parameters.validate().unwrap().code_bytes, 0, "no room for codes");
    let index = Hnsw::create(Arc::clone(&store), parameters).unwrap();
    for (position, vector) in wide.iter().enumerate() {
        index.insert(vector, &key_of(position)).unwrap();
    }
    assert_sound(&index, &wide);
    let empty = Hnsw::create(Arc::clone(&store), parameters).unwrap();
    let (report, nodes) = check(&empty);
    assert!(report.is_ok() && nodes.is_empty() && report.node_count == 0);
}

/// Writes `bytes` at `offset` of page `page_id`'s payload in one mini-transaction.
fn overwrite(store: &PageStore, page_id: PageId, offset: usize, bytes: &[u8]) {
    let mut mtr = store.mtr();
    let slot = mtr.latch(page_id).unwrap();
    mtr.write(slot, offset, bytes);
    mtr.commit().unwrap();
}

/// Payload offset of link `index` of layer 0.
fn layer0_slot(index: &Hnsw, link: usize) -> usize {
    let layout = index.layout();
    layout.list_offset(0) + LIST_HEADER_BYTES + link * (PAGE_ID_BYTES + layout.code_bytes)
}

fn assert_violation(index: &Hnsw, page_id: PageId, expected: &str) {
    let (report, _) = check(index);
    assert!(
        report
            .violations
            .iter()
            .any(|found| found.page_id == page_id && found.detail.contains(expected)),
        "expected {expected:?} at {page_id}: {:?}",
        report.violations
    );
    assert_eq!(report.violation_count, u64::try_from(report.violations.len()).unwrap());
    assert!(index.check().is_err(), "check() fails on the first violation");
}

#[test]
fn damage_is_reported_as_violations() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = vectors(3, NODES, DIMENSIONS);
    let index = build(&store, &data, Metric::L2);
    let (_, nodes) = check(&index);
    let page = |position: usize| nodes[&key_of(position)].0;
    let (victim, other) = (page(10), page(20));

    overwrite(&store, victim, layer0_slot(&index, 0), &victim.0.to_le_bytes());
    assert_violation(&index, victim, "layer=0: links to itself");

    let second = index.layout().list_offset(0) + LIST_HEADER_BYTES;
    let mut first_link = [0u8; PAGE_ID_BYTES];
    first_link.copy_from_slice(&store.read(other).unwrap().payload()[second..second + 8]);
    overwrite(&store, other, layer0_slot(&index, 1), &first_link);
    assert_violation(&index, other, "links twice to");

    let third = page(30);
    overwrite(&store, third, layer0_slot(&index, 0), &index.meta_page().0.to_le_bytes());
    assert_violation(&index, third, "no node of the index");

    // A code byte of the fourth node's first link: the code no longer matches the target.
    let fourth = page(40);
    let code_byte = layer0_slot(&index, 0) + PAGE_ID_BYTES + 8;
    let old = store.read(fourth).unwrap().payload()[code_byte];
    overwrite(&store, fourth, code_byte, &[old.wrapping_add(7)]);
    assert_violation(&index, fourth, "is not its vector's");

    // A layer-0 count above the capacity: the node cannot be read.
    let fifth = page(50);
    let capacity = u16::try_from(index.layout().capacity(0) + 1).unwrap();
    overwrite(&store, fifth, index.layout().list_offset(0), &capacity.to_le_bytes());
    assert_violation(&index, fifth, "no readable node");

    // One node more in the count than the graph holds.
    let count = u64::try_from(NODES + 1).unwrap();
    overwrite(&store, index.meta_page(), META_COUNT_OFFSET, &count.to_le_bytes());
    assert_violation(&index, index.meta_page(), "but reached=");
}

#[test]
fn an_emptied_list_is_reported() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = vectors(4, 50, DIMENSIONS);
    let index = build(&store, &data, Metric::L2);
    let (_, nodes) = check(&index);
    let victim = nodes[&key_of(7)].0;
    overwrite(&store, victim, index.layout().list_offset(0), &0u16.to_le_bytes());
    assert_violation(&index, victim, "no link on layer 0");
}

/// Unreachable nodes of an index over `data` at `m` (ef_construction 4m), from its check.
fn unreachable_nodes(store: &Arc<PageStore>, data: &[Vec<f32>], m: usize) -> u64 {
    let parameters =
        IndexParameters { dimensions: DIMENSIONS, metric: Metric::L2, m, ef_construction: 4 * m };
    let index = Hnsw::create(Arc::clone(store), parameters).unwrap();
    for (position, vector) in data.iter().enumerate() {
        index.insert(vector, &key_of(position)).unwrap();
    }
    let (report, _) = check(&index);
    report.node_count - report.nodes_reached_layer0
}

/// A node whose in-links are all pruned away is unreachable. Inserts force the new node into
/// its nearest neighbour's list when every full list refuses it, and the new node adopts
/// the nodes its rewrites drop while its list has room: on uniform random vectors (high
/// intrinsic dimension, many full lists) at m = 4, 34 of 6,000 nodes stay unreachable where
/// pgvector's algorithm alone left 64, and at m = 8 none. Seeded data and levels: the
/// figures are exact.
#[test]
fn pruning_leaves_few_nodes_unreachable() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let (mut at_m4, mut at_m8) = (0, 0);
    for seed in 0..4 {
        let data = vectors(100 + seed, 1500, DIMENSIONS);
        at_m4 += unreachable_nodes(&store, &data, 4);
        at_m8 += unreachable_nodes(&store, &data, 8);
    }
    eprintln!("unreachable of 6,000 nodes: {at_m4} at m = 4, {at_m8} at m = 8");
    assert!(at_m4 <= 34, "{at_m4} of 6,000 nodes unreachable at m = 4");
    assert_eq!(at_m8, 0, "unreachable nodes at m = 8");
}
