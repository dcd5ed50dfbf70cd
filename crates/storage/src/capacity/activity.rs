//! Statement activity for elastic capacity (design 015): which statements run, since when
//! the server is idle (idle release), the time to first row of each resume after a
//! release, and each statement's share of the capacity (capacity-unit-seconds).
//!
//! The statement path costs two relaxed atomic additions and one load per statement; the
//! mutexes are taken only while resuming.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Resume times kept for the p95 (the last this many resumes).
pub const RESUMES_KEPT: usize = 128;

/// Resume times after an idle release: count, last and p95 over the last `RESUMES_KEPT`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResumeStats {
    pub count: u64,
    pub last_ms: f64,
    pub p95_ms: f64,
    /// Idle releases done.
    pub releases: u64,
}

#[derive(Debug, Default)]
struct Resumes {
    count: u64,
    releases: u64,
    recent_us: VecDeque<u64>,
}

/// Shared by the sessions (which report statements) and the capacity runner.
#[derive(Debug, Default)]
pub struct Activity {
    /// Statements running now.
    running: AtomicU64,
    /// Statement starts and ends: a change tells the runner the server was not idle.
    events: AtomicU64,
    /// The capacity in force, in half units (mirrors the status for the statement path).
    current_half_units: AtomicU32,
    /// Set by the runner when it released memory for idleness; cleared by the resume.
    released: AtomicBool,
    /// A statement started after a release and has not ended: when it started.
    resume_started: Mutex<Option<Instant>>,
    resuming: AtomicBool,
    resumes: Mutex<Resumes>,
    /// Wakes the runner at once on a resume (it otherwise sleeps its interval).
    wake: Mutex<bool>,
    woken: Condvar,
}

/// A running statement: `finish` ends it and gives its capacity share.
#[must_use = "a statement must be finished to be counted as ended"]
pub struct StatementActivity<'a> {
    activity: &'a Activity,
    started: Instant,
}

impl Activity {
    /// A statement starts; after an idle release it starts a resume and wakes the runner.
    pub fn statement_started(&self) -> StatementActivity<'_> {
        let started = Instant::now();
        self.running.fetch_add(1, Ordering::AcqRel);
        self.events.fetch_add(1, Ordering::Relaxed);
        if self.released.load(Ordering::Acquire) {
            let mut resume = self.resume_started.lock();
            if resume.is_none() && self.released.load(Ordering::Acquire) {
                *resume = Some(started);
                self.resuming.store(true, Ordering::Release);
            }
            drop(resume);
            self.wake_runner();
        }
        StatementActivity { activity: self, started }
    }

    /// Statements running now.
    pub fn running(&self) -> u64 {
        self.running.load(Ordering::Acquire)
    }

    /// A counter that changes on every statement start and end.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }

    /// The runner publishes the capacity in force.
    pub fn set_current_half_units(&self, half_units: u32) {
        self.current_half_units.store(half_units, Ordering::Relaxed);
    }

    /// The runner released memory for idleness (true) or grew again (false).
    pub fn set_released(&self, released: bool) {
        if released && !self.released.swap(true, Ordering::AcqRel) {
            self.resumes.lock().releases += 1;
        } else if !released {
            self.released.store(false, Ordering::Release);
        }
    }

    pub fn released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    pub fn resume_stats(&self) -> ResumeStats {
        let resumes = self.resumes.lock();
        let mut sorted: Vec<u64> = resumes.recent_us.iter().copied().collect();
        sorted.sort_unstable();
        let at = |index: usize| sorted.get(index).map_or(0.0, |&us| microseconds_to_ms(us));
        // Nearest rank: the smallest value with at least 95% of the values at or below it.
        let p95_index = (sorted.len() * 95).div_ceil(100).saturating_sub(1);
        ResumeStats {
            count: resumes.count,
            last_ms: resumes.recent_us.back().map_or(0.0, |&us| microseconds_to_ms(us)),
            p95_ms: at(p95_index),
            releases: resumes.releases,
        }
    }

    /// Waits up to `timeout` or until a resume wakes the runner.
    pub fn wait_for_runner(&self, timeout: Duration) {
        let mut woken = self.wake.lock();
        if !*woken {
            self.woken.wait_for(&mut woken, timeout);
        }
        *woken = false;
    }

    /// Wakes the runner now (a resume, or bounds changed at run time).
    pub fn wake_runner(&self) {
        *self.wake.lock() = true;
        self.woken.notify_one();
    }

    fn record_resume(&self, elapsed: Duration) {
        let mut resumes = self.resumes.lock();
        resumes.count += 1;
        if resumes.recent_us.len() == RESUMES_KEPT {
            resumes.recent_us.pop_front();
        }
        resumes.recent_us.push_back(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX));
    }
}

