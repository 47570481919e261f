#!/bin/bash
# make bench-api: starts a real ringmasterd on the embedded defaults in a
# temporary state directory, loads it over loopback with api-bench, and stops
# it. Arguments: BUILD dir. Env: BENCH_THREADS (8), BENCH_SECONDS (5), BENCH_BATCHES (10:
# POSTs of 1,000 jobs), BENCH_STORED (100000: jobs in the table for the 1,000-job pages),
# BENCH_BUSY (0) or --busy N: N processes that keep a core busy each while it runs.
set -euo pipefail
build=build busy=${BENCH_BUSY:-0}
while [ $# -gt 0 ]; do
    case $1 in
    --busy) busy=$2; shift 2 ;;
    --busy=*) busy=${1#--busy=}; shift ;;
    *) build=$1; shift ;;
    esac
done
. "$(dirname "$0")/server.sh"
bench_server_start "$build" rm-bench
busy_pids=()
trap 'kill "${busy_pids[@]}" 2>/dev/null; bench_server_stop' EXIT
for _ in $(seq 1 "$busy"); do
    sh -c 'while :; do :; done' &
    busy_pids+=($!)
done
[ "$busy" -gt 0 ] && echo "busy: $busy process(es) keeping a core busy each"
pgdir=$(readlink -f "$state/pg")
"$build/bench/api-bench" --url "$url" --token-file "$state/admin.token" \
    --threads "${BENCH_THREADS:-8}" --seconds "${BENCH_SECONDS:-5}" \
    --batches "${BENCH_BATCHES:-10}" --stored "${BENCH_STORED:-100000}" \
    --conninfo "host=$pgdir port=5432 user=ringmaster dbname=ringmaster" \
    --server-pid "$server" --pg-pid "$(head -1 "$pgdir/postmaster.pid")"
