#!/usr/bin/env bash
# Executor A/B in one run: two tierdb binaries (BEFORE, AFTER) and PostgreSQL 15 on the same
# data, the same query texts, the same memory (buffer pool = shared_buffers = BUDGET_MB,
# work_mem WORK_MEM on all three). Data: TPC-H at SF (tpchgen-cli, the schema and queries
# of scripts/tpch/) and a ROWS-row table `big` (id bigint primary key, k bigint, g bigint,
# s md5 text), loaded once into PostgreSQL and once into a tierdb whose data directory is
# then copied for the other binary. Each query runs once on each system to compare results
# (psql -At output, equal once sorted), then REPS times on each, the three interleaved so
# that the load of a shared machine falls on all of them alike. Prints a Markdown table of
# median times (ms: psql's \timing summed over the file's statements) and the ratios.
#
#   BEFORE=/tmp/executor-before-tierdb AFTER=target/release/tierdb REPS=5 \
#       scripts/bench-executor-ab.sh
#
# QUERIES: TPC-H query numbers (default 1 6 12 14 19 3 5 9 18); BIG_QUERIES=0 skips `big`;
# TPCH_DATA: a directory of tpchgen-cli .tbl files to reuse. The servers run under
# scripts/lib/side-by-side.sh (PORT_BASE picks the ports; all are stopped at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
SF="${SF:-0.1}"
ROWS="${ROWS:-1000000}"
REPS="${REPS:-5}"
BUDGET_MB="${BUDGET_MB:-1024}"
WORK_MEM="${WORK_MEM:-64MB}"
QUERIES="${QUERIES:-1 6 12 14 19 3 5 9 18}"
BIG_QUERIES="${BIG_QUERIES:-1}"
before="${BEFORE:?BEFORE=path of the baseline tierdb binary}"
binary="${AFTER:-target/release/tierdb}"
queries="$PWD/scripts/tpch"
# shellcheck source=scripts/lib/side-by-side.sh
source scripts/lib/side-by-side.sh
side_by_side_init bench-executor-ab bc "$before"
after_port=$((tierdb_port + 3))

data="${TPCH_DATA:-$work/data}"
if [[ ! -f "$data/lineitem.tbl" ]]; then
    mkdir -p "$data"
    tpchgen-cli -s "$SF" --output-dir "$data" >&2
fi

