#!/usr/bin/env python3
"""The measuring half of scripts/bench-scan.sh (which starts the servers)."""
import os
import statistics
import time

import psycopg

ROWS = int(os.environ["ROWS"])
REPS = int(os.environ["REPS"])
LOAD_CHUNK = 500_000
QUERIES = [
    ("count(*)", "SELECT count(*) FROM t"),
    ("group by, 100 groups", "SELECT count(*) FROM (SELECT g % 100, count(*), sum(k) FROM t GROUP BY g % 100) x"),
]


def connection_string(name, port):
    if name == "postgres":
        return f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    return f"host=127.0.0.1 port={port} user=tierdb dbname=tierdb"


def load(name, dsn):
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS t")
        conn.execute("CREATE TABLE t (id bigint PRIMARY KEY, k bigint, g bigint, s text, pad text)")
        started = time.monotonic()
        for first in range(1, ROWS + 1, LOAD_CHUNK):
            last = min(first + LOAD_CHUNK - 1, ROWS)
            conn.execute(
                f"INSERT INTO t SELECT i, (i::bigint * 7919) % {ROWS}, i % {ROWS // 2}, md5(i::text), "
                f"repeat('x', 40) FROM generate_series({first}, {last}) i"
            )
        conn.execute("VACUUM")
        if name == "postgres":
            size = conn.execute("SELECT pg_total_relation_size('t')").fetchone()[0]
            print(f"{name}: loaded t ({ROWS} rows, {size / 2**20:.0f} MB with its index) in {time.monotonic() - started:.1f} s", flush=True)
        else:
            print(f"{name}: loaded t ({ROWS} rows) in {time.monotonic() - started:.1f} s", flush=True)


def timed(dsn, sql):
    with psycopg.connect(dsn, autocommit=True) as conn:
        started = time.monotonic()
        result = conn.execute(sql).fetchall()
        return time.monotonic() - started, result


def main():
    systems = []
    for item in os.environ["SYSTEMS"].split():
        name, port = item.split("=")
        systems.append((name, connection_string(name, port)))
    for name, dsn in systems:
        load(name, dsn)
    names = [name for name, _ in systems]
    print("| query | " + " | ".join(f"{name} s" for name in names) + " | "
          + " | ".join(f"{name}/postgres" for name in names if name != "postgres") + " |")
    print("|---|" + "---:|" * (2 * len(names) - 1))
    for label, sql in QUERIES:
        times = {name: [] for name in names}
        results = {}
        for _ in range(REPS):
            for name, dsn in systems:
                elapsed, result = timed(dsn, sql)
                times[name].append(elapsed)
                results[name] = result
        assert all(result == results["postgres"] for result in results.values()), results
        medians = {name: statistics.median(values) for name, values in times.items()}
        ratios = [f"{medians[name] / medians['postgres']:.2f}" for name in names if name != "postgres"]
        print(f"| {label} | " + " | ".join(f"{medians[name]:.3f}" for name in names) + " | "
              + " | ".join(ratios) + " |", flush=True)


main()
