//! Purge: once no snapshot needs old versions, they go, and so do index entries that no
//! version carries; while a snapshot needs them they stay and it keeps reading correctly.

use std::ops::Bound;
use std::sync::Arc;

use tierdb_engine::{ColumnDef, Engine, IndexDef, IsolationLevel, KeyKind, TableDef, Value};
use tierdb_storage::{PageStore, StoreConfig};

fn setup(directory: &std::path::Path) -> Arc<Engine> {
    let (_, engine) = open_at(directory);
    engine
        .create_table(TableDef {
            name: "items".into(),
            columns: vec![
                ColumnDef { name: "id".into(), kind: KeyKind::Int, nullable: false },
                ColumnDef { name: "tag".into(), kind: KeyKind::Int, nullable: false },
            ],
            primary_key: Some(vec![0]),
            indexes: vec![IndexDef { name: "items_tag".into(), columns: vec![1], unique: false }],
        })
        .unwrap();
    engine
}

fn write(engine: &Engine, id: i64, tag: i64) {
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    if !txn
        .update("items", &[Value::Int(id)], &mut |_| Some(vec![Value::Int(id), Value::Int(tag)]))
        .unwrap()
    {
        txn.insert("items", vec![Value::Int(id), Value::Int(tag)]).unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn purge_removes_what_no_snapshot_needs() {
    let directory = tempfile::tempdir().unwrap();
    let engine = setup(directory.path());
    for id in 0..100 {
        write(&engine, id, 0);
    }
    // A long snapshot holds the horizon: versions accumulate.
    let mut old = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    assert_eq!(old.scan("items", Bound::Unbounded, Bound::Unbounded).unwrap().len(), 100);
    for round in 1..=5 {
        for id in 0..100 {
            write(&engine, id, round);
        }
    }
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 50..100 {
        assert!(txn.delete("items", &[Value::Int(id)]).unwrap());
    }
    txn.commit().unwrap();
    engine.purge().unwrap();
    let (versions, entries) = engine.storage_counts("items").unwrap();
    assert!(versions >= 600, "versions the old snapshot needs were purged: {versions}");
    // The old snapshot still sees its world, through the index too.
    let rows = old
        .index_scan(
            "items",
            "items_tag",
            Bound::Included(&[Value::Int(0)]),
            Bound::Included(&[Value::Int(0)]),
        )
        .unwrap();
    assert_eq!(rows.len(), 100);
    assert!(entries[0] >= 600);
    old.commit().unwrap();

    let stats = engine.purge().unwrap();
    assert_eq!(stats.rows_removed, 50, "{stats:?}");
    let (versions, entries) = engine.storage_counts("items").unwrap();
    assert_eq!(versions, 50, "one version per live row after purge");
    assert_eq!(entries, vec![50], "one index entry per live row after purge");
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let live = txn
        .index_scan(
            "items",
            "items_tag",
            Bound::Included(&[Value::Int(5)]),
            Bound::Included(&[Value::Int(5)]),
        )
        .unwrap();
    assert_eq!(live.len(), 50);
    txn.commit().unwrap();
}

#[test]
fn background_purge_keeps_space_bounded() {
    let directory = tempfile::tempdir().unwrap();
    let engine = setup(directory.path());
    // Rows change their indexed value over and over; without purge, entries would grow
    // with every update.
    for round in 0..40 {
        for id in 0..50 {
            write(&engine, id, round);
        }
    }
    // Nothing more is written: the background thread works through what the transactions
    // queued (every half second while there is work).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (versions, entries) = engine.storage_counts("items").unwrap();
        if versions == 50 && entries == vec![50] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "background purge did not converge: versions={versions} entries={entries:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn open_at(directory: &std::path::Path) -> (Arc<PageStore>, Arc<Engine>) {
    let store = Arc::new(PageStore::open(StoreConfig::local(directory).unwrap()).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

/// Waits until the purge thread has had time for its first passes (it wakes every 500 ms).
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(1_500));
}

/// A clean shutdown purges what is queued and records it, and the next start skips the full
/// pass over every table; after a crash, or a shutdown with a transaction still open, the
/// next start runs the full pass and removes what was left.
#[test]
fn clean_shutdown_records_purge_and_skips_the_startup_pass() {
    let directory = tempfile::tempdir().unwrap();
    let engine = setup(directory.path());
    for round in 0..3 {
        for id in 0..40 {
            write(&engine, id, round);
        }
    }
    assert!(engine.close_purged().unwrap(), "an idle engine records its purge");
    let refused = engine.begin(IsolationLevel::ReadCommitted).map(|_| ()).unwrap_err();
    assert_eq!(refused.sqlstate(), "57P01", "no transaction after close_purged: {refused}");
    let store = Arc::clone(engine.store());
    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").close().unwrap();

    // Clean start: no full pass, and the shutdown already left one version per row.
    let (store, engine) = open_at(directory.path());
    settle();
    assert_eq!(engine.full_purge_passes(), 0, "a clean shutdown's record skips the pass");
    assert_eq!(engine.storage_counts("items").unwrap(), (40, vec![40]));

    // Versions left by updates, then a crash: the record was cleared at startup, so the next
    // start purges everything.
    engine.purge().unwrap(); // VACUUM-style pass: counted, removes nothing new
    assert_eq!(engine.full_purge_passes(), 1);
    let mut open_transaction = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    assert_eq!(
        open_transaction.scan("items", Bound::Unbounded, Bound::Unbounded).unwrap().len(),
        40
    );
    for id in 0..40 {
        write(&engine, id, 7);
    }
    assert!(!engine.close_purged().unwrap(), "an open transaction prevents the record");
    drop(open_transaction);
    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").abandon();

    let (_store, engine) = open_at(directory.path());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.storage_counts("items").unwrap() != (40, vec![40]) {
        assert!(std::time::Instant::now() < deadline, "the startup pass did not purge");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(engine.full_purge_passes(), 1, "after a crash the start runs the full pass");
}

/// After a crash the start owes a full pass; a shutdown before it has run (or while it runs:
/// it is interrupted) writes no record, and the next start owes it still.
#[test]
fn shutdown_with_a_full_pass_owed_writes_no_record() {
    let directory = tempfile::tempdir().unwrap();
    let engine = setup(directory.path());
    for id in 0..40 {
        write(&engine, id, 1);
    }
    let store = Arc::clone(engine.store());
    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").abandon();

    let (store, engine) = open_at(directory.path());
    assert!(!engine.close_purged().unwrap(), "the full pass after the crash is still owed");
    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").close().unwrap();

    let (_store, engine) = open_at(directory.path());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.full_purge_passes() == 0 {
        assert!(std::time::Instant::now() < deadline, "the owed full pass did not run");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
