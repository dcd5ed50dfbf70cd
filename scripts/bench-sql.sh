#!/usr/bin/env bash
# Side-by-side sysbench benchmark of tierdb and PostgreSQL 15 on this machine, in one run.
#
#   A. Data in memory, same memory budget (tierdb buffer pool = PostgreSQL shared_buffers =
#      BUDGET_MB), both durable (fsync on): oltp_point_select and oltp_read_write at 1, 8 and
#      32 threads; REPS runs of SECONDS each, alternating between the two systems run by run
#      (so that the machine's drift falls on both); median TPS and median p95 latency per cell.
#   B. Larger than memory on a remote volume: tierdb on MinIO (S3 over loopback), data about
#      8x the buffer pool (SMALL_POOL_MB), oltp_point_select at 8 threads with the local tier
#      on and off, against the same data in memory (pool large enough to hold it).
#   PARTS=A or PARTS=B runs one part only.
#
# Prints one line per run and a Markdown table of medians at the end (for docs/BENCHMARKS.md).
# Needs: sysbench, PostgreSQL 15 server binaries, MinIO (scripts/install-deps.sh), and a
# release build (cargo build --release -p tierdb).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN="${SECONDS_PER_RUN:-10}"
REPS="${REPS:-5}"
BUDGET_MB="${BUDGET_MB:-256}"
TABLES="${TABLES:-4}"
TABLE_SIZE="${TABLE_SIZE:-100000}"
BIG_TABLE_SIZE="${BIG_TABLE_SIZE:-250000}"
SMALL_POOL_MB="${SMALL_POOL_MB:-32}"
THREADS_LIST="${THREADS_LIST:-1 8 32}"
PARTS="${PARTS:-A B}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
pgbin=/usr/lib/postgresql/15/bin
eval "$(scripts/install-deps.sh)"
minio="${TIERDB_MINIO_BIN:?MinIO is needed for part B}"
for tool in sysbench "$pgbin/postgres" "$binary"; do
    command -v "$tool" >/dev/null || { echo "bench-sql: missing $tool" >&2; exit 1; }
