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
//!
//! Modules: `catalog` (table definitions in the catalog tree, DDL), `table` (table and index
//! handles, key encoding), `transaction` (a transaction's reads, writes, locking reads, undo),
//! `purge` (removing versions no snapshot needs). This file holds what they share (`Shared`)
//! and the public `Engine`.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard, RwLock};
use tierdb_access::{BTree, Direction};
use tierdb_common::{PageId, PageType};
use tierdb_storage::PageStore;

use crate::error::{EngineError, Result};
use crate::locks::StripeLocks;
use crate::root::{
    new_root_header, RootFields, ROOT_CATALOG_OFFSET, ROOT_FLAGS_OFFSET, ROOT_FLAG_PURGED,
    ROOT_PAGE,
};
use crate::row::{decode_versions, Value};
use crate::txn::{IsolationLevel, TxnManager, VirtualId};

use purge::{purge_loop, PurgeQueue};

mod catalog;
mod graveyard;
mod index_build;
mod layout;
mod partial;
mod purge;
mod table;
mod transaction;
mod vector_check;
mod vector_index;
mod vector_purge;

pub use index_build::{
    IndexBuildOptions, IndexBuildPhase, IndexBuildProgress, MAINTENANCE_WORK_MEM_DEFAULT_BYTES,
};
pub use partial::IndexPredicate;
pub use purge::PurgeStats;
pub use table::{
    ColumnDef, IndexDef, Projection, RelationPages, RowKey, RowPage, TableDef, TableHandle,
    TableRef, VectorIndexDef, VectorMethod,
};
pub use transaction::{ConflictArbiters, InsertOutcome, Transaction, INSERT_BATCH_ROWS_MAX};
pub use vector_check::VectorIndexCheck;
pub use vector_index::{NearestOptions, NearestScan};

/// Row stripes (`Shared::row_locks`): rows hash onto them by table name and key, so two
/// writers of different rows rarely share a mutex, and the memory stays bounded.
const ROW_LOCK_STRIPES: usize = 1024;

/// PostgreSQL's bounds and default of `temp_buffers`, in buffers of `PAGE_SIZE` (8 kB, as
/// PostgreSQL's): a session's temp tables' store gets a buffer pool of that many pages
/// (`TempOwner::buffer_pool_bytes`). The pool allocates its frames as pages come in, as
/// PostgreSQL's local buffers do, so an unused allowance costs no memory.
pub const TEMP_BUFFERS_MIN: u64 = 100;
pub const TEMP_BUFFERS_MAX: u64 = 1_073_741_823;
pub const TEMP_BUFFERS_DEFAULT: u64 = 1024;

/// Whose temp table `Engine::create_temp_table` makes: the session, whose own unlogged store
/// holds it (opened at its first temp table with a pool of `buffer_pool_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TempOwner {
    pub session: u64,
    /// The session's `temp_buffers` in bytes (a multiple of `PAGE_SIZE`).
    pub buffer_pool_bytes: u64,
}

impl TempOwner {
    /// The owner for a session whose `temp_buffers` is `buffers` pages.
    pub fn with_buffers(session: u64, buffers: u64) -> TempOwner {
        assert!((TEMP_BUFFERS_MIN..=TEMP_BUFFERS_MAX).contains(&buffers), "checked at SET");
        let page_bytes = u64::try_from(tierdb_common::PAGE_SIZE).expect("page size fits u64");
        TempOwner { session, buffer_pool_bytes: buffers * page_bytes }
    }
}

