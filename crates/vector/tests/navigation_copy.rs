//! The layer-0 navigation copy (design 014, "The navigation copy of layer 0"): recall with
//! the copy on equals recall with it off while a query fetches fewer pages; the copy stays
//! within its bound and a query falls back to page reads past it; every entry agrees with
//! the pages after inserts, purges and the reuse of freed pages (`check_layer_zero_copy`);
//! a build fills it, a reopened index starts empty and fills it by searching.

use std::sync::Arc;

use tierdb_storage::PageStore;
use tierdb_vector::hnsw::{Hnsw, HnswError, Metric, LAYER_ZERO_COPY_BYTES_DEFAULT};

use crate::hnsw::{build, clustered, key_of, open_store, parameters, recall_at_10, recall_over};

/// Page fetches (buffer pool hits and misses) per query of `queries` at ef_search 40.
fn fetches_per_query(store: &PageStore, index: &Hnsw, queries: &[Vec<f32>]) -> u64 {
    limited_fetches_per_query(store, index, queries, 40)
}

/// Page fetches per query of `queries` at ef_search 40 taking the first `limit` entries of
/// each scan (a LIMIT, as the engine's scan takes them).
fn limited_fetches_per_query(
    store: &PageStore,
    index: &Hnsw,
    queries: &[Vec<f32>],
    limit: usize,
) -> u64 {
    let fetches = || store.pool_stats().hits.get() + store.pool_stats().misses.get();
    let before = fetches();
    for query in queries {
        let taken = index.scan(query, 40).unwrap().take(limit).count();
        assert_eq!(taken, limit);
    }
    (fetches() - before) / u64::try_from(queries.len()).unwrap()
}

fn assert_coherent(index: &Hnsw) {
    let wrong = index.check_layer_zero_copy().unwrap();
    assert!(wrong.is_empty(), "copy entries disagree with their pages: {wrong:?}");
}

#[test]
fn recall_is_unchanged_and_hops_read_no_pages_with_the_copy() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = clustered(7, 3000, 64, 20);
    let queries = clustered(8, 50, 64, 20);
    let index = build(&store, &data, Metric::L2);
    index.set_layer_zero_copy_bytes_max(0);
    let recall_off = recall_at_10(&index, &data, &queries, 40);
    let fetches_off = fetches_per_query(&store, &index, &queries);
    assert_eq!(index.layer_zero_copy_stats().bytes, 0, "no copy when its bound is 0");

    index.set_layer_zero_copy_bytes_max(LAYER_ZERO_COPY_BYTES_DEFAULT);
    // The first pass fills the copy from the pages it reads; the next ones walk it.
    fetches_per_query(&store, &index, &queries);
    let recall_on = recall_at_10(&index, &data, &queries, 40);
    let fetches_on = fetches_per_query(&store, &index, &queries);
    let limit_off_on = {
        index.set_layer_zero_copy_bytes_max(0);
        let off = limited_fetches_per_query(&store, &index, &queries, 10);
        index.set_layer_zero_copy_bytes_max(LAYER_ZERO_COPY_BYTES_DEFAULT);
        limited_fetches_per_query(&store, &index, &queries, 10);
        (off, limited_fetches_per_query(&store, &index, &queries, 10))
    };
    let stats = index.layer_zero_copy_stats();
    eprintln!(
        "layer-0 copy: recall@10 off={recall_off:.3} on={recall_on:.3}, page fetches per \
         query (40 entries) off={fetches_off} on={fetches_on}, (10 entries) {limit_off_on:?}, \
         {stats:?}"
    );
    assert!(limit_off_on.1 * 2 <= limit_off_on.0, "a LIMIT 10 re-ranks what it takes");
    assert!(recall_on >= 0.95 && recall_on >= recall_off - 0.02, "recall {recall_on}");
    assert!(stats.links > 0 && stats.codes > stats.links, "{stats:?}");
    // On: the upper layers' pages and the re-ranked results, no hop.
    assert!(fetches_on <= fetches_off, "{fetches_on} fetches with the copy, {fetches_off} without");
    assert_coherent(&index);
}

#[test]
fn the_copy_stays_within_its_bound_and_queries_fall_back_to_pages() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = clustered(9, 2000, 32, 16);
    let queries = clustered(10, 50, 32, 16);
    let index = build(&store, &data, Metric::L2);
    let bound_bytes = 64 << 10;
    index.set_layer_zero_copy_bytes_max(bound_bytes);
    for _ in 0..2 {
        fetches_per_query(&store, &index, &queries);
    }
    let stats = index.layer_zero_copy_stats();
    assert!(stats.bytes <= bound_bytes && stats.bytes > bound_bytes / 2, "{stats:?}");
    assert!(stats.links < 2000, "a bound below the graph's size holds part of it");
    let recall = recall_at_10(&index, &data, &queries, 40);
    assert!(recall >= 0.95, "recall@10 {recall} with a partial copy");
    assert_coherent(&index);
    // A smaller bound empties the copy.
    index.set_layer_zero_copy_bytes_max(1024);
    assert!(index.layer_zero_copy_stats().bytes <= 1024);
}

