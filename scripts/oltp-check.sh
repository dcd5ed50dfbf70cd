#!/usr/bin/env bash
# Runs the real OLTP tools against a fresh `tierdb serve`, unmodified:
#   sysbench 1.0.20 (pgsql driver): prepare, then oltp_read_write, oltp_read_only,
#     oltp_write_only, oltp_point_select, oltp_update_index, oltp_insert and oltp_delete at
#     16 threads for OLTP_SECONDS each (default 60), then cleanup;
#   pgbench 15: -i -s 10 (default init steps: drop, create, client-side COPY, VACUUM,
#     primary keys), then tpcb-like and -S (select-only), each in -M simple and -M prepared,
#     -c 8 -j 2 -T OLTP_SECONDS, and the consistency check after each tpcb-like run:
#     sum(abalance) = sum(tbalance) = sum(bbalance), and their change over the run equals
#     sum(delta) over pgbench_history (pgbench truncates the history at the start of every
#     run, so after the first run the totals also hold earlier runs' deltas).
# Fails on any FATAL from sysbench, any failed pgbench transaction, any inconsistency, or a
# missing tool (never passes silently). Prints each tool's summary lines.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${OLTP_SECONDS:-60}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
pgbench=/usr/lib/postgresql/15/bin/pgbench
for tool in sysbench "$pgbench" psql "$binary"; do
    command -v "$tool" >/dev/null || { echo "oltp-check: missing $tool (run scripts/install-deps.sh; build with cargo build --release)" >&2; exit 1; }
done
work="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
"$binary" serve --data-dir "$work/data" --listen "127.0.0.1:$port" --metrics-listen "" \
    --buffer-pool 512MB --tier-size 1GB > "$work/server.log" 2>&1 &
server=$!
cleanup() { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 1 100); do grep -q "listening on" "$work/server.log" && break; sleep 0.1; done
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=tierdb PGDATABASE=tierdb
sb=(sysbench --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" --pgsql-user=tierdb --pgsql-db=tierdb --tables=4 --table-size=10000)
echo "== sysbench prepare"
"${sb[@]}" oltp_read_write prepare > "$work/sb.log" 2>&1 || { cat "$work/sb.log"; exit 1; }
for script in oltp_read_write oltp_read_only oltp_write_only oltp_point_select oltp_update_index oltp_insert oltp_delete; do
    "${sb[@]}" --threads=16 --time="$seconds" --report-interval=0 "$script" run > "$work/sb.log" 2>&1 || { cat "$work/sb.log"; echo "oltp-check: sysbench $script failed" >&2; exit 1; }
    if grep -q FATAL "$work/sb.log"; then cat "$work/sb.log"; echo "oltp-check: sysbench $script reported FATAL" >&2; exit 1; fi
    echo "== sysbench $script: $(grep -E 'transactions:' "$work/sb.log" | xargs) | $(grep -E 'ignored errors:' "$work/sb.log" | xargs) | p95 $(grep -E '95th' "$work/sb.log" | awk '{print $3}') ms"
done
"${sb[@]}" oltp_read_write cleanup > "$work/sb.log" 2>&1 || { cat "$work/sb.log"; exit 1; }
echo "== sysbench cleanup done"

echo "== pgbench -i -s 10"
"$pgbench" -i -s 10 > "$work/pgb.log" 2>&1 || { cat "$work/pgb.log"; exit 1; }
tail -1 "$work/pgb.log"
balances_before=0
check_consistency() {
    local sums
    sums="$(psql -X -A -t -c "select (select sum(abalance) from pgbench_accounts), (select sum(tbalance) from pgbench_tellers), (select sum(bbalance) from pgbench_branches), (select coalesce(sum(delta), 0) from pgbench_history)")"
    IFS='|' read -r a t b h <<< "$sums"
    echo "   consistency: sum(abalance)=$a sum(tbalance)=$t sum(bbalance)=$b; change over the run $((a - balances_before)) = sum(delta)=$h"
    [[ "$a" == "$t" && "$t" == "$b" && "$((a - balances_before))" == "$h" ]] || { echo "oltp-check: pgbench balances are inconsistent" >&2; exit 1; }
    balances_before=$a
}
check_consistency
for mode in simple prepared; do
    for builtin in tpcb-like select-only; do
        "$pgbench" -c 8 -j 2 -T "$seconds" -M "$mode" -b "$builtin" > "$work/pgb.log" 2>&1 || { cat "$work/pgb.log"; echo "oltp-check: pgbench $builtin $mode failed" >&2; exit 1; }
        failed="$(grep -E 'number of failed transactions' "$work/pgb.log" | awk '{print $5}')"
        echo "== pgbench $builtin -M $mode: $(grep -E '^tps' "$work/pgb.log") | failed $failed | $(grep -E 'latency average' "$work/pgb.log")"
        [[ "$failed" == "0" ]] || { cat "$work/pgb.log"; echo "oltp-check: pgbench transactions failed" >&2; exit 1; }
        if [[ "$builtin" == "tpcb-like" ]]; then check_consistency; fi
    done
done
echo "oltp-check: all sysbench scripts and pgbench runs passed"
