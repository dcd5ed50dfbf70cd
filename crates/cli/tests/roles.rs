//! Roles against a real server: each role logs in with its own password over SCRAM
//! (tokio-postgres), a wrong password is FATAL 28P01, an unknown role and a role without a
//! password get the very same refusal as a wrong password (nothing tells a client which
//! roles exist), a NOLOGIN role 28000 after its right password (as PostgreSQL), trust rules let in existing LOGIN roles only (28000 in
//! PostgreSQL's words), the bootstrap superuser (--superuser, password from a file, reset at
//! every start), and roles and grants surviving SIGKILL and a restart.

use crate::server_support;

use server_support::TestServer;

fn password_file(password: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("password file");
    std::fs::write(file.path(), format!("{password}\n")).expect("write password file");
    file
}

fn path_of(file: &tempfile::NamedTempFile) -> &str {
    file.path().to_str().expect("utf-8 path")
}

/// Logs in as `user` and runs `statements`; the server's refusal or the first failure.
fn run_as(
    server: &TestServer,
    user: &str,
    password: Option<&str>,
    statements: &[&str],
) -> Result<Vec<String>, tokio_postgres::Error> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut config = format!("host=127.0.0.1 port={} user={user} dbname=tierdb", server.port);
        if let Some(password) = password {
            config.push_str(&format!(" password={password}"));
        }
        let (client, connection) = tokio_postgres::connect(&config, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        let mut values = Vec::new();
        for statement in statements {
            for message in client.simple_query(statement).await? {
                if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                    values.push(row.get(0).unwrap_or("NULL").to_string());
                }
            }
        }
        Ok(values)
    })
}

/// The FATAL refusal of a login: (SQLSTATE, message).
fn refusal(outcome: Result<Vec<String>, tokio_postgres::Error>) -> (String, String) {
    let error = outcome.expect_err("the login was refused");
    let error = error.as_db_error().unwrap_or_else(|| panic!("no server error in {error:?}"));
    assert_eq!(error.severity(), "FATAL", "{error:?}");
    (error.code().code().to_string(), error.message().to_string())
}

fn failed_password(user: &str) -> (String, String) {
    ("28P01".into(), format!("password authentication failed for user \"{user}\""))
}

/// The error of a statement that must fail: (SQLSTATE, message).
fn statement_error(outcome: Result<Vec<String>, tokio_postgres::Error>) -> (String, String) {
    let error = outcome.expect_err("the statement failed");
    let error = error.as_db_error().unwrap_or_else(|| panic!("no server error in {error:?}"));
    (error.code().code().to_string(), error.message().to_string())
}

#[test]
fn each_role_logs_in_with_its_own_password_and_refusals_reveal_nothing() {
    let boot = password_file("boot-pass");
    let server = TestServer::start(&["--auth", "scram", "--password-file", path_of(&boot)]);
    let setup = [
        "CREATE USER alice PASSWORD 'alice-pass'",
        "CREATE ROLE bob LOGIN PASSWORD 'bob-pass'",
        "CREATE ROLE locked NOLOGIN PASSWORD 'locked-pass'",
        "CREATE USER nopass",
    ];
    run_as(&server, "tierdb", Some("boot-pass"), &setup).expect("the bootstrap superuser");
    let alice =
        run_as(&server, "alice", Some("alice-pass"), &["SELECT current_user", "SHOW is_superuser"]);
    assert_eq!(alice.expect("alice logs in"), ["alice", "off"]);
    let bob = run_as(&server, "bob", Some("bob-pass"), &["SELECT session_user"]);
    assert_eq!(bob.expect("bob logs in"), ["bob"]);
    let tierdb = run_as(&server, "tierdb", Some("boot-pass"), &["SHOW is_superuser"]);
    assert_eq!(tierdb.expect("tierdb logs in"), ["on"]);

    assert_eq!(refusal(run_as(&server, "alice", Some("bob-pass"), &[])), failed_password("alice"));
    assert_eq!(
        refusal(run_as(&server, "tierdb", Some("alice-pass"), &[])),
        failed_password("tierdb")
    );
    // Unknown roles, password-less roles and NOLOGIN roles with a wrong password: the same.
    assert_eq!(refusal(run_as(&server, "ghost", Some("x"), &[])), failed_password("ghost"));
    assert_eq!(refusal(run_as(&server, "locked", Some("wrong"), &[])), failed_password("locked"));
    // As PostgreSQL: a NOLOGIN role that proves its password is refused after, with 28000.
    assert_eq!(
        refusal(run_as(&server, "locked", Some("locked-pass"), &[])),
        ("28000".into(), "role \"locked\" is not permitted to log in".into())
    );
    assert_eq!(
        refusal(run_as(&server, "nopass", Some("anything"), &[])),
        failed_password("nopass")
    );

    // Alice changes her own password; the old one stops working.
    run_as(&server, "alice", Some("alice-pass"), &["ALTER ROLE alice PASSWORD 'new-pass'"])
        .expect("a role may change its own password");
    assert_eq!(
        refusal(run_as(&server, "alice", Some("alice-pass"), &[])),
        failed_password("alice")
    );
    run_as(&server, "alice", Some("new-pass"), &[]).expect("the new password");
    // Nobody reads the role table through SQL; roles are seen through pg_roles only.
    let read = run_as(&server, "alice", Some("new-pass"), &["SELECT * FROM tierdb_roles"]);
    assert_eq!(statement_error(read).0, "42P01");
    let hidden = run_as(
        &server,
        "alice",
        Some("new-pass"),
        &["SELECT rolpassword FROM pg_roles WHERE rolname = 'alice'"],
    );
    assert_eq!(hidden.expect("pg_roles"), ["********"]);
    let denied = run_as(&server, "alice", Some("new-pass"), &["CREATE ROLE mallory SUPERUSER"]);
    assert_eq!(
        statement_error(denied),
        ("42501".into(), "permission denied to create role".into())
    );
}

