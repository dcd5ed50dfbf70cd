//! HNSW indexes in the engine: built on a populated table, maintained by inserts and by
//! updates of the vector column, searched under MVCC (deleted, rolled-back and updated rows'
//! stale entries are skipped), durable across a crash, emptied by TRUNCATE, removed by DROP.

use std::path::Path;
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_engine::{
    ColumnDef, Engine, IsolationLevel, KeyKind, TableDef, Transaction, Value, VectorIndexDef,
    VectorIndexParameters, VectorMethod, VectorMetric,
};
use tierdb_storage::{PageStore, StoreConfig};
use tierdb_vector::hnsw::{IterativeScan, ScanOptions, MAX_SCAN_TUPLES_DEFAULT};

const DIMENSIONS: usize = 8;

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

fn bytes_of(vector: &[f32]) -> Value {
    Value::Bytes(vector.iter().flat_map(|value| value.to_le_bytes()).collect())
}

fn item(id: i64, vector: Option<&[f32]>) -> Vec<Value> {
    vec![Value::Int(id), vector.map_or(Value::Null, bytes_of)]
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

fn index_def(name: &str) -> VectorIndexDef {
    VectorIndexDef {
        name: name.into(),
        column: 1,
        parameters: VectorIndexParameters {
            dimensions: DIMENSIONS,
            metric: VectorMetric::L2,
            m: 16,
            ef_construction: 64,
        },
        method: VectorMethod::Hnsw,
    }
}

/// The ids of the `limit` nearest rows by the index (ef_search above the row count, so the
/// search is exhaustive and the answer exact).
fn nearest_ids(txn: &mut Transaction, query: &[f32], limit: usize) -> Vec<i64> {
    scanned_ids(txn, query, options(1000, IterativeScan::Off), limit)
}

fn options(ef_search: usize, iterative: IterativeScan) -> ScanOptions {
    ScanOptions {
        ef_search,
        iterative,
        max_scan_tuples: MAX_SCAN_TUPLES_DEFAULT,
        memory_bytes_max: usize::MAX,
    }
}

fn scanned_ids(
    txn: &mut Transaction,
    query: &[f32],
    options: ScanOptions,
    limit: usize,
) -> Vec<i64> {
    txn.nearest_rows("items", "items_v_idx", query, options, limit)
        .unwrap()
        .into_iter()
        .map(|(_, _, row)| match row[0] {
            Value::Int(id) => id,
            _ => panic!("id"),
        })
        .collect()
}

/// The ids of the `limit` nearest of `rows` by brute force.
fn exact_ids(rows: &[(i64, Vec<f32>)], query: &[f32], limit: usize) -> Vec<i64> {
    let metric = VectorMetric::L2;
    let mut ranked: Vec<(f64, i64)> =
        rows.iter().map(|(id, vector)| (metric.distance(query, vector), *id)).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ranked.into_iter().take(limit).map(|(_, id)| id).collect()
}

#[test]
fn vector_index_follows_rows_under_mvcc_and_survives_a_crash() {
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
    // Built on a populated table, then maintained by inserts.
    engine.create_vector_index("items", index_def("items_v_idx")).unwrap();
    let error = engine.create_vector_index("items", index_def("items_v_idx")).unwrap_err();
    assert_eq!(error.sqlstate(), "42P07");
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

    // DELETE, an UPDATE moving a row, and a rolled-back insert: stale entries are skipped.
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
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(nearest_ids(&mut txn, &query, 10), exact_ids(&rows, &query, 10));
    // Every visible row once, but not the NULL row (no entry); HNSW may leave a node or two
    // without in-links after pruning, so "every" is "nearly every".
    let mut all = nearest_ids(&mut txn, &query, 500);
    assert!(!all.contains(&1000), "NULL rows have no entry");
    all.sort_unstable();
    all.dedup();
    assert!(
        all.len() <= rows.len() && all.len() + 4 >= rows.len(),
        "{} of {}",
        all.len(),
        rows.len()
    );
    txn.commit().unwrap();

    engine.truncate_table("items").unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(nearest_ids(&mut txn, &query, 10).is_empty());
    txn.insert("items", item(1, Some(&query))).unwrap();
    assert_eq!(nearest_ids(&mut txn, &query, 10), vec![1]);
    txn.commit().unwrap();
    engine.drop_index("items", "items_v_idx").unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let error = txn
        .nearest_rows("items", "items_v_idx", &query, options(40, IterativeScan::Off), 10)
        .unwrap_err();
    assert_eq!(error.sqlstate(), "42P01");
    txn.rollback().unwrap();
    crash(store, engine);
    let (_store, engine) = open(directory.path());
    engine.create_vector_index("items", index_def("items_v_idx")).unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(nearest_ids(&mut txn, &query, 10), vec![1], "rebuilt after the drop");
}

/// A filled LIMIT of 10: distinct rows, none of `gone`, nearly all of the exact answer
/// (an approximate index may miss one).
fn assert_filled(found: &[i64], exact: &[i64], gone: &[i64]) {
    assert_eq!(found.len(), 10, "{found:?}");
    let mut distinct = found.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 10, "no row twice: {found:?}");
    assert!(found.iter().all(|id| !gone.contains(id)), "{found:?}");
    let hits = found.iter().filter(|id| exact.contains(id)).count();
    assert!(hits >= 8, "recall {hits}/10: {found:?} against {exact:?}");
}

