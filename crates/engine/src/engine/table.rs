//! Table and index handles: the definitions, the B+trees, the encoding of primary keys
//! and index entries, and key ranges for scans.

use std::borrow::Cow;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tierdb_access::{encode_key, BTree, Direction, KeyColumn, KeyKind};
use tierdb_vector::hnsw::IndexParameters;

use crate::error::{EngineError, Result};
use crate::row::{Row, Value, Version};

use super::layout::Layout;
use super::Transaction;

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

/// A vector index: its name, the indexed column, its access method and its options
/// (`parameters.dimensions` and `parameters.metric` for both methods; `m` and
/// `ef_construction` only for HNSW).
#[derive(Clone, Debug, PartialEq)]
pub struct VectorIndexDef {
    pub name: String,
    pub column: usize,
    pub parameters: IndexParameters,
    pub method: VectorMethod,
}

/// The access method of a vector index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorMethod {
    Hnsw,
    /// ivfflat with `lists` lists.
    IvfFlat {
        lists: usize,
    },
}

/// An open vector index (its maintenance and search: `vector_index.rs`).
pub(super) struct VectorIndex {
    pub(super) def: VectorIndexDef,
    pub(super) graph: VectorGraph,
    /// Vectors that the purge thread's queued passes left carried by no version since the
    /// graph was last purged (`vector_purge.rs`: past a tenth of the nodes it purges).
    pub(super) stale: std::sync::atomic::AtomicU64,
}

/// The pages of a vector index, by access method.
pub(super) enum VectorGraph {
    Hnsw(tierdb_vector::hnsw::Hnsw),
    IvfFlat(tierdb_vector::ivfflat::IvfFlat),
}

/// A secondary index's B+tree: key = encoded index columns followed by the row's primary key
/// bytes, value = the primary key bytes. Entries carry no visibility: readers check them
/// against the row's visible version, so stale entries (left by rollbacks and by updates
/// that changed the indexed columns) are harmless.
pub(super) struct Index {
    pub(super) def: IndexDef,
    pub(super) tree: BTree,
    pub(super) columns: Vec<KeyColumn>,
    /// Serializes uniqueness check and entry insertion for one unique index.
    pub(super) unique_lock: Mutex<()>,
}

impl Index {
    pub(super) fn prefix(&self, row: &[Value]) -> Result<Vec<u8>> {
        index_prefix(&self.def, &self.columns, row)
    }

    pub(super) fn has_null(&self, row: &[Value]) -> bool {
        self.def.columns.iter().any(|&column| matches!(row[column], Value::Null))
    }
}

/// The encoded index values of `row` for the index `def` (key columns `columns`): the start
/// of its entry key, which the row key follows.
pub(super) fn index_prefix(
    def: &IndexDef,
    columns: &[KeyColumn],
    row: &[Value],
) -> Result<Vec<u8>> {
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

/// Which parts of each row a paged scan returns (`Transaction::scan_page_projected`).
#[derive(Clone, Copy, Debug)]
pub struct Projection<'a> {
    /// The columns to decode, by position; the others read as NULL (None: all of them).
    pub columns: Option<&'a [bool]>,
    /// Whether each row comes with its key (else an empty key: no copy per row).
    pub keys: bool,
    /// Whether each row comes with its values; else an empty row (its encoding is still
    /// checked), for a caller that reads none of them, such as count(*): no vector per row.
    pub values: bool,
}

impl Projection<'_> {
    pub const ALL: Projection<'static> = Projection { columns: None, keys: true, values: true };
}

/// One page of a scan: its rows, and the key to resume after when the page was full.
#[derive(Debug)]
pub struct RowPage {
    pub rows: Vec<(RowKey, Row)>,
    pub resume_after: Option<RowKey>,
}

