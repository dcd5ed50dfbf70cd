//! The bulk insert path (`Transaction::insert_batch`, used by COPY FROM and INSERT ... SELECT):
//! rows in any order land sorted and indexed, a duplicate inside a batch or against a live row
//! is 23505 and undoes the statement, a dead version is replaced, rollback and a crash
//! mid-load leave nothing visible and nothing stored once purged, and a concurrent writer of
//! the same key is waited for.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tierdb_common::SplitMix64;
use tierdb_engine::{
    ColumnDef, Engine, EngineError, IndexDef, IsolationLevel, KeyKind, TableDef, Value,
    INSERT_BATCH_ROWS_MAX,
};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> (Arc<PageStore>, Arc<Engine>) {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 256 * 8192;
    let store = Arc::new(PageStore::open(config).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

/// items (id int primary key, amount int not null, label text) with a non-unique index on
/// amount.
fn items(engine: &Arc<Engine>) {
    engine
        .create_table(TableDef {
            name: "items".into(),
            columns: vec![
                ColumnDef { name: "id".into(), kind: KeyKind::Int, nullable: false },
                ColumnDef { name: "amount".into(), kind: KeyKind::Int, nullable: false },
                ColumnDef { name: "label".into(), kind: KeyKind::Text, nullable: true },
            ],
            primary_key: Some(vec![0]),
            indexes: vec![IndexDef {
                name: "items_amount_idx".into(),
                columns: vec![1],
                unique: false,
            }],
        })
        .unwrap();
}

fn item(id: i64) -> Vec<Value> {
    vec![Value::Int(id), Value::Int(id % 97), Value::Text(format!("label-{id:08}-of-the-row"))]
}

/// Ids 0..count in a shuffled order.
fn shuffled(count: i64, seed: u64) -> Vec<i64> {
    let mut ids: Vec<i64> = (0..count).collect();
    let mut random = SplitMix64::new(seed);
    for index in (1..ids.len()).rev() {
        let other = usize::try_from(random.next_u64() % (index as u64 + 1)).unwrap();
        ids.swap(index, other);
    }
    ids
}

fn all_ids(engine: &Arc<Engine>) -> Vec<i64> {
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let rows = txn.scan("items", Bound::Unbounded, Bound::Unbounded).unwrap();
    txn.commit().unwrap();
    rows.iter()
        .map(|row| match row[0] {
            Value::Int(id) => id,
            _ => panic!("id is an integer"),
        })
        .collect()
}

fn amount_count(engine: &Arc<Engine>, amount: i64) -> usize {
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let amount = [Value::Int(amount)];
    let rows = txn
        .index_scan("items", "items_amount_idx", Bound::Included(&amount), Bound::Included(&amount))
        .unwrap();
    txn.commit().unwrap();
    rows.len()
}

#[test]
fn shuffled_rows_over_many_batches_land_sorted_and_indexed() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let count = i64::try_from(INSERT_BATCH_ROWS_MAX).unwrap() * 3 + 17;
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert_batch("items", shuffled(count, 7).into_iter().map(item).collect()).unwrap();
    txn.commit().unwrap();
    assert_eq!(all_ids(&engine), (0..count).collect::<Vec<_>>());
    let expected = (0..count).filter(|id| id % 97 == 5).count();
    assert_eq!(amount_count(&engine, 5), expected);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(txn.get("items", &[Value::Int(4321)]).unwrap(), Some(item(4321)));
    txn.commit().unwrap();
    let (versions, entries) = engine.storage_counts("items").unwrap();
    let count = u64::try_from(count).unwrap();
    assert_eq!((versions, entries), (count, vec![count]));
}

#[test]
fn duplicate_inside_a_batch_is_a_unique_violation_and_undoes_the_statement() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.begin_statement().unwrap();
    txn.insert_batch("items", (0..10).map(item).collect()).unwrap();
    txn.begin_statement().unwrap();
    let error = txn.insert_batch("items", vec![item(20), item(21), item(20)]).unwrap_err();
    assert!(
        matches!(&error, EngineError::UniqueViolation { constraint } if constraint == "items_pkey"),
        "{error:?}"
    );
    assert_eq!(error.sqlstate(), "23505");
    drop(txn);
    assert!(all_ids(&engine).is_empty(), "a failed transaction's rows are visible");
    engine.purge().unwrap();
    assert_eq!(engine.storage_counts("items").unwrap(), (0, vec![0]));
}

#[test]
fn duplicate_of_a_committed_row_is_a_unique_violation_and_keeps_that_row() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("items", item(500)).unwrap();
    txn.commit().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let error = txn.insert_batch("items", (0..1000).rev().map(item).collect()).unwrap_err();
    assert!(
        matches!(&error, EngineError::UniqueViolation { constraint } if constraint == "items_pkey"),
        "{error:?}"
    );
    txn.rollback().unwrap();
    assert_eq!(all_ids(&engine), vec![500]);
    assert_eq!(amount_count(&engine, 500 % 97), 1);
    engine.purge().unwrap();
    assert_eq!(engine.storage_counts("items").unwrap(), (1, vec![1]));
}

#[test]
fn not_null_violation_is_23502() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let bad = vec![Value::Int(3), Value::Null, Value::Null];
    let error = txn.insert_batch("items", vec![item(1), item(2), bad]).unwrap_err();
    assert_eq!(error.sqlstate(), "23502");
    drop(txn);
    assert!(all_ids(&engine).is_empty());
}

