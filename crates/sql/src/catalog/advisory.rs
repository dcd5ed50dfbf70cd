//! Advisory locks: PostgreSQL's pg_advisory_lock family, server-wide locks on numbers that
//! applications (migration tools, job queues) take to coordinate with each other.
//!
//! A lock is named by one bigint or by two integers: the two spaces are distinct, as in
//! PostgreSQL (pg_advisory_lock(1) and pg_advisory_lock(0, 1) do not conflict). A session
//! holds a lock at session level (until pg_advisory_unlock or the session's end) or at
//! transaction level (until its transaction ends), in exclusive or shared mode; it counts
//! each acquisition and never conflicts with itself. An exclusive lock conflicts with every
//! other session's lock on the key; a shared one with other sessions' exclusive locks.
//!
//! States of one session's hold on a key, and the function for each transition:
//!
//! ```text
//!   free --acquire--> held(count 1) --acquire--> held(count + 1)
//!   held(count) --release (session level)--> held(count - 1) or free at 0
//!   held --release_all_session (pg_advisory_unlock_all)--> free (session-level holds)
//!   held(transaction txn) --txn ends (found by `prune`)--> free
//!   held --release_session (the session ends)--> free
//! ```
//!
//! Transaction-level holds are not released by the session at each of its transaction
//! ends: a hold whose transaction is no longer active counts as released, and is removed
//! when the key is next looked at. Waiters recheck every `ADVISORY_RECHECK_MS`.
//!
//! A waiter records whom it waits for; a wait that would close a cycle of advisory waits
//! is 40P01. A cycle through other kinds of waits (row locks, DDL claims) ends by
//! lock_timeout or statement_timeout (a known gap: PostgreSQL detects those too).

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tierdb_engine::{VirtualId, WaitLimits};

use crate::error::{Result, SqlError};

/// How often a waiter rechecks its lock (a transaction-level holder's end is not signalled).
const ADVISORY_RECHECK_MS: u64 = 10;
/// The most distinct keys held at once by all sessions (PostgreSQL's lock table is bounded
/// by max_locks_per_transaction x max_connections; beyond it: 53200).
pub const ADVISORY_KEYS_MAX: usize = 64 * 1024;

/// A lock's name: one bigint, or two integers packed high and low (`two_keys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AdvisoryKey {
    pub value: i64,
    pub two_keys: bool,
}

impl AdvisoryKey {
    pub fn one(key: i64) -> AdvisoryKey {
        AdvisoryKey { value: key, two_keys: false }
    }

    pub fn two(high: i32, low: i32) -> AdvisoryKey {
        let packed = (i64::from(high) << 32) | i64::from(u32::from_ne_bytes(low.to_ne_bytes()));
        AdvisoryKey { value: packed, two_keys: true }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdvisoryMode {
    Exclusive,
    Shared,
}

impl AdvisoryMode {
    fn conflicts_with(self, other: AdvisoryMode) -> bool {
        self == AdvisoryMode::Exclusive || other == AdvisoryMode::Exclusive
    }
}

/// How long a hold lasts: the session, or one of its transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdvisoryScope {
    Session,
    Transaction(VirtualId),
}

#[derive(Clone, Copy, Debug)]
struct Hold {
    session: u64,
    mode: AdvisoryMode,
    scope: AdvisoryScope,
    count: u32,
}

#[derive(Default)]
struct State {
    holds: HashMap<AdvisoryKey, Vec<Hold>>,
    /// Waiting session -> a session it waits for (deadlock detection).
    waits: HashMap<u64, u64>,
}

impl State {
    /// Drops the holds of ended transactions on `key`.
    fn prune(&mut self, key: AdvisoryKey, is_active: &dyn Fn(VirtualId) -> bool) {
        if let Some(holds) = self.holds.get_mut(&key) {
            holds.retain(|hold| match hold.scope {
                AdvisoryScope::Session => true,
                AdvisoryScope::Transaction(txn) => is_active(txn),
            });
            if holds.is_empty() {
                self.holds.remove(&key);
            }
        }
    }

    /// Another session whose hold on `key` conflicts with `mode`.
    fn conflicting_holder(
        &self,
        key: AdvisoryKey,
        session: u64,
        mode: AdvisoryMode,
    ) -> Option<u64> {
        let holds = self.holds.get(&key)?;
        holds
            .iter()
            .find(|hold| hold.session != session && hold.mode.conflicts_with(mode))
            .map(|hold| hold.session)
    }

