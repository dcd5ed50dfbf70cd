//! Transactional DDL: CREATE TABLE, CREATE INDEX, ALTER TABLE ... ADD and CREATE TABLE AS take
//! effect with the transaction that runs them, as in PostgreSQL.
//!
//! The engine's objects (a table's tree, an index's tree or graph) are made at once and
//! durably, outside any transaction; the SQL definition row in `tierdb_sql_tables` is written
//! by the statement's transaction (the block's, inside BEGIN). So the definition row decides:
//!
//! | the transaction | definition row | engine object | who repairs |
//! |---|---|---|---|
//! | commits | visible | kept | nobody |
//! | rolls back (or to a savepoint) | undone by MVCC | still there | `reconcile` drops it |
//! | is cut by a crash | never committed | still there | `Catalog::open` drops it as an orphan |
//!
//! ADD / DROP COLUMN change the engine table's column layout at once (docs/design/016), and
//! DROP COLUMN drops the engine indexes on the column at once: after a rollback or a crash,
//! `restore_engine_table` hands the engine the layout of the definition row that decides,
//! and builds the indexes it lists again.
//!
//! Until it commits, a table created by a transaction is hidden from every other session
//! (`hidden_tables`), as PostgreSQL's uncommitted pg_class row is. A new index on an existing
//! table is not hidden: other sessions see it in the definition they hold and maintain it
//! when they write, so that it is complete whichever way the transaction ends.
//!
//! Claims stand in for PostgreSQL's ACCESS EXCLUSIVE lock on a table changed by DDL: a
//! session that changes a table's definition claims its name until its transaction ends, and
//! another session's DDL on that name waits (lock_timeout 55P03, statement_timeout and cancel
//! 57014, a cycle of waits 40P01). Plain reads and writes do not wait: tierdb's DDL does not
//! block them (design 009), with one exception: while a transaction that ran ADD / DROP
//! COLUMN on a table is open, other sessions' INSERT, UPDATE and COPY FROM on it wait before
//! binding (`wait_for_column_changes`), since a row written under columns a rollback takes
//! back would lose a value (design 016).
//!
//! State machine of one name's claim (the function for each transition):
//!
//! ```text
//!   free --claim_tables--> claimed(session) --release_claims--> free
//!     ^                          |
//!     +------ claim_tables ------+  (another session waits until the claim is released)
//! ```

use std::collections::HashMap;
use std::time::Duration;

use tierdb_engine::{Transaction, WaitLimits};

use super::*;

/// Server-wide bound on the table names claimed by open transactions: PostgreSQL's lock table
/// (max_locks_per_transaction x max_connections, 64 x 100 by default) runs out in the same way,
/// with the same error.
const CLAIMS_MAX: usize = 64 * 1024;
/// How often a waiting claim checks cancel and timeouts while no claim is released.
const CLAIM_RECHECK_MS: u64 = 50;

/// The names claimed by open transactions and who waits for whom.
#[derive(Default)]
pub(super) struct Claims {
    /// Claimed table name -> the session holding it.
    owners: HashMap<String, u64>,
    /// A waiting session -> the session it waits for (for deadlock detection).
    waits: HashMap<u64, u64>,
    /// Tables whose columns an open transaction changed (ADD / DROP COLUMN) -> its session.
    /// Until it ends, other sessions' writes to them wait (`wait_for_column_changes`): a row
    /// written under its columns would lose a value if it rolled back a DROP COLUMN.
    column_changes: HashMap<String, u64>,
}

/// Whether `session` waiting for `holder` closes a cycle in `waits` (a waiting session -> the
/// session it waits for): the deadlock check of DDL claims and of advisory locks.
pub(super) fn closes_cycle(waits: &HashMap<u64, u64>, session: u64, holder: u64) -> bool {
    let mut next = holder;
    // Each session waits for at most one other: the walk ends within `waits.len()` steps.
    for _ in 0..=waits.len() {
        if next == session {
            return true;
        }
        match waits.get(&next) {
            Some(&further) => next = further,
            None => return false,
        }
    }
    false
}

impl Catalog {
    /// Claims `tables` for DDL by `session` until `release_claims(session)`: waits while
    /// another session's open transaction holds one of them.
    pub fn claim_tables(&self, session: u64, tables: &[String], limits: &WaitLimits) -> Result<()> {
        let mut claims = self.claims.lock();
        self.wait_while_held(&mut claims, session, limits, |claims| {
            tables.iter().find_map(|table| {
                claims.owners.get(table).copied().filter(|&holder| holder != session)
            })
        })?;
        let new = tables.iter().filter(|table| !claims.owners.contains_key(*table)).count();
        if claims.owners.len() + new > CLAIMS_MAX {
            return Err(SqlError::new("53200", "out of shared memory"));
        }
        for table in tables {
            claims.owners.insert(table.clone(), session);
        }
        Ok(())
    }

