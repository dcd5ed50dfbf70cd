//! SQL metadata over the engine's tables: column types with modifiers, defaults, NOT NULL,
//! index and constraint names, OIDs, and the sequences behind serial columns.
//!
//! The engine knows columns only by storage kind; this layer keeps the SQL definition of
//! each table in an engine table of its own (`tierdb_sql_tables`, one row per table, keyed by
//! name) so that it is durable and recovered like any row. Sequences live in
//! `tierdb_sql_sequences`; values are handed out from an in-memory block and the block's end
//! is made durable before any value of it is used, so a crash skips values (as PostgreSQL's
//! sequences do) but never repeats one.
//!
//! CREATE TABLE, CREATE INDEX and ALTER TABLE ... ADD write the definition row in the
//! statement's transaction, so they commit or roll back with it (transactional.rs). DROP
//! TABLE, DROP INDEX and TRUNCATE inside a block are transactional at the session level
//! (session/ddl.rs `drop_in_block`, session/run.rs).

mod advisory;
mod cluster;
mod grants;
mod meta;
mod roles;
mod schema_grants;
mod sequences;
mod statistics;
mod temp;
mod transactional;
mod verifier;
mod views;

pub use advisory::*;
pub use cluster::MOCK_AUTH_SECRET;
pub use grants::*;
pub use meta::*;
pub use roles::*;
pub use schema_grants::*;
pub use sequences::{default_sequences, SequenceMeta, SequenceState};
pub use statistics::{ColumnStatistics, TableStatistics, COMMON_VALUES_MAX, HISTOGRAM_BOUNDS_MAX};
pub use temp::*;
pub use verifier::*;
pub use views::{columns_read, view_uses_column};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, RwLock};
use tierdb_engine::{
    ColumnDef, Engine, IndexDef, IsolationLevel, KeyKind, TableDef, Transaction, Value,
};

use crate::error::{Result, SqlError};
use crate::types::SqlType;

const TABLES_TABLE: &str = "tierdb_sql_tables";
const SEQUENCES_TABLE: &str = "tierdb_sql_sequences";
/// Values a sequence reserves durably at a time.
const SEQUENCE_BLOCK_VALUES: i64 = 64;
/// First OID handed to user objects, as in PostgreSQL.
pub const FIRST_USER_OID: i64 = 16_384;

/// A sequence's values in memory: those after `handed_out` up to `last_reserved` may be
/// handed out without a write (`handed_out <= last_reserved`, both inclusive, so that a
/// sequence ending at i64::MAX needs no value past it).
struct SerialState {
    /// The last value nextval returned.
    handed_out: i64,
    /// The last value of the block reserved durably.
    last_reserved: i64,
}

/// The SQL catalog shared by every session.
pub struct Catalog {
    engine: Arc<Engine>,
    tables: RwLock<HashMap<String, Arc<TableMeta>>>,
    /// Every role by name (roles.rs).
    roles: RwLock<RoleMaps>,
    /// Owners and grants of tables not owned by the bootstrap superuser or with grants
    /// (grants.rs), by table name.
    grants: RwLock<HashMap<String, TableAcl>>,
    /// Privileges on schemas whose ACL is not PostgreSQL's default (schema_grants.rs).
    schema_grants: RwLock<HashMap<String, TableAcl>>,
    sequences: Mutex<HashMap<String, SerialState>>,
    /// The values of the sequences made by CREATE SEQUENCE (sequences.rs), by name.
    sequence_states: Mutex<HashMap<String, sequences::SequenceState>>,
    /// Serializes DDL statements.
    ddl: Mutex<()>,
    /// Tables whose definitions open transactions changed (transactional.rs).
    claims: Mutex<transactional::Claims>,
    /// Signalled when a transaction's claims are released.
    claims_released: Condvar,
    /// How many tables have columns changed by an open transaction (`Claims::column_changes`,
    /// kept equal under its lock): read without the lock, so that writers check nothing more
    /// while no ADD / DROP COLUMN is open.
    column_changes_open: AtomicUsize,
    /// Tables created by open transactions -> the creating session: hidden from the others.
    uncommitted: RwLock<HashMap<String, u64>>,
    /// Bumped by every DDL statement: prepared plans bound against an older version re-bind.
    version: AtomicU64,
    /// Per-statement statistics of every session (`tierdb_stat_statements`).
    statement_stats: Arc<crate::stats::StatementStats>,
    /// The server's advisory locks (pg_advisory_lock and its family).
    advisory_locks: advisory::AdvisoryLocks,
    /// ANALYZE's statistics by table name (statistics.rs).
    statistics: RwLock<HashMap<String, Arc<statistics::TableStatistics>>>,
    /// Rows inserted, updated or deleted per table OID since its last ANALYZE (since the
    /// server started), for autoanalyze (statistics.rs).
    modified_rows: Mutex<HashMap<u32, u64>>,
    /// Set once the partial indexes' predicates are registered with the engine (by the
    /// first session: session/partial_index.rs).
    index_predicates_registered: std::sync::Once,
}

