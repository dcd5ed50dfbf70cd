//! The catalog: one entry per table in the catalog B+tree (keyed by name: the table's tree,
//! columns, primary key and indexes with their trees), loaded into the table map at open, and
//! the DDL that changes it (create, drop and truncate a table, create and drop an index), each
//! durable when it returns.

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tierdb_access::{BTree, Direction, KeyColumn, KeyKind};
use tierdb_common::PageId;
use tierdb_storage::PageStore;

use crate::error::{EngineError, Result};
use crate::row::{decode_row, decode_versions, encode_row, Value, Version};
use crate::txn::TxnStatus;

use tierdb_vector::hnsw::IndexParameters as VectorIndexParameters;

use super::index_build::{IndexBuild, IndexBuildOptions};
use super::layout::{value_fits, Layout};
use super::table::{
    index_handle, index_prefix, ColumnDef, Index, IndexDef, Table, TableDef, TableHandle,
    VectorGraph, VectorIndex, VectorIndexDef, VectorMethod,
};
use super::vector_index::{metric_code, metric_of};
use super::{Shared, TempOwner};

/// A vector index's definition and its graph's meta page, as the catalog stores them.
type VectorEntry = (VectorIndexDef, PageId);

fn encode_def(
    def: &TableDef,
    layout: &Layout,
    tree: PageId,
    index_trees: &[PageId],
    vector_indexes: &[VectorEntry],
) -> Vec<u8> {
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
    // Vector indexes follow, if any: entries written before they existed end here.
    if !vector_indexes.is_empty() {
        row.push(Value::Int(i64::try_from(vector_indexes.len()).expect("fits")));
    }
    for (index, meta) in vector_indexes {
        let parameters = &index.parameters;
        // An ivfflat index is stored with m = 0 and its lists in ef_construction's place.
        let (m, second) = match index.method {
            VectorMethod::Hnsw => (parameters.m, parameters.ef_construction),
            VectorMethod::IvfFlat { lists } => (0, lists),
        };
        row.push(Value::Text(index.name.clone()));
        row.extend(
            [index.column, m, second, parameters.dimensions]
                .map(|number| Value::Int(i64::try_from(number).expect("fits"))),
        );
        row.push(Value::Int(metric_code(parameters.metric)));
        row.push(Value::Int(i64::try_from(meta.0).expect("page ids fit")));
    }
    // The layout section (design 016), only for tables whose layout changed: the vector
    // index count is then always written, so that the section starts at a known place.
    if !layout.is_plain() {
        if vector_indexes.is_empty() {
            row.push(Value::Int(0));
        }
        encode_layout(layout, &mut row);
    }
    encode_row(&row, &mut out);
    out
}

/// The layout section: marker, slot count, per column its slot and missing value, then
/// the kind of every slot.
fn encode_layout(layout: &Layout, row: &mut Vec<Value>) {
    let number = |value: usize| Value::Int(i64::try_from(value).expect("fits"));
    row.push(Value::Text(LAYOUT_MARKER.to_string()));
    row.push(number(layout.slot_kinds().len()));
    for (&slot, missing) in layout.slots().iter().zip(layout.missing()) {
        row.push(number(slot));
        row.push(missing.clone());
    }
    row.extend(layout.slot_kinds().iter().map(|&kind| Value::Int(kind_code(kind))));
}

/// The first value of the layout section.
const LAYOUT_MARKER: &str = "layout";

