"""Self-check of the model core: a random Qwen2-shaped checkpoint takes a few AdamW steps of the
MAGIC loss (eq. 3.1) on a fixed batch; responses with positive advantage must gain log-probability
and those with negative advantage must lose it. Prints what it does; exits non-zero on failure."""
import json
import os
import random
import shutil
import subprocess
import sys

CONFIG = {"model_type": "qwen2", "hidden_size": 128, "intermediate_size": 352, "num_hidden_layers": 4,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256, "rms_norm_eps": 1e-6,
          "rope_theta": 10000.0, "tie_word_embeddings": True, "max_position_embeddings": 4096}
STEPS = 5


def or1(binary, *args, stdin=None):
    """Runs one or1 command and returns its stdout; stops the check on failure."""
    r = subprocess.run([binary, *map(str, args)], input=stdin, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"selfcheck: or1 {args[0]} failed: {r.stderr.strip()}")
    return r.stdout


def mean_logprob(binary, model, rows, sign):
    """Mean per-token log-prob of the responses whose advantage has the given sign."""
    picked = [r for r in rows if (r["advantage"] > 0) == (sign > 0)]
    lines = "".join(json.dumps({"ids": r["prompt_ids"] + r["response_ids"]}) + "\n" for r in picked)
    out = or1(binary, "logprobs", "--model", model, "--input", "-", stdin=lines).splitlines()
    total, n = 0.0, 0
    for r, line in zip(picked, out):
        lp = json.loads(line)["logprobs"][len(r["prompt_ids"]) - 1:]
        total, n = total + sum(lp), n + len(lp)
    return total / n


def main(binary, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    with open(f"{out}/config.json", "w") as f:
        json.dump(CONFIG, f)
    or1(binary, "init", "--config", f"{out}/config.json", "--out", f"{out}/step0", "--seed", 1)
    rng = random.Random(0)
    rows = [{"prompt_ids": [rng.randrange(256) for _ in range(16)],
             "response_ids": [rng.randrange(256) for _ in range(48)],
             "advantage": 1.0 if i % 2 == 0 else -1.0} for i in range(16)]
    with open(f"{out}/batch.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    before = (mean_logprob(binary, f"{out}/step0", rows, 1), mean_logprob(binary, f"{out}/step0", rows, -1))
    print(f"selfcheck: random {CONFIG['num_hidden_layers']}-layer Qwen2 model, 16 responses x 48 tokens")
    for k in range(STEPS):
        stats = json.loads(or1(binary, "grad", "--model", f"{out}/step{k}", "--batch", f"{out}/batch.jsonl",
                               "--step", "--lr", "3e-3", "--save", f"{out}/step{k + 1}"))
        print(f"  step {k + 1}: loss {stats['loss']:+.4f}  entropy {stats['entropy']:.3f}  "
              f"clip_frac {stats['clip_frac']:.2f}  grad_norm {stats['grad_norm']:.3f}")
    after = (mean_logprob(binary, f"{out}/step{STEPS}", rows, 1), mean_logprob(binary, f"{out}/step{STEPS}", rows, -1))
    print(f"  mean log-prob, advantage +1: {before[0]:.4f} -> {after[0]:.4f}")
    print(f"  mean log-prob, advantage -1: {before[1]:.4f} -> {after[1]:.4f}")
    if not (after[0] > before[0] and after[1] < before[1]):
        sys.exit("selfcheck: FAILED: the update did not move log-probs in the direction of the advantages")
    print(f"selfcheck: ok (checkpoints under {out}/)")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
