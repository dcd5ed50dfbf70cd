//! The engine: a catalog of tables on one page store, and transactions over them.
//!
//! Tables are clustered on their primary key (or on a hidden 64-bit row id): one B+tree per
//! table maps the encoded key to every version of the row (see `row.rs`). Writers serialize
//! per row through the row's newest version: a version whose `xmax` (or, for a new row,
//! `xmin`) names a transaction in progress is that transaction's row lock. A short striped
//! mutex makes each read-check-write of one key atomic; waits happen outside it.
//!
//! Rollback and savepoints restore before-images kept in memory per transaction (the
//! transaction holds every row it changed, so nobody else changed them meanwhile). After a
//! crash there is no in-memory undo: the dead transaction counts as aborted (see txn.rs),
//! which makes its versions invisible, and pruning removes them.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard, RwLock};
use tierdb_access::{encode_key, BTree, Direction, KeyColumn, KeyKind};
use tierdb_common::{PageId, PageType};
use tierdb_storage::PageStore;

use crate::error::{EngineError, Result};
use crate::locks::{HeldLock, LockMode, StripeLocks, WaitLimits};
use crate::row::{
    decode_row, decode_versions, encode_row, encode_versions, walk_versions, Row, Value, Version,
};
use crate::txn::{IsolationLevel, Snapshot, TxnId, TxnManager, TxnStatus, FROZEN_TXN, ROOT_MAGIC};
use locking::update_mode;

mod locking;

const ROW_LOCK_STRIPES: usize = 1024;

/// A column of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub kind: KeyKind,
    pub nullable: bool,
}

/// A table definition. Without a primary key, rows are keyed by a hidden row id.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDef {
    pub name: String,
    pub columns: Vec<ColumnDef>,
    pub primary_key: Option<Vec<usize>>,
    pub indexes: Vec<IndexDef>,
}

/// A secondary index: its columns, and whether two live rows may share their values
/// (NULLs never conflict, as in PostgreSQL).
#[derive(Clone, Debug, PartialEq)]
pub struct IndexDef {
    pub name: String,
    pub columns: Vec<usize>,
    pub unique: bool,
}

/// A secondary index's B+tree: key = encoded index columns followed by the row's primary key
/// bytes, value = the primary key bytes. Entries carry no visibility: readers check them
/// against the row's visible version, so stale entries (left by rollbacks and by updates
/// that changed the indexed columns) are harmless.
struct Index {
    def: IndexDef,
    tree: BTree,
    columns: Vec<KeyColumn>,
    /// Serializes uniqueness check and entry insertion for one unique index.
    unique_lock: Mutex<()>,
}

impl Index {
    fn prefix(&self, row: &[Value]) -> Result<Vec<u8>> {
        index_prefix(&self.def, &self.columns, row)
    }

    fn has_null(&self, row: &[Value]) -> bool {
        self.def.columns.iter().any(|&column| matches!(row[column], Value::Null))
    }
}

/// The encoded index values of `row` for the index `def` (key columns `columns`): the start
/// of its entry key, which the row key follows.
fn index_prefix(def: &IndexDef, columns: &[KeyColumn], row: &[Value]) -> Result<Vec<u8>> {
    if def.columns.iter().any(|&column| column >= row.len()) {
        return Err(EngineError::Corrupt {
            what: "row",
            detail: format!("row of columns={} too short for index={}", row.len(), def.name),
        });
    }
    let values: Vec<Value> = def.columns.iter().map(|&column| row[column].clone()).collect();
    let mut prefix = Vec::new();
    encode_key(columns, &values, &mut prefix)
        .map_err(|error| EngineError::InvalidRow { detail: error.to_string() })?;
    Ok(prefix)
}

/// The encoded primary key (or hidden row id) of a row: opaque to callers, who get it from
/// the keyed reads and pass it back to address the row (`update_by_key`, `delete_by_key`,
/// `resume_after`).
pub type RowKey = Vec<u8>;

/// One version of a table's handle. DDL never changes a handle: `create_index`, `drop_index`
/// and `truncate_table` swap a new one into the table map (under the exclusive DDL lock), so
/// a handle held by a transaction stays internally consistent.
fn index_handle(table: &TableDef, def: IndexDef, tree: BTree) -> Index {
    Index {
        columns: def
            .columns
            .iter()
            .map(|&column| KeyColumn::ascending(table.columns[column].kind))
            .collect(),
        tree,
        def,
        unique_lock: Mutex::new(()),
    }
}

struct Table {
    def: TableDef,
    tree: BTree,
    key_columns: Vec<KeyColumn>,
    /// Shared by every handle of one table, so a handle swapped in by DDL never hands out a
    /// row id the previous handle already gave.
    next_row_id: Arc<AtomicU64>,
    /// Shared with later handles (`create_index` keeps the existing ones), so the
    /// unique-index mutex is one per index whatever handle a writer holds.
    indexes: Vec<Arc<Index>>,
    /// Names the catalog object: a table dropped and created again under the same name gets a
    /// new identity, while the handles swapped in by index DDL and truncation keep it.
    identity: u64,
}

impl Table {
    fn key_of(&self, row: &[Value]) -> Result<Vec<u8>> {
        let mut key = Vec::new();
        match &self.def.primary_key {
            Some(columns) => {
                let values: Vec<Value> =
                    columns.iter().map(|&column| row[column].clone()).collect();
                encode_key(&self.key_columns, &values, &mut key)
                    .map_err(|error| EngineError::InvalidRow { detail: error.to_string() })?;
            }
            None => {
                let row_id = self.next_row_id.fetch_add(1, Ordering::AcqRel);
                let row_id = i64::try_from(row_id).map_err(|_| EngineError::LimitExceeded {
                    detail: format!("hidden row ids exhausted in table={}", self.def.name),
                })?;
                encode_key(&self.key_columns, &[Value::Int(row_id)], &mut key)
                    .expect("an integer key encodes");
            }
        }
        Ok(key)
    }

    fn encode_primary_key(&self, values: &[Value]) -> Result<Vec<u8>> {
        let mut key = Vec::new();
        encode_key(&self.key_columns, values, &mut key)
            .map_err(|error| EngineError::InvalidRow { detail: error.to_string() })?;
        Ok(key)
    }

    /// Checks that `key` is a row key of this table (it decodes with the key columns and
    /// encodes back to itself), so a caller's bytes cannot address something else.
    fn check_row_key(&self, key: &[u8]) -> Result<()> {
        let invalid = || EngineError::InvalidRow {
            detail: format!("not a row key of table={}", self.def.name),
        };
        let values = tierdb_access::decode_key(&self.key_columns, key).map_err(|_| invalid())?;
        if self.encode_primary_key(&values).map_err(|_| invalid())? != key {
            return Err(invalid());
        }
        Ok(())
    }

    fn check_row(&self, row: &[Value]) -> Result<()> {
        if row.len() != self.def.columns.len() {
            return Err(EngineError::InvalidRow {
                detail: format!(
                    "table={} expects columns={} got={}",
                    self.def.name,
                    self.def.columns.len(),
                    row.len()
                ),
            });
        }
        for (column, value) in self.def.columns.iter().zip(row) {
            let nullable = column.nullable
                && !self.def.primary_key.as_ref().is_some_and(|key| {
                    key.iter().any(|&index| self.def.columns[index].name == column.name)
                });
            if matches!(value, Value::Null) && !nullable {
                return Err(EngineError::NotNullViolation { column: column.name.clone() });
            }
        }
        Ok(())
    }
}

fn encode_def(def: &TableDef, tree: PageId, index_trees: &[PageId]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&tree.0.to_le_bytes());
    let mut row = vec![Value::Text(def.name.clone())];
    row.push(Value::Int(i64::try_from(def.columns.len()).expect("fits")));
    for column in &def.columns {
        row.push(Value::Text(column.name.clone()));
        row.push(Value::Int(kind_code(column.kind)));
        row.push(Value::Bool(column.nullable));
    }
    match &def.primary_key {
        Some(columns) => {
            row.push(Value::Int(i64::try_from(columns.len()).expect("fits")));
            row.extend(
                columns.iter().map(|&column| Value::Int(i64::try_from(column).expect("fits"))),
            );
        }
        None => row.push(Value::Int(-1)),
    }
    row.push(Value::Int(i64::try_from(def.indexes.len()).expect("fits")));
    for (index, tree) in def.indexes.iter().zip(index_trees) {
        row.push(Value::Text(index.name.clone()));
        row.push(Value::Bool(index.unique));
        row.push(Value::Int(i64::try_from(tree.0).expect("page ids fit")));
        row.push(Value::Int(i64::try_from(index.columns.len()).expect("fits")));
        row.extend(
            index.columns.iter().map(|&column| Value::Int(i64::try_from(column).expect("fits"))),
        );
    }
    encode_row(&row, &mut out);
    out
}

fn kind_code(kind: KeyKind) -> i64 {
    match kind {
        KeyKind::Bool => 0,
        KeyKind::Int => 1,
        KeyKind::Float => 2,
        KeyKind::Text => 3,
        KeyKind::Bytes => 4,
        KeyKind::Numeric => 5,
    }
}

fn kind_of(code: i64) -> Result<KeyKind> {
    Ok(match code {
        0 => KeyKind::Bool,
        1 => KeyKind::Int,
        2 => KeyKind::Float,
        3 => KeyKind::Text,
        4 => KeyKind::Bytes,
        5 => KeyKind::Numeric,
        other => {
            return Err(EngineError::Corrupt {
                what: "catalog",
                detail: format!("bad column kind={other}"),
            })
        }
    })
}

