#!/bin/bash
# The tree's layout (docs/layout.md) as one test program for tests/run-tests.sh.
exec python3 "$(dirname "$0")/check.py"