impl StatementActivity<'_> {
    /// Ends the statement: returns its capacity share in capacity-unit-seconds (its time x
    /// the capacity in force / the statements running at its end, itself included).
    pub fn finish(self) -> f64 {
        let activity = self.activity;
        let elapsed = self.started.elapsed();
        let running = activity.running.fetch_sub(1, Ordering::AcqRel).max(1);
        activity.events.fetch_add(1, Ordering::Relaxed);
        if activity.resuming.load(Ordering::Acquire) {
            let mut resume = activity.resume_started.lock();
            if *resume == Some(self.started) {
                *resume = None;
                activity.resuming.store(false, Ordering::Release);
                drop(resume);
                activity.record_resume(elapsed);
            }
        }
        let units = f64::from(activity.current_half_units.load(Ordering::Relaxed)) / 2.0;
        #[allow(clippy::cast_precision_loss)] // A share: statements running fit 2^52.
        let share = elapsed.as_secs_f64() * units / running as f64;
        share
    }
}

#[allow(clippy::cast_precision_loss)] // Display: resume times are far below 2^52 us.
fn microseconds_to_ms(microseconds: u64) -> f64 {
    microseconds as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_after_a_release_is_a_resume_and_later_ones_are_not() {
        let activity = Activity::default();
        activity.set_current_half_units(4);
        let share = activity.statement_started().finish();
        assert!(share >= 0.0);
        assert_eq!(activity.resume_stats().count, 0, "not released: no resume");
        activity.set_released(true);
        activity.set_released(true);
        assert_eq!(activity.resume_stats().releases, 1, "one release counted once");
        let first = activity.statement_started();
        let second = activity.statement_started();
        assert_eq!(activity.running(), 2);
        std::thread::sleep(Duration::from_millis(5));
        let _ = second.finish();
        assert_eq!(activity.resume_stats().count, 0, "only the first statement is the resume");
        let _ = first.finish();
        let stats = activity.resume_stats();
        assert_eq!(stats.count, 1);
        assert!(stats.last_ms >= 5.0 && stats.p95_ms == stats.last_ms, "{stats:?}");
        activity.set_released(false);
        let _ = activity.statement_started().finish();
        assert_eq!(activity.resume_stats().count, 1);
        assert_eq!(activity.running(), 0);
    }

    #[test]
    fn resume_times_keep_a_bounded_window_for_the_p95() {
        let activity = Activity::default();
        for milliseconds in 1..=200u64 {
            activity.record_resume(Duration::from_millis(milliseconds));
        }
        let stats = activity.resume_stats();
        assert_eq!(stats.count, 200);
        assert_eq!(stats.last_ms, 200.0);
        // The last 128 are 73..=200; their nearest-rank p95 is the 122nd: 194.
        assert_eq!(stats.p95_ms, 194.0);
    }

    #[test]
    fn the_share_divides_capacity_between_running_statements() {
        let activity = Activity::default();
        activity.set_current_half_units(4);
        let other = activity.statement_started();
        let measured = activity.statement_started();
        std::thread::sleep(Duration::from_millis(20));
        let share = measured.finish();
        // 2 units shared by 2 statements for >= 20 ms: >= 0.02 unit-seconds.
        assert!((0.02..1.0).contains(&share), "{share}");
        let _ = other.finish();
    }
}
