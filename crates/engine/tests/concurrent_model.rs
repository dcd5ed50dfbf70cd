//! Concurrent histories of table-plus-index operations against in-memory models. Writer
//! threads own disjoint primary keys (each checked against its own model after every commit
//! and at the end) but draw unique-index values from one shared space, so unique conflicts,
//! waits and deadlocks happen across threads. Reader threads take REPEATABLE READ snapshots
//! and check that each snapshot is consistent: its index scans return exactly its table
//! scan's rows, and no two live rows share a unique value.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_engine::{ColumnDef, Engine, IndexDef, IsolationLevel, KeyKind, TableDef, Value};
use tierdb_storage::{PageStore, StoreConfig};

const WRITERS: i64 = 4;
const KEYS_PER_WRITER: i64 = 40;
const UNIQUE_VALUES: u64 = 60;
const TRANSACTIONS_PER_WRITER: usize = 600;

fn int(value: &Value) -> i64 {
    match value {
        Value::Int(number) => *number,
        other => panic!("integer expected, found {other:?}"),
    }
}

type Model = BTreeMap<i64, (i64, i64)>;

fn writer(engine: &Engine, thread: i64) -> Model {
    let mut random = SplitMix64::new(u64::try_from(thread).unwrap() * 31 + 5);
    let mut model: Model = BTreeMap::new();
    for _ in 0..TRANSACTIONS_PER_WRITER {
        let mut pending = model.clone();
        let mut txn = engine
            .begin(if random.below(2) == 0 {
                IsolationLevel::ReadCommitted
            } else {
                IsolationLevel::RepeatableRead
            })
            .unwrap();
        let mut outcome = Ok(());
        for _ in 0..1 + random.below(3) {
            let id = thread * 1_000
                + i64::try_from(random.below(u64::try_from(KEYS_PER_WRITER).unwrap())).unwrap();
            let unique = i64::try_from(random.below(UNIQUE_VALUES)).unwrap();
            let group = i64::try_from(random.below(5)).unwrap();
            let step = match random.below(3) {
                0 if !pending.contains_key(&id) => txn
                    .insert("things", vec![Value::Int(id), Value::Int(unique), Value::Int(group)])
                    .map(|()| {
                        pending.insert(id, (unique, group));
                    }),
                1 => txn
                    .update("things", &[Value::Int(id)], &mut |_| {
                        Some(vec![Value::Int(id), Value::Int(unique), Value::Int(group)])
                    })
                    .map(|updated| {
                        assert_eq!(updated, pending.contains_key(&id), "update of own key id={id}");
                        if updated {
                            pending.insert(id, (unique, group));
                        }
                    }),
                _ => txn.delete("things", &[Value::Int(id)]).map(|deleted| {
                    assert_eq!(deleted, pending.remove(&id).is_some(), "delete of own key id={id}");
                }),
            };
            if let Err(error) = step {
                outcome = Err(error);
                break;
            }
        }
        match outcome {
            Ok(()) if random.below(5) > 0 => {
                txn.commit().unwrap();
                model = pending;
            }
            Ok(()) => txn.rollback().unwrap(),
            Err(error) => {
                // Unique conflicts with other threads, serialization failures, deadlocks:
                // the transaction's changes must all vanish.
                assert!(
                    matches!(error.sqlstate(), "23505" | "40001" | "40P01"),
                    "unexpected error: {error}"
                );
                txn.rollback().unwrap();
            }
        }
        // This thread's rows are exactly its model (nobody else writes them).
        let mut check = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        let own = check
            .scan(
                "things",
                Bound::Included(&[Value::Int(thread * 1_000)]),
                Bound::Excluded(&[Value::Int(thread * 1_000 + 1_000)]),
            )
            .unwrap();
        let found: Model =
            own.iter().map(|row| (int(&row[0]), (int(&row[1]), int(&row[2])))).collect();
        assert_eq!(found, model, "thread {thread} rows diverged from its model");
        check.commit().unwrap();
    }
    model
}

fn check_snapshot(engine: &Engine) {
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let rows = txn.scan("things", Bound::Unbounded, Bound::Unbounded).unwrap();
    let by_unique =
        txn.index_scan("things", "things_unique", Bound::Unbounded, Bound::Unbounded).unwrap();
    let by_group =
        txn.index_scan("things", "things_group", Bound::Unbounded, Bound::Unbounded).unwrap();
    txn.commit().unwrap();
    let mut expected_unique: Vec<(i64, i64)> =
        rows.iter().map(|row| (int(&row[1]), int(&row[0]))).collect();
    expected_unique.sort();
    let found_unique: Vec<(i64, i64)> =
        by_unique.iter().map(|row| (int(&row[1]), int(&row[0]))).collect();
    assert_eq!(
        found_unique, expected_unique,
        "unique index disagrees with the table in one snapshot"
    );
    let values: BTreeSet<i64> = rows.iter().map(|row| int(&row[1])).collect();
    assert_eq!(values.len(), rows.len(), "two live rows share a unique value");
    let mut expected_group: Vec<(i64, i64)> =
        rows.iter().map(|row| (int(&row[2]), int(&row[0]))).collect();
    expected_group.sort();
    let found_group: Vec<(i64, i64)> =
        by_group.iter().map(|row| (int(&row[2]), int(&row[0]))).collect();
    assert_eq!(
        found_group, expected_group,
        "non-unique index disagrees with the table in one snapshot"
    );
}

#[test]
fn concurrent_table_and_index_histories_match_models() {
    let directory = tempfile::tempdir().unwrap();
    let mut config = StoreConfig::local(directory.path()).unwrap();
    config.buffer_pool_bytes = 64 * 8192;
    let engine = Engine::open(Arc::new(PageStore::open(config).unwrap())).unwrap();
    engine
        .create_table(TableDef {
            name: "things".into(),
            columns: vec![
                ColumnDef { name: "id".into(), kind: KeyKind::Int, nullable: false },
                ColumnDef { name: "code".into(), kind: KeyKind::Int, nullable: false },
                ColumnDef { name: "grp".into(), kind: KeyKind::Int, nullable: false },
            ],
            primary_key: Some(vec![0]),
            indexes: vec![
                IndexDef { name: "things_unique".into(), columns: vec![1], unique: true },
                IndexDef { name: "things_group".into(), columns: vec![2], unique: false },
            ],
        })
        .unwrap();
    let done = AtomicBool::new(false);
    let models: Vec<Model> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|thread| {
                scope.spawn({
                    let engine = &engine;
                    move || writer(engine, thread)
                })
            })
            .collect();
        for _ in 0..2 {
            let (engine, done) = (&engine, &done);
            scope.spawn(move || {
                while !done.load(Ordering::Acquire) {
                    check_snapshot(engine);
                }
            });
        }
        let models = writers.into_iter().map(|handle| handle.join().unwrap()).collect();
        done.store(true, Ordering::Release);
        models
    });
    let mut expected: Model = BTreeMap::new();
    for model in models {
        expected.extend(model);
    }
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let rows = txn.scan("things", Bound::Unbounded, Bound::Unbounded).unwrap();
    let found: Model =
        rows.iter().map(|row| (int(&row[0]), (int(&row[1]), int(&row[2])))).collect();
    assert_eq!(found, expected);
    txn.commit().unwrap();
    check_snapshot(&engine);
    // Purge leaves exactly one version and one entry per index for each live row.
    engine.purge().unwrap();
    let (versions, entries) = engine.storage_counts("things").unwrap();
    let live = u64::try_from(expected.len()).unwrap();
    assert_eq!((versions, entries), (live, vec![live, live]));
}