#[test]
fn rollback_removes_every_row_and_index_entry() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert_batch("items", shuffled(5000, 3).into_iter().map(item).collect()).unwrap();
    assert_eq!(txn.scan("items", Bound::Unbounded, Bound::Unbounded).unwrap().len(), 5000);
    txn.rollback().unwrap();
    assert!(all_ids(&engine).is_empty());
    assert_eq!(amount_count(&engine, 5), 0);
    engine.purge().unwrap();
    assert_eq!(engine.storage_counts("items").unwrap(), (0, vec![0]));
}

#[test]
fn a_deleted_row_key_is_inserted_again() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert_batch("items", (0..100).map(item).collect()).unwrap();
    txn.commit().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(txn.delete("items", &[Value::Int(42)]).unwrap());
    txn.commit().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert_batch("items", vec![item(42), item(100)]).unwrap();
    txn.commit().unwrap();
    assert_eq!(all_ids(&engine), (0..=100).collect::<Vec<_>>());
}

#[test]
fn crash_mid_load_leaves_nothing_visible_and_purge_reclaims_it() {
    let directory = tempfile::tempdir().unwrap();
    {
        let (store, engine) = open(directory.path());
        items(&engine);
        let mut committed = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        committed.insert_batch("items", (0..10).map(item).collect()).unwrap();
        committed.commit().unwrap();
        let mut loading = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        loading.insert_batch("items", (10..20_000).map(item).collect()).unwrap();
        store.flush_all().unwrap();
        // A crash: no rollback runs, nothing more is written.
        loading.abandon_as_if_crashed();
        drop(engine);
        Arc::try_unwrap(store).ok().expect("sole owner").abandon();
    }
    let (_store, engine) = open(directory.path());
    assert_eq!(all_ids(&engine), (0..10).collect::<Vec<_>>());
    engine.purge().unwrap();
    assert_eq!(engine.storage_counts("items").unwrap(), (10, vec![10]));
    // The keys are free again.
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert_batch("items", (10..20).map(item).collect()).unwrap();
    txn.commit().unwrap();
    assert_eq!(all_ids(&engine), (0..20).collect::<Vec<_>>());
}

#[test]
fn a_concurrent_writer_of_the_same_key_is_waited_for() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let mut first = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    first.insert("items", item(7)).unwrap();
    let outcome = thread::scope(|scope| {
        let engine = &engine;
        let second = scope.spawn(move || {
            let mut second = engine.begin(IsolationLevel::ReadCommitted).unwrap();
            let outcome = second.insert_batch("items", (0..50).map(item).collect());
            drop(second);
            outcome
        });
        thread::sleep(Duration::from_millis(200));
        assert!(!second.is_finished(), "the batch did not wait for the running writer");
        first.commit().unwrap();
        second.join().unwrap()
    });
    assert!(
        matches!(&outcome, Err(EngineError::UniqueViolation { constraint }) if constraint == "items_pkey"),
        "{outcome:?}"
    );
    assert_eq!(all_ids(&engine), vec![7]);
}

/// A committed load is in no purge queue and a purge pass rewrites none of its rows (freezing
/// alone is not written): the rows stay readable, through the table and the index.
#[test]
fn a_committed_load_is_not_rewritten_by_the_purge() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let count = i64::try_from(INSERT_BATCH_ROWS_MAX).unwrap() * 2 + 5;
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert_batch("items", shuffled(count, 11).into_iter().map(item).collect()).unwrap();
    txn.commit().unwrap();
    let stats = engine.purge().unwrap();
    assert_eq!((stats.rows_rewritten, stats.rows_removed, stats.index_entries_removed), (0, 0, 0));
    assert_eq!(all_ids(&engine), (0..count).collect::<Vec<_>>());
    assert_eq!(amount_count(&engine, 5), (0..count).filter(|id| id % 97 == 5).count());
    // A one-row write of a loaded row still prunes (and freezes) it with its change.
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut change =
        |row: &Vec<Value>| Some(vec![row[0].clone(), Value::Int(1000), row[2].clone()]);
    assert!(txn.update("items", &[Value::Int(5)], &mut change).unwrap());
    txn.commit().unwrap();
    engine.purge().unwrap();
    let count = u64::try_from(count).unwrap();
    assert_eq!(engine.storage_counts("items").unwrap(), (count, vec![count]));
    assert_eq!(amount_count(&engine, 1000), 1);
}

/// A loaded row whose indexed value its own transaction changes twice leaves no stale entry
/// once the purge has run, though the load queued nothing.
#[test]
fn a_loaded_row_changed_by_its_own_transaction_leaves_no_stale_entry() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    items(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert_batch("items", (0..300).map(item).collect()).unwrap();
    for amount in [500, 501] {
        let mut change =
            |row: &Vec<Value>| Some(vec![row[0].clone(), Value::Int(amount), row[2].clone()]);
        assert!(txn.update("items", &[Value::Int(7)], &mut change).unwrap());
    }
    txn.commit().unwrap();
    engine.purge().unwrap();
    assert_eq!(engine.storage_counts("items").unwrap(), (300, vec![300]));
    assert_eq!((amount_count(&engine, 7), amount_count(&engine, 500)), (3, 0));
    assert_eq!(amount_count(&engine, 501), 1);
}
