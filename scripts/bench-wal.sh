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
# shellcheck source=lib/side-by-side.sh
source scripts/lib/side-by-side.sh
side_by_side_init bench-wal sysbench

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
start_postgres
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -c "CREATE DATABASE sb" postgres
# shellcheck disable=SC2046
sysbench $(sysbench_args "$pg_port" postgres sb) oltp_read_write prepare > "$work/prepare.log" 2>&1 || { cat "$work/prepare.log"; exit 1; }
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -d sb -c "CHECKPOINT"

start_tierdb
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
