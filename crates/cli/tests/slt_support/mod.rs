//! The sqllogictest harness shared by the differential suites (slt.rs: PostgreSQL 15;
//! slt_vector.rs: pgvector): a tokio-postgres database formatted as sqllogictest-bin's
//! postgres engine, the file runner collecting every failure, and a private PostgreSQL.
#![allow(dead_code)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use async_trait::async_trait;
use sqllogictest::{DBOutput, DefaultColumnType, Record, RecordOutput, Runner};
use tokio_postgres::SimpleQueryMessage;

// ----- the sqllogictest database over tokio-postgres -----

/// An error as sqllogictest-bin's postgres engine shows it (tokio-postgres 0.7.12 `Display`).
#[derive(Debug)]
pub struct SltError {
    text: String,
    sqlstate: Option<String>,
}

impl fmt::Display for SltError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

impl std::error::Error for SltError {}

impl From<tokio_postgres::Error> for SltError {
    fn from(error: tokio_postgres::Error) -> SltError {
        let sqlstate = error.code().map(|code| code.code().to_string());
        let text = match error.as_db_error() {
            Some(db) => {
                let mut text = format!("db error: {}: {}", db.severity(), db.message());
                if let Some(detail) = db.detail() {
                    text.push_str(&format!("\nDETAIL: {detail}"));
                }
                if let Some(hint) = db.hint() {
                    text.push_str(&format!("\nHINT: {hint}"));
                }
                text
            }
            None => error.to_string(),
        };
        SltError { text, sqlstate }
    }
}

pub struct SltClient {
    client: tokio_postgres::Client,
    engine: &'static str,
}

impl SltClient {
    async fn connect(
        connection_string: String,
        engine: &'static str,
    ) -> Result<SltClient, SltError> {
        let (client, connection) =
            tokio_postgres::connect(&connection_string, tokio_postgres::NoTls).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(SltClient { client, engine })
    }
}

#[async_trait]
impl sqllogictest::AsyncDB for SltClient {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let messages = self.client.simple_query(sql).await?;
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut count = 0;
        // As sqllogictest-engines' postgres engine: the rows up to the first command's end.
        for message in messages {
            match message {
                SimpleQueryMessage::Row(row) => rows.push(
                    (0..row.len())
                        .map(|index| match row.get(index) {
                            None => "NULL".to_string(),
                            Some("") => "(empty)".to_string(),
                            Some(value) => value.to_string(),
                        })
                        .collect(),
                ),
                SimpleQueryMessage::CommandComplete(affected) => {
                    count = affected;
                    break;
                }
                _ => {}
            }
        }
        if rows.is_empty() {
            Ok(DBOutput::StatementComplete(count))
        } else {
            let width = rows[0].len();
            Ok(DBOutput::Rows { types: vec![DefaultColumnType::Any; width], rows })
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        self.engine
    }

    async fn sleep(duration: Duration) {
        tokio::time::sleep(duration).await
    }

    fn error_sql_state(error: &SltError) -> Option<String> {
        error.sqlstate.clone()
    }
}

// ----- running the files -----

#[derive(Default)]
pub struct Outcome {
    pub queries: usize,
    pub statements: usize,
    pub skipped: usize,
    pub failures: Vec<String>,
}

