//! The differential SQL suite (tests/slt/*.slt, expected results from PostgreSQL 15) run
//! against a private PostgreSQL 15 instance and against `tierdb serve`.
//!
//! Results are read over the simple query protocol and formatted as sqllogictest-bin's
//! `--engine postgres` does (NULL as `NULL`, the empty string as `(empty)`, everything else as
//! the server's text), and errors read `db error: ERROR: <message>` as tokio-postgres 0.7.12
//! prints them, so the files' `query error <regex>` lines match. Every failing record is
//! reported (file:line, expected, actual), not just the first.
//!
//! Records guarded by `skipif tierdb` run only against PostgreSQL (the runner labels the
//! engines `postgres` and `tierdb`); tests/slt/README.md lists them and why.
//!
//! The PostgreSQL side needs the PostgreSQL 15 server binaries (Debian/Ubuntu package
//! `postgresql-15`, found under /usr/lib/postgresql/15/bin or `$TIERDB_PG_BIN`) and the
//! `C.UTF-8` locale; as root it runs them as the `postgres` user through `runuser`.
//! `TIERDB_SLT_FILES=joins,nulls` restricts the run to some files.

mod server_support;
mod slt_support;

use server_support::TestServer;
use slt_support::{check, run_suite, slt_files, Postgres};

/// Query records both engines must run (guards against skipping too much).
const MIN_QUERY_RECORDS: usize = 500;

// ----- the tests -----

#[tokio::test(flavor = "multi_thread")]
async fn slt_postgres() {
    let postgres = Postgres::start();
    let outcome = run_suite(&postgres.connection_string(), "postgres", &slt_files("")).await;
    check("postgres", &outcome, MIN_QUERY_RECORDS);
}

#[tokio::test(flavor = "multi_thread")]
async fn slt_tierdb() {
    let server = TestServer::start(&[]);
    let outcome = run_suite(&server.connection_string(), "tierdb", &slt_files("")).await;
    check("tierdb", &outcome, MIN_QUERY_RECORDS);
}