fn decode_def(bytes: &[u8]) -> Result<(TableDef, PageId, Vec<PageId>)> {
    let bad = |detail: &str| EngineError::Corrupt { what: "catalog", detail: detail.to_string() };
    let tree = PageId(u64::from_le_bytes(
        bytes.get(..8).ok_or_else(|| bad("short entry"))?.try_into().expect("8"),
    ));
    let values = decode_row(&bytes[8..])?;
    let mut values = values.into_iter();
    let mut next = || values.next().ok_or_else(|| bad("short definition"));
    let text = |value: Value| match value {
        Value::Text(text) => Ok(text),
        _ => Err(bad("expected text")),
    };
    let int = |value: Value| match value {
        Value::Int(number) => Ok(number),
        _ => Err(bad("expected integer")),
    };
    let name = text(next()?)?;
    let count = usize::try_from(int(next()?)?).map_err(|_| bad("bad column count"))?;
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        let column_name = text(next()?)?;
        let kind = kind_of(int(next()?)?)?;
        let nullable = matches!(next()?, Value::Bool(true));
        columns.push(ColumnDef { name: column_name, kind, nullable });
    }
    let key_count = int(next()?)?;
    let primary_key = if key_count < 0 {
        None
    } else {
        let mut key = Vec::new();
        for _ in 0..key_count {
            key.push(usize::try_from(int(next()?)?).map_err(|_| bad("bad key column"))?);
        }
        Some(key)
    };
    let index_count = usize::try_from(int(next()?)?).map_err(|_| bad("bad index count"))?;
    let mut indexes = Vec::with_capacity(index_count);
    let mut index_trees = Vec::with_capacity(index_count);
    for _ in 0..index_count {
        let index_name = text(next()?)?;
        let unique = matches!(next()?, Value::Bool(true));
        index_trees.push(PageId(u64::try_from(int(next()?)?).map_err(|_| bad("bad index tree"))?));
        let column_count = int(next()?)?;
        let mut index_columns = Vec::new();
        for _ in 0..column_count {
            index_columns
                .push(usize::try_from(int(next()?)?).map_err(|_| bad("bad index column"))?);
        }
        indexes.push(IndexDef { name: index_name, columns: index_columns, unique });
    }
    let in_range = |column: &usize| *column < columns.len();
    let columns_valid = primary_key.as_ref().is_none_or(|key| key.iter().all(in_range))
        && indexes
            .iter()
            .all(|index| !index.columns.is_empty() && index.columns.iter().all(in_range));
    if !columns_valid {
        return Err(bad("column position out of range"));
    }
    Ok((TableDef { name, columns, primary_key, indexes }, tree, index_trees))
}

