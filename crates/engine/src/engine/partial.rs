//! Partial indexes (CREATE INDEX ... WHERE): the engine knows no SQL expressions, so the SQL
//! layer binds each partial index's predicate and registers it here by index name
//! (`Engine::set_index_predicate`, at catalog load and before CREATE INDEX builds). Writers
//! then add an entry (and check uniqueness) only for versions the predicate accepts; the
//! unique check ignores other rows' versions it rejects; the build skips them. Entries left
//! over for versions it rejects (undo, purge and stale-entry removal stay conservative and
//! keep an entry while any version carries its value) are harmless: readers check every
//! entry against the row's visible version, and a plan uses a partial index only when the
//! query's own WHERE implies the predicate, which stays in the plan's filter.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::Result;
use crate::row::Value;

use super::table::Index;

/// A partial index's predicate over a table's logical row: whether the row belongs in the
/// index (NULL counts as false). An error fails the write, as PostgreSQL's evaluation does.
pub trait IndexPredicate: Send + Sync {
    fn matches(&self, row: &[Value]) -> Result<bool>;
}

/// The registered predicates by index name (index names are unique in an engine).
#[derive(Default)]
pub(super) struct IndexPredicates {
    by_index: RwLock<HashMap<String, Arc<dyn IndexPredicate>>>,
}

impl IndexPredicates {
    pub(super) fn set(&self, index: &str, predicate: Option<Arc<dyn IndexPredicate>>) {
        let mut by_index = self.by_index.write();
        match predicate {
            Some(predicate) => by_index.insert(index.to_string(), predicate),
            None => by_index.remove(index),
        };
    }

    /// Whether a predicate is registered for `index`.
    pub(super) fn is_partial(&self, index: &str) -> bool {
        self.by_index.read().contains_key(index)
    }

    /// The predicate registered for `index` (None: a full index).
    pub(super) fn get(&self, index: &str) -> Option<Arc<dyn IndexPredicate>> {
        self.by_index.read().get(index).cloned()
    }

    /// Whether `row` belongs in `index`: always for an index without a predicate.
    pub(super) fn covers(&self, index: &Index, row: &[Value]) -> Result<bool> {
        self.covers_name(&index.def.name, row)
    }

    pub(super) fn covers_name(&self, index: &str, row: &[Value]) -> Result<bool> {
        let by_index = self.by_index.read();
        if by_index.is_empty() {
            return Ok(true);
        }
        match by_index.get(index) {
            Some(predicate) => predicate.matches(row),
            None => Ok(true),
        }
    }
}
