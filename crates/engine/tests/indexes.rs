//! Secondary indexes: uniqueness (with PostgreSQL's NULLs-distinct rule and waits on
//! concurrent writers), maintenance in the same transaction, stale entries never returned,
//! and a model-based test of table-plus-index operations with commits and rollbacks.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use tierdb_engine::{ColumnDef, Engine, IndexDef, IsolationLevel, KeyKind, TableDef, Value};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> Arc<Engine> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 128 * 8192;
    Engine::open(Arc::new(PageStore::open(config).unwrap())).unwrap()
}

fn users(engine: &Arc<Engine>) {
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
}

fn user(id: i64, email: Option<&str>, city: &str) -> Vec<Value> {
    vec![
        Value::Int(id),
        email.map_or(Value::Null, |email| Value::Text(email.into())),
        Value::Text(city.into()),
    ]
}

fn ids(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter().map(|row| if let Value::Int(id) = row[0] { id } else { panic!("id") }).collect()
}

#[test]
fn unique_index_rejects_duplicates_but_not_nulls() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    users(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("users", user(1, Some("a@x"), "paris")).unwrap();
    txn.insert("users", user(2, None, "paris")).unwrap();
    txn.insert("users", user(3, None, "rome")).unwrap();
    txn.commit().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let error = txn.insert("users", user(4, Some("a@x"), "oslo")).unwrap_err();
    assert_eq!(error.sqlstate(), "23505");
    assert!(error.to_string().contains("users_email_key"), "{error}");
    txn.rollback().unwrap();
    // Freeing the value (update to another) lets another row take it.
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.update("users", &[Value::Int(1)], &mut |row| {
        Some(user(
            1,
            Some("b@x"),
            match &row[2] {
                Value::Text(city) => city,
                _ => "?",
            },
        ))
    })
    .unwrap();
    txn.insert("users", user(4, Some("a@x"), "oslo")).unwrap();
    txn.commit().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let by_email = txn
        .index_scan(
            "users",
            "users_email_key",
            Bound::Included(&[Value::Text("a@x".into())]),
            Bound::Included(&[Value::Text("a@x".into())]),
        )
        .unwrap();
    assert_eq!(ids(&by_email), vec![4], "stale entry for row 1 must not be returned");
    let paris = txn
        .index_scan(
            "users",
            "users_city_idx",
            Bound::Included(&[Value::Text("paris".into())]),
            Bound::Included(&[Value::Text("paris".into())]),
        )
        .unwrap();
    assert_eq!(ids(&paris), vec![1, 2]);
}

#[test]
fn concurrent_unique_insert_waits_for_the_outcome() {
    for commit_first in [true, false] {
        let directory = tempfile::tempdir().unwrap();
        let engine = open(directory.path());
        users(&engine);
        let mut first = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        first.insert("users", user(1, Some("same@x"), "paris")).unwrap();
        let outcome = std::thread::scope(|scope| {
            let engine = &engine;
            let second = scope.spawn(move || {
                let mut second = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                let outcome = second.insert("users", user(2, Some("same@x"), "rome"));
                if outcome.is_ok() {
                    second.commit().unwrap();
                } else {
                    second.rollback().unwrap();
                }
                outcome
            });
            std::thread::sleep(std::time::Duration::from_millis(100));
            if commit_first {
                first.commit().unwrap()
            } else {
                first.rollback().unwrap()
            }
            second.join().unwrap()
        });
        if commit_first {
            assert_eq!(outcome.unwrap_err().sqlstate(), "23505");
        } else {
            outcome.unwrap();
        }
    }
}

#[test]
fn rolled_back_rows_are_not_found_through_indexes() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    users(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("users", user(1, Some("gone@x"), "paris")).unwrap();
    txn.rollback().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(txn
        .index_scan("users", "users_city_idx", Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .is_empty());
    // The value is free again.
    txn.insert("users", user(2, Some("gone@x"), "rome")).unwrap();
    txn.commit().unwrap();
}

#[derive(Clone, Debug)]
enum Op {
    Insert(i64, u8, u8),
    Update(i64, u8, u8),
    Delete(i64),
    Commit,
    Rollback,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0i64..30, 0u8..12, 0u8..4).prop_map(|(id, email, city)| Op::Insert(id, email, city)),
        3 => (0i64..30, 0u8..12, 0u8..4).prop_map(|(id, email, city)| Op::Update(id, email, city)),
        2 => (0i64..30).prop_map(Op::Delete),
        1 => Just(Op::Commit),
        1 => Just(Op::Rollback),
    ]
}

type Model = BTreeMap<i64, (Option<String>, String)>;

fn email_of(code: u8) -> Option<String> {
    (code > 0).then(|| format!("user{code}@x"))
}