/// Lower and upper bounds on encoded keys.
type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Encodes bounds given as values of the leading `columns` of a key (all of them, or a
/// prefix) as bounds on the encoded keys. A prefix is a byte prefix of every key starting
/// with those values, and the prefix followed by 0xFF is above all of them (the next
/// column's bytes start with a null marker, 0x00..=0x02), so `> prefix` becomes
/// `>= prefix+0xFF` and `<= prefix` becomes `< prefix+0xFF`; for a whole key the two forms
/// select the same keys.
fn key_range(
    columns: &[KeyColumn],
    name: &str,
    lower: Bound<&[Value]>,
    upper: Bound<&[Value]>,
) -> Result<KeyRange> {
    let encode = |values: &[Value]| -> Result<Vec<u8>> {
        if values.len() > columns.len() {
            return Err(EngineError::InvalidRow {
                detail: format!(
                    "key of {name} has columns={} but the bound has values={}",
                    columns.len(),
                    values.len()
                ),
            });
        }
        let mut prefix = Vec::new();
        encode_key(&columns[..values.len()], values, &mut prefix)
            .map_err(|error| EngineError::InvalidRow { detail: error.to_string() })?;
        Ok(prefix)
    };
    let after = |values: &[Value]| -> Result<Vec<u8>> {
        let mut prefix = encode(values)?;
        prefix.push(0xFF);
        Ok(prefix)
    };
    let lower = match lower {
        Bound::Included(values) => Bound::Included(encode(values)?),
        Bound::Excluded(values) => Bound::Included(after(values)?),
        Bound::Unbounded => Bound::Unbounded,
    };
    let upper = match upper {
        Bound::Included(values) => Bound::Excluded(after(values)?),
        Bound::Excluded(values) => Bound::Excluded(encode(values)?),
        Bound::Unbounded => Bound::Unbounded,
    };
    Ok((lower, upper))
}

/// `bound` (the start of a walk in `direction`) narrowed to begin strictly after
/// `resume_after`, the last key of the previous page, unless it already starts after it.
fn resume_bound(
    bound: Bound<Vec<u8>>,
    resume_after: Option<&[u8]>,
    direction: Direction,
) -> Bound<Vec<u8>> {
    let Some(resume) = resume_after else { return bound };
    let already_past = match &bound {
        Bound::Unbounded => false,
        Bound::Included(key) | Bound::Excluded(key) => match direction {
            Direction::Forward => key.as_slice() > resume,
            Direction::Backward => key.as_slice() < resume,
        },
    };
    if already_past {
        bound
    } else {
        Bound::Excluded(resume.to_vec())
    }
}

/// What the engine's handle, its transactions and its purge thread share.
pub(crate) struct Shared {
    store: Arc<PageStore>,
    txns: TxnManager,
    catalog: BTree,
    tables: RwLock<HashMap<String, Arc<Table>>>,
    /// The DDL lock. Everything that changes a row or index entries (writers, undo, purge)
    /// holds it shared for that change, never while waiting for a transaction (a DDL waiting
    /// for it exclusively would block the holder's own next acquisition: parking_lot's lock is
    /// fair). `create_index`, `drop_index`, `drop_table` and `truncate_table` hold it
    /// exclusively, so a backfill sees every row with all its versions and no writer can add
    /// a version it would miss. Taken before any row stripe mutex. Readers do not take it:
    /// they read through the handle they resolved, whose trees are never freed.
    ddl: RwLock<()>,
    /// The next `Table::identity`.
    next_identity: AtomicU64,
    /// The row stripes: a stripe's mutex makes one row's read-check-write atomic, and it holds
    /// the row locks of locking reads on its rows (locks.rs).
    row_locks: Vec<Mutex<StripeLocks>>,
    /// Row-lock entries held, bounded by `ROW_LOCKS_MAX`.
    row_lock_count: AtomicUsize,
    /// Set by every write; the purge thread runs a pass only when it was set.
    changed: AtomicBool,
    /// Set when the engine is dropped: a purge pass in progress stops at the next row instead
    /// of finishing (a pass over a large table on a slow volume takes minutes, and shutdown
    /// waits for the purge thread). Unfinished work is redone by the full pass at startup.
    stopping: AtomicBool,
    /// Work for the purge thread, from finished transactions.
    purge_queue: Mutex<PurgeQueue>,
    /// Set by `Engine::close_purged`: no transaction may begin any more.
    closed: AtomicBool,
    /// Full purge passes started (at startup, by VACUUM, after the queue overflowed).
    full_purge_passes: AtomicU64,
}

/// Queued purge items `close_purged` works through at most: beyond, shutdown would take too
/// long, and the next start runs a full pass instead.
const PURGE_AT_SHUTDOWN_MAX: usize = 50_000;

/// Engine root page: bit flags at payload offset 4 (zero in a root written before them).
const ROOT_FLAGS_OFFSET: usize = 4;
/// The last clean shutdown left no version to purge (`Engine::close_purged`): the next start
/// skips its full purge pass, and clears the flag durably before any transaction runs.
const ROOT_FLAG_PURGED: u32 = 1;

/// Rows written and index entries made stale by finished transactions. Bounded: past
/// `PURGE_QUEUE_MAX` items the queue is dropped and the next pass is a full one.
#[derive(Default)]
struct PurgeQueue {
    rows: Vec<(Arc<Table>, Vec<u8>)>,
    entries: Vec<IndexEntryRef>,
    full_pass: bool,
}

/// The engine root's flag word.
fn root_flags(store: &PageStore, root: PageId) -> Result<u32> {
    let page = store.read(root)?;
    let bytes = &page.payload()[ROOT_FLAGS_OFFSET..ROOT_FLAGS_OFFSET + 4];
    Ok(u32::from_le_bytes(bytes.try_into().expect("4 bytes")))
}

/// An index entry to check: (table, index, entry key, row key).
type IndexEntryRef = (Arc<Table>, Arc<Index>, Vec<u8>, Vec<u8>);

/// Purge work items kept at most before falling back to a full pass.
const PURGE_QUEUE_MAX: usize = 200_000;

impl PurgeQueue {
    fn overflowed(&mut self) -> bool {
        if self.rows.len() + self.entries.len() > PURGE_QUEUE_MAX {
            self.rows.clear();
            self.entries.clear();
            self.full_pass = true;
        }
        self.full_pass
    }
}

impl Shared {
    /// Opens the engine core, creating its root, commit log and catalog on an empty store.
    fn open(store: Arc<PageStore>) -> Result<Shared> {
        let root = PageId(1);
        let fresh = store.max_page_id() == PageId::INVALID;
        if fresh {
            Self::bootstrap(&store)?;
        }
        let mut catalog_meta = {
            let page = store.read(root)?;
            PageId(u64::from_le_bytes(page.payload()[16..24].try_into().expect("8")))
        };
        if catalog_meta == PageId::INVALID {
            // A crash between bootstrap's steps: finish it.
            catalog_meta = Self::create_catalog(&store)?;
        }
        let txns = TxnManager::open(Arc::clone(&store), root)?;
        let catalog = BTree::open(Arc::clone(&store), catalog_meta)?;
        // A new database has nothing to purge either.
        let purged_at_shutdown = fresh || root_flags(&store, root)? & ROOT_FLAG_PURGED != 0;
        let engine = Shared {
            store,
            txns,
            catalog,
            tables: RwLock::new(HashMap::new()),
            ddl: RwLock::new(()),
            next_identity: AtomicU64::new(1),
            row_locks: (0..ROW_LOCK_STRIPES).map(|_| Mutex::new(StripeLocks::default())).collect(),
            row_lock_count: AtomicUsize::new(0),
            changed: AtomicBool::new(true),
            stopping: AtomicBool::new(false),
            // A pass at startup removes what transactions that died in a crash left behind,
            // unless the last shutdown recorded that nothing was left.
            purge_queue: Mutex::new(PurgeQueue {
                full_pass: !purged_at_shutdown,
                ..PurgeQueue::default()
            }),
            closed: AtomicBool::new(false),
            full_purge_passes: AtomicU64::new(0),
        };
        // Cleared (durably) before any transaction can leave a version behind: a crash from
        // here on must lead to a full pass again.
        engine.set_root_flags(0)?;
        engine.load_catalog()?;
        Ok(engine)
    }

    /// Writes the engine root's flags and waits until the write is durable.
    fn set_root_flags(&self, flags: u32) -> Result<()> {
        let root = PageId(1);
        if root_flags(&self.store, root)? == flags {
            return Ok(());
        }
        let mut mtr = self.store.mtr();
        let slot = mtr.latch(root)?;
        mtr.write(slot, ROOT_FLAGS_OFFSET, &flags.to_le_bytes());
        let lsn = mtr.commit()?;
        self.store.wait_durable(lsn)?;
        Ok(())
    }

    fn bootstrap(store: &Arc<PageStore>) -> Result<()> {
        let mut mtr = store.mtr();
        let (root_slot, root) = mtr.allocate(PageType::Meta)?;
        assert_eq!(root, PageId(1), "the engine root is the store's first page");
        let (_, clog_directory) = mtr.allocate(PageType::Meta)?;
        let mut header = [0u8; 32];
        header[..4].copy_from_slice(ROOT_MAGIC);
        header[24..32].copy_from_slice(&clog_directory.0.to_le_bytes());
        mtr.write(root_slot, 0, &header);
        mtr.commit()?;
        Self::create_catalog(store)?;
        Ok(())
    }

    /// Creates the catalog tree and points the root page at it (durably).
    fn create_catalog(store: &Arc<PageStore>) -> Result<PageId> {
        let catalog = BTree::create(Arc::clone(store))?;
        let mut mtr = store.mtr();
        let slot = mtr.latch(PageId(1))?;
        mtr.write(slot, 16, &catalog.meta_page().0.to_le_bytes());
        store.wait_durable(mtr.commit()?)?;
        Ok(catalog.meta_page())
    }

    fn load_catalog(&self) -> Result<()> {
        let mut tables = self.tables.write();
        for entry in self.catalog.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            let (_, value) = entry?;
            let (def, tree, index_trees) = decode_def(&value)?;
            let table = self.table_handle(def, tree, &index_trees)?;
            tables.insert(table.def.name.clone(), table);
        }
        Ok(())
    }

    fn table_handle(
        &self,
        def: TableDef,
        tree_meta: PageId,
        index_trees: &[PageId],
    ) -> Result<Arc<Table>> {
        let mut indexes = Vec::with_capacity(def.indexes.len());
        for (index, &tree) in def.indexes.iter().zip(index_trees) {
            indexes.push(Arc::new(index_handle(
                &def,
                index.clone(),
                BTree::open(Arc::clone(&self.store), tree)?,
            )));
        }
        let tree = BTree::open(Arc::clone(&self.store), tree_meta)?;
        let key_columns = match &def.primary_key {
            Some(columns) => columns
                .iter()
                .map(|&column| KeyColumn::ascending(def.columns[column].kind))
                .collect(),
            None => vec![KeyColumn::ascending(KeyKind::Int)],
        };
        // Hidden row ids continue above the largest one stored.
        let next_row_id = if def.primary_key.is_none() {
            match tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Backward).next() {
                Some(entry) => {
                    let (key, _) = entry?;
                    match tierdb_access::decode_key(&key_columns, &key) {
                        Ok(values) => match values.first() {
                            Some(Value::Int(id)) => u64::try_from(*id).unwrap_or(0) + 1,
                            _ => 1,
                        },
                        Err(error) => {
                            return Err(EngineError::Corrupt {
                                what: "row id",
                                detail: error.to_string(),
                            })
                        }
                    }
                }
                None => 1,
            }
        } else {
            0
        };
        Ok(Arc::new(Table {
            def,
            tree,
            key_columns,
            next_row_id: Arc::new(AtomicU64::new(next_row_id)),
            indexes,
            identity: self.next_identity.fetch_add(1, Ordering::Relaxed),
        }))
    }

    /// Creates a table (durably, outside any transaction).
    fn create_table(&self, def: TableDef) -> Result<()> {
        let mut tables = self.tables.write();
        if tables.contains_key(&def.name) {
            return Err(EngineError::DuplicateTable { name: def.name });
        }
        if let Some(columns) = &def.primary_key {
            if columns.iter().any(|&column| column >= def.columns.len()) {
                return Err(EngineError::InvalidRow {
                    detail: "primary key column out of range".to_string(),
                });
            }
        }
        let valid_index = |index: &IndexDef| {
            !index.columns.is_empty()
                && index.columns.iter().all(|&column| column < def.columns.len())
        };
        if !def.indexes.iter().all(valid_index) {
            return Err(EngineError::InvalidRow {
                detail: "index column out of range".to_string(),
            });
        }
        let tree = BTree::create(Arc::clone(&self.store))?;
        let mut index_trees = Vec::with_capacity(def.indexes.len());
        for _ in &def.indexes {
            index_trees.push(BTree::create(Arc::clone(&self.store))?.meta_page());
        }
        let entry = encode_def(&def, tree.meta_page(), &index_trees);
        let (_, lsn) = self.catalog.insert(def.name.as_bytes(), &entry)?;
        self.store.wait_durable(lsn)?;
        let table = self.table_handle(def, tree.meta_page(), &index_trees)?;
        tables.insert(table.def.name.clone(), table);
        Ok(())
    }

    fn table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tables.read().keys().cloned().collect();
        names.sort();
        names
    }

    fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| EngineError::UndefinedTable { name: name.to_string() })
    }

    /// The current handle of the table `handle` belongs to (it may have more or fewer indexes,
    /// or fresh trees after a truncation), or 42P01 once that table was dropped, even if
    /// another table has taken its name since.
    fn current(&self, handle: &Table) -> Result<Arc<Table>> {
        self.tables
            .read()
            .get(&handle.def.name)
            .filter(|current| current.identity == handle.identity)
            .cloned()
            .ok_or_else(|| EngineError::UndefinedTable { name: handle.def.name.clone() })
    }

    /// The current handle if it still stores rows in `handle`'s tree: `None` once the table
    /// was dropped or truncated, when the rows written through `handle` are gone (tree meta
    /// pages are never reused, so the page id names the tree).
    fn current_with_tree(&self, handle: &Table) -> Option<Arc<Table>> {
        self.tables
            .read()
            .get(&handle.def.name)
            .filter(|current| {
                current.identity == handle.identity
                    && current.tree.meta_page() == handle.tree.meta_page()
            })
            .cloned()
    }

    /// A new handle of the table `old` is a handle of, for DDL to swap in.
    fn derived_handle(
        old: &Table,
        def: TableDef,
        tree: BTree,
        indexes: Vec<Arc<Index>>,
    ) -> Arc<Table> {
        assert_eq!(def.indexes.len(), indexes.len(), "one index handle per index definition");
        assert!(
            def.indexes.iter().zip(&indexes).all(|(def, index)| def.name == index.def.name),
            "index handles in definition order"
        );
        Arc::new(Table {
            def,
            tree,
            key_columns: old.key_columns.clone(),
            next_row_id: Arc::clone(&old.next_row_id),
            indexes,
            identity: old.identity,
        })
    }

    /// Writes a table's catalog entry and waits until it is durable.
    fn write_catalog(&self, def: &TableDef, tree: PageId, indexes: &[Arc<Index>]) -> Result<()> {
        let index_trees: Vec<PageId> = indexes.iter().map(|index| index.tree.meta_page()).collect();
        let entry = encode_def(def, tree, &index_trees);
        let (_, lsn) = self.catalog.insert(def.name.as_bytes(), &entry)?;
        self.store.wait_durable(lsn)?;
        Ok(())
    }

    /// Removes a table from the catalog, durably. Its pages are not reclaimed: the page store
    /// cannot free pages (a known issue). Transactions that still use it get 42P01 at their
    /// next operation on it; their undo of rows in it does nothing.
    fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.write();
        let mut tables = self.tables.write();
        if !tables.contains_key(name) {
            return Err(EngineError::UndefinedTable { name: name.to_string() });
        }
        let Some((_, lsn)) = self.catalog.delete(name.as_bytes())? else {
            return Err(EngineError::Corrupt {
                what: "catalog",
                detail: format!("table={name} is loaded but has no catalog entry"),
            });
        };
        self.store.wait_durable(lsn)?;
        tables.remove(name);
        Ok(())
    }

    /// Empties a table and its indexes at once by giving it fresh trees (durably); not
    /// transactional. The old trees' pages are not reclaimed (see `drop_table`).
    fn truncate_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.write();
        let old = self.table(name)?;
        let tree = BTree::create(Arc::clone(&self.store))?;
        let mut indexes = Vec::with_capacity(old.indexes.len());
        for index in &old.indexes {
            let fresh = BTree::create(Arc::clone(&self.store))?;
            indexes.push(Arc::new(index_handle(&old.def, index.def.clone(), fresh)));
        }
        self.write_catalog(&old.def, tree.meta_page(), &indexes)?;
        let handle = Self::derived_handle(&old, old.def.clone(), tree, indexes);
        self.tables.write().insert(name.to_string(), handle);
        Ok(())
    }

    /// Adds an index to a populated table. Under the exclusive DDL lock no row changes, so one
    /// pass sees every version of every row: each gets its entry (versions of transactions in
    /// progress too, so their rows are found once they commit), and for a unique index the
    /// live value of each row is checked first. The index is built in a new tree (bulk load)
    /// and appears, durably, in the catalog only once complete: a failure leaves no index.
    fn create_index(&self, table_name: &str, def: IndexDef) -> Result<()> {
        let _ddl = self.ddl.write();
        let old = self.table(table_name)?;
        {
            let tables = self.tables.read();
            let taken = tables.contains_key(&def.name)
                || tables
                    .values()
                    .any(|table| table.def.indexes.iter().any(|index| index.name == def.name));
            if taken {
                return Err(EngineError::DuplicateTable { name: def.name });
            }
        }
        if def.columns.is_empty()
            || def.columns.iter().any(|&column| column >= old.def.columns.len())
        {
            return Err(EngineError::InvalidRow {
                detail: "index column out of range".to_string(),
            });
        }
        let columns: Vec<KeyColumn> = def
            .columns
            .iter()
            .map(|&column| KeyColumn::ascending(old.def.columns[column].kind))
            .collect();
        let mut entries = std::collections::BTreeMap::new();
        let mut live_values = std::collections::HashSet::new();
        for stored in old.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            let (key, bytes) = stored?;
            let mut live_checked = false;
            for version in decode_versions(&bytes)? {
                let row = decode_row(&version.row)?;
                let mut entry = index_prefix(&def, &columns, &row)?;
                if def.unique && !live_checked {
                    live_checked =
                        self.check_unique_backfill(&def, &version, &row, &entry, &mut live_values)?;
                }
                entry.extend_from_slice(&key);
                entries.insert(entry, key.clone());
            }
        }
        let tree = BTree::bulk_load(Arc::clone(&self.store), entries)?;
        let mut new_def = old.def.clone();
        new_def.indexes.push(def.clone());
        let mut indexes = old.indexes.clone();
        indexes.push(Arc::new(index_handle(&new_def, def, tree)));
        self.write_catalog(&new_def, old.tree.meta_page(), &indexes)?;
        let handle = Self::derived_handle(&old, new_def, old.tree.clone(), indexes);
        self.tables.write().insert(table_name.to_string(), handle);
        Ok(())
    }

    /// The unique check of `create_index` for one version, newest first: returns whether this
    /// version decided the row (its creator did not abort). The row's value counts as live
    /// unless a committed transaction deleted it; creators and deleters still in progress count
    /// as if they will commit and roll back respectively, so the check is conservative: it may
    /// refuse an index that their outcome would have allowed, never accept a duplicate.
    fn check_unique_backfill(
        &self,
        def: &IndexDef,
        version: &Version,
        row: &[Value],
        prefix: &[u8],
        live_values: &mut std::collections::HashSet<Vec<u8>>,
    ) -> Result<bool> {
        if self.txns.status(version.xmin)? == TxnStatus::Aborted {
            return Ok(false);
        }
        let deleted = version.xmax != 0 && self.txns.status(version.xmax)? == TxnStatus::Committed;
        let has_null = def.columns.iter().any(|&column| matches!(row[column], Value::Null));
        if !deleted && !has_null && !live_values.insert(prefix.to_vec()) {
            return Err(EngineError::UniqueViolation { constraint: def.name.clone() });
        }
        Ok(true)
    }

    /// Removes an index from a table, durably (its pages are not reclaimed).
    fn drop_index(&self, table_name: &str, index_name: &str) -> Result<()> {
        let _ddl = self.ddl.write();
        let old = self.table(table_name)?;
        let Some(position) = old.def.indexes.iter().position(|index| index.name == index_name)
        else {
            return Err(EngineError::UndefinedTable { name: index_name.to_string() });
        };
        let mut new_def = old.def.clone();
        new_def.indexes.remove(position);
        let mut indexes = old.indexes.clone();
        indexes.remove(position);
        self.write_catalog(&new_def, old.tree.meta_page(), &indexes)?;
        let handle = Self::derived_handle(&old, new_def, old.tree.clone(), indexes);
        self.tables.write().insert(table_name.to_string(), handle);
        Ok(())
    }

    /// Starts a transaction.
    fn begin(self: &Arc<Shared>, isolation: IsolationLevel) -> Result<Transaction> {
        if self.closed.load(Ordering::Acquire) {
            return Err(EngineError::ShuttingDown);
        }
        let virtual_id = self.txns.begin();
        let snapshot = self.txns.snapshot(virtual_id, 0);
        Ok(Transaction {
            engine: Arc::clone(self),
            id: 0,
            virtual_id,
            isolation,
            snapshot,
            undo: Vec::new(),
            savepoints: Vec::new(),
            failed: false,
            done: false,
            statement_mode: false,
            statement_mark: 0,
            wrote: false,
            index_entries: Vec::new(),
            written: Vec::new(),
            wait_limits: WaitLimits::default(),
            held_locks: Vec::new(),
        })
    }

    fn row_lock(&self, key: &[u8], table: &str) -> MutexGuard<'_, StripeLocks> {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &byte in table.as_bytes().iter().chain(key) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        self.row_locks[usize::try_from(hash % ROW_LOCK_STRIPES as u64).expect("fits")].lock()
    }
}