impl Catalog {
    /// Opens the catalog, creating its engine tables on a new database.
    pub fn open(engine: Arc<Engine>) -> Result<Arc<Catalog>> {
        let names = engine.table_names();
        if !names.iter().any(|name| name == TABLES_TABLE) {
            engine.create_table(text_key_table(TABLES_TABLE, "definition", KeyKind::Text))?;
        }
        if !names.iter().any(|name| name == SEQUENCES_TABLE) {
            engine.create_table(text_key_table(SEQUENCES_TABLE, "last_value", KeyKind::Int))?;
        }
        if !names.iter().any(|name| name == sequences::SEQUENCE_STATES_TABLE) {
            engine.create_table(sequence_states_table())?;
        }
        for internal in [
            ROLES_TABLE,
            GRANTS_TABLE,
            SCHEMA_GRANTS_TABLE,
            cluster::CLUSTER_TABLE,
            statistics::STATISTICS_TABLE,
        ] {
            if !names.iter().any(|name| name == internal) {
                engine.create_table(text_key_table(internal, "definition", KeyKind::Text))?;
            }
        }
        let catalog = Catalog {
            engine,
            tables: RwLock::new(HashMap::new()),
            roles: RwLock::new(RoleMaps::default()),
            grants: RwLock::new(HashMap::new()),
            schema_grants: RwLock::new(HashMap::new()),
            sequences: Mutex::new(HashMap::new()),
            sequence_states: Mutex::new(HashMap::new()),
            ddl: Mutex::new(()),
            claims: Mutex::new(transactional::Claims::default()),
            claims_released: Condvar::new(),
            column_changes_open: AtomicUsize::new(0),
            uncommitted: RwLock::new(HashMap::new()),
            version: AtomicU64::new(1),
            statement_stats: Arc::new(crate::stats::StatementStats::default()),
            advisory_locks: advisory::AdvisoryLocks::default(),
            statistics: RwLock::new(HashMap::new()),
            modified_rows: Mutex::new(HashMap::new()),
            index_predicates_registered: std::sync::Once::new(),
        };
        catalog.load()?;
        catalog.load_roles()?;
        catalog.load_grants()?;
        catalog.load_schema_grants()?;
        catalog.load_statistics()?;
        catalog.drop_crashed_temp_tables()?;
        catalog.drop_orphans()?;
        Ok(Arc::new(catalog))
    }

    /// CREATE TABLE makes the engine table, then its transaction stores the SQL definition:
    /// a crash before that transaction commits leaves an engine table without one. Such a
    /// table never held committed rows visible to SQL, so recovery drops it (and CREATE
    /// TABLE may then reuse the name). Likewise an engine index that the SQL definition
    /// does not list (CREATE INDEX whose transaction did not commit) is dropped.
    fn drop_orphans(&self) -> Result<()> {
        let tables = self.tables.read().clone();
        for name in self.engine.table_names() {
            if is_internal_table(&name) {
                continue;
            }
            match tables.get(&name) {
                None => {
                    tracing::warn!(table = %name, "dropping an engine table without an SQL definition (interrupted CREATE TABLE)");
                    self.engine.drop_table(&name)?;
                }
                Some(meta) => self.restore_engine_table(meta)?,
            }
        }
        // ACL rows of tables whose drop was interrupted after its first transaction.
        let stale: Vec<String> = self
            .grants
            .read()
            .keys()
            .filter(|table| !tables.contains_key(*table))
            .cloned()
            .collect();
        for table in stale {
            tracing::warn!(%table, "dropping the privileges of a table that no longer exists (interrupted DROP TABLE)");
            self.remove_table_acl(&table)?;
        }
        Ok(())
    }