/// What the engine's handle, its transactions and its purge thread share.
pub(crate) struct Shared {
    store: Arc<PageStore>,
    /// The unlogged stores temp tables live in (docs/design/019-temp-tables.md), one per
    /// session that has temp tables, by session number: opened at the session's first
    /// CREATE TEMP TABLE in the temp space's directory, dropped (its directory and pages
    /// freed) with the session's last temp table.
    temp_stores: Mutex<HashMap<u64, Arc<PageStore>>>,
    txns: TxnManager,
    catalog: BTree,
    /// The tables by name: each a `TableHandle` that DDL updates in place (index DDL and
    /// truncation) or marks dropped, so handles resolved earlier see the change.
    tables: RwLock<HashMap<String, TableHandle>>,
    /// The DDL lock. Everything that changes a row or index entries (writers, undo, purge)
    /// holds it shared for that change, never while waiting for a transaction (a DDL waiting
    /// for it exclusively would block the holder's own next acquisition: parking_lot's lock is
    /// fair). `create_index`, `drop_index`, `drop_table` and `truncate_table` hold it
    /// exclusively, so a backfill sees every row with all its versions and no writer can add
    /// a version it would miss. Taken before any row stripe mutex. Readers do not take it:
    /// they read through the handle they resolved, whose trees are freed only once no handle
    /// of them is left (graveyard.rs).
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
    /// The index builds running, for the progress view.
    index_builds: index_build::IndexBuildRegistry,
    /// The predicates of partial indexes, registered by the SQL layer (partial.rs).
    index_predicates: partial::IndexPredicates,
    /// Dropped trees waiting until nobody holds them, then destroyed by the purge thread
    /// (graveyard.rs). As many as DDL dropped and readers still hold, each a few bytes.
    graveyard: Mutex<Vec<graveyard::Grave>>,
    /// Held by whoever reaps graves (the purge thread, VACUUM): one reap at a time, and a
    /// count of pending graves waits for the reap in progress (whose graves are out of
    /// `graveyard` meanwhile).
    reaping: Mutex<()>,
}

/// Queued purge items `close_purged` works through at most: beyond, shutdown would take too
/// long, and the next start runs a full pass instead.
const PURGE_AT_SHUTDOWN_MAX: usize = 50_000;

impl Shared {
    /// Opens the engine core, creating its root, commit log and catalog on an empty store.
    fn open(store: Arc<PageStore>) -> Result<Shared> {
        let fresh = store.max_page_id() == PageId::INVALID;
        if fresh {
            Self::bootstrap(&store)?;
        }
        let mut root = RootFields::read(&store)?;
        if root.catalog == PageId::INVALID {
            // A crash between bootstrap's steps: finish it.
            root.catalog = Self::create_catalog(&store)?;
        }
        let txns = TxnManager::open(Arc::clone(&store), &root)?;
        let catalog = BTree::open(Arc::clone(&store), root.catalog)?;
        // A new database has nothing to purge either.
        let purged_at_shutdown = fresh || root.flags & ROOT_FLAG_PURGED != 0;
        let engine = Shared {
            store,
            temp_stores: Mutex::new(HashMap::new()),
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
            index_builds: index_build::IndexBuildRegistry::default(),
            index_predicates: partial::IndexPredicates::default(),
            graveyard: Mutex::new(Vec::new()),
            reaping: Mutex::new(()),
        };
        // Cleared (durably) before any transaction can leave a version behind: a crash from
        // here on must lead to a full pass again.
        engine.set_root_flags(0)?;
        engine.load_catalog()?;
        engine.load_graves(&engine.live_trees())?;
        Ok(engine)
    }

    /// Writes the engine root's flags and waits until the write is durable.
    fn set_root_flags(&self, flags: u32) -> Result<()> {
        if RootFields::read(&self.store)?.flags == flags {
            return Ok(());
        }
        let mut mtr = self.store.mtr();
        let slot = mtr.latch(ROOT_PAGE)?;
        mtr.write(slot, ROOT_FLAGS_OFFSET, &flags.to_le_bytes());
        let lsn = mtr.commit()?;
        self.store.wait_durable(lsn)?;
        Ok(())
    }

