#!/usr/bin/env bash
# Write-heavy OLTP with the data several times the buffer pool, where PostgreSQL pays full-page
# writes: tierdb against PostgreSQL 15 side by side in one run (issue 13, item 3).
#
#   scripts/bench-oltp-pressure.sh                                the current release build
#   SECONDS_PER_RUN=300 TABLE_SIZE=1000000 scripts/bench-oltp-pressure.sh     a longer run
#
# Three servers, each with a buffer pool / shared_buffers of BUDGET_MB and the same sysbench
# tables (TABLES x TABLE_SIZE rows; the defaults make about 4x the pool):
#   pg        PostgreSQL 15 at its defaults: fsync, synchronous_commit and full_page_writes on,
#             checkpoint_timeout PG_CHECKPOINT_TIMEOUT (5min), max_wal_size PG_MAX_WAL_SIZE (1GB)
#   pg-nofpw  the same with full_page_writes off: unsafe (a torn page write after a crash is
#             not repaired), a reference line only; a copy of pg's cluster after the load
#   tierdb    durable at commit (WAL synced), checkpoint every TIERDB_CHECKPOINT_INTERVAL_MS
#             (PostgreSQL's timeout) or after TIERDB_CHECKPOINT_WAL_SIZE of WAL (half of
#             max_wal_size: tierdb keeps about twice that much log, PostgreSQL about
#             max_wal_size)
# For each SCRIPTS x THREADS_LIST cell the three run SECONDS_PER_RUN each, one after the
# other. Per cell: TPS, p95, and bytes written per transaction during the cell:
#   PostgreSQL  WAL = pg_current_wal_lsn() difference; data = (buffers_checkpoint +
#               buffers_clean + buffers_backend of pg_stat_bgwriter) x 8 KiB, the data-file
#               writes of the checkpointer, background writer and backends; FPI = pg_stat_wal's
#               full-page images per transaction
#   tierdb      WAL = tierdb_wal_bytes_total; data = tierdb_volume_bytes_written_total
#               (segments from flushes and compaction, page-map chunks, manifests); also the
#               server's /proc/PID/io write_bytes, a cross-check only: it adds tier writes,
#               and on kernels that cache files in large folios each small WAL write is
#               accounted at the folio's size (measured: 170 MB/s accounted against about
#               1 MB/s of WAL pwrite calls), so it can overstate by orders of magnitude
# Writes that land between cells (a spread checkpoint going on while another system runs)
# are in no cell: the "whole run" rows divide everything each system wrote from its first
# cell to the end by its transactions.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN="${SECONDS_PER_RUN:-60}"
WARMUP_SECONDS="${WARMUP_SECONDS:-30}"
THREADS_LIST="${THREADS_LIST:-8 32}"
SCRIPTS="${SCRIPTS:-oltp_write_only oltp_update_non_index oltp_insert}"
SYSTEMS="${SYSTEMS:-pg pg-nofpw tierdb}"
BUDGET_MB="${BUDGET_MB:-128}"
TABLES="${TABLES:-4}"
TABLE_SIZE="${TABLE_SIZE:-500000}"
PG_CHECKPOINT_TIMEOUT="${PG_CHECKPOINT_TIMEOUT:-5min}"
PG_MAX_WAL_SIZE="${PG_MAX_WAL_SIZE:-1GB}"
TIERDB_CHECKPOINT_INTERVAL_MS="${TIERDB_CHECKPOINT_INTERVAL_MS:-300000}"
TIERDB_CHECKPOINT_WAL_SIZE="${TIERDB_CHECKPOINT_WAL_SIZE:-512MB}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
# shellcheck source=lib/side-by-side.sh
source scripts/lib/side-by-side.sh
side_by_side_init bench-oltp-pressure sysbench
nofpw_port=$((tierdb_port + 3))
results="$work/results.txt"

