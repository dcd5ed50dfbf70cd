//! Runs the node-postgres tests (`tests/node/pg.test.js`, `node --test`) against a real
//! `tierdb serve`.
//!
//! Needs node (18 or later, for `node --test`) and npm, and the `pg` module at the version
//! `tests/node/package.json` pins (scripts/install-deps.sh runs `npm ci` there). When the
//! module is missing the test runs `npm ci` itself (from npm's cache first); when node,
//! npm or the module cannot be had it fails and says so: it never passes without running
//! the tests.

use crate::server_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use server_support::TestServer;

fn node_tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("..").join("tests").join("node")
}

/// The `pg` version package.json pins (`"pg": "X.Y.Z"`).
fn pinned_pg_version(dir: &Path) -> String {
    let manifest = std::fs::read_to_string(dir.join("package.json")).expect("read package.json");
    let start = manifest.find("\"pg\":").expect("package.json names the pg dependency") + 5;
    let rest = manifest[start..].trim_start();
    let version = rest.trim_start_matches('"').split('"').next().expect("a quoted version");
    assert!(
        version.chars().all(|c| c.is_ascii_digit() || c == '.'),
        "tests/node/package.json must pin an exact pg version, not {version:?}"
    );
    version.to_string()
}

/// The version of the `pg` module installed under `dir`, if any.
fn installed_pg_version(dir: &Path) -> Option<String> {
    let manifest =
        std::fs::read_to_string(dir.join("node_modules").join("pg").join("package.json")).ok()?;
    let start = manifest.find("\"version\":")? + 10;
    let rest = manifest[start..].trim_start();
    Some(rest.trim_start_matches('"').split('"').next()?.to_string())
}

/// Checks that node can run `node --test`; panics with what is missing.
fn require_node() {
    let output = Command::new("node").arg("--version").output();
    let version = match output {
        Ok(output) if output.status.success() => {
            String::from_utf8_lossy(&output.stdout).trim().to_string()
        }
        Ok(output) => panic!(
            "node --version failed ({}): {}; the node-postgres tests need node 18 or later \
             (scripts/install-deps.sh installs it)",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => panic!(
            "node not found ({error}); the node-postgres tests need node 18 or later and npm \
             (scripts/install-deps.sh installs them: apt-get install nodejs npm)"
        ),
    };
    let major: u32 = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|major| major.parse().ok())
        .unwrap_or_else(|| panic!("cannot read node's version {version:?}"));
    assert!(major >= 18, "node {version} is installed; `node --test` needs 18 or later");
}

/// Makes sure `pg` is installed at the pinned version, running `npm ci` when it is not.
fn require_pg_module(dir: &Path) {
    let pinned = pinned_pg_version(dir);
    if installed_pg_version(dir).as_deref() == Some(pinned.as_str()) {
        return;
    }
    let output = Command::new("npm")
        .args(["ci", "--prefer-offline", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .output();
    match output {
        Ok(output) if output.status.success() => {}
        Ok(output) => panic!(
            "npm ci in {} failed ({}): {}\nthe node-postgres tests need pg {pinned}: run \
             scripts/install-deps.sh",
            dir.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => panic!(
            "npm not found ({error}); the node-postgres tests need pg {pinned}: run \
             scripts/install-deps.sh"
        ),
    }
    let installed = installed_pg_version(dir);
    assert_eq!(
        installed.as_deref(),
        Some(pinned.as_str()),
        "npm ci did not install pg {pinned} in {}",
        dir.display()
    );
}

/// The count after `# name ` in node's test runner summary (`# pass 6`).
fn summary_count(stdout: &str, name: &str) -> Option<u64> {
    let prefix = format!("# {name} ");
    stdout.lines().find_map(|line| line.strip_prefix(&prefix)?.trim().parse().ok())
}

#[test]
fn node_postgres_tests_pass() {
    require_node();
    let dir = node_tests_dir();
    assert!(dir.join("pg.test.js").is_file(), "missing pg.test.js in {}", dir.display());
    require_pg_module(&dir);
    let server = TestServer::start(&[]);
    let output = Command::new("node")
        .args(["--test", "--test-reporter=tap", "pg.test.js"])
        .current_dir(&dir)
        .env("TIERDB_PORT", server.port.to_string())
        .output()
        .expect("run node --test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(output.status.success(), "node --test failed ({}):\n{stdout}\n{stderr}", output.status);
    // Make sure tests really ran: a runner that found nothing also exits 0.
    let passed = summary_count(&stdout, "pass").unwrap_or(0);
    assert!(passed > 0, "node --test ran no tests:\n{stdout}");
    assert_eq!(summary_count(&stdout, "fail"), Some(0), "node --test reported failures");
}