    /// Makes an empty store an engine's: the root page and the first commit-log directory in
    /// one mtr, then the catalog (`create_catalog`, which `open` redoes if a crash came
    /// between the two).
    fn bootstrap(store: &Arc<PageStore>) -> Result<()> {
        let mut mtr = store.mtr();
        let (root_slot, root) = mtr.allocate(PageType::Meta)?;
        assert_eq!(root, ROOT_PAGE, "the engine root is the store's first page");
        let (_, clog_directory) = mtr.allocate(PageType::Meta)?;
        // The header is the start of the payload.
        mtr.write(root_slot, 0, &new_root_header(clog_directory));
        mtr.commit()?;
        Self::create_catalog(store)?;
        Ok(())
    }

    /// Creates the catalog tree and points the root page at it (durably).
    fn create_catalog(store: &Arc<PageStore>) -> Result<PageId> {
        let catalog = BTree::create(Arc::clone(store))?;
        let mut mtr = store.mtr();
        let slot = mtr.latch(ROOT_PAGE)?;
        mtr.write(slot, ROOT_CATALOG_OFFSET, &catalog.meta_page().0.to_le_bytes());
        store.wait_durable(mtr.commit()?)?;
        Ok(catalog.meta_page())
    }

    /// The temp tables' store of `owner`'s session, opened at its first use with the
    /// session's pool size (later calls keep the pool the store was opened with).
    fn temp_store(&self, owner: TempOwner) -> Result<Arc<PageStore>> {
        let mut stores = self.temp_stores.lock();
        if let Some(store) = stores.get(&owner.session) {
            return Ok(Arc::clone(store));
        }
        let temp = self.store.temp_space();
        let store = Arc::new(PageStore::open_unlogged(temp, owner.buffer_pool_bytes)?);
        stores.insert(owner.session, Arc::clone(&store));
        Ok(store)
    }

    /// Forgets the session store `store` when no table is left in it (the caller holds the
    /// table map): its `Drop`, at its last handle, removes its directory and its charge.
    fn release_temp_store(&self, tables: &HashMap<String, TableHandle>, store: &Arc<PageStore>) {
        let in_store = |handle: &TableHandle| {
            handle.table().is_ok_and(|table| Arc::ptr_eq(table.tree.store(), store))
        };
        if !tables.values().any(in_store) {
            self.temp_stores.lock().retain(|_, open| !Arc::ptr_eq(open, store));
        }
    }

    /// Whether `table` is a temp table: its trees are in the temp tables' store.
    fn is_temporary(&self, table: &table::Table) -> bool {
        !Arc::ptr_eq(table.tree.store(), &self.store)
    }

    /// Starts a transaction.
    fn begin(self: &Arc<Shared>, isolation: IsolationLevel) -> Result<Transaction> {
        if self.closed.load(Ordering::Acquire) {
            return Err(EngineError::ShuttingDown);
        }
        Ok(Transaction::new(Arc::clone(self), isolation))
    }

