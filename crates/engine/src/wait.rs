//! The limits on every wait for another transaction (cancel, statement and lock timeouts),
//! which the caller sets per statement and `TxnManager::wait_for` checks while it waits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{EngineError, Result};

/// Limits on waiting for another transaction: set by the caller per statement.
#[derive(Clone, Debug, Default)]
pub struct WaitLimits {
    /// A cancel request (the session's flag): 57014.
    pub cancel: Option<Arc<AtomicBool>>,
    /// statement_timeout's deadline: 57014.
    pub statement_deadline: Option<Instant>,
    /// lock_timeout for each wait (0: none): 55P03.
    pub lock_timeout_ms: u64,
}

impl WaitLimits {
    /// Fails if the statement was canceled or ran past its deadline.
    pub fn check(&self) -> Result<()> {
        if self.cancel.as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed)) {
            return Err(EngineError::Canceled { reason: "user request" });
        }
        if self.statement_deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Err(EngineError::Canceled { reason: "statement timeout" });
        }
        Ok(())
    }

    /// The deadline of a wait starting now.
    pub fn lock_deadline(&self) -> Option<Instant> {
        (self.lock_timeout_ms > 0)
            .then(|| Instant::now() + Duration::from_millis(self.lock_timeout_ms))
    }

    /// Fails if the wait must end (cancel, statement timeout, lock timeout); else how long to
    /// sleep at most before checking again (`recheck`, or less near a deadline).
    pub fn check_wait(
        &self,
        lock_deadline: Option<Instant>,
        recheck: Duration,
    ) -> Result<Duration> {
        self.check()?;
        let now = Instant::now();
        let mut sleep = recheck;
        if let Some(deadline) = lock_deadline {
            if now >= deadline {
                return Err(EngineError::LockTimeout);
            }
            sleep = sleep.min(deadline - now);
        }
        if let Some(deadline) = self.statement_deadline {
            sleep = sleep.min(deadline.saturating_duration_since(now));
        }
        Ok(sleep)
    }
}
