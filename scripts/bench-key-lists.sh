#!/usr/bin/env bash
# Key lists side by side in one run: a tierdb binary from before key-list access (BEFORE:
# IN lists and `= ANY` read by a full scan), the current one (AFTER: one lookup per listed
# key, plan/key_lists.rs) and PostgreSQL 15, on the same ROWS-row table
# kl (id bigint primary key, k int, pad text) and the same memory. Queries, each with LIST
# random keys (a fresh list per run, the same lists on every system):
#   in-list   SELECT count(*), sum(k) FROM kl WHERE id IN (<literals>)      (simple protocol)
#   any-array SELECT id, k FROM kl WHERE id = ANY(%s)   (a bound int8[] parameter, psycopg)
#   or-list   SELECT count(*) FROM kl WHERE id = a OR id = b OR ...         (10 keys)
# Each query runs REPS times per system, the three interleaved so that a shared machine's
# load falls on all alike; prints the median milliseconds and the ratios, after checking that
# the three systems return the same rows. The servers run under scripts/lib/side-by-side.sh
# (BUDGET_MB of buffer pool and shared_buffers; PORT_BASE picks the ports).
#
#   BEFORE=/tmp/executor-before-tierdb scripts/bench-key-lists.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-500000}"
LIST="${LIST:-100}"
REPS="${REPS:-20}"
BUDGET_MB="${BUDGET_MB:-256}"
before="${BEFORE:?BEFORE=path of a tierdb binary without key-list access}"
binary="${AFTER:-target/release/tierdb}"
# shellcheck source=scripts/lib/side-by-side.sh
source scripts/lib/side-by-side.sh
side_by_side_init bench-key-lists python3 "$before"
start_postgres_at pg "$pg_port" jit=off
start_tierdb_at before "$before" "$tierdb_port"
after_port=$((tierdb_port + 3))
start_tierdb_at after "$binary" "$after_port"

ROWS="$ROWS" LIST="$LIST" REPS="$REPS" python3 - "$pg_port" "$tierdb_port" "$after_port" <<'EOF'
import os, random, statistics, sys, time
import psycopg

rows, size, reps = int(os.environ["ROWS"]), int(os.environ["LIST"]), int(os.environ["REPS"])
ports = dict(zip(["postgres", "tierdb before", "tierdb after"], sys.argv[1:4]))
users = {"postgres": "postgres", "tierdb before": "tierdb", "tierdb after": "tierdb"}
connections = {}
for name, port in ports.items():
    connection = psycopg.connect(f"host=127.0.0.1 port={port} user={users[name]} dbname=postgres",
                                 autocommit=True)
    connection.execute("CREATE TABLE kl (id bigint PRIMARY KEY, k int, pad text)")
    started = time.perf_counter()
    connection.execute(f"INSERT INTO kl SELECT g, g % 1000, md5(g::text) FROM generate_series(1, {rows}) g")
    connection.execute("ANALYZE kl")
    print(f"{name}: loaded {rows} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    connections[name] = connection

def in_list(keys):
    return (f"SELECT count(*), sum(k) FROM kl WHERE id IN ({', '.join(map(str, keys))})", None)

def any_array(keys):
    return ("SELECT id, k FROM kl WHERE id = ANY(%s) ORDER BY id", (keys,))

def or_list(keys):
    return ("SELECT count(*) FROM kl WHERE " + " OR ".join(f"id = {key}" for key in keys[:10]), None)

random.seed(24)
queries = {"in-list": in_list, "any-array": any_array, "or-list": or_list}
times = {(query, name): [] for query in queries for name in connections}
for query, make in queries.items():
    for rep in range(reps):
        keys = random.sample(range(1, rows + 1), size)
        sql, parameters = make(keys)
        results = {}
        for name, connection in connections.items():
            started = time.perf_counter()
            results[name] = connection.execute(sql, parameters).fetchall()
            times[(query, name)].append((time.perf_counter() - started) * 1000)
        assert len({repr(sorted(map(repr, rows))) for rows in results.values()}) == 1, (query, results)

print(f"\n{rows} rows, {size} keys per list, median of {reps} runs (ms)\n")
print("| query | PostgreSQL | tierdb before | tierdb after | after / before | after / PostgreSQL |")
print("|---|---:|---:|---:|---:|---:|")
for query in queries:
    pg, old, new = (statistics.median(times[(query, name)]) for name in connections)
    print(f"| {query} | {pg:.2f} | {old:.2f} | {new:.2f} | {new / old:.3f} | {new / pg:.2f} |")
EOF