    fn row_lock(&self, key: &[u8], table: &str) -> MutexGuard<'_, StripeLocks> {
        self.row_locks[row_lock_stripe(key, table)].lock()
    }
}

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
        self.shared.create_table(def, None)
    }

    /// Creates a temp table (docs/design/019-temp-tables.md): in the unlogged store of the
    /// temp space, with no catalog entry, so nothing about it is logged and no restart
    /// finds it. Used like any table until `drop_table` (or the engine's end) removes it.
    pub fn create_temp_table(&self, def: TableDef, owner: TempOwner) -> Result<()> {
        self.shared.create_table(def, Some(owner))
    }

    /// The temp tables' store of `session`, while it has temp tables (its buffer pool and
    /// counters, for tests and statistics).
    pub fn temp_table_store(&self, session: u64) -> Option<Arc<PageStore>> {
        self.shared.temp_stores.lock().get(&session).cloned()
    }

    /// Closes `session`'s temp tables' store if no table is left in it (at the session's
    /// end, after its temp tables were dropped): its directory and pages go with it.
    pub fn release_temp_store(&self, session: u64) {
        let tables = self.shared.tables.read();
        let store = self.shared.temp_stores.lock().get(&session).cloned();
        if let Some(store) = store {
            self.shared.release_temp_store(&tables, &store);
        }
    }

    /// How many sessions have a temp tables' store open.
    pub fn temp_table_store_count(&self) -> usize {
        self.shared.temp_stores.lock().len()
    }

    pub fn table_names(&self) -> Vec<String> {
        self.shared.table_names()
    }

    /// The handle of the table named `name` (42P01 if there is none), to pass to a
    /// transaction's reads and writes instead of the name (`TableHandle`).
    pub fn table_handle(&self, name: &str) -> Result<TableHandle> {
        self.shared.handle(name)
    }

    /// The definition of a table (42P01 if there is none), with its current indexes.
    pub fn table_def(&self, name: &str) -> Result<TableDef> {
        Ok(self.shared.table(name)?.def.clone())
    }

    /// The definitions of a table's vector indexes (kept apart from `TableDef::indexes`).
    pub fn vector_index_defs(&self, name: &str) -> Result<Vec<VectorIndexDef>> {
        let table = self.shared.table(name)?;
        Ok(table.vector_indexes.iter().map(|index| index.def.clone()).collect())
    }

    /// Drops a table, durably and at once (not transactional). Transactions using it get
    /// 42P01 at their next operation on it. Its B+trees' pages are freed once nobody holds
    /// them (`reclaim_dropped_pages`).
    pub fn drop_table(&self, name: &str) -> Result<()> {
        self.shared.drop_table(name)
    }

    /// Empties a table and its indexes, durably and at once. Not transactional (PostgreSQL's
    /// TRUNCATE is): rows that running transactions wrote are gone too, and their rollback
    /// does not bring back anything. The old trees' pages are freed as `drop_table`'s are.
    pub fn truncate_table(&self, name: &str) -> Result<()> {
        self.shared.truncate_table(name)
    }

    /// Lets a column hold NULLs, durably (ALTER TABLE ... DROP NOT NULL). A primary key's
    /// columns stay NOT NULL whatever this says (`Table::check_row`).
    pub fn allow_nulls(&self, table: &str, column: usize) -> Result<()> {
        self.shared.allow_nulls(table, column)
    }

    /// Replaces a table's logical columns, durably (ALTER TABLE ... ADD / DROP COLUMN and
    /// their rollback, docs/design/016): `columns[i]` is stored in physical slot `slots[i]`
    /// and reads as `missing[i]` in rows stored before that slot existed. Slots are never
    /// reused: a new column takes `slot_count` (one per call). The primary key's columns
    /// stay; indexes on a column that goes must be dropped first; the others follow their
    /// columns. Transactions writing rows encoded for the previous columns fail (22023).
    pub fn set_layout(
        &self,
        table: &str,
        columns: Vec<ColumnDef>,
        slots: Vec<usize>,
        missing: Vec<Value>,
    ) -> Result<()> {
        self.shared.set_layout(table, columns, slots, missing)
    }

    /// A table's layout: the slot of each column, each column's missing value, and the
    /// number of slots it ever had (the slot a new column takes).
    pub fn table_layout(&self, table: &str) -> Result<(Vec<usize>, Vec<Value>, usize)> {
        let table = self.shared.table(table)?;
        let layout = &table.layout;
        Ok((layout.slots().to_vec(), layout.missing().to_vec(), layout.slot_kinds().len()))
    }

    /// Creates an index on a table that may hold rows (backfilled; blocks writers of every
    /// table meanwhile). 42P07 if an index or table has the name, 23505 if a unique index
    /// would be violated (no index is left behind), 22023 for bad columns.
    pub fn create_index(&self, table: &str, index: IndexDef) -> Result<()> {
        self.shared.create_index(table, index, &IndexBuildOptions::default())
    }

    /// `create_index` with the session's maintenance_work_mem, temp accounting and the ids
    /// the progress view shows.
    /// Registers (or with `None` removes) the predicate of the partial index `index`: from
    /// then on writers index only the rows it accepts (partial.rs). The SQL layer registers
    /// every partial index's predicate at load, and a new one's before `create_index_with`.
    pub fn set_index_predicate(&self, index: &str, predicate: Option<Arc<dyn IndexPredicate>>) {
        self.shared.index_predicates.set(index, predicate);
    }

    pub fn create_index_with(
        &self,
        table: &str,
        index: IndexDef,
        options: &IndexBuildOptions,
    ) -> Result<()> {
        self.shared.create_index(table, index, options)
    }

    /// Creates a vector index (HNSW or ivfflat) on a table that may hold rows (built from every row version;
    /// blocks writers of every table meanwhile). 42P07 if an index or table has the name.
    pub fn create_vector_index(&self, table: &str, index: VectorIndexDef) -> Result<()> {
        self.shared.create_vector_index(table, index, MAINTENANCE_WORK_MEM_DEFAULT_BYTES)
    }

    /// `create_vector_index` keeping at most `memory_bytes` of inserted vectors in memory
    /// during the build (the session's maintenance_work_mem).
    pub fn create_vector_index_with(
        &self,
        table: &str,
        index: VectorIndexDef,
        memory_bytes: usize,
    ) -> Result<()> {
        self.shared.create_vector_index(table, index, memory_bytes)
    }

    /// Rows of `table` with a vector in `column` (and, if `index` is a partial index whose
    /// predicate is registered, accepted by it), counted up to `limit`: an ivfflat build
    /// samples fewer rows than its lists when this is below them (pgvector's NOTICE
    /// "ivfflat index created with little data").
    pub fn vector_rows_up_to(
        &self,
        table: &str,
        index: &str,
        column: usize,
        limit: usize,
    ) -> Result<usize> {
        let table = self.shared.table(table)?;
        self.shared.sampled_rows(&table, index, column, limit)
    }

    /// The index builds running now (`pg_stat_progress_create_index`).
    pub fn index_build_progress(&self) -> Vec<IndexBuildProgress> {
        self.shared.index_builds.snapshot()
    }

    /// Frees now, in steps, the pages of dropped and truncated trees that nobody holds any
    /// more (the purge thread does it every 500 ms; graveyard.rs). Returns pages freed.
    pub fn reclaim_dropped_pages(&self) -> Result<u64> {
        self.shared.reap_graves()
    }

    /// Dropped trees whose pages are not freed yet: held by a reader, or being destroyed
    /// (waits for a reap in progress).
    pub fn dropped_trees_pending(&self) -> usize {
        let _reaping = self.shared.reaping.lock();
        self.shared.graveyard.lock().len()
    }

    /// Drops an index (42P01 if the table or index does not exist). A B+tree index's pages
    /// are freed once nobody holds it (`reclaim_dropped_pages`); a vector index's are not.
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

    /// Whether the transaction with virtual id `virtual_id` (`Transaction::virtual_id`) is
    /// still running: neither committed, rolled back nor dropped.
    pub fn is_transaction_running(&self, virtual_id: VirtualId) -> bool {
        self.shared.txns.is_virtual_active(virtual_id)
    }

    /// Runs one purge pass now (the purge thread also runs them).
    pub fn purge(&self) -> Result<PurgeStats> {
        self.shared.purge()
    }

    /// Runs one purge pass over the named tables only.
    pub fn purge_tables(&self, names: &[String]) -> Result<PurgeStats> {
        self.shared.purge_tables(names)
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

/// The stripe of `row_locks` that guards the row `key` of `table`.
fn row_lock_stripe(key: &[u8], table: &str) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in table.as_bytes().iter().chain(key) {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    usize::try_from(hash % ROW_LOCK_STRIPES as u64).expect("fits")
}