/// Inserts change lists, purge repairs lists and frees nodes, inserts reuse freed pages:
/// after each, every entry of the copy still agrees with its page, no freed node is in
/// it, and recall over the live entries holds.
#[test]
fn the_copy_follows_inserts_purges_and_reused_pages() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = clustered(41, 1600, 32, 16);
    let queries = clustered(42, 40, 32, 16);
    let index = build(&store, &data[..1200], Metric::L2);
    fetches_per_query(&store, &index, &queries);
    assert_coherent(&index);
    for (position, vector) in data.iter().enumerate().skip(1200) {
        index.insert(vector, &key_of(position)).unwrap();
    }
    assert_coherent(&index);
    fetches_per_query(&store, &index, &queries);
    let dead: std::collections::HashSet<Vec<u8>> = (0..data.len()).step_by(7).map(key_of).collect();
    index.purge(&mut |key, _| Ok::<bool, HnswError>(dead.contains(key))).unwrap();
    assert_coherent(&index);
    for query in &queries {
        let results = index.search(query, 40).unwrap();
        assert!(results.iter().all(|result| !dead.contains(&result.key)), "a dead entry");
    }
    assert_coherent(&index);
    let pages_before = store.max_page_id();
    let more = clustered(44, dead.len(), 32, 16);
    for (offset, vector) in more.iter().enumerate() {
        index.insert(vector, &key_of(10_000 + offset)).unwrap();
    }
    assert_eq!(store.max_page_id(), pages_before, "inserts reused the freed pages");
    assert_coherent(&index);
    fetches_per_query(&store, &index, &queries);
    assert_coherent(&index);
    let live: Vec<usize> = (0..data.len()).filter(|&i| !dead.contains(&key_of(i))).collect();
    let recall = recall_over(&index, (&data, &live), &queries, 40);
    assert!(recall >= 0.85, "recall@10 {recall} over the original live entries");
}

/// Searches on two threads while a writer inserts and a purge runs: the copy agrees with
/// the pages once they are quiet.
#[test]
fn the_copy_stays_coherent_under_concurrent_inserts_and_purge() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = Arc::new(clustered(51, 1500, 16, 10));
    let index = Arc::new(build(&store, &data[..300], Metric::L2));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|reader| {
            let (index, data, done) = (Arc::clone(&index), Arc::clone(&data), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut searches = 0usize;
                while !done.load(std::sync::atomic::Ordering::Acquire) || searches < 10 {
                    let results = index.search(&data[(searches * 7 + reader) % 1500], 20).unwrap();
                    assert!(results.windows(2).all(|pair| pair[0].distance <= pair[1].distance));
                    searches += 1;
                }
            })
        })
        .collect();
    for (position, vector) in data.iter().enumerate().skip(300) {
        index.insert(vector, &key_of(position)).unwrap();
        if position % 400 == 0 {
            let dead = |key: &[u8], _: &[f32]| -> Result<bool, HnswError> {
                Ok(u32::from_be_bytes(key[..4].try_into().unwrap()) % 5 == 0)
            };
            index.purge(&mut { dead }).unwrap();
        }
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    for reader in readers {
        reader.join().unwrap();
    }
    // (Not the graph check: repeated purges at d = 16 can leave a node unreachable with
    // the copy off too, design 014 "Known issues".)
    assert_coherent(&index);
}

/// A build fills the copy as it writes the nodes; a reopened index (a restart) starts with
/// an empty copy and fills it from the pages its searches read.
#[test]
fn a_build_fills_the_copy_and_a_reopened_index_fills_it_by_searching() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = clustered(61, 1000, 32, 16);
    let queries = clustered(62, 30, 32, 16);
    let index = Hnsw::create(Arc::clone(&store), parameters(32, Metric::L2)).unwrap();
    let mut entries = index.build_entries();
    for (position, vector) in data.iter().enumerate() {
        assert!(entries.push(vector, &key_of(position)).unwrap());
    }
    index.build(entries).unwrap();
    let stats = index.layer_zero_copy_stats();
    assert_eq!((stats.links, stats.codes), (1000, 1000), "the build copies every node");
    assert_coherent(&index);
    let recall_built = recall_at_10(&index, &data, &queries, 40);

    let reopened = Hnsw::open(Arc::clone(&store), index.meta_page()).unwrap();
    assert_eq!(reopened.layer_zero_copy_stats().bytes, 0, "a reopened index starts empty");
    let recall_reopened = recall_at_10(&reopened, &data, &queries, 40);
    assert!(reopened.layer_zero_copy_stats().links > 0, "searches fill the copy");
    assert_coherent(&reopened);
    assert!(recall_built >= 0.95 && (recall_built - recall_reopened).abs() < 0.02);
}

/// The lazy re-rank returns what the whole batch does, in the same exact order, a step at
/// a time: the entries of a scan taken one by one equal `search`'s batch.
#[test]
fn entries_taken_one_by_one_equal_the_batch() {
    let directory = tempfile::tempdir().unwrap();
    let store = open_store(directory.path());
    let data = clustered(71, 2000, 32, 16);
    let queries = clustered(72, 30, 32, 16);
    for metric in [Metric::L2, Metric::L1, Metric::InnerProduct] {
        let index = build(&store, &data, metric);
        for _ in 0..2 {
            for query in &queries {
                let batch = index.search(query, 40).unwrap();
                let taken: Vec<_> = index.scan(query, 40).unwrap().take(batch.len()).collect();
                let taken: Vec<_> = taken.into_iter().map(Result::unwrap).collect();
                let distances = |results: &[tierdb_vector::hnsw::SearchResult]| -> Vec<u64> {
                    results.iter().map(|result| result.distance.to_bits()).collect()
                };
                assert_eq!(distances(&taken), distances(&batch), "{metric:?}");
                let mut keys: Vec<_> = taken.iter().map(|result| &result.key).collect();
                let mut batch_keys: Vec<_> = batch.iter().map(|result| &result.key).collect();
                keys.sort();
                batch_keys.sort();
                assert_eq!(keys, batch_keys);
            }
        }
    }
}
