#!/usr/bin/env bash
# or1's losses, gradients, advantages and KL terms against verl's own code (bench/peer_loss.py):
# every loss mode, aggregation and rollout correction of docs/algorithms.md through `or1 grad`
# beside transformers' Qwen2 feeding verl's registered policy losses, on fixed tensors. It runs
# here, not in `make test`, because verl needs PyTorch >= 2 from PyPI (the pinned environment of
# scripts/python-peers-requirements.txt, about 8 GB, made once under build/peers-venv); where
# that cannot be installed it skips (exit 77) saying so. Run after `make build`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="$here/build/peers-venv"
if ! bash "$here/scripts/venv.sh" "$venv" "$here/scripts/python-peers-requirements.txt"; then
  echo "peer_loss: skipped: the peers' environment (PyTorch 2.9.1, verl 0.9.1 from PyPI) could not be" \
       "installed; Debian's PyTorch 1.13 cannot import verl (it needs torch._dynamo, new in PyTorch 2)" >&2
  exit 77
fi
"$venv/bin/python" "$here/bench/peer_loss.py" "$here/build/or1" "$here/build/test_rl_algo_driver" \
    "$here/models/arith-base"
