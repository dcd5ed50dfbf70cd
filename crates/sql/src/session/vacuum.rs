//! VACUUM, and the warnings a statement leaves for the client (NoticeResponse).
//!
//! As PostgreSQL 15 (vacuum_is_relation_owner): a role vacuums only the tables it owns (or
//! every table, as a superuser or the database owner, tierdb's bootstrap superuser); every
//! other table, named or reached by a bare VACUUM, is skipped with WARNING 01000 `skipping
//! "t" --- only table or database owner can vacuum it`.

use super::*;
use crate::catalog::is_internal_table;

/// Warnings one statement may leave (one per skipped table); beyond, they are counted in a
/// last warning instead of kept.
pub(super) const WARNINGS_MAX: usize = 1000;

impl Session {
    /// VACUUM [tables]: purges the tables the role may vacuum, and frees the pages of dropped
    /// and truncated tables that nobody reads any more (the engine's purge thread does both
    /// every 500 ms anyway).
    pub(super) fn vacuum(&mut self, tables: &[String]) -> Result<()> {
        if self.state != BlockState::Idle {
            return Err(SqlError::new("25001", "VACUUM cannot run inside a transaction block"));
        }
        for table in tables {
            if self.catalog.table(table).is_none() {
                return Err(SqlError::undefined_table(table));
            }
        }
        if self.is_superuser() {
            self.catalog.engine().purge()?;
            self.reclaim_dropped_pages();
            return Ok(());
        }
        let targets: Vec<String> = if tables.is_empty() {
            let mut names: Vec<String> = self
                .catalog
                .tables()
                .into_iter()
                .filter(|table| !table.is_view())
                .map(|table| table.name.clone())
                .filter(|name| !is_internal_table(name))
                .collect();
            names.sort();
            names
        } else {
            tables.to_vec()
        };
        let oid = self.role_oid();
        let mut owned = Vec::new();
        // A view has no rows to purge (PostgreSQL skips it with a warning).
        let catalog = Arc::clone(&self.catalog);
        let targets: Vec<String> = targets
            .into_iter()
            .filter(|name| catalog.table(name).is_none_or(|table| !table.is_view()))
            .collect();
        for table in targets {
            if self.catalog.table_acl(&table).owner == oid {
                owned.push(table);
            } else {
                self.warn(SqlError::new(
                    "01000",
                    format!("skipping \"{table}\" --- only table or database owner can vacuum it"),
                ));
            }
        }
        self.catalog.engine().purge_tables(&owned)?;
        self.reclaim_dropped_pages();
        Ok(())
    }

    /// Frees the pages of dropped tables nobody reads any more. A failure is the server
    /// log's (the purge thread tries again), not the VACUUM's: the rows were purged.
    fn reclaim_dropped_pages(&self) {
        if let Err(error) = self.catalog.engine().reclaim_dropped_pages() {
            tracing::warn!(%error, "VACUUM could not free the pages of a dropped table");
        }
    }

    /// Queues a warning for the client (sent before the statement's completion).
    pub(super) fn warn(&mut self, warning: SqlError) {
        if self.warnings.len() < WARNINGS_MAX {
            self.warnings.push(warning);
        } else {
            self.warnings_dropped += 1;
        }
    }

    /// The warnings left since the last call, for the client.
    pub fn take_warnings(&mut self) -> Vec<SqlError> {
        let mut warnings = std::mem::take(&mut self.warnings);
        let dropped = std::mem::take(&mut self.warnings_dropped);
        if dropped > 0 {
            warnings.push(SqlError::new("01000", format!("{dropped} more warnings not shown")));
        }
        warnings
    }
}
