//! Partial vector indexes in the engine (a predicate registered by index name, as the SQL
//! layer registers CREATE INDEX ... WHERE): HNSW and ivfflat builds and writes index only
//! the rows the predicate accepts, a search never returns a row whose visible version it
//! rejects (a row updated out of it keeps its old entry) while an older snapshot still
//! finds it, rows updated into it are found, and the check and the purge count only
//! accepted versions.

use std::path::Path;
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_engine::{
    ColumnDef, Engine, IndexPredicate, IsolationLevel, KeyKind, NearestOptions, TableDef,
    Transaction, Value, VectorIndexDef, VectorIndexParameters, VectorMethod, VectorMetric,
};
use tierdb_storage::{PageStore, StoreConfig};
use tierdb_vector::hnsw::ScanOptions as HnswOptions;
use tierdb_vector::ivfflat::{IterativeScan, ScanOptions};

const DIMENSIONS: usize = 8;
const ROWS: i64 = 300;

/// The predicate `flag = 1` over (id, v, flag).
struct Flagged;

impl IndexPredicate for Flagged {
    fn matches(&self, row: &[Value]) -> tierdb_engine::Result<bool> {
        Ok(row[2] == Value::Int(1))
    }
}

fn open(directory: &Path) -> Arc<Engine> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 1024 * 8192;
    Engine::open(Arc::new(PageStore::open(config).unwrap())).unwrap()
}

fn vector(random: &mut SplitMix64) -> Vec<f32> {
    (0..DIMENSIONS)
        .map(|_| f32::from(u16::try_from(random.next_u64() >> 48).unwrap()) / 65_536.0)
        .collect()
}

fn item(id: i64, vector: &[f32], flag: i64) -> Vec<Value> {
    let bytes = Value::Bytes(vector.iter().flat_map(|value| value.to_le_bytes()).collect());
    vec![Value::Int(id), bytes, Value::Int(flag)]
}

fn create_items(engine: &Engine) {
    let column = |name: &str, kind| ColumnDef { name: name.into(), kind, nullable: true };
    engine
        .create_table(TableDef {
            name: "items".into(),
            columns: vec![
                ColumnDef { name: "id".into(), kind: KeyKind::Int, nullable: false },
                column("v", KeyKind::Bytes),
                column("flag", KeyKind::Int),
            ],
            primary_key: Some(vec![0]),
            indexes: Vec::new(),
        })
        .unwrap();
}

fn index_def(name: &str, method: VectorMethod) -> VectorIndexDef {
    VectorIndexDef {
        name: name.into(),
        column: 1,
        parameters: VectorIndexParameters {
            dimensions: DIMENSIONS,
            metric: VectorMetric::L2,
            m: 8,
            ef_construction: 32,
        },
        method,
    }
}

/// Exhaustive searches: ef_search above the row count, every list probed.
fn exhaustive() -> NearestOptions {
    NearestOptions {
        hnsw: HnswOptions::unbounded(1000),
        ivfflat: ScanOptions { probes: 4, iterative: IterativeScan::Off, max_probes: 4 },
    }
}

fn nearest_ids(txn: &mut Transaction, index: &str, query: &[f32], limit: usize) -> Vec<i64> {
    txn.nearest_rows("items", index, query, exhaustive(), limit)
        .unwrap()
        .into_iter()
        .map(|(_, _, row)| match row[0] {
            Value::Int(id) => id,
            _ => panic!("id"),
        })
        .collect()
}

/// The ids of the `limit` nearest flagged rows of `rows` (id, vector, flag) by brute force.
fn exact_ids(rows: &[(i64, Vec<f32>, i64)], query: &[f32], limit: usize) -> Vec<i64> {
    let mut ranked: Vec<(f64, i64)> = rows
        .iter()
        .filter(|(_, _, flag)| *flag == 1)
        .map(|(id, vector, _)| (VectorMetric::L2.distance(query, vector), *id))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ranked.into_iter().take(limit).map(|(_, id)| id).collect()
}

fn set_flag(engine: &Engine, rows: &mut [(i64, Vec<f32>, i64)], id: i64, flag: i64) {
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let row = rows.iter_mut().find(|row| row.0 == id).unwrap();
    row.2 = flag;
    let new = item(id, &row.1, flag);
    txn.update("items", &[Value::Int(id)], &mut |_| Some(new.clone())).unwrap();
    txn.commit().unwrap();
}

#[test]
fn partial_vector_indexes_hold_and_return_only_accepted_rows() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    create_items(&engine);
    let mut random = SplitMix64::new(17);
    let mut rows = Vec::new();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..ROWS {
        let v = vector(&mut random);
        txn.insert("items", item(id, &v, id % 2)).unwrap();
        rows.push((id, v, id % 2));
    }
    txn.commit().unwrap();
    let methods =
        [("items_hnsw", VectorMethod::Hnsw), ("items_ivf", VectorMethod::IvfFlat { lists: 4 })];
    for (name, method) in methods {
        engine.set_index_predicate(name, Some(Arc::new(Flagged)));
        engine.create_vector_index("items", index_def(name, method)).unwrap();
    }
    let query = vector(&mut random);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for (name, _) in methods {
        assert_eq!(nearest_ids(&mut txn, name, &query, 10), exact_ids(&rows, &query, 10), "{name}");
    }
    let check = txn.check_vector_index("items", "items_hnsw").unwrap();
    assert!(check.is_ok(), "{check:?}");
    assert_eq!((check.rows_indexed, check.graph.node_count), (150, 150));
    txn.commit().unwrap();

    // The nearest accepted row leaves the predicate (its vector kept), the nearest other
    // row enters it: a snapshot from before still finds the first, not the second.
    let out = exact_ids(&rows, &query, 1)[0];
    let flag_zero: Vec<(i64, Vec<f32>, i64)> =
        rows.iter().map(|(id, v, flag)| (*id, v.clone(), 1 - flag)).collect();
    let into = exact_ids(&flag_zero, &query, 1)[0];
    let mut before = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let old_answer = nearest_ids(&mut before, "items_hnsw", &query, 10);
    set_flag(&engine, &mut rows, out, 0);
    set_flag(&engine, &mut rows, into, 1);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for (name, _) in methods {
        let found = nearest_ids(&mut txn, name, &query, 10);
        assert_eq!(found, exact_ids(&rows, &query, 10), "{name}");
        assert!(!found.contains(&out) && found.contains(&into), "{name}: {found:?}");
        assert_eq!(nearest_ids(&mut before, name, &query, 10), old_answer, "{name}");
    }
    before.commit().unwrap();
    let check = txn.check_vector_index("items", "items_hnsw").unwrap();
    assert!(check.is_ok(), "{check:?}");
    assert_eq!((check.rows_indexed, check.graph.node_count), (150, 151));
    txn.commit().unwrap();

    // The purge removes the moved-out row's entry: its remaining version is rejected.
    engine.purge().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let check = txn.check_vector_index("items", "items_hnsw").unwrap();
    assert!(check.is_ok(), "{check:?}");
    assert_eq!((check.graph.node_count, check.entries_dead), (150, 0), "{check:?}");
    assert_eq!(nearest_ids(&mut txn, "items_hnsw", &query, 10), exact_ids(&rows, &query, 10));
    txn.commit().unwrap();
}
