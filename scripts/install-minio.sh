#!/usr/bin/env bash
# Installs the MinIO server used by tierdb's S3 volume tests (crates/storage/tests/
# volume_conformance.rs), and prints the path of the binary.
#
# Idempotent: if `minio` is already on PATH, at $HOME/go/bin/minio or in Go's install directory
# (GOBIN, else the first GOPATH entry's bin), it only prints that path.
# Otherwise it builds MinIO from source with `go install`, because the Go module proxy is the
# only download channel we rely on (no prebuilt binaries are fetched). Works from any directory.
#
# Usage: scripts/install-minio.sh   (prints e.g. /root/go/bin/minio on stdout)
set -euo pipefail

if existing="$(command -v minio 2>/dev/null)"; then
    echo "$existing"
    exit 0
fi
if [[ -n "${HOME:-}" && -x "$HOME/go/bin/minio" ]]; then
    echo "$HOME/go/bin/minio"
    exit 0
fi

if ! command -v go >/dev/null 2>&1; then
    echo "install-minio: error: go is not installed or not on PATH; install Go first" >&2
    exit 1
fi

gobin="$(go env GOBIN)"
if [[ -z "$gobin" ]]; then
    gobin="$(go env GOPATH | cut -d: -f1)/bin"
fi
if [[ -x "$gobin/minio" ]]; then
    echo "$gobin/minio"
    exit 0
fi

# Outside any module or workspace, so that a go.mod or go.work in the caller's directory
# cannot influence the build.
cd /
echo "install-minio: building github.com/minio/minio@latest with go install (takes minutes)" >&2
GOFLAGS=-mod=mod GOWORK=off go install github.com/minio/minio@latest

if [[ ! -x "$gobin/minio" ]]; then
    echo "install-minio: error: go install succeeded but $gobin/minio is missing" >&2
    exit 1
fi
echo "$gobin/minio"
