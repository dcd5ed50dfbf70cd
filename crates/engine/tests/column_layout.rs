//! Column layouts (docs/design/016): `Engine::set_layout` adds and drops logical columns
//! over physical slots that are never reused. A model test runs random ADD / DROP COLUMN
//! sequences, each followed by writes in a transaction that commits or rolls back (a
//! rollback hands the committed layout back, as the SQL catalog's reconcile does), against
//! an in-memory model, and reopens the store at the end. Directed tests: a rolled-back ADD
//! COLUMN's values are never read by a later ADD COLUMN of another type; indexes follow
//! their columns; rows of the old width are refused; the layout survives close and crash;
//! bad layouts are refused.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use tierdb_common::SplitMix64;
use tierdb_engine::{ColumnDef, Engine, IndexDef, IsolationLevel, KeyKind, TableDef, Value};
use tierdb_storage::{PageStore, StoreConfig};

fn open(directory: &Path) -> (Arc<PageStore>, Arc<Engine>) {
    let mut config = StoreConfig::local(directory).unwrap();
    config.buffer_pool_bytes = 512 * 8192;
    let store = Arc::new(PageStore::open(config).unwrap());
    let engine = Engine::open(Arc::clone(&store)).unwrap();
    (store, engine)
}

fn close(store: Arc<PageStore>, engine: Arc<Engine>) {
    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").close().unwrap();
}

fn crash(store: Arc<PageStore>, engine: Arc<Engine>) {
    drop(engine);
    Arc::try_unwrap(store).ok().expect("sole owner").abandon();
}

fn column(name: &str, kind: KeyKind) -> ColumnDef {
    ColumnDef { name: name.into(), kind, nullable: true }
}

/// `t(id int primary key, a int, b text)`.
fn create(engine: &Engine, indexes: Vec<IndexDef>) {
    let columns =
        vec![column("id", KeyKind::Int), column("a", KeyKind::Int), column("b", KeyKind::Text)];
    let def = TableDef { name: "t".into(), columns, primary_key: Some(vec![0]), indexes };
    engine.create_table(def).unwrap();
}

fn scan(engine: &Engine) -> Vec<Vec<Value>> {
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let rows = txn.scan("t", Bound::Unbounded, Bound::Unbounded).unwrap();
    txn.commit().unwrap();
    rows
}

/// The committed state the engine must show: the columns (with their slots and missing
/// values) and the rows by id.
#[derive(Clone)]
struct Model {
    columns: Vec<ColumnDef>,
    slots: Vec<usize>,
    missing: Vec<Value>,
    slot_count: usize,
    rows: BTreeMap<i64, Vec<Value>>,
}

impl Model {
    fn install(&self, engine: &Engine) {
        engine
            .set_layout("t", self.columns.clone(), self.slots.clone(), self.missing.clone())
            .unwrap();
        let (slots, missing, slot_count) = engine.table_layout("t").unwrap();
        assert_eq!((slots, missing), (self.slots.clone(), self.missing.clone()));
        assert_eq!(slot_count, self.slot_count, "slots are never given back");
    }

    fn check(&self, engine: &Engine) {
        let expected: Vec<Vec<Value>> = self.rows.values().cloned().collect();
        assert_eq!(scan(engine), expected);
        assert_eq!(engine.table_def("t").unwrap().columns, self.columns);
    }

    fn value(&self, random: &mut SplitMix64, column: usize) -> Value {
        if random.below(4) == 0 {
            return Value::Null;
        }
        let number = i64::try_from(random.below(1000)).unwrap();
        match self.columns[column].kind {
            KeyKind::Int => Value::Int(number),
            _ => Value::Text(format!("v{number}")),
        }
    }

    fn random_row(&self, random: &mut SplitMix64, id: i64) -> Vec<Value> {
        let mut row = vec![Value::Int(id)];
        row.extend((1..self.columns.len()).map(|column| self.value(random, column)));
        row
    }

