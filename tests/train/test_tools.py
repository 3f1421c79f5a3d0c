"""`or1 train` and `or1 eval` with tool calls (rollout.tools, --tools), on one-layer models that
call on cue (or1test/tools.py) and the real sandbox.

- Training: after the prompt the model draws, uniformly, a call ("```python\\n" print(6*7)
  "\\n```") or one of two answers (\\boxed{42}, \\boxed{41}); after the tool's reply it draws an
  answer. Four steps with train.recompute_logprobs: every row counts the calls (tool_calls,
  tool_samples_calling_ratio strictly between 0 and 1, no errors), an update is made, and the
  rollout/training mismatch over the step's tokens is exactly 0 over a positive count: the
  reply's tokens, which carry log-prob 0 from the engine and a very low one from the trainer,
  are left out of it; the loss counts the sampled tokens alone (loss_tokens, and entropy_full,
  whose value the counts give; model_grad_mask checks the masked loss's gradients).
- Resume after a kill: the same run killed (SIGKILL) while its third step runs, then
  `--resume auto`, ends with the uninterrupted run's model and optimizer bytes and its metrics
  (timings apart).
- The reward reads the model's sampled text only: a model whose program prints "\\boxed{42}"
  (built from strings and 6 * 7, so that its own text holds neither a boxed answer nor 42, which
  the verifier would take as the last number) and then writes no answer
  scores 0 under `or1 eval --tools 1`; the same model answering \\boxed{42} itself after the
  reply scores 1. The report counts the calls; --dump shows the reply and the calls.
- Without tools, the metrics rows have no tool_ keys.

usage: test_tools.py OR1 REPO_ROOT SCRATCH
"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

from or1test import proc, train as C
from or1test.check import check, finish
from or1test.files import fresh
from or1test.tools import CLOSE, OPEN, REPLY_CLOSE, REPLY_OPEN, make_tokenizer, successor_model

OR1, ROOT, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
ANS42, ANS41, DONE = "\\boxed{42}", "\\boxed{41}", " DONE"
PROG = "print(6*7)"
HACK = "print('\\\\box' + 'ed{%d}' % (6 * 7))"  # prints \boxed{42}; its own text holds no 42
TOK = os.path.join(SCRATCH, "tok")
IDS, EOS, VOCAB = make_tokenizer(ROOT, TOK, [ANS42, ANS41, DONE, PROG, HACK])
ROWS = C.write_rows(os.path.join(SCRATCH, "rows.jsonl"), [("6*7", 42, "mul"), ("7*6", 42, "mul"),
                                                          ("42*1", 42, "mul"), ("1*42", 42, "mul")])
AFTER_REPLY = (IDS[REPLY_CLOSE], IDS["\n"])  # a reply's last token ("\n" when "\n```" matched first)


def model(name, succ, default=()):
    """A successor model under SCRATCH; returns its folder."""
    path = os.path.join(SCRATCH, name)
    successor_model(path, VOCAB, EOS, succ, default)
    return path


def chooser():
    """After any prompt token: a call or an answer; after the reply: an answer."""
    answers = [IDS[ANS42], IDS[ANS41]]
    succ = {IDS[OPEN]: IDS[PROG], IDS[PROG]: IDS[CLOSE], IDS[CLOSE]: answers, IDS[ANS42]: EOS, IDS[ANS41]: EOS}
    for t in AFTER_REPLY:
        succ[t] = answers
    return model("chooser", succ, default=[IDS[OPEN]] + answers)


def config(mdl, name, tools=1, steps=4):
    """A 4-step config with tools writing to SCRATCH/name; returns (path, output folder)."""
    out = os.path.join(SCRATCH, name)
    cfg = C.base_config(mdl, ROWS, out, rollout={"n": 4, "max_new_tokens": 48, "tools": {"max_turns": tools, "timeout": 5}},
                        train={"prompts_per_step": 4, "mini_batch": 2, "steps": steps, "lr": 1e-5,
                               "micro_tokens": 512, "recompute_logprobs": True},
                        checkpoint={"every": 1, "keep_last": 0})
    cfg["model"]["tokenizer"] = TOK
    return C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg), out


def training(mdl):
    """Four steps with tools: calls counted, an update, mismatch exactly 0."""
    cfg, out = config(mdl, "tools")
    p = C.train(OR1, cfg)
    check("tools " in p.stderr and "/sample" in p.stderr, f"the progress line shows no tool calls: {p.stderr[-400:]!r}")
    rows = C.metrics(out)
    check([r["step"] for r in rows] == [1, 2, 3, 4], f"steps {[r.get('step') for r in rows]}")
    for r in rows:
        what = f"step {r['step']}"
        check(r.get("tool_calls", 0) > 0 and 0 < r.get("tool_samples_calling_ratio", 0) < 1,
              f"{what}: tool_calls {r.get('tool_calls')}, samples calling {r.get('tool_samples_calling_ratio')}")
        check(r.get("tool_errors") == 0 and r.get("tool_timeouts") == 0 and r.get("tool_failures") == 0,
              f"{what}: tool errors {r.get('tool_errors')} timeouts {r.get('tool_timeouts')} "
              f"failures {r.get('tool_failures')}")
        check(abs(r["tool_calls_per_sample"] - r["tool_calls"] / 16) < 1e-12, f"{what}: calls per sample")
        if not r["skipped"]:
            got = (r["mismatch_abs_max"], r["mismatch_tokens"])
            check(got[0] == 0 and got[1] > 0, f"{what}: mismatch max {got[0]} over {got[1]} tokens: want 0 over > 0 "
                  "(a reply's tokens counted?)")
            loss_tokens(r, what)
    check(any(not r["skipped"] for r in rows), "no step made an update")
    return out


def loss_tokens(r, what):
    """The loss's tokens are the sampled ones: 2 for an answer (answer, EOS), 5 with a call (the
    call's three, answer, EOS). Their full entropies are ln 3 at the first token, ln 2 at the
    answer after a reply, 0 elsewhere (while the update leaves the model near its start), so
    entropy_full, the loss's mean, is known from the counts; a reply's tokens (ln 3 each: after
    its plain tokens the model would choose anew) would raise it."""
    T, kept = r["loss_tokens"], r["kept_samples"]
    calls, rest = divmod(T - 2 * kept, 3)
    check(T == r["mismatch_tokens"] and rest == 0 and 0 <= calls <= kept,
          f"{what}: {T} loss tokens, {r['mismatch_tokens']} compared, for {kept} samples: not 2 or 5 per sample")
    want = (kept * math.log(3) + calls * math.log(2)) / T
    check(abs(r["entropy_full"] - want) < 0.02 * want,
          f"{what}: entropy_full {r['entropy_full']:.5f}, want {want:.5f} over the sampled tokens ({calls} calls)")


def killed_and_resumed(ref):
    """The same run killed during step 3, resumed: the uninterrupted run's bytes."""
    cfg, out = config(MDL, "killed")
    metrics = os.path.join(out, "metrics.jsonl")
    job = subprocess.Popen([OR1, "train", "--config", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    deadline = time.time() + 120
    while time.time() < deadline and job.poll() is None:
        if os.path.exists(metrics) and sum(1 for _ in open(metrics)) >= 2:
            break
        time.sleep(0.02)
    job.send_signal(signal.SIGKILL)
    job.wait()
    done = len(C.metrics(out)) if os.path.exists(metrics) else 0
    check(job.returncode == -signal.SIGKILL and done < 4, f"the run was not killed mid-way: rc {job.returncode}, "
          f"{done} steps done")
    p = C.train(OR1, cfg, "--resume", "auto")
    check("resuming from" in p.stderr, f"resume banner: {p.stderr[:300]!r}")
    for f in ("model.safetensors", "optimizer.safetensors"):
        check(C.same_bytes(os.path.join(C.ckpt(ref, 4), f), os.path.join(C.ckpt(out, 4), f)),
              f"killed and resumed: {f} differs from the uninterrupted run's")
    bad = C.rows_close(C.metrics(ref), C.metrics(out), 0)
    check(bad is None, f"killed and resumed: metrics differ: {bad}")


def answer_model(name, after):
    """Calls HACK, then writes `after` (then EOS)."""
    succ = {IDS[OPEN]: IDS[HACK], IDS[HACK]: IDS[CLOSE], IDS[CLOSE]: IDS[DONE], IDS[after]: EOS}
    for t in AFTER_REPLY:
        succ[t] = IDS[after]
    return model(name, succ, default=[IDS[OPEN]])


def evaluate(mdl, name, tools=True):
    """or1 eval (with --tools 1) on the rows; (report, dumped rows)."""
    dump = os.path.join(SCRATCH, name + ".dump.jsonl")
    cmd = [OR1, "eval", "--model", mdl, "--tokenizer", TOK, "--chat-template", "plain", "--data", ROWS, "--n", "2",
           "--temperature", "1", "--max-new-tokens", "48", "--dump", dump] + (["--tools", "1"] if tools else [])
    p = C.run(cmd)
    return json.loads(p.stdout), [json.loads(x) for x in open(dump)]


def reward_reads_sampled_text():
    """A tool's printed answer does not answer for the model."""
    rep, dumped = evaluate(answer_model("hack", DONE), "hack")
    avg = rep["overall"]["avg@2"]
    check(avg == 0, f"the tool's \\boxed{{42}} was scored as the model's answer: avg@2 {avg}")
    check(all(REPLY_OPEN + "\\boxed{42}\n" in d["response"] and d.get("tool_calls") == 1 for d in dumped),
          f"--dump: the reply or the call count is missing: {dumped[0]}")
    tools = rep.get("tools", {})
    check(tools.get("calls") == 8 and tools.get("samples_calling") == 8 and tools.get("calls_per_sample") == 1,
          f"eval report tools: {tools}")
    rep, _ = evaluate(answer_model("honest", ANS42), "honest")
    check(rep["overall"]["avg@2"] == 1, f"the model's own \\boxed{{42}} after the reply: avg@2 {rep['overall']['avg@2']}")
    rep, dumped = evaluate(answer_model("hack", DONE), "no_tools", tools=False)
    check("tools" not in rep and "tool_calls" not in dumped[0] and REPLY_OPEN not in dumped[0]["response"],
          f"without --tools: {rep.get('tools')}, {dumped[0]}")


def asynchronous(ref):
    """train.async with tools under mpirun -np 2 (1 trainer + 1 rollout rank; skipped without
    mpirun): in lockstep (max_staleness 0) the bytes and rows of the synchronous run; one step
    off, the calls are still counted and the steps after the first train on stale samples."""
    mpiexec = shutil.which("mpirun")
    if not mpiexec:
        print("async with tools: skipped (no mpirun)")
        return
    for name, stale in (("async0", 0), ("async1", 1)):
        cfg, out = config(MDL, name)
        text = open(cfg).read().replace('"recompute_logprobs": true',
                                        f'"recompute_logprobs": true, "async": true, "rollout_ranks": 1, '
                                        f'"max_staleness": {stale}')
        open(cfg, "w").write(text)
        p = proc.mpirun(mpiexec, 2, [OR1, "train", "--config", cfg], 300)
        if not check(p.returncode == 0, f"{name}: exit {p.returncode}: {p.stderr[-600:]}"):
            continue
        rows = [{k: v for k, v in r.items() if not k.startswith(("async_", "seconds_", "rollout_tokens", "train_tokens"))}
                for r in C.metrics(out)]
        if stale == 0:
            for f in ("model.safetensors", "optimizer.safetensors"):
                check(C.same_bytes(os.path.join(C.ckpt(ref, 4), f), os.path.join(C.ckpt(out, 4), f)),
                      f"async lockstep with tools: {f} differs from the synchronous run's")
            check(C.strip_timings(rows) == C.strip_timings(C.metrics(ref)), "async lockstep with tools: rows differ")
        else:
            check(all(r.get("tool_calls", 0) > 0 for r in rows), f"{name}: tool calls {[r.get('tool_calls') for r in rows]}")
            check(all(r["async_staleness_tokens"][1] > 0 for r in C.metrics(out)[1:] if not r["skipped"]),
                  f"{name}: staleness {[r['async_staleness_tokens'] for r in C.metrics(out)]}")


def without_tools():
    """max_turns 0: no tool_ keys."""
    cfg, out = config(MDL, "no_tools", tools=0, steps=1)
    C.train(OR1, cfg)
    keys = [k for r in C.metrics(out) for k in r if k.startswith("tool_")]
    check(not keys, f"tool keys without tools: {keys}")


MDL = chooser()
ref = training(MDL)
killed_and_resumed(ref)
asynchronous(ref)
reward_reads_sampled_text()
without_tools()
finish("train_tools")
