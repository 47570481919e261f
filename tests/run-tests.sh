#!/bin/bash
# Runs every test program given, each bounded in time, and prints one closing
# line with the totals: "tests: N passed, N failed". A program is a Criterion
# binary (its "Synthesis:" line is read) or a script running node's test
# runner (its "# pass N" and "# fail N" lines are read).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
per_binary_limit=${RINGMASTER_TEST_TIMEOUT:-900}
passed=0
failed=0
bad_bins=()

for bin in "$@"; do
    echo "=== $bin"
    log=$(mktemp)
    args=()
    case "$bin" in *.sh) ;; *) args=(--color=never --short-filename) ;; esac
    started=$SECONDS
    timeout --kill-after=10 "$per_binary_limit" "$bin" "${args[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    echo "=== $bin: $((SECONDS - started)) s"
    line=$(grep -a 'Synthesis:' "$log" | tail -n 1)
    if [ -z "$line" ] && grep -aq '^# pass ' "$log"; then
        p=$(grep -a '^# pass ' "$log" | tail -n 1 | awk '{print $3}')
        f=$(grep -a '^# fail ' "$log" | tail -n 1 | awk '{print $3}')
        line="Synthesis: Passing: ${p:-0} | Failing: ${f:-0} | Crashing: 0"
    fi
    rm -f "$log"
    if [ -z "$line" ]; then
        echo "run-tests: $bin printed no synthesis (exit $rc)"
        failed=$((failed + 1))
        bad_bins+=("$bin")
        continue
    fi
    p=$(sed -n 's/.*Passing: *\([0-9]*\).*/\1/p' <<<"$line")
    f=$(sed -n 's/.*Failing: *\([0-9]*\).*/\1/p' <<<"$line")
    c=$(sed -n 's/.*Crashing: *\([0-9]*\).*/\1/p' <<<"$line")
    passed=$((passed + p))
    failed=$((failed + f + c))
    if [ "$rc" -ne 0 ] || [ $((f + c)) -ne 0 ]; then
        bad_bins+=("$bin")
    fi
done

[ ${#bad_bins[@]} -eq 0 ] || echo "failing binaries: ${bad_bins[*]}"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ ${#bad_bins[@]} -eq 0 ]
