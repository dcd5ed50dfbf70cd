//! HNSW and ivfflat over bit strings (bit_hamming_ops, bit_jaccard_ops; docs/design/
//! 014-vector-indexes.md, "bit"): recall against brute force on clustered random bits, the
//! graph check, distances equal to the SQL kernels bit for bit, exact codes in the layout,
//! ivfflat exact at every list probed and its centers the per-bit majority of their lists.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_storage::{PageStore, StoreConfig};
use tierdb_vector::hnsw::{self, Hnsw};
use tierdb_vector::ivfflat::{self, IvfFlat};
use tierdb_vector::{bits_to_words, hamming_distance, jaccard_distance, words_to_bits, Metric};

const K: usize = 10;
/// Members of a cluster are nearly equidistant from a query of it (about 56 ± 5 differing
/// bits of 256), a hard case for a graph: recall@10 is 0.91 at ef_search 40, 0.99 at 100.
const EF_SEARCH: usize = 100;

fn open_store(directory: &Path) -> Arc<PageStore> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 8192 * 8192;
    Arc::new(PageStore::open(config).unwrap())
}

fn key_of(index: usize) -> Vec<u8> {
    u32::try_from(index).unwrap().to_be_bytes().to_vec()
}

/// Packed bits (most significant first, padding zero) of `bits` random bits.
fn random_bits(random: &mut SplitMix64, bits: usize) -> Vec<u8> {
    let mut packed = vec![0u8; bits.div_ceil(8)];
    for index in 0..bits {
        if random.below(2) == 1 {
            packed[index / 8] |= 0x80 >> (index % 8);
        }
    }
    packed
}

/// `count` bit strings in `clusters` clusters: each a cluster's center with every bit
/// flipped with probability 1/8 (so neighbours are meaningful, as for binary-quantized
/// embeddings).
fn clustered(
    seed: u64,
    count: usize,
    bits: usize,
    clusters: usize,
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut random = SplitMix64::new(seed);
    let centers: Vec<Vec<u8>> = (0..clusters).map(|_| random_bits(&mut random, bits)).collect();
    let members = (0..count)
        .map(|index| {
            let mut member = centers[index % clusters].clone();
            for bit in 0..bits {
                if random.below(8) == 0 {
                    member[bit / 8] ^= 0x80 >> (bit % 8);
                }
            }
            member
        })
        .collect();
    (centers, members)
}

fn sql_distance(metric: Metric, a: &[u8], b: &[u8]) -> f64 {
    match metric {
        Metric::BitHamming => hamming_distance(a, b) as f64,
        _ => jaccard_distance(a, b),
    }
}

/// Recall@K by distance (ties in hamming distance make key sets ambiguous): the share of
/// the K results at most as far as the K-th true neighbour.
fn recall_of(metric: Metric, data: &[Vec<u8>], query: &[u8], distances: &[f64]) -> usize {
    let mut truth: Vec<f64> = data.iter().map(|bits| sql_distance(metric, query, bits)).collect();
    truth.sort_by(f64::total_cmp);
    distances.iter().take(K).filter(|distance| **distance <= truth[K - 1]).count()
}

fn build_hnsw(store: &Arc<PageStore>, data: &[Vec<u8>], bits: usize, metric: Metric) -> Hnsw {
    let parameters = hnsw::IndexParameters { dimensions: bits, metric, m: 16, ef_construction: 64 };
    let index = Hnsw::create(Arc::clone(store), parameters).unwrap();
    for (position, packed) in data.iter().enumerate() {
        assert!(index.insert(&bits_to_words(packed), &key_of(position)).unwrap().is_some());
    }
    index
}

fn hnsw_recall_and_check(metric: Metric, bits: usize) {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let (_, data) = clustered(1, 1_500, bits, 30);
    let (_, queries) = clustered(2, 30, bits, 30);
    let index = build_hnsw(&store, &data, bits, metric);
    let layout = index.layout();
    assert_eq!(layout.codes, hnsw::CodeKind::Words, "a bit index's codes are its words");
    assert_eq!(layout.dimensions, bits.div_ceil(32));
    assert_eq!(layout.code_bytes, 4 * layout.dimensions);
    let mut found = 0;
    for query in &queries {
        let results = index.search(&bits_to_words(query), EF_SEARCH).unwrap();
        for result in &results {
            let position = usize::try_from(u32::from_be_bytes(result.key[..].try_into().unwrap()));
            let expected = sql_distance(metric, query, &data[position.unwrap()]);
            assert_eq!(result.distance.to_bits(), expected.to_bits(), "the operator's value");
        }
        let distances: Vec<f64> = results.iter().map(|result| result.distance).collect();
        found += recall_of(metric, &data, query, &distances);
    }
    let recall = found as f64 / (K * queries.len()) as f64;
    eprintln!("{metric:?} recall@{K} {recall}");
    assert!(recall >= 0.95, "{metric:?} recall@{K} {recall}");
    let mut nodes = HashMap::new();
    let report = index
        .check_graph(&mut |_, vector, key| {
            nodes.insert(key.to_vec(), words_to_bits(vector));
        })
        .unwrap();
    assert!(report.is_ok(), "{:?}", report.violations);
    assert_eq!(report.nodes_reached, 1_500);
    for (position, packed) in data.iter().enumerate() {
        assert_eq!(&nodes[&key_of(position)][..packed.len()], &packed[..], "node {position}");
    }
}

