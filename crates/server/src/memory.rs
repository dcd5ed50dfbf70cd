//! Giving memory back to the operating system after large statements.
//!
//! The allocator (chosen by the binary: mimalloc) keeps the memory a thread freed for that
//! thread's next allocations, and a connection thread that goes idle after a statement that
//! took hundreds of megabytes keeps them resident for as long as the connection lives. So
//! after a message that used enough CPU time to have allocated much (allocating and touching
//! 64 MiB takes more than `RELEASE_AFTER_CPU`), the connection's thread asks the allocator to
//! give back what it holds free. Quick messages, the common case, pay nothing.
//!
//! CPU time of the thread, not elapsed time: a commit that waited for the WAL sync, a row
//! lock or a core on a busy machine allocated little, and a release after it only decommits
//! the thread's free pages (one `madvise` per span, each a TLB shootdown across the cores
//! running the process) for the next statement to fault them in again. Counted by elapsed
//! time, 32 sysbench clients on 2 busy cores released after about 0.6 transactions in
//! every one (docs/BENCHMARKS.md, "Write-heavy OLTP larger than the pool").

use std::sync::OnceLock;
use std::time::Duration;

/// Messages during which the connection's thread used at least this much CPU time are
/// followed by a release.
const RELEASE_AFTER_CPU: Duration = Duration::from_millis(10);

static RELEASE_HOOK: OnceLock<fn()> = OnceLock::new();

/// Sets what a release does (for mimalloc: `mi_collect(true)` on the calling thread). Set
/// once, by the binary that chose the allocator; without it a release does nothing.
pub fn set_release_hook(hook: fn()) {
    let _ = RELEASE_HOOK.set(hook);
}

/// Gives the calling thread's free memory back if, since `cpu_started` (its
/// `thread_cpu_time` when the message or job began), the thread used `RELEASE_AFTER_CPU`:
/// the one rule for connection threads and executor threads.
pub(crate) fn release_after_busy_work(cpu_started: Duration) {
    if thread_cpu_time().saturating_sub(cpu_started) >= RELEASE_AFTER_CPU {
        release();
    }
}

/// Gives the calling thread's free memory back, if a hook is set.
pub(crate) fn release() {
    if let Some(hook) = RELEASE_HOOK.get() {
        hook();
    }
}

/// CPU time (user and system) the calling thread has used so far. Zero if the clock cannot
/// be read, which Linux never refuses for this clock: then no release follows, as for a
/// quick message.
pub(crate) fn thread_cpu_time() -> Duration {
    let mut time = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes only the timespec it is given, which outlives the call.
    let result = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    let (Ok(seconds), Ok(nanoseconds)) = (u64::try_from(time.tv_sec), u32::try_from(time.tv_nsec))
    else {
        return Duration::ZERO;
    };
    if result != 0 {
        return Duration::ZERO;
    }
    Duration::new(seconds, nanoseconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_cpu_time_counts_work_and_not_sleep() {
        let start = thread_cpu_time();
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu_time() - start;
        assert!(slept < Duration::from_millis(20), "sleeping used {slept:?} of CPU time");
        let mut sum = 0u64;
        while thread_cpu_time() - start < Duration::from_millis(5) {
            sum = sum.wrapping_add(std::hint::black_box(sum) | 1);
        }
        assert!(thread_cpu_time() - start >= Duration::from_millis(5), "{sum}");
    }
}
