#!/usr/bin/env bash
# Scans of a table several times the buffer pool (issue 12, read-ahead): SELECT count(*) and
# a GROUP BY over a ROWS-row table (about 4x a 64 MB pool at ROWS=2000000), tierdb and
# PostgreSQL 15 side by side in one run, the same memory for pages (tierdb's --buffer-pool =
# PostgreSQL's shared_buffers = POOL_MB). Up to two tierdb binaries (BEFORE_BIN, AFTER_BIN:
# e.g. main and a branch), each with its own copy of the data. REPS runs per query,
# alternating between the servers; medians and ratios to PostgreSQL. The OS page cache is
# not dropped (the machine is shared): PostgreSQL and tierdb's volume reads are served from
# it, tierdb's tier reads are direct I/O.
#
#   AFTER_BIN=target/release/tierdb scripts/bench-scan.sh
#   BEFORE_BIN=/tmp/tierdb-main AFTER_BIN=target/release/tierdb ROWS=2000000 REPS=5 \
#       PORT_BASE=55493 PG_PORT=55492 scripts/bench-scan.sh
#
# Needs: PostgreSQL 15 server binaries, python3 with psycopg, release builds of tierdb.
set -euo pipefail
cd "$(dirname "$0")/.."
export ROWS="${ROWS:-2000000}"
export REPS="${REPS:-5}"
POOL_MB="${POOL_MB:-64}"
port_base="${PORT_BASE:-55462}"
pg_port="${PG_PORT:-55461}"
pgbin=/usr/lib/postgresql/15/bin
python3 -c "import psycopg" || { echo "bench-scan: python3 needs psycopg" >&2; exit 1; }
work="$(mktemp -d)"
chmod 755 "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    if [[ -d "$work/pg" ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast >/dev/null 2>&1 || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

systems=""
port="$port_base"
for name in before after; do
    var="${name^^}_BIN"
    binary="${!var:-}"
    [[ -z "$binary" ]] && continue
    "$binary" serve --data-dir "$work/$name" --listen "127.0.0.1:$port" --metrics-listen "" \
        --buffer-pool "${POOL_MB}MB" > "$work/$name.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 200); do grep -q "listening on" "$work/$name.log" 2>/dev/null && break; sleep 0.1; done
    grep -q "listening on" "$work/$name.log" || { cat "$work/$name.log"; exit 1; }
    systems="$systems tierdb-$name=$port"
    port=$((port + 1))
done
mkdir -p "$work/pg" && chown postgres "$work/pg"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust --locale=C.UTF-8 > /dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" \
    -o "-p $pg_port -k $work/pg -c listen_addresses=127.0.0.1 -c shared_buffers=${POOL_MB}MB" start > /dev/null
echo "bench-scan: rows=$ROWS reps=$REPS pool=shared_buffers=${POOL_MB}MB $(nproc) cores; servers:$systems postgres=$pg_port"
SYSTEMS="$systems postgres=$pg_port" python3 scripts/bench-scan.py
