#!/usr/bin/env bash
# Executor cost as instructions per query (valgrind callgrind), for A/B comparisons of
# tierdb binaries on a noisy machine: instruction counts repeat run to run whatever else
# the machine does, wall time does not. Loads two ROWS-row tables (the bench-spill shape:
# id bigint primary key, k, g bigint, s md5 text, pad 40-byte text) with the first binary,
# then for each binary starts `tierdb serve` under callgrind on a copy of that data and
# counts each query's instructions (server side, all threads, after a warm-up run of every
# query, work_mem 1GB so nothing spills). Prints one column per binary and the ratio last/first.
#
#   scripts/bench-executor-instructions.sh OLD_BINARY NEW_BINARY
#   ROWS=100000 scripts/bench-executor-instructions.sh target/release/tierdb
#
# Needs valgrind and psql (scripts/install-deps.sh). About a minute per binary at 100k rows.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-100000}"
PORT="${PORT:-55510}"
[[ $# -ge 1 ]] || { echo "usage: $0 BINARY [BINARY...]" >&2; exit 2; }
for tool in valgrind callgrind_control psql "$@"; do
    command -v "$tool" >/dev/null || { echo "bench-executor-instructions: missing $tool" >&2; exit 1; }
done
work="$(mktemp -d)"
cleanup() { pkill -f -- "--data-dir $work/" 2>/dev/null || true; sleep 1; rm -rf "$work"; }
trap cleanup EXIT
export PGHOST=127.0.0.1 PGPORT="$PORT" PGUSER=tierdb PGDATABASE=tierdb
QUERIES=(
    "SELECT * FROM t ORDER BY s OFFSET $((ROWS - 1))"
    "SELECT count(*) FROM (SELECT g, count(*), sum(k) FROM t GROUP BY g) x"
    "SELECT count(DISTINCT k) FROM t"
    "SELECT count(*) FROM t JOIN t2 ON t.k = t2.k"
    "SELECT count(*) FROM (SELECT k FROM t EXCEPT SELECT k FROM t2) x"
    "SELECT count(*) FROM t"
    "SELECT sum(k) FROM t WHERE g < $((ROWS / 4))"
)

wait_listening() {
    for _ in $(seq 1 300); do grep -q "listening on" "$1" 2>/dev/null && return 0; sleep 0.5; done
    cat "$1" >&2; return 1
}

"$1" serve --data-dir "$work/seed" --listen "127.0.0.1:$PORT" --metrics-listen "" \
    --buffer-pool 256MB --tier-size 1GB > "$work/seed.log" 2>&1 &
seed_pid=$!
wait_listening "$work/seed.log"
for table in t t2; do
    psql -q -c "CREATE TABLE $table (id bigint PRIMARY KEY, k bigint, g bigint, s text, pad text)" \
        -c "INSERT INTO $table SELECT i, (i::bigint * 7919 + length('$table')) % $ROWS, i % $((ROWS / 2)), md5(i::text), repeat('x', 40) FROM generate_series(1, $ROWS) i"
done
psql -q -c VACUUM
kill -TERM "$seed_pid"; wait "$seed_pid" || true

declare -A counts
for index in $(seq 1 $#); do
    binary="${!index}"
    data="$work/data$index"
    cp -a "$work/seed" "$data"
    valgrind --tool=callgrind --callgrind-out-file="$work/cg$index.%p" \
        "$binary" serve --data-dir "$data" --listen "127.0.0.1:$PORT" --metrics-listen "" \
        --buffer-pool 256MB --tier-size 1GB > "$work/cg$index.log" 2>&1 &
    server=$!
    wait_listening "$work/cg$index.log"
    # Warm up: every page in the buffer pool, start-up work of the background threads done.
    for query in "${QUERIES[@]}"; do psql -qAt -c "SET work_mem = '1GB'" -c "$query" > /dev/null; done
    sleep 5
    for query_index in "${!QUERIES[@]}"; do
        query="${QUERIES[$query_index]}"
        psql -qAt -c "SET work_mem = '1GB'" -c "$query" > /dev/null
        callgrind_control -d "$server" > /dev/null 2>&1; sleep 1
        psql -qAt -c "SET work_mem = '1GB'" -c "$query" > /dev/null
        callgrind_control -d "$server" > /dev/null 2>&1; sleep 1
        dump="$(ls -t "$work/cg$index.$server".* | head -1)"
        counts[$index,$query_index]="$(awk '/^totals:/ {print $2}' "$dump")"
    done
    kill -TERM "$server"; wait "$server" || true
done

echo "bench-executor-instructions: rows=$ROWS, server instructions per query (callgrind)"
printf "%-76s" "query"; for index in $(seq 1 $#); do printf " %14s" "binary$index"; done; printf " %8s\n" "last/1st"
for query_index in "${!QUERIES[@]}"; do
    printf "%-76s" "${QUERIES[$query_index]:0:76}"
    for index in $(seq 1 $#); do printf " %14s" "${counts[$index,$query_index]}"; done
    awk -v a="${counts[1,$query_index]}" -v b="${counts[$#,$query_index]}" 'BEGIN { printf " %8.2f\n", b / a }'
done
for index in $(seq 1 $#); do echo "binary$index: ${!index}"; done
