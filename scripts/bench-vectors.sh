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
# DATASET=embed768 (or embed1536): 768-d (1,536-d) unit-norm embedding-like vectors searched by cosine distance
# instead of the SIFT-like set. CHART=path.svg: the recall/QPS curve drawn as an SVG.
# LARGER=1: tierdb alone, the index larger than memory: buffer pool 10% of the index, the
# tier on and off, the volume local + VOLUME_LATENCY_US (default 1000) and MinIO
# (LARGER_VOLUMES), QPS at CLIENTS (default 4) and page reads per query; see run_larger.
# MAINTENANCE_WORK_MEM (e.g. 256MB): set in both servers before CREATE INDEX (default: each
# server's default, 64MB in both).
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
minio_pid=""
metrics_port=${METRICS_PORT:-$((tierdb_port + 2))}
minio_port=${MINIO_PORT:-$((tierdb_port + 5))}

cleanup() {
    if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    if [[ -d "/tmp/pgvector-data-$pgvector_port" ]]; then
        runuser -u postgres -- "$("$here/install-pgvector.sh")/pg_ctl" -D "/tmp/pgvector-data-$pgvector_port" stop -m fast >/dev/null 2>&1 || true
        rm -rf "/tmp/pgvector-data-$pgvector_port"
    fi
    if [[ -n "$minio_pid" ]]; then kill "$minio_pid" 2>/dev/null || true; wait "$minio_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# LARGER=1: the index larger than memory, tierdb alone (see run_larger).
start_larger_tierdb() { # DATA_DIR BUFFER_POOL TIER_SIZE [volume flags...]
    local data=$1 pool=$2 tier=$3 log="$work/tierdb-$RANDOM.log"
    shift 3
    "$binary" serve --data-dir "$data" --listen "127.0.0.1:$tierdb_port" \
        --metrics-listen "127.0.0.1:$metrics_port" --buffer-pool "$pool" --tier-size "$tier" "$@" 2>"$log" &
    server_pid=$!
    for _ in $(seq 1200); do grep -q "listening on" "$log" && return 0; sleep 0.1; done
    echo "tierdb did not start: $(tail -5 "$log")" >&2
    return 1
}
stop_larger_tierdb() { # a clean shutdown (flush, checkpoint, tier index), then the next start
    kill -TERM "$server_pid"
    wait "$server_pid" || true
    server_pid=""
}
larger_queries() { # CONFIG: the same queries at CLIENTS (default 4), page reads per query
    LARGER_PHASE=query LARGER_CONFIG="$1" CLIENTS="${CLIENTS:-4}" python3 "$here/bench-vectors.py" \
        "$rows" "$queries" "$passes" "tierdb:$tierdb_port:tierdb:$metrics_port"
}
larger_volume_flags() { # VOLUME (local or minio): prints serve's volume flags
    if [[ $1 == local ]]; then
        echo "--volume local --volume-read-latency-us ${VOLUME_LATENCY_US:-1000}"
    else
        echo "--volume s3://tierdb/bench --s3-endpoint http://127.0.0.1:$minio_port" \
            "--s3-access-key-id benchadmin --s3-secret-access-key benchadmin-secret"
    fi
}
start_minio() {
    mkdir -p "$work/minio/tierdb"
    MINIO_ROOT_USER=benchadmin MINIO_ROOT_PASSWORD=benchadmin-secret "$("$here/install-minio.sh")" server \
        "$work/minio" --address "127.0.0.1:$minio_port" --console-address "127.0.0.1:$((minio_port + 1))" \
        >"$work/minio.log" 2>&1 &
    minio_pid=$!
    for _ in $(seq 100); do curl -s "http://127.0.0.1:$minio_port/minio/health/live" >/dev/null && return 0; sleep 0.2; done
    echo "MinIO did not start" >&2
    return 1
}
# Per volume (LARGER_VOLUMES, default "local minio"): load and build once with a 1 GiB pool
# and query in memory, then restart with a buffer pool of 10% of the index (one 8 KiB page
# per node) and the tier on (LARGER_TIER_SIZE, default 2GB), then off; the same queries.
run_larger() {
    local pool_mb=$((rows * 8192 / 10 / 1048576))
    for volume in ${LARGER_VOLUMES:-local minio}; do
        [[ $volume == minio && -z "$minio_pid" ]] && start_minio
        local data="$work/larger-$volume" flags
        read -r -a flags <<<"$(larger_volume_flags "$volume")"
        start_larger_tierdb "$data" 1GB "${LARGER_TIER_SIZE:-2GB}" "${flags[@]}"
        LARGER_PHASE=load python3 "$here/bench-vectors.py" "$rows" "$queries" "$passes" "tierdb:$tierdb_port:tierdb"
        larger_queries "$volume in-memory"
        stop_larger_tierdb
        echo "{\"volume\": \"$volume\", \"buffer_pool_mb\": $pool_mb, \"index_mb_estimate\": $((rows * 8192 / 1048576))}"
        start_larger_tierdb "$data" "${pool_mb}MB" "${LARGER_TIER_SIZE:-2GB}" "${flags[@]}"
        larger_queries "$volume tier-on"
        stop_larger_tierdb
        start_larger_tierdb "$data" "${pool_mb}MB" 0 "${flags[@]}"
        larger_queries "$volume tier-off"
        stop_larger_tierdb
        rm -rf "$data"
    done
}
if [[ "${LARGER:-}" == 1 ]]; then
    run_larger
    exit 0
fi

"$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$tierdb_port" \
    --metrics-listen 127.0.0.1:0 --buffer-pool "${budget_mb}MB" 2>"$work/tierdb.log" &
server_pid=$!
for _ in $(seq 600); do grep -q "listening on" "$work/tierdb.log" && break; sleep 0.1; done
# The same memory for both: tierdb's buffer pool and PostgreSQL's shared_buffers.
TIERDB_PGVECTOR_OPTIONS="-c shared_buffers=${budget_mb}MB" \
    TIERDB_PGVECTOR_DATA="/tmp/pgvector-data-$pgvector_port" "$here/start-pgvector.sh" "$pgvector_port" 2>/dev/null
python3 "$here/bench-vectors.py" "$rows" "$queries" "$passes" \
    "tierdb:$tierdb_port:tierdb" "pgvector:$pgvector_port:postgres"