/// Iterative scans: rows a transaction does not see (deleted, or inserted by a transaction
/// still in progress) take no LIMIT slot; the scan continues past `ef_search` entries until
/// the LIMIT is filled, in exact order with strict_order. Without it the deleted rows'
/// entries take the ef_search slots and fewer rows come back, as in pgvector.
#[test]
fn iterative_scans_fill_the_limit_past_invisible_rows() {
    const EF_SEARCH: usize = 10;
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    create_items(&engine);
    let mut random = SplitMix64::new(9);
    let mut rows: Vec<(i64, Vec<f32>)> = (0..500).map(|id| (id, vector(&mut random))).collect();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for (id, v) in &rows {
        txn.insert("items", item(*id, Some(v))).unwrap();
    }
    txn.commit().unwrap();
    engine.create_vector_index("items", index_def("items_v_idx")).unwrap();
    let query = vector(&mut random);
    // The 30 nearest rows go: 20 deleted, 10 replaced by an uncommitted update.
    let nearest = exact_ids(&rows, &query, 30);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in &nearest[..20] {
        assert!(txn.delete("items", &[Value::Int(*id)]).unwrap());
    }
    txn.commit().unwrap();
    rows.retain(|(id, _)| !nearest[..20].contains(id));
    let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in &nearest[20..] {
        assert!(writer.delete("items", &[Value::Int(*id)]).unwrap());
    }
    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let exact = exact_ids(&rows, &query, 10);
    assert!(exact.iter().all(|id| nearest[20..].contains(id)), "the writer's rows are visible");
    let off = scanned_ids(&mut reader, &query, options(EF_SEARCH, IterativeScan::Off), 10);
    assert!(off.len() < 10, "off: the deleted rows take the ef_search slots: {off:?}");
    for iterative in [IterativeScan::RelaxedOrder, IterativeScan::StrictOrder] {
        let found = scanned_ids(&mut reader, &query, options(EF_SEARCH, iterative), 10);
        assert_filled(&found, &exact, &nearest[..20]);
    }
    // Strict order: nearest first (relaxed may return a nearer row later, as pgvector).
    let strict = options(EF_SEARCH, IterativeScan::StrictOrder);
    let rows_found = reader.nearest_rows("items", "items_v_idx", &query, strict, 10).unwrap();
    assert!(rows_found.windows(2).all(|pair| pair[0].0 <= pair[1].0), "strict order");
    // The writer sees its deletes: its LIMIT is filled past them too.
    rows.retain(|(id, _)| !nearest[20..].contains(id));
    let found = scanned_ids(&mut writer, &query, strict, 10);
    assert_filled(&found, &exact_ids(&rows, &query, 10), &nearest);
    // max_scan_tuples bounds the search: the scan ends with the entries it has evaluated.
    let bounded = ScanOptions { max_scan_tuples: 1, ..strict };
    let mut scan = writer.nearest_scan("items", "items_v_idx", &query, bounded).unwrap();
    let mut returned = 0;
    while writer.nearest_next(&mut scan).unwrap().is_some() {
        returned += 1;
    }
    assert!(returned < rows.len() && scan.evaluated() < rows.len(), "{returned}");
    writer.rollback().unwrap();
    reader.commit().unwrap();
}

