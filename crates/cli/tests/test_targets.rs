//! Every file of a crate's tests/ is compiled into a test binary. The crates that fold their
//! test files into one binary (tests/integration.rs, one module per file) set `autotests =
//! false` in Cargo.toml, so cargo no longer finds a new tests/*.rs by itself: without this
//! check, a file added beside the others but declared nowhere would silently never run.

use std::path::{Path, PathBuf};

/// Fewer files than this means the walk looked in the wrong place (CI ran about 100).
const TEST_FILES_MIN: usize = 50;

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn rust_files(directory: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(directory).expect("readable tests directory");
    let paths = entries.map(|entry| entry.expect("directory entry").path());
    paths.filter(|path| path.extension().is_some_and(|extension| extension == "rs")).collect()
}

#[test]
fn every_test_file_is_in_a_test_binary() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut test_files_count = 0;
    for entry in std::fs::read_dir(&crates).expect("crates/") {
        let crate_directory = entry.expect("directory entry").path();
        let tests = crate_directory.join("tests");
        if !tests.is_dir() {
            continue;
        }
        let manifest = read(&crate_directory.join("Cargo.toml"));
        let automatic = !manifest.lines().any(|line| line.trim() == "autotests = false");
        let integration = tests.join("integration.rs");
        let modules = if automatic { String::new() } else { read(&integration) };
        for file in rust_files(&tests) {
            test_files_count += 1;
            let stem = file.file_stem().and_then(|stem| stem.to_str()).expect("UTF-8 name");
            let declaration = format!("mod {stem};");
            let module = modules.lines().any(|line| line == declaration);
            let own_binary = manifest.contains(&format!("path = \"tests/{stem}.rs\""));
            assert!(
                automatic || module || own_binary,
                "{} is in no test binary: add `mod {stem};` to {} or a [[test]] to {}",
                file.display(),
                integration.display(),
                crate_directory.join("Cargo.toml").display(),
            );
        }
    }
    assert!(test_files_count >= TEST_FILES_MIN, "found only {test_files_count} test files");
}
