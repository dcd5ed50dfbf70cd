//! Pages of dropped and truncated trees go back to the page store (engine/graveyard.rs):
//! DROP TABLE, TRUNCATE and DROP INDEX leave the store's live pages where they were before
//! the table was filled, readers racing the DDL never read a freed page, and a drop cut by a
//! crash is finished after recovery.

use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tierdb_engine::{ColumnDef, Engine, IndexDef, IsolationLevel, KeyKind, TableDef, Value};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> (Arc<PageStore>, Arc<Engine>) {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 512 * 8192;
    let store = Arc::new(PageStore::open(config).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

/// `name(id primary key, body text)` with an index on `body`, holding `rows` rows of about
/// 300 bytes.
fn filled_table(engine: &Engine, name: &str, rows: i64) {
    let column = |name: &str, kind| ColumnDef { name: name.into(), kind, nullable: true };
    engine
        .create_table(TableDef {
            name: name.into(),
            columns: vec![column("id", KeyKind::Int), column("body", KeyKind::Text)],
            primary_key: Some(vec![0]),
            indexes: vec![IndexDef {
                name: format!("{name}_body"),
                columns: vec![1],
                unique: false,
            }],
        })
        .unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..rows {
        let body = format!("{id:08}-{}", "x".repeat(290));
        txn.insert(name, vec![Value::Int(id), Value::Text(body)]).unwrap();
    }
    txn.commit().unwrap();
}

/// Frees everything dropped that nobody holds, then the store's live pages once written.
fn live_pages_after_reclaim(store: &PageStore, engine: &Engine) -> u64 {
    engine.purge().unwrap();
    reclaim_all(engine);
    store.flush_all().unwrap();
    store.checkpoint().unwrap();
    store.space_usage().live_pages
}

/// Reclaims until no dropped tree is pending; fails if one stays held (nothing in these
/// tests holds one for long).
fn reclaim_all(engine: &Engine) {
    for _ in 0..500 {
        if engine.dropped_trees_pending() == 0 {
            return;
        }
        engine.reclaim_dropped_pages().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("{} dropped trees are still held", engine.dropped_trees_pending());
}

/// Pages the catalog's own entries may move by (a rewritten catalog leaf, a split).
const CATALOG_SLACK_PAGES: u64 = 4;

fn assert_near(live: u64, expected: u64, what: &str) {
    assert!(
        live.abs_diff(expected) <= CATALOG_SLACK_PAGES,
        "{what}: {live} live pages, expected about {expected}"
    );
}

#[test]
fn drop_table_truncate_and_drop_index_give_their_pages_back() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    filled_table(&engine, "kept", 500);
    let baseline = live_pages_after_reclaim(&store, &engine);

    filled_table(&engine, "dropped", 5_000);
    let pages = engine.table_handle("dropped").unwrap().relation_pages().unwrap();
    let table_pages = pages.table.unwrap() + pages.indexes[0].1.unwrap();
    assert!(table_pages > 300, "too small to tell: {table_pages} pages");
    assert_near(live_pages_after_reclaim(&store, &engine), baseline + table_pages, "filled");
    // A handle resolved before the drop and kept after it (as a prepared statement's plan
    // keeps one) does not hold the dropped trees.
    let held = engine.table_handle("dropped").unwrap();
    engine.drop_table("dropped").unwrap();
    assert_near(live_pages_after_reclaim(&store, &engine), baseline, "after DROP TABLE");
    assert_eq!(held.relation_pages().unwrap_err().sqlstate(), "42P01");

    filled_table(&engine, "emptied", 5_000);
    engine.truncate_table("emptied").unwrap();
    // The fresh trees of the truncated table: a meta, an anchor and a root page each.
    assert_near(live_pages_after_reclaim(&store, &engine), baseline + 6, "after TRUNCATE");

    filled_table(&engine, "indexed", 3_000);
    let with_index = live_pages_after_reclaim(&store, &engine);
    let index_pages =
        engine.table_handle("indexed").unwrap().relation_pages().unwrap().indexes[0].1.unwrap();
    engine.drop_index("indexed", "indexed_body").unwrap();
    assert_near(
        live_pages_after_reclaim(&store, &engine),
        with_index - index_pages,
        "after DROP INDEX",
    );

    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(reader.scan("kept", Bound::Unbounded, Bound::Unbounded).unwrap().len(), 500);
    assert_eq!(reader.scan("indexed", Bound::Unbounded, Bound::Unbounded).unwrap().len(), 3_000);
    reader.commit().unwrap();
    assert_eq!(engine.storage_counts("kept").unwrap(), (500, vec![500]));
}

/// Readers scanning page by page while the table is truncated again and again, with the
/// dropped trees reclaimed as fast as possible: a reader sees rows or an empty table, never
/// a freed page.
#[test]
fn readers_racing_truncate_never_read_a_freed_page() {
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    filled_table(&engine, "churn", 2_000);
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (engine, stop) = (Arc::clone(&engine), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut pages_read = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                    let mut after: Option<Vec<u8>> = None;
                    loop {
                        let page = txn
                            .scan_page(
                                "churn",
                                Bound::Unbounded,
                                Bound::Unbounded,
                                after.as_deref(),
                                64,
                            )
                            .expect("a scan racing TRUNCATE reads rows, never a freed page");
                        pages_read += 1;
                        match page.last() {
                            Some((key, _)) => after = Some(key.clone()),
                            None => break,
                        }
                    }
                    txn.commit().unwrap();
                }
                pages_read
            })
        })
        .collect();
    for round in 0..30 {
        engine.truncate_table("churn").unwrap();
        let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
        for id in 0..300 {
            txn.insert("churn", vec![Value::Int(id), Value::Text(format!("{round}-{id}"))])
                .unwrap();
        }
        txn.commit().unwrap();
        engine.reclaim_dropped_pages().unwrap();
    }
    stop.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.join().unwrap() > 0, "a reader read nothing");
    }
    reclaim_all(&engine);
}

