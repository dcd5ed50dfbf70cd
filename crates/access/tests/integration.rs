//! Most of tierdb-access's integration tests: one module per file of tests/, all in one test
//! binary. Each test binary links every dependency, so one binary instead of one per file
//! makes CI's build shorter (docs/BENCHMARKS.md, "CI time"). Cargo.toml sets `autotests =
//! false` and names the files that stay binaries of their own; crates/cli/tests/test_targets.rs
//! fails if a file of tests/ is in neither. One file's tests:
//! `cargo test --release -p tierdb-access --test integration FILE::`.

mod btree_destroy;
mod compaction_redo;
mod key_order;
mod node_model;
mod sort;
