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
import json, os, statistics, sys, threading, time, urllib.request

import numpy as np
import psycopg

import bench_vectors_chart  # scripts/bench_vectors_chart.py

rows, queries, passes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
servers = [target.split(":") for target in sys.argv[4:]]
dimensions, clusters, seed = 128, 100, 14

DATASET = os.environ.get("DATASET", "sift128")
# Embedding-like sets by width: 768-d (sentence models) and 1,536-d (OpenAI's embeddings,
# wider than a node page holds with codes: tierdb keeps them on vector pages, design 014).
EMBEDDINGS = {"embed768": 768, "embed1536": 1536}
assert DATASET == "sift128" or DATASET in EMBEDDINGS, "DATASET: sift128, embed768 or embed1536"
# The distance operator and operator class: l2 for the SIFT-like set, cosine for embeddings
# (as embeddings are searched); the filtered and ivfflat modes use the SIFT-like set.
OPERATOR, OPCLASS = ("<=>", "vector_cosine_ops") if DATASET in EMBEDDINGS else ("<->", "vector_l2_ops")

random = np.random.default_rng(seed)
centres = random.uniform(0, 100, (clusters, dimensions)).astype(np.float32)
def draw(count):
    picks = random.integers(0, clusters, count)
    noise = random.normal(0, 12, (count, dimensions)).astype(np.float32)
    return np.maximum(centres[picks] + noise, 0).round(1)

def embed(count, generator, topics, basis):
    """Unit-norm embedding-like vectors (768-d or 1,536-d): a topic centre plus a low-rank (64-d latent)
    variation plus a little isotropic noise, normalized, rounded to 4 decimals (what is
    sent as text) and normalized again in float64 for the truth."""
    picks = generator.integers(0, len(topics), count)
    latent = generator.normal(0, 0.12, (count, basis.shape[0]))
    vectors = topics[picks] + latent @ basis + generator.normal(0, 0.01, (count, basis.shape[1]))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.round(4)

def embed_set(rows, queries, width):
    """(data, probes, truth) of the embedding-like set; truth by exact cosine similarity."""
    generator = np.random.default_rng(seed)
    topics = generator.normal(0, 1, (100, width))
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    basis = generator.normal(0, 1, (64, width)) / np.sqrt(width)
    data, probes = embed(rows, generator, topics, basis), embed(queries, generator, topics, basis)
    normed = data / np.linalg.norm(data, axis=1, keepdims=True)
    similarities = (probes / np.linalg.norm(probes, axis=1, keepdims=True)) @ normed.T
    truth = [set(np.argsort(-row, kind="stable")[:10].tolist()) for row in similarities]
    return data, probes, truth

if DATASET in EMBEDDINGS:
    dimensions = EMBEDDINGS[DATASET]
    data, probes, truth = embed_set(rows, queries, dimensions)
else:
    data, probes = draw(rows), draw(queries)
    # Exact neighbours by brute force (squared l2 orders as l2 does).
    truth = []
    for probe in probes:
        distances = ((data - probe) ** 2).sum(axis=1)
        truth.append(set(np.argsort(distances, kind="stable")[:10].tolist()))

def text(vector):
    if DATASET in EMBEDDINGS:  # float64 rounded to 4 decimals: repr is the short decimal
        return "[" + ",".join(map(repr, vector.tolist())) + "]"
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
    if os.environ.get("MAINTENANCE_WORK_MEM"):  # the same build memory for both servers
        cursor.execute(f"SET maintenance_work_mem = '{os.environ['MAINTENANCE_WORK_MEM']}'")
    start = time.perf_counter()
    if ivfflat:
        cursor.execute(f"CREATE INDEX bench_vectors_v ON bench_vectors USING ivfflat (v vector_l2_ops) WITH (lists = {lists})")
    else:
        cursor.execute(f"CREATE INDEX bench_vectors_v ON bench_vectors USING hnsw (v {OPCLASS}) WITH (m = 16, ef_construction = 64)")
    build_seconds = time.perf_counter() - start
    others = [psycopg.connect(f"host=127.0.0.1 port={port} user={user} dbname={user}", autocommit=True).cursor()
              for _ in range(max(CLIENTS) - 1)]
    return {"name": name, "cursor": cursor, "cursors": [cursor] + others,
            "load_s": round(load_seconds, 2), "build_s": round(build_seconds, 2)}

def query_pass(cursor, first=0):
    """Queries per second and neighbours found over one pass of every probe, starting at
    probe `first` (and wrapping around)."""
    found = 0
    start = time.perf_counter()
    order = list(range(first, len(probe_texts))) + list(range(first))
    for probe_text, expected in ((probe_texts[position], truth[position]) for position in order):
        cursor.execute(f"SELECT id FROM bench_vectors ORDER BY v {OPERATOR} %s::vector LIMIT 10", (probe_text,))
        found += len(expected & {row[0] for row in cursor.fetchall()})
    return len(probe_texts) / (time.perf_counter() - start), found

