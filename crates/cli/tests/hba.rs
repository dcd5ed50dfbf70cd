//! Client authentication rules (`--hba-file`, pg_hba.conf syntax) against a real server:
//! reject and no-match refusals are FATAL 28000 in PostgreSQL's words and close the
//! connection before anything runs; the first matching line wins; database and user lists;
//! hostssl and hostnossl with and without TLS (psql); a client on a non-loopback address does
//! not match loopback rules; a malformed file stops the server at start with its line.
//! Needs openssl and psql (scripts/install-deps.sh installs them): a missing tool fails.

use crate::server_support;
use crate::wire_support;

use std::net::{IpAddr, UdpSocket};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use server_support::certificates::{make_certificates, run, tls_flags};
use server_support::TestServer;
use wire_support::*;

/// How long a server that must refuse to start may take to exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(60);

fn rules_file(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("hba file");
    std::fs::write(file.path(), text).expect("write hba file");
    file
}

fn path_of(file: &tempfile::NamedTempFile) -> &str {
    file.path().to_str().expect("utf-8 path")
}

/// A server using `rules`; the file lives as long as the server needs it.
fn start(rules: &str, extra: &[&str]) -> (TestServer, tempfile::NamedTempFile) {
    let file = rules_file(rules);
    let mut flags = vec!["--hba-file", path_of(&file)];
    flags.extend(extra);
    (TestServer::start(&flags), file)
}

/// Runs role statements as the bootstrap superuser (trusted by every rule set below): trust
/// rules, like PostgreSQL's, let in existing roles only.
fn create_roles(server: &TestServer, statements: &[&str]) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = server.connect().await;
        for statement in statements {
            client
                .simple_query(statement)
                .await
                .unwrap_or_else(|error| panic!("{statement}: {error}"));
        }
    });
}

/// Logs in with tokio-postgres (no TLS); the error is the server's refusal.
fn login(
    host: &str,
    port: u16,
    user: &str,
    database: &str,
    password: Option<&str>,
) -> Result<(), tokio_postgres::Error> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut config = format!("host={host} port={port} user={user} dbname={database}");
        if let Some(password) = password {
            config.push_str(&format!(" password={password}"));
        }
        let (client, connection) = tokio_postgres::connect(&config, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        let rows = client.simple_query("SELECT 1").await?;
        assert!(!rows.is_empty(), "SELECT 1 returned nothing");
        Ok(())
    })
}

/// The server's FATAL refusal of a login: (SQLSTATE, message).
fn refusal(outcome: Result<(), tokio_postgres::Error>) -> (String, String) {
    let error = outcome.expect_err("the login was refused");
    let database_error =
        error.as_db_error().unwrap_or_else(|| panic!("no server error in {error:?}"));
    assert_eq!(database_error.severity(), "FATAL", "{database_error:?}");
    (database_error.code().code().to_string(), database_error.message().to_string())
}

fn no_entry(host: &str, user: &str, database: &str, encryption: &str) -> (String, String) {
    let message = format!(
        "no pg_hba.conf entry for host \"{host}\", user \"{user}\", database \"{database}\", {encryption}"
    );
    ("28000".to_string(), message)
}

#[test]
fn reject_is_fatal_closes_the_connection_and_runs_nothing() {
    // First match wins: the reject line for mallory comes before the trust for everybody.
    let (server, _file) =
        start("host all mallory 127.0.0.1/32 reject\nhost all all 127.0.0.1/32 trust\n", &[]);
    let mut client = RawClient::connect(server.port);
    let mut bytes = startup_packet_for("mallory", "tierdb");
    bytes.extend(query(b"CREATE TABLE bypass (a int)"));
    client.send(&bytes);
    let messages = client.until_closed();
    assert_nothing_executed(&messages);
    let error = first_error(&messages).expect("an error");
    assert_eq!((error.severity.as_str(), error.code.as_str()), ("FATAL", "28000"), "{error:?}");
    assert_eq!(
        error.message,
        "pg_hba.conf rejects connection for host \"127.0.0.1\", user \"mallory\", database \"tierdb\", no encryption"
    );

    create_roles(&server, &["CREATE USER alice"]);
    login("127.0.0.1", server.port, "alice", "tierdb", None).expect("alice is trusted");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = server.connect().await;
        let error = client.simple_query("SELECT * FROM bypass").await.expect_err("no table");
        assert_eq!(error.code(), Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE));
    });
}