    /// Records that `session`'s open transaction changed the columns of `table` (which it
    /// has claimed): other sessions' writes to it wait until `release_claims(session)`.
    pub fn mark_column_change(&self, session: u64, table: &str) {
        let mut claims = self.claims.lock();
        assert_eq!(claims.owners.get(table), Some(&session), "a column change of a claimed table");
        claims.column_changes.insert(table.to_string(), session);
        self.column_changes_open.store(claims.column_changes.len(), Ordering::Release);
    }

    /// Before `session` writes rows of `table`: waits while another session's open
    /// transaction has changed its columns (as PostgreSQL's writers wait for the ACCESS
    /// EXCLUSIVE lock of ALTER TABLE), so that no committed row is written under columns a
    /// rollback takes back. The caller binds its statement after it. lock_timeout 55P03,
    /// statement_timeout and cancel 57014, a cycle of waits 40P01.
    pub fn wait_for_column_changes(
        &self,
        session: u64,
        table: &str,
        limits: &WaitLimits,
    ) -> Result<()> {
        if self.column_changes_open.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let mut claims = self.claims.lock();
        self.wait_while_held(&mut claims, session, limits, |claims| {
            claims.column_changes.get(table).copied().filter(|&holder| holder != session)
        })
    }

    /// Waits, with `claims` locked between checks, until `holder_of` names no session for
    /// `session` to wait for: lock_timeout 55P03, statement_timeout and cancel 57014, a
    /// cycle of waits 40P01 (the waits map is what deadlock detection walks).
    fn wait_while_held(
        &self,
        claims: &mut parking_lot::MutexGuard<'_, Claims>,
        session: u64,
        limits: &WaitLimits,
        holder_of: impl Fn(&Claims) -> Option<u64>,
    ) -> Result<()> {
        let lock_deadline = limits.lock_deadline();
        while let Some(holder) = holder_of(claims) {
            if closes_cycle(&claims.waits, session, holder) {
                return Err(SqlError::new("40P01", "deadlock detected"));
            }
            let recheck = Duration::from_millis(CLAIM_RECHECK_MS);
            let sleep = match limits.check_wait(lock_deadline, recheck) {
                Ok(sleep) => sleep,
                Err(error) => {
                    claims.waits.remove(&session);
                    return Err(error.into());
                }
            };
            claims.waits.insert(session, holder);
            self.claims_released.wait_for(claims, sleep);
            claims.waits.remove(&session);
        }
        Ok(())
    }

    /// Releases every claim of `session` (its transaction ended) and makes the tables it
    /// created visible to all: call after the commit, or after `reconcile` on a rollback.
    pub fn release_claims(&self, session: u64) {
        let mut claims = self.claims.lock();
        claims.owners.retain(|_, owner| *owner != session);
        claims.column_changes.retain(|_, owner| *owner != session);
        self.column_changes_open.store(claims.column_changes.len(), Ordering::Release);
        claims.waits.remove(&session);
        drop(claims);
        self.uncommitted.write().retain(|_, owner| *owner != session);
        self.claims_released.notify_all();
    }

