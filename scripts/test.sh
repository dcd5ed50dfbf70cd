#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need, checks formatting
# and lints, runs every test (release build: the crash and property tests do real work), a
# short run of every fuzz target (scripts/fuzz.sh), then the real OLTP tools (sysbench and
# pgbench) against `tierdb serve` (scripts/oltp-check.sh).
#
#   scripts/test.sh             the normal suite (50 SIGKILL crash cycles)
#   TIERDB_SOAK=1 scripts/test.sh   the long soak (500 crash cycles)
#   OLTP_SECONDS=10 scripts/test.sh  shorter sysbench/pgbench runs (default 60 s each)
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(scripts/install-deps.sh)"
if [[ "${TIERDB_SOAK:-0}" == "1" ]]; then
    export TIERDB_CRASH_CYCLES="${TIERDB_CRASH_CYCLES:-500}"
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-features --all-targets --release -- -D warnings
cargo test --workspace --all-features --release
cargo build --release -p tierdb
# The fuzz targets (fuzz/), 20 s each: the frontend decoder, SQL parse and bind, and the
# page, node, segment, manifest and WAL decoders must not panic on any input.
scripts/fuzz.sh
scripts/oltp-check.sh
