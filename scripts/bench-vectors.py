#!/usr/bin/env python3
"""HNSW recall@10 and QPS over the wire, tierdb and pgvector side by side, on a seeded
SIFT-like data set (128-d, clustered, non-negative). Loads and indexes each server in turn,
then alternates query passes between them (pass 1 on every server, then pass 2, ...), so
that a busy machine slows both alike; QPS is the median pass. Prints one JSON line per
server and ef_search. Usage: bench-vectors.py ROWS QUERIES PASSES NAME:PORT:USER...
(see scripts/bench-vectors.sh). EF_SEARCH: the ef_search values (default "20 40 64 100").
FILTERED=1: the filtered mode instead (issue 14, filtered search): columns f10 = id % 10 and
f100 = id % 100 (independent of the vectors), queries `WHERE f10 = x` (10% of rows) and
`WHERE f100 = x` (1%) `ORDER BY v <-> q LIMIT 10` with each ITERATIVE_SCAN (default
"relaxed_order strict_order") at FILTER_EF_SEARCH (default 40) on both servers: recall@10
against the exact filtered answer, the fraction of queries whose LIMIT was filled, median
latency, QPS and the ratio of tierdb's QPS to pgvector's.
INDEX=ivfflat: an ivfflat index instead, WITH (lists = LISTS) (default rows / 1000, pgvector's
advice), queries at each PROBES value (default "1 5 10 20") instead of ef_search.
CLIENTS: the client counts (default "1"; e.g. "1 2 4"): at each, that many connections (one
thread each) run the whole query list at once, and QPS is the total queries over the
pass's wall time (not in the filtered mode).
CHURN=1: the churn mode instead (issue 14): after the load and build, DELETE 10% of the rows
and VACUUM on every server (timed), then recall@10 at each EF_SEARCH (default "40") against
brute force over the remaining rows, before and after the VACUUM and on a fresh build over
them; see run_churn."""
import json, os, statistics, sys, threading, time

import numpy as np
import psycopg

rows, queries, passes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
servers = [target.split(":") for target in sys.argv[4:]]
dimensions, clusters, seed = 128, 100, 14

random = np.random.default_rng(seed)
centres = random.uniform(0, 100, (clusters, dimensions)).astype(np.float32)
def draw(count):
    picks = random.integers(0, clusters, count)
    noise = random.normal(0, 12, (count, dimensions)).astype(np.float32)
    return np.maximum(centres[picks] + noise, 0).round(1)
data, probes = draw(rows), draw(queries)
# Exact neighbours by brute force (squared l2 orders as l2 does).
truth = []
for probe in probes:
    distances = ((data - probe) ** 2).sum(axis=1)
    truth.append(set(np.argsort(distances, kind="stable")[:10].tolist()))

def text(vector):
    return "[" + ",".join(f"{value:g}" for value in vector) + "]"
probe_texts = [text(probe) for probe in probes]

