//! The ivfflat access method over a real page store: recall against brute force as probes
//! grow, exhaustive probes exact, reopen after restart, cosine and inner product, fewer rows
//! than lists (docs/design/014-vector-indexes.md, "ivfflat").

use std::path::Path;
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_storage::{PageStore, StoreConfig};
use tierdb_vector::ivfflat::{
    centers, IndexParameters, IterativeScan, IvfFlat, Metric, ScanOptions, SAMPLES_PER_LIST,
};

fn open_store(directory: &Path) -> Arc<PageStore> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 4096 * 8192;
    Arc::new(PageStore::open(config).unwrap())
}

fn random_vectors(seed: u64, count: usize, dimensions: usize) -> Vec<Vec<f32>> {
    let mut random = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            (0..dimensions)
                .map(|_| {
                    // 16 random bits, exact in an f32, in [-1, 1).
                    let bits = u16::try_from(random.next_u64() >> 48).unwrap();
                    f32::from(bits) / 32_768.0 - 1.0
                })
                .collect()
        })
        .collect()
}

fn key_of(index: usize) -> Vec<u8> {
    u32::try_from(index).unwrap().to_be_bytes().to_vec()
}

fn build(store: &Arc<PageStore>, vectors: &[Vec<f32>], metric: Metric, lists: usize) -> IvfFlat {
    let dimensions = vectors[0].len();
    let sample: Vec<Vec<f32>> = vectors.iter().take(lists * SAMPLES_PER_LIST).cloned().collect();
    let centers = centers(&sample, lists, dimensions, metric, 7);
    let parameters = IndexParameters { dimensions, metric, lists };
    let index = IvfFlat::create(Arc::clone(store), parameters, &centers).unwrap();
    for (position, vector) in vectors.iter().enumerate() {
        index.insert(vector, &key_of(position)).unwrap();
    }
    index
}

fn exact(vectors: &[Vec<f32>], query: &[f32], metric: Metric, k: usize) -> Vec<Vec<u8>> {
    let mut all: Vec<(f64, usize)> = vectors
        .iter()
        .enumerate()
        .map(|(position, vector)| (metric.distance(query, vector), position))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.iter().take(k).map(|(_, position)| key_of(*position)).collect()
}

fn recall(index: &IvfFlat, vectors: &[Vec<f32>], queries: &[Vec<f32>], probes: usize) -> f64 {
    let k = 10;
    let mut found = 0;
    for query in queries {
        let truth = exact(vectors, query, index.metric(), k);
        let results = index.search(query, probes).unwrap();
        let top: Vec<Vec<u8>> = results.iter().take(k).map(|result| result.key.clone()).collect();
        found += truth.iter().filter(|key| top.contains(key)).count();
    }
    found as f64 / (k * queries.len()) as f64
}

#[test]
fn recall_grows_with_probes_and_is_exact_at_all_lists() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let vectors = random_vectors(1, 5_000, 32);
    let queries = random_vectors(2, 50, 32);
    let index = build(&store, &vectors, Metric::L2, 50);
    assert_eq!(index.entry_count().unwrap(), 5_000);
    let recalls: Vec<f64> =
        [1, 5, 50].iter().map(|&probes| recall(&index, &vectors, &queries, probes)).collect();
    println!("ivfflat recall@10, 5000 x 32-d, lists 50, probes 1/5/50: {recalls:?}");
    assert!(recalls[0] < recalls[1] && recalls[1] < recalls[2], "{recalls:?}");
    assert_eq!(recalls[2], 1.0);
    // Every entry once at probes = lists.
    assert_eq!(index.search(&queries[0], 50).unwrap().len(), 5_000);
}

#[test]
fn reopened_index_answers_the_same() {
    let directory = tempfile::tempdir().unwrap();
    let vectors = random_vectors(3, 2_000, 16);
    let (meta, before) = {
        let store = open_store(directory.path());
        let index = build(&store, &vectors, Metric::Cosine, 20);
        let before = index.search(&vectors[5], 3).unwrap();
        // A crash: no flush, no checkpoint; the index lives only in the WAL.
        let lsn = index.insert(&vectors[9], &key_of(9_999)).unwrap().unwrap();
        store.wait_durable(lsn).unwrap();
        (index.meta_page(), before)
    };
    let store = open_store(directory.path());
    let index = IvfFlat::open(Arc::clone(&store), meta).unwrap();
    let after = index.search(&vectors[5], 3).unwrap();
    assert_eq!(
        after.iter().filter(|result| result.key != key_of(9_999)).cloned().collect::<Vec<_>>(),
        before
    );
    assert_eq!(before[0].key, key_of(5));
    assert_eq!(index.entry_count().unwrap(), 2_001);
}

#[test]
fn iterative_scan_reads_more_lists_up_to_max_probes() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let vectors = random_vectors(4, 1_000, 8);
    let index = build(&store, &vectors, Metric::InnerProduct, 10);
    let options = ScanOptions { probes: 2, iterative: IterativeScan::RelaxedOrder, max_probes: 5 };
    let mut scan = index.scan_state(&vectors[0], options).unwrap();
    let mut total = 0;
    loop {
        let batch = scan.next_batch(&index).unwrap();
        if batch.is_empty() {
            break;
        }
        assert!(batch.windows(2).all(|pair| pair[0].distance <= pair[1].distance));
        total += batch.len();
    }
    assert_eq!(scan.probed(), 5);
    assert!(total > 0 && total < 1_000);
}

#[test]
fn fewer_rows_than_lists_and_empty_index() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let vectors = random_vectors(5, 3, 4);
    let index = build(&store, &vectors, Metric::L2, 10);
    assert_eq!(index.search(&vectors[1], 10).unwrap().len(), 3);
    let empty_centers = centers(&[], 4, 4, Metric::Cosine, 1);
    let parameters = IndexParameters { dimensions: 4, metric: Metric::Cosine, lists: 4 };
    let empty = IvfFlat::create(Arc::clone(&store), parameters, &empty_centers).unwrap();
    assert!(empty.search(&[1.0, 0.0, 0.0, 0.0], 4).unwrap().is_empty());
    // A zero vector has no cosine distance: not indexed.
    assert_eq!(empty.insert(&[0.0; 4], b"k").unwrap(), None);
}

#[test]
fn many_lists_span_several_directory_pages() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let vectors = random_vectors(6, 3_000, 300);
    let index = build(&store, &vectors, Metric::L2, 40);
    let reopened = IvfFlat::open(Arc::clone(&store), index.meta_page()).unwrap();
    assert_eq!(reopened.centers(), index.centers());
    let results = reopened.search(&vectors[17], 40).unwrap();
    assert_eq!(results.len(), 3_000);
    assert_eq!(results[0].key, key_of(17));
}
