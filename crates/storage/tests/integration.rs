//! Most of tierdb-storage's integration tests: one module per file of tests/, all in one test
//! binary. Each test binary links every dependency, so one binary instead of one per file
//! makes CI's build shorter (docs/BENCHMARKS.md, "CI time"). Cargo.toml sets `autotests =
//! false` and names the files that stay binaries of their own; crates/cli/tests/test_targets.rs
//! fails if a file of tests/ is in neither. One file's tests:
//! `cargo test --release -p tierdb-storage --test integration FILE::`.

mod common;

mod capacity_controller;
mod resize;
mod s3_store;
mod store_basic;
mod store_free;
mod temp;
mod volume_conformance;
