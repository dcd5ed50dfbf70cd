//! Group commit: `Wal::flush_to` (docs/design/003-wal.md, "Appending and group commit").
//!
//! One leader at a time writes and syncs everything appended so far; the others (followers)
//! park until it is done. Followers park on the address of `Wal::flushing` with
//! `parking_lot_core`, not on a condition variable of the state mutex: a condition
//! variable's `notify_all` hands the woken waiters the mutex one after another, so each
//! waiter's wake-up waits for the previous one to be scheduled, lock and unlock. With 32
//! committers on 2 busy cores that chain took longer than the sync itself, and appenders and
//! the next leader queued behind it for the state mutex. Here the leader wakes all followers
//! at once; a follower whose commit is durable returns without taking any lock, and one of the
//! others becomes the next leader.

use std::sync::atomic::Ordering;

use parking_lot_core::{DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN};
use tierdb_common::Lsn;

use super::Wal;
use crate::codec::usize_to_u64;
use crate::error::{Result, StorageError};

impl Wal {
    /// Blocks until every record ending at or before `lsn` is durable.
    pub fn flush_to(&self, lsn: Lsn) -> Result<()> {
        loop {
            if self.durable_lsn() >= lsn {
                return Ok(());
            }
            self.check_poisoned()?;
            if self
                .flushing
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                let outcome = self.lead_flush(lsn);
                self.flushing.store(false, Ordering::Release);
                self.wake_followers();
                outcome?;
            } else {
                self.follow(lsn);
            }
        }
    }

    /// As the leader: writes and syncs the whole buffer, then publishes the new durable end
    /// (or the failure). `flushing` is held by the caller throughout, so no other thread takes
    /// the buffer meanwhile.
    fn lead_flush(&self, lsn: Lsn) -> Result<()> {
        let mut state = self.state.lock();
        // A leader whose sync failed took the buffer and poisons the log under this lock. A
        // committer that passed `flush_to`'s poison check before that and leads now would
        // find those records gone from the buffer and publish their end as durable: the
        // commits of the lost batch would be acknowledged. So the check is repeated here.
        self.check_poisoned()?;
        if self.durable_lsn() >= lsn {
            // A leader that finished between our check and our claim covered us.
            return Ok(());
        }
        if state.appended < lsn {
            return Err(StorageError::corrupt_file(
                format!("wal lsn={lsn}"),
                format!("asked to make durable beyond the log end={}", state.appended),
            ));
        }
        let bytes = std::mem::take(&mut state.buffer);
        let end = state.appended;
        let start = Lsn(end.0 - usize_to_u64(bytes.len()));
        drop(state);
        let outcome = if bytes.is_empty() {
            Ok(())
        } else {
            let mut sink = self.sink.lock();
            let written = sink.write(start, &bytes);
            self.publish_space(sink.space());
            written
        };
        let mut state = self.state.lock();
        match &outcome {
            Ok(()) => {
                if !bytes.is_empty() {
                    self.stats.syncs.increment();
                }
                assert!(end.0 >= self.durable_lsn().0, "the durable end only moves forward");
                self.durable.store(end.0, Ordering::Release);
                if self.out_of_space.swap(false, Ordering::AcqRel) {
                    tracing::info!("wal writable again: space was freed");
                }
            }
            Err(error) if error.is_disk_full() => {
                // Not durable, not poisoned: the bytes go back in front of whatever was
                // appended meanwhile, to be written from `start` again.
                let mut restored = bytes;
                restored.extend_from_slice(&state.buffer);
                state.buffer = restored;
                debug_assert_eq!(
                    Lsn(state.appended.0 - usize_to_u64(state.buffer.len())),
                    start,
                    "the buffer starts at the durable end again"
                );
                if !self.out_of_space.swap(true, Ordering::AcqRel) {
                    tracing::warn!(%error, "wal out of space: writes fail with 53100 until space is freed");
                }
            }
            Err(error) => *self.poisoned.lock() = Some(error.to_string()),
        }
        drop(state);
        outcome
    }

    /// As a follower: parks until the running leader is done (at once if it already is, or
    /// if `lsn` is already durable). The caller then looks again: durable, or lead.
    fn follow(&self, lsn: Lsn) {
        let validate = || self.flushing.load(Ordering::Acquire) && self.durable_lsn() < lsn;
        // SAFETY: the key is the address of a field of this `Wal`, used for nothing else, so
        // no other primitive parks on it; `validate` only reads atomics (it runs under the
        // parking lot's queue lock and must neither panic nor call into parking_lot); the
        // other callbacks do nothing. The leader clears `flushing` before `wake_followers`,
        // so a follower either sees it cleared here or is parked when the leader wakes all.
        unsafe {
            parking_lot_core::park(
                self.followers_key(),
                validate,
                || {},
                |_, _| {},
                DEFAULT_PARK_TOKEN,
                None,
            );
        }
    }

    fn wake_followers(&self) {
        // SAFETY: as in `follow`: the key belongs to this `Wal` and only followers park on it.
        unsafe {
            parking_lot_core::unpark_all(self.followers_key(), DEFAULT_UNPARK_TOKEN);
        }
    }

    fn followers_key(&self) -> usize {
        std::ptr::from_ref(&self.flushing) as usize
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::{channel, Receiver, Sender};
    use std::sync::{Arc, Barrier};
    use std::thread;

    use super::*;
    use crate::wal::{WalRecord, WalSink};

    /// Committers that append while the leader's sync runs.
    const FOLLOWERS: usize = 8;

    /// A sink whose first write waits for the test's verdict (`Ok` or a failure), so that
    /// the test controls when the leader's sync ends. Later writes succeed at once. Every
    /// write's range is logged.
    struct GatedSink {
        writes: Arc<parking_lot::Mutex<Vec<(Lsn, usize)>>>,
        entered: Sender<()>,
        verdict: Receiver<bool>,
        gated: bool,
    }

    impl WalSink for GatedSink {
        fn write(&mut self, start: Lsn, bytes: &[u8]) -> Result<()> {
            self.writes.lock().push((start, bytes.len()));
            if !std::mem::replace(&mut self.gated, false) {
                return Ok(());
            }
            self.entered.send(()).expect("the test waits for the first write");
            if self.verdict.recv().expect("the test sends a verdict") {
                return Ok(());
            }
            Err(StorageError::local_io(
                "fdatasync",
                std::path::Path::new("wal"),
                std::io::Error::other("injected sync failure"),
            ))
        }

        fn truncate_before(&mut self, _lsn: Lsn) -> Result<()> {
            Ok(())
        }
    }

    struct Gated {
        wal: Arc<Wal>,
        writes: Arc<parking_lot::Mutex<Vec<(Lsn, usize)>>>,
        entered: Receiver<()>,
        verdict: Sender<bool>,
    }

    fn gated_wal() -> Gated {
        let writes = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let (entered_sender, entered) = channel();
        let (verdict, verdict_receiver) = channel();
        let sink = GatedSink {
            writes: Arc::clone(&writes),
            entered: entered_sender,
            verdict: verdict_receiver,
            gated: true,
        };
        Gated { wal: Arc::new(Wal::new(Box::new(sink), Lsn(0))), writes, entered, verdict }
    }

    fn record(kind: u8) -> WalRecord {
        WalRecord::Opaque { kind, payload: vec![kind; 40] }
    }

    /// Starts a leader whose sync blocks in the sink, then `FOLLOWERS` committers that
    /// append and ask for durability while it runs; returns once all have appended. Each
    /// thread returns its record's end and its `flush_to` outcome.
    fn commit_during_a_sync(gated: &Gated) -> Vec<thread::JoinHandle<(Lsn, Result<()>)>> {
        let leader_wal = Arc::clone(&gated.wal);
        let mut handles = vec![thread::spawn(move || {
            let lsn = leader_wal.append(&record(0)).expect("append");
            (lsn, leader_wal.flush_to(lsn))
        })];
        gated.entered.recv().expect("the leader's sync starts");
        let appended = Arc::new(Barrier::new(FOLLOWERS + 1));
        for follower in 1..=FOLLOWERS {
            let (wal, appended) = (Arc::clone(&gated.wal), Arc::clone(&appended));
            handles.push(thread::spawn(move || {
                let lsn =
                    wal.append(&record(u8::try_from(follower).expect("few"))).expect("append");
                appended.wait();
                (lsn, wal.flush_to(lsn))
            }));
        }
        appended.wait();
        handles
    }

    #[test]
    fn committers_during_a_sync_share_the_next_one() {
        let gated = gated_wal();
        let handles = commit_during_a_sync(&gated);
        gated.verdict.send(true).expect("the leader waits");
        for handle in handles {
            let (lsn, outcome) = handle.join().expect("no panic");
            outcome.expect("durable");
            assert!(gated.wal.durable_lsn() >= lsn);
        }
        // The leader's sync, then one for all followers: each takes the whole buffer.
        let writes = gated.writes.lock().clone();
        assert_eq!(writes.len(), 2, "writes: {writes:?}");
        assert_eq!(gated.wal.stats.syncs.get(), 2);
        let (second_start, second_bytes) = writes[1];
        assert_eq!(second_start, Lsn(writes[0].0 .0 + usize_to_u64(writes[0].1)));
        assert_eq!(Lsn(second_start.0 + usize_to_u64(second_bytes)), gated.wal.appended_lsn());
        assert_eq!(gated.wal.durable_lsn(), gated.wal.appended_lsn());
    }

    #[test]
    fn a_failed_sync_fails_the_leader_and_every_follower() {
        let gated = gated_wal();
        let handles = commit_during_a_sync(&gated);
        gated.verdict.send(false).expect("the leader waits");
        for handle in handles {
            let (_, outcome) = handle.join().expect("no panic");
            let error = outcome.expect_err("nothing is durable after a failed sync");
            assert!(
                matches!(error, StorageError::LocalIo { .. } | StorageError::Poisoned { .. }),
                "{error}"
            );
        }
        assert_eq!(gated.wal.durable_lsn(), Lsn(0));
        assert_eq!(gated.writes.lock().len(), 1, "a poisoned log writes nothing more");
    }

    /// A committer that passed `flush_to`'s poison check just before another leader's sync
    /// failed, and then leads (what `flush_to` does next), must fail too: the failed leader
    /// took its record with the buffer, so publishing the log end would acknowledge a commit
    /// that never reached the disk.
    #[test]
    fn a_leader_after_a_failed_sync_publishes_nothing() {
        let gated = gated_wal();
        let lost = gated.wal.append(&record(7)).expect("append");
        let leader_wal = Arc::clone(&gated.wal);
        let leader = thread::spawn(move || leader_wal.flush_to(lost));
        gated.entered.recv().expect("the leader's sync starts");
        gated.verdict.send(false).expect("the leader waits");
        leader.join().expect("no panic").expect_err("the sync failed");
        let error = gated.wal.lead_flush(lost).expect_err("the record was lost with the sync");
        assert!(matches!(error, StorageError::Poisoned { .. }), "{error}");
        assert_eq!(gated.wal.durable_lsn(), Lsn(0));
    }
}
