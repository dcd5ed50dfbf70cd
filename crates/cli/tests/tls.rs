//! TLS with real clients: psql and psycopg connect with sslmode=require and verify-full to a
//! server given a certificate signed by a test CA; verify-full refuses a server whose
//! certificate another CA signed; sslmode=require fails against a server without TLS.
//! Needs openssl, psql and python3 with psycopg (scripts/install-deps.sh installs them): a
//! missing tool fails the test, it never passes silently.

use crate::server_support;

use std::path::Path;
use std::process::Output;

use server_support::certificates::{make_certificates, run, run_ok, tls_flags};
use server_support::TestServer;

/// A server using the certificate and key make_certificates wrote in `directory`.
fn start_with_tls(directory: &Path) -> TestServer {
    let flags = tls_flags(directory);
    TestServer::start(&flags.each_ref().map(String::as_str))
}

fn connection_string(port: u16, mode: &str, root: &Path) -> String {
    format!(
        "host=localhost hostaddr=127.0.0.1 port={port} user=tierdb dbname=tierdb sslmode={mode} sslrootcert={}",
        root.display()
    )
}

fn psql(connection: &str, command: &str) -> Output {
    run("psql", &[connection, "-X", "-A", "-t", "-c", command])
}

#[test]
fn psql_and_psycopg_connect_over_tls() {
    let directory = tempfile::tempdir().expect("tempdir");
    make_certificates(directory.path(), "tierdb-test-ca");
    let other = tempfile::tempdir().expect("tempdir");
    make_certificates(other.path(), "another-ca");
    let server = start_with_tls(directory.path());
    let root = directory.path().join("ca.crt");

    for mode in ["require", "verify-full"] {
        let output = psql(&connection_string(server.port, mode, &root), "\\conninfo");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "psql sslmode={mode}: {output:?}");
        assert!(stdout.contains("SSL connection"), "psql sslmode={mode} not over TLS: {stdout}");
        let output = psql(&connection_string(server.port, mode, &root), "SELECT 40 + 2");
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "42");
    }

    let wrong_root = other.path().join("ca.crt");
    let output = psql(&connection_string(server.port, "verify-full", &wrong_root), "SELECT 1");
    assert!(!output.status.success(), "verify-full accepted a certificate from another CA");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("certificate verify failed"), "{stderr}");

    let script = format!(
        "import psycopg\n\
         with psycopg.connect({:?}) as connection:\n\
         \x20   assert connection.pgconn.ssl_in_use\n\
         \x20   print(connection.execute('SELECT 6 * 7').fetchone()[0])\n",
        connection_string(server.port, "verify-full", &root)
    );
    let stdout = run_ok("python3", &["-c", &script]);
    assert_eq!(stdout.trim(), "42");
}

#[test]
fn plaintext_after_ssl_request_is_refused() {
    // An attacker on the path appends a startup packet and a query to the client's
    // SSLRequest; they must not run as if they came over TLS (PostgreSQL's CVE-2021-23214).
    let directory = tempfile::tempdir().expect("tempdir");
    make_certificates(directory.path(), "tierdb-test-ca");
    let server = start_with_tls(directory.path());
    let script = format!(
        "import socket, ssl, struct\n\
         def packet(body): return struct.pack('!i', len(body) + 4) + body\n\
         ssl_request = packet(struct.pack('!i', 80877103))\n\
         startup = packet(struct.pack('!i', 196608) + b'user\\0tierdb\\0\\0')\n\
         body = b'CREATE TABLE injected (a int)\\0'\n\
         query = b'Q' + struct.pack('!i', 4 + len(body)) + body\n\
         raw = socket.create_connection(('127.0.0.1', {port}))\n\
         raw.sendall(ssl_request + startup + query)\n\
         assert raw.recv(1) == b'S'\n\
         context = ssl.create_default_context(cafile={root:?})\n\
         tls = context.wrap_socket(raw, server_hostname='localhost')\n\
         data = b''\n\
         while True:\n\
         \x20   chunk = tls.recv(4096)\n\
         \x20   if not chunk: break\n\
         \x20   data += chunk\n\
         print(data[:1].decode(), 'unencrypted' in data.decode('latin-1'))\n",
        port = server.port,
        root = directory.path().join("ca.crt").to_str().expect("utf-8"),
    );
    let stdout = run_ok("python3", &["-c", &script]);
    assert_eq!(stdout.trim(), "E True", "the server answered: {stdout}");
    let output = psql(
        &connection_string(server.port, "verify-full", &directory.path().join("ca.crt")),
        "SELECT * FROM injected",
    );
    assert!(!output.status.success(), "the injected statement ran");
}

#[test]
fn sslmode_require_fails_without_tls() {
    let server = TestServer::start(&[]);
    let root = Path::new("/nonexistent");
    let output = psql(&connection_string(server.port, "require", root), "SELECT 1");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("server does not support SSL"), "{stderr}");
}
