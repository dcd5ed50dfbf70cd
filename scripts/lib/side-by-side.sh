# shellcheck shell=bash
# Sourced by the side-by-side benchmarks (bench-wal.sh, bench-group-commit.sh): a scratch
# directory, a PostgreSQL 15 cluster and a tierdb server in it, both stopped and the
# directory removed at exit.
#
#   side_by_side_init NAME TOOL...   checks the tools (and curl, psql, postgres, $binary);
#                                    sets work, pgbin, tierdb_port, metrics_port, pg_port
#   start_postgres                   initdb and start, shared_buffers = $BUDGET_MB
#   start_postgres_at NAME PORT [SETTING=VALUE...]
#                                    start the cluster in $work/NAME (initdb if it does not
#                                    exist yet) on PORT with extra settings
#   start_tierdb [FLAG...]           `tierdb serve`, buffer pool $BUDGET_MB, extra flags;
#                                    sets server
#   start_tierdb_at NAME BINARY PORT [FLAG...]
#                                    another `tierdb serve` (an A/B's second binary) with its
#                                    data in $work/NAME, no metrics; stopped at exit
#
# PORT_BASE picks the three ports (tierdb, its metrics, PostgreSQL); random by default.

side_by_side_init() { # name tool...
    local name="$1" tool
    shift
    pgbin=/usr/lib/postgresql/15/bin
    for tool in "$@" curl psql "$pgbin/postgres" "$binary"; do
        command -v "$tool" >/dev/null || { echo "$name: missing $tool (scripts/install-deps.sh; cargo build --release -p tierdb)" >&2; exit 1; }
    done
    work="$(mktemp -d)"
    chmod 755 "$work"
    server=""
    servers=()
    trap side_by_side_cleanup EXIT
    tierdb_port="${PORT_BASE:-$((30000 + RANDOM % 10000))}"
    metrics_port=$((tierdb_port + 1))
    pg_port=$((tierdb_port + 2))
}

side_by_side_cleanup() {
    local pid
    for pid in "$server" "${servers[@]}"; do
        if [[ -n "$pid" ]]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    done
    local cluster
    for cluster in "$work"/pg*/; do
        if [[ -f "$cluster/PG_VERSION" ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$cluster" stop -m fast >/dev/null 2>&1 || true; fi
    done
    rm -rf "$work"
}

start_postgres() {
    start_postgres_at pg "$pg_port"
}

start_postgres_at() { # name port [setting=value...]
    local data="$work/$1" port="$2" options="" setting
    shift 2
    for setting in "$@"; do options+=" -c $setting"; done
    mkdir -p "$data" "$work/pg-socket" && chown postgres "$data" "$work/pg-socket"
    if [[ ! -f "$data/PG_VERSION" ]]; then
        runuser -u postgres -- "$pgbin/initdb" -D "$data" -U postgres --auth=trust --locale=C.UTF-8 > /dev/null
    fi
    runuser -u postgres -- "$pgbin/pg_ctl" -D "$data" -l "$data/server.log" -o "-p $port -k $work/pg-socket -c listen_addresses=127.0.0.1 -c shared_buffers=${BUDGET_MB}MB -c max_connections=200$options" -w start > /dev/null
}

start_tierdb() { # [flag...]
    "$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$tierdb_port" --metrics-listen "127.0.0.1:$metrics_port" \
        --buffer-pool "${BUDGET_MB}MB" --tier-size 1GB "$@" > "$work/tierdb.log" 2>&1 &
    server=$!
    local _
    for _ in $(seq 1 100); do grep -q "listening on" "$work/tierdb.log" && break; sleep 0.1; done
}

start_tierdb_at() { # name binary port [flag...]
    local name="$1" binary_at="$2" port="$3" _
    shift 3
    "$binary_at" serve --data-dir "$work/$name" --listen "127.0.0.1:$port" --metrics-listen "" \
        --buffer-pool "${BUDGET_MB}MB" --tier-size 1GB "$@" > "$work/$name.log" 2>&1 &
    servers+=($!)
    for _ in $(seq 1 300); do grep -q "listening on" "$work/$name.log" && return 0; sleep 0.1; done
    cat "$work/$name.log" >&2
    return 1
}