fn check(engine: &Arc<Engine>, model: &Model) -> Result<(), TestCaseError> {
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let rows = txn.scan("users", Bound::Unbounded, Bound::Unbounded).unwrap();
    prop_assert_eq!(ids(&rows), model.keys().copied().collect::<Vec<_>>());
    for city in ["c0", "c1", "c2", "c3"] {
        let found = txn
            .index_scan(
                "users",
                "users_city_idx",
                Bound::Included(&[Value::Text(city.into())]),
                Bound::Included(&[Value::Text(city.into())]),
            )
            .unwrap();
        let expected: Vec<i64> =
            model.iter().filter(|(_, (_, row_city))| row_city == city).map(|(id, _)| *id).collect();
        prop_assert_eq!(ids(&found), expected);
    }
    let by_email =
        txn.index_scan("users", "users_email_key", Bound::Unbounded, Bound::Unbounded).unwrap();
    // Index order: emails ascending with NULLs last (PostgreSQL's default), then the key.
    let mut expected: Vec<(bool, Option<String>, i64)> =
        model.iter().map(|(id, (email, _))| (email.is_none(), email.clone(), *id)).collect();
    expected.sort();
    prop_assert_eq!(ids(&by_email), expected.iter().map(|(_, _, id)| *id).collect::<Vec<_>>());
    txn.commit().unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn table_and_indexes_match_model(ops in prop::collection::vec(op(), 1..120)) {
        let directory = tempfile::tempdir().unwrap();
        let engine = open(directory.path());
        users(&engine);
        let mut committed: Model = BTreeMap::new();
        let mut pending = committed.clone();
        let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        for op in ops {
            match op {
                Op::Insert(id, email, city) => {
                    let email = email_of(email);
                    let duplicate = pending.contains_key(&id) || email.as_ref().is_some_and(|email| pending.values().any(|(other, _)| other.as_ref() == Some(email)));
                    let row = user(id, email.as_deref(), &format!("c{city}"));
                    let outcome = txn.insert("users", row);
                    prop_assert_eq!(outcome.is_err(), duplicate, "insert id={} duplicate={}", id, duplicate);
                    if duplicate {
                        prop_assert_eq!(outcome.unwrap_err().sqlstate(), "23505");
                        txn.rollback().unwrap();
                        pending = committed.clone();
                        txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                    } else {
                        pending.insert(id, (email, format!("c{city}")));
                    }
                }
                Op::Update(id, email, city) => {
                    let email = email_of(email);
                    let conflict = email.as_ref().is_some_and(|email| pending.iter().any(|(other_id, (other, _))| *other_id != id && other.as_ref() == Some(email)));
                    let exists = pending.contains_key(&id);
                    let row = user(id, email.as_deref(), &format!("c{city}"));
                    let outcome = txn.update("users", &[Value::Int(id)], &mut |_| Some(row.clone()));
                    if exists && conflict {
                        prop_assert_eq!(outcome.unwrap_err().sqlstate(), "23505");
                        txn.rollback().unwrap();
                        pending = committed.clone();
                        txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                    } else {
                        prop_assert_eq!(outcome.unwrap(), exists);
                        if exists {
                            pending.insert(id, (email, format!("c{city}")));
                        }
                    }
                }
                Op::Delete(id) => {
                    prop_assert_eq!(txn.delete("users", &[Value::Int(id)]).unwrap(), pending.remove(&id).is_some());
                }
                Op::Commit => {
                    txn.commit().unwrap();
                    committed = pending.clone();
                    check(&engine, &committed)?;
                    txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                }
                Op::Rollback => {
                    txn.rollback().unwrap();
                    pending = committed.clone();
                    check(&engine, &committed)?;
                    txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                }
            }
        }
        txn.commit().unwrap();
        check(&engine, &pending)?;
    }
}

#[test]
fn index_bound_with_too_many_values_is_an_error() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    users(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let bound = [Value::Text("a".into()), Value::Int(1)];
    let error = txn
        .index_scan("users", "users_city_idx", Bound::Included(&bound), Bound::Unbounded)
        .unwrap_err();
    assert_eq!(error.sqlstate(), "22023", "{error}");
}

/// Regression: an in-place update of the transaction's own version dropped the index entry of
/// the replaced value, and rolling back to a savepoint restored the value without its entry:
/// the committed row was invisible to index scans and its unique value could be taken again.
#[test]
fn savepoint_rollback_restores_index_entries() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    users(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("users", user(1, Some("a@x"), "paris")).unwrap();
    txn.savepoint("s").unwrap();
    txn.update("users", &[Value::Int(1)], &mut |_| Some(user(1, Some("b@x"), "rome"))).unwrap();
    txn.rollback_to_savepoint("s").unwrap();
    txn.commit().unwrap();
    engine.purge().unwrap();
    let mut check = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let by_email = check
        .index_scan(
            "users",
            "users_email_key",
            Bound::Included(&[Value::Text("a@x".into())]),
            Bound::Included(&[Value::Text("a@x".into())]),
        )
        .unwrap();
    assert_eq!(ids(&by_email), vec![1], "the committed row lost its index entry");
    let by_city = check
        .index_scan(
            "users",
            "users_city_idx",
            Bound::Included(&[Value::Text("paris".into())]),
            Bound::Included(&[Value::Text("paris".into())]),
        )
        .unwrap();
    assert_eq!(ids(&by_city), vec![1]);
    let duplicate = check.insert("users", user(2, Some("a@x"), "oslo")).unwrap_err();
    assert_eq!(duplicate.sqlstate(), "23505", "the unique value was free to take again");
    check.rollback().unwrap();
    let (_, entries) = engine.storage_counts("users").unwrap();
    assert_eq!(entries, vec![1, 1], "purge left exactly the live entries");
}
