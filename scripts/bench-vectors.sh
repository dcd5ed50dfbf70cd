#!/usr/bin/env bash
# HNSW side by side: a tierdb binary and pgvector 0.8.2 (scripts/start-pgvector.sh), both
# running, the same seeded SIFT-like data (128-d, 100 clusters, non-negative; ROWS rows,
# default 100,000), the same m = 16 / ef_construction = 64; recall@10 against brute force,
# load and build times, and queries per second from one client at each EF_SEARCH (default "20 40 64 100"): a
# warm-up pass, then PASSES passes (default 5) alternating between the servers, the median
# reported. One JSON line per engine and ef_search (scripts/bench-vectors.py). FILTERED=1:
# filtered queries (10% and 1% of rows) with iterative scans instead, see bench-vectors.py.
# INDEX=ivfflat: an ivfflat index (LISTS, default ROWS / 1000) queried at each PROBES value
# (default "1 5 10 20"), see bench-vectors.py. CLIENTS: client counts (default "1", e.g.
# "1 2 4"), each client a connection and a thread running every query at once.
# CHURN=1: DELETE 10% of the rows and VACUUM both (timed), then recall@10 over the rows left
# against a fresh build on them, see bench-vectors.py.
# Not part of CI; timings are the machine's.
#
#   scripts/bench-vectors.sh path/to/tierdb
set -euo pipefail

binary=${1:?usage: bench-vectors.sh path/to/tierdb}
rows=${ROWS:-100000}
queries=${QUERIES:-200}
passes=${PASSES:-5}
budget_mb=${BUDGET_MB:-1024}
tierdb_port=${TIERDB_PORT:-55482}
pgvector_port=${PGVECTOR_PORT:-55483}
here="$(cd "$(dirname "$0")" && pwd)"
work=$(mktemp -d /tmp/bench-vectors.XXXXXX)
server_pid=""

cleanup() {
    if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    if [[ -d "/tmp/pgvector-data-$pgvector_port" ]]; then
        runuser -u postgres -- "$("$here/install-pgvector.sh")/pg_ctl" -D "/tmp/pgvector-data-$pgvector_port" stop -m fast >/dev/null 2>&1 || true
        rm -rf "/tmp/pgvector-data-$pgvector_port"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

"$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$tierdb_port" \
    --metrics-listen 127.0.0.1:0 --buffer-pool "${budget_mb}MB" 2>"$work/tierdb.log" &
server_pid=$!
for _ in $(seq 600); do grep -q "listening on" "$work/tierdb.log" && break; sleep 0.1; done
# The same memory for both: tierdb's buffer pool and PostgreSQL's shared_buffers.
TIERDB_PGVECTOR_OPTIONS="-c shared_buffers=${budget_mb}MB" \
    TIERDB_PGVECTOR_DATA="/tmp/pgvector-data-$pgvector_port" "$here/start-pgvector.sh" "$pgvector_port" 2>/dev/null
python3 "$here/bench-vectors.py" "$rows" "$queries" "$passes" \
    "tierdb:$tierdb_port:tierdb" "pgvector:$pgvector_port:postgres"
