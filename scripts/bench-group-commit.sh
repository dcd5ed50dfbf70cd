#!/usr/bin/env bash
# Group commit: durable single-row updates at 1, 8 and 64 clients, tierdb against
# PostgreSQL 15 side by side in one run (issue 13, item 4).
#
#   SECONDS_PER_RUN=20 scripts/bench-group-commit.sh           the current release build
#   TIERDB_BIN=/tmp/tierdb-before ROUNDS=3 scripts/bench-group-commit.sh
#
# Each client runs pgbench's custom script `UPDATE t SET v = v + 1 WHERE id = :id` (one
# transaction, autocommit) with :id uniform over ROWS rows of `t (id int primary key, v
# int)`. Both systems durable: PostgreSQL at its defaults (fsync on, synchronous_commit on,
# full_page_writes on), tierdb with its WAL synced at commit. Per run: commits per second
# (pgbench's transactions / time) and commits per WAL sync: PostgreSQL's
# `pg_stat_wal.wal_sync` difference, tierdb's `tierdb_wal_syncs_total` difference (both
# count every sync of the log, also those of background writers). The systems alternate at
# each client count; with ROUNDS > 1 the table shows medians.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN="${SECONDS_PER_RUN:-20}"
CLIENTS="${CLIENTS:-1 8 64}"
ROUNDS="${ROUNDS:-1}"
ROWS="${ROWS:-10000}"
BUDGET_MB="${BUDGET_MB:-256}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
# shellcheck source=lib/side-by-side.sh
source scripts/lib/side-by-side.sh
side_by_side_init bench-group-commit pgbench

cat > "$work/update.sql" <<EOF
\\set id random(1, $ROWS)
UPDATE t SET v = v + 1 WHERE id = :id;
EOF
setup_sql="CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL); INSERT INTO t SELECT g, 0 FROM generate_series(1, $ROWS) AS g;"

pg_syncs() {
    psql -X -A -t -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "SELECT wal_sync FROM pg_stat_wal"
}
tierdb_syncs() {
    curl -s "http://127.0.0.1:$metrics_port/metrics" | awk '$1 == "tierdb_wal_syncs_total" { print $2 }'
}
# Runs the update script with $2 clients against system $1; appends "system clients tps
# commits_per_sync" to the results.
measure() { # system clients
    local port user database before after count threads
    if [[ "$1" == pg ]]; then port=$pg_port user=postgres database=postgres
    else port=$tierdb_port user=tierdb database=tierdb; fi
    threads=$(( $2 < 2 ? 1 : 2 ))
    before="$("$1"_syncs)"
    pgbench -n -h 127.0.0.1 -p "$port" -U "$user" -c "$2" -j "$threads" -T "$SECONDS_PER_RUN" \
        -f "$work/update.sql" "$database" > "$work/run.log" 2>&1 \
        || { cat "$work/run.log"; echo "bench-group-commit: pgbench failed ($1, $2 clients)" >&2; exit 1; }
    after="$("$1"_syncs)"
    count="$(awk '/number of transactions actually processed/ { split($NF, parts, "/"); print parts[1] }' "$work/run.log")"
    [[ -n "$count" && "$count" -gt 0 ]] || { cat "$work/run.log"; echo "bench-group-commit: no transactions" >&2; exit 1; }
    awk -v name="$1" -v clients="$2" -v count="$count" -v seconds="$SECONDS_PER_RUN" -v syncs="$((after - before))" \
        'BEGIN { printf "%s %d %.0f %.2f\n", name, clients, count / seconds, count / (syncs > 0 ? syncs : 1) }' \
        | tee -a "$work/results.txt"
}

echo "== PostgreSQL 15 and tierdb ($binary): $ROWS rows, clients $CLIENTS, ${SECONDS_PER_RUN}s per run, $ROUNDS round(s); load $(cut -d' ' -f1-3 /proc/loadavg)"
start_postgres
psql -X -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "$setup_sql" -c "CHECKPOINT"

start_tierdb
psql -X -q -h 127.0.0.1 -p "$tierdb_port" -U tierdb -d tierdb -c "$setup_sql"

for _ in $(seq 1 "$ROUNDS"); do
    for clients in $CLIENTS; do
        measure pg "$clients"
        measure tierdb "$clients"
    done
done

median() { sort -n | awk '{ values[NR] = $1 } END { print values[int((NR + 1) / 2)] }'; }
echo
echo "| clients | PostgreSQL 15 commits/s | PostgreSQL commits per WAL sync | tierdb commits/s | tierdb commits per WAL sync | tierdb / PostgreSQL commits/s |"
echo "|---:|---:|---:|---:|---:|---:|"
for clients in $CLIENTS; do
    pg_tps="$(awk -v c="$clients" '$1 == "pg" && $2 == c { print $3 }' "$work/results.txt" | median)"
    pg_per_sync="$(awk -v c="$clients" '$1 == "pg" && $2 == c { print $4 }' "$work/results.txt" | median)"
    tierdb_tps="$(awk -v c="$clients" '$1 == "tierdb" && $2 == c { print $3 }' "$work/results.txt" | median)"
    tierdb_per_sync="$(awk -v c="$clients" '$1 == "tierdb" && $2 == c { print $4 }' "$work/results.txt" | median)"
    ratio="$(awk -v a="$tierdb_tps" -v b="$pg_tps" 'BEGIN { printf "%.2f", a / b }')"
    echo "| $clients | $pg_tps | $pg_per_sync | $tierdb_tps | $tierdb_per_sync | $ratio |"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
