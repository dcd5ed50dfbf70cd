//! Keyed, paged reads (`scan_page`, `scan_page_ordered`, `index_scan_page`, `get_keyed`),
//! writes addressed by row key on tables with and without a primary key, and statement mode
//! (`begin_statement`, `fail`): statement atomicity, the statement snapshot, savepoints.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use tierdb_engine::{
    ColumnDef, Direction, Engine, IndexDef, IsolationLevel, KeyKind, RowKey, TableDef, Value,
};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> Arc<Engine> {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 256 * 8192;
    Engine::open(Arc::new(PageStore::open(config).unwrap())).unwrap()
}

fn int_column(name: &str) -> ColumnDef {
    ColumnDef { name: name.into(), kind: KeyKind::Int, nullable: true }
}

/// `items(id primary key, value)`, with a non-unique index on value.
fn items(engine: &Engine) {
    engine
        .create_table(TableDef {
            name: "items".into(),
            columns: vec![int_column("id"), int_column("value")],
            primary_key: Some(vec![0]),
            indexes: vec![IndexDef { name: "items_value".into(), columns: vec![1], unique: false }],
        })
        .unwrap();
}

/// `log(value, note)` without a primary key (hidden row ids), indexed on value.
fn log(engine: &Engine) {
    engine
        .create_table(TableDef {
            name: "log".into(),
            columns: vec![
                int_column("value"),
                ColumnDef { name: "note".into(), kind: KeyKind::Text, nullable: true },
            ],
            primary_key: None,
            indexes: vec![IndexDef { name: "log_value".into(), columns: vec![0], unique: false }],
        })
        .unwrap();
}

