#!/usr/bin/env bash
# Queries larger than memory, tierdb and PostgreSQL 15 side by side in one run (issue 12):
# ORDER BY without LIMIT, GROUP BY with ROWS/2 groups, COUNT(DISTINCT), a hash join of two
# ROWS-row tables on a non-key column, EXCEPT, CREATE INDEX, and a read of every row through
# a server-side cursor; at each work_mem of WORK_MEMS (same for both systems) and, for the
# no-cliff check, at ENOUGH_WORK_MEM (everything in memory). REPS runs per cell,
# alternating between the systems; medians and ratios; tierdb's peak RSS per query.
#
#   ROWS=10000000 REPS=3 scripts/bench-spill.sh     # the issue's size (about 1 GB a table)
#   ROWS=1000000 REPS=1 scripts/bench-spill.sh      # a quick look
#   TIERDB_PORT=55452 PG_PORT=55453 ...             # other ports than 55442 and 55443
#
# Needs: PostgreSQL 15 server binaries, python3 with psycopg (scripts/install-deps.sh), and
# a release build (cargo build --release -p tierdb).
set -euo pipefail
cd "$(dirname "$0")/.."
export ROWS="${ROWS:-10000000}"
export REPS="${REPS:-3}"
export WORK_MEMS="${WORK_MEMS:-4MB 64MB}"
export ENOUGH_WORK_MEM="${ENOUGH_WORK_MEM:-8GB}"
BUDGET_MB="${BUDGET_MB:-256}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
pgbin=/usr/lib/postgresql/15/bin
for tool in "$pgbin/postgres" "$binary" python3; do
    command -v "$tool" >/dev/null || { echo "bench-spill: missing $tool" >&2; exit 1; }
done
python3 -c "import psycopg" || { echo "bench-spill: python3 needs psycopg (pip install psycopg[binary])" >&2; exit 1; }
work="$(mktemp -d)"
chmod 755 "$work"
tierdb_pid=""
cleanup() {
    if [[ -n "$tierdb_pid" ]]; then kill -TERM "$tierdb_pid" 2>/dev/null || true; fi
    if [[ -d "$work/pg" ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast >/dev/null 2>&1 || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Ports of the two servers (override to keep clear of other servers on the machine).
tierdb_port="${TIERDB_PORT:-55442}"
pg_port="${PG_PORT:-55443}"
# Same memory for pages: tierdb's buffer pool = PostgreSQL's shared_buffers; both fsync.
# PostgreSQL keeps its defaults otherwise (parallel query on: up to 2 workers per query).
"$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$tierdb_port" --metrics-listen "" \
    --buffer-pool "${BUDGET_MB}MB" --tier-size 4GB --operator-memory 16GB > "$work/tierdb.log" 2>&1 &
tierdb_pid=$!
for _ in $(seq 1 200); do grep -q "listening on" "$work/tierdb.log" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$work/tierdb.log" || { cat "$work/tierdb.log"; exit 1; }
mkdir -p "$work/pg" && chown postgres "$work/pg"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust --locale=C.UTF-8 > /dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" \
    -o "-p $pg_port -k $work/pg -c listen_addresses=127.0.0.1 -c shared_buffers=${BUDGET_MB}MB" start > /dev/null
echo "bench-spill: rows=$ROWS reps=$REPS work_mem=[$WORK_MEMS] enough=$ENOUGH_WORK_MEM pool=shared_buffers=${BUDGET_MB}MB $(nproc) cores"
TIERDB_PID="$tierdb_pid" TIERDB_PORT="$tierdb_port" PG_PORT="$pg_port" python3 scripts/bench-spill.py
