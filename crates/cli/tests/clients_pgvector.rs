//! Runs pgvector's Python adapter tests (`tests/python_pgvector`, pytest: pgvector.psycopg's
//! register_vector with numpy arrays in text and binary, pgvector.sqlalchemy's Vector column)
//! against a real `tierdb serve`.
//!
//! Needs python3 with pytest, psycopg 3, numpy, sqlalchemy and pgvector
//! (scripts/install-deps.sh installs them); when they are missing the test fails and says so.

use crate::server_support;

use std::path::PathBuf;
use std::process::Command;

use server_support::TestServer;

const MODULES: [&str; 5] = ["pytest", "psycopg", "numpy", "sqlalchemy", "pgvector"];

#[test]
fn pgvector_python_adapter_tests_pass() {
    for module in MODULES {
        let output = Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .output()
            .expect("run python3");
        assert!(
            output.status.success(),
            "python3 cannot import {module}: {}\ninstall: python3 -m pip install pytest \
             'psycopg[binary]' numpy sqlalchemy pgvector",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("..");
    let server = TestServer::start(&[]);
    let output = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "tests/python_pgvector"])
        .current_dir(&root)
        .env("TIERDB_PORT", server.port.to_string())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3 -m pytest");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(output.status.success(), "pytest tests/python_pgvector failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("12 passed"), "not every pgvector adapter test ran:\n{stdout}");
}
