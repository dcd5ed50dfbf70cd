#!/usr/bin/env bash
# Index or full scan (design 020, "Access paths"), side by side in one run: PostgreSQL 15,
# a baseline tierdb binary (BEFORE) and this one (TIERDB_BIN or target/release/tierdb) on
# the same ROWS-row table `ac` (id bigint primary key, k int, r int uniform over 100,000
# values with a secondary index, a 32-byte text), analyzed. Each query counts the rows with
# r below a bound, for shares of the table from 0.1% to 100%: an index scan wins on few rows,
# a full scan on many. The three servers run each query in turn (a shared machine's load
# falls on all alike), REPS times; the table prints median milliseconds, the ratios, and
# the plan each tierdb chose (EXPLAIN's scan line).
#
#   BEFORE=/tmp/tierdb-before ROWS=1000000 REPS=7 scripts/bench-access-choice.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-1000000}"
REPS="${REPS:-7}"
BUDGET_MB="${BUDGET_MB:-1024}"
before="${BEFORE:?BEFORE=path of the baseline tierdb binary}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
# shellcheck source=scripts/lib/side-by-side.sh
source scripts/lib/side-by-side.sh
side_by_side_init bench-access-choice python3 "$before"
start_postgres
start_tierdb_at before "$before" "$tierdb_port" --autoanalyze-interval-ms 0
after_port=$((tierdb_port + 3))
start_tierdb_at after "$binary" "$after_port" --autoanalyze-interval-ms 0

ROWS="$ROWS" REPS="$REPS" python3 - "$pg_port" "$tierdb_port" "$after_port" <<'PY'
import os, statistics, sys, time
import psycopg

rows, reps = int(os.environ["ROWS"]), int(os.environ["REPS"])
systems = {"postgres": (sys.argv[1], "postgres"), "tierdb before": (sys.argv[2], "tierdb"),
           "tierdb after": (sys.argv[3], "tierdb")}
connections = {}
for name, (port, user) in systems.items():
    connection = psycopg.connect(f"host=127.0.0.1 port={port} user={user} dbname=postgres",
                                 autocommit=True)
    started = time.perf_counter()
    connection.execute("CREATE TABLE ac (id bigint PRIMARY KEY, k int, r int, pad text)")
    connection.execute(f"INSERT INTO ac SELECT g, g % 1000, ((g * 7919) % 100000)::int, "
                       f"md5(g::text) FROM generate_series(1::bigint, {rows}) g")
    connection.execute("CREATE INDEX ac_r ON ac (r)")
    connection.execute("VACUUM ANALYZE ac")
    print(f"{name}: loaded {rows} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    connections[name] = connection

def scan_line(connection, query):
    plan = [row[0] for row in connection.execute("EXPLAIN " + query).fetchall()]
    return next((line.strip().lstrip("-> ").split("  (")[0] for line in plan if "Scan" in line), "?")

print(f"\n{rows:,} rows, medians of {reps} (ms)\n")
print("| rows matched | PostgreSQL | tierdb before | tierdb after | after / before | after / PostgreSQL | before's plan | after's plan |")
print("|---:|---:|---:|---:|---:|---:|---|---|")
for share in [0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0]:
    query = f"SELECT count(*), sum(k) FROM ac WHERE r < {int(share * 100000)}"
    answers = {name: connection.execute(query).fetchall() for name, connection in connections.items()}
    assert len({repr(answer) for answer in answers.values()}) == 1, answers
    times = {name: [] for name in connections}
    for _ in range(reps):
        for name, connection in connections.items():
            started = time.perf_counter()
            connection.execute(query).fetchall()
            times[name].append((time.perf_counter() - started) * 1000)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"| {share:.1%} | {median['postgres']:.1f} | {median['tierdb before']:.1f} | "
          f"{median['tierdb after']:.1f} | {median['tierdb after'] / median['tierdb before']:.2f} | "
          f"{median['tierdb after'] / median['postgres']:.2f} | "
          f"{scan_line(connections['tierdb before'], query)} | {scan_line(connections['tierdb after'], query)} |")
PY