#[test]
fn a_startup_packet_without_a_user_is_refused() {
    let (server, _file) = start("host all all 127.0.0.1/32 trust\n", &[]);
    for parameters in [&["database", "tierdb"][..], &["user", "", "database", "tierdb"]] {
        let mut client = RawClient::connect(server.port);
        client.send(&startup_packet_with(parameters));
        let messages = client.until_closed();
        let error = first_error(&messages).expect("an error");
        assert_eq!((error.severity.as_str(), error.code.as_str()), ("FATAL", "28000"));
        assert_eq!(error.message, "no PostgreSQL user name specified in startup packet");
    }
}

#[test]
fn database_and_user_lists_and_the_no_match_wording() {
    let rules = "# reports for two users, app for everybody\n\n\
                 host reports alice,bob 127.0.0.1/32 trust\n\
                 host app,\"tierdb\" all 127.0.0.1/32 trust\n";
    let (server, _file) = start(rules, &[]);
    let port = server.port;
    create_roles(
        &server,
        &["CREATE USER alice", "CREATE USER bob", "CREATE USER carol", "CREATE USER app"],
    );
    for (user, database) in [("alice", "reports"), ("bob", "reports"), ("carol", "app")] {
        login("127.0.0.1", port, user, database, None)
            .unwrap_or_else(|error| panic!("{user}@{database}: {error}"));
    }
    // No database named: it is the user's name, as in PostgreSQL (user app, database app).
    let mut client = RawClient::connect(port);
    client.send(&startup_packet_with(&["user", "app"]));
    let messages = client.until_ready();
    assert!(first_error(&messages).is_none(), "{messages:?}");
    assert_eq!(
        refusal(login("127.0.0.1", port, "carol", "reports", None)),
        no_entry("127.0.0.1", "carol", "reports", "no encryption")
    );
    assert_eq!(
        refusal(login("127.0.0.1", port, "alice", "Reports", None)),
        no_entry("127.0.0.1", "alice", "Reports", "no encryption")
    );
}

#[test]
fn scram_rule_asks_for_the_password() {
    let secret = rules_file("s3cret-pass\n");
    let rules = "host all alice 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n";
    let (server, _file) = start(rules, &["--password-file", path_of(&secret)]);
    let port = server.port;
    create_roles(&server, &["CREATE USER alice PASSWORD 'alice-pass'", "CREATE USER bob"]);
    login("127.0.0.1", port, "alice", "tierdb", Some("alice-pass")).expect("right password");
    // The password file is the bootstrap superuser's (tierdb), not everybody's.
    let (code, _) = refusal(login("127.0.0.1", port, "alice", "tierdb", Some("s3cret-pass")));
    assert_eq!(code, "28P01");
    let (code, _) = refusal(login("127.0.0.1", port, "alice", "tierdb", Some("wrong")));
    assert_eq!(code, "28P01");
    login("127.0.0.1", port, "bob", "tierdb", None).expect("bob is trusted");
}

fn psql(connection: &str) -> Output {
    run("psql", &[connection, "-X", "-A", "-t", "-c", "SELECT 40 + 2"])
}