    /// One change of columns: ADD (Int or Text, with or without a missing value) or DROP
    /// of a column other than the key.
    fn changed(&self, random: &mut SplitMix64, step: usize) -> Model {
        let mut next = self.clone();
        if self.columns.len() > 1 && random.below(3) == 0 {
            let position =
                1 + usize::try_from(random.next_u64()).unwrap() % (self.columns.len() - 1);
            next.columns.remove(position);
            next.slots.remove(position);
            next.missing.remove(position);
            for row in next.rows.values_mut() {
                row.remove(position);
            }
            return next;
        }
        let (kind, filler) = if random.below(2) == 0 {
            (KeyKind::Int, Value::Int(i64::try_from(step).unwrap()))
        } else {
            (KeyKind::Text, Value::Text(format!("missing{step}")))
        };
        let missing = if random.below(2) == 0 { Value::Null } else { filler };
        next.columns.push(column(&format!("c{step}"), kind));
        next.slots.push(self.slot_count);
        next.missing.push(missing.clone());
        next.slot_count += 1;
        for row in next.rows.values_mut() {
            row.push(missing.clone());
        }
        next
    }
}

/// Writes in one transaction of `engine` (under `next`'s layout): inserts, updates of
/// every column but the key, deletes. Returns the rows as the transaction leaves them.
fn write(engine: &Engine, next: &Model, random: &mut SplitMix64, ids: &mut i64) -> Model {
    let mut after = next.clone();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for _ in 0..random.below(6) {
        *ids += 1;
        let row = next.random_row(random, *ids);
        txn.insert("t", row.clone()).unwrap();
        after.rows.insert(*ids, row);
    }
    let keys: Vec<i64> = after.rows.keys().copied().collect();
    for &id in &keys {
        match random.below(5) {
            0 => {
                let row = next.random_row(random, id);
                let mut change = |_: &Vec<Value>| Some(row.clone());
                assert!(txn.update("t", &[Value::Int(id)], &mut change).unwrap());
                after.rows.insert(id, row);
            }
            1 => {
                assert!(txn.delete("t", &[Value::Int(id)]).unwrap());
                after.rows.remove(&id);
            }
            _ => {}
        }
    }
    let seen = txn.scan("t", Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(seen, after.rows.values().cloned().collect::<Vec<_>>(), "own writes");
    txn.commit().unwrap();
    after
}

#[test]
fn random_add_drop_rollback_sequences_match_the_model() {
    for seed in 0..6 {
        let directory = tempfile::tempdir().unwrap();
        let (store, engine) = open(directory.path());
        create(&engine, Vec::new());
        let columns = engine.table_def("t").unwrap().columns;
        let mut model = Model {
            columns,
            slots: vec![0, 1, 2],
            missing: vec![Value::Null; 3],
            slot_count: 3,
            rows: BTreeMap::new(),
        };
        let mut random = SplitMix64::new(seed);
        let mut ids = 0;
        model = write(&engine, &model, &mut random, &mut ids);
        for step in 0..30 {
            let next = model.changed(&mut random, step);
            next.install(&engine);
            next.check(&engine);
            let mut slot_count = next.slot_count;
            if random.below(3) == 0 {
                // The transaction that changed the columns rolls back: its rows go (a
                // scratch engine transaction stands for it), the committed layout returns
                // and the slot it made stays taken.
                let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
                ids += 1;
                txn.insert("t", next.random_row(&mut random, ids)).unwrap();
                txn.rollback().unwrap();
                model.slot_count = slot_count;
                model.install(&engine);
            } else {
                model = write(&engine, &next, &mut random, &mut ids);
                slot_count = model.slot_count;
            }
            assert_eq!(model.slot_count, slot_count);
            model.check(&engine);
        }
        close(store, engine);
        let (store, engine) = open(directory.path());
        model.check(&engine);
        assert_eq!(engine.table_layout("t").unwrap().2, model.slot_count, "seed={seed}");
        close(store, engine);
    }
}

#[test]
fn a_rolled_back_add_column_never_lends_its_values_to_a_later_one() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    create(&engine, Vec::new());
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("t", vec![Value::Int(1), Value::Int(10), Value::Text("x".into())]).unwrap();
    txn.commit().unwrap();
    let mut columns = engine.table_def("t").unwrap().columns;
    let committed = columns.clone();

    // ADD COLUMN c text, rows written with it, rolled back.
    columns.push(column("c", KeyKind::Text));
    engine.set_layout("t", columns.clone(), vec![0, 1, 2, 3], vec![Value::Null; 4]).unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert("t", vec![Value::Int(2), Value::Null, Value::Null, Value::Text("aborted".into())])
        .unwrap();
    let mut change = |row: &Vec<Value>| {
        let mut row = row.clone();
        row[3] = Value::Text("aborted too".into());
        Some(row)
    };
    assert!(txn.update("t", &[Value::Int(1)], &mut change).unwrap());
    // Another transaction commits a row under the new layout before the rollback.
    let mut other = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    other
        .insert("t", vec![Value::Int(3), Value::Null, Value::Null, Value::Text("kept".into())])
        .unwrap();
    other.commit().unwrap();
    txn.rollback().unwrap();
    engine.set_layout("t", committed.clone(), vec![0, 1, 2], vec![Value::Null; 3]).unwrap();
    assert_eq!(engine.table_layout("t").unwrap().2, 4, "slot 3 stays taken");

    // ADD COLUMN c int DEFAULT 7: a new slot, never slot 3.
    let mut columns = committed;
    columns.push(column("c", KeyKind::Int));
    let refused = engine
        .set_layout("t", columns.clone(), vec![0, 1, 2, 3], vec![Value::Null; 4])
        .unwrap_err();
    assert_eq!(refused.sqlstate(), "22023", "slot 3 is a text slot: {refused}");
    let missing = vec![Value::Null, Value::Null, Value::Null, Value::Int(7)];
    engine.set_layout("t", columns, vec![0, 1, 2, 4], missing).unwrap();
    let rows = scan(&engine);
    assert_eq!(
        rows,
        vec![
            vec![Value::Int(1), Value::Int(10), Value::Text("x".into()), Value::Int(7)],
            vec![Value::Int(3), Value::Null, Value::Null, Value::Int(7)],
        ],
        "rows stored before slot 4 existed read its missing value, never slot 3's text"
    );
    crash(store, engine);
    let (store, engine) = open(directory.path());
    assert_eq!(scan(&engine), rows, "set_layout is durable when it returns");
    close(store, engine);
}

