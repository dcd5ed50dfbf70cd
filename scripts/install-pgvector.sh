#!/usr/bin/env bash
# Installs, idempotently, pgvector 0.8.2 into the PostgreSQL 15 the differential suites use
# (`$TIERDB_PG_BIN`, default Debian's /usr/lib/postgresql/15/bin): its source from the Go
# module proxy (the zip's sha256 pinned below), built here with PGXS
# (postgresql-server-dev-15, installed when pg_config is missing) and `make install`ed
# into that PostgreSQL's lib and extension directories. Prints the bin directory on stdout.
#
# The build targets x86-64-v3 (AVX2, FMA, F16C), not pgvector's default -march=native:
# pgvector's distance loops are vectorized by the compiler with reassociation, so their
# float bits follow the build's vector width and tuning (an AVX-512 build sums in 16 lanes;
# -march=native on an AMD Zen 2/3 avoids fused multiply-adds in the main loop). A fixed
# target gives the same bits on every machine that runs it, which the expectations in
# tests/slt/vector and tierdb's kernels (crates/vector/src/dense.rs) rely on. The build
# refuses a CPU without x86-64-v3 rather than install code that dies with SIGILL.
# Rebuilt when the installed build's stamp (version, source hash, flags) differs.
set -euo pipefail
version=0.8.2
source_sha256=8f2361d00b3523e2ed62fc1ca1914d6dc1acb0b345e0e5751a8d24cb4b9da1a9
source_url="https://proxy.golang.org/github.com/pgvector/pgvector/@v/v$version.zip"
optimization_flags="-march=x86-64-v3"
pg_bin="${TIERDB_PG_BIN:-/usr/lib/postgresql/15/bin}"
pg_config="$pg_bin/pg_config"
stamp_text="pgvector $version $source_sha256 OPTFLAGS=$optimization_flags with_llvm=no"

# Debian's postgresql-15 ships pg_config without the server headers PGXS builds against:
# both come with postgresql-server-dev-15.
server_headers_missing() {
    [[ ! -x "$pg_config" ]] || [[ ! -f "$("$pg_config" --includedir-server)/postgres.h" ]]
}
if server_headers_missing; then
    echo "install-pgvector: installing postgresql-server-dev-15 (pg_config, headers and PGXS)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq postgresql-server-dev-15 >&2 \
        || { apt-get update -qq >&2 && apt-get install -y -qq postgresql-server-dev-15 >&2; }
fi
test -x "$pg_config" || { echo "install-pgvector: $pg_config is missing" >&2; exit 1; }
library="$("$pg_config" --pkglibdir)/vector.so"
stamp="$("$pg_config" --pkglibdir)/vector.tierdb-build"
control="$("$pg_config" --sharedir)/extension/vector.control"
if [[ -f "$library" && -f "$control" && "$(cat "$stamp" 2>/dev/null)" == "$stamp_text" ]]; then
    echo "$pg_bin"
    exit 0
fi

if ! /lib64/ld-linux-x86-64.so.2 --help 2>/dev/null | grep -q 'x86-64-v3 (supported'; then
    echo "install-pgvector: this CPU does not support x86-64-v3 (AVX2, FMA, F16C): the" \
        "pinned pgvector build would die with SIGILL" >&2
    exit 1
fi
echo "install-pgvector: building pgvector $version from source into $pg_bin's PostgreSQL" >&2
work="$(mktemp -d /tmp/install-pgvector.XXXXXX)"
trap 'rm -rf "$work"' EXIT
curl -sSfL -o "$work/pgvector.zip" "$source_url"
echo "$source_sha256  $work/pgvector.zip" | sha256sum -c --quiet - >&2
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$work/pgvector.zip" "$work"
source="$work/github.com/pgvector/pgvector@v$version"
make_arguments=(USE_PGXS=1 "PG_CONFIG=$pg_config" "OPTFLAGS=$optimization_flags" with_llvm=no)
make -C "$source" -j"$(nproc)" "${make_arguments[@]}" >"$work/build.log" 2>&1 \
    || { cat "$work/build.log" >&2; exit 1; }
make -C "$source" "${make_arguments[@]}" install >"$work/install.log" 2>&1 \
    || { cat "$work/install.log" >&2; exit 1; }
echo "$stamp_text" >"$stamp"
echo "$pg_bin"