#[test]
fn hostssl_and_hostnossl_follow_the_transport() {
    let directory = tempfile::tempdir().expect("tempdir");
    make_certificates(directory.path(), "tierdb-test-ca");
    let flags = tls_flags(directory.path());
    let rules = "hostssl all secure 127.0.0.1/32 trust\nhostnossl all plain 127.0.0.1/32 trust\n\
                 hostnossl all tierdb 127.0.0.1/32 trust\n";
    let (server, _file) = start(rules, &flags.each_ref().map(String::as_str));
    create_roles(&server, &["CREATE USER secure", "CREATE USER plain"]);
    let connection = |user: &str, mode: &str| {
        format!("host=127.0.0.1 port={} user={user} dbname=tierdb sslmode={mode}", server.port)
    };
    for (user, mode) in [("secure", "require"), ("plain", "disable")] {
        let output = psql(&connection(user, mode));
        assert!(output.status.success(), "{user} sslmode={mode}: {output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "42");
    }
    for (user, mode, encryption) in
        [("secure", "disable", "no encryption"), ("plain", "require", "SSL encryption")]
    {
        let output = psql(&connection(user, mode));
        assert!(!output.status.success(), "{user} sslmode={mode} got in");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let expected = format!(
            "FATAL:  no pg_hba.conf entry for host \"127.0.0.1\", user \"{user}\", database \"tierdb\", {encryption}"
        );
        assert!(stderr.contains(&expected), "{user} sslmode={mode}: {stderr}");
    }
}

/// This machine's address on its default route (a UDP connect sends nothing). The test
/// needs one: a machine without a non-loopback interface fails it.
fn non_loopback_address() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").expect("bind a UDP socket");
    socket
        .connect("203.0.113.1:9")
        .expect("this test needs a non-loopback IPv4 interface with a default route");
    let address = socket.local_addr().expect("local address").ip();
    assert!(!address.is_loopback() && !address.is_unspecified(), "{address}");
    address
}

#[test]
fn a_non_loopback_client_does_not_match_loopback_rules() {
    let address = non_loopback_address().to_string();
    let rules = "host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n";
    let (server, _file) = start(rules, &["--listen", "0.0.0.0:0"]);
    login("127.0.0.1", server.port, "tierdb", "tierdb", None).expect("loopback is trusted");
    assert_eq!(
        refusal(login(&address, server.port, "tierdb", "tierdb", None)),
        no_entry(&address, "tierdb", "tierdb", "no encryption")
    );

    // The default shorthand (trust-loopback) asks that client for the password.
    let secret = rules_file("s3cret-pass\n");
    let server = TestServer::start(&["--listen", "0.0.0.0:0", "--password-file", path_of(&secret)]);
    login("127.0.0.1", server.port, "tierdb", "tierdb", None).expect("loopback is trusted");
    login(&address, server.port, "tierdb", "tierdb", Some("s3cret-pass")).expect("password");
    let (code, _) = refusal(login(&address, server.port, "tierdb", "tierdb", Some("wrong")));
    assert_eq!(code, "28P01");
}

/// Runs `tierdb serve` with `flags`, which must make it exit with an error; its stderr.
fn start_fails(flags: &[&str]) -> String {
    let data_dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tierdb"))
        .arg("serve")
        .arg("--data-dir")
        .arg(data_dir.path())
        .args(["--listen", "127.0.0.1:0", "--metrics-listen", ""])
        .args(flags)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tierdb serve");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > EXIT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tierdb serve {flags:?} started instead of failing");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = child.wait_with_output().expect("stderr");
    assert!(!status.success(), "tierdb serve {flags:?} exited with success");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_malformed_file_stops_the_server_at_start() {
    let cases = [
        ("host all all 10.0.0.0/8 md5", "authentication method \"md5\" is not supported"),
        ("local all all trust", "connection type \"local\" is not supported"),
        ("host all all 10.0.0.0/33 trust", "invalid CIDR mask in address \"10.0.0.0/33\""),
        ("host all all", "end-of-line before IP address specification"),
    ];
    for (line, reason) in cases {
        let file = rules_file(&format!("# rules\nhost all all 127.0.0.1/32 trust\n{line}\n"));
        let stderr = start_fails(&["--hba-file", path_of(&file)]);
        let expected = format!("hba_file {}, line 3: {reason}", path_of(&file));
        assert!(stderr.contains(&expected), "{line}: {stderr}");
    }
    let file = rules_file("host all all all trust\n");
    let stderr = start_fails(&["--hba-file", path_of(&file), "--auth", "scram"]);
    assert!(stderr.contains("give one or the other"), "{stderr}");
    let stderr = start_fails(&["--hba-file", "/nonexistent/hba.conf"]);
    assert!(stderr.contains("cannot read hba_file=/nonexistent/hba.conf"), "{stderr}");
}
