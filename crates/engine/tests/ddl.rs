//! DDL on live tables: `create_index` backfill (with rows of transactions in progress, and
//! with concurrent writers), unique-index creation failures, `drop_table`, `truncate_table`
//! and `drop_index` against concurrent transactions, and their durability across a crash.
//! Index builds by external sort: one that spills runs to the temp space gives the same
//! entries as one that fits in memory, a unique build finds duplicates across runs, and no
//! temp file nor progress entry outlives a build.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_engine::{
    ColumnDef, Engine, IndexBuildOptions, IndexDef, IsolationLevel, KeyKind, TableDef, Transaction,
    Value,
};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> (Arc<PageStore>, Arc<Engine>) {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 512 * 8192;
    let store = Arc::new(PageStore::open(config).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

/// Ends the engine the way a crash would (nothing flushed beyond what is already durable).
fn crash(store: Arc<PageStore>, engine: Arc<Engine>) {
    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").abandon();
}

fn int_column(name: &str) -> ColumnDef {
    ColumnDef { name: name.into(), kind: KeyKind::Int, nullable: true }
}

/// `name(id primary key, grp, email text)`, with the given indexes.
fn table(engine: &Engine, name: &str, indexes: Vec<IndexDef>) {
    engine
        .create_table(TableDef {
            name: name.into(),
            columns: vec![
                int_column("id"),
                int_column("grp"),
                ColumnDef { name: "email".into(), kind: KeyKind::Text, nullable: true },
            ],
            primary_key: Some(vec![0]),
            indexes,
        })
        .unwrap();
}

fn index(name: &str, columns: Vec<usize>, unique: bool) -> IndexDef {
    IndexDef { name: name.into(), columns, unique }
}

fn row(id: i64, grp: i64, email: Option<&str>) -> Vec<Value> {
    vec![
        Value::Int(id),
        Value::Int(grp),
        email.map_or(Value::Null, |email| Value::Text(email.into())),
    ]
}

fn int(value: &Value) -> i64 {
    match value {
        Value::Int(number) => *number,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn ids(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter().map(|row| int(&row[0])).collect()
}

/// Rows with `grp` = `value` through the index, in index order (row key order within a value).
fn by_group(txn: &mut Transaction, table: &str, index: &str, value: i64) -> Vec<Vec<Value>> {
    let bound: &[Value] = &[Value::Int(value)];
    txn.index_scan(table, index, Bound::Included(bound), Bound::Included(bound)).unwrap()
}

/// Asserts that the index on `grp` returns, for every value, exactly the rows a filtered full
/// scan does (the same transaction's snapshot for both).
fn assert_index_matches_table(engine: &Engine, table: &str, index: &str) {
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let rows = txn.scan(table, Bound::Unbounded, Bound::Unbounded).unwrap();
    let mut expected: BTreeMap<i64, Vec<Vec<Value>>> = BTreeMap::new();
    for row in rows {
        expected.entry(int(&row[1])).or_default().push(row);
    }
    let all = txn.index_scan(table, index, Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(all.len(), expected.values().map(Vec::len).sum::<usize>(), "index row count");
    let groups: Vec<i64> = all.iter().map(|row| int(&row[1])).collect();
    assert!(groups.windows(2).all(|pair| pair[0] <= pair[1]), "index order");
    for (&value, rows) in &expected {
        assert_eq!(&by_group(&mut txn, table, index, value), rows, "value={value}");
    }
    txn.commit().unwrap();
}

#[test]
fn create_index_backfills_a_populated_table() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    table(&engine, "people", vec![]);
    for batch in 0..10 {
        let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        for id in batch * 1000..(batch + 1) * 1000 {
            txn.insert("people", row(id, id % 97, Some(&format!("p{id}@x")))).unwrap();
        }
        txn.commit().unwrap();
    }
    // Old versions and deleted rows: every 10th row moves group, every 13th is deleted.
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in (0..10_000).step_by(10) {
        txn.update("people", &[Value::Int(id)], &mut |row| {
            Some(vec![row[0].clone(), Value::Int(int(&row[1]) + 1000), row[2].clone()])
        })
        .unwrap();
    }
    for id in (0..10_000).step_by(13) {
        txn.delete("people", &[Value::Int(id)]).unwrap();
    }
    txn.commit().unwrap();

    engine.create_index("people", index("people_grp", vec![1], false)).unwrap();
    engine.create_index("people", index("people_email", vec![2], true)).unwrap();
    let def = engine.table_def("people").unwrap();
    let names: Vec<&str> = def.indexes.iter().map(|index| index.name.as_str()).collect();
    assert_eq!(names, ["people_grp", "people_email"]);
    assert_index_matches_table(&engine, "people", "people_grp");
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let groups = by_group(&mut txn, "people", "people_grp", 5);
    assert!(groups.iter().all(|row| int(&row[0]) % 97 == 5 && int(&row[0]) % 10 != 0));
    assert!(!groups.is_empty());
    let moved = by_group(&mut txn, "people", "people_grp", 1005);
    assert!(!moved.is_empty() && moved.iter().all(|row| int(&row[0]) % 10 == 0));
    // Later writes maintain the new indexes, and the new unique index is enforced.
    txn.insert("people", row(20_000, 5, Some("new@x"))).unwrap();
    assert!(ids(&by_group(&mut txn, "people", "people_grp", 5)).contains(&20_000));
    let email: &[Value] = &[Value::Text("p1@x".into())];
    let found =
        txn.index_scan("people", "people_email", Bound::Included(email), Bound::Included(email));
    assert_eq!(ids(&found.unwrap()), [1]);
    let error = txn.insert("people", row(20_001, 0, Some("p1@x"))).unwrap_err();
    assert_eq!(error.sqlstate(), "23505");
    txn.rollback().unwrap();
    assert_index_matches_table(&engine, "people", "people_grp");
}

#[test]
fn create_unique_index_fails_on_duplicates_and_leaves_no_index() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    table(&engine, "users", vec![]);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("users", row(1, 1, Some("a@x"))).unwrap();
    txn.insert("users", row(2, 1, Some("a@x"))).unwrap();
    txn.insert("users", row(3, 2, None)).unwrap();
    txn.insert("users", row(4, 4, None)).unwrap();
    txn.commit().unwrap();
    let error = engine.create_index("users", index("users_email", vec![2], true)).unwrap_err();
    assert_eq!(error.sqlstate(), "23505");
    assert!(error.to_string().contains("users_email"), "{error}");
    assert!(engine.table_def("users").unwrap().indexes.is_empty());
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let missing = txn.index_scan("users", "users_email", Bound::Unbounded, Bound::Unbounded);
    assert_eq!(missing.unwrap_err().sqlstate(), "42P01");
    txn.rollback().unwrap();
    // Rows 1 and 2 share (email, grp) too.
    let error = engine.create_index("users", index("users_email_grp", vec![2, 1], true));
    assert_eq!(error.unwrap_err().sqlstate(), "23505");

    // Deleted (committed) duplicates do not count; NULLs never conflict.
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(txn.delete("users", &[Value::Int(2)]).unwrap());
    txn.commit().unwrap();
    engine.create_index("users", index("users_email", vec![2], true)).unwrap();
    // An in-progress insert of a duplicate counts (it may commit).
    let mut pending = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    pending.insert("users", row(5, 9, Some("b@x"))).unwrap();
    pending.insert("users", row(6, 9, Some("b@x"))).unwrap_err();
    pending.rollback().unwrap();
    let mut pending = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    pending.insert("users", row(5, 3, None)).unwrap();
    let mut other = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    other.insert("users", row(6, 3, None)).unwrap();
    other
        .update("users", &[Value::Int(1)], &mut |row| {
            Some(vec![row[0].clone(), Value::Int(3), row[2].clone()])
        })
        .unwrap();
    let error = engine.create_index("users", index("users_grp_key", vec![1], true)).unwrap_err();
    assert_eq!(error.sqlstate(), "23505", "rows of transactions in progress are checked");
    other.rollback().unwrap();
    pending.rollback().unwrap();
    // Names: an existing index or table name is 42P07; bad columns 22023.
    let error = engine.create_index("users", index("users_email", vec![1], false)).unwrap_err();
    assert_eq!(error.sqlstate(), "42P07");
    let error = engine.create_index("users", index("users", vec![1], false)).unwrap_err();
    assert_eq!(error.sqlstate(), "42P07");
    let error = engine.create_index("users", index("users_bad", vec![7], false)).unwrap_err();
    assert_eq!(error.sqlstate(), "22023");
    let error = engine.create_index("nobody", index("nobody_idx", vec![0], false)).unwrap_err();
    assert_eq!(error.sqlstate(), "42P01");
    let names: Vec<String> =
        engine.table_def("users").unwrap().indexes.into_iter().map(|index| index.name).collect();
    assert_eq!(names, ["users_email"]);
}

/// A transaction writes rows, another thread creates an index meanwhile, then the first rolls
/// back (the index must not return its rows, and holds no entry for them) or commits (the
/// index returns them).
#[test]
fn rows_of_a_transaction_in_progress_during_create_index() {
    for commit in [false, true] {
        let directory = tempfile::tempdir().unwrap();
        let (_store, engine) = open(directory.path());
        table(&engine, "t", vec![]);
        let mut setup = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        for id in 0..100 {
            setup.insert("t", row(id, 1, None)).unwrap();
        }
        setup.commit().unwrap();
        let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        for id in 100..150 {
            writer.insert("t", row(id, 2, None)).unwrap();
        }
        // Moves rows 0..10 from group 1 to 3 (a new version over a committed one).
        for id in 0..10 {
            writer
                .update("t", &[Value::Int(id)], &mut |row| {
                    Some(vec![row[0].clone(), Value::Int(3), Value::Null])
                })
                .unwrap();
        }
        let creator = {
            let engine = Arc::clone(&engine);
            std::thread::spawn(move || {
                engine.create_index("t", index("t_grp", vec![1], false)).unwrap();
            })
        };
        creator.join().unwrap();
        // Written after the index exists: maintained by the writer itself.
        writer.insert("t", row(150, 2, None)).unwrap();
        let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        assert!(by_group(&mut reader, "t", "t_grp", 2).is_empty(), "uncommitted rows seen");
        assert_eq!(by_group(&mut reader, "t", "t_grp", 1).len(), 100);
        assert_eq!(ids(&by_group(&mut writer, "t", "t_grp", 3)), (0..10).collect::<Vec<_>>());
        assert_eq!(by_group(&mut writer, "t", "t_grp", 2).len(), 51);
        if commit {
            writer.commit().unwrap();
            assert_eq!(
                ids(&by_group(&mut reader, "t", "t_grp", 2)),
                (100..151).collect::<Vec<_>>()
            );
            assert_eq!(ids(&by_group(&mut reader, "t", "t_grp", 1)), (10..100).collect::<Vec<_>>());
            assert_eq!(ids(&by_group(&mut reader, "t", "t_grp", 3)), (0..10).collect::<Vec<_>>());
        } else {
            writer.rollback().unwrap();
            assert!(by_group(&mut reader, "t", "t_grp", 2).is_empty(), "rolled back rows seen");
            assert!(by_group(&mut reader, "t", "t_grp", 3).is_empty(), "rolled back moves seen");
            assert_eq!(ids(&by_group(&mut reader, "t", "t_grp", 1)), (0..100).collect::<Vec<_>>());
            // Undo through the current handle removed the backfilled entries too.
            let (_, entries) = engine.storage_counts("t").unwrap();
            assert_eq!(entries, [100], "stale entries left behind by the rollback");
        }
        reader.commit().unwrap();
        assert_index_matches_table(&engine, "t", "t_grp");
    }
}

#[test]
fn writers_racing_create_index_leave_a_consistent_index() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    table(&engine, "hot", vec![]);
    let mut setup = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..2000 {
        setup.insert("hot", row(id, id % 50, None)).unwrap();
    }
    setup.commit().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4u64)
        .map(|thread| {
            let (engine, stop) = (Arc::clone(&engine), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut random = SplitMix64::new(thread + 1);
                let mut commits = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                    let mut outcome = Ok(());
                    for _ in 0..8 {
                        let id = i64::try_from(random.next_u64() % 2500).unwrap();
                        let group = i64::try_from(random.next_u64() % 50).unwrap();
                        let result = match random.next_u64() % 4 {
                            0 => txn.delete("hot", &[Value::Int(id)]).map(|_| ()),
                            // A duplicate (23505) fails the transaction: it rolls back below.
                            1 => txn.insert("hot", row(id, group, None)),
                            _ => txn
                                .update("hot", &[Value::Int(id)], &mut |row| {
                                    Some(vec![row[0].clone(), Value::Int(group), Value::Null])
                                })
                                .map(|_| ()),
                        };
                        if let Err(error) = result {
                            outcome = Err(error);
                            break;
                        }
                    }
                    match outcome {
                        Ok(()) if !random.next_u64().is_multiple_of(5) => {
                            txn.commit().unwrap();
                            commits += 1;
                        }
                        Ok(()) => txn.rollback().unwrap(),
                        Err(error) if error.sqlstate() == "23505" || error.is_retryable() => {
                            txn.rollback().unwrap();
                        }
                        Err(error) => panic!("unexpected error: {error}"),
                    }
                }
                commits
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(150));
    engine.create_index("hot", index("hot_grp", vec![1], false)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop.store(true, Ordering::Release);
    let commits: u64 = writers.into_iter().map(|writer| writer.join().unwrap()).sum();
    assert!(commits > 10, "writers made progress: commits={commits}");
    assert_index_matches_table(&engine, "hot", "hot_grp");
    // And after purge has removed what no snapshot needs.
    engine.purge().unwrap();
    assert_index_matches_table(&engine, "hot", "hot_grp");
}

#[test]
fn drop_and_truncate_fail_concurrent_users_cleanly() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    table(&engine, "gone", vec![index("gone_grp", vec![1], false)]);
    table(&engine, "emptied", vec![index("emptied_grp", vec![1], false)]);
    let mut setup = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..50 {
        setup.insert("gone", row(id, 1, None)).unwrap();
        setup.insert("emptied", row(id, 1, None)).unwrap();
    }
    setup.commit().unwrap();

    let mut holder = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    holder.insert("gone", row(100, 1, None)).unwrap();
    holder.insert("emptied", row(100, 1, None)).unwrap();
    holder.begin_statement().unwrap();
    engine.drop_table("gone").unwrap();
    engine.truncate_table("emptied").unwrap();
    assert_eq!(engine.drop_table("gone").unwrap_err().sqlstate(), "42P01");
    assert_eq!(engine.table_names(), ["emptied"]);
    // The holder's next operation on the dropped table is 42P01, and fails the transaction.
    let error = holder.insert("gone", row(101, 1, None)).unwrap_err();
    assert_eq!(error.sqlstate(), "42P01");
    assert!(holder.is_failed());

    // A new table under the old name is another table: the holder's rollback leaves it alone.
    table(&engine, "gone", vec![]);
    let mut other = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    other.insert("gone", row(100, 7, None)).unwrap();
    other.commit().unwrap();
    // The truncated table is empty, also through its index, and takes new rows.
    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(reader.scan("emptied", Bound::Unbounded, Bound::Unbounded).unwrap().is_empty());
    assert!(by_group(&mut reader, "emptied", "emptied_grp", 1).is_empty());
    reader.insert("emptied", row(1, 1, None)).unwrap();
    reader.commit().unwrap();
    holder.rollback().unwrap();

    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(
        reader.scan("gone", Bound::Unbounded, Bound::Unbounded).unwrap(),
        [row(100, 7, None)]
    );
    assert_eq!(ids(&by_group(&mut reader, "emptied", "emptied_grp", 1)), [1]);
    assert_eq!(reader.scan("emptied", Bound::Unbounded, Bound::Unbounded).unwrap().len(), 1);
    reader.commit().unwrap();
    engine.purge().unwrap();
    assert_eq!(engine.storage_counts("emptied").unwrap(), (1, vec![1]));
}

/// A `TableHandle` resolved before DDL: after TRUNCATE it reads the new, empty trees; after
/// CREATE INDEX its writes maintain the new index; after DROP TABLE every use fails with
/// 42P01 as a lookup by name does, also once another table has taken the name.
#[test]
fn table_handles_follow_truncate_and_index_ddl_and_fail_after_drop() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    table(&engine, "held", vec![]);
    let handle = engine.table_handle("held").unwrap();
    assert_eq!(handle.name(), "held");
    assert_eq!(engine.table_handle("missing").unwrap_err().sqlstate(), "42P01");
    let mut setup = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..20 {
        setup.insert(&handle, row(id, 1, None)).unwrap();
    }
    setup.commit().unwrap();

    engine.truncate_table("held").unwrap();
    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let page = reader.scan_page(&handle, Bound::Unbounded, Bound::Unbounded, None, 100).unwrap();
    assert!(page.is_empty(), "the handle reads the truncated table's fresh tree");
    assert_eq!(reader.get(&handle, &[Value::Int(3)]).unwrap(), None);
    reader.commit().unwrap();

    engine.create_index("held", index("held_grp", vec![1], false)).unwrap();
    let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    writer.insert(&handle, row(1, 5, None)).unwrap();
    writer.commit().unwrap();
    assert_index_matches_table(&engine, "held", "held_grp");
    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let through_index = reader
        .index_scan_page(&handle, "held_grp", Bound::Unbounded, Bound::Unbounded, None, 100)
        .unwrap();
    assert_eq!(through_index.len(), 1);
    reader.commit().unwrap();

    engine.drop_table("held").unwrap();
    table(&engine, "held", vec![]);
    let mut user = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let scan = user.scan_page(&handle, Bound::Unbounded, Bound::Unbounded, None, 100);
    assert_eq!(scan.unwrap_err().sqlstate(), "42P01");
    let mut user = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(user.insert(&handle, row(2, 1, None)).unwrap_err().sqlstate(), "42P01");
    let mut user = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let lookup = user.get_keyed(&handle, &[Value::Int(1)]);
    assert_eq!(lookup.unwrap_err().sqlstate(), "42P01");
    // The new table under the name is untouched, and a fresh handle reaches it.
    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let fresh = reader.table("held").unwrap();
    assert!(reader
        .scan_page(&fresh, Bound::Unbounded, Bound::Unbounded, None, 100)
        .unwrap()
        .is_empty());
    reader.commit().unwrap();
}

#[test]
fn ddl_survives_a_crash() {
    let directory = tempfile::tempdir().unwrap();
    {
        let (store, engine) = open(directory.path());
        table(&engine, "kept", vec![]);
        table(&engine, "dropped", vec![]);
        table(&engine, "truncated", vec![index("truncated_grp", vec![1], false)]);
        engine
            .create_table(TableDef {
                name: "nokey".into(),
                columns: vec![int_column("grp")],
                primary_key: None,
                indexes: vec![],
            })
            .unwrap();
        let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        for id in 0..300 {
            txn.insert("kept", row(id, id % 7, None)).unwrap();
            txn.insert("dropped", row(id, 0, None)).unwrap();
            txn.insert("truncated", row(id, 0, None)).unwrap();
            txn.insert("nokey", vec![Value::Int(id % 3)]).unwrap();
        }
        txn.commit().unwrap();
        engine.create_index("kept", index("kept_grp", vec![1], false)).unwrap();
        engine.create_index("kept", index("kept_scratch", vec![2], false)).unwrap();
        engine.drop_index("kept", "kept_scratch").unwrap();
        assert_eq!(engine.drop_index("kept", "kept_scratch").unwrap_err().sqlstate(), "42P01");
        engine.create_index("nokey", index("nokey_grp", vec![0], false)).unwrap();
        engine.drop_table("dropped").unwrap();
        engine.truncate_table("truncated").unwrap();
        crash(store, engine);
    }
    let (_store, engine) = open(directory.path());
    assert_eq!(engine.table_names(), ["kept", "nokey", "truncated"]);
    let names = |table: &str| -> Vec<String> {
        engine.table_def(table).unwrap().indexes.into_iter().map(|index| index.name).collect()
    };
    assert_eq!(names("kept"), ["kept_grp"]);
    assert_eq!(names("truncated"), ["truncated_grp"]);
    assert_eq!(engine.table_def("dropped").unwrap_err().sqlstate(), "42P01");
    assert_index_matches_table(&engine, "kept", "kept_grp");
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(by_group(&mut txn, "kept", "kept_grp", 3).len(), 43);
    assert!(txn.scan("truncated", Bound::Unbounded, Bound::Unbounded).unwrap().is_empty());
    assert_eq!(txn.get("dropped", &[Value::Int(1)]).unwrap_err().sqlstate(), "42P01");
    txn.rollback().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let two: &[Value] = &[Value::Int(2)];
    let found = txn.index_scan("nokey", "nokey_grp", Bound::Included(two), Bound::Included(two));
    assert_eq!(found.unwrap().len(), 100);
    // Hidden row ids continue above the stored ones after the reopen.
    txn.insert("nokey", vec![Value::Int(2)]).unwrap();
    let rows = txn.scan_page("nokey", Bound::Unbounded, Bound::Unbounded, None, 1000).unwrap();
    assert_eq!(rows.len(), 301);
    txn.insert("truncated", row(5, 0, None)).unwrap();
    assert_eq!(ids(&by_group(&mut txn, "truncated", "truncated_grp", 0)), [5]);
    txn.commit().unwrap();
    table(&engine, "dropped", vec![]);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(txn.scan("dropped", Bound::Unbounded, Bound::Unbounded).unwrap().is_empty());
    txn.commit().unwrap();
}

/// Small enough that a few thousand rows spill several runs.
const SPILLING_MEMORY_BYTES: usize = 64 * 1024;
const INDEX_BUILD_ROWS: i64 = 20_000;

/// `items(id primary key, grp, email text)` with `INDEX_BUILD_ROWS` rows: old versions
/// (every 10th row moved group), deleted rows (every 13th) and NULL emails (every 7th).
fn populate_items(engine: &Engine) {
    table(engine, "items", vec![]);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..INDEX_BUILD_ROWS {
        let label = format!("label-{id}");
        txn.insert("items", row(id, id % 101, (id % 7 != 0).then_some(label.as_str()))).unwrap();
    }
    txn.commit().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in (0..INDEX_BUILD_ROWS).step_by(10) {
        txn.update("items", &[Value::Int(id)], &mut |row| {
            Some(vec![row[0].clone(), Value::Int(1000 + id % 3), row[2].clone()])
        })
        .unwrap();
    }
    for id in (0..INDEX_BUILD_ROWS).step_by(13) {
        txn.delete("items", &[Value::Int(id)]).unwrap();
    }
    txn.commit().unwrap();
}

fn spilling() -> IndexBuildOptions {
    IndexBuildOptions { memory_bytes: SPILLING_MEMORY_BYTES, pid: 7, ..Default::default() }
}

/// Every row through the index, in index order.
fn through_index(engine: &Engine, name: &str) -> Vec<Vec<Value>> {
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let rows = txn.index_scan("items", name, Bound::Unbounded, Bound::Unbounded).unwrap();
    txn.commit().unwrap();
    rows
}

#[test]
fn a_spilling_build_equals_an_in_memory_build() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    populate_items(&engine);
    let files_before = store.temp_space().stats().files_created;
    engine.create_index("items", index("items_grp_memory", vec![1], false)).unwrap();
    assert_eq!(store.temp_space().stats().files_created, files_before, "fits in memory");
    engine
        .create_index_with("items", index("items_grp_spilled", vec![1], false), &spilling())
        .unwrap();
    let spilled = store.temp_space().stats();
    assert!(spilled.files_created > files_before, "the build spilled runs");
    assert_eq!(spilled.files_open, 0, "runs are removed when the build ends");
    assert_eq!(spilled.bytes_in_use, 0);
    assert!(engine.index_build_progress().is_empty(), "progress ends with the build");

    let in_memory = through_index(&engine, "items_grp_memory");
    assert_eq!(through_index(&engine, "items_grp_spilled"), in_memory);
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    let mut table = txn.scan("items", Bound::Unbounded, Bound::Unbounded).unwrap();
    txn.commit().unwrap();
    let group = |row: &Vec<Value>| match (&row[1], &row[0]) {
        (Value::Int(group), Value::Int(id)) => (*group, *id),
        other => panic!("unexpected row {other:?}"),
    };
    table.sort_by_key(group);
    assert_eq!(in_memory, table, "the index holds every live row once, in (grp, id) order");
    let deleted = usize::try_from((INDEX_BUILD_ROWS + 12) / 13).unwrap();
    assert_eq!(in_memory.len(), usize::try_from(INDEX_BUILD_ROWS).unwrap() - deleted);

    // A spilled unique build on a column without live duplicates (NULLs and deleted rows
    // aside) succeeds and matches too.
    engine.create_index_with("items", index("items_email", vec![2], true), &spilling()).unwrap();
    let mut labels = through_index(&engine, "items_email");
    labels.sort_by_key(group);
    assert_eq!(labels, table);
}