/// Drops versions no snapshot can see, and freezes old committed creators (below the
/// horizon) so readers skip the commit log for them. `me` is the pruning transaction (0 for
/// the purge thread). The newest version is kept unless `drop_dead_newest` and it was
/// deleted before every snapshot: then the whole row is garbage.
fn prune_versions(
    txns: &TxnManager,
    me: TxnId,
    versions: &mut Vec<Version>,
    drop_dead_newest: bool,
) -> Result<()> {
    let horizon = txns.horizon();
    let mut kept = Vec::with_capacity(versions.len());
    for (index, mut version) in versions.drain(..).enumerate() {
        let creator =
            if version.xmin == me { TxnStatus::InProgress } else { txns.status(version.xmin)? };
        if creator == TxnStatus::Aborted {
            continue;
        }
        let dead = version.xmax != 0
            && version.xmax != me
            && version.xmax < horizon
            && txns.status(version.xmax)? == TxnStatus::Committed;
        if dead && (index > 0 || drop_dead_newest) {
            // Superseded or deleted before every running snapshot began: nobody can see it.
            continue;
        }
        if creator == TxnStatus::Committed && version.xmin < horizon {
            version.xmin = FROZEN_TXN;
        }
        if version.xmax != 0
            && version.xmax != me
            && txns.status(version.xmax)? == TxnStatus::Aborted
        {
            version.xmax = 0;
        }
        kept.push(version);
    }
    *versions = kept;
    Ok(())
}

/// Deletes the index entries of row `key` for index values that versions in `before` carried
/// and none in `after` does. The caller holds the row lock. Returns entries deleted.
fn drop_stale_entries(
    table: &Table,
    key: &[u8],
    before: &[Version],
    after: &[Version],
) -> Result<u64> {
    // Only a version whose row is no longer in the record can leave a value uncarried; an
    // update that just marks the old version (the common case) removes none and costs nothing.
    let removed: Vec<&Version> =
        before.iter().filter(|old| !after.iter().any(|new| new.row == old.row)).collect();
    if table.indexes.is_empty() || removed.is_empty() {
        return Ok(0);
    }
    let mut deleted = 0;
    for index in &table.indexes {
        let kept = after
            .iter()
            .map(|version| index.prefix(&decode_row(&version.row)?))
            .collect::<Result<std::collections::BTreeSet<Vec<u8>>>>()?;
        let gone = removed
            .iter()
            .map(|version| index.prefix(&decode_row(&version.row)?))
            .collect::<Result<std::collections::BTreeSet<Vec<u8>>>>()?;
        for prefix in gone.difference(&kept) {
            let mut entry = prefix.clone();
            entry.extend_from_slice(key);
            if index.tree.delete(&entry)?.is_some() {
                deleted += 1;
            }
        }
    }
    Ok(deleted)
}

/// What one purge pass removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeStats {
    pub rows_rewritten: u64,
    pub rows_removed: u64,
    pub index_entries_removed: u64,
}

impl Shared {
    /// One pass over every table: prunes each row's versions (removing rows that no snapshot
    /// can see any more) and deletes index entries that no version of their row carries.
    /// Each row is handled under its row lock, like a writer, so a pass never races one.
    fn purge(&self) -> Result<PurgeStats> {
        self.purge_queue.lock().full_pass = false;
        self.full_purge_passes.fetch_add(1, Ordering::AcqRel);
        let mut stats = PurgeStats::default();
        let finished = self.purge_every_row(&mut stats);
        self.note_unfinished(&finished);
        finished.map(|_| stats)
    }

    /// A pass that stopped early (shutdown) or failed leaves work it cannot name: a full pass
    /// is owed, so that `Engine::close_purged` never records a clean state that is not.
    fn note_unfinished(&self, finished: &Result<bool>) {
        if !matches!(finished, Ok(true)) {
            self.purge_queue.lock().full_pass = true;
        }
    }