#[test]
fn trust_rules_admit_existing_login_roles_only() {
    let server = TestServer::start(&["--auth", "trust"]);
    run_as(&server, "tierdb", None, &["CREATE USER alice", "CREATE ROLE group_role"])
        .expect("the bootstrap superuser");
    run_as(&server, "alice", None, &[]).expect("alice exists");
    assert_eq!(
        refusal(run_as(&server, "ghost", None, &[])),
        ("28000".into(), "role \"ghost\" does not exist".into())
    );
    assert_eq!(
        refusal(run_as(&server, "group_role", None, &[])),
        ("28000".into(), "role \"group_role\" is not permitted to log in".into())
    );
}

#[test]
fn roles_survive_a_crash_and_the_password_file_resets_the_bootstrap_superuser() {
    let first = password_file("first-pass");
    let flags = ["--auth", "scram", "--superuser", "admin", "--password-file", path_of(&first)];
    let server = TestServer::start(&flags);
    assert_eq!(
        refusal(run_as(&server, "tierdb", Some("first-pass"), &[])),
        failed_password("tierdb")
    );
    let setup = [
        "CREATE USER alice PASSWORD 'alice-pass'",
        "CREATE ROLE reader NOLOGIN",
        "CREATE TABLE t (a int)",
        "INSERT INTO t VALUES (7)",
        "GRANT SELECT ON t TO alice",
    ];
    run_as(&server, "admin", Some("first-pass"), &setup).expect("--superuser names it");
    let data_dir = server.kill();

    // Restarted with another password file: the bootstrap superuser (still admin, whatever
    // --superuser says now) takes the new password; the other roles are as they were.
    let second = password_file("second-pass");
    let flags = ["--auth", "scram", "--superuser", "other", "--password-file", path_of(&second)];
    let server = TestServer::start_in(data_dir, &flags);
    assert_eq!(
        refusal(run_as(&server, "admin", Some("first-pass"), &[])),
        failed_password("admin")
    );
    let roles = run_as(
        &server,
        "admin",
        Some("second-pass"),
        &[
            "SELECT rolname FROM pg_roles WHERE rolcanlogin ORDER BY rolname",
            "SELECT rolname FROM pg_roles WHERE NOT rolcanlogin",
        ],
    );
    assert_eq!(roles.expect("the new password"), ["admin", "alice", "reader"]);
    let read = run_as(&server, "alice", Some("alice-pass"), &["SELECT a FROM t"]);
    assert_eq!(read.expect("alice's password and grant survived"), ["7"]);
    let write = run_as(&server, "alice", Some("alice-pass"), &["INSERT INTO t VALUES (8)"]);
    assert_eq!(statement_error(write), ("42501".into(), "permission denied for table t".into()));
    let data_dir = server.kill();

    // Without a password file the stored password stays.
    let server = TestServer::start_in(data_dir, &["--auth", "scram"]);
    let drop = ["REVOKE ALL ON t FROM alice", "DROP ROLE alice"];
    run_as(&server, "admin", Some("second-pass"), &drop).expect("kept");
    assert_eq!(
        refusal(run_as(&server, "alice", Some("alice-pass"), &[])),
        failed_password("alice")
    );
}

/// An empty TIERDB_PASSWORD (`TIERDB_PASSWORD=$UNSET_VARIABLE`) would give the bootstrap
/// superuser a real password that any SCRAM client can prove: the server refuses to start.
#[test]
fn an_empty_password_in_the_environment_is_refused() {
    let data_dir = tempfile::tempdir().expect("tempdir");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tierdb"))
        .args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--data-dir"])
        .arg(data_dir.path())
        .env("TIERDB_PASSWORD", "")
        .env_remove("TIERDB_PASSWORD_FILE")
        .output()
        .expect("run tierdb serve");
    assert!(!output.status.success(), "the server started with an empty password");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("TIERDB_PASSWORD is set but empty"), "{stderr}");
}
