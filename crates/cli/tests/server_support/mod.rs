//! Starts a real `tierdb serve` process for client tests: a fresh data directory, port 0
//! (the address is read from the line the server prints), SIGTERM on drop.

#![allow(dead_code)]

pub mod certificates;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long the server may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(60);

pub struct TestServer {
    pub child: Child,
    pub port: u16,
    pub metrics_port: u16,
    pub data_dir: tempfile::TempDir,
}

impl TestServer {
    /// Starts a server with the given extra flags.
    pub fn start(extra: &[&str]) -> TestServer {
        let data_dir = tempfile::tempdir().expect("tempdir");
        TestServer::start_in(data_dir, extra)
    }

    /// Starts a server on an existing data directory (restart tests).
    pub fn start_in(data_dir: tempfile::TempDir, extra: &[&str]) -> TestServer {
        let mut defaults = vec!["--metrics-listen", "127.0.0.1:0"];
        // Loopback and small sizes, unless the test sets them; no autoanalyze, so that the
        // join orders (and the order of unordered rows) do not depend on when it runs.
        let settable = [
            ("--listen", "127.0.0.1:0"),
            ("--buffer-pool", "64MB"),
            ("--tier-size", "64MB"),
            ("--autoanalyze-interval-ms", "0"),
        ];
        for (flag, value) in settable {
            if !extra.contains(&flag) {
                defaults.extend([flag, value]);
            }
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_tierdb"))
            .arg("serve")
            .arg("--data-dir")
            .arg(data_dir.path())
            .args(&defaults)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tierdb serve");
        let stderr = child.stderr.take().expect("stderr");
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("listening on") {
                    let _ = sender.send(line.clone());
                }
                eprintln!("[tierdb] {line}");
            }
        });
        let line = receiver.recv_timeout(START_TIMEOUT).expect("server printed its address");
        let port = |after: &str| -> u16 {
            let rest = line.split(after).nth(1).expect("address in line");
            let address: String =
                rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':').collect();
            address.rsplit(':').next().and_then(|port| port.parse().ok()).expect("port")
        };
        let metrics_port = port("http://");
        let port = port("listening on ");
        TestServer { child, port, metrics_port, data_dir }
    }

    /// A tokio-postgres client on a new connection (its connection task spawned).
    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.connection_string(), tokio_postgres::NoTls)
                .await
                .expect("connect");
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// A libpq-style connection string.
    pub fn connection_string(&self) -> String {
        format!("host=127.0.0.1 port={} user=tierdb dbname=tierdb", self.port)
    }

    /// Stops the server with SIGTERM and waits for it; returns the data directory.
    pub fn stop(mut self) -> tempfile::TempDir {
        self.terminate();
        let data_dir = tempfile::tempdir().expect("tempdir");
        std::mem::replace(&mut self.data_dir, data_dir)
    }

    /// Kills the server with SIGKILL (a crash) and returns the data directory.
    pub fn kill(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let data_dir = tempfile::tempdir().expect("tempdir");
        std::mem::replace(&mut self.data_dir, data_dir)
    }

    fn terminate(&mut self) {
        let pid = i32::try_from(self.child.id()).expect("pid fits");
        // SAFETY: sending a signal to our own child process.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
    }
}

/// A tokio-postgres client of `server` (its connection task spawned on the runtime).
pub async fn connect(server: &TestServer) -> tokio_postgres::Client {
    server.connect().await
}

/// The SQLSTATE of an error, or a description of why there is none.
pub fn sqlstate(error: &tokio_postgres::Error) -> String {
    match error.code() {
        Some(code) => code.code().to_string(),
        None => format!("<no SQLSTATE: {error:?}>"),
    }
}
