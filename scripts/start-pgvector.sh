#!/usr/bin/env bash
# Starts PostgreSQL 15 with pgvector 0.8.2 (installed into it by install-pgvector.sh) on PORT
# as the postgres user, with a fresh data directory of its own, trust authentication on
# 127.0.0.1 and the `vector` extension created in database `postgres`. Idempotent: a server already answering on PORT
# is left running. TIERDB_PGVECTOR_OPTIONS adds server options (e.g. "-c shared_buffers=1GB").
# Usage: scripts/start-pgvector.sh PORT
set -euo pipefail
port="${1:?usage: start-pgvector.sh PORT}"
here="$(cd "$(dirname "$0")" && pwd)"
bin="$("$here/install-pgvector.sh")"
data="${TIERDB_PGVECTOR_DATA:-/tmp/pgvector-data-$port}"
run_as_postgres() {
    if [[ "$(id -un)" == postgres ]]; then "$@"; else runuser -u postgres -- "$@"; fi
}
if run_as_postgres "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
    exit 0
fi
rm -rf "$data"
mkdir -p "$data"
chown postgres "$data" 2>/dev/null || true
run_as_postgres "$bin/initdb" -A trust -U postgres -D "$data" >/dev/null
run_as_postgres "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
    -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 ${TIERDB_PGVECTOR_OPTIONS:-}" start >&2
run_as_postgres "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
    -c 'CREATE EXTENSION IF NOT EXISTS vector' >&2
