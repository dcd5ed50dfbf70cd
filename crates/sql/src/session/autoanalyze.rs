//! Autoanalyze: a background thread that gathers a table's statistics (analyze.rs) once
//! enough of its rows changed, as PostgreSQL's autovacuum launcher does for ANALYZE, so that
//! the join order (design 020) follows the data without anyone running ANALYZE.
//!
//! Every `interval_ms` it asks the catalog for the tables past the threshold
//! (`Catalog::autoanalyze_candidates`: 50 rows plus 10% of the rows last counted, or never
//! analyzed and holding rows) and analyzes them one at a time. Each ANALYZE reads its table
//! through its own READ COMMITTED transaction, like a session's, so it blocks no writer. A
//! failure (a table dropped meanwhile) is logged and the table retried at the next turn
//! when it is still there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::analyze::gather;
use crate::catalog::Catalog;

/// How often the thread checks its stop flag while it waits.
const STOP_CHECK_INTERVAL_MS: u64 = 100;

/// Starts the autoanalyze thread; it ends when `stop` is set or the catalog is dropped.
pub fn start_autoanalyze(
    catalog: &Arc<Catalog>,
    interval_ms: u64,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    assert!(interval_ms > 0, "autoanalyze is off with no thread, not with a zero interval");
    let catalog = Arc::downgrade(catalog);
    std::thread::Builder::new().name("autoanalyze".into()).spawn(move || {
        while wait(interval_ms, &stop) {
            let Some(catalog) = catalog.upgrade() else { return };
            analyze_candidates(&catalog, &stop);
        }
    })
}

/// Waits `interval_ms`; false when `stop` was set meanwhile.
fn wait(interval_ms: u64, stop: &AtomicBool) -> bool {
    let deadline = Instant::now() + Duration::from_millis(interval_ms);
    while Instant::now() < deadline {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(STOP_CHECK_INTERVAL_MS));
    }
    !stop.load(Ordering::Acquire)
}

/// Analyzes the tables past the threshold now, one at a time; returns how many.
pub fn analyze_candidates(catalog: &Catalog, stop: &AtomicBool) -> usize {
    let mut analyzed = 0;
    for meta in catalog.autoanalyze_candidates() {
        if stop.load(Ordering::Acquire) {
            break;
        }
        let started = Instant::now();
        let outcome = gather(catalog, &meta)
            .and_then(|statistics| catalog.set_table_statistics(&meta.name, statistics));
        match outcome {
            Ok(()) => {
                analyzed += 1;
                let elapsed_ms = started.elapsed().as_millis();
                tracing::info!(table = %meta.name, elapsed_ms, "automatic analyze");
            }
            Err(error) => {
                tracing::warn!(table = %meta.name, %error, "automatic analyze failed");
            }
        }
    }
    analyzed
}
