//! DDL as part of the statement's transaction (catalog/transactional.rs): each DDL statement
//! claims the tables it changes, runs in the statement's transaction (the block's inside
//! BEGIN), and when that transaction ends the claims go; after a rollback the engine's
//! objects are first made to match the committed definitions.

use std::sync::atomic::{AtomicU64, Ordering};

use super::*;

/// Identifies a session to the catalog's claims (never reused within a process).
static NEXT_SESSION_ID: AtomicU64 = AtomicU64::new(1);

pub(super) fn next_session_id() -> u64 {
    NEXT_SESSION_ID.fetch_add(1, Ordering::Relaxed)
}

impl Session {
    /// Runs DDL `body`, which changes `tables`, in the statement's transaction. Outside a
    /// block the transaction ends here; inside one, at COMMIT or ROLLBACK.
    pub(super) fn transactional_ddl<T>(
        &mut self,
        tables: &[String],
        body: impl FnOnce(&mut Session) -> Result<T>,
    ) -> Result<T> {
        self.claim_for_ddl(tables)?;
        let outcome = self.in_transaction(body);
        if self.state == BlockState::Idle {
            self.end_transaction_ddl(outcome.is_ok());
        }
        outcome
    }

    /// Claims `tables` for this transaction's DDL: waits while another session's open
    /// transaction has changed one of them (lock_timeout, statement_timeout and cancel end
    /// the wait; a cycle of waits is 40P01).
    pub(super) fn claim_for_ddl(&mut self, tables: &[String]) -> Result<()> {
        let limits = self.wait_limits();
        self.catalog.claim_tables(self.session_id, tables, &limits)?;
        self.ddl_tables.extend(tables.iter().cloned());
        Ok(())
    }

    /// The transaction that ran DDL ended. Rolled back (`committed` false), the engine's
    /// tables and indexes are made to match the committed definitions first. Then the claims
    /// go and the tables it created are visible to every session.
    pub(super) fn end_transaction_ddl(&mut self, committed: bool) {
        if self.ddl_tables.is_empty() {
            return;
        }
        let tables = std::mem::take(&mut self.ddl_tables);
        if !committed {
            if let Err(error) = self.catalog.reconcile(&tables, None) {
                // The definitions are right (the rows rolled back); the engine objects left
                // over are dropped as orphans at the next start.
                tracing::error!(%error, "repairing the catalog after a rollback of DDL");
            }
        }
        self.catalog.release_claims(self.session_id);
    }

    /// ROLLBACK TO SAVEPOINT: the DDL since the savepoint (the tables from `mark` on in
    /// `ddl_tables`) is undone; the claims stay until the block ends.
    pub(super) fn rollback_ddl_to(&mut self, mark: usize) -> Result<()> {
        if self.ddl_tables.len() <= mark {
            return Ok(());
        }
        let undone = self.ddl_tables[mark..].to_vec();
        let transaction = self.transaction.as_mut().expect("a savepoint needs the transaction");
        self.catalog.reconcile(&undone, Some(transaction))
    }

    /// The transaction of the statement running DDL (`transactional_ddl` began it).
    pub(super) fn ddl_transaction(&mut self) -> &mut Transaction {
        self.transaction.as_mut().expect("transactional_ddl runs in a transaction")
    }
}