port_of() { case "$1" in pg) echo "$pg_port" ;; pg-nofpw) echo "$nofpw_port" ;; tierdb) echo "$tierdb_port" ;; esac; }
user_of() { if [[ "$1" == tierdb ]]; then echo tierdb; else echo postgres; fi; }
database_of() { if [[ "$1" == tierdb ]]; then echo tierdb; else echo sb; fi; }
sysbench_for() { # system: the sysbench command line up to the options of a run
    echo "sysbench --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$(port_of "$1") --pgsql-user=$(user_of "$1") --pgsql-db=$(database_of "$1") --tables=$TABLES --table-size=$TABLE_SIZE"
}
sql() { # system statement: one line of unaligned output
    psql -X -A -t -q -h 127.0.0.1 -p "$(port_of "$1")" -U "$(user_of "$1")" -d "$(database_of "$1")" -c "$2"
}
metric_value() { # name
    curl -s "http://127.0.0.1:$metrics_port/metrics" | awk -v name="$1" '$1 == name { print $2 }'
}
# Cumulative counters of a system: "wal_bytes data_bytes extra" where extra is full-page
# images (PostgreSQL) or /proc/PID/io write_bytes (tierdb).
counters() { # system
    if [[ "$1" == tierdb ]]; then
        echo "$(metric_value tierdb_wal_bytes_total) $(metric_value tierdb_volume_bytes_written_total) $(awk '$1 == "write_bytes:" { print $2 }' "/proc/$server/io")"
    else
        sql "$1" "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn, (buffers_checkpoint + buffers_clean + buffers_backend) * current_setting('block_size')::bigint, (SELECT wal_fpi FROM pg_stat_wal) FROM pg_stat_bgwriter" | tr '|' ' '
    fi
}
tierdb_breakdown() { # pages flushed, of which by sessions, pages compacted, checkpoints
    echo "flushed=$(metric_value tierdb_store_pages_flushed_total) foreground=$(metric_value tierdb_store_foreground_pages_flushed_total) compacted=$(metric_value tierdb_store_pages_compacted_total) checkpoints=$(metric_value tierdb_store_checkpoints_total)"
}

# Runs one cell; appends "system script threads transactions tps p95 wal data extra" (the
# byte and image figures are differences over the cell).
measure() { # system script threads
    local log="$work/run.log" wal0 data0 extra0 wal1 data1 extra1 count tps p95
    read -r wal0 data0 extra0 < <(counters "$1")
    # shellcheck disable=SC2046
    $(sysbench_for "$1") --threads="$3" --time="$SECONDS_PER_RUN" --report-interval=0 "$2" run > "$log" 2>&1 \
        || { cat "$log"; echo "bench-oltp-pressure: sysbench $2 failed on $1" >&2; exit 1; }
    if grep -q FATAL "$log"; then cat "$log"; echo "bench-oltp-pressure: sysbench $2 reported FATAL on $1" >&2; exit 1; fi
    # PostgreSQL's statistics reach the views after the backends exit.
    sleep 1
    read -r wal1 data1 extra1 < <(counters "$1")
    read -r count tps < <(grep -E 'transactions:' "$log" | sed -E 's/ *transactions: *([0-9]+) *\(([0-9.]+) per sec.\)/\1 \2/')
    p95="$(awk '/95th percentile:/ { print $3 }' "$log")"
    echo "$1 $2 $3 $count $tps $p95 $((wal1 - wal0)) $((data1 - data0)) $((extra1 - extra0))" | tee -a "$results"
    if [[ "$1" == tierdb ]]; then echo "  tierdb totals: $(tierdb_breakdown)"; fi
}

load() { # system: sysbench prepare, then VACUUM as pgbench does after loading
    local started=$SECONDS
    # shellcheck disable=SC2046
    $(sysbench_for "$1") --threads="$TABLES" oltp_write_only prepare > "$work/prepare.log" 2>&1 \
        || { cat "$work/prepare.log"; exit 1; }
    sql "$1" "VACUUM"
    echo "loaded $1 in $((SECONDS - started)) s"
}

