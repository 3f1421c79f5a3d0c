"""`or1 grad` under each loss aggregation and policy-loss mode against the float64 reference.

usage: test_variants.py OR1

For every --loss-agg (token-mean, seq-mean-token-mean, seq-mean-token-sum,
seq-mean-token-sum-norm with its default and an explicit --loss-scale) and every --loss-mode
(dual-clip, cispo, gspo), on one batch whose responses have different lengths, advantages of
both signs and ratios on both sides of the clip bounds: the printed statistics and every
gradient tensor against ref.grpo_loss (tolerances of test_grad.py). Each case also names a
partner (another aggregation or mode) and checks that the partner's reference would fail the
same comparison, so a swapped formula cannot pass. Each aggregation, and GSPO, is run again
split into 2 micro-batches and into one line per micro-batch: the normaliser is global to the
batch, so statistics and gradients must match the whole-batch run (tolerances of
test_microbatch.py).
"""
import math
import os
import sys
import tempfile

import torch

from or1test import files, proc, ref
from or1test.check import Checker
from test_grad import check_grads, check_stats
from test_microbatch import compare_runs, k_for

LENGTHS = ((7, 9), (3, 4), (12, 6), (2, 11), (5, 3))
BASE = dict(temperature=0.8, ent_coef=0.01, clip_low=0.2, clip_high=0.28)
FLAGS = {"temperature": "--temperature", "ent_coef": "--entropy-coef", "clip_low": "--clip-low",
         "clip_high": "--clip-high", "agg": "--loss-agg", "agg_scale": "--loss-scale", "mode": "--loss-mode",
         "clip_c": "--clip-ratio-c", "gspo_low": "--gspo-clip-low", "gspo_high": "--gspo-clip-high",
         "cispo_low": "--cispo-clip-low", "cispo_high": "--cispo-clip-high", "clip_cov_ratio": "--clip-cov-ratio",
         "clip_cov_lb": "--clip-cov-lb", "clip_cov_ub": "--clip-cov-ub", "kl_cov_ratio": "--kl-cov-ratio",
         "ppo_kl_coef": "--ppo-kl-coef", "top_entropy": "--top-entropy-quantile", "seed": "--seed",
         "rollout_is": "--rollout-is", "rollout_is_low": "--rollout-is-low", "rollout_is_high": "--rollout-is-high",
         "offpolicy_delta": "--offpolicy-delta"}
SELECTION_STATS = ("cov_selected_frac", "low_entropy_frac")
# The margin a selection needs from its thresholds: far above the float32 error of the
# covariances and entropies, so the float64 reference and or1 choose the same tokens.
SELECT_MARGIN = 1e-4

# (settings, the partner's differing settings, run the micro-batch splits)
CASES = [
    (dict(agg="token-mean"), dict(agg="seq-mean-token-mean"), True),
    (dict(agg="seq-mean-token-mean"), dict(agg="token-mean"), True),
    (dict(agg="seq-mean-token-sum"), dict(agg="seq-mean-token-sum-norm"), True),
    (dict(agg="seq-mean-token-sum-norm"), dict(agg="seq-mean-token-sum"), True),
    (dict(agg="seq-mean-token-sum-norm", agg_scale=16), dict(agg_scale=0), False),
    (dict(mode="dual-clip", clip_c=1.5), dict(mode="ppo"), False),
    (dict(mode="dual-clip", clip_c=1.3, agg="seq-mean-token-sum"), dict(mode="ppo"), False),
    (dict(mode="cispo"), dict(mode="ppo"), False),
    (dict(mode="cispo", cispo_low=0.2, cispo_high=0.28, agg="seq-mean-token-mean"), dict(cispo_low=10.0), False),
    (dict(mode="gspo", agg="seq-mean-token-mean"), dict(mode="ppo"), True),
    (dict(mode="gspo", agg="seq-mean-token-sum", gspo_low=0.05, gspo_high=0.05), dict(agg="seq-mean-token-mean"), True),
    # GMPO: the PPO clip bounds in log space (the paper's wider 0.4 too), the term per sequence
    (dict(mode="gmpo"), dict(mode="ppo"), True),
    (dict(mode="gmpo", clip_low=0.4, clip_high=0.4, agg="seq-mean-token-sum"), dict(clip_high=0.6), True),
    # Clip-Cov: the published settings draw one token; a wider range and share draw 3 of more
    # candidates, and another seed draws others
    (dict(mode="clip-cov", clip_cov_lb=0.3), dict(mode="ppo"), True),
    (dict(mode="clip-cov", clip_cov_ratio=0.1, clip_cov_lb=0.2, clip_cov_ub=3.0, seed=7), dict(seed=8), True),
    (dict(mode="clip-cov", clip_cov_ratio=0.1, clip_cov_lb=0.2, clip_cov_ub=3.0, seed=8, agg="seq-mean-token-sum"),
     dict(clip_cov_ub=1.0), False),
    # KL-Cov: the published share (one token of this batch) and a larger one with another coefficient
    (dict(mode="kl-cov"), dict(mode="ppo"), True),
    (dict(mode="kl-cov", kl_cov_ratio=0.15, ppo_kl_coef=0.5, agg="seq-mean-token-mean"), dict(kl_cov_ratio=0.05), True),
    # the 80/20 rule alone and under another mode
    (dict(top_entropy=0.2), dict(top_entropy=1.0), True),
    (dict(top_entropy=0.5, mode="cispo", agg="seq-mean-token-sum"), dict(top_entropy=0.4), True),
]