#[test]
fn indexes_follow_their_columns_and_old_rows_are_refused() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    create(&engine, vec![IndexDef { name: "t_b".into(), columns: vec![2], unique: true }]);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    for id in 0..20 {
        let row = vec![Value::Int(id), Value::Int(id * 10), Value::Text(format!("b{id}"))];
        txn.insert("t", row).unwrap();
    }
    txn.commit().unwrap();
    let columns = engine.table_def("t").unwrap().columns;

    // An index on a column that goes must be dropped first, and the key stays.
    let without_b = vec![columns[0].clone(), columns[1].clone()];
    let refused = engine.set_layout("t", without_b, vec![0, 1], vec![Value::Null; 2]).unwrap_err();
    assert_eq!(refused.sqlstate(), "22023", "{refused}");
    let without_id = vec![columns[1].clone(), columns[2].clone()];
    let refused = engine.set_layout("t", without_id, vec![1, 2], vec![Value::Null; 2]).unwrap_err();
    assert_eq!(refused.sqlstate(), "22023", "{refused}");

    // DROP COLUMN a: the index on b moves from position 2 to 1 and still finds rows.
    let without_a = vec![columns[0].clone(), columns[2].clone()];
    engine.set_layout("t", without_a, vec![0, 2], vec![Value::Null; 2]).unwrap();
    assert_eq!(engine.table_def("t").unwrap().indexes[0].columns, vec![1]);
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let key = [Value::Text("b7".into())];
    let found = txn.index_scan("t", "t_b", Bound::Included(&key), Bound::Included(&key)).unwrap();
    assert_eq!(found, vec![vec![Value::Int(7), Value::Text("b7".into())]]);
    let old_width = vec![Value::Int(100), Value::Int(1), Value::Text("new".into())];
    let refused = txn.insert("t", old_width).unwrap_err();
    assert_eq!(refused.sqlstate(), "22023", "a row of the old width: {refused}");
    txn.rollback().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let duplicate = txn.insert("t", vec![Value::Int(100), Value::Text("b7".into())]).unwrap_err();
    assert_eq!(duplicate.sqlstate(), "23505", "the unique index still checks: {duplicate}");
    txn.rollback().unwrap();
    close(store, engine);
    let (store, engine) = open(directory.path());
    assert_eq!(engine.table_def("t").unwrap().indexes[0].columns, vec![1]);
    assert_eq!(scan(&engine)[3], vec![Value::Int(3), Value::Text("b3".into())]);
    close(store, engine);
}