fn int(value: &Value) -> i64 {
    match value {
        Value::Int(number) => *number,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn text(note: &str) -> Value {
    Value::Text(note.into())
}

#[test]
fn pages_return_every_committed_row_exactly_once_despite_concurrent_inserts() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    items(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    // Even ids exist before the scan; a concurrent writer adds odd ones during it.
    for id in (0..4000).step_by(2) {
        txn.insert("items", vec![Value::Int(id), Value::Int(id % 10)]).unwrap();
    }
    txn.commit().unwrap();
    let writer = {
        let engine = Arc::clone(&engine);
        std::thread::spawn(move || {
            let mut id = 1;
            while id < 4000 {
                let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                for _ in 0..5 {
                    txn.insert("items", vec![Value::Int(id), Value::Int(id % 10)]).unwrap();
                    id += 2;
                }
                txn.commit().unwrap();
            }
        })
    };
    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut seen = Vec::new();
    let mut resume: Option<RowKey> = None;
    let mut pages = 0;
    loop {
        let page = reader
            .scan_page("items", Bound::Unbounded, Bound::Unbounded, resume.as_deref(), 37)
            .unwrap();
        assert!(page.len() <= 37, "a page holds at most the limit");
        let Some((last, _)) = page.last() else { break };
        resume = Some(last.clone());
        seen.extend(page.iter().map(|(_, row)| int(&row[0])));
        pages += 1;
    }
    // The writer ends on its own (all odd ids up to 4,000), so the pages below see them all.
    writer.join().unwrap();
    assert!(pages > 50, "the scan took pages={pages}");
    assert!(seen.windows(2).all(|pair| pair[0] < pair[1]), "pages are in key order, no repeat");
    let even: Vec<i64> = seen.iter().copied().filter(|id| id % 2 == 0).collect();
    assert_eq!(even, (0..4000).step_by(2).collect::<Vec<i64>>(), "a committed row was missed");

    // Backward, within bounds: ids 100..=200 descending, exactly once.
    let mut descending = Vec::new();
    let mut resume: Option<RowKey> = None;
    loop {
        let page = reader
            .scan_page_ordered(
                "items",
                Direction::Backward,
                (Bound::Included(&[Value::Int(100)]), Bound::Included(&[Value::Int(200)])),
                resume.as_deref(),
                7,
            )
            .unwrap();
        let Some((last, _)) = page.last() else { break };
        resume = Some(last.clone());
        descending.extend(page.iter().map(|(_, row)| int(&row[0])));
    }
    assert_eq!(descending, (100..=200).rev().collect::<Vec<i64>>());
    // Forward at run time is `scan_page`; backward gives the range's last rows, descending.
    let bounds: (Bound<&[Value]>, Bound<&[Value]>) =
        (Bound::Included(&[Value::Int(100)]), Bound::Excluded(&[Value::Int(130)]));
    let forward = reader.scan_page_ordered("items", Direction::Forward, bounds, None, 9).unwrap();
    assert_eq!(forward, reader.scan_page("items", bounds.0, bounds.1, None, 9).unwrap());
    let ids = |page: &[(RowKey, Vec<Value>)]| {
        page.iter().map(|(_, row)| int(&row[0])).collect::<Vec<i64>>()
    };
    assert_eq!(ids(&forward), (100..109).collect::<Vec<i64>>());
    let backward = reader.scan_page_ordered("items", Direction::Backward, bounds, None, 9).unwrap();
    assert_eq!(ids(&backward), (121..130).rev().collect::<Vec<i64>>());

    // get_keyed returns the same row key the scan did.
    let (key, row) = reader.get_keyed("items", &[Value::Int(42)]).unwrap().unwrap();
    assert_eq!(int(&row[0]), 42);
    let page = reader
        .scan_page("items", Bound::Included(&[Value::Int(42)]), Bound::Unbounded, None, 1)
        .unwrap();
    assert_eq!(page[0].0, key);
    assert!(reader.get_keyed("items", &[Value::Int(-1)]).unwrap().is_none());
    // get is get_keyed without the key.
    assert_eq!(reader.get("items", &[Value::Int(42)]).unwrap(), Some(row));
    assert!(reader.get("items", &[Value::Int(-1)]).unwrap().is_none());
    // A zero limit reads nothing.
    assert!(reader
        .scan_page("items", Bound::Unbounded, Bound::Unbounded, None, 0)
        .unwrap()
        .is_empty());
    reader.commit().unwrap();
}

#[test]
fn rows_without_primary_key_are_updated_and_deleted_by_row_key() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    log(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    // Identical rows: only the row key tells them apart.
    for value in 0..30 {
        txn.insert("log", vec![Value::Int(value % 3), text("same")]).unwrap();
    }
    txn.commit().unwrap();

    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let rows = txn.scan_page("log", Bound::Unbounded, Bound::Unbounded, None, 1000).unwrap();
    assert_eq!(rows.len(), 30);
    let keys: BTreeSet<RowKey> = rows.iter().map(|(key, _)| key.clone()).collect();
    assert_eq!(keys.len(), 30, "every row has its own key");
    // Delete the first row with value 0, and rewrite the note of every row with value 1.
    let first_zero = rows.iter().find(|(_, row)| int(&row[0]) == 0).unwrap().0.clone();
    assert!(txn.delete_by_key("log", &first_zero).unwrap());
    assert!(!txn.delete_by_key("log", &first_zero).unwrap(), "already deleted");
    let mut updated = 0;
    for (key, row) in &rows {
        if int(&row[0]) == 1 {
            let changed = txn
                .update_by_key("log", key, &mut |row| Some(vec![row[0].clone(), text("one")]))
                .unwrap();
            assert!(changed);
            updated += 1;
        }
    }
    assert_eq!(updated, 10);
    // A key that is not a row key of the table is an error, not another row.
    let error = txn.delete_by_key("log", b"garbage").unwrap_err();
    assert_eq!(error.sqlstate(), "22023");
    txn.rollback().unwrap();

    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(txn.delete_by_key("log", &first_zero).unwrap());
    for (key, row) in &rows {
        if int(&row[0]) == 1 {
            assert!(txn
                .update_by_key("log", key, &mut |row| Some(vec![row[0].clone(), text("one")]))
                .unwrap());
        }
    }
    txn.commit().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let after = txn.scan("log", Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(after.len(), 29);
    assert_eq!(after.iter().filter(|row| int(&row[0]) == 0).count(), 9);
    for row in &after {
        let expected = if int(&row[0]) == 1 { "one" } else { "same" };
        assert_eq!(row[1], text(expected));
    }
    // Through the index, paged: the ten value-1 rows, each once, with their row keys.
    let mut found = Vec::new();
    let mut resume: Option<Vec<u8>> = None;
    loop {
        let page = txn
            .index_scan_page(
                "log",
                "log_value",
                Bound::Included(&[Value::Int(1)]),
                Bound::Included(&[Value::Int(1)]),
                resume.as_deref(),
                3,
            )
            .unwrap();
        let Some((entry, _, _)) = page.last() else { break };
        resume = Some(entry.clone());
        found.extend(page.into_iter().map(|(_, key, row)| (key, row)));
    }
    assert_eq!(found.len(), 10);
    let found_keys: BTreeSet<RowKey> = found.iter().map(|(key, _)| key.clone()).collect();
    let expected_keys: BTreeSet<RowKey> =
        rows.iter().filter(|(_, row)| int(&row[0]) == 1).map(|(key, _)| key.clone()).collect();
    assert_eq!(found_keys, expected_keys);
    assert!(found.iter().all(|(_, row)| row[1] == text("one")));
    txn.commit().unwrap();
}

#[test]
fn index_pages_skip_rows_whose_visible_version_moved_away() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    items(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..20 {
        txn.insert("items", vec![Value::Int(id), Value::Int(7)]).unwrap();
    }
    txn.commit().unwrap();
    let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in (0..20).step_by(2) {
        assert!(writer
            .update("items", &[Value::Int(id)], &mut |row| Some(vec![
                row[0].clone(),
                Value::Int(8)
            ]))
            .unwrap());
    }
    let in_seven = |txn: &mut tierdb_engine::Transaction| -> Vec<i64> {
        let mut ids = Vec::new();
        let mut resume: Option<Vec<u8>> = None;
        loop {
            let seven: &[Value] = &[Value::Int(7)];
            let page = txn
                .index_scan_page(
                    "items",
                    "items_value",
                    Bound::Included(seven),
                    Bound::Included(seven),
                    resume.as_deref(),
                    4,
                )
                .unwrap();
            let Some((entry, _, _)) = page.last() else { break };
            resume = Some(entry.clone());
            ids.extend(page.iter().map(|(_, _, row)| int(&row[0])));
        }
        ids
    };
    // The writer sees its own moves; others still see every row at 7 until it commits.
    assert_eq!(in_seven(&mut writer), (1..20).step_by(2).collect::<Vec<i64>>());
    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(in_seven(&mut reader), (0..20).collect::<Vec<i64>>());
    writer.commit().unwrap();
    assert_eq!(in_seven(&mut reader), (1..20).step_by(2).collect::<Vec<i64>>());
    reader.commit().unwrap();
}

#[test]
fn a_failed_statement_undoes_all_its_operations_and_savepoints_recover() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    items(&engine);
    let row = |id: i64, value: i64| vec![Value::Int(id), Value::Int(value)];
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(!txn.is_failed());
    // Statement 1 (kept).
    txn.begin_statement().unwrap();
    txn.insert("items", row(10, 0)).unwrap();
    txn.insert("items", row(20, 0)).unwrap();
    txn.savepoint("before").unwrap();
    // Statement 2: two rows and an update, then a duplicate key.
    txn.begin_statement().unwrap();
    txn.insert("items", row(11, 1)).unwrap();
    txn.insert("items", row(12, 1)).unwrap();
    assert!(txn
        .update("items", &[Value::Int(20)], &mut |row| Some(vec![row[0].clone(), Value::Int(99)]))
        .unwrap());
    // Own writes of the statement are visible within it.
    assert_eq!(txn.get("items", &[Value::Int(11)]).unwrap().unwrap(), row(11, 1));
    let error = txn.insert("items", row(10, 1)).unwrap_err();
    assert_eq!(error.sqlstate(), "23505");
    assert!(txn.is_failed());
    assert_eq!(txn.get("items", &[Value::Int(10)]).unwrap_err().sqlstate(), "25P02");
    assert_eq!(txn.begin_statement().unwrap_err().sqlstate(), "25P02");
    // The savepoint recovers; statement 2 left nothing, statement 1 stays.
    txn.rollback_to_savepoint("before").unwrap();
    assert!(!txn.is_failed());
    let rows = txn.scan("items", Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(rows, vec![row(10, 0), row(20, 0)]);

    // Statement 3 fails in the SQL layer (`fail`): its insert and update are undone, even
    // those made after a savepoint inside it.
    txn.begin_statement().unwrap();
    txn.insert("items", row(13, 3)).unwrap();
    txn.savepoint("inside").unwrap();
    assert!(txn
        .update("items", &[Value::Int(10)], &mut |row| Some(vec![row[0].clone(), Value::Int(3)]))
        .unwrap());
    txn.fail();
    assert!(txn.is_failed());
    assert_eq!(txn.insert("items", row(14, 3)).unwrap_err().sqlstate(), "25P02");
    txn.rollback_to_savepoint("inside").unwrap();
    let rows = txn.scan("items", Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(rows, vec![row(10, 0), row(20, 0)], "the failed statement left changes");
    // Nothing of the failed statements is left in the index either.
    let through_index =
        txn.index_scan("items", "items_value", Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(through_index, vec![row(10, 0), row(20, 0)]);
    txn.begin_statement().unwrap();
    txn.insert("items", row(30, 0)).unwrap();
    txn.commit().unwrap();

    let mut check = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let rows = check.scan("items", Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(rows, vec![row(10, 0), row(20, 0), row(30, 0)]);
    check.commit().unwrap();

    // A failed statement without a savepoint: COMMIT rolls everything back.
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.begin_statement().unwrap();
    txn.insert("items", row(40, 0)).unwrap();
    txn.begin_statement().unwrap();
    txn.insert("items", row(41, 0)).unwrap();
    txn.fail();
    assert_eq!(txn.commit().unwrap_err().sqlstate(), "25P02");
    let mut check = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(check.get("items", &[Value::Int(40)]).unwrap().is_none());
    check.commit().unwrap();
}

#[test]
fn statement_reads_share_a_snapshot_and_updates_see_the_latest_commit() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    items(&engine);
    let set = |value: i64| {
        let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        txn.update("items", &[Value::Int(1)], &mut |row| {
            Some(vec![row[0].clone(), Value::Int(value)])
        })
        .unwrap();
        txn.commit().unwrap();
    };
    let mut setup = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    setup.insert("items", vec![Value::Int(1), Value::Int(0)]).unwrap();
    setup.commit().unwrap();
    let value_of = |txn: &mut tierdb_engine::Transaction| {
        int(&txn.get("items", &[Value::Int(1)]).unwrap().unwrap()[1])
    };

    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.begin_statement().unwrap();
    assert_eq!(value_of(&mut txn), 0);
    set(5);
    assert_eq!(value_of(&mut txn), 0, "a read within the statement saw a later commit");
    // The update's closure gets the latest committed version (READ COMMITTED re-check).
    let mut current = -1;
    txn.update("items", &[Value::Int(1)], &mut |row| {
        current = int(&row[1]);
        Some(vec![row[0].clone(), Value::Int(current + 1)])
    })
    .unwrap();
    assert_eq!(current, 5);
    assert_eq!(value_of(&mut txn), 6, "the statement's own write is visible to it");
    txn.commit().unwrap();

    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.begin_statement().unwrap();
    assert_eq!(value_of(&mut txn), 6);
    set(7);
    assert_eq!(value_of(&mut txn), 6);
    txn.begin_statement().unwrap();
    assert_eq!(value_of(&mut txn), 7, "a new statement takes a new snapshot");
    txn.commit().unwrap();

    // REPEATABLE READ keeps its first snapshot across statements.
    let mut txn = engine.begin(IsolationLevel::RepeatableRead).unwrap();
    txn.begin_statement().unwrap();
    assert_eq!(value_of(&mut txn), 7);
    set(8);
    txn.begin_statement().unwrap();
    assert_eq!(value_of(&mut txn), 7);
    txn.commit().unwrap();
}

#[test]
fn projected_pages_return_the_asked_columns_or_empty_rows_of_visible_versions() {
    let directory = tempfile::tempdir().unwrap();
    let engine = open(directory.path());
    log(&engine);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for value in 0..40 {
        txn.insert("log", vec![Value::Int(value), text("note")]).unwrap();
    }
    txn.commit().unwrap();
    // A deleted row and an uncommitted insert are not seen by the scans below.
    let mut writer = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let rows = writer.scan_page("log", Bound::Unbounded, Bound::Unbounded, None, 1000).unwrap();
    assert!(writer.delete_by_key("log", &rows[0].0).unwrap());
    writer.commit().unwrap();
    let mut pending = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    pending.insert("log", vec![Value::Int(99), text("pending")]).unwrap();

    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let page_rows = |reader: &mut tierdb_engine::Transaction, projection, limit| {
        let mut all = Vec::new();
        let mut resume: Option<Vec<u8>> = None;
        loop {
            let page = reader
                .scan_page_projected(
                    "log",
                    Direction::Forward,
                    (Bound::Unbounded, Bound::Unbounded),
                    resume.as_deref(),
                    limit,
                    projection,
                )
                .unwrap();
            all.extend(page.rows);
            match page.resume_after {
                Some(key) => resume = Some(key),
                None => return all,
            }
        }
    };
    let first_column = [true, false];
    let decoded =
        tierdb_engine::Projection { columns: Some(&first_column), keys: false, values: true };
    let rows = page_rows(&mut reader, decoded, 7);
    assert_eq!(rows.len(), 39);
    for (index, (key, row)) in rows.iter().enumerate() {
        assert!(key.is_empty(), "keys were not asked for");
        assert_eq!(*row, vec![Value::Int(i64::try_from(index).unwrap() + 1), Value::Null]);
    }
    let nothing = [false, false];
    let counted = tierdb_engine::Projection { columns: Some(&nothing), keys: false, values: false };
    let rows = page_rows(&mut reader, counted, 7);
    assert_eq!(rows.len(), 39, "the same rows, without values");
    assert!(rows.iter().all(|(key, row)| key.is_empty() && row.is_empty()));
    pending.rollback().unwrap();
}
