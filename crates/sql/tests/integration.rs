//! Most of tierdb-sql's integration tests: one module per file of tests/, all in one test
//! binary. Each test binary links every dependency, so one binary instead of one per file
//! makes CI's build shorter (docs/BENCHMARKS.md, "CI time"). Cargo.toml sets `autotests =
//! false` and names the files that stay binaries of their own; crates/cli/tests/test_targets.rs
//! fails if a file of tests/ is in neither. One file's tests:
//! `cargo test --release -p tierdb-sql --test integration FILE::`.

mod support;

mod add_drop_column;
mod binder;
mod bit_index;
mod bulk_loads;
mod checks;
mod decorrelation;
mod dropped_pages;
mod foreign_keys;
mod functions;
mod group_keys;
mod halfvec;
mod ivfflat;
mod modifying_with;
mod partial_indexes;
mod planner;
mod pruning;
mod recursive;
mod role_differences;
mod roles;
mod schemas;
mod statistics;
mod system_views;
mod temp_tables;
mod transactional_ddl;
mod update_from;
mod vector;
mod vector_check;
mod vector_partial;
mod views;
