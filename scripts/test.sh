#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what the tests need, checks formatting
# and lints, runs every test (release build: the crash and property tests do real work), a
# short run of every fuzz target (scripts/fuzz.sh), then the real OLTP tools (sysbench and
# pgbench) against `tierdb serve` (scripts/oltp-check.sh).
#
#   scripts/test.sh             the normal suite (50 SIGKILL crash cycles, 10 s OLTP runs)
#   TIERDB_SOAK=1 scripts/test.sh   the long soak (500 crash cycles, 60 s OLTP runs)
#   OLTP_SECONDS=10 scripts/test.sh  other sysbench/pgbench run lengths
#
# Each phase prints its wall time (`test.sh: PHASE took N s`): CI must stay under 45 minutes,
# and these lines show where the time goes. Most of the test phase is building, not running:
# hence one test binary per crate, tests/integration.rs (ARCHITECTURE.md, "Tests";
# docs/BENCHMARKS.md, "CI time", has the figures).
set -euo pipefail
cd "$(dirname "$0")/.."

suite_start_s=$SECONDS
phase() {
    local name="$1"
    shift
    local start_s=$SECONDS
    "$@"
    echo "test.sh: $name took $((SECONDS - start_s)) s (suite at $((SECONDS - suite_start_s)) s)" >&2
}

eval "$(scripts/install-deps.sh)"
echo "test.sh: install-deps took $((SECONDS - suite_start_s)) s" >&2
if [[ "${TIERDB_SOAK:-0}" == "1" ]]; then
    export TIERDB_CRASH_CYCLES="${TIERDB_CRASH_CYCLES:-500}"
    export OLTP_SECONDS="${OLTP_SECONDS:-60}"
fi
# The OLTP runs check that the real tools run clean and the balances stay consistent; their
# throughput figures are benchmarks (docs/BENCHMARKS.md), so the normal suite keeps them short:
# 10 s each (11 runs; 20 s until CI neared its 45-minute limit, docs/BENCHMARKS.md "CI time").
export OLTP_SECONDS="${OLTP_SECONDS:-10}"

phase fmt cargo fmt --all -- --check
phase clippy cargo clippy --workspace --all-features --all-targets --release -- -D warnings
# The integration tests run target/release/tierdb, which cargo test builds; oltp-check.sh
# runs that same binary (and fails loudly if it is missing). A separate `cargo build -p
# tierdb` would build everything again without the tests' dev-dependency features (271 s).
phase test cargo test --workspace --all-features --release
# The fuzz targets (fuzz/), 20 s each: the frontend decoder, SQL parse and bind, and the
# page, node, segment, manifest and WAL decoders must not panic on any input.
phase fuzz scripts/fuzz.sh
phase oltp-check scripts/oltp-check.sh
