#!/bin/bash
# The core's round against its committed cost (issue #13 item 5): runs `ringmaster-sim
# bench-round --policy all --reference` at a modest size and fails a policy whose round costs
# more than LIMIT (2) times the ratio committed in bench/round-baseline. A ratio is the
# least of R rounds' times over the least of R timings of a fixed reference computation in
# the same process, so it measures the code, not how busy or fast the machine is; the
# minimum drops the rounds another process preempted. Baselines are kept per build kind
# (plain, san: the sanitizers slow the two unevenly).
#   bench/round-check.sh            check (TAP lines for tests/run-tests.sh); BUILD=build/san
#   bench/round-check.sh --update   rewrite this build kind's lines of the baseline
# Environment: BUILD (default build), ROUND_CHECK_LIMIT (default 2).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sim=${BUILD:-build}/ringmaster-sim
baseline=$here/round-baseline
limit=${ROUND_CHECK_LIMIT:-2}
out=$("$sim" bench-round --jobs 1000 --gpus 64 --policy all --repeat 31 --reference)
if [ $? -ne 0 ] || ! grep -q '^reference build=' <<<"$out"; then
    printf 'not ok 1 - %s bench-round ran\n# pass 0\n# fail 1\n' "$sim"
    exit 1
fi
kind=$(sed -n 's/^reference build=\([a-z]*\)$/\1/p' <<<"$out")
if [ "${1:-}" = --update ]; then
    { grep -v "^$kind " "$baseline" 2>/dev/null || true
      sed -n "s/^policy=\([^ ]*\) .* ratio=\([0-9.]*\) .*/$kind \1 \2/p" <<<"$out"
    } >"$baseline.tmp" && mv "$baseline.tmp" "$baseline"
    echo "$baseline: $kind lines written"
    exit 0
fi
awk -v kind="$kind" -v limit="$limit" '
    NR == FNR { if ($1 == kind) base[$2] = $3; next }
    /^policy=/ {
        split($1, p, "="); split($(NF - 1), r, "="); split($NF, ref, "=")
        n++
        if (!(p[2] in base)) {
            printf "not ok %d - %s: ratio %s, no %s baseline (bench/round-check.sh --update)\n", n, p[2], r[2], kind
            fail++
        } else if (r[2] > limit * base[p[2]]) {
            printf "not ok %d - %s: ratio %s is %.2fx the baseline %s (limit %sx; reference %s us)\n", n, p[2], r[2], r[2] / base[p[2]], base[p[2]], limit, ref[2]
            fail++
        } else {
            printf "ok %d - %s: ratio %s, %.2fx the baseline %s\n", n, p[2], r[2], r[2] / base[p[2]], base[p[2]]
        }
    }
    END { printf "1..%d\n# pass %d\n# fail %d\n", n, n - fail, fail; exit fail > 0 }
' "$baseline" - <<<"$out"
