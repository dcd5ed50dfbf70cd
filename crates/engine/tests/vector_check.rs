//! `Transaction::check_vector_index`: an HNSW index checked against its table passes after
//! inserts, a DELETE, an UPDATE of the vector, a rollback and a crash (every visible row has
//! its entry; the other entries are counted as live or dead), and while writers insert
//! concurrently every check passes and sees at least the rows committed before it began.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_engine::{
    ColumnDef, Engine, IsolationLevel, KeyKind, TableDef, Value, VectorIndexCheck, VectorIndexDef,
    VectorIndexParameters, VectorMetric,
};
use tierdb_storage::{PageStore, StoreConfig};

const DIMENSIONS: usize = 16;
const WRITERS: u64 = 2;
const ROWS_PER_WRITER: u64 = 300;

fn open(directory: &Path) -> (Arc<PageStore>, Arc<Engine>) {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 2048 * 8192;
    let store = Arc::new(PageStore::open(config).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

fn vector(random: &mut SplitMix64) -> Vec<f32> {
    (0..DIMENSIONS).map(|_| f32::from(u16::try_from(random.below(10_000)).unwrap())).collect()
}

fn item(id: i64, vector: Option<&[f32]>) -> Vec<Value> {
    let bytes = vector.map(|v| v.iter().flat_map(|value| value.to_le_bytes()).collect());
    vec![Value::Int(id), bytes.map_or(Value::Null, Value::Bytes)]
}

fn create_items(engine: &Engine) {
    let column = |name: &str, kind, nullable| ColumnDef { name: name.into(), kind, nullable };
    engine
        .create_table(TableDef {
            name: "items".into(),
            columns: vec![column("id", KeyKind::Int, false), column("v", KeyKind::Bytes, true)],
            primary_key: Some(vec![0]),
            indexes: Vec::new(),
        })
        .unwrap();
    let parameters = VectorIndexParameters {
        dimensions: DIMENSIONS,
        metric: VectorMetric::L2,
        m: 8,
        ef_construction: 32,
    };
    let def = VectorIndexDef {
        name: "items_v_idx".into(),
        column: 1,
        parameters,
        method: tierdb_engine::VectorMethod::Hnsw,
    };
    engine.create_vector_index("items", def).unwrap();
}

fn check(engine: &Engine) -> VectorIndexCheck {
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let check = txn.check_vector_index("items", "items_v_idx").unwrap();
    txn.commit().unwrap();
    assert!(check.is_ok(), "{:?}", check.violations);
    assert_eq!(check.rows_missing, 0);
    assert_eq!(check.graph.nodes_reached, check.graph.node_count, "{check:?}");
    assert_eq!(check.entries_live + check.entries_dead, check.graph.node_count);
    check
}

#[test]
fn index_checks_against_rows_after_changes_and_a_crash() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    create_items(&engine);
    let mut random = SplitMix64::new(9);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..200 {
        txn.insert("items", item(id, Some(&vector(&mut random)))).unwrap();
    }
    txn.insert("items", item(1000, None)).unwrap();
    txn.commit().unwrap();
    let fresh = check(&engine);
    assert_eq!((fresh.rows_indexed, fresh.entries_live, fresh.entries_dead), (200, 200, 0));

    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(txn.delete("items", &[Value::Int(3)]).unwrap());
    let moved = vector(&mut random);
    txn.update("items", &[Value::Int(4)], &mut |_| Some(item(4, Some(&moved)))).unwrap();
    txn.commit().unwrap();
    let mut rolled_back = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    rolled_back.insert("items", item(5000, Some(&vector(&mut random)))).unwrap();
    rolled_back.rollback().unwrap();
    let changed = check(&engine);
    assert_eq!(changed.rows_indexed, 199, "row 3 deleted, row 4 moved");
    assert_eq!(changed.graph.node_count, 202, "row 4's new vector and row 5000's");
    assert!(changed.entries_dead >= 1, "the rolled-back row's entry: {changed:?}");

    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").abandon();
    let (_store, engine) = open(directory.path());
    let recovered = check(&engine);
    assert_eq!(recovered.rows_indexed, 199);
    // The rolled-back row's entry was never made durable (nothing waited for it); the
    // startup purge pass, if it ran first, removed the entries of row 3, of row 4's old
    // vector and of row 5000 (all dead).
    assert!((199..=202).contains(&recovered.graph.node_count), "{recovered:?}");
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let error = txn.check_vector_index("items", "no_such_index").unwrap_err();
    assert_eq!(error.sqlstate(), "42P01");
}

#[test]
fn checks_pass_during_concurrent_inserts() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    create_items(&engine);
    let committed = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (engine, committed) = (Arc::clone(&engine), Arc::clone(&committed));
            std::thread::spawn(move || {
                let mut random = SplitMix64::new(writer);
                for n in 0..ROWS_PER_WRITER {
                    let id = i64::try_from(writer * ROWS_PER_WRITER + n).unwrap();
                    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                    txn.insert("items", item(id, Some(&vector(&mut random)))).unwrap();
                    txn.commit().unwrap();
                    committed.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let checker = {
        let (engine, committed, done) =
            (Arc::clone(&engine), Arc::clone(&committed), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut checks = 0;
            loop {
                let finished = done.load(Ordering::SeqCst);
                let before = committed.load(Ordering::SeqCst);
                let report = check(&engine);
                assert!(report.rows_indexed >= before, "{} < {before}", report.rows_indexed);
                checks += 1;
                if finished {
                    return checks;
                }
            }
        })
    };
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let checks = checker.join().unwrap();
    assert!(checks >= 2, "checks={checks}");
    let last = check(&engine);
    assert_eq!(last.rows_indexed, WRITERS * ROWS_PER_WRITER);
}
