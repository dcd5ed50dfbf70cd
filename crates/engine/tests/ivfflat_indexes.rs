//! ivfflat indexes in the engine: built on a populated table (k-means over a sample),
//! maintained by inserts and by updates of the vector column, searched under MVCC (deleted,
//! rolled-back and updated rows' stale entries are skipped), durable across a crash, emptied
//! by TRUNCATE (keeping the centers), removed by DROP; recall against brute force.

use std::path::Path;
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_engine::{
    ColumnDef, Engine, IsolationLevel, KeyKind, NearestOptions, TableDef, Transaction, Value,
    VectorIndexDef, VectorIndexParameters, VectorMethod, VectorMetric,
};
use tierdb_storage::{PageStore, StoreConfig};
use tierdb_vector::hnsw::ScanOptions as HnswOptions;
use tierdb_vector::ivfflat::{IterativeScan, ScanOptions};

const DIMENSIONS: usize = 8;
const LISTS: usize = 10;

fn open(directory: &Path) -> (Arc<PageStore>, Arc<Engine>) {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 1024 * 8192;
    let store = Arc::new(PageStore::open(config).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

fn crash(store: Arc<PageStore>, engine: Arc<Engine>) {
    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").abandon();
}

fn vector(random: &mut SplitMix64) -> Vec<f32> {
    (0..DIMENSIONS)
        .map(|_| f32::from(u16::try_from(random.next_u64() >> 48).unwrap()) / 65_536.0)
        .collect()
}

fn item(id: i64, vector: Option<&[f32]>) -> Vec<Value> {
    let bytes = vector.map_or(Value::Null, |vector| {
        Value::Bytes(vector.iter().flat_map(|value| value.to_le_bytes()).collect())
    });
    vec![Value::Int(id), bytes]
}

fn create_items(engine: &Engine) {
    engine
        .create_table(TableDef {
            name: "items".into(),
            columns: vec![
                ColumnDef { name: "id".into(), kind: KeyKind::Int, nullable: false },
                ColumnDef { name: "v".into(), kind: KeyKind::Bytes, nullable: true },
            ],
            primary_key: Some(vec![0]),
            indexes: Vec::new(),
        })
        .unwrap();
}

fn index_def(lists: usize) -> VectorIndexDef {
    VectorIndexDef {
        name: "items_v_idx".into(),
        column: 1,
        parameters: VectorIndexParameters {
            dimensions: DIMENSIONS,
            metric: VectorMetric::L2,
            m: 16,
            ef_construction: 64,
        },
        method: VectorMethod::IvfFlat { lists },
    }
}

fn options(probes: usize) -> NearestOptions {
    NearestOptions {
        hnsw: HnswOptions::unbounded(40),
        ivfflat: ScanOptions { probes, iterative: IterativeScan::Off, max_probes: probes },
    }
}

fn scanned_ids(txn: &mut Transaction, query: &[f32], probes: usize, limit: usize) -> Vec<i64> {
    txn.nearest_rows("items", "items_v_idx", query, options(probes), limit)
        .unwrap()
        .into_iter()
        .map(|(_, _, row)| match row[0] {
            Value::Int(id) => id,
            _ => panic!("id"),
        })
        .collect()
}

/// Exhaustive: every list probed, so the answer is exact.
fn nearest_ids(txn: &mut Transaction, query: &[f32], limit: usize) -> Vec<i64> {
    scanned_ids(txn, query, LISTS, limit)
}

fn exact_ids(rows: &[(i64, Vec<f32>)], query: &[f32], limit: usize) -> Vec<i64> {
    let metric = VectorMetric::L2;
    let mut ranked: Vec<(f64, i64)> =
        rows.iter().map(|(id, vector)| (metric.distance(query, vector), *id)).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ranked.into_iter().take(limit).map(|(_, id)| id).collect()
}

#[test]
fn ivfflat_index_follows_rows_under_mvcc_and_survives_a_crash() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    create_items(&engine);
    let mut random = SplitMix64::new(5);
    let mut rows: Vec<(i64, Vec<f32>)> = Vec::new();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..300 {
        let v = vector(&mut random);
        txn.insert("items", item(id, Some(&v))).unwrap();
        rows.push((id, v));
    }
    txn.insert("items", item(1000, None)).unwrap();
    txn.commit().unwrap();
    assert_eq!(engine.vector_rows_up_to("items", "items_v_idx", 1, LISTS).unwrap(), LISTS);
    engine.create_vector_index("items", index_def(LISTS)).unwrap();
    assert_eq!(engine.vector_index_defs("items").unwrap(), vec![index_def(LISTS)]);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 300..400 {
        let v = vector(&mut random);
        txn.insert("items", item(id, Some(&v))).unwrap();
        rows.push((id, v));
    }
    txn.commit().unwrap();
    let query = vector(&mut random);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(nearest_ids(&mut txn, &query, 10), exact_ids(&rows, &query, 10));
    // One probe reads one list: fewer rows than the table holds.
    assert!(scanned_ids(&mut txn, &query, 1, 1000).len() < rows.len());

    let nearest = exact_ids(&rows, &query, 2);
    assert!(txn.delete("items", &[Value::Int(nearest[0])]).unwrap());
    let moved = vector(&mut random);
    txn.update("items", &[Value::Int(nearest[1])], &mut |_| Some(item(nearest[1], Some(&moved))))
        .unwrap();
    txn.commit().unwrap();
    rows.retain(|(id, _)| *id != nearest[0]);
    rows.iter_mut().filter(|(id, _)| *id == nearest[1]).for_each(|row| row.1 = moved.clone());
    let mut rolled_back = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    rolled_back.insert("items", item(5000, Some(&query))).unwrap();
    assert_eq!(nearest_ids(&mut rolled_back, &query, 1), vec![5000], "its own insert");
    rolled_back.rollback().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(nearest_ids(&mut txn, &query, 10), exact_ids(&rows, &query, 10));
    assert_eq!(nearest_ids(&mut txn, &moved, 1), vec![nearest[1]]);
    txn.commit().unwrap();

    crash(store, engine);
    let (store, engine) = open(directory.path());
    assert_eq!(engine.vector_index_defs("items").unwrap(), vec![index_def(LISTS)]);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(nearest_ids(&mut txn, &query, 10), exact_ids(&rows, &query, 10));
    let mut all = nearest_ids(&mut txn, &query, 1000);
    assert!(!all.contains(&1000), "NULL rows have no entry");
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), rows.len(), "every visible row once");
    txn.commit().unwrap();

    engine.truncate_table("items").unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(nearest_ids(&mut txn, &query, 10).is_empty());
    txn.insert("items", item(1, Some(&query))).unwrap();
    assert_eq!(nearest_ids(&mut txn, &query, 10), vec![1]);
    txn.commit().unwrap();
    crash(store, engine);
    let (_store, engine) = open(directory.path());
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(nearest_ids(&mut txn, &query, 10), vec![1], "after TRUNCATE and a crash");
    txn.commit().unwrap();
    engine.drop_index("items", "items_v_idx").unwrap();
    assert!(engine.vector_index_defs("items").unwrap().is_empty());
}

#[test]
fn ivfflat_on_an_empty_table_and_fewer_rows_than_lists() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    create_items(&engine);
    assert_eq!(engine.vector_rows_up_to("items", "items_v_idx", 1, 100).unwrap(), 0);
    engine.create_vector_index("items", index_def(100)).unwrap();
    let mut random = SplitMix64::new(9);
    let mut rows = Vec::new();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..50 {
        let v = vector(&mut random);
        txn.insert("items", item(id, Some(&v))).unwrap();
        rows.push((id, v));
    }
    let query = vector(&mut random);
    let found = scanned_ids(&mut txn, &query, 100, 10);
    assert_eq!(found, exact_ids(&rows, &query, 10));
    txn.commit().unwrap();
}
