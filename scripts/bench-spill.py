#!/usr/bin/env python3
"""The measuring half of scripts/bench-spill.sh (which starts the two servers)."""
import os
import statistics
import time

import psycopg

ROWS = int(os.environ["ROWS"])
REPS = int(os.environ["REPS"])
WORK_MEMS = os.environ["WORK_MEMS"].split()
ENOUGH = os.environ["ENOUGH_WORK_MEM"]
TIERDB_PID = int(os.environ["TIERDB_PID"])
SYSTEMS = {
    "tierdb": f"host=127.0.0.1 port={os.environ['TIERDB_PORT']} user=tierdb dbname=tierdb",
    "postgres": f"host=127.0.0.1 port={os.environ['PG_PORT']} user=postgres dbname=postgres",
}
LOAD_CHUNK = 1_000_000

QUERIES = [
    ("order by, no limit", f"SELECT * FROM t ORDER BY s OFFSET {ROWS - 1}"),
    (f"group by, {ROWS // 2} groups", "SELECT count(*) FROM (SELECT g, count(*), sum(k) FROM t GROUP BY g) x"),
    ("count(distinct)", "SELECT count(DISTINCT k) FROM t"),
    ("hash join on non-key", "SELECT count(*) FROM t JOIN t2 ON t.k = t2.k"),
    ("except", "SELECT count(*) FROM (SELECT k FROM t EXCEPT SELECT k FROM t2) x"),
    ("create index", "CREATE INDEX t_s ON t (s)"),
    ("cursor read of every row", None),
]


def peak_rss_reset():
    # Writing 5 to clear_refs resets the peak RSS (VmHWM) of the process.
    with open(f"/proc/{TIERDB_PID}/clear_refs", "w") as handle:
        handle.write("5")


def peak_rss_mb():
    with open(f"/proc/{TIERDB_PID}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return -1


def load(system):
    with psycopg.connect(SYSTEMS[system], autocommit=True) as conn:
        for table, shift in (("t", 0), ("t2", 3)):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
            conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, k bigint, g bigint, s text, pad text)")
            started = time.monotonic()
            for first in range(1, ROWS + 1, LOAD_CHUNK):
                last = min(first + LOAD_CHUNK - 1, ROWS)
                conn.execute(
                    f"INSERT INTO {table} SELECT i, (i::bigint * 7919 + {shift}) % {ROWS}, i % {ROWS // 2}, md5(i::text), "
                    f"repeat('x', 40) FROM generate_series({first}, {last}) i"
                )
            conn.execute("VACUUM")
            print(f"{system}: loaded {table} ({ROWS} rows) in {time.monotonic() - started:.1f} s", flush=True)


def run_query(system, work_mem, label, sql):
    with psycopg.connect(SYSTEMS[system], autocommit=True) as conn:
        conn.execute(f"SET work_mem = '{work_mem}'")
        if label == "create index":
            conn.execute(f"SET maintenance_work_mem = '{work_mem}'")
            conn.execute("DROP INDEX IF EXISTS t_s")
        if system == "tierdb":
            peak_rss_reset()
        started = time.monotonic()
        try:
            if sql is None:
                rows = 0
                with conn.transaction():
                    with conn.cursor(name="everything") as cursor:
                        cursor.itersize = 10_000
                        cursor.execute("SELECT * FROM t")
                        for _ in cursor:
                            rows += 1
                assert rows == ROWS, rows
            else:
                conn.execute(sql).fetchall() if label != "create index" else conn.execute(sql)
        except Exception as error:  # a failure is a result to print, not a crash
            return None, str(error).split("\n")[0]
        elapsed = time.monotonic() - started
        rss = peak_rss_mb() if system == "tierdb" else None
        if label == "create index":
            conn.execute("DROP INDEX IF EXISTS t_s")
        return elapsed, rss


def main():
    for system in SYSTEMS:
        load(system)
    results = {}
    settings = WORK_MEMS + [ENOUGH]
    for work_mem in settings:
        for label, sql in QUERIES:
            for rep in range(REPS):
                order = list(SYSTEMS) if rep % 2 == 0 else list(reversed(SYSTEMS))
                for system in order:
                    if work_mem == ENOUGH and system == "postgres":
                        continue
                    elapsed, extra = run_query(system, work_mem, label, sql)
                    shown = "FAILED " + extra if elapsed is None else f"{elapsed:.2f} s" + (f" rss_peak={extra} MB" if extra else "")
                    print(f"work_mem={work_mem} {label} {system} rep={rep + 1}: {shown}", flush=True)
                    results.setdefault((work_mem, label, system), []).append((elapsed, extra))
    print()
    print(f"| query | work_mem | tierdb s | PostgreSQL s | tierdb/PostgreSQL | tierdb at {ENOUGH} s | cliff ratio | tierdb peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for work_mem in WORK_MEMS:
        for label, _ in QUERIES:
            def median(system, setting=work_mem):
                times = [elapsed for elapsed, _ in results.get((setting, label, system), []) if elapsed is not None]
                return statistics.median(times) if len(times) == REPS else None
            ours, theirs, enough = median("tierdb"), median("postgres"), median("tierdb", ENOUGH)
            rss = max((extra for elapsed, extra in results[(work_mem, label, "tierdb")] if elapsed is not None), default=None)
            fmt = lambda value: "failed" if value is None else f"{value:.2f}"
            ratio = "-" if ours is None or theirs is None else f"{ours / theirs:.2f}"
            cliff = "-" if ours is None or enough is None else f"{ours / enough:.2f}"
            print(f"| {label} | {work_mem} | {fmt(ours)} | {fmt(theirs)} | {ratio} | {fmt(enough)} | {cliff} | {rss if rss is not None else '-'} |")


main()
