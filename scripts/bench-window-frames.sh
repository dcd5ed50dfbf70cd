#!/usr/bin/env bash
# Window frames over one big partition, tierdb and PostgreSQL 15 side by side in one run
# (issue 15): moving aggregates over ROWS, RANGE with offsets and GROUPS frames, with and
# without an exclusion, and first_value / nth_value over the same frames. ROWS rows of
# generate_series (one partition), REPS runs per query alternating between the systems;
# medians and the tierdb / PostgreSQL ratio. (No UNBOUNDED frame with an exclusion: PostgreSQL
# rebuilds such an aggregate for every row, O(n^2).)
#
#   ROWS=1000000 REPS=3 scripts/bench-window-frames.sh
#   TIERDB_PORT=56150 PG_PORT=56151 ...     # other ports than 55462 and 55463
#
# Needs: PostgreSQL 15 server binaries, python3 with psycopg (scripts/install-deps.sh), and
# a release build (cargo build --release -p tierdb).
set -euo pipefail
cd "$(dirname "$0")/.."
export ROWS="${ROWS:-1000000}"
export REPS="${REPS:-3}"
binary="${TIERDB_BIN:-${CARGO_TARGET_DIR:-target}/release/tierdb}"
pgbin=/usr/lib/postgresql/15/bin
for tool in "$pgbin/postgres" "$binary" python3; do
    command -v "$tool" >/dev/null || { echo "bench-window-frames: missing $tool" >&2; exit 1; }
done
python3 -c "import psycopg" || { echo "bench-window-frames: python3 needs psycopg" >&2; exit 1; }
work="$(mktemp -d)"
chmod 755 "$work"
tierdb_pid=""
cleanup() {
    if [[ -n "$tierdb_pid" ]]; then kill -TERM "$tierdb_pid" 2>/dev/null || true; fi
    if [[ -d "$work/pg" ]]; then runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" stop -m fast >/dev/null 2>&1 || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
tierdb_port="${TIERDB_PORT:-55462}"
pg_port="${PG_PORT:-55463}"
"$binary" serve --data-dir "$work/tierdb" --listen "127.0.0.1:$tierdb_port" --metrics-listen "" \
    --auth trust > "$work/tierdb.log" 2>&1 &
tierdb_pid=$!
for _ in $(seq 1 200); do grep -q "listening on" "$work/tierdb.log" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$work/tierdb.log" || { cat "$work/tierdb.log"; exit 1; }
mkdir -p "$work/pg" && chown postgres "$work/pg"
runuser -u postgres -- "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust --locale=C.UTF-8 > /dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" \
    -o "-p $pg_port -k $work/pg -c listen_addresses=127.0.0.1 -c work_mem=1GB" start > /dev/null
echo "bench-window-frames: rows=$ROWS reps=$REPS $(nproc) cores"
TIERDB_PORT="$tierdb_port" PG_PORT="$pg_port" python3 - <<'EOF'
import os, statistics, time
import psycopg

ROWS, REPS = int(os.environ["ROWS"]), int(os.environ["REPS"])
SYSTEMS = {
    "tierdb": f"host=127.0.0.1 port={os.environ['TIERDB_PORT']} user=tierdb dbname=tierdb",
    "postgres": f"host=127.0.0.1 port={os.environ['PG_PORT']} user=postgres dbname=postgres",
}
# Each query reads one partition of ROWS rows; the outer aggregate keeps the result small.
SOURCE = f"(SELECT g, g / 4 AS k, (g % 1000)::numeric AS n FROM generate_series(1, {ROWS}) g) s"
FRAMES = [
    ("sum(g) rows 100 preceding", "sum(g) OVER (ORDER BY g ROWS BETWEEN 100 PRECEDING AND CURRENT ROW)"),
    ("count(*) range 400 preceding/following", "count(*) OVER (ORDER BY g RANGE BETWEEN 400 PRECEDING AND 400 FOLLOWING)"),
    ("sum(g) groups 25 preceding", "sum(g) OVER (ORDER BY k GROUPS BETWEEN 25 PRECEDING AND CURRENT ROW)"),
    ("sum(g) rows 100 preceding, exclude current row", "sum(g) OVER (ORDER BY g ROWS BETWEEN 100 PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW)"),
    ("avg(g) range 10 preceding/following, excl group", "avg(g) OVER (ORDER BY k RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING EXCLUDE GROUP)"),
    ("sum(numeric) rows 100 preceding", "sum(n) OVER (ORDER BY g ROWS BETWEEN 100 PRECEDING AND CURRENT ROW)"),
    ("max(g) range 400 preceding", "max(g) OVER (ORDER BY g RANGE BETWEEN 400 PRECEDING AND CURRENT ROW)"),
    ("nth_value(g, 3) groups, exclude ties", "nth_value(g, 3) OVER (ORDER BY k GROUPS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE TIES)"),
]
connections = {name: psycopg.connect(dsn, autocommit=True) for name, dsn in SYSTEMS.items()}
print(f"{'query':45} {'tierdb s':>10} {'postgres s':>11} {'ratio':>7}")
for label, call in FRAMES:
    sql = f"SELECT count(*), sum(v) FROM (SELECT {call} AS v FROM {SOURCE}) q"
    times = {name: [] for name in SYSTEMS}
    answers = {}
    for _ in range(REPS):
        for name, connection in connections.items():
            started = time.perf_counter()
            answers[name] = connection.execute(sql).fetchone()
            times[name].append(time.perf_counter() - started)
    assert answers["tierdb"] == answers["postgres"], (label, answers)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ratio = medians["tierdb"] / medians["postgres"]
    print(f"{label:45} {medians['tierdb']:10.3f} {medians['postgres']:11.3f} {ratio:7.2f}")
EOF
