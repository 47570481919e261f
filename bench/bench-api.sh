#!/bin/bash
# make bench-api: starts a real ringmasterd on the embedded defaults in a
# temporary state directory, loads it over loopback with api-bench, and stops
# it. Arguments: BUILD dir. Env: BENCH_THREADS (8), BENCH_SECONDS (5), BENCH_BATCHES (10:
# POSTs of 1,000 jobs), BENCH_STORED (100000: jobs in the table for the 1,000-job pages).
set -euo pipefail
build=${1:-build}
state=$(mktemp -d /tmp/rm-bench-XXXXXX)
port=$(( 20000 + RANDOM % 20000 ))
url="http://127.0.0.1:$port"

"$build/ringmasterd" --listen "127.0.0.1:$port" --state-dir "$state" 2>"$state/ringmasterd.log" &
server=$!
cleanup() {
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$state"
}
trap cleanup EXIT
for _ in $(seq 1 600); do
    curl -fsS "$url/api/v1/health" >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { cat "$state/ringmasterd.log" >&2; exit 1; }
    sleep 0.2
done
pgdir=$(readlink -f "$state/pg")
"$build/bench/api-bench" --url "$url" --token-file "$state/admin.token" \
    --threads "${BENCH_THREADS:-8}" --seconds "${BENCH_SECONDS:-5}" \
    --batches "${BENCH_BATCHES:-10}" --stored "${BENCH_STORED:-100000}" \
    --conninfo "host=$pgdir port=5432 user=ringmaster dbname=ringmaster"