class Quiet(Checker):
    """A checker that only counts, for the partner comparisons expected to fail."""

    def fail(self, msg):
        self.failures.append(msg)


def args_of(settings):
    """The or1 grad flags of a settings dict."""
    out = []
    for k, v in settings.items():
        out += [FLAGS[k], v]
    return out


def run_grad(chk, or1, tmp, model, bpath, settings, what, k=None):
    """One or1 grad run: (stats, {name: gradient}) or None."""
    out = os.path.join(tmp, "g.safetensors")
    extra = ["--micro-batch-tokens", k] if k else []
    r = proc.run_or1(or1, ["grad", "--model", model, "--batch", bpath, "--out", out, "--threads", 2] +
                     args_of(settings) + extra)
    if not chk.ok(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr.strip()}"):
        return None
    return proc.parse_json_line(r.stdout.strip(), what), ref.read_safetensors(out)[0]


def ratios(row, params, cfg):
    """pi/pi_old of each response token of a row under the reference."""
    ids = row["prompt_ids"] + row["response_ids"]
    logits = ref.forward_logits(params, cfg, ids)[len(row["prompt_ids"]) - 1:len(ids) - 1]
    logp, _ = ref.token_logprobs(logits, row["response_ids"], BASE["temperature"])
    return [math.exp(a - b) for a, b in zip(logp.tolist(), row["old_logprobs"])]


def current_logprobs(batch, params, cfg):
    """Each row's response log-probs and entropies under the reference (float64, detached)."""
    out = []
    for row in batch:
        ids = row["prompt_ids"] + row["response_ids"]
        logits = ref.forward_logits(params, cfg, ids)[len(row["prompt_ids"]) - 1:len(ids) - 1]
        out.append(ref.token_logprobs(logits, row["response_ids"], BASE["temperature"]))
    return out


def gap_at(values, k):
    """Relative gap between the k-th and (k+1)-th largest of values."""
    v = sorted(values, reverse=True)
    return (v[k - 1] - v[k]) / max(abs(v[k - 1]), 1e-30) if k < len(v) else 1.0


def selection_exercised(what, settings, batch, params, cfg):
    """Clip-Cov, KL-Cov and 80/20 cases: thresholds clear of the covariances and entropies
    (the float32 / float64 difference cannot change the choice) and each choice non-trivial."""
    lp_ent = current_logprobs(batch, params, cfg)
    logps = [x[0] for x in lp_ent]
    advs = [float(r["advantage"]) for r in batch]
    covs = torch.cat(ref.covariances(logps, advs)).tolist()
    tokens = len(covs)
    mode = settings.get("mode", "ppo")
    if mode == "clip-cov":
        lb, ub = settings.get("clip_cov_lb", 1.0), settings.get("clip_cov_ub", 5.0)
        assert all(min(abs(c - lb), abs(c - ub)) > SELECT_MARGIN for c in covs), (what, "a Cov at a bound")
        wins = [ref.ppo_clip_term(lp, torch.as_tensor(r["old_logprobs"]), a, BASE["clip_low"], BASE["clip_high"])[1]
                for lp, r, a in zip(logps, batch, advs)]
        _, n_cand = ref.clip_cov_drawn(ref.covariances(logps, advs), wins, settings.get("clip_cov_ratio", 2e-4),
                                       lb, ub, settings.get("seed", 0))
        want = max(int(settings.get("clip_cov_ratio", 2e-4) * tokens), 1)
        assert n_cand > want, (what, f"{n_cand} candidates for {want} draws: nothing random to check")
    if mode == "kl-cov":
        k = max(1, int(tokens * settings.get("kl_cov_ratio", 2e-3)))
        assert gap_at(covs, k) > SELECT_MARGIN, (what, "tied covariances at the KL-Cov threshold")
    if settings.get("top_entropy", 1.0) < 1:
        ents = torch.cat([x[1] for x in lp_ent]).tolist()
        k = math.ceil(settings["top_entropy"] * tokens - 1e-9)
        assert gap_at(ents, k) > SELECT_MARGIN, (what, "tied entropies at the 80/20 threshold")


