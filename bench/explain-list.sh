#!/bin/bash
# make explain-list: the plans PostgreSQL chooses for GET /api/v1/jobs with each filter, on
# 100,000 stored jobs. Starts a real ringmasterd on the embedded defaults in a temporary state
# directory, fills it with api-bench (one 1,000-job batch of PENDING jobs, then COMPLETED rows
# up to BENCH_STORED), and prints EXPLAIN ANALYZE of the list's statement (server/api/jobs.c)
# for a deep page and each filter. Arguments: BUILD dir.
set -euo pipefail
build=${1:-build}
. "$(dirname "$0")/server.sh"
bench_server_start "$build" rm-explain
conninfo="host=$(readlink -f "$state/pg") port=5432 user=ringmaster dbname=ringmaster"
"$build/bench/api-bench" --url "$url" --token-file "$state/admin.token" --threads 1 \
    --seconds 0.2 --batches 1 --stored "${BENCH_STORED:-100000}" --conninfo "$conninfo" >/dev/null
# The list's statement with its parameters spelled out: PQexecParams plans each call for its
# values, as this does.
list() { # state user after prefix array
    echo "EXPLAIN (ANALYZE, COSTS OFF, SUMMARY ON) SELECT j.id FROM jobs j JOIN users u"
    echo " ON u.id = j.user_id WHERE ($1::text IS NULL OR j.state = $1)"
    echo " AND ($2::text IS NULL OR j.user_id = (SELECT id FROM users WHERE name = $2))"
    echo " AND j.id > $3 AND ($4::text IS NULL OR starts_with(j.name, $4))"
    echo " AND ($5::bigint IS NULL OR j.array_id = $5) ORDER BY j.id LIMIT 1001;"
}
show() {
    echo "== $1"
    psql "$conninfo" -qAt -c "$2" | grep -E "Scan|Sort|Join|Execution|Planning|Index Cond|Filter"
}
show "a deep page" "$(list NULL NULL 50000 NULL NULL)"
show "state=PENDING" "$(list "'PENDING'" NULL 0 NULL NULL)"
show "user=admin, a deep page" "$(list NULL "'admin'" 50000 NULL NULL)"
show "name_prefix=sweep-7 (111 of 1,000 jobs)" "$(list NULL NULL 0 "'sweep-7'" NULL)"
show "name_prefix=nomatch" "$(list NULL NULL 0 "'nomatch'" NULL)"
show "array=5" "$(list NULL NULL 0 NULL 5)"