/// Purge (VACUUM's pass) removes the entries no snapshot can see with their vector any
/// more, and none that one still can: rows deleted under an older snapshot stay found by
/// it until it ends, and an entry a running transaction's rollback to a savepoint brings
/// back is kept. After the purge the check finds every visible row indexed, no dead entry
/// left, and the index answers as brute force over the remaining rows.
#[test]
fn purge_removes_dead_entries_and_keeps_what_snapshots_need() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    create_items(&engine);
    engine.create_vector_index("items", index_def("items_v_idx")).unwrap();
    let mut random = SplitMix64::new(17);
    let mut rows: Vec<(i64, Vec<f32>)> = (0..400).map(|id| (id, vector(&mut random))).collect();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for (id, v) in &rows {
        txn.insert("items", item(*id, Some(v))).unwrap();
    }
    txn.commit().unwrap();
    let deleted = rows[10].1.clone();
    let mut old = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    assert_eq!(nearest_ids(&mut old, &deleted, 1), vec![10], "the old snapshot is taken");
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in (0..400).step_by(10) {
        assert!(txn.delete("items", &[Value::Int(id)]).unwrap());
    }
    for id in (5..100).step_by(10) {
        let moved = vector(&mut random);
        txn.update("items", &[Value::Int(id)], &mut |_| Some(item(id, Some(&moved)))).unwrap();
        rows.iter_mut().filter(|row| row.0 == id).for_each(|row| row.1 = moved.clone());
    }
    txn.commit().unwrap();
    rows.retain(|(id, _)| id % 10 != 0);
    let mut rolled_back = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 5000..5010 {
        rolled_back.insert("items", item(id, Some(&vector(&mut random)))).unwrap();
    }
    rolled_back.rollback().unwrap();
    // A running transaction changes its own new row in place after a savepoint: the first
    // vector's entry is carried by no stored version, but the rollback brings it back.
    let (first, second) = (vector(&mut random), vector(&mut random));
    let mut running = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    running.insert("items", item(7000, Some(&first))).unwrap();
    running.savepoint("s").unwrap();
    running.update("items", &[Value::Int(7000)], &mut |_| Some(item(7000, Some(&second)))).unwrap();

    let stats = engine.purge().unwrap();
    assert!(stats.vector_entries_removed >= 10, "moved and rolled-back entries: {stats:?}");
    assert_eq!(nearest_ids(&mut old, &deleted, 1), vec![10], "deleted after the snapshot");
    old.commit().unwrap();
    running.rollback_to_savepoint("s").unwrap();
    running.commit().unwrap();
    rows.push((7000, first.clone()));
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(nearest_ids(&mut txn, &first, 1), vec![7000], "the restored vector's entry");
    txn.commit().unwrap();

    let stats = engine.purge().unwrap();
    assert!(stats.vector_entries_removed >= 40, "the deleted rows' entries: {stats:?}");
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let check = txn.check_vector_index("items", "items_v_idx").unwrap();
    assert!(check.is_ok(), "{check:?}");
    let live = u64::try_from(rows.len()).unwrap();
    assert_eq!((check.entries_live, check.entries_dead, check.rows_missing), (live, 0, 0));
    assert_eq!(check.graph.node_count, live);
    for _ in 0..5 {
        let query = vector(&mut random);
        assert_eq!(nearest_ids(&mut txn, &query, 10), exact_ids(&rows, &query, 10));
    }
    txn.commit().unwrap();
}