    /// The body of a full pass; Ok(false) if it stopped for shutdown.
    fn purge_every_row(&self, stats: &mut PurgeStats) -> Result<bool> {
        let tables: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        for table in tables {
            // A handle made stale by DDL during the pass only means purging trees nobody reads
            // any more, or missing a new index's entries until the next pass: both harmless.
            for entry in table.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
                if self.stopping.load(Ordering::Acquire) {
                    return Ok(false);
                }
                let (key, _) = entry?;
                let _ddl = self.ddl.read();
                self.purge_row(&table, &key, stats)?;
            }
            for index in &table.indexes {
                for entry in
                    index.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward)
                {
                    if self.stopping.load(Ordering::Acquire) {
                        return Ok(false);
                    }
                    let (entry_key, row_key) = entry?;
                    let _ddl = self.ddl.read();
                    self.purge_index_entry(&table, index, &entry_key, &row_key, stats)?;
                }
            }
        }
        Ok(true)
    }

    /// One pass over the queued work: prunes each queued row (removing the index entries of
    /// the index values its pruned versions had) and checks each queued index entry. Rows an
    /// old snapshot still needs are queued again for a later pass.
    fn purge_queued(&self) -> Result<PurgeStats> {
        let (rows, entries, full_pass) = {
            let mut queue = self.purge_queue.lock();
            (
                std::mem::take(&mut queue.rows),
                std::mem::take(&mut queue.entries),
                std::mem::take(&mut queue.full_pass),
            )
        };
        if full_pass {
            return self.purge();
        }
        let mut stats = PurgeStats::default();
        let finished = self.purge_items(rows, entries, &mut stats);
        self.note_unfinished(&finished);
        finished.map(|_| stats)
    }

    /// The body of a queued pass; Ok(false) if it stopped for shutdown (the items it took
    /// are then owed to a full pass).
    fn purge_items(
        &self,
        rows: Vec<(Arc<Table>, Vec<u8>)>,
        entries: Vec<IndexEntryRef>,
        stats: &mut PurgeStats,
    ) -> Result<bool> {
        let mut seen = std::collections::HashSet::new();
        let mut again = Vec::new();
        for (table, key) in rows {
            if self.stopping.load(Ordering::Acquire) {
                return Ok(false);
            }
            if !seen.insert((table.def.name.clone(), key.clone())) {
                continue;
            }
            // The current handle, so that indexes created since the write are cleaned too; a
            // dropped or truncated table's rows are gone.
            let _ddl = self.ddl.read();
            let Some(table) = self.current_with_tree(&table) else { continue };
            if self.purge_row_and_entries(&table, &key, stats)? {
                again.push((table, key));
            }
        }
        for (table, index, entry_key, row_key) in entries {
            if self.stopping.load(Ordering::Acquire) {
                return Ok(false);
            }
            let _ddl = self.ddl.read();
            let Some(table) = self.current_with_tree(&table) else { continue };
            if !table.indexes.iter().any(|current| Arc::ptr_eq(current, &index)) {
                // Dropped (or rebuilt by a truncation): nobody reads that tree.
                continue;
            }
            self.purge_index_entry(&table, &index, &entry_key, &row_key, stats)?;
        }
        if !again.is_empty() {
            let mut queue = self.purge_queue.lock();
            if !queue.overflowed() {
                queue.rows.extend(again);
                queue.overflowed();
            }
            self.changed.store(true, Ordering::Release);
        }
        Ok(true)
    }

    /// Prunes one row and deletes the index entries of index values that only its removed
    /// versions had. Returns whether the row still holds old versions (to retry later).
    fn purge_row_and_entries(
        &self,
        table: &Table,
        key: &[u8],
        stats: &mut PurgeStats,
    ) -> Result<bool> {
        let _guard = self.row_lock(key, &table.def.name);
        let Some(bytes) = table.tree.get(key)? else { return Ok(false) };
        let before = decode_versions(&bytes)?;
        let mut versions = before.clone();
        prune_versions(&self.txns, 0, &mut versions, true)?;
        stats.index_entries_removed += drop_stale_entries(table, key, &before, &versions)?;
        if versions.is_empty() {
            table.tree.delete(key)?;
            stats.rows_removed += 1;
            return Ok(false);
        }
        let pruned = encode_versions(&versions);
        if pruned != bytes {
            table.tree.insert(key, &pruned)?;
            stats.rows_rewritten += 1;
        }
        Ok(versions.len() > 1 || versions[0].xmax != 0)
    }

    fn purge_row(&self, table: &Table, key: &[u8], stats: &mut PurgeStats) -> Result<()> {
        let _guard = self.row_lock(key, &table.def.name);
        let Some(bytes) = table.tree.get(key)? else { return Ok(()) };
        let mut versions = decode_versions(&bytes)?;
        prune_versions(&self.txns, 0, &mut versions, true)?;
        if versions.is_empty() {
            table.tree.delete(key)?;
            stats.rows_removed += 1;
        } else {
            let pruned = encode_versions(&versions);
            if pruned != bytes {
                table.tree.insert(key, &pruned)?;
                stats.rows_rewritten += 1;
            }
        }
        Ok(())
    }

    fn purge_index_entry(
        &self,
        table: &Table,
        index: &Index,
        entry_key: &[u8],
        row_key: &[u8],
        stats: &mut PurgeStats,
    ) -> Result<()> {
        let Some(prefix) = entry_key.strip_suffix(row_key) else {
            return Err(EngineError::Corrupt {
                what: "index entry",
                detail: format!("index={} entry does not end with its row key", index.def.name),
            });
        };
        let _guard = self.row_lock(row_key, &table.def.name);
        let carried = match table.tree.get(row_key)? {
            Some(bytes) => {
                let mut carried = false;
                for version in decode_versions(&bytes)? {
                    if index.prefix(&decode_row(&version.row)?)? == prefix {
                        carried = true;
                        break;
                    }
                }
                carried
            }
            None => false,
        };
        if !carried {
            index.tree.delete(entry_key)?;
            stats.index_entries_removed += 1;
        }
        Ok(())
    }
}

/// How often the purge thread looks for work.
const PURGE_INTERVAL: Duration = Duration::from_millis(500);

/// The transactional engine over one page store. Dropping it stops its purge thread.
pub struct Engine {
    shared: Arc<Shared>,
    stop: Arc<(Mutex<bool>, parking_lot::Condvar)>,
    purger: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Engine {
    /// Opens the engine, creating its root, commit log and catalog on an empty store, and
    /// starts the purge thread, which removes versions once no snapshot needs them.
    pub fn open(store: Arc<PageStore>) -> Result<Arc<Engine>> {
        let shared = Arc::new(Shared::open(store)?);
        let stop = Arc::new((Mutex::new(false), parking_lot::Condvar::new()));
        let thread_shared = Arc::clone(&shared);
        let thread_stop = Arc::clone(&stop);
        let purger = std::thread::Builder::new()
            .name("engine-purge".to_string())
            .spawn(move || purge_loop(&thread_shared, &thread_stop))
            .map_err(|error| EngineError::Corrupt {
                what: "purge thread",
                detail: error.to_string(),
            })?;
        Ok(Arc::new(Engine { shared, stop, purger: Mutex::new(Some(purger)) }))
    }

    pub fn create_table(&self, def: TableDef) -> Result<()> {
        self.shared.create_table(def)
    }

    pub fn table_names(&self) -> Vec<String> {
        self.shared.table_names()
    }

    /// The definition of a table (42P01 if there is none), with its current indexes.
    pub fn table_def(&self, name: &str) -> Result<TableDef> {
        Ok(self.shared.table(name)?.def.clone())
    }

    /// Drops a table, durably and at once (not transactional). Transactions using it get
    /// 42P01 at their next operation on it. Its pages are leaked (the page store cannot free
    /// pages).
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.shared.drop_table(name)
    }

    /// Empties a table and its indexes, durably and at once. Not transactional (PostgreSQL's
    /// TRUNCATE is): rows that running transactions wrote are gone too, and their rollback
    /// does not bring back anything. The old trees' pages are leaked.
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.shared.truncate_table(name)
    }

    /// Creates an index on a table that may hold rows (backfilled; blocks writers of every
    /// table meanwhile). 42P07 if an index or table has the name, 23505 if a unique index
    /// would be violated (no index is left behind), 22023 for bad columns.
    pub fn create_index(&self, table: &str, index: IndexDef) -> Result<()> {
        self.shared.create_index(table, index)
    }

    /// Drops an index (42P01 if the table or index does not exist). Its pages are leaked.
    pub fn drop_index(&self, table: &str, index: &str) -> Result<()> {
        self.shared.drop_index(table, index)
    }

    pub fn store(&self) -> &Arc<PageStore> {
        &self.shared.store
    }

    /// Starts a transaction.
    pub fn begin(&self, isolation: IsolationLevel) -> Result<Transaction> {
        self.shared.begin(isolation)
    }

    /// Runs one purge pass now (the purge thread also runs them).
    pub fn purge(&self) -> Result<PurgeStats> {
        self.shared.purge()
    }

    /// Versions stored in a table and entries in each of its indexes (for tests of purge).
    #[doc(hidden)]
    pub fn storage_counts(&self, table: &str) -> Result<(u64, Vec<u64>)> {
        let table = self.shared.table(table)?;
        let mut versions = 0u64;
        for entry in table.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            versions += u64::try_from(decode_versions(&entry?.1)?.len()).expect("fits");
        }
        let mut entries = Vec::new();
        for index in &table.indexes {
            let count =
                index.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward).count();
            entries.push(u64::try_from(count).expect("fits"));
        }
        Ok((versions, entries))
    }
}

impl Engine {
    /// Stops the purge thread; a pass in progress ends at its next row.
    fn stop_purger(&self) {
        self.shared.stopping.store(true, Ordering::Release);
        let (flag, condvar) = &*self.stop;
        *flag.lock() = true;
        condvar.notify_all();
        if let Some(purger) = self.purger.lock().take() {
            let _ = purger.join();
        }
    }