#[test]
fn a_spilling_unique_build_refuses_duplicates_and_leaves_no_index() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    populate_items(&engine);
    let error = engine
        .create_index_with("items", index("items_grp_key", vec![1], true), &spilling())
        .unwrap_err();
    assert_eq!(error.sqlstate(), "23505");
    assert!(error.to_string().contains("items_grp_key"), "{error}");
    assert!(engine.table_def("items").unwrap().indexes.is_empty());
    assert!(engine.index_build_progress().is_empty(), "a failed build leaves no progress");
    assert_eq!(store.temp_space().stats().files_open, 0);

    // One duplicate pair among 20,000 distinct values: the last row takes the first row's
    // label (row 1; row 0 was deleted), found across the sorted runs.
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.update("items", &[Value::Int(INDEX_BUILD_ROWS - 1)], &mut |row| {
        Some(vec![row[0].clone(), row[1].clone(), Value::Text("label-1".into())])
    })
    .unwrap();
    txn.commit().unwrap();
    let error = engine
        .create_index_with("items", index("items_email", vec![2], true), &spilling())
        .unwrap_err();
    assert_eq!(error.sqlstate(), "23505");
    assert!(engine.table_def("items").unwrap().indexes.is_empty());
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(txn.delete("items", &[Value::Int(1)]).unwrap());
    txn.commit().unwrap();
    engine.create_index_with("items", index("items_email", vec![2], true), &spilling()).unwrap();
}
