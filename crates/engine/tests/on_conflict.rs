//! Speculative inserts (`Transaction::insert_unless_conflict`, INSERT ... ON CONFLICT): a
//! conflict on an arbiter writes nothing and leaves the transaction usable, names the row
//! that holds the value, waits for a running writer first, is 23505 for a unique constraint
//! that is not an arbiter, and 40001 under REPEATABLE READ for a holder the snapshot misses.

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tierdb_engine::{
    ColumnDef, ConflictArbiters, Engine, IndexDef, InsertOutcome, IsolationLevel, KeyKind,
    TableDef, Value,
};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> Arc<Engine> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 128 * 8192;
    let engine = Engine::open(Arc::new(PageStore::open(config).unwrap())).unwrap();
    engine
        .create_table(TableDef {
            name: "users".into(),
            columns: vec![
                ColumnDef { name: "id".into(), kind: KeyKind::Int, nullable: false },
                ColumnDef { name: "email".into(), kind: KeyKind::Text, nullable: true },
                ColumnDef { name: "city".into(), kind: KeyKind::Text, nullable: false },
            ],
            primary_key: Some(vec![0]),
            indexes: vec![
                IndexDef { name: "users_email_key".into(), columns: vec![1], unique: true },
                IndexDef { name: "users_city_idx".into(), columns: vec![2], unique: false },
            ],
        })
        .unwrap();
    engine
}

fn user(id: i64, email: &str, city: &str) -> Vec<Value> {
    vec![Value::Int(id), Value::Text(email.into()), Value::Text(city.into())]
}

fn named(primary_key: bool, names: &[&str]) -> ConflictArbiters {
    ConflictArbiters::Named {
        primary_key,
        indexes: names.iter().map(|name| name.to_string()).collect(),
    }
}

fn city_count(engine: &Arc<Engine>, city: &str) -> usize {
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let city = [Value::Text(city.into())];
    let rows = txn
        .index_scan("users", "users_city_idx", Bound::Included(&city), Bound::Included(&city))
        .unwrap();
    txn.commit().unwrap();
    rows.len()
}

#[test]
fn conflict_on_an_arbiter_writes_nothing_and_the_transaction_goes_on() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("users", user(1, "a@x", "paris")).unwrap();
    txn.commit().unwrap();

    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.begin_statement().unwrap();
    // On the primary key.
    let outcome =
        txn.insert_unless_conflict("users", user(1, "b@x", "oslo"), &ConflictArbiters::Every);
    let InsertOutcome::Conflict { key: pk_key, constraint } = outcome.unwrap() else {
        panic!("expected a conflict on the primary key");
    };
    assert_eq!(constraint, "users_pkey");
    // On the unique index: the row key named is the one that holds the value.
    let outcome = txn.insert_unless_conflict(
        "users",
        user(2, "a@x", "oslo"),
        &named(false, &["users_email_key"]),
    );
    let InsertOutcome::Conflict { key, constraint } = outcome.unwrap() else {
        panic!("expected a conflict on the unique index");
    };
    assert_eq!(constraint, "users_email_key");
    assert_eq!(key, pk_key);
    // Nothing was written: no index entry for "oslo" and the transaction still works.
    assert!(!txn.is_failed());
    let outcome =
        txn.insert_unless_conflict("users", user(3, "c@x", "rome"), &ConflictArbiters::Every);
    assert!(matches!(outcome.unwrap(), InsertOutcome::Inserted { .. }));
    txn.commit().unwrap();
    assert_eq!(city_count(&engine, "oslo"), 0);
    assert_eq!(city_count(&engine, "rome"), 1);
}

#[test]
fn a_constraint_that_is_not_an_arbiter_is_a_violation() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("users", user(1, "a@x", "paris")).unwrap();
    txn.commit().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let error =
        txn.insert_unless_conflict("users", user(2, "a@x", "oslo"), &named(true, &[])).unwrap_err();
    assert_eq!(error.sqlstate(), "23505");
    assert!(error.to_string().contains("users_email_key"), "{error}");
    assert!(txn.is_failed());
    txn.rollback().unwrap();
    assert_eq!(city_count(&engine, "oslo"), 0);
}

#[test]
fn a_running_writer_is_waited_for_and_its_outcome_decides() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    for commit in [true, false] {
        let id = if commit { 10 } else { 20 };
        let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        writer.insert("users", user(id, &format!("{id}@x"), "paris")).unwrap();
        let other = Arc::clone(&engine);
        let speculative = thread::spawn(move || {
            let mut txn = other.begin(IsolationLevel::ReadCommitted).unwrap();
            let row = user(id, &format!("{id}@y"), "lima");
            let outcome = txn.insert_unless_conflict("users", row, &ConflictArbiters::Every);
            txn.commit().unwrap();
            outcome.unwrap()
        });
        thread::sleep(Duration::from_millis(100));
        if commit {
            writer.commit().unwrap();
        } else {
            writer.rollback().unwrap();
        }
        let outcome = speculative.join().unwrap();
        assert_eq!(matches!(outcome, InsertOutcome::Conflict { .. }), commit, "{outcome:?}");
    }
    assert_eq!(city_count(&engine, "lima"), 1, "only the insert after the rollback");
}

#[test]
fn repeatable_read_conflict_with_an_unseen_row_is_a_serialization_failure() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    let mut reader = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    assert!(reader.get("users", &[Value::Int(1)]).unwrap().is_none());
    let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    writer.insert("users", user(1, "a@x", "paris")).unwrap();
    writer.commit().unwrap();
    let error = reader
        .insert_unless_conflict("users", user(1, "b@x", "oslo"), &ConflictArbiters::Every)
        .unwrap_err();
    assert_eq!(error.sqlstate(), "40001");
    reader.rollback().unwrap();
    // A row the snapshot sees is an ordinary conflict.
    let mut reader = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let outcome =
        reader.insert_unless_conflict("users", user(1, "b@x", "oslo"), &ConflictArbiters::Every);
    assert!(matches!(outcome.unwrap(), InsertOutcome::Conflict { .. }));
    reader.commit().unwrap();
}
