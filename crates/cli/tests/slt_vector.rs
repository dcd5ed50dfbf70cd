//! The pgvector differential suite: tests/slt/vector/*.slt, whose expectations were
//! produced by pgvector 0.8.2 on PostgreSQL 15 (scripts/slt-expect.py against
//! scripts/start-pgvector.sh), run against `tierdb serve` and against pgvector itself so
//! that the files stay pgvector's answers. slt.rs reads only the files directly in
//! tests/slt, never this folder (its PostgreSQL need not have pgvector).
//!
//! pgvector is built from source into the PostgreSQL 15 the SQL suite uses
//! (`$TIERDB_PG_BIN`, default Debian's) by scripts/install-pgvector.sh, on the machine that
//! runs it. When it is missing the pgvector test fails: it does not pass without comparing.

use crate::server_support;
use crate::slt_support;

use server_support::TestServer;
use slt_support::{check, run_suite, slt_files, Postgres};

/// Query records both engines must run (guards against skipping too much).
const MIN_QUERY_RECORDS: usize = 35;
/// The pgvector version the files' expectations come from.
const PGVECTOR_VERSION: &str = "0.8.2";

#[tokio::test(flavor = "multi_thread")]
async fn slt_vector_tierdb() {
    let server = TestServer::start(&[]);
    let outcome = run_suite(&server.connection_string(), "tierdb", &slt_files("vector")).await;
    check("tierdb", &outcome, MIN_QUERY_RECORDS);
}

#[tokio::test(flavor = "multi_thread")]
async fn slt_vector_pgvector() {
    let postgres = Postgres::start();
    let version = available_pgvector_version(&postgres).await;
    assert_eq!(
        version.as_deref(),
        Some(PGVECTOR_VERSION),
        "pgvector {PGVECTOR_VERSION} is not installed in this PostgreSQL (TIERDB_PG_BIN, default \
         /usr/lib/postgresql/15/bin): run scripts/install-pgvector.sh (scripts/install-deps.sh \
         does)"
    );
    let outcome = run_suite(&postgres.connection_string(), "postgres", &slt_files("vector")).await;
    check("pgvector", &outcome, MIN_QUERY_RECORDS);
}

/// The `vector` extension version this PostgreSQL would install, if any.
async fn available_pgvector_version(postgres: &Postgres) -> Option<String> {
    let (client, connection) =
        tokio_postgres::connect(&postgres.connection_string(), tokio_postgres::NoTls)
            .await
            .expect("connect to PostgreSQL");
    tokio::spawn(connection);
    let row = client
        .query_opt("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'", &[])
        .await
        .expect("query pg_available_extensions")?;
    Some(row.get(0))
}
