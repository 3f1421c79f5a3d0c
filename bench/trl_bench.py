"""or1 beside TRL's GRPOTrainer and transformers' generate on the same model, prompts and settings.

usage: trl_bench.py OR1 MODEL [--shape base|wide] [--threads T] [--prompts P] [--n G] [--length L] [--steps S]
       (run by bench/trl.sh with the peers' venv; MODEL a Qwen2 checkpoint in Hugging Face
       form with its tokenizer, the demo's models/arith-base by default)

Training: P arithmetic prompts (`or1 gen-arith`, rendered by `or1 chat` so both sides read the
same text) x G samples of up to L tokens at temperature 1, one policy update per step, no KL,
token-level loss (or1's token-mean, TRL's `dapo`), no entropy bonus, no rejection of groups, S
steps, on T threads; TRL on the CPU without vLLM (its default generation through transformers).
Each side runs in its own process under /usr/bin/time: seconds per step (the median of steps 2..S,
the first holds one-time setup), generated tokens per second (all steps), and peak resident memory
of the whole process. Generation: the same P prompts x G samples of at most L new tokens, or1
generate against transformers' `generate` (left-padded batch, sampling at temperature 1).
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from or1test import proc  # noqa: E402

BOXED = re.compile(r"\\boxed\{([^}]*)\}")
TAG = "trl_bench:"  # marks the child's result lines among what TRL prints


def measured(cmd, env=None):
    """Runs cmd under GNU time: (stdout, peak RSS in MiB, wall seconds)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        start = time.perf_counter()
        out = proc.run(["/usr/bin/time", "-o", t.name, "-f", "%M"] + cmd, env=env).stdout
        wall = time.perf_counter() - start
        return out, int(t.read().split()[-1]) / 1024, wall


def prompts(or1, model, tmp, n):
    """n rows of the demo task: [(prompt text as the chat template renders it, gold)]."""
    rows = os.path.join(tmp, "rows.jsonl")
    proc.run([or1, "gen-arith", "--n", n, "--seed", 11, "--out", rows])
    data = [json.loads(line) for line in open(rows)]
    msgs = os.path.join(tmp, "msgs.jsonl")
    with open(msgs, "w") as f:
        for r in data:
            f.write(json.dumps({"messages": r["prompt"]}) + "\n")
    texts = [r["text"] for r in proc.json_lines(proc.run([or1, "chat", "--tokenizer", model, "--input", msgs]).stdout)]
    golds = [json.loads(r["reward_model"]["ground_truth"])[0] for r in data]
    return rows, list(zip(texts, golds))


def or1_config(a, model, rows, out_dir):
    """The or1 train config of the comparison (see the module comment)."""
    return f"""model:
  path: {model}
data:
  train:
    - path: {rows}
  max_prompt_length: 64
rollout:
  temperature: 1.0
train:
  lr: 1.0e-6
  micro_tokens: 1000000
entropy:
  mode: constant
  initial: 0
rejection:
  enabled: false
stages:
  - {{name: s, context_length: {a.length}, prompts: {a.prompts}, n: {a.n}, mini_batch: {a.prompts}, steps: {a.steps}}}
checkpoint:
  every: 0
output:
  dir: {out_dir}
seed: 1
"""


def run_or1_train(a, tmp, rows):
    """or1 train: per-step seconds and generated tokens from its metrics, and the peak RSS."""
    cfg = os.path.join(tmp, "or1.yaml")
    run = os.path.join(tmp, "or1-run")
    with open(cfg, "w") as f:
        f.write(or1_config(a, os.path.abspath(a.model), rows, run))
    _, rss, _ = measured([a.or1, "train", "--config", cfg, "--threads", str(a.threads), "--overwrite"])
    steps = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    split = {k: statistics.median(s[k] for s in steps[1:] or steps) for k in ("seconds_rollout", "seconds_update")}
    return [s["seconds_step"] for s in steps], [s["response_length_mean"] * s["samples"] for s in steps], rss, split


