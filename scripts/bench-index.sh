#!/usr/bin/env bash
# CREATE INDEX on a populated table: one or more tierdb binaries and PostgreSQL 15, same data
# (ROWS rows of (id int primary key, grp int, label text), default 1,000,000), same
# maintenance_work_mem (default 64MB), same memory budget (tierdb buffer pool = PostgreSQL
# shared_buffers = BUDGET_MB). Each engine builds the index on (grp, label) RUNS times
# (default 3); prints each time and the median, in milliseconds, measured by the client
# around the statement. Not part of CI.
#
#   scripts/bench-index.sh path/to/tierdb-before path/to/tierdb-after
#
# PostgreSQL runs as the `postgres` user when this script runs as root (it refuses root).
set -euo pipefail

rows=${ROWS:-1000000}
runs=${RUNS:-3}
memory=${MAINTENANCE_WORK_MEM:-64MB}
budget_mb=${BUDGET_MB:-256}
pgbin=${TIERDB_PG_BIN:-/usr/lib/postgresql/15/bin}
tierdb_port=${TIERDB_PORT:-55472}
pg_port=${PG_PORT:-55473}
work=$(mktemp -d /tmp/bench-index.XXXXXX)
chmod 777 "$work"
server_pid=""

cleanup() {
    if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    if [[ -d "$work/pg" ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

for port in "$tierdb_port" "$pg_port"; do
    if (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "port $port is in use (set TIERDB_PORT / PG_PORT)" >&2
        exit 1
    fi
done

populate="CREATE TABLE t (id int PRIMARY KEY, grp int, label text);
INSERT INTO t SELECT g, ((g % 100000) * 7919) % 100000, 'label ' || ((g * 2003) % 1000003) FROM generate_series(1, $rows) g;"

# time_builds NAME SETTINGS PSQL_ARGS...: RUNS builds (each dropped after it is timed),
# each time and the median.
time_builds() {
    local name=$1 settings=$2
    shift 2
    local times=()
    for run in $(seq "$runs"); do
        local start end
        start=$(date +%s%N)
        psql "$@" -v ON_ERROR_STOP=1 -qc "SET maintenance_work_mem = '$memory'; $settings CREATE INDEX t_grp ON t (grp, label)" >/dev/null
        end=$(date +%s%N)
        psql "$@" -v ON_ERROR_STOP=1 -qc "DROP INDEX t_grp" >/dev/null
        times+=($(( (end - start) / 1000000 )))
    done
    local median
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
    echo "$name: CREATE INDEX on $rows rows, maintenance_work_mem=$memory: ${times[*]} ms, median $median ms"
}

for binary in "$@"; do
    rm -rf "$work/tierdb"
    "$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$tierdb_port" \
        --metrics-listen 127.0.0.1:0 --buffer-pool "${budget_mb}MB" 2>"$work/tierdb.log" &
    server_pid=$!
    for _ in $(seq 600); do grep -q "listening on" "$work/tierdb.log" && break; sleep 0.1; done
    args=(-h 127.0.0.1 -p "$tierdb_port" -U tierdb -d tierdb)
    psql "${args[@]}" -v ON_ERROR_STOP=1 -qc "$populate" >/dev/null
    psql "${args[@]}" -v ON_ERROR_STOP=1 -qc "VACUUM t" >/dev/null
    time_builds "tierdb $binary" "" "${args[@]}"
    kill "$server_pid"
    wait "$server_pid" || true
    server_pid=""
done

mkdir -m 700 "$work/pg"
chown postgres "$work/pg"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust --locale=C.UTF-8 >/dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" \
    -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1 -c shared_buffers=${budget_mb}MB" start >/dev/null
args=(-h 127.0.0.1 -p "$pg_port" -U postgres -d postgres)
psql "${args[@]}" -v ON_ERROR_STOP=1 -qc "$populate" >/dev/null
psql "${args[@]}" -v ON_ERROR_STOP=1 -qc "VACUUM t" >/dev/null
time_builds "PostgreSQL 15 (max_parallel_maintenance_workers 2, its default)" "" "${args[@]}"
time_builds "PostgreSQL 15 (max_parallel_maintenance_workers 0)" \
    "SET max_parallel_maintenance_workers = 0;" "${args[@]}"