#[test]
fn bad_layouts_are_refused_and_a_plain_table_is_unchanged() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    create(&engine, Vec::new());
    let columns = engine.table_def("t").unwrap().columns;
    let cases: Vec<(Vec<usize>, Vec<Value>)> = vec![
        (vec![0, 1], vec![Value::Null; 3]),
        (vec![0, 1, 1], vec![Value::Null; 3]),
        (vec![0, 1, 4], vec![Value::Null; 3]),
        (vec![0, 2, 1], vec![Value::Null; 3]),
        (vec![0, 1, 2], vec![Value::Null, Value::Null, Value::Int(1)]),
    ];
    for (slots, missing) in cases {
        let refused = engine.set_layout("t", columns.clone(), slots.clone(), missing).unwrap_err();
        assert_eq!(refused.sqlstate(), "22023", "slots={slots:?}: {refused}");
    }
    let mut with_c = columns.clone();
    with_c.push(column("c", KeyKind::Int));
    let wrong_kind = vec![Value::Null, Value::Null, Value::Null, Value::Text("x".into())];
    let refused = engine.set_layout("t", with_c, vec![0, 1, 2, 3], wrong_kind).unwrap_err();
    assert_eq!(refused.sqlstate(), "22023", "a missing value of another kind: {refused}");
    assert_eq!(engine.table_layout("t").unwrap(), (vec![0, 1, 2], vec![Value::Null; 3], 3));
    engine.set_layout("t", columns, vec![0, 1, 2], vec![Value::Null; 3]).unwrap();
    assert_eq!(engine.table_layout("t").unwrap().2, 3, "no change, no new slot");
    close(store, engine);
}

#[test]
fn a_pinned_handle_fails_once_the_columns_change() {
    let directory = tempfile::tempdir().unwrap();
    let (store, engine) = open(directory.path());
    create(&engine, Vec::new());
    let pinned = engine.table_handle("t").unwrap().pinned().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    txn.insert(&pinned, vec![Value::Int(1), Value::Int(10), Value::Text("x".into())]).unwrap();
    txn.commit().unwrap();
    // Index DDL keeps the columns: the pinned handle still works.
    engine
        .create_index("t", IndexDef { name: "t_a".into(), columns: vec![1], unique: false })
        .unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(txn.scan(&pinned, Bound::Unbounded, Bound::Unbounded).unwrap().len(), 1);
    txn.commit().unwrap();
    // DROP COLUMN b then ADD COLUMN c text: the same width, other columns.
    let columns = engine.table_def("t").unwrap().columns;
    let mut changed = vec![columns[0].clone(), columns[1].clone()];
    engine.set_layout("t", changed.clone(), vec![0, 1], vec![Value::Null; 2]).unwrap();
    changed.push(column("c", KeyKind::Text));
    engine.set_layout("t", changed, vec![0, 1, 3], vec![Value::Null; 3]).unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let row = vec![Value::Int(2), Value::Int(20), Value::Text("meant for b".into())];
    let refused = txn.insert(&pinned, row).unwrap_err();
    assert_eq!(refused.sqlstate(), "22023", "a row planned for b is not stored in c: {refused}");
    txn.rollback().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let refused = txn.scan(&pinned, Bound::Unbounded, Bound::Unbounded).unwrap_err();
    assert_eq!(refused.sqlstate(), "22023", "{refused}");
    txn.rollback().unwrap();
    let repinned = engine.table_handle("t").unwrap().pinned().unwrap();
    let mut txn = engine.begin(IsolationLevel::ReadCommitted).unwrap();
    let rows = txn.scan(&repinned, Bound::Unbounded, Bound::Unbounded).unwrap();
    assert_eq!(rows, vec![vec![Value::Int(1), Value::Int(10), Value::Null]]);
    txn.commit().unwrap();
    drop((pinned, repinned));
    close(store, engine);
}
