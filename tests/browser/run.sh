#!/bin/bash
# The browser suite as one test program for tests/run-tests.sh: node's test
# runner (TAP, ending in "# pass N" / "# fail N") over tests/browser/*.test.mjs,
# against $BUILD/ringmasterd, $BUILD/ringmaster-worker and $BUILD/examples/train-mlp
# (the harness finds them beside ringmasterd; ringmasterd runs $BUILD/ringmaster-sim beside
# it for the what-if page). Screenshots and logs go to
# $BUILD/browser-artifacts.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
mkdir -p "$build/browser-artifacts"
cd "$root/tests/browser" || exit 1
RINGMASTERD="$build/ringmasterd" BROWSER_ARTIFACTS="$build/browser-artifacts" \
    timeout 600 node --test --test-concurrency=1 --test-timeout=300000 \
    --test-reporter=tap ./*.test.mjs
