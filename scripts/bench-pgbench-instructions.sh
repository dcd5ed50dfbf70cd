#!/usr/bin/env bash
# Server instructions per pgbench select-only transaction (valgrind callgrind), for A/B
# comparisons of tierdb binaries on a noisy machine (instruction counts repeat run to run).
# Initializes pgbench scale 1 with the first binary, then for each binary and each protocol
# mode starts `tierdb serve` under callgrind on a copy of that data, warms up with 300
# transactions, and counts TRANSACTIONS more (one client).
#
#   scripts/bench-pgbench-instructions.sh OLD_BINARY NEW_BINARY
#   MODES="simple" TRANSACTIONS=5000 scripts/bench-pgbench-instructions.sh target/release/tierdb
#
# Needs valgrind, pgbench and psql (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
MODES="${MODES:-simple prepared}"
TRANSACTIONS="${TRANSACTIONS:-2000}"
PORT="${PORT:-55520}"
[[ $# -ge 1 ]] || { echo "usage: $0 BINARY [BINARY...]" >&2; exit 2; }
for tool in valgrind callgrind_control pgbench "$@"; do
    command -v "$tool" >/dev/null || { echo "bench-pgbench-instructions: missing $tool" >&2; exit 1; }
done
work="$(mktemp -d)"
cleanup() { pkill -f -- "--data-dir $work/" 2>/dev/null || true; sleep 1; rm -rf "$work"; }
trap cleanup EXIT
export PGHOST=127.0.0.1 PGPORT="$PORT" PGUSER=tierdb

wait_listening() {
    for _ in $(seq 1 300); do grep -q "listening on" "$1" 2>/dev/null && return 0; sleep 0.5; done
    cat "$1" >&2; return 1
}

"$1" serve --data-dir "$work/seed" --listen "127.0.0.1:$PORT" --metrics-listen "" > "$work/seed.log" 2>&1 &
seed_pid=$!
wait_listening "$work/seed.log"
pgbench -i -s 1 -q tierdb > /dev/null 2>&1
kill -TERM "$seed_pid"; wait "$seed_pid" || true

echo "bench-pgbench-instructions: server instructions per pgbench -S transaction ($TRANSACTIONS, after 300 to warm up)"
for index in $(seq 1 $#); do
    binary="${!index}"
    for mode in $MODES; do
        data="$work/data-$index-$mode"
        cp -a "$work/seed" "$data"
        valgrind --tool=callgrind --callgrind-out-file="$work/cg-$index-$mode.%p" \
            "$binary" serve --data-dir "$data" --listen "127.0.0.1:$PORT" --metrics-listen "" \
            > "$work/cg-$index-$mode.log" 2>&1 &
        server=$!
        wait_listening "$work/cg-$index-$mode.log"
        pgbench -S -n -t 300 -M "$mode" tierdb > /dev/null 2>&1
        sleep 3
        callgrind_control -d "$server" > /dev/null 2>&1; sleep 1
        pgbench -S -n -t "$TRANSACTIONS" -M "$mode" tierdb > /dev/null 2>&1
        callgrind_control -d "$server" > /dev/null 2>&1; sleep 1
        dump="$(ls -t "$work/cg-$index-$mode.$server".* | head -1)"
        total="$(awk '/^totals:/ {print $2}' "$dump")"
        printf "%-10s %12d  %s\n" "$mode" "$((total / TRANSACTIONS))" "$binary"
        kill -TERM "$server"; wait "$server" || true
    done
done