/// The handle of index `def` (on `table`) over `tree`.
pub(super) fn index_handle(table: &TableDef, def: IndexDef, tree: BTree) -> Index {
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

/// A table resolved once by name (`Transaction::table`, `Engine::table_handle`) and passed to
/// every read and write after it, so that a statement looks its tables up once instead of
/// once per scan page or row written. It follows the table through the DDL that swaps in a
/// new version (CREATE and DROP INDEX, TRUNCATE: the next use sees the new indexes or the
/// fresh, empty trees) and fails with 42P01, as a lookup by name would, once the table was
/// dropped, even if another table has taken its name since. Cheap to clone.
#[derive(Clone)]
pub struct TableHandle {
    slot: Arc<TableSlot>,
    /// The columns the holder was planned for (`pinned`): with them, the handle fails once
    /// ADD / DROP COLUMN changed them, rather than hand out or take rows of other columns.
    pinned: Option<Arc<Layout>>,
}

/// What every handle of one table (from CREATE TABLE to DROP TABLE) shares.
struct TableSlot {
    name: String,
    /// The table's current version, replaced by DDL under the exclusive DDL lock; taken by
    /// DROP TABLE, so that a handle kept long after (a prepared statement's plan) does not
    /// keep the dropped trees from being freed (graveyard.rs).
    current: RwLock<Option<Arc<Table>>>,
    /// Set by DROP TABLE under the exclusive DDL lock; one atomic load at each use.
    dropped: AtomicBool,
}

impl TableHandle {
    pub(super) fn new(table: Arc<Table>) -> TableHandle {
        let name = table.def.name.clone();
        let current = RwLock::new(Some(table));
        let slot = TableSlot { name, current, dropped: AtomicBool::new(false) };
        TableHandle { slot: Arc::new(slot), pinned: None }
    }

    /// This handle, bound to the table's current columns: every later use fails (22023)
    /// once ALTER TABLE ... ADD / DROP COLUMN has changed them, so that a statement planned
    /// for the old columns never reads or writes rows of the new ones (a DROP and an ADD
    /// can keep the width). Index DDL and TRUNCATE keep the columns and the handle works.
    pub fn pinned(&self) -> Result<TableHandle> {
        let layout = Arc::clone(&self.table()?.layout);
        Ok(TableHandle { slot: Arc::clone(&self.slot), pinned: Some(layout) })
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.slot.name
    }

    /// The table's current version, or 42P01 once it was dropped. A reader may keep using the
    /// version it got after a concurrent DROP or TRUNCATE: a dropped tree is freed only once
    /// no handle of it is left (graveyard.rs).
    pub(super) fn table(&self) -> Result<Arc<Table>> {
        if self.slot.dropped.load(Ordering::Acquire) {
            return Err(EngineError::UndefinedTable { name: self.slot.name.clone() });
        }
        let dropped = || EngineError::UndefinedTable { name: self.slot.name.clone() };
        let current = self.slot.current.read().clone().ok_or_else(dropped)?;
        if self.pinned.as_ref().is_some_and(|pinned| !Arc::ptr_eq(pinned, &current.layout)) {
            return Err(EngineError::InvalidRow {
                detail: format!(
                    "the columns of table={} changed since the statement was planned",
                    self.slot.name
                ),
            });
        }
        Ok(current)
    }

    /// The pages the table's trees hold (pg_relation_size and its kin): the table's, then
    /// each index's by name, B+tree indexes first. None for a tree from before the page
    /// count existed and for a vector index (its pages are not counted).
    pub fn relation_pages(&self) -> Result<RelationPages> {
        let table = self.table()?;
        let mut indexes = Vec::with_capacity(table.indexes.len() + table.vector_indexes.len());
        for index in &table.indexes {
            indexes.push((index.def.name.clone(), index.tree.page_count()?));
        }
        for index in &table.vector_indexes {
            indexes.push((index.def.name.clone(), None));
        }
        Ok(RelationPages { table: table.tree.page_count()?, indexes })
    }

    /// Swaps in a new version of the same table (DDL, under the exclusive DDL lock).
    pub(super) fn replace(&self, table: Arc<Table>) {
        let mut current = self.slot.current.write();
        let Some(existing) = current.as_ref() else { panic!("a dropped table has no versions") };
        assert_eq!(existing.identity, table.identity, "a new version of the same table");
        assert!(!self.slot.dropped.load(Ordering::Acquire), "a dropped table has no versions");
        *current = Some(table);
    }

    /// Marks the table dropped (DROP TABLE, under the exclusive DDL lock): every handle
    /// fails from its next use on, and the slot lets go of the table's last version.
    pub(super) fn mark_dropped(&self) {
        self.slot.dropped.store(true, Ordering::Release);
        self.slot.current.write().take();
    }
}

impl std::fmt::Debug for TableHandle {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("TableHandle").field("name", &self.slot.name).finish()
    }
}

