#!/usr/bin/env bash
# Builds the fuzz targets in fuzz/ with libFuzzer's coverage instrumentation (the flags
# `cargo fuzz build --sanitizer none` passes, on the stable toolchain) and runs each one.
#
#   scripts/fuzz.sh                    every target for FUZZ_SECONDS (20) seconds: CI's smoke run
#   FUZZ_SECONDS=3600 scripts/fuzz.sh frontend_messages   one target for an hour
#
# A crash leaves its input in fuzz/artifacts/TARGET/ and fails the script. The corpus
# grows in fuzz/corpus/TARGET/ (not committed). With cargo-fuzz installed, `cargo fuzz run
# -s none TARGET` runs the same targets.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-20}"
targets=("$@")
if ((${#targets[@]} == 0)); then
    targets=(frontend_messages sql_parse_bind page_image btree_node wal_records wal_record_body segment_index manifest)
fi

export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$PWD/target}"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions"
triple="$(rustc -vV | sed -n 's/^host: //p')"
bins=()
for target in "${targets[@]}"; do bins+=(--bin "$target"); done
cargo build --release --target "$triple" "${bins[@]}"

for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "artifacts/$target"
    echo "fuzz: $target for ${seconds}s" >&2
    "$CARGO_TARGET_DIR/$triple/release/$target" -max_total_time="$seconds" \
        -rss_limit_mb=4096 -max_len=16384 -artifact_prefix="artifacts/$target/" "corpus/$target" 2>"artifacts/$target.log" \
        || { tail -40 "artifacts/$target.log" >&2; echo "fuzz: $target failed" >&2; exit 1; }
    grep -E "^(#[0-9]+\s+DONE|Done)" "artifacts/$target.log" | tail -1 >&2 || true
done
echo "fuzz: ${#targets[@]} targets ran ${seconds}s each without a crash" >&2
