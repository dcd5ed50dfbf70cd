//! Arbitrary SQL text parsed and bound (`Session::prepare`) against a small schema, without
//! running it: any input gets a result or a SQLSTATE, never a panic or a stack overflow.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};

use tierdb_engine::Engine;
use tierdb_sql::{Catalog, Session};
use tierdb_storage::{PageStore, StoreConfig};

fn session() -> &'static Mutex<Session> {
    static SESSION: OnceLock<Mutex<Session>> = OnceLock::new();
    SESSION.get_or_init(|| {
        // The data directory lives as long as the fuzzing process.
        let directory = Box::leak(Box::new(tempfile::tempdir().expect("tempdir")));
        let store =
            PageStore::open(StoreConfig::local(directory.path()).expect("config")).expect("store");
        let engine = Engine::open(Arc::new(store)).expect("engine");
        let catalog = Catalog::open(engine).expect("catalog");
        // A superuser, as the server's bootstrap role: privilege checks would stop every
        // statement before binding otherwise.
        catalog.bootstrap_superuser("fuzz", None).expect("bootstrap superuser");
        let statistics = Arc::clone(catalog.statement_stats());
        let mut session = Session::new(catalog, statistics, "fuzz", "fuzz", 1);
        for statement in [
            "CREATE TABLE t (a int PRIMARY KEY, b text, c float8, d numeric(10,2), e timestamp)",
            "CREATE INDEX t_b ON t (b)",
            "CREATE TABLE u (x bigint, y text, PRIMARY KEY (x, y))",
        ] {
            for outcome in session.execute(statement) {
                outcome.expect("schema");
            }
        }
        Mutex::new(session)
    })
}

/// The server's connection-thread stack (crates/server/src/server.rs): statements are bound
/// on a thread of that size, as in the server, and a stack overflow there is reported by
/// Rust's guard-page handler (an abort libFuzzer records with its input) instead of killing
/// the fuzzer's main thread silently.
const CONNECTION_STACK_BYTES: usize = 64 << 20;

fn prepare_on_connection_thread(sql: String) {
    std::thread::Builder::new()
        .stack_size(CONNECTION_STACK_BYTES)
        .spawn(move || {
            let mut session = session().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let _ = session.prepare(&sql, &[]);
        })
        .expect("spawn")
        .join()
        .expect("prepare returns or fails, never panics");
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else { return };
    prepare_on_connection_thread(sql.to_string());
});