done
work="$(mktemp -d)"
chmod 755 "$work"
results="$work/results.txt"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    if [[ -d "$work/pg" ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast >/dev/null 2>&1 || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# run_once LABEL PORT USER DB SCRIPT THREADS TABLE_SIZE REP
run_once() {
    local label=$1 port=$2 user=$3 db=$4 script=$5 threads=$6 size=$7 rep=$8
    local sb=(sysbench --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" --pgsql-user="$user" --pgsql-db="$db" --tables="$TABLES" --table-size="$size")
    "${sb[@]}" --threads="$threads" --time="$SECONDS_PER_RUN" --report-interval=0 "$script" run > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
    local tps p95
    tps="$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' "$work/run.log")"
    p95="$(awk '/95th percentile:/ {print $3}' "$work/run.log")"
    echo "$label $script threads=$threads rep=$rep tps=$tps p95_ms=$p95"
    echo "$label|$script|$threads|$tps|$p95" >> "$results"
}

# run_sysbench LABEL PORT USER DB SCRIPT THREADS TABLE_SIZE: REPS runs of one system.
run_sysbench() {
    for rep in $(seq 1 "$REPS"); do run_once "$@" "$rep"; done
}

start_tierdb() { # DATA_DIR PORT [extra flags...]
    local data=$1 port=$2; shift 2
    "$binary" serve --data-dir "$data" --listen "127.0.0.1:$port" --metrics-listen "" "$@" > "$data.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 200); do grep -q "listening on" "$data.log" 2>/dev/null && return 0; sleep 0.1; done
    cat "$data.log"; exit 1
}
stop_last() { local pid=${pids[-1]}; kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; unset 'pids[-1]'; }
prepare() { # PORT USER DB SIZE
    sysbench --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$1" --pgsql-user="$2" --pgsql-db="$3" --tables="$TABLES" --table-size="$4" --threads="$TABLES" oltp_read_write prepare > "$work/prepare.log" 2>&1 || { cat "$work/prepare.log"; exit 1; }
    # As pgbench does after loading: both systems start measured runs with the load's
    # maintenance done (PostgreSQL: visibility map and hint bits; tierdb: the purge pass
    # that a bulk load queues), instead of doing it during the first runs.
    psql -X -q -h 127.0.0.1 -p "$1" -U "$2" -d "$3" -c VACUUM
}

tierdb_port=$((30000 + RANDOM % 10000))
if [[ "$PARTS" == *A* ]]; then
echo "== part A: in memory, budget ${BUDGET_MB} MB, ${TABLES} tables x ${TABLE_SIZE} rows"
pg_port=$((tierdb_port + 10))
mkdir -p "$work/pg" "$work/pg-socket" && chown postgres "$work/pg" "$work/pg-socket"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust --locale=C.UTF-8 > /dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" -o "-p $pg_port -k $work/pg-socket -c listen_addresses=127.0.0.1 -c shared_buffers=${BUDGET_MB}MB -c max_connections=200" start > /dev/null
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -c "CREATE DATABASE sb" postgres
prepare "$pg_port" postgres sb "$TABLE_SIZE"
start_tierdb "$work/tierdb-a" "$tierdb_port" --buffer-pool "${BUDGET_MB}MB" --tier-size 1GB
prepare "$tierdb_port" tierdb tierdb "$TABLE_SIZE"
for script in oltp_point_select oltp_read_write; do
    for threads in $THREADS_LIST; do
        for rep in $(seq 1 "$REPS"); do
            run_once postgres "$pg_port" postgres sb "$script" "$threads" "$TABLE_SIZE" "$rep"
            run_once tierdb "$tierdb_port" tierdb tierdb "$script" "$threads" "$TABLE_SIZE" "$rep"
        done
    done
done
stop_last
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast > /dev/null
fi

if [[ "$PARTS" == *B* ]]; then
echo "== part B: ${TABLES} tables x ${BIG_TABLE_SIZE} rows on MinIO, buffer pool ${SMALL_POOL_MB} MB"
minio_port=$((tierdb_port + 20))
mkdir -p "$work/minio/tierdb"
MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=benchadmin-secret "$minio" server "$work/minio" --address "127.0.0.1:$minio_port" > "$work/minio.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -s "http://127.0.0.1:$minio_port/minio/health/live" > /dev/null && break; sleep 0.2; done
s3=(--volume s3://tierdb/bench --s3-endpoint "http://127.0.0.1:$minio_port" --s3-access-key-id benchadmin --s3-secret-access-key benchadmin-secret)
big="$work/tierdb-b"
start_tierdb "$big" "$((minio_port + 1))" "${s3[@]}" --buffer-pool 1GB --tier-size 2GB
prepare "$((minio_port + 1))" tierdb tierdb "$BIG_TABLE_SIZE"
run_sysbench "tierdb-in-memory" "$((minio_port + 1))" tierdb tierdb oltp_point_select 8 "$BIG_TABLE_SIZE"
stop_last
volume_bytes="$(du -sb "$work/minio/tierdb" | awk '{print $1}')"
echo "volume holds $((volume_bytes / 1048576)) MB (buffer pool ${SMALL_POOL_MB} MB)"
start_tierdb "$big" "$((minio_port + 2))" "${s3[@]}" --buffer-pool "${SMALL_POOL_MB}MB" --tier-size 2GB
# Warm the tier: a full scan of every table (pages evicted clean are written ahead to the
# tier), then point selects for a while.
for table in $(seq 1 "$TABLES"); do
    psql -X -q -h 127.0.0.1 -p "$((minio_port + 2))" -U tierdb -d tierdb -c "SELECT count(*), sum(k) FROM sbtest$table" > /dev/null
done
sysbench --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$((minio_port + 2))" --pgsql-user=tierdb --pgsql-db=tierdb --tables="$TABLES" --table-size="$BIG_TABLE_SIZE" --threads=8 --time=$((SECONDS_PER_RUN * 2)) oltp_point_select run > /dev/null 2>&1
run_sysbench "tierdb-8x-tier-on" "$((minio_port + 2))" tierdb tierdb oltp_point_select 8 "$BIG_TABLE_SIZE"
stop_last
start_tierdb "$big" "$((minio_port + 3))" "${s3[@]}" --buffer-pool "${SMALL_POOL_MB}MB" --tier-size 0
run_sysbench "tierdb-8x-tier-off" "$((minio_port + 3))" tierdb tierdb oltp_point_select 8 "$BIG_TABLE_SIZE"
stop_last
fi

echo
echo "| system | workload | threads | TPS (median of $REPS) | p95 ms (median) |"
echo "|---|---|---|---|---|"
cut -d'|' -f1-3 "$results" | sort -u | sort -t'|' -k2,2 -k3,3n -k1,1 | while IFS='|' read -r system script threads; do
    tps="$(awk -F'|' -v s="$system" -v w="$script" -v t="$threads" '$1==s && $2==w && $3==t {print $4}' "$results" | median)"
    p95="$(awk -F'|' -v s="$system" -v w="$script" -v t="$threads" '$1==s && $2==w && $3==t {print $5}' "$results" | median)"
    echo "| $system | $script | $threads | $tps | $p95 |"
done
