#!/usr/bin/env python3
"""HNSW recall@10 and QPS over the wire, tierdb and pgvector side by side, on a seeded
SIFT-like data set (128-d, clustered, non-negative). Loads and indexes each server in turn,
then alternates query passes between them (pass 1 on every server, then pass 2, ...), so
that a busy machine slows both alike; QPS is the median pass. Prints one JSON line per
server and ef_search. Usage: bench-vectors.py ROWS QUERIES PASSES NAME:PORT:USER...
(see scripts/bench-vectors.sh). EF_SEARCH: the ef_search values (default "20 40 64 100")."""
import json, os, statistics, sys, time

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

def load(name, port, user):
    connection = psycopg.connect(f"host=127.0.0.1 port={port} user={user} dbname={user}", autocommit=True)
    cursor = connection.cursor()
    cursor.execute("DROP TABLE IF EXISTS bench_vectors")
    cursor.execute(f"CREATE TABLE bench_vectors (id integer PRIMARY KEY, v vector({dimensions}))")
    start = time.perf_counter()
    with cursor.copy("COPY bench_vectors (id, v) FROM STDIN") as copy:
        for index, vector in enumerate(data):
            copy.write_row((index, text(vector)))
    load_seconds = time.perf_counter() - start
    start = time.perf_counter()
    cursor.execute("CREATE INDEX bench_vectors_v ON bench_vectors USING hnsw (v vector_l2_ops) WITH (m = 16, ef_construction = 64)")
    build_seconds = time.perf_counter() - start
    return {"name": name, "cursor": cursor, "load_s": round(load_seconds, 2), "build_s": round(build_seconds, 2)}

def query_pass(cursor):
    """Queries per second and neighbours found over one pass of every probe."""
    found = 0
    start = time.perf_counter()
    for probe_text, expected in zip(probe_texts, truth):
        cursor.execute("SELECT id FROM bench_vectors ORDER BY v <-> %s::vector LIMIT 10", (probe_text,))
        found += len(expected & {row[0] for row in cursor.fetchall()})
    return len(probe_texts) / (time.perf_counter() - start), found

loaded = [load(*server) for server in servers]
for ef_search in [int(value) for value in os.environ.get("EF_SEARCH", "20 40 64 100").split()]:
    results = {server["name"]: [] for server in loaded}
    for server in loaded:
        server["cursor"].execute(f"SET hnsw.ef_search = {ef_search}")
        query_pass(server["cursor"])  # warm-up pass, not counted
    for _ in range(passes):
        for server in loaded:
            results[server["name"]].append(query_pass(server["cursor"]))
    for server in loaded:
        passes_qps = [qps for qps, _ in results[server["name"]]]
        found = results[server["name"]][-1][1]
        print(json.dumps({
            "engine": server["name"], "rows": rows, "dimensions": dimensions, "m": 16,
            "ef_construction": 64, "ef_search": ef_search,
            "recall_at_10": round(found / (10 * len(probes)), 4),
            "qps_1_client": round(statistics.median(passes_qps), 1),
            "qps_passes": [round(qps, 1) for qps in passes_qps],
            "load_s": server["load_s"], "build_s": server["build_s"],
        }), flush=True)
for server in loaded:
    server["cursor"].execute("DROP TABLE bench_vectors")