/// The pages a table and its indexes hold (`TableHandle::relation_pages`).
#[derive(Clone, Debug)]
pub struct RelationPages {
    pub table: Option<u64>,
    /// (index name, pages).
    pub indexes: Vec<(String, Option<u64>)>,
}

/// How a transaction's read or write names its table: a `TableHandle` resolved once (the
/// SQL layer's way), or a name looked up at that call (`&str`: for tests and tools that make
/// one call per table; it resolves through `Transaction::table`, nothing else).
pub trait TableRef {
    fn resolve(&self, txn: &Transaction) -> Result<Cow<'_, TableHandle>>;
}

impl TableRef for TableHandle {
    fn resolve(&self, _: &Transaction) -> Result<Cow<'_, TableHandle>> {
        Ok(Cow::Borrowed(self))
    }
}

impl TableRef for str {
    fn resolve(&self, txn: &Transaction) -> Result<Cow<'_, TableHandle>> {
        txn.table(self).map(Cow::Owned)
    }
}

/// One version of a table's handle. DDL never changes a handle: `create_index`, `drop_index`
/// and `truncate_table` swap a new one into the table map (under the exclusive DDL lock), so
/// a handle held by a transaction stays internally consistent.
pub(super) struct Table {
    pub(super) def: TableDef,
    /// Where each column of `def` is stored (design 016). Compared by pointer: a row is
    /// written only under the layout it was encoded for (`Transaction::apply`).
    pub(super) layout: Arc<Layout>,
    pub(super) tree: BTree,
    pub(super) key_columns: Vec<KeyColumn>,
    /// Shared by every handle of one table, so a handle swapped in by DDL never hands out a
    /// row id the previous handle already gave.
    pub(super) next_row_id: Arc<AtomicU64>,
    /// Shared with later handles (`create_index` keeps the existing ones), so the
    /// unique-index mutex is one per index whatever handle a writer holds.
    pub(super) indexes: Vec<Arc<Index>>,
    /// HNSW indexes, kept apart from the B+tree indexes (no unique checks, no entry undo).
    pub(super) vector_indexes: Vec<Arc<VectorIndex>>,
    /// Names the catalog object: a table dropped and created again under the same name gets a
    /// new identity, while the handles swapped in by index DDL and truncation keep it.
    pub(super) identity: u64,
}

impl Table {
    pub(super) fn key_of(&self, row: &[Value]) -> Result<Vec<u8>> {
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

    pub(super) fn encode_primary_key(&self, values: &[Value]) -> Result<Vec<u8>> {
        let mut key = Vec::new();
        encode_key(&self.key_columns, values, &mut key)
            .map_err(|error| EngineError::InvalidRow { detail: error.to_string() })?;
        Ok(key)
    }

    /// Checks that `key` is a row key of this table (it decodes with the key columns and
    /// encodes back to itself), so a caller's bytes cannot address something else.
    pub(super) fn check_row_key(&self, key: &[u8]) -> Result<()> {
        let invalid = || EngineError::InvalidRow {
            detail: format!("not a row key of table={}", self.def.name),
        };
        let values = tierdb_access::decode_key(&self.key_columns, key).map_err(|_| invalid())?;
        if self.encode_primary_key(&values).map_err(|_| invalid())? != key {
            return Err(invalid());
        }
        Ok(())
    }

    pub(super) fn check_row(&self, row: &[Value]) -> Result<()> {
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

/// Lower and upper bounds on encoded keys.
type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Encodes bounds given as values of the leading `columns` of a key (all of them, or a
/// prefix) as bounds on the encoded keys. A prefix is a byte prefix of every key starting
/// with those values, and the prefix followed by 0xFF is above all of them (the next
/// column's bytes start with a null marker, 0x00..=0x02), so `> prefix` becomes
/// `>= prefix+0xFF` and `<= prefix` becomes `< prefix+0xFF`; for a whole key the two forms
/// select the same keys.
pub(super) fn key_range(
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
pub(super) fn resume_bound(
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

/// Deletes the index entries of row `key` for index values that versions in `before` carried
/// and none in `after` does. The caller holds the row lock. Returns entries deleted.
pub(super) fn drop_stale_entries(
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
            .map(|version| index.prefix(&table.layout.decode(&version.row)?))
            .collect::<Result<std::collections::BTreeSet<Vec<u8>>>>()?;
        let gone = removed
            .iter()
            .map(|version| index.prefix(&table.layout.decode(&version.row)?))
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
