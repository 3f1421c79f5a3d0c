"""What the Python tests and benchmarks of or1 share, imported as `from or1test import ...`
(ctest and the bench/*.sh wrappers put tests/ on PYTHONPATH).

  check        the failure collector: every check runs, the closing line counts them
  proc         running or1 and other commands, reading what they print
  files        scratch folders and JSONL files
  safetensors  the safetensors format with numpy (raw header and data, checked arrays)
  ref          the float64 PyTorch reference: checkpoints, the Qwen2/Llama model, the loss, AdamW
  train        the trainer tests' fixture rows, configs, metrics and checkpoints
  demo         the demo tests' command line (OR1 REPO_ROOT SCRATCH) and or1 runs
  rollout      running `or1 generate` / `or1 logprobs` and checking their rows
  code_cases   labelled solutions to real coding problems (the sandbox test and benchmark)
"""
