//! Test certificates made with openssl: a CA and a server certificate it signed. openssl
//! is required: a missing tool fails the test, it never passes silently.

use std::path::Path;
use std::process::{Command, Output};

pub fn run(program: &str, arguments: &[&str]) -> Output {
    Command::new(program).args(arguments).output().unwrap_or_else(|error| {
        panic!("{program} is required by this test (scripts/install-deps.sh installs it): {error}")
    })
}

pub fn run_ok(program: &str, arguments: &[&str]) -> String {
    let output = run(program, arguments);
    assert!(
        output.status.success(),
        "{program} {arguments:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A CA, and a certificate for localhost / 127.0.0.1 that it signed, in `directory`.
pub fn make_certificates(directory: &Path, ca_name: &str) {
    let path = |name: &str| directory.join(name).to_str().expect("utf-8 path").to_string();
    let subject = format!("/CN={ca_name}");
    run_ok(
        "openssl",
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &subject,
            "-keyout",
            &path("ca.key"),
            "-out",
            &path("ca.crt"),
        ],
    );
    run_ok(
        "openssl",
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            &path("server.key"),
            "-out",
            &path("server.csr"),
        ],
    );
    std::fs::write(directory.join("san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        .expect("write extensions");
    run_ok(
        "openssl",
        &[
            "x509",
            "-req",
            "-days",
            "2",
            "-in",
            &path("server.csr"),
            "-CA",
            &path("ca.crt"),
            "-CAkey",
            &path("ca.key"),
            "-CAcreateserial",
            "-extfile",
            &path("san.ext"),
            "-out",
            &path("server.crt"),
        ],
    );
}

/// The serve flags for the certificate and key make_certificates wrote in `directory`.
pub fn tls_flags(directory: &Path) -> [String; 4] {
    let path = |name: &str| directory.join(name).to_str().expect("utf-8 path").to_string();
    ["--tls-cert-file".into(), path("server.crt"), "--tls-key-file".into(), path("server.key")]
}