start_postgres_at pg "$pg_port" "work_mem=$WORK_MEM" max_parallel_workers_per_gather=0 jit=off
pg=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres)
td_before=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$tierdb_port" -U tierdb -d tierdb)
td_after=(psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$after_port" -U tierdb -d tierdb)
load() { # PSQL...
    "$@" -f "$queries/schema.sql" >/dev/null
    for table in region nation supplier customer part partsupp orders lineitem; do
        sed 's/|$//' "$data/$table.tbl" | "$@" -c "COPY $table FROM STDIN WITH (DELIMITER '|')"
    done
    if [[ "$BIG_QUERIES" != 0 ]]; then
        "$@" -c "CREATE TABLE big (id bigint PRIMARY KEY, k bigint, g bigint, s text)" \
            -c "INSERT INTO big SELECT i, (i * 7919) % $ROWS, i % $((ROWS / 5)), md5(i::text) FROM generate_series(1::bigint, $ROWS) i"
    fi
    "$@" -c "VACUUM ANALYZE" >/dev/null
}
echo "bench-executor-ab: loading PostgreSQL" >&2
load "${pg[@]}"
echo "bench-executor-ab: loading tierdb (with BEFORE)" >&2
start_tierdb_at before "$before" "$tierdb_port" --work-mem "$WORK_MEM"
load "${td_before[@]}"
kill -TERM "${servers[-1]}"; wait "${servers[-1]}" || true; unset 'servers[-1]'
cp -a "$work/before" "$work/after"
start_tierdb_at before "$before" "$tierdb_port" --work-mem "$WORK_MEM"
start_tierdb_at after "$binary" "$after_port" --work-mem "$WORK_MEM"

# Query files: TPC-H's, then one file per `big` query.
files=()
for q in $QUERIES; do files+=("$queries/q$q.sql"); done
if [[ "$BIG_QUERIES" != 0 ]]; then
    big_queries=(
        "SELECT count(*), sum(total) FROM (SELECT g, count(*), sum(k) AS total FROM big GROUP BY g) x"
        "SELECT id, k FROM big ORDER BY s OFFSET $((ROWS - 1))"
        "SELECT g, sum(k) FROM big WHERE k % 10 = 3 GROUP BY g ORDER BY sum(k) DESC, g LIMIT 5"
        "SELECT count(*) FROM big a JOIN big b ON a.k = b.id WHERE b.g < $((ROWS / 10))"
    )
    for index in "${!big_queries[@]}"; do
        echo "${big_queries[$index]};" > "$work/big$((index + 1)).sql"
        files+=("$work/big$((index + 1)).sql")
    done
fi

# run_query FILE PSQL...: the rows (psql -At); with TIMING=1 only the time in ms.
run_query() {
    local file=$1; shift
    local out
    out=$("$@" -At -c '\timing on' -f "$file" 2>&1) || true
    if [[ -n "${TIMING:-}" ]]; then
        if grep -q "ERROR" <<< "$out"; then echo ERROR
        else grep -o 'Time: [0-9.]*' <<< "$out" | awk '{ms += $2} END {printf "%.1f\n", ms}'; fi
    else
        grep -v '^Time: ' <<< "$out" || true
    fi
}
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { if [[ "$1" =~ ^[0-9.]+$ && "$2" =~ ^[0-9.]+$ ]]; then echo "scale=2; $1 / $2" | bc; else echo -; fi; }

echo "| query | PostgreSQL 15 (ms) | before (ms) | after (ms) | after / before | before / PostgreSQL | after / PostgreSQL | result |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
totals=(0 0 0)
for file in "${files[@]}"; do
    name=$(basename "$file" .sql)
    run_query "$file" "${pg[@]}" | sort > "$work/$name.pg"
    run_query "$file" "${td_before[@]}" | sort > "$work/$name.before"
    run_query "$file" "${td_after[@]}" | sort > "$work/$name.after"
    if cmp -s "$work/$name.pg" "$work/$name.after" && cmp -s "$work/$name.pg" "$work/$name.before"; then
        result="same rows ($(wc -l < "$work/$name.pg"))"
    else
        result="DIFFERENT (diff $work/$name.pg $work/$name.after)"
    fi
    pg_times=(); before_times=(); after_times=()
    for _ in $(seq 1 "$REPS"); do
        pg_times+=("$(TIMING=1 run_query "$file" "${pg[@]}")")
        before_times+=("$(TIMING=1 run_query "$file" "${td_before[@]}")")
        after_times+=("$(TIMING=1 run_query "$file" "${td_after[@]}")")
    done
    pg_ms=$(printf '%s\n' "${pg_times[@]}" | grep -v '[A-Z]' | median)
    before_ms=$(printf '%s\n' "${before_times[@]}" | grep -v '[A-Z]' | median)
    after_ms=$(printf '%s\n' "${after_times[@]}" | grep -v '[A-Z]' | median)
    if [[ "$pg_ms$before_ms$after_ms" =~ ^[0-9.]+$ ]]; then
        totals=("$(echo "${totals[0]} + $pg_ms" | bc)" "$(echo "${totals[1]} + $before_ms" | bc)" "$(echo "${totals[2]} + $after_ms" | bc)")
    fi
    echo "| $name | $pg_ms | $before_ms | $after_ms | $(ratio "$after_ms" "$before_ms") | $(ratio "$before_ms" "$pg_ms") | $(ratio "$after_ms" "$pg_ms") | $result |"
done
echo "| total (queries all three ran) | ${totals[0]} | ${totals[1]} | ${totals[2]} | $(ratio "${totals[2]}" "${totals[1]}") | $(ratio "${totals[1]}" "${totals[0]}") | $(ratio "${totals[2]}" "${totals[0]}") | |"