/// A table dropped just before a crash: whether the purge thread freed its pages before the
/// crash or not, after recovery they are free and the other table is whole.
#[test]
fn a_drop_cut_by_a_crash_is_finished_after_recovery() {
    let directory = tempfile::tempdir().unwrap();
    let baseline = {
        let (store, engine) = open(directory.path());
        filled_table(&engine, "kept", 300);
        let baseline = live_pages_after_reclaim(&store, &engine);
        filled_table(&engine, "dropped", 4_000);
        store.flush_all().unwrap();
        engine.drop_table("dropped").unwrap();
        drop(engine);
        Arc::try_unwrap(store).ok().expect("sole owner").abandon();
        baseline
    };
    let (store, engine) = open(directory.path());
    assert_eq!(engine.table_names(), ["kept"]);
    assert_near(live_pages_after_reclaim(&store, &engine), baseline, "after recovery");
    assert_eq!(engine.storage_counts("kept").unwrap(), (300, vec![300]));
}

/// A temp table dropped while its session keeps another: its pages are freed in the
/// session's store (which stays open), the other temp table is whole.
#[test]
fn a_dropped_temp_table_gives_its_pages_back_to_the_session_store() {
    use tierdb_engine::TempOwner;
    let directory = tempfile::tempdir().unwrap();
    let (_store, engine) = open(directory.path());
    let owner = || TempOwner::with_buffers(7, 128);
    let def = |name: &str| TableDef {
        name: name.into(),
        columns: vec![
            ColumnDef { name: "id".into(), kind: KeyKind::Int, nullable: false },
            ColumnDef { name: "body".into(), kind: KeyKind::Text, nullable: true },
        ],
        primary_key: Some(vec![0]),
        indexes: vec![],
    };
    engine.create_temp_table(def("pg_temp_7.kept"), owner()).unwrap();
    engine.create_temp_table(def("pg_temp_7.dropped"), owner()).unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..3_000 {
        txn.insert("pg_temp_7.dropped", vec![Value::Int(id), Value::Text("y".repeat(300))])
            .unwrap();
    }
    txn.insert("pg_temp_7.kept", vec![Value::Int(1), Value::Text("k".into())]).unwrap();
    txn.commit().unwrap();
    let temp_store = engine.temp_table_store(7).expect("the session's store is open");
    temp_store.flush_all().unwrap();
    let filled = temp_store.space_usage().live_pages;
    assert!(filled > 100, "{filled} live pages");
    engine.drop_table("pg_temp_7.dropped").unwrap();
    engine.purge().unwrap();
    reclaim_all(&engine);
    temp_store.flush_all().unwrap();
    // The kept table's three pages (meta, anchor, root leaf) are what is left.
    assert!(temp_store.space_usage().live_pages <= 3, "{:?}", temp_store.space_usage());
    let mut reader = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(reader.scan("pg_temp_7.kept", Bound::Unbounded, Bound::Unbounded).unwrap().len(), 1);
    reader.commit().unwrap();
}
