#!/usr/bin/env bash
# Installs, idempotently, every tool tierdb's tests need that is not part of the Rust
# toolchain, and prints `export` lines for the paths the tests look up.
#
# MinIO (the real S3 server for the S3 volume tests), built from the Go module proxy;
# PostgreSQL 15 (the reference the SQL suite is compared with, and pgbench), sysbench, psql;
# psycopg 3, pytest, asyncpg and pandas from PyPI for the Python client tests; node, npm and
# node-postgres (tests/node, `npm ci` against its package-lock.json) for the node client test;
# Chromium, headless, for the /dashboard test (crates/cli/tests/dashboard.rs); pgvector
# 0.8.2 built from source into PostgreSQL 15 (scripts/install-pgvector.sh) for the vector
# differential suite.
# Debian packages are installed only when missing (apt-get update runs at most once).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

apt_packages=(postgresql-15 postgresql-client-15 sysbench python3-pip openssl chromium)
missing=()
for package in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
    echo "install-deps: installing Debian packages: ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq "${missing[@]}" >&2
fi

if ! python3 -c "import psycopg, pytest" 2>/dev/null; then
    echo "install-deps: installing psycopg and pytest from PyPI" >&2
    python3 -m pip install -q --break-system-packages 'psycopg[binary]>=3.1' pytest >&2 2>/dev/null \
        || python3 -m pip install -q 'psycopg[binary]>=3.1' pytest >&2
fi

if ! python3 -c "import pgvector, numpy, sqlalchemy" 2>/dev/null; then
    echo "install-deps: installing pgvector's Python adapter, numpy and SQLAlchemy from PyPI" >&2
    python3 -m pip install -q --break-system-packages pgvector numpy sqlalchemy >&2 2>/dev/null \
        || python3 -m pip install -q pgvector numpy sqlalchemy >&2
fi

if ! python3 -c "import alembic, psycopg2" 2>/dev/null; then
    echo "install-deps: installing Alembic and psycopg2 from PyPI" >&2
    python3 -m pip install -q --break-system-packages alembic psycopg2-binary >&2 2>/dev/null \
        || python3 -m pip install -q alembic psycopg2-binary >&2
fi

if ! python3 -c "import asyncpg, pandas" 2>/dev/null; then
    echo "install-deps: installing asyncpg and pandas from PyPI" >&2
    python3 -m pip install -q --break-system-packages asyncpg pandas >&2 2>/dev/null \
        || python3 -m pip install -q asyncpg pandas >&2
fi

# node-postgres at the version tests/node/package-lock.json pins; node and npm from Debian
# when the machine has no node of its own.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "install-deps: installing node and npm from Debian" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq nodejs npm >&2
fi
node_tests="$here/../tests/node"
pinned_pg="$(node -p "require('$node_tests/package.json').dependencies.pg")"
installed_pg="$(node -p "require('$node_tests/node_modules/pg/package.json').version" 2>/dev/null || true)"
if [[ "$installed_pg" != "$pinned_pg" ]]; then
    echo "install-deps: installing node-postgres $pinned_pg in tests/node (npm ci)" >&2
    (cd "$node_tests" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

minio="$("$here/install-minio.sh")"
echo "export TIERDB_MINIO_BIN=$minio"

# pgvector 0.8.2, built from source into PostgreSQL 15, for the vector differential suite
# (crates/cli/tests/slt_vector.rs) and scripts/bench-vectors.sh.
"$here/install-pgvector.sh" >/dev/null
