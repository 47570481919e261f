#!/bin/bash
# make bench-api: starts a real ringmasterd on the embedded defaults in a
# temporary state directory, loads it over loopback with api-bench, and stops
# it. Arguments: BUILD dir. Env: BENCH_THREADS (8), BENCH_SECONDS (5), BENCH_BATCHES (10:
# POSTs of 1,000 jobs), BENCH_STORED (100000: jobs in the table for the 1,000-job pages).
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/server.sh"
bench_server_start "$build" rm-bench
pgdir=$(readlink -f "$state/pg")
"$build/bench/api-bench" --url "$url" --token-file "$state/admin.token" \
    --threads "${BENCH_THREADS:-8}" --seconds "${BENCH_SECONDS:-5}" \
    --batches "${BENCH_BATCHES:-10}" --stored "${BENCH_STORED:-100000}" \
    --conninfo "host=$pgdir port=5432 user=ringmaster dbname=ringmaster" \
    --server-pid "$server" --pg-pid "$(head -1 "$pgdir/postmaster.pid")"
