//! Giving memory back to the operating system after large statements.
//!
//! The allocator (chosen by the binary: mimalloc) keeps the memory a thread freed for that
//! thread's next allocations, and a connection thread that goes idle after a statement that
//! took hundreds of megabytes keeps them resident for as long as the connection lives. So
//! after a message that took long enough to have allocated much (allocating and touching
//! 64 MiB takes longer than `RELEASE_AFTER`), the connection's thread asks the allocator to
//! give back what it holds free. Quick messages, the common case, pay nothing.

use std::sync::OnceLock;
use std::time::Duration;

/// Messages that took at least this long are followed by a release.
pub(crate) const RELEASE_AFTER: Duration = Duration::from_millis(10);

static RELEASE_HOOK: OnceLock<fn()> = OnceLock::new();

/// Sets what a release does (for mimalloc: `mi_collect(true)` on the calling thread). Set
/// once, by the binary that chose the allocator; without it a release does nothing.
pub fn set_release_hook(hook: fn()) {
    let _ = RELEASE_HOOK.set(hook);
}

/// Gives the calling thread's free memory back, if a hook is set.
pub(crate) fn release() {
    if let Some(hook) = RELEASE_HOOK.get() {
        hook();
    }
}