def concurrent_pass(cursors):
    """QPS over all clients and neighbours found by the first, one pass of every probe on
    each cursor's thread at once, each client starting at another place in the list (in
    lockstep, clients larger than memory would wait on each other's page reads)."""
    if len(cursors) == 1:
        return query_pass(cursors[0])
    results = [None] * len(cursors)
    ready = threading.Barrier(len(cursors) + 1)
    def run(position):
        ready.wait()
        results[position] = query_pass(cursors[position], position * len(probe_texts) // len(cursors))
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


def connect(name, port, user, metrics_port=None):
    """A server whose table and index are already there (LARGER_PHASE=query)."""
    cursors = [psycopg.connect(f"host=127.0.0.1 port={port} user={user} dbname={user}", autocommit=True).cursor()
               for _ in range(max(CLIENTS))]
    return {"name": name, "cursor": cursors[0], "cursors": cursors, "load_s": None, "build_s": None}

def page_counters(server):
    """tierdb's page counters from /metrics (NAME:PORT:USER:METRICS_PORT), else None:
    buffer pool misses (pages read from the tier or the volume), tier hits, volume GETs."""
    if len(server.get("target", [])) < 4:
        return None
    names = {"tierdb_buffer_pool_misses_total": "dram_misses", "tierdb_tier_hits_total": "tier_hits",
             "tierdb_volume_get_requests_total": "volume_gets"}
    text = urllib.request.urlopen(f"http://127.0.0.1:{server['target'][3]}/metrics", timeout=10).read().decode()
    counters = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in names:
            counters[names[parts[0]]] = float(parts[1])
    return counters

def per_query(before, after, query_count):
    """Page reads per query between two page_counters readings."""
    if before is None or after is None:
        return {}
    return {f"{name}_per_query": round((after[name] - before.get(name, 0)) / query_count, 2) for name in after}

larger_phase = os.environ.get("LARGER_PHASE", "")
assert larger_phase in ("", "load", "query"), "LARGER_PHASE: load or query"
if larger_phase == "query":
    loaded = [connect(*server) for server in servers]
else:
    loaded = [load(*server[:3]) for server in servers]
for server, target in zip(loaded, servers):
    server["target"] = target
if larger_phase == "load":
    for server in loaded:
        print(json.dumps({"engine": server["name"], "phase": "load", "dataset": DATASET, "rows": rows,
                          "dimensions": dimensions, "load_s": server["load_s"], "build_s": server["build_s"],
                          "index_bytes_estimate": rows * 8192}), flush=True)
    sys.exit(0)
if filtered:
    run_filtered(loaded)
if churn:
    run_churn(loaded)
settings = os.environ.get("PROBES", "1 5 10 20") if ivfflat else os.environ.get("EF_SEARCH", "20 40 64 100")
records = []  # the JSON lines of the unfiltered runs, for CHART
def run_unfiltered(loaded, ef_search, clients):
    results = {server["name"]: [] for server in loaded}
    for server in loaded:
        setting = "ivfflat.probes" if ivfflat else "hnsw.ef_search"
        for cursor in server["cursors"]:
            cursor.execute(f"SET {setting} = {ef_search}")
        concurrent_pass(server["cursors"][:clients])  # warm-up pass, not counted
    before = {server["name"]: page_counters(server) for server in loaded}
    for _ in range(passes):
        for server in loaded:
            results[server["name"]].append(concurrent_pass(server["cursors"][:clients]))
    pages = {server["name"]: per_query(before[server["name"]], page_counters(server), passes * clients * len(probes))
             for server in loaded}
    qps = {}
    for server in loaded:
        passes_qps = [qps for qps, _ in results[server["name"]]]
        qps[server["name"]] = statistics.median(passes_qps)
        found = results[server["name"]][-1][1]
        index = {"index": "ivfflat", "lists": lists, "probes": ef_search} if ivfflat else \
            {"m": 16, "ef_construction": 64, "ef_search": ef_search}
        config = {"config": os.environ["LARGER_CONFIG"]} if os.environ.get("LARGER_CONFIG") else {}
        record = {
            "engine": server["name"], **config, "dataset": DATASET, "rows": rows, "dimensions": dimensions,
            **index, "recall_at_10": round(found / (10 * len(probes)), 4), "clients": clients,
            "qps": round(qps[server["name"]], 1),
            "qps_passes": [round(value, 1) for value in passes_qps], **pages[server["name"]],
            "load_s": server["load_s"], "build_s": server["build_s"],
        }
        records.append(record)
        print(json.dumps(record), flush=True)
    if "tierdb" in qps and "pgvector" in qps:
        print(json.dumps({"ef_search" if not ivfflat else "probes": ef_search, "clients": clients,
                          "qps_ratio_tierdb_to_pgvector": round(qps["tierdb"] / qps["pgvector"], 2)}), flush=True)

for ef_search in [] if filtered or churn else [int(value) for value in settings.split()]:
    for clients in CLIENTS:
        run_unfiltered(loaded, ef_search, clients)
if os.environ.get("CHART") and records:
    bench_vectors_chart.write_chart(records, os.environ["CHART"],
                                    f"HNSW recall@10 against QPS, {DATASET}, {rows:,} rows, m = 16, ef_construction = 64")
if not larger_phase:
    for server in loaded:
        server["cursor"].execute("DROP TABLE bench_vectors")
