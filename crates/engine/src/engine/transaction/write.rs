//! A transaction's writes: insert, update and delete of one row, with index maintenance.

use std::ops::Bound;
use std::sync::Arc;

use parking_lot::MutexGuard;
use tierdb_access::Direction;

use crate::error::{EngineError, Result};
use crate::locks::LockMode;
use crate::row::{decode_versions, encode_versions, Row, Value, Version};
use crate::txn::{IsolationLevel, TxnId, TxnStatus};

use super::locking::update_mode;
use super::{Transaction, UndoEntry};
use crate::engine::layout::Layout;
use crate::engine::purge::prune_versions;
use crate::engine::table::{drop_stale_entries, Index, Table, TableHandle, TableRef};
use crate::engine::vector_index::maintain_vector_indexes;

/// What a write does to a row's newest state.
enum Action<'a> {
    /// Insert the encoded row; a conflict on one of the arbiters (if any) is
    /// `EngineError::Conflict` instead of a violation, and changes nothing.
    /// The row is encoded for the layout given: written only if it is still the table's.
    Insert(Vec<u8>, Arc<Layout>, Option<&'a ConflictArbiters>),
    Update(&'a mut dyn FnMut(&Row) -> Option<Row>),
    /// Delete, if the check (on the latest version) passes.
    Delete(Option<&'a mut dyn FnMut(&Row) -> bool>),
}

/// The unique constraints an INSERT ... ON CONFLICT turns from a violation into a conflict
/// it handles (PostgreSQL's arbiter indexes).
#[derive(Clone, Debug, PartialEq)]
pub enum ConflictArbiters {
    /// Every unique constraint (ON CONFLICT DO NOTHING without a target).
    Every,
    /// The primary key (if `primary_key`) and the unique indexes named.
    Named { primary_key: bool, indexes: Vec<String> },
}

impl ConflictArbiters {
    /// Whether the constraint (the primary key, or the unique index `name`) is an arbiter.
    fn includes(&self, is_primary_key: bool, name: &str) -> bool {
        match self {
            ConflictArbiters::Every => true,
            ConflictArbiters::Named { primary_key, indexes } => {
                if is_primary_key {
                    *primary_key
                } else {
                    indexes.iter().any(|index| index == name)
                }
            }
        }
    }
}

/// What a speculative insert (`insert_unless_conflict`) did.
#[derive(Clone, Debug, PartialEq)]
pub enum InsertOutcome {
    /// The row was inserted under this row key.
    Inserted { key: Vec<u8> },
    /// A live row (committed, or this transaction's) holds an arbiter's value: nothing was
    /// written. `key` is that row's key (for `update_by_key`), `constraint` the arbiter.
    Conflict { key: Vec<u8>, constraint: String },
}

/// What a unique index says about a new value.
enum UniqueCheck {
    Free,
    /// A running transaction writes or deletes a row with the value: its outcome decides.
    Wait(TxnId),
    /// A live row holds the value: its key and the transaction that created its version.
    Taken((Vec<u8>, TxnId)),
}

enum IndexOutcome<'t> {
    /// The unique-index guards, and the (index, entry key) of every entry added.
    Written(Vec<MutexGuard<'t, ()>>, Vec<(usize, Vec<u8>)>),
    Wait(TxnId),
}

impl Transaction {
    pub fn insert(&mut self, table: &(impl TableRef + ?Sized), row: Row) -> Result<()> {
        self.insert_checked(table, row, None).map(|_| ())
    }

    /// INSERT ... ON CONFLICT: inserts `row` unless a live row holds the value of one of
    /// `arbiters` (after waiting for a running transaction that writes it, as `insert`
    /// does); then nothing is written, the transaction goes on, and the outcome names the
    /// row that holds it. A violation of a unique constraint that is not an arbiter is 23505
    /// as in `insert`. Under REPEATABLE READ a holder this snapshot does not see is 40001
    /// (PostgreSQL's ExecCheckTupleVisible).
    pub fn insert_unless_conflict(
        &mut self,
        table: &(impl TableRef + ?Sized),
        row: Row,
        arbiters: &ConflictArbiters,
    ) -> Result<InsertOutcome> {
        self.insert_checked(table, row, Some(arbiters))
    }

    /// `insert` and `insert_unless_conflict`: without arbiters every unique violation is
    /// 23505, so the outcome is always Inserted.
    fn insert_checked(
        &mut self,
        table: &(impl TableRef + ?Sized),
        row: Row,
        arbiters: Option<&ConflictArbiters>,
    ) -> Result<InsertOutcome> {
        self.run(|txn| {
            let handle = table.resolve(txn)?;
            let table = handle.table()?;
            table.check_row(&row)?;
            let key = table.key_of(&row)?;
            let encoded = table.layout.encode(&row);
            let layout = Arc::clone(&table.layout);
            match txn.modify(&handle, &key, Action::Insert(encoded, layout, arbiters)) {
                Ok(_) => Ok(InsertOutcome::Inserted { key }),
                Err(EngineError::Conflict { key, constraint }) => {
                    Ok(InsertOutcome::Conflict { key, constraint })
                }
                Err(error) => Err(error),
            }
        })
    }

    /// Inserts the encoded row `encoded` under `key` through the one-row path (the bulk path's
    /// fallback for keys already in the tree and rows under a locking read's lock).
    pub(super) fn insert_encoded(
        &mut self,
        handle: &TableHandle,
        key: &[u8],
        encoded: Vec<u8>,
        layout: Arc<Layout>,
    ) -> Result<()> {
        self.modify(handle, key, Action::Insert(encoded, layout, None)).map(|_| ())
    }

    /// Updates the row with primary key `key`: `change` gets the latest committed version (in
    /// READ COMMITTED, after waiting for a concurrent writer) and returns the new row, or
    /// `None` to leave it. Returns whether a row was updated.
    pub fn update(
        &mut self,
        table: &(impl TableRef + ?Sized),
        key: &[Value],
        change: &mut dyn FnMut(&Row) -> Option<Row>,
    ) -> Result<bool> {
        self.run(|txn| {
            let handle = table.resolve(txn)?;
            let encoded = handle.table()?.encode_primary_key(key)?;
            txn.modify(&handle, &encoded, Action::Update(change))
        })
    }

    pub fn delete(&mut self, table: &(impl TableRef + ?Sized), key: &[Value]) -> Result<bool> {
        self.run(|txn| {
            let handle = table.resolve(txn)?;
            let encoded = handle.table()?.encode_primary_key(key)?;
            txn.modify(&handle, &encoded, Action::Delete(None))
        })
    }

    /// `update` of the row with row key `key` (from a keyed read): also addresses rows of a
    /// table without a primary key. 22023 if `key` is not a key of this table.
    pub fn update_by_key(
        &mut self,
        table: &(impl TableRef + ?Sized),
        key: &[u8],
        change: &mut dyn FnMut(&Row) -> Option<Row>,
    ) -> Result<bool> {
        self.run(|txn| {
            let handle = table.resolve(txn)?;
            handle.table()?.check_row_key(key)?;
            txn.modify(&handle, key, Action::Update(change))
        })
    }

    /// `delete` of the row with row key `key` (from a keyed read).
    pub fn delete_by_key(&mut self, table: &(impl TableRef + ?Sized), key: &[u8]) -> Result<bool> {
        self.run(|txn| {
            let handle = table.resolve(txn)?;
            handle.table()?.check_row_key(key)?;
            txn.modify(&handle, key, Action::Delete(None))
        })
    }

    /// `delete_by_key` that deletes only if `check` passes on the row's latest version (READ
    /// COMMITTED re-check of a DELETE's WHERE after waiting for a concurrent writer).
    pub fn delete_by_key_if(
        &mut self,
        table: &(impl TableRef + ?Sized),
        key: &[u8],
        check: &mut dyn FnMut(&Row) -> bool,
    ) -> Result<bool> {
        self.run(|txn| {
            let handle = table.resolve(txn)?;
            handle.table()?.check_row_key(key)?;
            txn.modify(&handle, key, Action::Delete(Some(check)))
        })
    }

    /// The transaction holding a row through `version` (its newest, or one holding a unique
    /// value): the version's deleter or creator if it is another transaction still running.
    pub(super) fn holder(&self, version: &Version) -> Option<TxnId> {
        let txns = &self.engine.txns;
        if version.xmax != 0 && version.xmax != self.id && txns.is_active(version.xmax) {
            return Some(version.xmax);
        }
        if version.xmin != self.id && txns.is_active(version.xmin) {
            return Some(version.xmin);
        }
        None
    }

    /// Gives this transaction its real id at its first write; the snapshot then recognizes
    /// the transaction's own versions.
    pub(super) fn ensure_id(&mut self) -> Result<TxnId> {
        if self.id == 0 {
            self.id = self.engine.txns.assign()?;
            self.snapshot.me = self.id;
        }
        Ok(self.id)
    }

    /// Writes one row of the table `handle` belongs to, through its current handle (resolved
    /// under the shared DDL lock, so indexes created since `handle` was taken are maintained;
    /// 42P01 if the table was dropped).
    fn modify(&mut self, handle: &TableHandle, key: &[u8], mut action: Action<'_>) -> Result<bool> {
        self.ensure_id()?;
        let engine = Arc::clone(&self.engine);
        loop {
            let ddl = engine.ddl.read();
            let table = handle.table()?;
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
            let Some(mode) = self.apply(table, key, &mut versions, &mut action)? else {
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
            let arbiters = match &action {
                Action::Insert(_, _, arbiters) => *arbiters,
                _ => None,
            };
            let _index_guards = match self.maintain_indexes(table, key, &versions, arbiters)? {
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
            // Vector entries are never undone: a rolled-back one is stale, and scans skip it.
            maintain_vector_indexes(table, key, &versions, self.id, &engine.index_predicates)?;
            drop(guard);
            drop(ddl);
            return Ok(true);
        }
    }

    /// Adds index entries for the row's new newest version (if this transaction made one),
    /// after checking every unique index first, so that a violation or conflict leaves no
    /// entry behind. Returns the unique-index guards, held until the row is written, or the
    /// transaction to wait for.
    fn maintain_indexes<'t>(
        &self,
        table: &'t Table,
        key: &[u8],
        versions: &[Version],
        arbiters: Option<&ConflictArbiters>,
    ) -> Result<IndexOutcome<'t>> {
        let mut guards = Vec::new();
        let mut added = Vec::new();
        let Some(newest) =
            versions.first().filter(|version| version.xmin == self.id && version.xmax == 0)
        else {
            return Ok(IndexOutcome::Written(guards, added));
        };
        let row = table.layout.decode(&newest.row)?;
        let previous = match versions.get(1) {
            Some(version) => Some(table.layout.decode(&version.row)?),
            None => None,
        };
        let predicates = &self.engine.index_predicates;
        let mut prefixes = Vec::with_capacity(table.indexes.len());
        for index in &table.indexes {
            // A partial index takes only the rows its predicate accepts (partial.rs).
            if !predicates.covers(index, &row)? {
                prefixes.push(None);
                continue;
            }
            let prefix = index.prefix(&row)?;
            if index.def.unique && !index.has_null(&row) {
                guards.push(index.unique_lock.lock());
                match self.unique_conflict(table, index, &prefix, key)? {
                    UniqueCheck::Free => {}
                    UniqueCheck::Wait(holder) => return Ok(IndexOutcome::Wait(holder)),
                    UniqueCheck::Taken((other_key, xmin)) => {
                        let constraint = index.def.name.clone();
                        let holder = (false, constraint);
                        return Err(self.taken(&other_key, xmin, holder, arbiters)?);
                    }
                }
            }
            prefixes.push(Some(prefix));
        }
        for (position, (index, prefix)) in table.indexes.iter().zip(prefixes).enumerate() {
            let Some(prefix) = prefix else { continue };
            // The previous version's entry serves only if that version was indexed too.
            let unchanged = match &previous {
                Some(previous) => {
                    index.prefix(previous)? == prefix && predicates.covers(index, previous)?
                }
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

    /// Checks whether another row holds `prefix` in a unique index: a live committed version
    /// takes it (with its row key and creator); one being written or deleted by a running
    /// transaction must be waited for (its outcome decides).
    fn unique_conflict(
        &self,
        table: &Table,
        index: &Index,
        prefix: &[u8],
        own_key: &[u8],
    ) -> Result<UniqueCheck> {
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
                let row = table.layout.decode(&version.row)?;
                // A version outside a partial index's predicate holds no value of it.
                if index.prefix(&row)? != prefix
                    || !self.engine.index_predicates.covers(index, &row)?
                {
                    continue;
                }
                if let Some(holder) = self.holder(&version) {
                    return Ok(UniqueCheck::Wait(holder));
                }
                if self.is_live(Some(&version))? {
                    return Ok(UniqueCheck::Taken((other_key, version.xmin)));
                }
            }
        }
        Ok(UniqueCheck::Free)
    }

    /// The error for a value of a constraint (whether it is the primary key, and its name)
    /// taken by the live row `key` (created by `xmin`): a conflict if the constraint is an
    /// arbiter of this insert (40001 under REPEATABLE READ if this snapshot does not see the
    /// row), else 23505.
    fn taken(
        &self,
        key: &[u8],
        xmin: TxnId,
        (is_primary_key, constraint): (bool, String),
        arbiters: Option<&ConflictArbiters>,
    ) -> Result<EngineError> {
        if !arbiters.is_some_and(|arbiters| arbiters.includes(is_primary_key, &constraint)) {
            return Ok(EngineError::UniqueViolation { constraint });
        }
        if self.isolation == IsolationLevel::RepeatableRead
            && xmin != self.id
            && !self.engine.txns.visible(&self.snapshot, xmin)?
        {
            return Ok(EngineError::SerializationFailure);
        }
        Ok(EngineError::Conflict { key: key.to_vec(), constraint })
    }

    /// Whether `version` (the newest of its row, or a version holding a unique value) is a
    /// live row for a writer: created by a committed transaction (or this one) and not
    /// deleted by one. Outcomes are the latest, whatever the snapshot says.
    pub(super) fn is_live(&self, version: Option<&Version>) -> Result<bool> {
        let Some(version) = version else { return Ok(false) };
        let txns = &self.engine.txns;
        let created = version.xmin == self.id || txns.status(version.xmin)? == TxnStatus::Committed;
        let deleted = version.xmax != 0
            && (version.xmax == self.id || txns.status(version.xmax)? == TxnStatus::Committed);
        Ok(created && !deleted)
    }

    /// Applies `action` to a row whose newest version no other running transaction holds.
    /// Returns the row-lock mode the change needs (None: nothing changed).
    fn apply(
        &self,
        table: &Table,
        key: &[u8],
        versions: &mut Vec<Version>,
        action: &mut Action<'_>,
    ) -> Result<Option<LockMode>> {
        let txns = &self.engine.txns;
        let newest = versions.first().cloned();
        let live = self.is_live(newest.as_ref())?;
        if let Action::Insert(row, layout, arbiters) = action {
            if !Arc::ptr_eq(layout, &table.layout) {
                // ALTER TABLE ... ADD / DROP COLUMN since the row was encoded: its values
                // would land in the wrong slots.
                return Err(layout_changed(table));
            }
            if live {
                let constraint = format!("{}_pkey", table.def.name);
                let newest = newest.as_ref().expect("a live row has a newest version");
                return Err(self.taken(key, newest.xmin, (true, constraint), *arbiters)?);
            }
            versions.insert(0, Version { xmin: self.id, xmax: 0, row: row.clone() });
            // A new row conflicts with no lock but a FOR UPDATE on a deleted one.
            return Ok(Some(LockMode::KeyShare));
        }
        let Some(newest) = newest.filter(|_| live) else {
            // Deleted or never there. Under REPEATABLE READ a row that this snapshot sees
            // but a later transaction deleted is a conflict.
            if self.isolation == IsolationLevel::RepeatableRead
                && self.visible_row(&table.layout, versions)?.is_some()
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
        let current = table.layout.decode(&newest.row)?;
        let mode = match action {
            Action::Insert(..) => unreachable!("handled above"),
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
                let encoded = table.layout.encode(&new_row);
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

    pub(super) fn prune(&self, versions: &mut Vec<Version>) -> Result<()> {
        prune_versions(&self.engine.txns, self.id, versions, false)
    }
}

/// A row encoded for columns the table no longer has (ALTER TABLE ... ADD / DROP COLUMN
/// committed or published meanwhile): the statement fails instead of storing values under
/// the wrong slots.
pub(super) fn layout_changed(table: &Table) -> EngineError {
    EngineError::InvalidRow {
        detail: format!("the columns of table={} changed during the statement", table.def.name),
    }
}
