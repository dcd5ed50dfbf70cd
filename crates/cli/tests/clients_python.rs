//! Runs the psycopg 3, SQLAlchemy 2 (psycopg 3 and psycopg2 dialects), Alembic, pandas and
//! asyncpg tests (`tests/python`, pytest) against a real `tierdb serve`.
//!
//! Needs python3 with pytest, psycopg 3, psycopg2, SQLAlchemy 2, Alembic, asyncpg and pandas
//! (`pip install pytest 'psycopg[binary]' psycopg2-binary sqlalchemy alembic asyncpg pandas`,
//! scripts/install-deps.sh);
//! when they are missing the test fails and says so: it never passes without running them.

use crate::server_support;

use std::path::PathBuf;
use std::process::Command;

use server_support::TestServer;

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("..")
}

/// Checks that python3, pytest and psycopg 3 are importable; panics with what is missing.
fn require_python() {
    let version = Command::new("python3").arg("--version").output();
    match version {
        Ok(output) if output.status.success() => {}
        Ok(output) => panic!(
            "python3 --version failed ({}): {}; the psycopg client tests need python3 \
             with pytest and psycopg 3",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => panic!(
            "python3 not found ({error}); the psycopg client tests need python3 with pytest \
             and psycopg 3 (pip install pytest 'psycopg[binary]')"
        ),
    }
    let modules = [
        ("pytest", "pytest"),
        ("psycopg", "'psycopg[binary]'"),
        ("psycopg2", "psycopg2-binary"),
        ("sqlalchemy", "sqlalchemy"),
        ("alembic", "alembic"),
        ("asyncpg", "asyncpg"),
        ("pandas", "pandas"),
    ];
    for (module, install) in modules {
        let output = Command::new("python3")
            .args(["-c", &format!("import {module}; print({module}.__version__)")])
            .output()
            .expect("run python3");
        assert!(
            output.status.success(),
            "python3 cannot import {module}: {}\ninstall it: python3 -m pip install {install}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        if module == "psycopg" {
            let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
            assert!(version.starts_with('3'), "psycopg {version} is installed; the tests need 3.x");
        }
        if module == "sqlalchemy" {
            let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
            assert!(
                version.starts_with('2'),
                "SQLAlchemy {version} is installed; the tests need 2.x"
            );
        }
    }
}

#[test]
fn psycopg_tests_pass() {
    require_python();
    let root = workspace_root();
    let tests = root.join("tests").join("python");
    for file in [
        "test_psycopg.py",
        "test_sqlalchemy.py",
        "test_alembic.py",
        "test_pandas.py",
        "test_asyncpg.py",
    ] {
        assert!(tests.join(file).is_file(), "missing {file} in {}", tests.display());
    }
    let server = TestServer::start(&[]);
    let output = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", "tests/python"])
        .current_dir(&root)
        .env("TIERDB_PORT", server.port.to_string())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3 -m pytest");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(
        output.status.success(),
        "pytest tests/python failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // pytest exits 5 when it collected nothing; make sure tests really ran.
    assert!(stdout.contains("passed"), "pytest ran no tests:\n{stdout}");
}
