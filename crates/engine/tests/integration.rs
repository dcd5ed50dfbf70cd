//! Most of tierdb-engine's integration tests: one module per file of tests/, all in one test
//! binary. Each test binary links every dependency, so one binary instead of one per file
//! makes CI's build shorter (docs/BENCHMARKS.md, "CI time"). Cargo.toml sets `autotests =
//! false` and names the files that stay binaries of their own; crates/cli/tests/test_targets.rs
//! fails if a file of tests/ is in neither. One file's tests:
//! `cargo test --release -p tierdb-engine --test integration FILE::`.

mod bulk_insert;
mod column_layout;
mod concurrent_model;
mod ddl;
mod dropped_pages;
mod indexes;
mod ivfflat_indexes;
mod numeric;
mod on_conflict;
mod purge;
mod row_locks;
mod statements;
mod transactions;
mod vector_check;
mod vector_indexes;
mod vector_partial;
