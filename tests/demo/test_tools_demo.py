"""A shortened run of the tool-use demo (demo/tools.py, what `make run-tools` does): SFT of the
call format, evaluation with and without tools, two training arms and the report, end to end.
Checks the report's files, that the arm with tools logged tool metrics (in training and in its
evaluation) while the arm without logged none, and that both trained the same steps. Twenty SFT
steps do not teach the format (the model calls rarely) and two RL steps teach nothing: the
learning (held-out avg@8 0.615 -> 0.840 with tools against 0.190 -> 0.603 without) is the
figure in docs/demo.md, from the full run; train_tools checks training with calls. Usage: test_tools_demo.py OR1 REPO_ROOT SCRATCH"""
import json
import os
import subprocess
import sys

from or1test.check import check, finish
from or1test.files import fresh

STEPS = 2


def main(or1, root, scratch):
    """Runs the shortened demo into scratch and checks what it wrote."""
    fresh(scratch)
    sets = [f"stages.0.steps={STEPS}", "stages.0.prompts=4", "stages.0.mini_batch=4", f"eval.every={STEPS}",
            f"checkpoint.every={STEPS}"]
    cmd = ["/usr/bin/python3", "demo/tools.py", "--or1", or1, "--runs", scratch, "--name", "short", "--held-out", "8",
           "--sft-steps", "20"] + [x for s in sets for x in ("--set", s)]
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        sys.exit(f"FAIL: tools demo exited {r.returncode}: {r.stderr[-3000:]}")
    run = os.path.join(scratch, "short")
    png = os.path.join(run, "report", "tools.png")
    check(os.path.isfile(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", f"missing or not a PNG: {png}")
    summary = open(os.path.join(run, "report", "summary.md")).read()
    check("trained tools:" in summary and "trained no tools:" in summary, f"summary.md: {summary!r}")
    traces = [json.loads(line) for line in open(os.path.join(run, "traces.jsonl"))]
    check(any("response_mask" in t for t in traces), "no SFT trace calls the tool")
    for name, tools in (("tools", True), ("no_tools", False)):
        rows = [json.loads(line) for line in open(os.path.join(run, name, "metrics.jsonl"))]
        steps = [x for x in rows if x.get("type") != "eval"]
        check([x["step"] for x in steps] == list(range(1, STEPS + 1)), f"{name}: steps {[x['step'] for x in steps]}")
        check(all(("tool_calls" in x) == tools for x in steps), f"{name}: tool metrics {'missing' if tools else 'logged'}")
        check(os.path.isdir(os.path.join(run, name, "checkpoints", "latest")), f"{name}: no last checkpoint")
        dumped = [json.loads(line) for line in open(os.path.join(run, "report", f"trained_{name}.jsonl"))]
        check(len(dumped) == 8 * 8 and all(("tool_calls" in d) == tools for d in dumped),
              f"{name}: {len(dumped)} evaluated samples, tool counts as expected: "
              f"{all(('tool_calls' in d) == tools for d in dumped)}")
    finish("tools_demo")


if __name__ == "__main__":
    main(*sys.argv[1:4])