    /// Every row of one of the internal tables.
    fn scan_internal(&self, table: &str) -> Result<Vec<Vec<Value>>> {
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        let rows =
            transaction.scan(table, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)?;
        transaction.commit()?;
        Ok(rows)
    }

    fn load(&self) -> Result<()> {
        let rows = self.scan_internal(TABLES_TABLE)?;
        let mut tables = self.tables.write();
        for row in rows {
            let Some(Value::Text(definition)) = row.get(1) else {
                return Err(SqlError::new("XX001", "corrupt sql catalog row"));
            };
            let meta = TableMeta::decode(definition)?;
            tables.insert(meta.name.clone(), Arc::new(meta));
        }
        Ok(())
    }

    /// Whether the partial indexes' predicates were registered with the engine.
    pub(crate) fn index_predicates_registered(&self) -> &std::sync::Once {
        &self.index_predicates_registered
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn statement_stats(&self) -> &Arc<crate::stats::StatementStats> {
        &self.statement_stats
    }

    /// The server's advisory locks (catalog/advisory.rs).
    pub fn advisory_locks(&self) -> &advisory::AdvisoryLocks {
        &self.advisory_locks
    }

    /// Makes every prepared statement bind anew before its next execution (a session's
    /// search_path changed what its names resolve to).
    pub fn invalidate_plans(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The table or view named `name` (not a sequence: `sequence_object`).
    pub fn table(&self, name: &str) -> Option<Arc<TableMeta>> {
        self.tables.read().get(name).filter(|meta| meta.sequence.is_none()).cloned()
    }

    /// The FOREIGN KEYs that reference table `name`, with their tables, in table and then
    /// constraint name order. Every INSERT, UPDATE and DELETE binds through this, so it
    /// looks at the definitions under the read lock instead of copying and sorting them all.
    pub fn referencing_keys(&self, name: &str) -> Vec<(Arc<TableMeta>, ForeignKeyMeta)> {
        let tables = self.tables.read();
        let mut found: Vec<(Arc<TableMeta>, ForeignKeyMeta)> = tables
            .values()
            .flat_map(|table| {
                let keys = table.foreign_keys.iter().filter(|key| key.referenced_table == name);
                keys.map(move |key| (Arc::clone(table), key.clone()))
            })
            .collect();
        drop(tables);
        found.sort_by(|(left, left_key), (right, right_key)| {
            (&left.name, &left_key.name).cmp(&(&right.name, &right_key.name))
        });
        found
    }

    /// Every table and view (not sequences: `sequence_objects`), in name order.
    pub fn tables(&self) -> Vec<Arc<TableMeta>> {
        let mut tables: Vec<Arc<TableMeta>> =
            self.tables.read().values().filter(|meta| meta.sequence.is_none()).cloned().collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        tables
    }

    /// Takes the DDL lock (one DDL statement at a time).
    pub fn lock_ddl(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.ddl.lock()
    }

    fn store_meta(&self, meta: &TableMeta) -> Result<()> {
        self.upsert_text(TABLES_TABLE, &meta.name, meta.encode())
    }

    /// Inserts or replaces the row `name` of one of the text-keyed internal tables, durably.
    fn upsert_text(&self, table: &str, name: &str, definition: String) -> Result<()> {
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        upsert_text_in(&mut transaction, table, name, definition)?;
        transaction.commit()?;
        Ok(())
    }

    fn publish(&self, meta: TableMeta) {
        self.tables.write().insert(meta.name.clone(), Arc::new(meta));
        self.version.fetch_add(1, Ordering::AcqRel);
    }

    /// A fresh OID for a table or index.
    pub fn next_oid(&self) -> Result<u32> {
        let value = self.nextval_raw("tierdb_oid", FIRST_USER_OID, i64::MAX)?;
        u32::try_from(value).map_err(|_| SqlError::new("54000", "oid space exhausted"))
    }

    /// Creates a table in `transaction` (transactional.rs): hidden from sessions other than
    /// `session` until the transaction commits and `release_claims` runs. The caller holds
    /// the DDL lock and the claim on the name. A temp table goes to the session's own store,
    /// opened at its first temp table with a pool of `temp_buffers` pages.
    pub fn create_table(
        &self,
        transaction: &mut Transaction,
        (session, temp_buffers): (u64, u64),
        mut meta: TableMeta,
    ) -> Result<()> {
        if self.tables.read().contains_key(&meta.name) {
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{}\" already exists", meta.name),
            ));
        }
        for index in &meta.indexes {
            refuse_vector_key(&meta, index)?;
        }
        let columns = engine_columns(&meta);
        let primary_key = meta.clustered_key().map(|index| index.columns.clone());
        let indexes = meta
            .indexes
            .iter()
            .filter(|index| index.kind == IndexKind::Secondary)
            .map(|index| IndexDef {
                name: index.name.clone(),
                columns: index.columns.clone(),
                unique: index.unique,
            })
            .collect();
        meta.oid = self.next_oid()?;
        for index in &mut meta.indexes {
            index.oid = self.next_oid()?;
        }
        for check in &mut meta.checks {
            check.oid = self.next_oid()?;
        }
        for key in &mut meta.foreign_keys {
            key.oid = self.next_oid()?;
        }
        let def = TableDef { name: meta.name.clone(), columns, primary_key, indexes };
        if let Some((owner, _)) = split_temp_name(&meta.name) {
            // Unlogged, in the session's store in the temp space (design 019).
            assert_eq!(owner, session, "a session creates only its own temp tables");
            let owner = tierdb_engine::TempOwner::with_buffers(owner, temp_buffers);
            self.engine.create_temp_table(def, owner)?;
        } else {
            self.engine.create_table(def)?;
        }
        self.store_meta_in(transaction, &meta)?;
        self.uncommitted.write().insert(meta.name.clone(), session);
        self.publish(meta);
        Ok(())
    }

    pub fn drop_table(&self, name: &str) -> Result<()> {
        let Some(meta) = self.table(name) else { return Err(SqlError::undefined_table(name)) };
        match self.engine.drop_table(name) {
            // A temp table at startup: its engine table went with the process (design 019).
            Err(tierdb_engine::EngineError::UndefinedTable { .. })
                if split_temp_name(name).is_some() => {}
            outcome => outcome?,
        }
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        transaction.delete(TABLES_TABLE, &[Value::Text(name.to_string())])?;
        self.delete_sequences(&mut transaction, &meta)?;
        // The sequences OWNED BY its columns go with it.
        let owned = self.owned_sequences(name, None);
        for sequence in &owned {
            transaction.delete(TABLES_TABLE, &[Value::Text(sequence.name.clone())])?;
            self.delete_sequences(&mut transaction, sequence)?;
        }
        transaction.commit()?;
        self.remove_table_acl(name)?;
        self.remove_table_statistics(name)?;
        for sequence in &owned {
            self.remove_table_acl(&sequence.name)?;
            self.tables.write().remove(&sequence.name);
        }
        self.tables.write().remove(name);
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Deletes the sequences of `meta`'s serial and identity columns in `transaction`.
    fn delete_sequences(&self, transaction: &mut Transaction, meta: &TableMeta) -> Result<()> {
        if meta.sequence.is_some() {
            self.delete_sequence_state(transaction, &meta.name)?;
        }
        for column in &meta.columns {
            if let Some(sequence) = column.default.as_deref().and_then(sequence_of_default) {
                transaction.delete(SEQUENCES_TABLE, &[Value::Text(sequence.to_string())])?;
                self.sequences.lock().remove(sequence);
            }
        }
        Ok(())
    }

    pub fn truncate_table(&self, name: &str) -> Result<()> {
        if self.table(name).is_none() {
            return Err(SqlError::undefined_table(name));
        }
        self.engine.truncate_table(name)?;
        // PostgreSQL resets pg_class.reltuples to -1; the planner's row count from the last
        // ANALYZE no longer describes the table either.
        self.remove_table_statistics(name)?;
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Adds a secondary index (backfilled by the engine, built as `options` say; the OIDs
    /// are filled in here). `primary` marks a primary key added by ALTER TABLE; its columns
    /// become NOT NULL.
    pub fn create_index(
        &self,
        transaction: &mut Transaction,
        table: &str,
        mut index: IndexMeta,
        mut options: tierdb_engine::IndexBuildOptions,
    ) -> Result<()> {
        let Some(meta) = self.table(table) else { return Err(SqlError::undefined_table(table)) };
        refuse_vector_key(&meta, &index)?;
        self.refuse_taken_index_name(&index.name)?;
        index.oid = self.next_oid()?;
        options.relid = meta.oid;
        options.index_relid = index.oid;
        self.engine.create_index_with(
            table,
            IndexDef {
                name: index.name.clone(),
                columns: index.columns.clone(),
                unique: index.unique,
            },
            &options,
        )?;
        let mut updated = (*meta).clone();
        if index.primary {
            for &column in &index.columns {
                updated.columns[column].nullable = false;
            }
        }
        updated.indexes.push(index);
        self.replace_meta(transaction, updated)
    }

    /// 42P07 if an index is named `name`.
    pub(crate) fn refuse_taken_index_name(&self, name: &str) -> Result<()> {
        if self.tables().iter().any(|other| other.indexes.iter().any(|known| known.name == name)) {
            return Err(SqlError::new("42P07", format!("relation \"{name}\" already exists")));
        }
        Ok(())
    }

    /// Creates a vector index, HNSW or ivfflat (`index.kind` is `IndexKind::Hnsw`), over
    /// `parameters`, built by the engine from the table's rows.
    pub fn create_vector_index(
        &self,
        transaction: &mut Transaction,
        table: &str,
        mut index: IndexMeta,
        parameters: tierdb_engine::VectorIndexParameters,
        memory_bytes: usize,
    ) -> Result<()> {
        let Some(meta) = self.table(table) else { return Err(SqlError::undefined_table(table)) };
        let IndexKind::Hnsw(options) = index.kind else { panic!("a vector index") };
        assert_eq!(index.columns.len(), 1);
        let method = if options.ivfflat {
            let lists = options.lists.unwrap_or(tierdb_vector::ivfflat::LISTS_DEFAULT);
            tierdb_engine::VectorMethod::IvfFlat { lists }
        } else {
            tierdb_engine::VectorMethod::Hnsw
        };
        self.refuse_taken_index_name(&index.name)?;
        index.oid = self.next_oid()?;
        let definition = tierdb_engine::VectorIndexDef {
            name: index.name.clone(),
            column: index.columns[0],
            parameters,
            method,
        };
        self.engine.create_vector_index_with(table, definition, memory_bytes)?;
        let mut updated = (*meta).clone();
        updated.indexes.push(index);
        self.replace_meta(transaction, updated)
    }

    /// The table of the index named `name`.
    pub fn index_table(&self, name: &str) -> Option<Arc<TableMeta>> {
        self.tables().into_iter().find(|table| table.indexes.iter().any(|index| index.name == name))
    }

    pub fn drop_index(&self, name: &str) -> Result<()> {
        let Some(meta) = self
            .tables()
            .into_iter()
            .find(|table| table.indexes.iter().any(|index| index.name == name))
        else {
            return Err(SqlError::new("42704", format!("index \"{name}\" does not exist")));
        };
        if meta.is_clustering_index(name) {
            return Err(SqlError::new(
                "2BP01",
                format!("cannot drop index {name} because it is the table's clustering key"),
            ));
        }
        self.engine.drop_index(&meta.name, name)?;
        let mut updated = (*meta).clone();
        updated.indexes.retain(|index| index.name != name);
        self.store_meta(&updated)?;
        self.publish(updated);
        Ok(())
    }

    /// Registers a sequence (serial column) starting at 1.
    pub fn create_sequence(&self, name: &str) -> Result<()> {
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        let key = Value::Text(name.to_string());
        transaction.delete(SEQUENCES_TABLE, std::slice::from_ref(&key))?;
        transaction.insert(SEQUENCES_TABLE, vec![key, Value::Int(0)])?;
        transaction.commit()?;
        self.sequences.lock().remove(name);
        Ok(())
    }

    /// The next value of a sequence, at most `maximum` (2200H past it, the value not
    /// used). Non-transactional, like PostgreSQL's nextval.
    pub fn nextval(&self, name: &str, maximum: i64) -> Result<i64> {
        // tierdb_oid hands out the catalog's OIDs: not a sequence SQL may advance (past
        // u32 every CREATE would fail).
        if name == "tierdb_oid" || !self.sequence_exists(name)? {
            return Err(SqlError::new("42P01", format!("relation \"{name}\" does not exist")));
        }
        self.nextval_raw(name, 1, maximum)
    }

    /// setval(name, value, is_called): the next nextval returns `value` (is_called false)
    /// or the value after it. Durable at once and non-transactional, as in PostgreSQL; the
    /// caller checked the bounds.
    pub fn setval(&self, name: &str, value: i64, is_called: bool) -> Result<()> {
        // The last value handed out, as the reservation row records it (0: none yet).
        let last_reserved = if is_called { value } else { value - 1 };
        let mut sequences = self.sequences.lock();
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        let key = [Value::Text(name.to_string())];
        let mut replacement = Some(vec![key[0].clone(), Value::Int(last_reserved)]);
        if !transaction.update(SEQUENCES_TABLE, &key, &mut |_| replacement.take())? {
            return Err(SqlError::new("42P01", format!("relation \"{name}\" does not exist")));
        }
        transaction.commit()?;
        // Every session's next nextval reserves a block from the new value.
        sequences.remove(name);
        Ok(())
    }

    /// The last value nextval returned from sequence `name` (pg_sequence_last_value): None
    /// before the first call; after a restart, the end of the last block reserved (values
    /// up to it may have been handed out). 42P01 for no such sequence.
    pub fn sequence_last_value(&self, name: &str) -> Result<Option<i64>> {
        if let Some(state) = self.sequences.lock().get(name) {
            return Ok(Some(state.handed_out));
        }
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        let row = transaction.get(SEQUENCES_TABLE, &[Value::Text(name.to_string())])?;
        transaction.commit()?;
        match row.as_ref().and_then(|row| row.get(1)) {
            None => Err(SqlError::new("42P01", format!("relation \"{name}\" does not exist"))),
            Some(Value::Int(0)) => Ok(None),
            Some(Value::Int(reserved)) => Ok(Some(*reserved)),
            Some(other) => Err(SqlError::internal(format!("sequence {name} holds {other:?}"))),
        }
    }

    /// Whether `name` is the sequence of a serial or identity column (the only sequences).
    pub fn is_column_sequence(&self, name: &str) -> bool {
        self.tables()
            .iter()
            .any(|table| column_sequences(table).any(|(_, _, sequence)| sequence == name))
    }

    fn sequence_exists(&self, name: &str) -> Result<bool> {
        if self.sequences.lock().contains_key(name) {
            return Ok(true);
        }
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        let found = transaction.get(SEQUENCES_TABLE, &[Value::Text(name.to_string())])?.is_some();
        transaction.commit()?;
        Ok(found)
    }

    /// The value after the last one handed out, at least `first` and at most `maximum`
    /// (2200H past it: nothing is handed out or reserved). Values are reserved durably in
    /// blocks of `SEQUENCE_BLOCK_VALUES` before any of them is handed out, so that after a
    /// crash nextval continues past every value it may have returned.
    fn nextval_raw(&self, name: &str, first: i64, maximum: i64) -> Result<i64> {
        let mut sequences = self.sequences.lock();
        if let Some(state) = sequences.get_mut(name) {
            if state.handed_out >= maximum {
                return Err(reached_maximum(name, maximum));
            }
            if state.handed_out < state.last_reserved {
                state.handed_out += 1;
                return Ok(state.handed_out);
            }
        }
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        let key = [Value::Text(name.to_string())];
        let durable = match transaction.get(SEQUENCES_TABLE, &key)? {
            Some(row) => match row.get(1) {
                Some(Value::Int(value)) => Some(*value),
                other => {
                    return Err(SqlError::internal(format!("sequence {name} holds {other:?}")))
                }
            },
            None => None,
        };
        let handed_out = durable.unwrap_or(0).max(first - 1);
        if handed_out >= maximum {
            return Err(reached_maximum(name, maximum));
        }
        let last_reserved = handed_out.saturating_add(SEQUENCE_BLOCK_VALUES).min(maximum);
        let row = vec![key[0].clone(), Value::Int(last_reserved)];
        if durable.is_some() {
            let mut replacement = Some(row);
            transaction.update(SEQUENCES_TABLE, &key, &mut |_| replacement.take())?;
        } else {
            transaction.insert(SEQUENCES_TABLE, row)?;
        }
        transaction.commit()?;
        let value = handed_out + 1;
        debug_assert!(value <= last_reserved && last_reserved <= maximum);
        sequences.insert(name.to_string(), SerialState { handed_out: value, last_reserved });
        Ok(value)
    }
}

/// nextval's error past a sequence's maximum (PostgreSQL's 2200H).
fn reached_maximum(name: &str, maximum: i64) -> SqlError {
    SqlError::new(
        "2200H",
        format!("nextval: reached maximum value of sequence \"{name}\" ({maximum})"),
    )
}

/// Inserts or replaces the row `name` of one of the text-keyed internal tables in
/// `transaction`.
fn upsert_text_in(
    transaction: &mut Transaction,
    table: &str,
    name: &str,
    definition: String,
) -> Result<()> {
    let key = [Value::Text(name.to_string())];
    let definition = Value::Text(definition);
    let mut replacement = Some(vec![key[0].clone(), definition.clone()]);
    let updated = transaction.update(table, &key, &mut |_| replacement.take())?;
    if !updated {
        transaction.insert(table, vec![key[0].clone(), definition])?;
    }
    Ok(())
}

/// `tierdb_sql_sequence_states`: a sequence's name, last value and is_called (0 / 1).
fn sequence_states_table() -> TableDef {
    let mut table = text_key_table(sequences::SEQUENCE_STATES_TABLE, "last_value", KeyKind::Int);
    table.columns.push(ColumnDef { name: "is_called".into(), kind: KeyKind::Int, nullable: false });
    table
}

fn text_key_table(name: &str, value_column: &str, value_kind: KeyKind) -> TableDef {
    TableDef {
        name: name.to_string(),
        columns: vec![
            ColumnDef { name: "name".into(), kind: KeyKind::Text, nullable: false },
            ColumnDef { name: value_column.into(), kind: value_kind, nullable: false },
        ],
        primary_key: Some(vec![0]),
        indexes: Vec::new(),
    }
}

/// The sequence a `nextval('name')` default names.
pub fn sequence_of_default(default: &str) -> Option<&str> {
    default.strip_prefix("nextval('")?.strip_suffix("')")
}

/// Whether a table name is one of the SQL layer's own.
pub fn is_internal_table(name: &str) -> bool {
    [
        TABLES_TABLE,
        SEQUENCES_TABLE,
        sequences::SEQUENCE_STATES_TABLE,
        ROLES_TABLE,
        GRANTS_TABLE,
        SCHEMA_GRANTS_TABLE,
        cluster::CLUSTER_TABLE,
        statistics::STATISTICS_TABLE,
    ]
    .contains(&name)
}

/// B-tree keys over vector columns are refused until the key encoding orders vectors as
/// pgvector's btree operator class does (element by element): the stored bytes would order
/// them differently and range scans would return wrong rows.
fn refuse_vector_key(table: &TableMeta, index: &IndexMeta) -> Result<()> {
    let vector_key = index.columns.iter().any(|column| {
        table.columns.get(*column).is_some_and(|meta| {
            matches!(meta.ty, SqlType::Vector(_) | SqlType::HalfVec(_) | SqlType::SparseVec(_))
        })
    });
    if vector_key {
        return Err(SqlError::unsupported(
            "btree indexes, primary keys and unique constraints on vector columns are not supported",
        ));
    }
    // The key encoding orders jsonb by its text, not by jsonb's order (and json has no
    // btree operator class in PostgreSQL either).
    for column in &index.columns {
        match table.columns.get(*column).map(|meta| &meta.ty) {
            Some(SqlType::Json) => {
                return Err(SqlError::new(
                    "42704",
                    "data type json has no default operator class for access method \"btree\"",
                ))
            }
            Some(SqlType::Jsonb) => {
                return Err(SqlError::unsupported(
                    "btree indexes, primary keys and unique constraints on jsonb columns are not supported",
                ))
            }
            // The key encoding orders an interval's stored fields, not interval_cmp's
            // normalised span ('1 mon' = '30 days').
            Some(SqlType::Interval) => {
                return Err(SqlError::unsupported(
                    "btree indexes, primary keys and unique constraints on interval columns are not supported",
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// The engine's columns of a table: the SQL columns' names, engine kinds and NOT NULL.
pub(crate) fn engine_columns(meta: &TableMeta) -> Vec<ColumnDef> {
    meta.columns
        .iter()
        .map(|column| ColumnDef {
            name: column.name.clone(),
            kind: column.ty.key_kind(),
            nullable: column.nullable,
        })
        .collect()
}
