#!/usr/bin/env bash
# TPC-H side by side: tierdb and PostgreSQL 15 on the same data, the same 22 query texts
# (scripts/tpch/q1.sql ... q22.sql, schema in scripts/tpch/schema.sql) and the same memory
# (tierdb's buffer pool = PostgreSQL's shared_buffers = MEMORY; work_mem WORK_MEM on both).
#
#   SF=0.1 REPS=3 TIMEOUT_S=600 MEMORY=1GB WORK_MEM=64MB scripts/bench-tpch.sh
#
# Data from tpchgen-cli (crates.io; installed with `cargo install tpchgen-cli --locked`
# when it is not on PATH), loaded by COPY into both, both ANALYZEd (the planners of both
# order joins by the statistics; design 020). Each query runs once to compare results (its output on both,
# as psql -At prints it: equal, equal once sorted, or different), then REPS timed runs on
# each system, alternating; a query that fails on tierdb is printed with its error, one that
# passes TIMEOUT_S with TIMEOUT (statement_timeout on both). Prints a Markdown table of
# median times (ms: psql's \timing, summed over the query file's statements, Q15 creates and
# drops a view) and the tierdb/PostgreSQL ratio, and the totals over the queries both ran.
# Needs PostgreSQL 15 server binaries and a release build (cargo build --release -p tierdb).
set -euo pipefail
cd "$(dirname "$0")/.."
SF="${SF:-0.1}"
REPS="${REPS:-3}"
TIMEOUT_S="${TIMEOUT_S:-600}"
MEMORY="${MEMORY:-1GB}"
WORK_MEM="${WORK_MEM:-64MB}"
PG_PORT="${PG_PORT:-55462}"
TIERDB_PORT="${TIERDB_PORT:-55463}"
QUERIES="${QUERIES:-$(seq -s ' ' 1 22)}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
pgbin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
queries="$PWD/scripts/tpch"
for tool in "$pgbin/postgres" "$binary" psql; do
    command -v "$tool" >/dev/null || { echo "bench-tpch: missing $tool" >&2; exit 1; }
done
if ! command -v tpchgen-cli >/dev/null; then
    cargo install tpchgen-cli --locked >&2
    export PATH="$HOME/.cargo/bin:$PATH"
fi
work="${WORK_DIR:-$(mktemp -d /tmp/bench-tpch.XXXXXX)}"
mkdir -p "$work"
chmod 755 "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    if [[ -d "$work/pg" ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast >/dev/null 2>&1 || true; fi
    wait 2>/dev/null || true
    [[ -n "${KEEP:-}" ]] || rm -rf "$work"
}
trap cleanup EXIT

tables=(region nation supplier customer part partsupp orders lineitem)
echo "bench-tpch: SF=$SF generating into $work/data" >&2
mkdir -p "$work/data"
tpchgen-cli -s "$SF" --output-dir "$work/data" >&2

echo "bench-tpch: PostgreSQL 15 on port $PG_PORT" >&2
chown postgres "$work"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w -o "-p $PG_PORT -k $work -c listen_addresses=127.0.0.1 -c shared_buffers=$MEMORY -c work_mem=$WORK_MEM -c max_parallel_workers_per_gather=0 -c jit=off" start >/dev/null

echo "bench-tpch: tierdb on port $TIERDB_PORT" >&2
"$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$TIERDB_PORT" --metrics-listen "" \
    --buffer-pool "$MEMORY" --work-mem "$WORK_MEM" > "$work/tierdb.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do grep -q "listening on" "$work/tierdb.log" 2>/dev/null && break; sleep 0.1; done

pg=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres)
td=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$TIERDB_PORT" -U tierdb -d tierdb)
load() { # LABEL PSQL...
    local label=$1; shift
    local start end
    start=$(date +%s.%N)
    "$@" -f "$queries/schema.sql" >/dev/null
    for table in "${tables[@]}"; do
        # tbl rows end in a '|' that COPY would read as one more column.
        sed 's/|$//' "$work/data/$table.tbl" | "$@" -c "COPY $table FROM STDIN WITH (DELIMITER '|')"
    done
    end=$(date +%s.%N)
    echo "bench-tpch: $label loaded in $(echo "$end - $start" | bc) s" >&2
}
load PostgreSQL "${pg[@]}"
"${pg[@]}" -c "VACUUM ANALYZE" >/dev/null
load tierdb "${td[@]}"
"${td[@]}" -c "VACUUM ANALYZE" >/dev/null

