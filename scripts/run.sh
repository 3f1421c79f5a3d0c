#!/usr/bin/env bash
# `make run`: the main job on the built-in default. Until the demo exists this is a short
# self-check of the model core: a random checkpoint learns from a batch with advantages.
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 scripts/selfcheck.py build/or1 runs/selfcheck