def trl_child(a):
    """In the child process: TRL's GRPOTrainer for a.steps steps; prints one JSON per step."""
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(a.threads)
    pairs = json.load(open(a.pairs))
    data = Dataset.from_list([{"prompt": p, "gold": g} for p, g in pairs])

    def reward(completions, gold, **_):
        """1 when the last \\boxed{} holds the gold integer, else 0 (the demo's verdict)."""
        found = [BOXED.findall(c) for c in completions]
        return [1.0 if f and f[-1].strip() == g else 0.0 for f, g in zip(found, gold)]

    class Clock(TrainerCallback):
        """Wall time and generated tokens of every optimizer step."""

        def on_step_begin(self, args, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            self.seconds = time.perf_counter() - self.t

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "completions/mean_length" in logs:
                tokens = logs["completions/mean_length"] * a.prompts * a.n
                print(TAG, json.dumps({"seconds": self.seconds, "tokens": tokens}), flush=True)

    cfg = GRPOConfig(output_dir=a.out, per_device_train_batch_size=a.prompts * a.n, num_generations=a.n,
                     max_completion_length=a.length, temperature=1.0, top_p=1.0, beta=0.0, loss_type="dapo",
                     scale_rewards="group", learning_rate=1e-6, max_steps=a.steps, num_iterations=1,
                     gradient_accumulation_steps=1, logging_steps=1, report_to="none", use_cpu=True, bf16=False,
                     save_strategy="no", seed=1, dataloader_num_workers=0, disable_tqdm=True)
    tok = AutoTokenizer.from_pretrained(a.model)
    trainer = GRPOTrainer(model=a.model, reward_funcs=reward, args=cfg, train_dataset=data,
                          processing_class=tok, callbacks=[Clock()])
    trainer.train()


def hf_generate_child(a):
    """In the child process: transformers' generate on the prompts; prints seconds and tokens."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(a.threads)
    tok = AutoTokenizer.from_pretrained(a.model, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32).eval()
    texts = [p for p, _ in json.load(open(a.pairs))]
    enc = tok(texts, return_tensors="pt", padding=True)
    torch.manual_seed(1)
    start = time.perf_counter()
    with torch.no_grad():
        out = model.generate(**enc, do_sample=True, temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=a.length,
                             num_return_sequences=a.n, pad_token_id=tok.pad_token_id)
    seconds = time.perf_counter() - start
    new = out[:, enc["input_ids"].shape[1]:]
    eos = tok.eos_token_id
    tokens = 0
    for row in new.tolist():
        tokens += row.index(eos) + 1 if eos in row else len(row)
    print(TAG, json.dumps({"seconds": seconds, "tokens": tokens}))


def run_or1_generate(a, tmp, pairs):
    """or1 generate on the prompts: (seconds, generated tokens, peak RSS)."""
    path = os.path.join(tmp, "gen.jsonl")
    with open(path, "w") as f:
        for p, _ in pairs:
            f.write(json.dumps({"prompt": p}) + "\n")
    out, rss, wall = measured([a.or1, "generate", "--model", a.model, "--input", path, "--n", str(a.n),
                               "--max-new-tokens", str(a.length), "--temperature", "1", "--seed", "1",
                               "--threads", str(a.threads)])
    tokens = sum(len(r["response_ids"]) for r in proc.json_lines(out))
    return wall, tokens, rss


# --shape wide: the demo's tokenizer on a wider random Qwen2 (27M parameters) made by `or1 init`,
# whose samples run to the length limit: the cost of the model rather than of the framework.
WIDE = dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
            num_key_value_heads=2, tie_word_embeddings=False, torch_dtype="float32")


def wide_model(or1, base, tmp):
    """A random checkpoint of base's config with WIDE's sizes, beside base's tokenizer files."""
    out = os.path.join(tmp, "wide")
    cfg = dict(json.load(open(os.path.join(base, "config.json"))), **WIDE)
    path = os.path.join(tmp, "wide.json")
    json.dump(cfg, open(path, "w"))
    proc.run([or1, "init", "--config", path, "--out", out, "--seed", 1])
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        with open(os.path.join(base, name), "rb") as src, open(os.path.join(out, name), "wb") as dst:
            dst.write(src.read())
    return out


def child(a, mode, tmp):
    """Runs this script as a child in mode (trl | generate) under GNU time."""
    cmd = [sys.executable, os.path.abspath(__file__), a.or1, a.model, "--child", mode, "--pairs", a.pairs,
           "--out", os.path.join(tmp, "trl-out")]
    for k in ("threads", "prompts", "n", "length", "steps"):
        cmd += [f"--{k}", str(getattr(a, k))]
    out, rss, wall = measured(cmd, env={"TOKENIZERS_PARALLELISM": "false"})
    return [json.loads(line[len(TAG):]) for line in out.splitlines() if line.startswith(TAG)], rss, wall


def summary(name, seconds, tokens, rss, split=None):
    """One training row: median seconds per step after the first, tokens/s, peak RSS (and
    or1's median rollout and update seconds)."""
    med = statistics.median(seconds[1:]) if len(seconds) > 1 else seconds[0]
    row = {"side": name, "s_per_step": med, "s_per_step_range": [min(seconds[1:] or seconds), max(seconds)],
           "tokens_per_s": sum(tokens) / sum(seconds), "peak_rss_mib": rss}
    return dict(row, **(split or {}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("or1")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--length", type=int, default=96)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--shape", choices=("base", "wide"), default="base")
    ap.add_argument("--child")
    ap.add_argument("--pairs")
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.child == "trl":
        return trl_child(a)
    if a.child == "generate":
        return hf_generate_child(a)
    with tempfile.TemporaryDirectory() as tmp:
        if a.shape == "wide":
            a.model = wide_model(a.or1, a.model, tmp)
        rows, pairs = prompts(a.or1, a.model, tmp, a.prompts * a.steps)
        a.pairs = os.path.join(tmp, "pairs.json")
        json.dump(pairs, open(a.pairs, "w"))
        ours = run_or1_train(a, tmp, rows)
        trl_steps, trl_rss, _ = child(a, "trl", tmp)
        train = [summary("or1 train", *ours),
                 summary("TRL GRPOTrainer", [s["seconds"] for s in trl_steps], [s["tokens"] for s in trl_steps], trl_rss)]
        json.dump(pairs[:a.prompts], open(a.pairs, "w"))
        g_s, g_tok, g_rss = run_or1_generate(a, tmp, pairs[:a.prompts])
        hf, hf_rss, _ = child(a, "generate", tmp)
    gen = [{"side": "or1 generate", "seconds": g_s, "tokens": g_tok, "tokens_per_s": g_tok / g_s, "peak_rss_mib": g_rss},
           {"side": "transformers generate", "seconds": hf[0]["seconds"], "tokens": hf[0]["tokens"],
            "tokens_per_s": hf[0]["tokens"] / hf[0]["seconds"], "peak_rss_mib": hf_rss}]
    print(json.dumps({"settings": {k: getattr(a, k) for k in ("shape", "threads", "prompts", "n", "length", "steps")},
                      "train": train, "generate": gen,
                      "ratios": {"train_s_per_step_trl_over_or1": train[1]["s_per_step"] / train[0]["s_per_step"],
                                 "generate_tokens_per_s_or1_over_hf": gen[0]["tokens_per_s"] / gen[1]["tokens_per_s"]}},
                     indent=1))


if __name__ == "__main__":
    main()
