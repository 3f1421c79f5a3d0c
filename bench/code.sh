#!/usr/bin/env bash
# Code sandbox throughput (verifications/s) against an unsandboxed subprocess reference on the
# same real rows. Run from the repository root after `make build` (make bench does both).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# The benchmark imports the tests' shared package (tests/or1test).
export PYTHONPATH="$here/tests${PYTHONPATH:+:$PYTHONPATH}"
/usr/bin/python3 "$here/bench/code_bench.py" "$here/build/or1" "$here/data" "${OR1_CODE_BENCH_ROUNDS:-3}"
