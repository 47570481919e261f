#!/bin/bash
# Do two builds of the core decide alike? Runs `ringmaster-sim bench-round --policy all
# --digest` of each at several sizes and compares every policy's digest (a hash of every
# decision of the run: the round from nothing and two rounds on its result; sim/bench.c).
# For changes to the core meant to make it faster without changing a decision (issue #13
# item 5): keep the build before the change (cp build/ringmaster-sim /tmp/before), then
#   bench/round-same.sh /tmp/before build/ringmaster-sim
# TAP lines, exit 1 when a digest differs. SIZES overrides the "JOBSxGPUS ..." list.
set -uo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 OLD_SIM NEW_SIM" >&2
    exit 2
fi
sizes=${SIZES:-"100x64 1000x64 1000x1024 10000x1024 10000x16384"}
n=0
fail=0
for size in $sizes; do
    jobs=${size%x*}
    gpus=${size#*x}
    a=$("$1" bench-round --jobs "$jobs" --gpus "$gpus" --policy all --repeat 2 --digest) || exit 1
    b=$("$2" bench-round --jobs "$jobs" --gpus "$gpus" --policy all --repeat 2 --digest) || exit 1
    while read -r policy digest; do
        n=$((n + 1))
        other=$(awk -v p="$policy" '$1 == p { print $2 }' < <(sed -n 's/^policy=\([^ ]*\) .*digest=\([0-9a-f]*\).*/\1 \2/p' <<<"$b"))
        if [ "$digest" = "$other" ]; then
            echo "ok $n - $policy $size: $digest"
        else
            echo "not ok $n - $policy $size: $digest before, ${other:-none} after"
            fail=$((fail + 1))
        fi
    done < <(sed -n 's/^policy=\([^ ]*\) .*digest=\([0-9a-f]*\).*/\1 \2/p' <<<"$a")
done
printf '1..%d\n# pass %d\n# fail %d\n' "$n" "$((n - fail))" "$fail"
[ "$fail" -eq 0 ] && [ "$n" -gt 0 ]