# run_query PSQL... : prints the query's rows (psql -At), or ERROR/TIMEOUT lines; with
# TIMING=1 prints only the time in ms.
run_query() {
    local file=$1; shift
    local out
    out=$("$@" -At -c "SET statement_timeout = '${TIMEOUT_S}s'" -c '\timing on' -f "$file" 2>&1) || true
    if [[ -n "${TIMING:-}" ]]; then
        if grep -q "statement timeout" <<< "$out"; then echo TIMEOUT;
        elif grep -q "ERROR" <<< "$out"; then echo ERROR;
        else grep -o 'Time: [0-9.]*' <<< "$out" | awk '{ms += $2} END {printf "%.1f\n", ms}'; fi
    else
        grep -v '^Time: ' <<< "$out" | grep -v '^SET$' || true
    fi
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }

echo "| query | PostgreSQL 15 (ms) | tierdb (ms) | tierdb / PostgreSQL | result |"
echo "|---|---:|---:|---:|---|"
pg_total=0; td_total=0
for q in $QUERIES; do
    file="$queries/q$q.sql"
    run_query "$file" "${pg[@]}" > "$work/pg_q$q.out"
    run_query "$file" "${td[@]}" > "$work/td_q$q.out"
    if grep -q "statement timeout" "$work/td_q$q.out"; then result="TIMEOUT (${TIMEOUT_S} s)"
    elif grep -q "ERROR" "$work/td_q$q.out"; then result="ERROR: $(grep -m1 ERROR "$work/td_q$q.out" | sed 's/.*ERROR: *//')"
    elif grep -q "statement timeout" "$work/pg_q$q.out"; then result="tierdb ran it ($(wc -l < "$work/td_q$q.out") rows), not compared"
    elif cmp -s "$work/pg_q$q.out" "$work/td_q$q.out"; then result="same rows ($(wc -l < "$work/pg_q$q.out"))"
    elif cmp -s <(sort "$work/pg_q$q.out") <(sort "$work/td_q$q.out"); then result="same rows, other order"
    else result="DIFFERENT (diff $work/pg_q$q.out $work/td_q$q.out)"; fi
    # A system whose first run failed or timed out is not timed again.
    pg_times=(); td_times=()
    pg_failed=$(grep -c -e "statement timeout" -e "ERROR" "$work/pg_q$q.out" || true)
    for _ in $(seq 1 "$REPS"); do
        [[ "$pg_failed" != 0 ]] || pg_times+=("$(TIMING=1 run_query "$file" "${pg[@]}")")
        if [[ "$result" == TIMEOUT* || "$result" == ERROR* ]]; then continue; fi
        td_times+=("$(TIMING=1 run_query "$file" "${td[@]}")")
    done
    if grep -q "statement timeout" "$work/pg_q$q.out"; then pg_ms="> ${TIMEOUT_S}000"; result="$result; PostgreSQL timed out"
    elif [[ "$pg_failed" != 0 ]]; then pg_ms="-"; result="$result; PostgreSQL: $(grep -m1 ERROR "$work/pg_q$q.out")"
    else pg_ms=$(printf '%s\n' "${pg_times[@]}" | grep -v '[A-Z]' | median); fi
    if [[ ${#td_times[@]} -gt 0 ]]; then td_ms=$(printf '%s\n' "${td_times[@]}" | grep -v '[A-Z]' | median); else td_ms="-"; fi
    if [[ "$td_ms" != "-" && "$pg_ms" =~ ^[0-9.]+$ ]]; then
        ratio=$(echo "scale=2; $td_ms / $pg_ms" | bc)
        pg_total=$(echo "$pg_total + $pg_ms" | bc); td_total=$(echo "$td_total + $td_ms" | bc)
    else
        ratio="-"
    fi
    echo "| Q$q | $pg_ms | $td_ms | $ratio | $result |"
done
if [[ "$pg_total" != 0 ]]; then
    echo "| total (queries both ran) | $pg_total | $td_total | $(echo "scale=2; $td_total / $pg_total" | bc) | |"
fi
