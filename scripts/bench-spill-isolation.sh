#!/usr/bin/env bash
# Does a spilling query evict the cache point selects rely on? (issue 12, "Isolation")
#
#   PORT_BASE=55640 scripts/bench-spill-isolation.sh
#   TIERDB_BIN=/tmp/tierdb-before SECONDS_PER_RUN=30 scripts/bench-spill-isolation.sh
#
# One tierdb server (buffer pool BUDGET_MB, tier TIER_MB). sysbench oltp_point_select runs
# over TABLES x TABLE_SIZE rows (a working set that fits the pool) for SECONDS_PER_RUN
# seconds twice: alone, then beside a loop of spilling queries (work_mem SPILL_WORK_MEM)
# over a table of SPILL_ROWS rows larger than the pool: an ORDER BY without LIMIT and a
# hash join of the table with itself on a non-key column, each reading the whole table.
# For each run it prints the point selects' own hit ratios, from tierdb_stat_statements
# (the point-select statement's counters, not the spilling query's):
#   buffer-pool hit ratio = shared_blks_hit / (shared_blks_hit + tier_blks_hit + storage_blks_read)
#   tier hit ratio        = tier_blks_hit / (tier_blks_hit + storage_blks_read)   (of the misses)
# and their TPS, and the temp bytes the spilling queries wrote. The goal: the ratios drop by
# at most 5 points beside the spilling queries.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN="${SECONDS_PER_RUN:-30}"
THREADS="${THREADS:-4}"
BUDGET_MB="${BUDGET_MB:-128}"
TIER_MB="${TIER_MB:-512}"
TABLES="${TABLES:-4}"
TABLE_SIZE="${TABLE_SIZE:-50000}"
SPILL_ROWS="${SPILL_ROWS:-2000000}"
SPILL_WORK_MEM="${SPILL_WORK_MEM:-64kB}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
# shellcheck source=lib/side-by-side.sh
source scripts/lib/side-by-side.sh
side_by_side_init bench-spill-isolation sysbench
spiller=""
stop_spiller() {
    if [[ -n "$spiller" ]]; then
        touch "$work/stop-spilling"
        # The query in progress is cancelled (the loop then sees the stop file).
        tsql -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%FROM spill_big%' AND pid <> pg_backend_pid()" > /dev/null 2>&1 || true
        wait "$spiller" 2>/dev/null || true
        spiller=""
    fi
}
trap 'stop_spiller; side_by_side_cleanup' EXIT

tsql() { psql -X -A -t -q -h 127.0.0.1 -p "$tierdb_port" -U tierdb -d tierdb "$@"; }
sysbench_args() {
    echo "--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$tierdb_port --pgsql-user=tierdb --pgsql-db=tierdb --tables=$TABLES --table-size=$TABLE_SIZE"
}
# The point selects' counters: "hits tier_hits storage_reads calls".
point_select_counters() {
    tsql -F ' ' -c "SELECT coalesce(sum(shared_blks_hit), 0), coalesce(sum(tier_blks_hit), 0), coalesce(sum(storage_blks_read), 0), coalesce(sum(calls), 0) FROM tierdb_stat_statements WHERE query ILIKE 'select%sbtest%'"
}
temp_bytes() { tsql -c "SELECT temp_bytes FROM tierdb_stat_temp"; }
# Runs point selects; appends "label pool_ratio tier_ratio tps calls spill_temp_bytes" to results.
measure() { # label
    local before after temp_before log="$work/run.log"
    read -r h0 t0 s0 c0 < <(point_select_counters)
    temp_before="$(temp_bytes)"
    # shellcheck disable=SC2046
    sysbench $(sysbench_args) --threads="$THREADS" --time="$SECONDS_PER_RUN" --report-interval=0 oltp_point_select run > "$log" 2>&1 \
        || { cat "$log"; echo "bench-spill-isolation: sysbench failed" >&2; exit 1; }
    read -r h1 t1 s1 c1 < <(point_select_counters)
    local tps
    tps="$(grep -E 'transactions:' "$log" | sed -E 's/.*\(([0-9.]+) per sec.\)/\1/')"
    awk -v label="$1" -v h=$((h1 - h0)) -v t=$((t1 - t0)) -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v tps="$tps" -v temp=$(( $(temp_bytes) - temp_before )) 'BEGIN {
        pool = (h + t + s) > 0 ? 100 * h / (h + t + s) : 100
        tier = (t + s) > 0 ? 100 * t / (t + s) : 100
        printf "%s %.2f %.2f %s %d %d %d %d %d\n", label, pool, tier, tps, c, temp, h, t, s
    }' | tee -a "$work/results.txt"
}
spill_loop() {
    while [[ ! -e "$work/stop-spilling" ]]; do
        tsql -c "SET work_mem = '$SPILL_WORK_MEM'" \
             -c "SELECT count(*) FROM (SELECT * FROM spill_big ORDER BY v, id) s" \
             -c "SELECT count(*) FROM spill_big a JOIN spill_big b ON a.v = b.v" > /dev/null 2>> "$work/spill.err" || true
    done
}

echo "== tierdb ($binary): pool ${BUDGET_MB}MB, tier ${TIER_MB}MB; point selects over $TABLES x $TABLE_SIZE rows, $THREADS threads, ${SECONDS_PER_RUN}s per run"
echo "== spilling queries over $SPILL_ROWS rows at work_mem $SPILL_WORK_MEM (ORDER BY without LIMIT; self hash join on a non-key column)"
"$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$tierdb_port" --metrics-listen "127.0.0.1:$metrics_port" \
    --buffer-pool "${BUDGET_MB}MB" --tier-size "${TIER_MB}MB" > "$work/tierdb.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do grep -q "listening on" "$work/tierdb.log" && break; sleep 0.1; done
# shellcheck disable=SC2046
sysbench $(sysbench_args) oltp_point_select prepare > "$work/prepare.log" 2>&1 || { cat "$work/prepare.log"; exit 1; }
tsql -c "CREATE TABLE spill_big (id bigint PRIMARY KEY, v bigint, pad text)" \
     -c "INSERT INTO spill_big SELECT g, (g::bigint * 7919) % $((SPILL_ROWS / 2)), repeat('p', 80) FROM generate_series(1, $SPILL_ROWS) g"
echo "== loaded; warming the point selects' pages"
# shellcheck disable=SC2046
sysbench $(sysbench_args) --threads="$THREADS" --time=10 --report-interval=0 oltp_point_select run > /dev/null 2>&1
measure alone
spill_loop &
spiller=$!
sleep 5
measure beside-spill
stop_spiller
measure alone-again

echo
echo "| run | point-select buffer-pool hit % | point-select tier hit % (of misses) | TPS | point selects | temp bytes written by spilling | pool hits | tier hits | storage reads |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
while read -r label pool tier tps calls temp h t s; do
    echo "| $label | $pool | $tier | $tps | $calls | $temp | $h | $t | $s |"
done < "$work/results.txt"
read -r _ pool_alone tier_alone _ < <(grep '^alone ' "$work/results.txt")
read -r _ pool_beside tier_beside _ < <(grep '^beside-spill ' "$work/results.txt")
awk -v a="$pool_alone" -v b="$pool_beside" -v c="$tier_alone" -v d="$tier_beside" 'BEGIN {
    printf "buffer-pool hit ratio drop: %.2f points; tier hit ratio drop: %.2f points (goal: <= 5)\n", a - b, c - d }'
if [[ -s "$work/spill.err" ]]; then echo "spilling query errors:"; sort "$work/spill.err" | uniq -c | head; fi
