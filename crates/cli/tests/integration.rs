//! Most of tierdb's integration tests: one module per file of tests/, all in one test
//! binary. Each test binary links every dependency, so one binary instead of one per file
//! makes CI's build shorter (docs/BENCHMARKS.md, "CI time"). Cargo.toml sets `autotests =
//! false` and names the files that stay binaries of their own; crates/cli/tests/test_targets.rs
//! fails if a file of tests/ is in neither. One file's tests:
//! `cargo test --release -p tierdb --test integration FILE::`.

mod server_support;
mod slt_support;
mod wire_support;

mod adversarial_depth;
mod adversarial_disk;
mod adversarial_locks;
mod adversarial_wire;
mod clients_node;
mod clients_pgvector;
mod clients_python;
mod clients_rust;
mod copy_binary;
mod cursors;
mod dashboard;
mod elastic;
mod hba;
mod hnsw_index;
mod index_build;
mod observability;
mod pg_dump;
mod psql;
mod roles;
mod server_s3;
mod server_smoke;
mod slt_vector;
mod spill;
mod streaming;
mod test_targets;
mod tls;
mod upsert;
