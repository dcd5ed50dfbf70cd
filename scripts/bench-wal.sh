#!/usr/bin/env bash
# WAL bytes per transaction, tierdb against PostgreSQL 15, side by side in one run (issue 13).
#
#   SECONDS_PER_RUN=20 scripts/bench-wal.sh                 the current release build
#   TIERDB_BIN=/tmp/tierdb-before scripts/bench-wal.sh      another binary
#
# For each of sysbench oltp_read_write, oltp_write_only, oltp_update_index and oltp_insert
# (THREADS threads, SECONDS_PER_RUN seconds, TABLES x TABLE_SIZE rows prepared once per
# system) it reads the WAL position before and after the run: PostgreSQL's
# pg_current_wal_lsn() difference, tierdb's `tierdb_wal_bytes_total` from /metrics (record
# framing and padding included, as PostgreSQL's figure includes its record headers).
# Prints WAL bytes per transaction for both, tierdb / PostgreSQL, and TPS.
# Both durable (fsync on), same memory budget (BUDGET_MB). PostgreSQL has full_page_writes on
# (its default): its figure includes the full-page images a checkpoint causes, and a run this
# short usually sees none after the first ones, so it is PostgreSQL's best case.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN="${SECONDS_PER_RUN:-20}"
THREADS="${THREADS:-8}"
BUDGET_MB="${BUDGET_MB:-256}"
TABLES="${TABLES:-4}"
TABLE_SIZE="${TABLE_SIZE:-10000}"
SCRIPTS="${SCRIPTS:-oltp_read_write oltp_write_only oltp_update_index oltp_insert}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
pgbin=/usr/lib/postgresql/15/bin
for tool in sysbench curl psql "$pgbin/postgres" "$binary"; do
    command -v "$tool" >/dev/null || { echo "bench-wal: missing $tool (scripts/install-deps.sh; cargo build --release -p tierdb)" >&2; exit 1; }
done
work="$(mktemp -d)"
chmod 755 "$work"
server=""
cleanup() {
    if [[ -n "$server" ]]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    if [[ -d "$work/pg" ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# PORT_BASE picks three ports (tierdb, its metrics, PostgreSQL); random by default.
tierdb_port="${PORT_BASE:-$((30000 + RANDOM % 10000))}"
metrics_port=$((tierdb_port + 1))
pg_port=$((tierdb_port + 2))

sysbench_args() { # port user database
    echo "--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$1 --pgsql-user=$2 --pgsql-db=$3 --tables=$TABLES --table-size=$TABLE_SIZE"
}
# WAL position in bytes.
pg_wal_bytes() {
    psql -X -A -t -h 127.0.0.1 -p "$pg_port" -U postgres -d sb -c "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"
}
tierdb_wal_bytes() {
    curl -s "http://127.0.0.1:$metrics_port/metrics" | awk '$1 == "tierdb_wal_bytes_total" { print $2 }'
}
# Runs one script; prints "transactions tps".
run_script() { # port user database script
    local log="$work/run.log"
    # shellcheck disable=SC2046
    sysbench $(sysbench_args "$1" "$2" "$3") --threads="$THREADS" --time="$SECONDS_PER_RUN" --report-interval=0 "$4" run > "$log" 2>&1 \
        || { cat "$log"; echo "bench-wal: sysbench $4 failed" >&2; exit 1; }
    if grep -q FATAL "$log"; then cat "$log"; echo "bench-wal: sysbench $4 reported FATAL" >&2; exit 1; fi
    grep -E 'transactions:' "$log" | sed -E 's/ *transactions: *([0-9]+) *\(([0-9.]+) per sec.\)/\1 \2/'
}
measure() { # system script
    local before after count tps
    before="$("$1"_wal_bytes)"
    if [[ "$1" == pg ]]; then read -r count tps < <(run_script "$pg_port" postgres sb "$2")
    else read -r count tps < <(run_script "$tierdb_port" tierdb tierdb "$2"); fi
    after="$("$1"_wal_bytes)"
    echo "$1 $2 $(( (after - before) / count )) $tps" | tee -a "$work/results.txt"
}

echo "== PostgreSQL 15 and tierdb ($binary): $TABLES x $TABLE_SIZE rows, $THREADS threads, ${SECONDS_PER_RUN}s per script"
mkdir -p "$work/pg" "$work/pg-socket" && chown postgres "$work/pg" "$work/pg-socket"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust --locale=C.UTF-8 > /dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" -o "-p $pg_port -k $work/pg-socket -c listen_addresses=127.0.0.1 -c shared_buffers=${BUDGET_MB}MB -c max_connections=200" start > /dev/null
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -c "CREATE DATABASE sb" postgres
# shellcheck disable=SC2046
sysbench $(sysbench_args "$pg_port" postgres sb) oltp_read_write prepare > "$work/prepare.log" 2>&1 || { cat "$work/prepare.log"; exit 1; }
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -d sb -c "CHECKPOINT"

"$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$tierdb_port" --metrics-listen "127.0.0.1:$metrics_port" \
    --buffer-pool "${BUDGET_MB}MB" --tier-size 1GB > "$work/tierdb.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/tierdb.log" && break; sleep 0.1; done
# shellcheck disable=SC2046
sysbench $(sysbench_args "$tierdb_port" tierdb tierdb) oltp_read_write prepare > "$work/prepare.log" 2>&1 || { cat "$work/prepare.log"; exit 1; }

for script in $SCRIPTS; do
    measure pg "$script"
    measure tierdb "$script"
done

echo
echo "| sysbench script | PostgreSQL 15 WAL B/txn | tierdb WAL B/txn | tierdb / PostgreSQL | PostgreSQL TPS | tierdb TPS |"
echo "|---|---:|---:|---:|---:|---:|"
for script in $SCRIPTS; do
    read -r _ _ pg_bytes pg_tps < <(grep "^pg $script " "$work/results.txt")
    read -r _ _ tierdb_bytes tierdb_tps < <(grep "^tierdb $script " "$work/results.txt")
    ratio="$(awk -v a="$tierdb_bytes" -v b="$pg_bytes" 'BEGIN { printf "%.2f", a / b }')"
    echo "| $script | $pg_bytes | $tierdb_bytes | $ratio | $pg_tps | $tierdb_tps |"
done
