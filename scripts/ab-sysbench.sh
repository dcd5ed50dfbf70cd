#!/usr/bin/env bash
# A/B check of a change: sysbench oltp_read_only and oltp_point_select (16 threads, 4 x 10,000
# rows, 512 MB pool, as scripts/oltp-check.sh) against several tierdb binaries, alternating
# binary by binary in each round so that the machine's drift falls on all of them.
#
#   ROUNDS=2 SECONDS_PER_RUN=12 scripts/ab-sysbench.sh /tmp/tierdb-before /tmp/tierdb-after
#   SCRIPTS="oltp_point_select oltp_read_write" scripts/ab-sysbench.sh ...   other scripts
#   PORT=56200 scripts/ab-sysbench.sh ...                                    a fixed port (one server at a time)
set -uo pipefail
seconds="${SECONDS_PER_RUN:-15}"
rounds="${ROUNDS:-2}"
scripts="${SCRIPTS:-oltp_read_only oltp_point_select}"
for round in $(seq 1 "$rounds"); do
for binary in "$@"; do
    work="$(mktemp -d)"; port="${PORT:-$((20000 + RANDOM % 20000))}"
    "$binary" serve --data-dir "$work/data" --listen "127.0.0.1:$port" --metrics-listen "" --buffer-pool 512MB --tier-size 1GB > "$work/server.log" 2>&1 &
    server=$!
    for _ in $(seq 1 100); do grep -q "listening on" "$work/server.log" && break; sleep 0.1; done
    sb=(sysbench --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$port" --pgsql-user=tierdb --pgsql-db=tierdb --tables=4 --table-size=10000)
    "${sb[@]}" oltp_read_write prepare > /dev/null 2>&1
    line="round=$round $binary"
    for script in $scripts; do
        tps=$("${sb[@]}" --threads=16 --time="$seconds" --report-interval=0 "$script" run 2>&1 | grep -E 'transactions:' | sed 's/.*(\(.*\) per sec.)/\1/')
        line="$line $script=$tps"
    done
    echo "$line"
    kill -TERM $server; wait $server 2>/dev/null; rm -rf "$work"
done
done