    /// Tables created by other sessions' open transactions: not there for `session`.
    pub fn hidden_tables(&self, session: u64) -> Vec<String> {
        let uncommitted = self.uncommitted.read();
        if uncommitted.is_empty() {
            return Vec::new();
        }
        uncommitted
            .iter()
            .filter(|(_, owner)| **owner != session)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Writes a table's definition row in `transaction` (the statement's or the block's).
    pub(super) fn store_meta_in(
        &self,
        transaction: &mut Transaction,
        meta: &TableMeta,
    ) -> Result<()> {
        upsert_text_in(transaction, TABLES_TABLE, &meta.name, meta.encode())
    }

    /// Replaces a table's definition in `transaction` (ALTER TABLE of what only the SQL
    /// catalog holds: names, defaults, NOT NULL) and shows it to new statements at once, as
    /// a new index is shown (a rollback restores the stored one: `reconcile`). The caller
    /// holds the DDL lock and the claim on the table.
    pub fn replace_meta(&self, transaction: &mut Transaction, meta: TableMeta) -> Result<()> {
        assert!(self.tables.read().contains_key(&meta.name), "ALTER TABLE of a known table");
        self.store_meta_in(transaction, &meta)?;
        self.publish(meta);
        Ok(())
    }

    /// After a rollback (whole, or to a savepoint) of a transaction whose DDL changed
    /// `tables`: makes the engine and the in-memory definitions match the definition rows
    /// `transaction` sees now (None: the committed ones). A table without a row is dropped
    /// from the engine; an engine index its row does not list is dropped. The caller holds
    /// the claims on `tables`.
    pub fn reconcile(
        &self,
        tables: &[String],
        transaction: Option<&mut Transaction>,
    ) -> Result<()> {
        let _guard = self.lock_ddl();
        match transaction {
            Some(transaction) => self.reconcile_in(tables, transaction),
            None => {
                let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
                self.reconcile_in(tables, &mut transaction)?;
                transaction.commit()?;
                Ok(())
            }
        }
    }

    fn reconcile_in(&self, tables: &[String], transaction: &mut Transaction) -> Result<()> {
        let mut seen = Vec::new();
        for table in tables {
            if seen.contains(&table) {
                continue;
            }
            seen.push(table);
            let stored = match transaction.get(TABLES_TABLE, &[Value::Text(table.clone())])? {
                Some(row) => match row.get(1) {
                    Some(Value::Text(definition)) => Some(TableMeta::decode(definition)?),
                    _ => return Err(SqlError::new("XX001", "corrupt sql catalog row")),
                },
                None => None,
            };
            match stored {
                Some(meta) if meta.view.is_some() || meta.sequence.is_some() => {
                    self.restore_view_acl(transaction, &meta.name)?;
                    self.publish(meta);
                }
                Some(meta) => {
                    self.restore_engine_table(&meta)?;
                    self.publish(meta);
                }
                None => self.forget_table(table)?,
            }
        }
        Ok(())
    }

    /// A table whose creation was undone: its engine table, sequences and ACL go.
    fn forget_table(&self, table: &str) -> Result<()> {
        if self.engine.table_names().iter().any(|name| name == table) {
            tracing::info!(%table, "dropping a table whose creating transaction rolled back");
            self.engine.drop_table(table)?;
        }
        let Some(meta) = self.tables.write().remove(table) else { return Ok(()) };
        self.uncommitted.write().remove(table);
        let mut transaction = self.engine.begin(IsolationLevel::ReadCommitted)?;
        self.delete_sequences(&mut transaction, &meta)?;
        transaction.commit()?;
        self.remove_table_acl(table)?;
        self.version.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Makes the engine's version of `meta`'s table match it after a rollback or a crash:
    /// indexes it does not list go, its column layout returns (ADD / DROP COLUMN rolled
    /// back), and the indexes a rolled-back DROP COLUMN dropped are built again.
    pub(super) fn restore_engine_table(&self, meta: &TableMeta) -> Result<()> {
        self.drop_unlisted_indexes(meta)?;
        let layout = meta.column_layout();
        let (slots, missing, _) = self.engine.table_layout(&meta.name)?;
        if slots != layout.slots || missing != layout.missing {
            tracing::info!(table = %meta.name, "restoring the columns of a table whose ADD / DROP COLUMN rolled back or was interrupted");
            let columns = engine_columns(meta);
            self.engine.set_layout(&meta.name, columns, layout.slots, layout.missing)?;
        }
        let engine_indexes = self.engine.table_def(&meta.name)?.indexes;
        for index in &meta.indexes {
            if index.kind != IndexKind::Secondary
                || engine_indexes.iter().any(|known| known.name == index.name)
            {
                continue;
            }
            tracing::info!(table = %meta.name, index = %index.name, "building again an index whose DROP COLUMN rolled back or was interrupted");
            let def = IndexDef {
                name: index.name.clone(),
                columns: index.columns.clone(),
                unique: index.unique,
            };
            self.engine.create_index(&meta.name, def)?;
        }
        Ok(())
    }

    /// Drops the engine indexes of `meta`'s table that its SQL definition does not list (an
    /// index whose CREATE rolled back or was cut by a crash).
    pub(super) fn drop_unlisted_indexes(&self, meta: &TableMeta) -> Result<()> {
        let tree_indexes = self.engine.table_def(&meta.name)?.indexes.into_iter();
        let vector_indexes = self.engine.vector_index_defs(&meta.name)?.into_iter();
        let names =
            tree_indexes.map(|index| index.name).chain(vector_indexes.map(|index| index.name));
        for index in names {
            if !meta.indexes.iter().any(|known| known.name == index) {
                tracing::info!(table = %meta.name, %index, "dropping an index without an SQL definition (its CREATE INDEX rolled back or was interrupted)");
                self.engine.drop_index(&meta.name, &index)?;
            }
        }
        Ok(())
    }
}