/// Decodes the layout section that follows `marker` (checked as `Layout::changed` checks a
/// change: slots distinct and in range, of their column's kind, missing values that fit).
fn decode_layout(
    values: &mut impl Iterator<Item = Value>,
    columns: &[ColumnDef],
) -> Result<Layout> {
    let bad = |detail: &str| EngineError::Corrupt { what: "catalog", detail: detail.to_string() };
    let mut next = || values.next().ok_or_else(|| bad("short layout"));
    let number = |value: Value| match value {
        Value::Int(number) => usize::try_from(number).map_err(|_| bad("bad layout number")),
        _ => Err(bad("expected integer")),
    };
    let slot_count = number(next()?)?;
    if slot_count > u16::MAX.into() {
        return Err(bad("bad slot count"));
    }
    let mut slots = Vec::with_capacity(columns.len());
    let mut missing = Vec::with_capacity(columns.len());
    for _ in columns {
        slots.push(number(next()?)?);
        missing.push(next()?);
    }
    let mut slot_kinds = Vec::with_capacity(slot_count);
    for _ in 0..slot_count {
        slot_kinds.push(kind_of(i64::try_from(number(next()?)?).expect("came from an i64"))?);
    }
    let valid = slots.iter().enumerate().all(|(position, &slot)| {
        slot < slot_count
            && !slots[..position].contains(&slot)
            && slot_kinds[slot] == columns[position].kind
            && value_fits(&missing[position], columns[position].kind)
    });
    if !valid {
        return Err(bad("bad layout"));
    }
    Ok(Layout::build(slots, missing, slot_kinds))
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

/// A catalog entry: the table, its layout, its tree, its B+tree indexes' trees and its
/// vector indexes.
type DecodedDef = (TableDef, Layout, PageId, Vec<PageId>, Vec<VectorEntry>);

fn decode_def(bytes: &[u8]) -> Result<DecodedDef> {
    let bad = |detail: &str| EngineError::Corrupt { what: "catalog", detail: detail.to_string() };
    let tree = PageId(u64::from_le_bytes(
        bytes.get(..8).ok_or_else(|| bad("short entry"))?.try_into().expect("8"),
    ));
    let values = decode_row(&bytes[8..])?;
    let mut values = values.into_iter().peekable();
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
    let mut vector_indexes = Vec::new();
    if let Some(count) = values.next_if(|value| matches!(value, Value::Int(_))) {
        let mut next = || values.next().ok_or_else(|| bad("short vector index"));
        for _ in 0..int(count)? {
            let name = text(next()?)?;
            let mut number = || -> Result<usize> {
                usize::try_from(int(next()?)?).map_err(|_| bad("bad vector index field"))
            };
            let (column, m, ef_construction, dimensions) =
                (number()?, number()?, number()?, number()?);
            let metric = metric_of(int(next()?)?).ok_or_else(|| bad("bad vector metric"))?;
            let meta =
                PageId(u64::try_from(int(next()?)?).map_err(|_| bad("bad vector index page"))?);
            if column >= columns.len() {
                return Err(bad("vector index column out of range"));
            }
            let (method, parameters) = if m == 0 {
                let hnsw_defaults = VectorIndexParameters {
                    dimensions,
                    metric,
                    m: tierdb_vector::hnsw::M_DEFAULT,
                    ef_construction: tierdb_vector::hnsw::EF_CONSTRUCTION_DEFAULT,
                };
                (VectorMethod::IvfFlat { lists: ef_construction }, hnsw_defaults)
            } else {
                let parameters = VectorIndexParameters { dimensions, metric, m, ef_construction };
                (VectorMethod::Hnsw, parameters)
            };
            vector_indexes.push((VectorIndexDef { name, column, parameters, method }, meta));
        }
    }
    let layout = match values.next() {
        None => Layout::identity(columns.iter().map(|column| column.kind).collect()),
        Some(Value::Text(marker)) if marker == LAYOUT_MARKER => {
            decode_layout(&mut values, &columns)?
        }
        Some(_) => return Err(bad("unexpected field")),
    };
    if values.next().is_some() {
        return Err(bad("trailing fields"));
    }
    let in_range = |column: &usize| *column < columns.len();
    let columns_valid = primary_key.as_ref().is_none_or(|key| key.iter().all(in_range))
        && indexes
            .iter()
            .all(|index| !index.columns.is_empty() && index.columns.iter().all(in_range));
    if !columns_valid {
        return Err(bad("column position out of range"));
    }
    let def = TableDef { name, columns, primary_key, indexes };
    Ok((def, layout, tree, index_trees, vector_indexes))
}

impl Shared {
    pub(super) fn load_catalog(&self) -> Result<()> {
        let mut tables = self.tables.write();
        for entry in self.catalog.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            let (key, value) = entry?;
            if key.starts_with(super::graveyard::GRAVE_KEY_PREFIX) {
                continue;
            }
            let (def, layout, tree, index_trees, vector_indexes) = decode_def(&value)?;
            let store = Arc::clone(&self.store);
            let table = self.open_table(&store, def, layout, tree, &index_trees, vector_indexes)?;
            tables.insert(table.def.name.clone(), TableHandle::new(table));
        }
        Ok(())
    }

    /// The meta pages of every tree the loaded catalog names (and the catalog's own).
    pub(super) fn live_trees(&self) -> std::collections::HashSet<PageId> {
        let mut live = std::collections::HashSet::from([self.catalog.meta_page()]);
        for handle in self.tables.read().values() {
            let Ok(table) = handle.table() else { continue };
            live.insert(table.tree.meta_page());
            live.extend(table.indexes.iter().map(|index| index.tree.meta_page()));
            live.extend(table.vector_indexes.iter().map(|index| index.graph.meta_page()));
        }
        live
    }

    fn open_table(
        &self,
        store: &Arc<PageStore>,
        def: TableDef,
        layout: Layout,
        tree_meta: PageId,
        index_trees: &[PageId],
        vector_entries: Vec<VectorEntry>,
    ) -> Result<Arc<Table>> {
        let mut vector_indexes = Vec::with_capacity(vector_entries.len());
        for (def, meta) in vector_entries {
            vector_indexes.push(Arc::new(self.open_vector_index(store, def, meta)?));
        }
        let mut indexes = Vec::with_capacity(def.indexes.len());
        for (index, &tree) in def.indexes.iter().zip(index_trees) {
            indexes.push(Arc::new(index_handle(
                &def,
                index.clone(),
                BTree::open(Arc::clone(store), tree)?,
            )));
        }
        let tree = BTree::open(Arc::clone(store), tree_meta)?;
        let key_columns = match &def.primary_key {
            Some(columns) => columns
                .iter()
                .map(|&column| KeyColumn::ascending(def.columns[column].kind))
                .collect(),
            None => vec![KeyColumn::ascending(KeyKind::Int)],
        };
        // Hidden row ids continue above the largest one stored.
        let next_row_id = if def.primary_key.is_none() {
            next_hidden_row_id(&tree, &key_columns, &def.name)?
        } else {
            0
        };
        Ok(Arc::new(Table {
            def,
            layout: Arc::new(layout),
            tree,
            key_columns,
            next_row_id: Arc::new(AtomicU64::new(next_row_id)),
            indexes,
            vector_indexes,
            identity: self.next_identity.fetch_add(1, Ordering::Relaxed),
        }))
    }

    /// Creates a table (durably, outside any transaction), or a temp table: in the temp
    /// tables' store, without a catalog entry (nothing logged, nothing left after a crash).
    pub(super) fn create_table(&self, def: TableDef, temporary: Option<TempOwner>) -> Result<()> {
        let mut tables = self.tables.write();
        if tables.contains_key(&def.name) {
            return Err(EngineError::DuplicateTable { name: def.name });
        }
        // Catalog keys starting with a zero byte are graves (graveyard.rs).
        if def.name.starts_with('\0') {
            return Err(EngineError::InvalidRow {
                detail: "a table name cannot start with a zero byte".to_string(),
            });
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
        let store = match temporary {
            Some(owner) => self.temp_store(owner)?,
            None => Arc::clone(&self.store),
        };
        let tree = BTree::create(Arc::clone(&store))?;
        let mut index_trees = Vec::with_capacity(def.indexes.len());
        for _ in &def.indexes {
            index_trees.push(BTree::create(Arc::clone(&store))?.meta_page());
        }
        let layout = Layout::identity(def.columns.iter().map(|column| column.kind).collect());
        if temporary.is_none() {
            let entry = encode_def(&def, &layout, tree.meta_page(), &index_trees, &[]);
            let (_, lsn) = self.catalog.insert(def.name.as_bytes(), &entry)?;
            self.store.wait_durable(lsn)?;
        }
        let meta = tree.meta_page();
        let table = self.open_table(&store, def, layout, meta, &index_trees, Vec::new())?;
        tables.insert(table.def.name.clone(), TableHandle::new(table));
        Ok(())
    }

    pub(super) fn table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tables.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// The handle of the table named `name`, or 42P01.
    pub(super) fn handle(&self, name: &str) -> Result<TableHandle> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| EngineError::UndefinedTable { name: name.to_string() })
    }

    /// The current version of the table named `name`, or 42P01.
    pub(super) fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.handle(name)?.table()
    }

    /// The current handle if it still stores rows in `handle`'s tree: `None` once the table
    /// was dropped or truncated, when the rows written through `handle` are gone (tree meta
    /// pages are never reused, so the page id names the tree).
    pub(super) fn current_with_tree(&self, handle: &Table) -> Option<Arc<Table>> {
        self.tables.read().get(&handle.def.name).and_then(|current| current.table().ok()).filter(
            |current| {
                current.identity == handle.identity
                    && current.tree.meta_page() == handle.tree.meta_page()
            },
        )
    }

    /// A new handle of the table `old` is a handle of, for DDL to swap in.
    fn derived_handle(
        old: &Table,
        def: TableDef,
        layout: Arc<Layout>,
        tree: BTree,
        indexes: Vec<Arc<Index>>,
        vector_indexes: Vec<Arc<VectorIndex>>,
    ) -> Arc<Table> {
        assert_eq!(def.indexes.len(), indexes.len(), "one index handle per index definition");
        assert!(
            def.indexes.iter().zip(&indexes).all(|(def, index)| def.name == index.def.name),
            "index handles in definition order"
        );
        Arc::new(Table {
            def,
            layout,
            tree,
            key_columns: old.key_columns.clone(),
            next_row_id: Arc::clone(&old.next_row_id),
            indexes,
            vector_indexes,
            identity: old.identity,
        })
    }

    /// Writes the catalog entry of a new version of `table` and waits until it is durable;
    /// nothing for a temp table, which has no entry.
    fn write_catalog(
        &self,
        table: &Table,
        def: &TableDef,
        layout: &Layout,
        tree: PageId,
        indexes: &[Arc<Index>],
        vector_indexes: &[Arc<VectorIndex>],
    ) -> Result<()> {
        if self.is_temporary(table) {
            return Ok(());
        }
        let index_trees: Vec<PageId> = indexes.iter().map(|index| index.tree.meta_page()).collect();
        let vector_entries: Vec<VectorEntry> = vector_indexes
            .iter()
            .map(|index| (index.def.clone(), index.graph.meta_page()))
            .collect();
        let entry = encode_def(def, layout, tree, &index_trees, &vector_entries);
        let (_, lsn) = self.catalog.insert(def.name.as_bytes(), &entry)?;
        self.store.wait_durable(lsn)?;
        Ok(())
    }

    /// Removes a table from the catalog, durably. Its trees go to the graveyard
    /// (graveyard.rs): their pages are freed once nobody holds them. Transactions that still
    /// use it get 42P01 at their next operation on it; their undo of rows in it does nothing.
    pub(super) fn drop_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.write();
        let mut tables = self.tables.write();
        let Some(handle) = tables.get(name) else {
            return Err(EngineError::UndefinedTable { name: name.to_string() });
        };
        let table = handle.table()?;
        // Its partial indexes' predicates go with it (a later index of one of their names
        // must not inherit one), once it is gone.
        let index_names: Vec<String> = table
            .def
            .indexes
            .iter()
            .map(|index| index.name.clone())
            .chain(table.vector_indexes.iter().map(|index| index.def.name.clone()))
            .collect();
        let forget_predicates = || {
            for name in &index_names {
                self.index_predicates.set(name, None);
            }
        };
        let trees = table_trees(&table);
        if self.is_temporary(&table) {
            // No catalog entry. Its trees are freed while the session's store stays open;
            // with the session's last temp table the store goes, and its pages with it.
            tables.remove(name).expect("checked above").mark_dropped();
            self.release_temp_store(&tables, table.tree.store());
            forget_predicates();
            self.bury(trees);
            return Ok(());
        }
        self.record_graves(&trees.iter().collect::<Vec<_>>())?;
        let Some((_, lsn)) = self.catalog.delete(name.as_bytes())? else {
            return Err(EngineError::Corrupt {
                what: "catalog",
                detail: format!("table={name} is loaded but has no catalog entry"),
            });
        };
        self.store.wait_durable(lsn)?;
        tables.remove(name).expect("checked above").mark_dropped();
        forget_predicates();
        self.bury(trees);
        Ok(())
    }

    /// Empties a table and its indexes at once by giving it fresh trees (durably); not
    /// transactional. The old trees go to the graveyard (see `drop_table`).
    pub(super) fn truncate_table(&self, name: &str) -> Result<()> {
        let _ddl = self.ddl.write();
        let slot = self.handle(name)?;
        let old = slot.table()?;
        let store = old.tree.store();
        let tree = BTree::create(Arc::clone(store))?;
        let mut indexes = Vec::with_capacity(old.indexes.len());
        for index in &old.indexes {
            let fresh = BTree::create(Arc::clone(store))?;
            indexes.push(Arc::new(index_handle(&old.def, index.def.clone(), fresh)));
        }
        let mut vector_indexes = Vec::with_capacity(old.vector_indexes.len());
        for index in &old.vector_indexes {
            let graph = VectorGraph::create(store, &index.def, index.graph.centers())?;
            vector_indexes.push(Arc::new(VectorIndex {
                def: index.def.clone(),
                graph,
                stale: Default::default(),
            }));
        }
        let meta = tree.meta_page();
        let old_trees = table_trees(&old);
        self.record_graves(&old_trees.iter().collect::<Vec<_>>())?;
        self.write_catalog(&old, &old.def, &old.layout, meta, &indexes, &vector_indexes)?;
        let layout = Arc::clone(&old.layout);
        slot.replace(Self::derived_handle(
            &old,
            old.def.clone(),
            layout,
            tree,
            indexes,
            vector_indexes,
        ));
        self.bury(old_trees);
        Ok(())
    }

    /// Adds an index to a populated table. Under the exclusive DDL lock no row changes, so one
    /// pass sees every version of every row: each gets its entry (versions of transactions in
    /// progress too, so their rows are found once they commit), and for a unique index each
    /// row's live value is flagged for the check on the sorted entries (index_build.rs). The
    /// entries are sorted within maintenance_work_mem (spilling to the temp space) and bulk
    /// loaded into a new tree, which appears, durably, in the catalog only once complete: a
    /// failure or a crash leaves no index (and the temp files are unlinked).
    pub(super) fn create_index(
        &self,
        table_name: &str,
        def: IndexDef,
        options: &IndexBuildOptions,
    ) -> Result<()> {
        let _ddl = self.ddl.write();
        let slot = self.handle(table_name)?;
        let old = slot.table()?;
        if self.name_taken(&def.name) {
            return Err(EngineError::DuplicateTable { name: def.name });
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
        let mut build = IndexBuild::start(
            &self.store,
            &self.index_builds,
            options,
            table_name,
            &def.name,
            def.unique,
        );
        // Only the index's columns are read (the others decode as NULL, without copies);
        // all of them for a partial index, whose predicate may read any.
        let partial = self.index_predicates.is_partial(&def.name);
        let mut wanted = vec![partial; old.def.columns.len()];
        for &column in &def.columns {
            wanted[column] = true;
        }
        for stored in old.tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Forward) {
            let (key, bytes) = stored?;
            build.row_scanned();
            let mut live_decided = false;
            for version in decode_versions(&bytes)? {
                let row = old.layout.decode_projected(&version.row, Some(&wanted))?;
                if !self.index_predicates.covers_name(&def.name, &row)? {
                    continue; // outside a partial index's predicate (partial.rs)
                }
                let entry = index_prefix(&def, &columns, &row)?;
                let mut live = false;
                if def.unique && !live_decided {
                    if let Some(counts) = self.live_for_unique(&def, &version, &row)? {
                        live_decided = true;
                        live = counts;
                    }
                }
                build.push(entry, &key, live)?;
            }
        }
        let tree = build.finish(old.tree.store())?;
        let mut new_def = old.def.clone();
        new_def.indexes.push(def.clone());
        let mut indexes = old.indexes.clone();
        indexes.push(Arc::new(index_handle(&new_def, def, tree)));
        self.install(&slot, &old, new_def, indexes, old.vector_indexes.clone())
    }

    /// Durably records `old`'s table with a new set of indexes (same rows) and swaps in the
    /// handle that uses them.
    fn install(
        &self,
        slot: &TableHandle,
        old: &Table,
        def: TableDef,
        indexes: Vec<Arc<Index>>,
        vector_indexes: Vec<Arc<VectorIndex>>,
    ) -> Result<()> {
        let meta = old.tree.meta_page();
        self.write_catalog(old, &def, &old.layout, meta, &indexes, &vector_indexes)?;
        let (layout, tree) = (Arc::clone(&old.layout), old.tree.clone());
        slot.replace(Self::derived_handle(old, def, layout, tree, indexes, vector_indexes));
        Ok(())
    }

    /// Lets column `column` of a table hold NULLs (ALTER TABLE ... DROP NOT NULL), durably.
    /// The engine's NOT NULL is only loosened, never tightened: SET NOT NULL is the SQL
    /// layer's check (it validates the rows), so a DROP NOT NULL that rolls back leaves the
    /// engine looser than the SQL catalog, whose check still holds.
    pub(super) fn allow_nulls(&self, table_name: &str, column: usize) -> Result<()> {
        let _ddl = self.ddl.write();
        let slot = self.handle(table_name)?;
        let old = slot.table()?;
        let Some(definition) = old.def.columns.get(column) else {
            return Err(EngineError::InvalidRow {
                detail: format!("table={table_name} has no column={column}"),
            });
        };
        if definition.nullable {
            return Ok(());
        }
        let mut new_def = old.def.clone();
        new_def.columns[column].nullable = true;
        self.install(&slot, &old, new_def, old.indexes.clone(), old.vector_indexes.clone())
    }

    /// Replaces a table's logical columns (ADD / DROP COLUMN and their rollback, design
    /// 016), durably. `columns[i]` is stored in `slots[i]` and reads as `missing[i]` in rows
    /// stored before that slot existed. Checked by `Layout::changed`; the primary key's
    /// columns stay, and an index on a column that goes must be dropped first (22023
    /// otherwise). Indexes follow their columns to their new positions. A kept column keeps
    /// its engine NOT NULL unless `columns` loosens it (the engine's NOT NULL is only
    /// loosened: `allow_nulls`). No change, no write.
    pub(super) fn set_layout(
        &self,
        table_name: &str,
        columns: Vec<ColumnDef>,
        slots: Vec<usize>,
        missing: Vec<Value>,
    ) -> Result<()> {
        let _ddl = self.ddl.write();
        let slot = self.handle(table_name)?;
        let old = slot.table()?;
        let kinds: Vec<KeyKind> = columns.iter().map(|column| column.kind).collect();
        let layout = old.layout.changed(table_name, &kinds, slots, missing)?;
        let mut new_def = old.def.clone();
        new_def.columns = columns;
        for (position, column) in new_def.columns.iter_mut().enumerate() {
            let kept = old.layout.position_of_slot(layout.slots()[position]);
            if let Some(kept) = kept {
                column.nullable |= old.def.columns[kept].nullable;
            }
        }
        if layout == *old.layout && new_def == old.def {
            return Ok(());
        }
        let moved = |column: usize, what: &str| -> Result<usize> {
            layout.position_of_slot(old.layout.slots()[column]).ok_or_else(|| {
                EngineError::InvalidRow {
                    detail: format!("table={table_name}: {what} is on a column that goes"),
                }
            })
        };
        if let Some(key) = &mut new_def.primary_key {
            for column in key.iter_mut() {
                *column = moved(*column, "the primary key")?;
            }
        }
        let mut indexes = Vec::with_capacity(old.indexes.len());
        for (def, index) in new_def.indexes.iter_mut().zip(&old.indexes) {
            for column in &mut def.columns {
                *column = moved(*column, &format!("index={}", def.name))?;
            }
            indexes.push(if def.columns == index.def.columns {
                Arc::clone(index)
            } else {
                // Same tree and key kinds, new positions. A new unique-check mutex is safe:
                // writers resolve the table under the shared DDL lock this holds exclusively.
                Arc::new(Index {
                    def: def.clone(),
                    tree: index.tree.clone(),
                    columns: index.columns.clone(),
                    unique_lock: parking_lot::Mutex::new(()),
                })
            });
        }
        let mut vector_indexes = Vec::with_capacity(old.vector_indexes.len());
        for index in &old.vector_indexes {
            let column = moved(index.def.column, &format!("index={}", index.def.name))?;
            vector_indexes.push(if column == index.def.column {
                Arc::clone(index)
            } else {
                let def = VectorIndexDef { column, ..index.def.clone() };
                let meta = index.graph.meta_page();
                Arc::new(self.open_vector_index(old.tree.store(), def, meta)?)
            });
        }
        let meta = old.tree.meta_page();
        self.write_catalog(&old, &new_def, &layout, meta, &indexes, &vector_indexes)?;
        let tree = old.tree.clone();
        let layout = Arc::new(layout);
        slot.replace(Self::derived_handle(&old, new_def, layout, tree, indexes, vector_indexes));
        Ok(())
    }

    /// Whether a table, an index or a vector index is named `name`.
    fn name_taken(&self, name: &str) -> bool {
        let tables = self.tables.read();
        tables.contains_key(name)
            || tables.values().filter_map(|handle| handle.table().ok()).any(|table| {
                table.def.indexes.iter().any(|index| index.name == name)
                    || table.vector_indexes.iter().any(|index| index.def.name == name)
            })
    }

    /// Adds an HNSW index to a populated table (every row version gets its entry), durable
    /// in the catalog only once built: a failure or a crash leaves no index.
    pub(super) fn create_vector_index(
        &self,
        table_name: &str,
        def: VectorIndexDef,
        memory_bytes: usize,
    ) -> Result<()> {
        let _ddl = self.ddl.write();
        let slot = self.handle(table_name)?;
        let old = slot.table()?;
        if self.name_taken(&def.name) {
            return Err(EngineError::DuplicateTable { name: def.name });
        }
        let mut vector_indexes = old.vector_indexes.clone();
        vector_indexes.push(Arc::new(self.build_vector_index(&old, def, memory_bytes)?));
        self.install(&slot, &old, old.def.clone(), old.indexes.clone(), vector_indexes)
    }

    /// The unique check of `create_index` for one version, newest first: `None` if its
    /// creator aborted (an older version decides), else whether the row's value counts as
    /// live: unless a committed transaction deleted it or it holds a NULL (NULLs never
    /// conflict). Creators and deleters still in progress count as if they will commit and
    /// roll back respectively, so the check is conservative: it may refuse an index that
    /// their outcome would have allowed, never accept a duplicate.
    fn live_for_unique(
        &self,
        def: &IndexDef,
        version: &Version,
        row: &[Value],
    ) -> Result<Option<bool>> {
        if self.txns.status(version.xmin)? == TxnStatus::Aborted {
            return Ok(None);
        }
        let deleted = version.xmax != 0 && self.txns.status(version.xmax)? == TxnStatus::Committed;
        let has_null = def.columns.iter().any(|&column| matches!(row[column], Value::Null));
        Ok(Some(!deleted && !has_null))
    }

    /// Removes an index from a table, durably. A B+tree index's tree goes to the graveyard
    /// (see `drop_table`); a vector index's pages are not reclaimed yet.
    pub(super) fn drop_index(&self, table_name: &str, index_name: &str) -> Result<()> {
        let _ddl = self.ddl.write();
        let slot = self.handle(table_name)?;
        let old = slot.table()?;
        let mut new_def = old.def.clone();
        let mut indexes = old.indexes.clone();
        let mut vector_indexes = old.vector_indexes.clone();
        let mut dropped_tree = None;
        if let Some(position) = old.def.indexes.iter().position(|index| index.name == index_name) {
            new_def.indexes.remove(position);
            dropped_tree = Some(indexes.remove(position).tree.clone());
        } else if let Some(position) =
            vector_indexes.iter().position(|index| index.def.name == index_name)
        {
            vector_indexes.remove(position);
        } else {
            return Err(EngineError::UndefinedTable { name: index_name.to_string() });
        }
        if let Some(tree) = &dropped_tree {
            self.record_graves(&[tree])?;
        }
        self.install(&slot, &old, new_def, indexes, vector_indexes)?;
        self.bury(dropped_tree.into_iter().collect());
        // A later index of this name (a UNIQUE constraint's, which registers none) must not
        // inherit a dropped partial index's predicate.
        self.index_predicates.set(index_name, None);
        Ok(())
    }
}