filtered = os.environ.get("FILTERED") == "1"
ivfflat = os.environ.get("INDEX", "hnsw") == "ivfflat"
lists = int(os.environ.get("LISTS", str(max(1, rows // 1000))))
CLIENTS = [int(value) for value in os.environ.get("CLIENTS", "1").split()]
assert CLIENTS and min(CLIENTS) >= 1, "CLIENTS: positive client counts"
# Filtered mode: (column, modulus); a query's filter value is its position modulo it.
FILTERS = [("f10", 10), ("f100", 100)]

def load(name, port, user):
    connection = psycopg.connect(f"host=127.0.0.1 port={port} user={user} dbname={user}", autocommit=True)
    cursor = connection.cursor()
    cursor.execute("DROP TABLE IF EXISTS bench_vectors")
    cursor.execute(f"CREATE TABLE bench_vectors (id integer PRIMARY KEY, f10 integer, f100 integer, v vector({dimensions}))")
    start = time.perf_counter()
    with cursor.copy("COPY bench_vectors (id, f10, f100, v) FROM STDIN") as copy:
        for index, vector in enumerate(data):
            copy.write_row((index, index % 10, index % 100, text(vector)))
    load_seconds = time.perf_counter() - start
    start = time.perf_counter()
    if ivfflat:
        cursor.execute(f"CREATE INDEX bench_vectors_v ON bench_vectors USING ivfflat (v vector_l2_ops) WITH (lists = {lists})")
    else:
        cursor.execute("CREATE INDEX bench_vectors_v ON bench_vectors USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 64)")
    build_seconds = time.perf_counter() - start
    others = [psycopg.connect(f"host=127.0.0.1 port={port} user={user} dbname={user}", autocommit=True).cursor()
              for _ in range(max(CLIENTS) - 1)]
    return {"name": name, "cursor": cursor, "cursors": [cursor] + others,
            "load_s": round(load_seconds, 2), "build_s": round(build_seconds, 2)}

def query_pass(cursor):
    """Queries per second and neighbours found over one pass of every probe."""
    found = 0
    start = time.perf_counter()
    for probe_text, expected in zip(probe_texts, truth):
        cursor.execute("SELECT id FROM bench_vectors ORDER BY v <-> %s::vector LIMIT 10", (probe_text,))
        found += len(expected & {row[0] for row in cursor.fetchall()})
    return len(probe_texts) / (time.perf_counter() - start), found

def concurrent_pass(cursors):
    """QPS over all clients and neighbours found by the first, one pass of every probe on
    each cursor's thread at once."""
    if len(cursors) == 1:
        return query_pass(cursors[0])
    results = [None] * len(cursors)
    ready = threading.Barrier(len(cursors) + 1)
    def run(position):
        ready.wait()
        results[position] = query_pass(cursors[position])
    threads = [threading.Thread(target=run, args=(position,)) for position in range(len(cursors))]
    for thread in threads:
        thread.start()
    ready.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return len(cursors) * len(probe_texts) / (time.perf_counter() - start), results[0][1]

def filtered_truth(modulus):
    """The exact 10 nearest rows with id % modulus == the query's position % modulus."""
    ids = np.arange(rows)
    found = []
    for position, probe in enumerate(probes):
        keep = ids[ids % modulus == position % modulus]
        distances = ((data[keep] - probe) ** 2).sum(axis=1)
        found.append(set(keep[np.argsort(distances, kind="stable")[:10]].tolist()))
    return found

def filtered_pass(cursor, column, modulus, expected):
    """(QPS, neighbours found, queries with 10 rows, per-query seconds) over one pass."""
    found, filled, latencies = 0, 0, []
    sql = f"SELECT id FROM bench_vectors WHERE {column} = %s ORDER BY v <-> %s::vector LIMIT 10"
    start = time.perf_counter()
    for position, (probe_text, truth_ids) in enumerate(zip(probe_texts, expected)):
        began = time.perf_counter()
        cursor.execute(sql, (position % modulus, probe_text))
        result = [row[0] for row in cursor.fetchall()]
        latencies.append(time.perf_counter() - began)
        found += len(truth_ids & set(result))
        filled += len(result) == 10
    return len(probe_texts) / (time.perf_counter() - start), found, filled, latencies

def run_filtered(loaded):
    ef_search = int(os.environ.get("FILTER_EF_SEARCH", "40"))
    for column, modulus in FILTERS:
        expected = filtered_truth(modulus)
        for iterative in os.environ.get("ITERATIVE_SCAN", "relaxed_order strict_order").split():
            results = {server["name"]: [] for server in loaded}
            for server in loaded:
                server["cursor"].execute(f"SET hnsw.ef_search = {ef_search}")
                server["cursor"].execute(f"SET hnsw.iterative_scan = {iterative}")
                server["cursor"].execute(f"EXPLAIN SELECT id FROM bench_vectors WHERE {column} = 0 ORDER BY v <-> %s::vector LIMIT 10", (probe_texts[0],))
                server["uses_index"] = any("Index Scan" in row[0] for row in server["cursor"].fetchall())
                filtered_pass(server["cursor"], column, modulus, expected)  # warm-up
            for _ in range(passes):
                for server in loaded:
                    results[server["name"]].append(filtered_pass(server["cursor"], column, modulus, expected))
            report_filtered(loaded, results, (column, modulus, iterative, ef_search))

def report_filtered(loaded, results, case):
    column, modulus, iterative, ef_search = case
    qps = {}
    for server in loaded:
        passes_run = results[server["name"]]
        qps[server["name"]] = statistics.median(run[0] for run in passes_run)
        latencies = [seconds for run in passes_run for seconds in run[3]]
        print(json.dumps({
            "engine": server["name"], "rows": rows, "filter": f"{column} = x",
            "selectivity": 1 / modulus, "iterative_scan": iterative, "m": 16,
            "ef_construction": 64, "ef_search": ef_search,
            "recall_at_10": round(passes_run[-1][1] / (10 * len(probes)), 4),
            "limit_filled": round(passes_run[-1][2] / len(probes), 4),
            "latency_ms_median": round(1000 * statistics.median(latencies), 3),
            "qps_1_client": round(qps[server["name"]], 1),
            "qps_passes": [round(run[0], 1) for run in passes_run],
            "uses_index": server["uses_index"],
            "load_s": server["load_s"], "build_s": server["build_s"],
        }), flush=True)
    if "tierdb" in qps and "pgvector" in qps:
        print(json.dumps({"filter": f"{column} = x", "iterative_scan": iterative,
                          "qps_ratio_tierdb_to_pgvector": round(qps["tierdb"] / qps["pgvector"], 2)}), flush=True)

churn = os.environ.get("CHURN") == "1"
churn_truths = {}
def churn_truth(kept):
    """Brute-force neighbours over the rows `kept` (computed once, outside the timing)."""
    if "kept" not in churn_truths:
        ids = np.flatnonzero(kept)
        churn_truths["kept"] = [set(ids[np.argsort(((data[ids] - probe) ** 2).sum(axis=1), kind="stable")[:10]].tolist())
                                for probe in probes]
    return churn_truths["kept"]

def churn_recall(cursor, table, kept):
    """Recall@10 against brute force over the rows `kept` (a boolean mask over data), the
    fraction of queries whose LIMIT was filled, and queries per second, for one pass."""
    found = filled = 0
    answers = []
    start = time.perf_counter()
    for probe_text in probe_texts:
        cursor.execute(f"SELECT id FROM {table} ORDER BY v <-> %s::vector LIMIT 10", (probe_text,))
        answers.append({row[0] for row in cursor.fetchall()})
    seconds = time.perf_counter() - start
    for expected, returned in zip(churn_truth(kept), answers):
        found += len(expected & returned)
        filled += len(returned) == 10
    return found / (10 * len(probes)), filled / len(probes), len(probes) / seconds

def run_churn(loaded):
    """CHURN=1: DELETE a tenth of the rows (id % 10 = 3) on every server, VACUUM (timed: the
    purge of rows and index entries, and of the HNSW graph), then recall@10 at each
    ef_search against brute force over the rows left, before and after the VACUUM, and on a
    fresh build over the same rows (table bench_fresh)."""
    kept = np.arange(rows) % 10 != 3
    ef_values = [int(value) for value in os.environ.get("EF_SEARCH", "40").split()]
    for server in loaded:
        cursor = server["cursor"]
        start = time.perf_counter()
        cursor.execute("DELETE FROM bench_vectors WHERE f10 = 3")
        server["delete_s"] = round(time.perf_counter() - start, 2)
        cursor.execute(f"SET hnsw.ef_search = {ef_values[0]}")
        server["before_vacuum"] = churn_recall(cursor, "bench_vectors", kept)
        start = time.perf_counter()
        cursor.execute("VACUUM bench_vectors")
        server["vacuum_s"] = round(time.perf_counter() - start, 2)
        cursor.execute("DROP TABLE IF EXISTS bench_fresh")
        cursor.execute(f"CREATE TABLE bench_fresh (id integer PRIMARY KEY, v vector({dimensions}))")
        cursor.execute("INSERT INTO bench_fresh SELECT id, v FROM bench_vectors")
        start = time.perf_counter()
        cursor.execute("CREATE INDEX bench_fresh_v ON bench_fresh USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 64)")
        server["fresh_build_s"] = round(time.perf_counter() - start, 2)
    for ef_search in ef_values:
        for server in loaded:
            cursor = server["cursor"]
            cursor.execute(f"SET hnsw.ef_search = {ef_search}")
            purged = [churn_recall(cursor, "bench_vectors", kept) for _ in range(passes)]
            fresh = [churn_recall(cursor, "bench_fresh", kept) for _ in range(passes)]
            before = server["before_vacuum"]
            print(json.dumps({
                "engine": server["name"], "mode": "churn", "rows": rows, "deleted": int(rows - kept.sum()),
                "ef_search": ef_search, "delete_s": server["delete_s"], "vacuum_s": server["vacuum_s"],
                "recall_at_10_before_vacuum": round(before[0], 4) if ef_search == ef_values[0] else None,
                "filled_before_vacuum": round(before[1], 3) if ef_search == ef_values[0] else None,
                "recall_at_10_after_vacuum": round(purged[-1][0], 4), "filled_after_vacuum": round(purged[-1][1], 3),
                "recall_at_10_fresh": round(fresh[-1][0], 4),
                "qps_after_vacuum": round(statistics.median(run[2] for run in purged), 1),
                "qps_fresh": round(statistics.median(run[2] for run in fresh), 1),
                "build_s": server["build_s"], "fresh_build_s": server["fresh_build_s"],
            }), flush=True)
    for server in loaded:
        server["cursor"].execute("DROP TABLE bench_fresh")

loaded = [load(*server) for server in servers]
if filtered:
    run_filtered(loaded)
if churn:
    run_churn(loaded)
settings = os.environ.get("PROBES", "1 5 10 20") if ivfflat else os.environ.get("EF_SEARCH", "20 40 64 100")
def run_unfiltered(loaded, ef_search, clients):
    results = {server["name"]: [] for server in loaded}
    for server in loaded:
        setting = "ivfflat.probes" if ivfflat else "hnsw.ef_search"
        for cursor in server["cursors"]:
            cursor.execute(f"SET {setting} = {ef_search}")
        concurrent_pass(server["cursors"][:clients])  # warm-up pass, not counted
    for _ in range(passes):
        for server in loaded:
            results[server["name"]].append(concurrent_pass(server["cursors"][:clients]))
    qps = {}
    for server in loaded:
        passes_qps = [qps for qps, _ in results[server["name"]]]
        qps[server["name"]] = statistics.median(passes_qps)
        found = results[server["name"]][-1][1]
        index = {"index": "ivfflat", "lists": lists, "probes": ef_search} if ivfflat else \
            {"m": 16, "ef_construction": 64, "ef_search": ef_search}
        print(json.dumps({
            "engine": server["name"], "rows": rows, "dimensions": dimensions, **index,
            "recall_at_10": round(found / (10 * len(probes)), 4), "clients": clients,
            "qps": round(qps[server["name"]], 1),
            "qps_passes": [round(value, 1) for value in passes_qps],
            "load_s": server["load_s"], "build_s": server["build_s"],
        }), flush=True)
    if "tierdb" in qps and "pgvector" in qps:
        print(json.dumps({"ef_search" if not ivfflat else "probes": ef_search, "clients": clients,
                          "qps_ratio_tierdb_to_pgvector": round(qps["tierdb"] / qps["pgvector"], 2)}), flush=True)

for ef_search in [] if filtered or churn else [int(value) for value in settings.split()]:
    for clients in CLIENTS:
        run_unfiltered(loaded, ef_search, clients)
for server in loaded:
    server["cursor"].execute("DROP TABLE bench_vectors")
