#!/usr/bin/env python3
"""HNSW recall@10 and QPS over the wire for one server (tierdb or pgvector), on a seeded
SIFT-like data set (128-d, clustered, non-negative). Prints one JSON line per ef_search.
Usage: bench-vectors.py NAME PORT USER ROWS QUERIES (see scripts/bench-vectors.sh)."""
import json, sys, time

import numpy as np
import psycopg

name, port, user = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows, queries = int(sys.argv[4]), int(sys.argv[5])
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
for ef_search in (40, 100):
    cursor.execute(f"SET hnsw.ef_search = {ef_search}")
    found = 0
    start = time.perf_counter()
    for probe, expected in zip(probes, truth):
        cursor.execute("SELECT id FROM bench_vectors ORDER BY v <-> %s::vector LIMIT 10", (text(probe),))
        found += len(expected & {row[0] for row in cursor.fetchall()})
    seconds = time.perf_counter() - start
    print(json.dumps({
        "engine": name, "rows": rows, "dimensions": dimensions, "m": 16, "ef_construction": 64,
        "ef_search": ef_search, "recall_at_10": round(found / (10 * len(probes)), 4),
        "qps_1_client": round(len(probes) / seconds, 1), "load_s": round(load_seconds, 2),
        "build_s": round(build_seconds, 2),
    }), flush=True)
cursor.execute("DROP TABLE bench_vectors")