    fn grant(
        &mut self,
        key: AdvisoryKey,
        session: u64,
        mode: AdvisoryMode,
        scope: AdvisoryScope,
    ) -> Result<()> {
        if !self.holds.contains_key(&key) && self.holds.len() >= ADVISORY_KEYS_MAX {
            return Err(SqlError::new("53200", "out of shared memory"));
        }
        let holds = self.holds.entry(key).or_default();
        match holds
            .iter_mut()
            .find(|hold| hold.session == session && hold.mode == mode && hold.scope == scope)
        {
            Some(hold) => {
                hold.count = hold
                    .count
                    .checked_add(1)
                    .ok_or_else(|| SqlError::new("53200", "out of shared memory"))?
            }
            None => holds.push(Hold { session, mode, scope, count: 1 }),
        }
        Ok(())
    }
}

/// The server's advisory locks.
#[derive(Default)]
pub struct AdvisoryLocks {
    state: Mutex<State>,
    released: Condvar,
}

/// One request for an advisory lock.
pub struct AdvisoryRequest<'a> {
    pub session: u64,
    pub key: AdvisoryKey,
    pub mode: AdvisoryMode,
    pub scope: AdvisoryScope,
    /// pg_advisory_lock waits; pg_try_advisory_lock answers false at once.
    pub wait: bool,
    pub limits: &'a WaitLimits,
    /// Whether a transaction is still running (its transaction-level holds last as long).
    pub is_active: &'a dyn Fn(VirtualId) -> bool,
}

impl AdvisoryLocks {
    /// Takes the lock, waiting if asked to: true when granted, false when a try found it
    /// held. lock_timeout 55P03, statement_timeout and cancel 57014, a cycle of waits 40P01.
    pub fn acquire(&self, request: &AdvisoryRequest<'_>) -> Result<bool> {
        let (session, key, mode) = (request.session, request.key, request.mode);
        let lock_deadline = request.limits.lock_deadline();
        let mut state = self.state.lock();
        loop {
            state.prune(key, request.is_active);
            let Some(holder) = state.conflicting_holder(key, session, mode) else {
                state.grant(key, session, mode, request.scope)?;
                return Ok(true);
            };
            if !request.wait {
                return Ok(false);
            }
            if super::transactional::closes_cycle(&state.waits, session, holder) {
                return Err(SqlError::new("40P01", "deadlock detected"));
            }
            let recheck = Duration::from_millis(ADVISORY_RECHECK_MS);
            let sleep = request.limits.check_wait(lock_deadline, recheck)?;
            state.waits.insert(session, holder);
            self.released.wait_for(&mut state, sleep);
            state.waits.remove(&session);
        }
    }

    /// pg_advisory_unlock(_shared): releases one session-level acquisition; false when the
    /// session holds none of `mode` on `key`.
    pub fn release(&self, session: u64, key: AdvisoryKey, mode: AdvisoryMode) -> bool {
        let mut state = self.state.lock();
        let Some(holds) = state.holds.get_mut(&key) else { return false };
        let Some(position) = holds.iter().position(|hold| {
            hold.session == session && hold.mode == mode && hold.scope == AdvisoryScope::Session
        }) else {
            return false;
        };
        holds[position].count -= 1;
        if holds[position].count == 0 {
            holds.remove(position);
        }
        if holds.is_empty() {
            state.holds.remove(&key);
        }
        drop(state);
        self.released.notify_all();
        true
    }

    /// pg_advisory_unlock_all: every session-level hold of `session`.
    pub fn release_all_session(&self, session: u64) {
        self.release_where(|hold| hold.session == session && hold.scope == AdvisoryScope::Session);
    }

    /// The session ended: every hold of `session`.
    pub fn release_session(&self, session: u64) {
        self.release_where(|hold| hold.session == session);
    }

    fn release_where(&self, released: impl Fn(&Hold) -> bool) {
        let mut state = self.state.lock();
        state.holds.retain(|_, holds| {
            holds.retain(|hold| !released(hold));
            !holds.is_empty()
        });
        drop(state);
        self.released.notify_all();
    }
}