/// Clones of a table handle's B+trees: its rows' and each index's (vector indexes apart).
fn table_trees(table: &Table) -> Vec<BTree> {
    std::iter::once(table.tree.clone())
        .chain(table.indexes.iter().map(|index| index.tree.clone()))
        .collect()
}

/// The hidden row id after the largest one in `tree` (the rows of a table without a primary
/// key, keyed by `key_columns`: one integer): 1 for an empty table. Ids are handed out from 1
/// and never above `i64::MAX` (`Table::key_of`), so anything else stored is corrupt.
fn next_hidden_row_id(tree: &BTree, key_columns: &[KeyColumn], table: &str) -> Result<u64> {
    let Some(entry) = tree.range(Bound::Unbounded, Bound::Unbounded, Direction::Backward).next()
    else {
        return Ok(1);
    };
    let (key, _) = entry?;
    let corrupt = |detail: String| EngineError::Corrupt { what: "row id", detail };
    let values =
        tierdb_access::decode_key(key_columns, &key).map_err(|error| corrupt(error.to_string()))?;
    match values.first() {
        Some(&Value::Int(id)) if id >= 1 => {
            Ok(u64::try_from(id).expect("a positive i64 fits u64") + 1)
        }
        other => Err(corrupt(format!("table={table} holds hidden row id={other:?}"))),
    }
}