def exercised(what, settings, stats, batch, params, cfg):
    """The batch must reach each branch of the case's formula, or the test proves little."""
    mode = settings.get("mode", "ppo")
    if mode in ("clip-cov", "kl-cov") or settings.get("top_entropy", 1.0) < 1:
        selection_exercised(what, settings, batch, params, cfg)
        assert stats["cov_selected_frac"] > 0 or mode not in ("clip-cov", "kl-cov"), (what, stats)
    if mode in ("ppo", "cispo", "clip-cov", "gmpo") or settings.get("gspo_low", 0) >= 0.05:
        assert 0 < stats["clip_frac"] < 1, (what, stats)
    if mode == "dual-clip":
        c = settings.get("clip_c", 3.0)
        capped = 0
        for row in batch:
            if row["advantage"] < 0:
                capped += any(r > c for r in ratios(row, params, cfg))
        assert capped > 0, (what, "no row with A < 0 reaches the dual clip")


def check_case(chk, or1, tmp, model, bpath, params, cfg, batch, settings, partner):
    """Statistics and gradients against the reference, and the partner's reference refused."""
    kw = dict(BASE, **settings)
    what = f"{settings}"
    got = run_grad(chk, or1, tmp, model, bpath, kw, what)
    want_stats, want_grads = ref.loss_and_grads(params, cfg, batch, **kw)
    exercised(what, settings, want_stats, batch, params, cfg)
    if got:
        check_stats(chk, what, got[0], want_stats)
        for key in SELECTION_STATS:
            chk.close(f"{what}: {key}", got[0].get(key), want_stats[key], 1e-12)
        gpath = os.path.join(tmp, "g.safetensors")
        check_grads(chk, what, gpath, want_grads)
        other_stats, other_grads = ref.loss_and_grads(params, cfg, batch, **dict(kw, **partner))
        q = Quiet("partner")
        check_stats(q, what, other_stats, want_stats)
        for name, w in want_grads.items():
            q.close(name, other_grads[name], w, 1e-4 * max(float(w.abs().max()), 1e-12))
        chk.ok(len(q.failures) > 0, f"{what}: the reference of {partner} passes the same checks")
    return got


def check_micro(chk, or1, tmp, model, bpath, settings, base):
    """The same run split into 2 micro-batches and into single lines: same results."""
    lines = [p + r for p, r in LENGTHS]
    for n_micro, k in ((2, k_for(lines, 2)), (len(lines), 1)):
        what = f"{settings} K={k} ({n_micro} micro-batches)"
        got = run_grad(chk, or1, tmp, model, bpath, dict(BASE, **settings), what, k)
        if not got:
            continue
        compare_runs(chk, what, got, base, ("loss", "pg_loss", "entropy", "clip_frac", "grad_norm") + SELECTION_STATS)


def main():
    or1 = sys.argv[1]
    chk = Checker("loss variants")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        cfg, params = ref.new_checkpoint(model, seed=4, arch="qwen2", tied=False)
        batch = ref.make_batch(params, cfg, seed=6, lengths=LENGTHS, temperature=BASE["temperature"])
        bpath = os.path.join(tmp, "b.jsonl")
        files.write_jsonl(bpath, batch)
        for settings, partner, micro in CASES:
            got = check_case(chk, or1, tmp, model, bpath, params, cfg, batch, settings, partner)
            if got and micro:
                check_micro(chk, or1, tmp, model, bpath, settings, got)
    chk.finish()


if __name__ == "__main__":
    main()
