#!/usr/bin/env bash
# `make run`: the built-in demo. MAGIC trains the shipped arithmetic base model on this machine
# and writes its report to runs/demo/report/ (see demo/demo.py).
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 demo/demo.py --or1 build/or1 --name demo "$@"