/// The .slt files directly in `tests/slt/<folder>` (`""` for tests/slt itself), restricted by
/// `TIERDB_SLT_FILES`.
pub fn slt_files(folder: &str) -> Vec<PathBuf> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt").join(folder);
    let filter: Option<Vec<String>> =
        std::env::var("TIERDB_SLT_FILES").ok().filter(|value| !value.is_empty()).map(|value| {
            value.split(',').map(|name| name.trim().trim_end_matches(".slt").to_string()).collect()
        });
    let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("read {}: {error}", directory.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "slt"))
        .filter(|path| {
            let stem = path.file_stem().and_then(|stem| stem.to_str()).unwrap_or_default();
            filter.as_ref().is_none_or(|names| names.iter().any(|name| name == stem))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt files in {}", directory.display());
    files
}

/// Runs every record of every file on fresh connections, collecting all failures.
pub async fn run_suite(
    connection_string: &str,
    engine: &'static str,
    files: &[PathBuf],
) -> Outcome {
    let mut outcome = Outcome::default();
    for file in files {
        let records = sqllogictest::parse_file::<DefaultColumnType>(file)
            .unwrap_or_else(|error| panic!("parse {}: {error}", file.display()));
        let connection_string = connection_string.to_string();
        let mut runner = Runner::new(move || SltClient::connect(connection_string.clone(), engine));
        runner.add_label(engine);
        for record in records {
            let kind = match &record {
                Record::Query { .. } => Some(true),
                Record::Statement { .. } => Some(false),
                _ => None,
            };
            match runner.run_async(record).await {
                Ok(RecordOutput::Nothing) => {
                    if kind.is_some() {
                        outcome.skipped += 1;
                    }
                }
                Ok(_) => match kind {
                    Some(true) => outcome.queries += 1,
                    Some(false) => outcome.statements += 1,
                    None => {}
                },
                Err(error) => outcome.failures.push(error.display(false).to_string()),
            }
        }
        runner.shutdown_async().await;
    }
    outcome
}

/// Fails on any failed record, and when fewer than `minimum_queries` query records ran.
pub fn check(engine: &str, outcome: &Outcome, minimum_queries: usize) {
    eprintln!(
        "[slt] {engine}: {} query and {} statement records passed, {} failed, {} skipped",
        outcome.queries,
        outcome.statements,
        outcome.failures.len(),
        outcome.skipped
    );
    if !outcome.failures.is_empty() {
        let mut report = String::new();
        for failure in &outcome.failures {
            report.push_str(failure);
            report.push_str("\n\n");
        }
        panic!("{} slt records failed against {engine}:\n\n{report}", outcome.failures.len());
    }
    if std::env::var("TIERDB_SLT_FILES").is_err() {
        assert!(
            outcome.queries >= minimum_queries,
            "only {} query records ran against {engine}; the suite must run at least {minimum_queries}",
            outcome.queries
        );
    }
}

// ----- a private PostgreSQL 15 -----

pub struct Postgres {
    directory: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
    run_as: Option<String>,
}

impl Postgres {
    /// PostgreSQL 15 from `$TIERDB_PG_BIN` or Debian's path.
    pub fn start() -> Postgres {
        let bin = PathBuf::from(
            std::env::var("TIERDB_PG_BIN")
                .unwrap_or_else(|_| "/usr/lib/postgresql/15/bin".to_string()),
        );
        Postgres::start_from(bin)
    }

    /// The server whose binaries are in `bin`, on a fresh data directory and a free port.
    pub fn start_from(bin: PathBuf) -> Postgres {
        for tool in ["initdb", "pg_ctl", "postgres"] {
            assert!(
                bin.join(tool).is_file(),
                "PostgreSQL 15 server binaries not found: {} is missing. The differential SQL suite \
                 needs them (Debian/Ubuntu: apt-get install postgresql-15; or set TIERDB_PG_BIN to \
                 the directory holding initdb, pg_ctl and postgres).",
                bin.join(tool).display()
            );
        }
        let directory =
            tempfile::Builder::new().prefix("tierdb-slt-pg").tempdir().expect("tempdir");
        // PostgreSQL refuses to run as root: run it as the `postgres` user then.
        // SAFETY: geteuid has no preconditions.
        let run_as = if unsafe { libc::geteuid() } == 0 {
            let user = std::env::var("TIERDB_PG_USER").unwrap_or_else(|_| "postgres".to_string());
            let status = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(directory.path())
                .status()
                .expect("run chown");
            assert!(
                status.success(),
                "chown of the PostgreSQL directory to user {user} failed (does the user exist?)"
            );
            Some(user)
        } else {
            None
        };
        let port = free_port();
        let mut postgres = Postgres { directory, port, bin, run_as };
        let data = postgres.directory.path().join("data");
        let output = postgres
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
            .output()
            .expect("run initdb");
        assert!(
            output.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
            postgres.directory.path().display()
        );
        let output = postgres
            .command("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(postgres.directory.path().join("log"))
            .args(["-o", &options, "-w", "-t", "60", "start"])
            .output()
            .expect("run pg_ctl start");
        if !output.status.success() {
            let log =
                std::fs::read_to_string(postgres.directory.path().join("log")).unwrap_or_default();
            postgres.port = 0;
            panic!(
                "pg_ctl start failed: {}{}\n{log}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        postgres
    }

    pub fn command(&self, tool: &str) -> Command {
        let program = self.bin.join(tool);
        match &self.run_as {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        }
    }

    pub fn connection_string(&self) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname=postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.port != 0 {
            let data = self.directory.path().join("data");
            let _ = self
                .command("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-m", "immediate", "-w", "stop"])
                .output();
        }
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("local address").port()
}