#[test]
fn hnsw_hamming_finds_the_nearest_bit_strings() {
    hnsw_recall_and_check(Metric::BitHamming, 256);
}

#[test]
fn hnsw_jaccard_finds_the_nearest_bit_strings_with_padding() {
    // 100 bits: four words, the last 28 bits padding.
    hnsw_recall_and_check(Metric::BitJaccard, 100);
}

#[test]
fn hnsw_bit_dimension_limits() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let create = |bits: usize| {
        let parameters = hnsw::IndexParameters {
            dimensions: bits,
            metric: Metric::BitHamming,
            m: 16,
            ef_construction: 64,
        };
        Hnsw::create(Arc::clone(&store), parameters)
    };
    assert!(create(hnsw::bit_dimensions_max(16)).is_ok());
    assert!(create(hnsw::bit_dimensions_max(16) + 32).is_err());
    assert!(hnsw::bit_dimensions_max(2) <= hnsw::BIT_DIMENSIONS_MAX);
    // Large strings fit without codes: every layer-0 distance reads the neighbour's page.
    let large = create(20_000).unwrap();
    assert_eq!(large.layout().code_bytes, 0);
}

fn build_ivfflat(store: &Arc<PageStore>, data: &[Vec<u8>], bits: usize, lists: usize) -> IvfFlat {
    let words: Vec<Vec<f32>> = data.iter().map(|packed| bits_to_words(packed)).collect();
    let centers = ivfflat::centers(&words, lists, bits, Metric::BitHamming, 7);
    let parameters =
        ivfflat::IndexParameters { dimensions: bits, metric: Metric::BitHamming, lists };
    let index = IvfFlat::create(Arc::clone(store), parameters, &centers).unwrap();
    for (position, vector) in words.iter().enumerate() {
        index.insert(vector, &key_of(position)).unwrap();
    }
    index
}

#[test]
fn ivfflat_hamming_is_exact_at_every_list_and_recalls_with_few() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let bits = 200;
    let (_, data) = clustered(3, 2_000, bits, 20);
    let (_, queries) = clustered(4, 20, bits, 20);
    let index = build_ivfflat(&store, &data, bits, 20);
    assert_eq!(index.entry_count().unwrap(), 2_000);
    let (mut exact, mut few) = (0, 0);
    for query in &queries {
        let words = bits_to_words(query);
        let all: Vec<f64> =
            index.search(&words, 20).unwrap().iter().map(|result| result.distance).collect();
        exact += recall_of(Metric::BitHamming, &data, query, &all);
        let some: Vec<f64> =
            index.search(&words, 3).unwrap().iter().map(|result| result.distance).collect();
        few += recall_of(Metric::BitHamming, &data, query, &some);
    }
    assert_eq!(exact, K * queries.len(), "every list probed is a brute-force search");
    let recall = few as f64 / (K * queries.len()) as f64;
    assert!(recall >= 0.9, "recall@{K} at 3 of 20 probes {recall}");
    let reopened = IvfFlat::open(Arc::clone(&store), index.meta_page()).unwrap();
    assert_eq!(reopened.centers().len(), index.centers().len());
    assert_eq!(words_to_bits(reopened.centers()), words_to_bits(index.centers()));
}

#[test]
fn ivfflat_bit_centers_are_per_bit_majorities() {
    // Two clusters far apart: k-means puts each in its own list, and each center is the
    // majority of its members, which recovers the cluster's own bits.
    let bits = 70;
    let (cluster_centers, data) = clustered(5, 400, bits, 2);
    let words: Vec<Vec<f32>> = data.iter().map(|packed| bits_to_words(packed)).collect();
    let centers = ivfflat::centers(&words, 2, bits, Metric::BitHamming, 11);
    let mut centers: Vec<Vec<u8>> =
        centers.chunks(3).map(|center| words_to_bits(center)[..9].to_vec()).collect();
    centers.sort();
    let mut expected = cluster_centers.clone();
    expected.sort();
    assert_eq!(centers, expected);
    // Fewer samples than lists: the samples, then random centers with zero padding.
    let few = ivfflat::centers(&words[..1], 4, bits, Metric::BitHamming, 3);
    assert_eq!(few.len(), 4 * 3);
    for center in few.chunks(3) {
        let packed = words_to_bits(center);
        assert_eq!(packed[8] & 0b0000_0011, 0, "bits 70 and 71 are padding");
        assert!(packed[9..].iter().all(|byte| *byte == 0));
    }
}

#[test]
fn ivfflat_takes_hamming_only() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let jaccard = ivfflat::IndexParameters { dimensions: 64, metric: Metric::BitJaccard, lists: 1 };
    assert!(IvfFlat::create(Arc::clone(&store), jaccard, &[0.0; 2]).is_err());
    let too_long =
        ivfflat::IndexParameters { dimensions: 64_001, metric: Metric::BitHamming, lists: 1 };
    assert!(too_long.validate().is_err());
    let longest =
        ivfflat::IndexParameters { dimensions: 64_000, metric: Metric::BitHamming, lists: 1 };
    assert!(longest.validate().is_ok());
}
