//! A private MinIO server for one test: started on a free loopback port over a fresh
//! temporary directory, killed (SIGKILL, then reaped) when the guard is dropped.
//!
//! Why: the S3 volume must be tested against a real S3 implementation, not a mock, and every
//! test gets its own server so that tests neither share state nor depend on a running daemon.
//!
//! The binary is `$TIERDB_MINIO_BIN`, else `minio` on `PATH`, else `$HOME/go/bin/minio`
//! (`scripts/install-minio.sh` installs it there). A missing binary fails the test, unless
//! `TIERDB_SKIP_S3=1`, which skips every S3 test with a loud line on stderr.
//!
//! The bucket is created by pre-creating its directory in the data directory before the
//! server starts: a fresh single-drive MinIO adopts top-level directories as buckets.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The bucket every server starts with.
pub const BUCKET: &str = "tierdb-test";
pub const ACCESS_KEY: &str = "tierdb-access";
pub const SECRET_KEY: &str = "tierdb-secret-key";
/// MinIO's default region.
pub const REGION: &str = "us-east-1";

/// How long a server may take to answer its readiness probe.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts with a fresh port, in case another process takes the port we picked.
const START_ATTEMPTS: usize = 3;

/// A running MinIO server; dropping it kills the server and deletes its data.
pub struct MinioServer {
    child: Child,
    endpoint: String,
    log_path: PathBuf,
    // Declared last: removed only after the server is dead.
    _directory: tempfile::TempDir,
}

impl MinioServer {
    /// Starts a server, or returns `None` (after printing `SKIPPED`) when `TIERDB_SKIP_S3=1`.
    /// Panics with a clear message if the binary is missing or the server does not come up.
    pub fn start(test: &str) -> Option<MinioServer> {
        if std::env::var("TIERDB_SKIP_S3").is_ok_and(|value| value == "1") {
            // Written to the stderr handle, not with `eprintln!`, which the test harness
            // captures: a skip must show even when the test passes.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED test={test}: TIERDB_SKIP_S3=1, the S3 volume was NOT tested ***\n"
            );
            return None;
        }
        match MinioServer::try_start() {
            Ok(server) => Some(server),
            Err(failure) => panic!("{failure}"),
        }
    }

    /// Starts a server, or says why it could not (binary missing, server not coming up).
    pub fn try_start() -> Result<MinioServer, String> {
        let binary = find_binary().map_err(|searched| {
            format!(
                "minio binary not found (searched: {searched}); install it with \
                 scripts/install-minio.sh, or set TIERDB_MINIO_BIN=/path/to/minio, or set \
                 TIERDB_SKIP_S3=1 to skip the S3 tests explicitly"
            )
        })?;
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            match start_once(&binary) {
                Ok(server) => return Ok(server),
                Err(failure) => failures.push(failure),
            }
        }
        Err(format!(
            "minio did not start binary={} attempts={START_ATTEMPTS}:\n{}",
            binary.display(),
            failures.join("\n---\n")
        ))
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The server's combined stdout and stderr so far, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }
}

impl Drop for MinioServer {
    fn drop(&mut self) {
        // `Child::kill` sends SIGKILL; `wait` reaps it so no zombie or orphan remains.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The binary to run, or a description of where it was looked for.
fn find_binary() -> Result<PathBuf, String> {
    if let Some(explicit) = std::env::var_os("TIERDB_MINIO_BIN") {
        let explicit = PathBuf::from(explicit);
        return if is_executable(&explicit) {
            Ok(explicit)
        } else {
            Err(format!("TIERDB_MINIO_BIN={} is not an executable file", explicit.display()))
        };
    }
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).map(|directory| directory.join("minio")).collect())
        .unwrap_or_default();
    let in_go_bin = std::env::var_os("HOME").map(|home| PathBuf::from(home).join("go/bin/minio"));
    let candidates: Vec<PathBuf> = on_path.into_iter().chain(in_go_bin).collect();
    candidates.iter().find(|candidate| is_executable(candidate)).cloned().ok_or_else(|| {
        format!(
            "TIERDB_MINIO_BIN unset, no minio on PATH, no $HOME/go/bin/minio; tried {}",
            candidates.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(":")
        )
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

fn free_loopback_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local address").port()
}

fn start_once(binary: &Path) -> Result<MinioServer, String> {
    let directory = tempfile::tempdir().map_err(|error| format!("tempdir error={error}"))?;
    let data = directory.path().join("data");
    let certs = directory.path().join("certs");
    for needed in [data.join(BUCKET), certs.clone()] {
        std::fs::create_dir_all(&needed)
            .map_err(|error| format!("mkdir path={} error={error}", needed.display()))?;
    }
    let log_path = directory.path().join("minio.log");
    let log = std::fs::File::create(&log_path)
        .map_err(|error| format!("create path={} error={error}", log_path.display()))?;
    let log_copy = log.try_clone().map_err(|error| format!("dup log error={error}"))?;
    let port = free_loopback_port();
    let address = SocketAddr::from(([127, 0, 0, 1], port));

    let mut command = Command::new(binary);
    command
        .arg("server")
        .arg(&data)
        .arg("--address")
        .arg(address.to_string())
        // An empty certs directory of our own: certificates in ~/.minio would turn on TLS.
        .arg("--certs-dir")
        .arg(&certs)
        .env("MINIO_ROOT_USER", ACCESS_KEY)
        .env("MINIO_ROOT_PASSWORD", SECRET_KEY)
        .env("MINIO_BROWSER", "off")
        .env("MINIO_UPDATE", "off")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_copy);
    // SAFETY: `prctl` is async-signal-safe and touches no memory of the parent. It makes the
    // kernel kill the server if the test thread dies without running our `Drop` (e.g. the
    // test binary is killed), so no server outlives its test.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command
        .spawn()
        .map_err(|error| format!("spawn binary={} error={error}", binary.display()))?;
    let mut server = MinioServer {
        child,
        endpoint: format!("http://{address}"),
        log_path,
        _directory: directory,
    };

    let deadline = Instant::now() + STARTUP_TIMEOUT;
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!("minio exited early status={status} log:\n{}", server.log()));
        }
        if is_ready(address) {
            return Ok(server);
        }
        if Instant::now() >= deadline {
            // Dropping `server` kills it.
            return Err(format!(
                "minio not ready after timeout_s={} address={address} log:\n{}",
                STARTUP_TIMEOUT.as_secs(),
                server.log()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether MinIO's readiness endpoint answers 200 (it needs no credentials).
fn is_ready(address: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_secs(1)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request =
        format!("GET /minio/health/ready HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    response.starts_with(b"HTTP/1.1 200")
}