echo "== bench-oltp-pressure ($binary): ${TABLES} x ${TABLE_SIZE} rows, pool ${BUDGET_MB} MB, threads $THREADS_LIST, ${SECONDS_PER_RUN}s per cell; load $(cut -d' ' -f1-3 /proc/loadavg)"
pg_settings=("checkpoint_timeout=$PG_CHECKPOINT_TIMEOUT" "max_wal_size=$PG_MAX_WAL_SIZE")
start_postgres_at pg "$pg_port" "${pg_settings[@]}"
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -c "CREATE DATABASE sb" postgres
load pg
sql pg "CHECKPOINT"
echo "PostgreSQL database: $(sql pg "SELECT pg_database_size('sb') / 1048576") MB"
if [[ " $SYSTEMS " == *" pg-nofpw "* ]]; then
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast > /dev/null
    cp -a "$work/pg" "$work/pg-nofpw"
    start_postgres_at pg "$pg_port" "${pg_settings[@]}"
    start_postgres_at pg-nofpw "$nofpw_port" "${pg_settings[@]}" full_page_writes=off
fi
if [[ " $SYSTEMS " == *" tierdb "* ]]; then
    start_tierdb --checkpoint-interval-ms "$TIERDB_CHECKPOINT_INTERVAL_MS" --checkpoint-wal-size "$TIERDB_CHECKPOINT_WAL_SIZE"
    load tierdb
    echo "tierdb volume: $(( $(du -sb "$work/tierdb/volume" | cut -f1) / 1048576 )) MB"
fi

if (( WARMUP_SECONDS > 0 )); then
    for system in $SYSTEMS; do
        # shellcheck disable=SC2046
        $(sysbench_for "$system") --threads=8 --time="$WARMUP_SECONDS" oltp_write_only run > /dev/null 2>&1
    done
fi
for system in $SYSTEMS; do echo "$system $(counters "$system")" >> "$work/start.txt"; done
for script in $SCRIPTS; do
    for threads in $THREADS_LIST; do
        for system in $SYSTEMS; do measure "$system" "$script" "$threads"; done
    done
done
for system in $SYSTEMS; do echo "$system $(counters "$system")" >> "$work/end.txt"; done

kib() { awk -v bytes="$1" -v count="$2" 'BEGIN { printf "%.1f", bytes / count / 1024 }'; }
echo
echo "| workload | threads | system | TPS | p95 ms | WAL KiB/txn | data KiB/txn | WAL + data KiB/txn | FPI/txn or tierdb /proc write KiB/txn | TPS / PostgreSQL (FPW on) |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for script in $SCRIPTS; do
    for threads in $THREADS_LIST; do
        pg_tps="$(awk -v s="$script" -v t="$threads" '$1 == "pg" && $2 == s && $3 == t { print $5 }' "$results")"
        for system in $SYSTEMS; do
            read -r _ _ _ count tps p95 wal data extra < <(awk -v n="$system" -v s="$script" -v t="$threads" '$1 == n && $2 == s && $3 == t' "$results")
            if [[ "$system" == tierdb ]]; then extra="$(kib "$extra" "$count")"
            else extra="$(awk -v images="$extra" -v count="$count" 'BEGIN { printf "%.2f", images / count }')"; fi
            ratio="$(awk -v a="$tps" -v b="${pg_tps:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
            echo "| $script | $threads | $system | $tps | $p95 | $(kib "$wal" "$count") | $(kib "$data" "$count") | $(kib "$((wal + data))" "$count") | $extra | $ratio |"
        done
    done
done
echo
echo "Whole run (from the first cell to the end, writes between cells included):"
for system in $SYSTEMS; do
    read -r _ wal0 data0 extra0 < <(grep "^$system " "$work/start.txt")
    read -r _ wal1 data1 extra1 < <(grep "^$system " "$work/end.txt")
    total="$(awk -v n="$system" '$1 == n { sum += $4 } END { print sum }' "$results")"
    echo "  $system: $total transactions; WAL $(kib "$((wal1 - wal0))" "$total") KiB/txn, data $(kib "$((data1 - data0))" "$total") KiB/txn, WAL + data $(kib "$((wal1 - wal0 + data1 - data0))" "$total") KiB/txn"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
