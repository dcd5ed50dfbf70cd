//! The advisory lock functions' calls against the server's lock table (catalog/advisory.rs):
//! the session's number, the statement's transaction for transaction-level locks, and the
//! statement's wait limits (lock_timeout, statement_timeout, cancel).

use tierdb_engine::{VirtualId, WaitLimits};

use crate::catalog::{AdvisoryRequest, AdvisoryScope};
use crate::error::{Result, SqlError};
use crate::functions::AdvisoryCall;
use crate::system::SessionInfo;

pub(super) fn advisory_call(
    call: AdvisoryCall,
    session: &SessionInfo<'_>,
    transaction: Option<VirtualId>,
    limits: &WaitLimits,
) -> Result<bool> {
    let locks = session.catalog.advisory_locks();
    match call {
        AdvisoryCall::Lock { key, mode, transaction: transaction_level, wait } => {
            let scope = if transaction_level {
                AdvisoryScope::Transaction(transaction.ok_or_else(|| {
                    SqlError::internal("a transaction-level advisory lock outside a transaction")
                })?)
            } else {
                AdvisoryScope::Session
            };
            let engine = session.catalog.engine();
            let is_active = |txn: VirtualId| engine.is_transaction_running(txn);
            locks.acquire(&AdvisoryRequest {
                session: session.session_id,
                key,
                mode,
                scope,
                wait,
                limits,
                is_active: &is_active,
            })
        }
        // PostgreSQL also warns "you don't own a lock of type ..." when the answer is false
        // (tierdb sends no notices: design 009's known gaps).
        AdvisoryCall::Unlock { key, mode } => Ok(locks.release(session.session_id, key, mode)),
        AdvisoryCall::UnlockAll => {
            locks.release_all_session(session.session_id);
            Ok(true)
        }
    }
}