    /// For a clean shutdown, once every session has ended: refuses new transactions
    /// (`ShuttingDown`), stops the purge thread, purges what finished transactions queued
    /// and, if that leaves nothing and no transaction is running, records in the engine root
    /// that no row holds a version to purge. The next start then skips the full pass over
    /// every table that it otherwise runs (minutes on a large database read through a small
    /// buffer pool, competing with the first queries). Returns whether the record was
    /// written. A crash after it is harmless: the next start clears the record durably before
    /// any transaction runs. Without it (a transaction still running, a full pass pending),
    /// the next start purges everything as after a crash.
    pub fn close_purged(&self) -> Result<bool> {
        self.shared.closed.store(true, Ordering::Release);
        // Interrupt a pass in progress (a full one can take minutes): what it leaves undone
        // is recorded as owed (`note_unfinished`), and then no record is written.
        self.stop_purger();
        self.shared.stopping.store(false, Ordering::Release);
        let shared = &self.shared;
        let too_much = {
            let queue = shared.purge_queue.lock();
            queue.full_pass || queue.rows.len() + queue.entries.len() > PURGE_AT_SHUTDOWN_MAX
        };
        if too_much || !shared.txns.idle() {
            return Ok(false);
        }
        shared.purge_queued()?;
        let queue = shared.purge_queue.lock();
        let clean = !queue.full_pass && queue.rows.is_empty() && queue.entries.is_empty();
        drop(queue);
        if clean && shared.txns.idle() {
            shared.set_root_flags(ROOT_FLAG_PURGED)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Full purge passes started since the engine opened (one at startup unless the last
    /// shutdown recorded a clean purge; one per VACUUM).
    pub fn full_purge_passes(&self) -> u64 {
        self.shared.full_purge_passes.load(Ordering::Acquire)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_purger();
    }
}

fn purge_loop(shared: &Shared, stop: &(Mutex<bool>, parking_lot::Condvar)) {
    let (flag, condvar) = stop;
    loop {
        {
            let mut stopped = flag.lock();
            if !*stopped {
                condvar.wait_for(&mut stopped, PURGE_INTERVAL);
            }
            if *stopped {
                return;
            }
        }
        if shared.changed.swap(false, Ordering::AcqRel) {
            if let Err(error) = shared.purge_queued() {
                tracing::warn!(%error, "purge pass failed");
            }
        }
    }
}

/// What a write does to a row's newest state.
enum Action<'a> {
    Insert(Vec<u8>),
    Update(&'a mut dyn FnMut(&Row) -> Option<Row>),
    /// Delete, if the check (on the latest version) passes.
    Delete(Option<&'a mut dyn FnMut(&Row) -> bool>),
}

enum IndexOutcome<'t> {
    /// The unique-index guards, and the (index, entry key) of every entry added.
    Written(Vec<MutexGuard<'t, ()>>, Vec<(usize, Vec<u8>)>),
    Wait(TxnId),
}

struct UndoEntry {
    table: Arc<Table>,
    key: Vec<u8>,
    before: Option<Vec<u8>>,
}

/// A transaction. Dropping it without `commit` rolls it back.
pub struct Transaction {
    engine: Arc<Shared>,
    /// The real id, assigned at the first write (0 before).
    id: TxnId,
    virtual_id: crate::txn::VirtualId,
    isolation: IsolationLevel,
    snapshot: Snapshot,
    undo: Vec<UndoEntry>,
    /// Name, undo length and held-lock count at each savepoint.
    savepoints: Vec<(String, usize, usize)>,
    failed: bool,
    done: bool,
    /// Set by the first `begin_statement`: from then on operations take no snapshot of their
    /// own and an error undoes back to `statement_mark`.
    statement_mode: bool,
    /// The undo length when the current statement began (statement mode).
    statement_mark: usize,
    /// Whether this transaction ever wrote a version (even if later undone): only then does
    /// its outcome go to the commit log.
    wrote: bool,
    /// Index entries this transaction added (stale if it rolls back).
    index_entries: Vec<IndexEntryRef>,
    /// Rows this transaction wrote, for the purge thread.
    written: Vec<(Arc<Table>, Vec<u8>)>,
    /// Limits on waits for other transactions (`set_wait_limits`).
    wait_limits: WaitLimits,
    /// Row locks taken by locking reads, released at the end.
    held_locks: Vec<HeldLock>,
}

impl Transaction {
    /// The transaction's id: 0 until it first writes.
    pub fn id(&self) -> TxnId {
        self.id
    }

    /// Starts a statement: READ COMMITTED takes a fresh snapshot; REPEATABLE READ keeps the
    /// first one. Until `begin_statement` is first called, every operation below is a
    /// statement; in statement mode an operation is part of the current statement.
    fn statement(&mut self) -> Result<()> {
        if self.failed {
            return Err(EngineError::TransactionAborted);
        }
        if self.isolation == IsolationLevel::ReadCommitted && !self.statement_mode {
            self.snapshot = self.engine.txns.snapshot(self.virtual_id, self.id);
        }
        Ok(())
    }

    /// Starts a statement that spans many operations (a SQL statement), and switches the
    /// transaction to statement mode for good: operations no longer take a snapshot each.
    /// READ COMMITTED takes a fresh snapshot here (REPEATABLE READ keeps its first), which the
    /// reads of the statement share; an update still applies to the latest committed version
    /// (after waiting for a concurrent writer), as outside statement mode. An error in any
    /// operation undoes every change since this call and fails the transaction (25P02), as
    /// `fail` does. The statement's own writes are visible to its later reads (there are no
    /// command ids): a caller that scans and writes the same table must collect the keys
    /// first (the Halloween problem). 25P02 if the transaction has failed.
    pub fn begin_statement(&mut self) -> Result<()> {
        if self.failed {
            return Err(EngineError::TransactionAborted);
        }
        self.statement_mode = true;
        if self.isolation == IsolationLevel::ReadCommitted {
            self.snapshot = self.engine.txns.snapshot(self.virtual_id, self.id);
        }
        self.statement_mark = self.undo.len();
        Ok(())
    }

    /// Fails the transaction (25P02 until rollback or a rollback to a savepoint) because of an
    /// error outside the engine; in statement mode the current statement's changes are undone
    /// first (statement atomicity).
    pub fn fail(&mut self) {
        if self.statement_mode {
            if let Err(error) = self.undo_to(self.statement_mark) {
                tracing::error!(%error, "statement undo failed");
            }
        }
        self.failed = true;
    }

    /// Whether the transaction has failed: only rollback (or a rollback to a savepoint) is
    /// accepted.
    pub fn is_failed(&self) -> bool {
        self.failed
    }

    /// Runs an operation; an error fails the transaction until rollback (PostgreSQL's 25P02),
    /// except that a failed statement inside a savepoint can be rolled back to it. The undo
    /// goes back to the operation's start, or in statement mode to the statement's.
    fn run<T>(&mut self, body: impl FnOnce(&mut Transaction) -> Result<T>) -> Result<T> {
        self.statement()?;
        let undo_mark = if self.statement_mode { self.statement_mark } else { self.undo.len() };
        assert!(undo_mark <= self.undo.len(), "the statement mark is within the undo list");
        let outcome = body(self);
        if outcome.is_err() {
            // The statement's own changes are undone at once (statement atomicity).
            if let Err(error) = self.undo_to(undo_mark) {
                tracing::error!(%error, "statement undo failed");
            }
            self.failed = true;
        }
        outcome
    }

    fn visible_row(&self, versions: &[Version]) -> Result<Option<Row>> {
        for version in versions {
            if let Some(outcome) = self.version_outcome(version.xmin, version.xmax, &version.row)? {
                return Ok(outcome);
            }
        }
        Ok(None)
    }

    /// `visible_row` over a stored value, decoding only the visible version's row.
    fn visible_row_stored(&self, stored: &[u8]) -> Result<Option<Row>> {
        let mut found = None;
        walk_versions(stored, |xmin, xmax, row| {
            found = self.version_outcome(xmin, xmax, row)?;
            Ok(found.is_none())
        })?;
        Ok(found.flatten())
    }

    /// For one version, newest first: `None` if this snapshot does not see its creator (look
    /// at older versions); else the row as this snapshot sees it (`Some(None)`: deleted).
    fn version_outcome(&self, xmin: TxnId, xmax: TxnId, row: &[u8]) -> Result<Option<Option<Row>>> {
        if !self.engine.txns.visible(&self.snapshot, xmin)? {
            return Ok(None);
        }
        let deleted =
            xmax != 0 && (xmax == self.id || self.engine.txns.visible(&self.snapshot, xmax)?);
        Ok(Some(if deleted { None } else { Some(decode_row(row)?) }))
    }

    /// The row with primary key `key` as this transaction sees it.
    pub fn get(&mut self, table: &str, key: &[Value]) -> Result<Option<Row>> {
        self.run(|txn| {
            let table = txn.engine.table(table)?;
            let encoded = table.encode_primary_key(key)?;
            match table.tree.get(&encoded)? {
                Some(bytes) => txn.visible_row_stored(&bytes),
                None => Ok(None),
            }
        })
    }

    /// The row with primary key `key` and its row key, as this transaction sees it.
    pub fn get_keyed(&mut self, table: &str, key: &[Value]) -> Result<Option<(RowKey, Row)>> {
        self.run(|txn| {
            let table = txn.engine.table(table)?;
            let encoded = table.encode_primary_key(key)?;
            match table.tree.get(&encoded)? {
                Some(bytes) => Ok(txn.visible_row_stored(&bytes)?.map(|row| (encoded, row))),
                None => Ok(None),
            }
        })
    }

    /// Rows with primary keys in the given range, in key order.
    pub fn scan(
        &mut self,
        table: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
    ) -> Result<Vec<Row>> {
        self.run(|txn| {
            let rows = txn.keyed_rows(table, lower, upper, None, usize::MAX, Direction::Forward)?;
            Ok(rows.into_iter().map(|(_, row)| row).collect())
        })
    }

    /// Up to `limit` visible rows with primary keys in the given range, in ascending key
    /// order, with their row keys; after `resume_after` (the last row key of the previous
    /// page) when given. Each page is an operation: outside statement mode, READ COMMITTED
    /// pages see different snapshots, but a row committed before the first page and not
    /// changed since is returned exactly once. For a table without a primary key the bounds
    /// are on the hidden row id (use `Unbounded`).
    pub fn scan_page(
        &mut self,
        table: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        resume_after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(RowKey, Row)>> {
        self.run(|txn| txn.keyed_rows(table, lower, upper, resume_after, limit, Direction::Forward))
    }

    /// `scan_page` in descending key order: `resume_after` is the smallest row key of the
    /// previous page.
    pub fn scan_page_backward(
        &mut self,
        table: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        resume_after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(RowKey, Row)>> {
        self.run(|txn| {
            txn.keyed_rows(table, lower, upper, resume_after, limit, Direction::Backward)
        })
    }

    fn keyed_rows(
        &self,
        table: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        resume_after: Option<&[u8]>,
        limit: usize,
        direction: Direction,
    ) -> Result<Vec<(RowKey, Row)>> {
        let table = self.engine.table(table)?;
        let (mut lower, mut upper) = key_range(&table.key_columns, &table.def.name, lower, upper)?;
        match direction {
            Direction::Forward => lower = resume_bound(lower, resume_after, direction),
            Direction::Backward => upper = resume_bound(upper, resume_after, direction),
        }
        let mut rows = Vec::new();
        if limit == 0 {
            return Ok(rows);
        }
        let mut entries = table.tree.range(
            lower.as_ref().map(Vec::as_slice),
            upper.as_ref().map(Vec::as_slice),
            direction,
        );
        while let Some(entry) = entries.next_entry() {
            let (key, bytes) = entry?;
            if let Some(row) = self.visible_row_stored(bytes)? {
                rows.push((key.to_vec(), row));
                if rows.len() == limit {
                    break;
                }
            }
        }
        Ok(rows)
    }

    pub fn insert(&mut self, table: &str, row: Row) -> Result<()> {
        self.run(|txn| {
            let table = txn.engine.table(table)?;
            table.check_row(&row)?;
            let key = table.key_of(&row)?;
            let mut encoded = Vec::new();
            encode_row(&row, &mut encoded);
            txn.modify(&table, &key, Action::Insert(encoded)).map(|_| ())
        })
    }

    /// Updates the row with primary key `key`: `change` gets the latest committed version (in
    /// READ COMMITTED, after waiting for a concurrent writer) and returns the new row, or
    /// `None` to leave it. Returns whether a row was updated.
    pub fn update(
        &mut self,
        table: &str,
        key: &[Value],
        change: &mut dyn FnMut(&Row) -> Option<Row>,
    ) -> Result<bool> {
        self.run(|txn| {
            let table = txn.engine.table(table)?;
            let encoded = table.encode_primary_key(key)?;
            txn.modify(&table, &encoded, Action::Update(change))
        })
    }

    pub fn delete(&mut self, table: &str, key: &[Value]) -> Result<bool> {
        self.run(|txn| {
            let table = txn.engine.table(table)?;
            let encoded = table.encode_primary_key(key)?;
            txn.modify(&table, &encoded, Action::Delete(None))
        })
    }

    /// `update` of the row with row key `key` (from a keyed read): also addresses rows of a
    /// table without a primary key. 22023 if `key` is not a key of this table.
    pub fn update_by_key(
        &mut self,
        table: &str,
        key: &[u8],
        change: &mut dyn FnMut(&Row) -> Option<Row>,
    ) -> Result<bool> {
        self.run(|txn| {
            let table = txn.engine.table(table)?;
            table.check_row_key(key)?;
            txn.modify(&table, key, Action::Update(change))
        })
    }

    /// `delete` of the row with row key `key` (from a keyed read).
    pub fn delete_by_key(&mut self, table: &str, key: &[u8]) -> Result<bool> {
        self.run(|txn| {
            let table = txn.engine.table(table)?;
            table.check_row_key(key)?;
            txn.modify(&table, key, Action::Delete(None))
        })
    }

    /// `delete_by_key` that deletes only if `check` passes on the row's latest version (READ
    /// COMMITTED re-check of a DELETE's WHERE after waiting for a concurrent writer).
    pub fn delete_by_key_if(
        &mut self,
        table: &str,
        key: &[u8],
        check: &mut dyn FnMut(&Row) -> bool,
    ) -> Result<bool> {
        self.run(|txn| {
            let table = txn.engine.table(table)?;
            table.check_row_key(key)?;
            txn.modify(&table, key, Action::Delete(Some(check)))
        })
    }

    /// Sets the limits on waits for other transactions (cancel flag, statement deadline,
    /// lock timeout), for the statements that follow.
    pub fn set_wait_limits(&mut self, limits: WaitLimits) {
        self.wait_limits = limits;
    }

    /// The transaction holding the row: the writer of its newest version if still running.
    fn holder(&self, newest: &Version) -> Option<TxnId> {
        let txns = &self.engine.txns;
        if newest.xmax != 0 && newest.xmax != self.id && txns.is_active(newest.xmax) {
            return Some(newest.xmax);
        }
        if newest.xmin != self.id && txns.is_active(newest.xmin) {
            return Some(newest.xmin);
        }
        None
    }

    /// Gives this transaction its real id at its first write; the snapshot then recognizes
    /// the transaction's own versions.
    fn ensure_id(&mut self) -> Result<TxnId> {
        if self.id == 0 {
            self.id = self.engine.txns.assign()?;
            self.snapshot.me = self.id;
        }
        Ok(self.id)
    }

    /// Writes one row of the table `handle` belongs to, through its current handle (resolved
    /// under the shared DDL lock, so indexes created since `handle` was taken are maintained;
    /// 42P01 if the table was dropped).
    fn modify(&mut self, handle: &Arc<Table>, key: &[u8], mut action: Action<'_>) -> Result<bool> {
        self.ensure_id()?;
        let engine = Arc::clone(&self.engine);
        loop {
            let ddl = engine.ddl.read();
            let table = engine.current(handle)?;
            let table = &table;
            let guard = engine.row_lock(key, &table.def.name);
            let before = table.tree.get(key)?;
            let original = match &before {
                Some(bytes) => decode_versions(bytes)?,
                None => Vec::new(),
            };
            let mut versions = original.clone();
            // Versions of transactions that died in a crash stay until pruned: remove them
            // first, so that the newest remaining version is the row's real latest state.
            self.prune(&mut versions)?;
            if let Some(holder) = versions.first().and_then(|newest| self.holder(newest)) {
                drop(guard);
                drop(ddl);
                engine.txns.wait_for(self.id, holder, &self.wait_limits)?;
                continue;
            }
            let Some(mode) = self.apply(table, &mut versions, &mut action)? else {
                return Ok(false);
            };
            // A locking read's lock on the row (locks.rs) blocks a conflicting write.
            let locker = guard.conflicting(table.identity, key, self.id, mode, &engine.txns);
            if let Some(locker) = locker {
                drop(guard);
                drop(ddl);
                engine.txns.wait_for(self.id, locker, &self.wait_limits)?;
                continue;
            }
            self.prune(&mut versions)?;
            let _index_guards = match self.maintain_indexes(table, key, &versions)? {
                IndexOutcome::Written(guards, added) => {
                    let table_entries = added.into_iter().map(|(position, entry)| {
                        let index = Arc::clone(&table.indexes[position]);
                        (Arc::clone(table), index, entry, key.to_vec())
                    });
                    self.index_entries.extend(table_entries);
                    guards
                }
                IndexOutcome::Wait(holder) => {
                    drop(guard);
                    drop(ddl);
                    engine.txns.wait_for(self.id, holder, &self.wait_limits)?;
                    continue;
                }
            };
            // Durable with the commit: the commit record follows these changes in the WAL.
            if versions.is_empty() {
                table.tree.delete(key)?;
            } else {
                table.tree.insert(key, &encode_versions(&versions))?;
            }
            self.undo.push(UndoEntry { table: Arc::clone(table), key: key.to_vec(), before });
            self.wrote = true;
            self.written.push((Arc::clone(table), key.to_vec()));
            // Index values that only the replaced or pruned versions carried: their entries go
            // now, under the row lock, once the row itself is written (undo restores both).
            drop_stale_entries(table, key, &original, &versions)?;
            drop(guard);
            drop(ddl);
            return Ok(true);
        }
    }

    /// Adds index entries for the row's new newest version (if this transaction made one),
    /// after checking unique indexes. Returns the unique-index guards, held until the row is
    /// written, or the transaction to wait for.
    fn maintain_indexes<'t>(
        &self,
        table: &'t Table,
        key: &[u8],
        versions: &[Version],
    ) -> Result<IndexOutcome<'t>> {
        let mut guards = Vec::new();
        let mut added = Vec::new();
        let Some(newest) =
            versions.first().filter(|version| version.xmin == self.id && version.xmax == 0)
        else {
            return Ok(IndexOutcome::Written(guards, added));
        };
        let row = decode_row(&newest.row)?;
        let previous = match versions.get(1) {
            Some(version) => Some(decode_row(&version.row)?),
            None => None,
        };
        for (position, index) in table.indexes.iter().enumerate() {
            let prefix = index.prefix(&row)?;
            if index.def.unique && !index.has_null(&row) {
                guards.push(index.unique_lock.lock());
                if let Some(holder) = self.unique_conflict(table, index, &prefix, key)? {
                    return Ok(IndexOutcome::Wait(holder));
                }
            }
            let unchanged = match &previous {
                Some(previous) => index.prefix(previous)? == prefix,
                None => false,
            };
            if !unchanged {
                let mut entry = prefix;
                entry.extend_from_slice(key);
                index.tree.insert(&entry, key)?;
                added.push((position, entry));
            }
        }
        Ok(IndexOutcome::Written(guards, added))
    }

    /// Checks that no other row holds `prefix` in a unique index: a live committed version is
    /// a violation (23505); one being written or deleted by a running transaction must be
    /// waited for (its outcome decides).
    fn unique_conflict(
        &self,
        table: &Table,
        index: &Index,
        prefix: &[u8],
        own_key: &[u8],
    ) -> Result<Option<TxnId>> {
        let txns = &self.engine.txns;
        let mut upper = prefix.to_vec();
        upper.push(0xFF);
        for entry in
            index.tree.range(Bound::Included(prefix), Bound::Excluded(&upper), Direction::Forward)
        {
            let (_, other_key) = entry?;
            if other_key == own_key {
                continue;
            }
            let Some(bytes) = table.tree.get(&other_key)? else { continue };
            for version in decode_versions(&bytes)? {
                if index.prefix(&decode_row(&version.row)?)? != prefix {
                    continue;
                }
                if version.xmin != self.id && txns.is_active(version.xmin) {
                    return Ok(Some(version.xmin));
                }
                if version.xmax != 0 && version.xmax != self.id && txns.is_active(version.xmax) {
                    return Ok(Some(version.xmax));
                }
                let created =
                    version.xmin == self.id || txns.status(version.xmin)? == TxnStatus::Committed;
                let deleted = version.xmax != 0
                    && (version.xmax == self.id
                        || txns.status(version.xmax)? == TxnStatus::Committed);
                if created && !deleted {
                    return Err(EngineError::UniqueViolation {
                        constraint: index.def.name.clone(),
                    });
                }
            }
        }
        Ok(None)
    }

    /// Rows found through a secondary index with index values in the given range, in index
    /// order. Each entry is checked against the row's visible version.
    pub fn index_scan(
        &mut self,
        table: &str,
        index: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
    ) -> Result<Vec<Row>> {
        self.run(|txn| {
            let entries = txn.index_rows(table, index, lower, upper, None, usize::MAX)?;
            Ok(entries.into_iter().map(|(_, _, row)| row).collect())
        })
    }

    /// Up to `limit` rows found through a secondary index with index values in the given
    /// range, in index order, as (index entry key, row key, row); after the entry key
    /// `resume_after` (the last of the previous page) when given. Entries are checked against
    /// the row's visible version as in `index_scan`.
    pub fn index_scan_page(
        &mut self,
        table: &str,
        index: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        resume_after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, RowKey, Row)>> {
        self.run(|txn| txn.index_rows(table, index, lower, upper, resume_after, limit))
    }

    fn index_rows(
        &self,
        table: &str,
        index: &str,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        resume_after: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, RowKey, Row)>> {
        let table = self.engine.table(table)?;
        let Some(index) = table.indexes.iter().find(|candidate| candidate.def.name == index) else {
            return Err(EngineError::UndefinedTable { name: index.to_string() });
        };
        let (lower, upper) = key_range(&index.columns, &index.def.name, lower, upper)?;
        let lower = resume_bound(lower, resume_after, Direction::Forward);
        let mut rows = Vec::new();
        if limit == 0 {
            return Ok(rows);
        }
        let entries = index.tree.range(
            lower.as_ref().map(Vec::as_slice),
            upper.as_ref().map(Vec::as_slice),
            Direction::Forward,
        );
        for entry in entries {
            let (entry_key, row_key) = entry?;
            let Some(bytes) = table.tree.get(&row_key)? else { continue };
            let Some(row) = self.visible_row_stored(&bytes)? else { continue };
            // Stale entry: the visible version has other index values.
            let mut expected = index.prefix(&row)?;
            expected.extend_from_slice(&row_key);
            if expected == entry_key {
                rows.push((entry_key, row_key, row));
                if rows.len() == limit {
                    break;
                }
            }
        }
        Ok(rows)
    }

    /// Whether the row's latest state is a row: its newest version committed (or ours) and
    /// not deleted.
    fn is_live(&self, newest: Option<&Version>) -> Result<bool> {
        let txns = &self.engine.txns;
        Ok(match newest {
            Some(version) => {
                let created =
                    version.xmin == self.id || txns.status(version.xmin)? == TxnStatus::Committed;
                let deleted = version.xmax != 0
                    && (version.xmax == self.id
                        || txns.status(version.xmax)? == TxnStatus::Committed);
                created && !deleted
            }
            None => false,
        })
    }

    /// Applies `action` to a row whose newest version no other running transaction holds.
    /// Returns the row-lock mode the change needs (None: nothing changed).
    fn apply(
        &self,
        table: &Table,
        versions: &mut Vec<Version>,
        action: &mut Action<'_>,
    ) -> Result<Option<LockMode>> {
        let txns = &self.engine.txns;
        let newest = versions.first().cloned();
        let live = self.is_live(newest.as_ref())?;
        if let Action::Insert(row) = action {
            if live {
                return Err(EngineError::UniqueViolation {
                    constraint: format!("{}_pkey", table.def.name),
                });
            }
            versions.insert(0, Version { xmin: self.id, xmax: 0, row: row.clone() });
            // A new row conflicts with no lock but a FOR UPDATE on a deleted one.
            return Ok(Some(LockMode::KeyShare));
        }
        let Some(newest) = newest.filter(|_| live) else {
            // Deleted or never there. Under REPEATABLE READ a row that this snapshot sees
            // but a later transaction deleted is a conflict.
            if self.isolation == IsolationLevel::RepeatableRead
                && self.visible_row(versions)?.is_some()
            {
                return Err(EngineError::SerializationFailure);
            }
            return Ok(None);
        };
        if self.isolation == IsolationLevel::RepeatableRead
            && !txns.visible(&self.snapshot, newest.xmin)?
        {
            // First updater wins: the row changed after this snapshot.
            return Err(EngineError::SerializationFailure);
        }
        let current = decode_row(&newest.row)?;
        let mode = match action {
            Action::Insert(_) => unreachable!("handled above"),
            Action::Delete(check) => {
                if check.as_mut().is_some_and(|check| !check(&current)) {
                    return Ok(None);
                }
                // Even a version this transaction created is only marked: removing it would
                // drop the row lock, and another transaction could take the key before our
                // rollback restores the row over its work.
                versions[0].xmax = self.id;
                LockMode::Update
            }
            Action::Update(change) => {
                let Some(new_row) = change(&current) else { return Ok(None) };
                table.check_row(&new_row)?;
                if table.def.primary_key.as_ref().is_some_and(|columns| {
                    columns.iter().any(|&column| new_row[column] != current[column])
                }) {
                    return Err(EngineError::InvalidRow {
                        detail: "updating a primary key column is not supported".to_string(),
                    });
                }
                let mut encoded = Vec::new();
                encode_row(&new_row, &mut encoded);
                if newest.xmin == self.id {
                    versions[0].row = encoded;
                } else {
                    versions[0].xmax = self.id;
                    versions.insert(0, Version { xmin: self.id, xmax: 0, row: encoded });
                }
                update_mode(table, &current, &new_row)?
            }
        };
        Ok(Some(mode))
    }

    fn prune(&self, versions: &mut Vec<Version>) -> Result<()> {
        prune_versions(&self.engine.txns, self.id, versions, false)
    }

    pub fn savepoint(&mut self, name: &str) -> Result<()> {
        if self.failed {
            return Err(EngineError::TransactionAborted);
        }
        self.savepoints.push((name.to_string(), self.undo.len(), self.held_locks.len()));
        Ok(())
    }

    /// Undoes everything since the savepoint, which stays defined; clears the failed state.
    pub fn rollback_to_savepoint(&mut self, name: &str) -> Result<()> {
        let Some(position) = self.savepoints.iter().rposition(|(saved, ..)| saved == name) else {
            return Err(EngineError::UndefinedSavepoint { name: name.to_string() });
        };
        let (_, mark, lock_mark) = self.savepoints[position];
        self.savepoints.truncate(position + 1);
        self.undo_to(mark)?;
        // Locks taken since the savepoint go, as PostgreSQL's subtransaction abort drops them.
        self.release_locks(lock_mark);
        // A statement that began before the savepoint now only reaches back to it.
        self.statement_mark = self.statement_mark.min(mark);
        self.failed = false;
        Ok(())
    }

    pub fn release_savepoint(&mut self, name: &str) -> Result<()> {
        let Some(position) = self.savepoints.iter().rposition(|(saved, ..)| saved == name) else {
            return Err(EngineError::UndefinedSavepoint { name: name.to_string() });
        };
        self.savepoints.truncate(position);
        Ok(())
    }

    /// Restores the before-images of the undo entries above `mark`, newest first. Each restored
    /// version gets its index entries back: an in-place change of this transaction's own
    /// version (or purge, meanwhile) may have deleted the entry of a value it restores. An
    /// entry leaves the list only once applied; if undo fails the transaction is failed, so
    /// it can only roll back, never commit half undone.
    ///
    /// Undo goes through the table's current handle, so the entries of indexes created since
    /// the write are restored (and those of the undone versions removed) too; after the table
    /// was dropped or truncated its rows are gone and there is nothing to restore.
    fn undo_to(&mut self, mark: usize) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        while self.undo.len() > mark {
            let entry = self.undo.last().expect("above mark");
            let outcome = (|| -> Result<()> {
                let _ddl = engine.ddl.read();
                let Some(table) = engine.current_with_tree(&entry.table) else { return Ok(()) };
                let _guard = engine.row_lock(&entry.key, &table.def.name);
                let undone = match table.tree.get(&entry.key)? {
                    Some(bytes) => decode_versions(&bytes)?,
                    None => Vec::new(),
                };
                let restored = match &entry.before {
                    Some(before) => {
                        table.tree.insert(&entry.key, before)?;
                        let restored = decode_versions(before)?;
                        for version in &restored {
                            let row = decode_row(&version.row)?;
                            for index in &table.indexes {
                                let mut index_key = index.prefix(&row)?;
                                index_key.extend_from_slice(&entry.key);
                                index.tree.insert(&index_key, &entry.key)?;
                            }
                        }
                        restored
                    }
                    None => {
                        table.tree.delete(&entry.key)?;
                        Vec::new()
                    }
                };
                // Entries of values only the undone versions carried (from this transaction's
                // writes, or from a backfill by `create_index`) go now, after the row.
                drop_stale_entries(&table, &entry.key, &undone, &restored)?;
                Ok(())
            })();
            if let Err(error) = outcome {
                self.failed = true;
                return Err(error);
            }
            self.undo.pop();
        }
        Ok(())
    }

    /// Commits: durable when this returns. A failed transaction cannot commit: it is rolled
    /// back and `TransactionAborted` says so (PostgreSQL's COMMIT of a failed block answers
    /// ROLLBACK; the server maps this error to that).
    pub fn commit(mut self) -> Result<()> {
        self.done = true;
        if self.failed {
            let undone = self.undo_to(0);
            let finished = self.engine.txns.finish(self.virtual_id, self.id, false, self.wrote);
            self.release_locks(0);
            finished?;
            self.queue_for_purge();
            undone?;
            return Err(EngineError::TransactionAborted);
        }
        let finished = self.engine.txns.finish(self.virtual_id, self.id, true, self.wrote);
        self.release_locks(0);
        finished?;
        self.queue_for_purge();
        Ok(())
    }

    pub fn rollback(mut self) -> Result<()> {
        self.done = true;
        let undone = self.undo_to(0);
        let finished = self.engine.txns.finish(self.virtual_id, self.id, false, self.wrote);
        self.release_locks(0);
        finished?;
        self.queue_for_purge();
        undone
    }
}

impl Transaction {
    /// Hands the rows written and the index entries added to the purge thread. An added entry
    /// can be stale even after a commit: a transaction that changed an indexed value of its
    /// own new version twice left an entry for the middle value.
    fn queue_for_purge(&mut self) {
        if self.written.is_empty() && self.index_entries.is_empty() {
            return;
        }
        let mut queue = self.engine.purge_queue.lock();
        if !queue.overflowed() {
            queue.rows.append(&mut self.written);
            queue.entries.append(&mut self.index_entries);
            queue.overflowed();
        }
        drop(queue);
        self.engine.changed.store(true, Ordering::Release);
    }

    /// Ends the transaction the way a crash would: no rollback, nothing in the commit log.
    /// After a restart it counts as aborted. For crash tests.
    #[doc(hidden)]
    pub fn abandon_as_if_crashed(mut self) {
        self.done = true;
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.undo_to(0);
            let _ = self.engine.txns.finish(self.virtual_id, self.id, false, self.wrote);
            self.release_locks(0);
            self.queue_for_purge();
        }
    }
}
