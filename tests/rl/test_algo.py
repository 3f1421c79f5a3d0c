"""The formulas of or1/algo.h against Python and PyTorch references.

Writes cases (random and labelled) to a JSONL file, runs the C driver on it, and compares
each result with what the reference below computes. The references are transcriptions of
what the recipe's code (verl, Skywork-OR1's fork) does, written with torch where verl uses
torch. Usage: test_algo.py ALGO_DRIVER WORKDIR
"""
import json
import math
import os
import random
import subprocess
import sys
from fractions import Fraction

import torch

from or1test.check import check, finish

torch.set_default_dtype(torch.float64)


def close(a, b, rtol=1e-6, atol=1e-6):
    return a is not None and b is not None and abs(a - b) <= atol + rtol * abs(b)


# ---- references ---------------------------------------------------------------------------

def ref_grpo(scores, group, use, norm_by_std, eps):
    """verl compute_grpo_outcome_advantage (mean 0 / std 1 for a group of one, torch.std
    unbiased), restricted to used samples; unused samples get 0."""
    by = {}
    for i, g in enumerate(group):
        if use is None or use[i]:
            by.setdefault(g, []).append(i)
    adv = [0.0] * len(scores)
    for g, idx in by.items():
        s = torch.tensor([scores[i] for i in idx], dtype=torch.float32).double()
        if len(idx) == 1:
            mean, std = torch.tensor(0.0), torch.tensor(1.0)
        else:
            mean, std = s.mean(), s.std()
        for i in idx:
            a = (float(torch.tensor(scores[i], dtype=torch.float32)) - mean)
            adv[i] = float(a / (std + eps)) if norm_by_std else float(a)
    return adv


def f32(x):
    """A score as the C side holds it (float32), widened."""
    return float(torch.tensor(x, dtype=torch.float32))


def used_groups(group, use):
    """{group id: [used sample indices]}."""
    by = {}
    for i, g in enumerate(group):
        if use is None or use[i]:
            by.setdefault(g, []).append(i)
    return by


def ref_rloo(scores, group, use):
    """RLOO (arXiv 2402.14740): each used sample minus the mean of the other used samples of
    its group; a sample alone in its group keeps its score."""
    adv = [0.0] * len(scores)
    for idx in used_groups(group, use).values():
        total = sum(f32(scores[i]) for i in idx)
        for i in idx:
            adv[i] = f32(scores[i]) - (total - f32(scores[i])) / (len(idx) - 1) if len(idx) > 1 else f32(scores[i])
    return adv


def group_centered(scores, group, use):
    """Score minus its group's mean over used samples (0 for a group of one)."""
    x = [0.0] * len(scores)
    for idx in used_groups(group, use).values():
        mean = sum(f32(scores[i]) for i in idx) / len(idx) if len(idx) > 1 else 0.0
        for i in idx:
            x[i] = f32(scores[i]) - mean
    return x


def ref_rpp_baseline(scores, group, use, lens):
    """REINFORCE++-baseline as verl computes it: group-centred scores broadcast over each
    response's tokens, then whitened over all response tokens of the batch (torch masked mean
    with +1e-8, Bessel-corrected variance, rsqrt(var + 1e-8))."""
    x = group_centered(scores, group, use)
    rows = [i for i in range(len(scores)) if use is None or use[i]]
    width = max([lens[i] for i in rows] + [1])
    vals = torch.zeros(len(rows), width)
    mask = torch.zeros(len(rows), width)
    for r, i in enumerate(rows):
        vals[r, :lens[i]] = x[i]
        mask[r, :lens[i]] = 1.0
    m = mask.sum()
    mean = (vals * mask).sum() / (m + 1e-8)
    var = (((vals - mean) ** 2) * mask).sum() / (m + 1e-8) * (m / (m - 1)) if m >= 2 else torch.tensor(1.0)
    white = (vals - mean) * torch.rsqrt(var + 1e-8)
    adv = [0.0] * len(scores)
    for r, i in enumerate(rows):
        adv[i] = float(white[r, 0]) if lens[i] > 0 else float((x[i] - mean) * torch.rsqrt(var + 1e-8))
    return adv


def ref_grpo_batch_std(scores, group, use, eps):
    """LitePPO (arXiv 2508.08221): group-centred scores over the batch std (torch.std, unbiased)
    of the used scores plus eps."""
    x = group_centered(scores, group, use)
    used = torch.tensor([f32(scores[i]) for i in range(len(scores)) if use is None or use[i]])
    std = float(used.std()) if used.numel() >= 2 else 1.0
    return [x[i] / (std + eps) if use is None or use[i] else 0.0 for i in range(len(scores))]


def ref_opo(scores, group, use, lens):
    """OPO (arXiv 2505.23585) as verl's compute_opo_outcome_advantage: each used sample minus the
    length-weighted mean of its group's used scores, sum(len * s) / sum(len), in float64; a
    sample alone in its group keeps its score; lengths summing to 0 give the plain mean."""
    adv = [0.0] * len(scores)
    for idx in used_groups(group, use).values():
        s = torch.tensor([f32(scores[i]) for i in idx], dtype=torch.float64)
        n = torch.tensor([float(lens[i]) for i in idx], dtype=torch.float64)
        if len(idx) == 1:
            base = torch.tensor(0.0, dtype=torch.float64)
        elif n.sum() > 0:
            base = (n * s).sum() / n.sum()
        else:
            base = s.mean()
        for k, i in enumerate(idx):
            adv[i] = float(s[k] - base)
    return adv


def ref_outcome(c, use):
    """The advantages of c["estimator"] over the used samples."""
    est, eps = c.get("estimator", "grpo"), c.get("eps", 1e-6)
    if est in ("grpo", "drgrpo"):
        return ref_grpo(c["scores"], c["group"], use, est == "grpo" and c.get("norm_by_std", True), eps)
    if est == "rloo":
        return ref_rloo(c["scores"], c["group"], use)
    if est == "reinforce++-baseline":
        return ref_rpp_baseline(c["scores"], c["group"], use, c["len"])
    if est == "grpo-batch-std":
        return ref_grpo_batch_std(c["scores"], c["group"], use, eps)
    if est == "opo":
        return ref_opo(c["scores"], c["group"], use, c["len"])
    raise ValueError(est)


def ref_trunc(trunc, mode):
    in_stats = [not t if mode == "before" else True for t in trunc]
    in_loss = [True if mode == "none" else not t for t in trunc]
    return in_stats, in_loss


def ref_reject(scores, group, use, keep_single):
    """Skywork ray_trainer rejection: per uid, all 0 -> solve_none, all 1 -> solve_all,
    other constants too (zero advantage); groups in first-appearance order."""
    order, by = [], {}
    for i, g in enumerate(group):
        if g not in by:
            order.append(g)
            by[g] = []
        if use is None or use[i]:
            by[g].append(scores[i])
    verdict = {}
    for g in order:
        s = by[g]
        if not s:
            verdict[g] = "empty"
        elif all(x == s[0] for x in s) and not (keep_single and len(s) == 1):
            verdict[g] = "solve_none" if s[0] == 0 else "solve_all" if s[0] == 1 else "constant"
        else:
            verdict[g] = "kept"
    kept = [verdict[g] == "kept" for g in group]
    return kept, [verdict[g] for g in order], order


def ref_step(c):
    """The step pipeline; a None score is a reward that failed: out of the statistics and
    the loss, and a group it leaves with fewer than two decided samples is rejected."""
    n = len(c["scores"])
    trunc = c.get("truncated", [False] * n)
    in_stats, in_loss = ref_trunc(trunc, c.get("mode", "none"))
    failed = [x is None for x in c["scores"]]
    in_stats = [a and not f for a, f in zip(in_stats, failed)]
    in_loss = [a and not f for a, f in zip(in_loss, failed)]
    kept, verdicts, order = ref_reject(c["scores"], c["group"], in_stats, c.get("keep_single", False))
    if not c.get("reject", True):
        kept = [True] * n
    for k, g in enumerate(order):
        members = [i for i in range(n) if c["group"][i] == g]
        bad = sum(failed[i] for i in members)
        if bad and len(members) - bad < 2:
            verdicts[k] = "reward_errors"
            for i in members:
                kept[i] = False
    use = [a and b for a, b in zip(in_stats, kept)]
    adv = ref_outcome(c, use)
    in_loss = [a and b for a, b in zip(in_loss, kept)]
    adv = [a if l else 0.0 for a, l in zip(adv, in_loss)]
    return adv, in_loss, verdicts, order


class EntController:
    """EntController of Skywork-OR1's verl fork (verl/trainer/ppo/core_algos.py)."""

    def __init__(self, init_ent_coef, max_ent_coef, min_ent_coef, delta_ent_coef, target_ent):
        self.value = init_ent_coef
        self.max_value, self.min_value = max_ent_coef, min_ent_coef
        self.delta, self.target = delta_ent_coef, target_ent
        self.entropy_loss_enabled = 1

    def update(self, current_ent):
        if current_ent < self.target:
            self.value += self.delta
        else:
            self.value -= self.delta
        self.value = min(max(self.value, self.min_value), self.max_value)
        self.entropy_loss_enabled = int(current_ent < self.target)


def ref_kl(kind, logp, ref):
    """verl kl_penalty forms with autograd for d/dlogp."""
    lp = torch.tensor(logp, requires_grad=True)
    rf = torch.tensor(ref)
    if kind in ("k1", "kl"):
        v = lp - rf
    elif kind == "abs":
        v = (lp - rf).abs()
    elif kind in ("k2", "mse"):
        v = 0.5 * (lp - rf).square()
    else:
        kl = torch.clamp(rf - lp, min=-20, max=20)
        v = torch.clamp(torch.exp(kl) - kl - 1, min=-10, max=10)
    v.backward()
    return float(v), float(lp.grad)


def ref_pass(n, c, k):
    """1 - C(n-c, k) / C(n, k) exactly, with math.comb."""
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


# ---- cases --------------------------------------------------------------------------------

def ref_length(c):
    """DAPO eq. (13) written out (float64): 0 up to L_max - L_cache, ((L_max - L_cache) - |y|) /
    L_cache up to L_max, -1 beyond; times the factor; minus the truncation penalty for a
    truncated response; a failed reward (None) stays failed."""
    out = []
    for s, n, t in zip(c["scores"], c["len"], c["truncated"]):
        if s is None:
            out.append(None)
            continue
        r = torch.tensor(float(s), dtype=torch.float64)
        if c["overlong"]:
            lmax, cache = c["max_len"], c["buffer"]
            if n <= lmax - cache:
                pen = 0.0
            elif n <= lmax:
                pen = ((lmax - cache) - n) / cache
            else:
                pen = -1.0
            r = r + c["factor"] * pen
        if t:
            r = r - c["truncation_penalty"]
        out.append(float(r))
    return out


def random_batch(rng, n_groups, m, binary=True):
    group_ids = rng.sample(range(-1000, 1000), n_groups)
    scores, group = [], []
    for g in group_ids:
        size = rng.choice([m, m, m, 1, 2]) if m > 2 else m
        p = rng.random()
        for _ in range(size):
            scores.append(float(rng.random() < p) if binary else round(rng.uniform(-2, 2), 3))
            group.append(g)
    perm = list(range(len(scores)))
    rng.shuffle(perm)  # samples of a group need not be adjacent
    return [scores[i] for i in perm], [group[i] for i in perm]


def build_cases(rng):
    cases = []
    # GRPO / Dr. GRPO advantages: random, binary and continuous, with and without a mask.
    for t in range(60):
        scores, group = random_batch(rng, rng.randint(1, 12), rng.choice([2, 4, 8, 16]), binary=t % 2 == 0)
        use = [rng.random() < 0.8 for _ in scores] if t % 3 == 0 else None
        c = {"fn": "adv", "scores": scores, "group": group, "norm_by_std": t % 4 != 1}
        if use is not None:
            c["use"] = use
        cases.append(c)
    # Labelled advantages: [1,0,0,0] -> mean .25, std .5; a group of one; all equal.
    cases.append({"fn": "adv", "scores": [1, 0, 0, 0], "group": [7, 7, 7, 7], "expect": [1.5 / (1 + 2e-6)] + [-0.5 / (1 + 2e-6)] * 3})
    cases.append({"fn": "adv", "scores": [1], "group": [3], "expect": [1 / (1 + 1e-6)]})
    cases.append({"fn": "adv", "scores": [0.7, 0.7, 0.7], "group": [1, 1, 1], "expect": [0, 0, 0]})
    cases.append({"fn": "adv", "scores": [1, 0, 1, 0], "group": [5, 6, 6, 5], "norm_by_std": False,
                  "expect": [0.5, -0.5, 0.5, -0.5]})
    # The other estimators: random groups of every size (1 and 2 included), binary (so some
    # groups are all equal) and continuous, with and without a mask, lengths 1..40.
    ests = ("rloo", "reinforce++-baseline", "grpo-batch-std", "drgrpo", "grpo")
    for t in range(75):
        scores, group = random_batch(rng, rng.randint(1, 10), rng.choice([1, 2, 3, 4, 8]), binary=t % 3 != 2)
        c = {"fn": "outcome", "estimator": ests[t % 5], "scores": scores, "group": group,
             "len": [rng.randint(1, 40) for _ in scores]}
        if t % 4 == 0:
            c["use"] = [rng.random() < 0.8 for _ in scores]
        cases.append(c)
    # Labelled: RLOO [1,0,0,0] -> 1 - 0, 0 - 1/3; alone -> its score; all equal -> 0.
    cases.append({"fn": "outcome", "estimator": "rloo", "scores": [1, 0, 0, 0, 0.7, 0.5, 0.5], "group": [1, 1, 1, 1, 2, 3, 3],
                  "expect": [1, -1 / 3, -1 / 3, -1 / 3, 0.7, 0, 0]})
    # Labelled: group means removed -> [0.5, -0.5, 0, 0]; batch std of [1, 0, 2, 2] is sqrt(11/12).
    sd = math.sqrt(11 / 12)
    cases.append({"fn": "outcome", "estimator": "grpo-batch-std", "scores": [1, 0, 2, 2], "group": [1, 1, 2, 2],
                  "expect": [0.5 / (sd + 1e-6), -0.5 / (sd + 1e-6), 0, 0]})
    # Labelled: REINFORCE++-baseline, centred [0.5, -0.5] with lengths 3 and 1: token mean
    # 0.25, token variance (3 * 0.0625 + 0.5625) / 4 * 4 / 3 = 0.25 -> (x - 0.25) / 0.5.
    cases.append({"fn": "outcome", "estimator": "reinforce++-baseline", "scores": [1, 0], "group": [4, 4],
                  "len": [3, 1], "expect": [0.5, -1.5]})
    # The pipeline with each estimator (rejection, masks).
    for t in range(30):
        scores, group = random_batch(rng, rng.randint(1, 6), rng.choice([1, 2, 4]))
        cases.append({"fn": "step", "scores": scores, "group": group, "estimator": ests[t % 5],
                      "mode": ("none", "before", "after")[t % 3], "truncated": [rng.random() < 0.3 for _ in scores],
                      "reject": t % 4 != 3, "keep_single": t % 5 == 0, "len": [rng.randint(1, 30) for _ in scores]})
    # Truncation masks.
    for mode in ("none", "before", "after"):
        tr = [rng.random() < 0.4 for _ in range(20)]
        cases.append({"fn": "trunc", "mode": mode, "truncated": tr, "scores": [0] * 20, "group": list(range(20))})
    # Rejection: labelled groups, then random.
    cases.append({"fn": "reject", "scores": [0, 0, 1, 1, 1, 0, 0.5, 0.5, 1, 0],
                  "group": [1, 1, 2, 2, 3, 3, 4, 4, 5, 6],
                  "expect_verdicts": ["solve_none", "solve_all", "kept", "constant", "solve_all", "solve_none"]})
    cases.append({"fn": "reject", "scores": [1, 0], "group": [9, 8], "keep_single": True,
                  "expect_verdicts": ["kept", "kept"]})
    cases.append({"fn": "reject", "scores": [1, 0, 0], "group": [4, 4, 4], "use": [False, True, True],
                  "expect_verdicts": ["solve_none"]})
    cases.append({"fn": "reject", "scores": [1, 0], "group": [4, 4], "use": [False, False],
                  "expect_verdicts": ["empty"]})
    for t in range(30):
        scores, group = random_batch(rng, rng.randint(1, 10), rng.choice([1, 2, 4, 8]), binary=t % 5 != 0)
        c = {"fn": "reject", "scores": scores, "group": group, "keep_single": t % 2 == 0}
        if t % 3 == 0:
            c["use"] = [rng.random() < 0.7 for _ in scores]
        cases.append(c)
    # The whole pipeline under every mask, with and without rejection, GRPO and Dr. GRPO.
    for t in range(48):
        scores, group = random_batch(rng, rng.randint(1, 8), rng.choice([2, 4, 8]))
        cases.append({"fn": "step", "scores": scores, "group": group, "mode": ("none", "before", "after")[t % 3],
                      "truncated": [rng.random() < 0.3 for _ in scores], "reject": t % 4 != 3,
                      "norm_by_std": t % 8 < 6, "keep_single": t % 5 == 0})
    # Labelled: mask BEFORE, a group [1(trunc), 0, 1] -> stats over [0, 1].
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    cases.append({"fn": "step", "mode": "before", "scores": [0, 0, 1], "group": [1, 1, 1],
                  "truncated": [True, False, False], "expect": [0.0, -a, a], "expect_in_loss": [False, True, True]})
    # Labelled: mask AFTER, same group: stats over all three, truncated gets 0 and leaves the loss.
    s = math.sqrt(1 / 3)
    cases.append({"fn": "step", "mode": "after", "scores": [0, 0, 1], "group": [1, 1, 1],
                  "truncated": [True, False, False],
                  "expect": [0.0, -(1 / 3) / (s + 1e-6), (2 / 3) / (s + 1e-6)], "expect_in_loss": [False, True, True]})
    # Labelled: BEFORE turns [1, 1, 0(trunc)] into a constant group -> rejected.
    cases.append({"fn": "step", "mode": "before", "scores": [1, 1, 0], "group": [2, 2, 2],
                  "truncated": [False, False, True], "expect": [0, 0, 0], "expect_in_loss": [False] * 3,
                  "expect_verdicts": ["solve_all"]})
    # Failed rewards (None): left out of statistics and loss; groups with fewer than two
    # decided samples rejected as reward_errors, with and without rejection.
    for t in range(24):
        scores, group = random_batch(rng, rng.randint(1, 8), rng.choice([2, 4, 8]))
        scores = [None if rng.random() < 0.25 else x for x in scores]
        cases.append({"fn": rng.choice(["step", "stats"]), "scores": scores, "group": group,
                      "mode": ("none", "before", "after")[t % 3], "truncated": [rng.random() < 0.3 for _ in scores],
                      "len": [rng.randint(1, 50) for _ in scores], "reject": t % 4 != 3, "keep_single": t % 5 == 0})
    # Labelled: [1, None, 0] keeps its two decided samples; [1, None] and [None, None] are rejected.
    b = 0.5 / (math.sqrt(0.5) + 1e-6)
    cases.append({"fn": "step", "scores": [1, None, 0, 1, None, None, None], "group": [1, 1, 1, 2, 2, 3, 3],
                  "expect": [b, 0, -b, 0, 0, 0, 0], "expect_in_loss": [True, False, True] + [False] * 4,
                  "expect_verdicts": ["kept", "reward_errors", "reward_errors"]})
    # Batch statistics.
    for t in range(10):
        scores, group = random_batch(rng, rng.randint(1, 8), 4)
        cases.append({"fn": "stats", "scores": scores, "group": group, "mode": ("none", "before", "after")[t % 3],
                      "truncated": [rng.random() < 0.3 for _ in scores],
                      "len": [rng.randint(1, 500) for _ in scores]})
    # Refill decisions (exhaustive over small values) and selections.
    for kept in range(0, 6):
        for done in range(1, 4):
            for maxr in range(1, 4):
                for need in (0, 4):
                    cases.append({"fn": "refill", "kept": kept, "rounds_done": done, "need": need, "max_rounds": maxr})
    for t in range(20):
        n = rng.randint(0, 12)
        cases.append({"fn": "refill", "group_kept": [rng.random() < 0.5 for _ in range(n)], "need": rng.randint(0, 8)})
    # Entropy controller: final-script defaults over random trajectories around the target,
    # a labelled trajectory, the constant and off modes, and a tie at the target.
    for t in range(10):
        es = [max(0.0, 0.2 + rng.gauss(0, 0.05)) for _ in range(rng.randint(5, 200))]
        cases.append({"fn": "entropy", "entropies": es})
    cases.append({"fn": "entropy", "entropies": [0.1, 0.1, 0.3, 0.2, 0.3, 0.3], "delta": 1e-4, "c_max": 1.5e-4,
                  "expect_alpha": [0, 1e-4, 1.5e-4, 0, 0, 0],
                  "expect_coef": [1e-4, 1.5e-4, 0.5e-4, 0, 0, 0],
                  "expect_enabled": [True, True, False, False, False, False]})
    cases.append({"fn": "entropy", "entropies": [0.1] * 60 + [0.5] * 60, "initial": 0.001, "delta": 0.001,
                  "c_max": 0.005, "c_min": 0.0005})
    cases.append({"fn": "entropy", "mode": "constant", "initial": 1e-3, "entropies": [0.1, 0.5, 0.1],
                  "expect_alpha": [1e-3, 1e-3, 1e-3]})
    cases.append({"fn": "entropy", "mode": "off", "initial": 1e-3, "entropies": [0.1, 0.5],
                  "expect_alpha": [0, 0]})
    rows = [[rng.uniform(-5, 0) for _ in range(rng.randint(0, 30))] for _ in range(12)]
    cases.append({"fn": "entropy_estimate", "logp": rows})
    cases.append({"fn": "entropy_estimate", "logp": rows, "use": [i % 3 != 0 for i in range(12)]})
    cases.append({"fn": "entropy_estimate", "logp": [[], []]})
    # KL estimators: random points over the clamp ranges, each name and alias.
    for kind in ("k1", "kl", "abs", "k2", "mse", "k3", "low_var_kl"):
        for t in range(40):
            spread = 30 if t % 4 == 0 else 3
            cases.append({"fn": "kl", "kind": kind, "logp": rng.uniform(-spread, 0), "ref": rng.uniform(-spread, 0),
                          "h": 1e-6})
    cases.append({"fn": "kl", "kind": "k3+", "logp": -1.0, "ref": -2.5, "h": 1e-6})
    for kind, s in (("kl", "k3+"), ("kl", "low_var_kl"), ("kl", "full"), ("kl", ""), ("kl", "k4"),
                    ("trunc", "after"), ("trunc", "Before"), ("entropy", "constant"), ("entropy", "auto")):
        cases.append({"fn": "parse", "kind": kind, "s": s})
    # pass@k against math.comb, including the edges.
    for n in (1, 2, 3, 4, 8, 16, 32, 64, 100):
        for c in sorted({0, 1, n // 2, n - 1, n} - {-1}):
            for k in sorted({1, 2, n // 2 or 1, n}):
                cases.append({"fn": "passk", "n": n, "c": c, "k": k})
    for bad in ((4, 2, 0), (4, 2, 5), (4, 5, 1), (4, -1, 1)):
        cases.append({"fn": "passk", "n": bad[0], "c": bad[1], "k": bad[2]})
    # pass@k report per source.
    srcs = ["test-math-aime24", "test-math-aime25", "test-code-lcb"]
    for n in (1, 6, 8, 32):
        rows = [[rng.choice(srcs), n, rng.randint(0, n)] for _ in range(25)]
        cases.append({"fn": "report", "rows": rows})
    # Problems whose rewards partly failed: each counts with its own scored n.
    cases.append({"fn": "report", "rows": [["a", 4, 1], ["b", 8, 1], ["a", 0, 0], ["b", 3, 3]]})
    cases.append({"fn": "report", "rows": [["a", 0, 0]], "n_drawn": 4})
    cases.append({"fn": "report", "rows": [["a", 5, 1]], "n_drawn": 4})
    # Length shaping: random lengths on both sides of the buffer's start and at the limit, with
    # and without the overlong term and the truncation penalty, failed rewards among them.
    for t in range(20):
        max_len = rng.choice([16, 100, 4096])
        buf = rng.randint(1, max_len - 1)
        lens = [rng.randint(1, max_len) for _ in range(12)] + [max_len, max_len - buf, max_len - buf + 1, max_len + 3]
        cases.append({"fn": "length", "scores": [None if rng.random() < 0.1 else rng.choice([0, 1, 0.5]) for _ in lens],
                      "group": [0] * len(lens), "len": lens, "truncated": [n >= max_len for n in lens],
                      "max_len": max_len, "buffer": buf,
                      "overlong": t % 4 != 3, "factor": rng.choice([1.0, 0.5, 2.0]),
                      "truncation_penalty": rng.choice([0.0, 0.5, 1.0])})
    # Labelled: L_max 10, L_cache 4: lengths 6, 8, 10 -> 0, -0.5, -1 (factor 1); 10 is truncated (-0.25 more).
    cases.append({"fn": "length", "scores": [1, 1, 0], "group": [0, 0, 0], "len": [6, 8, 10],
                  "truncated": [False, False, True],
                  "max_len": 10, "buffer": 4, "overlong": True, "factor": 1.0, "truncation_penalty": 0.25,
                  "expect": [1.0, 0.5, -1.25]})
    # OPO: random groups with lengths 0..40 (a group of one, lengths summing to 0), with and
    # without a mask; the pipeline with it; labelled: [1, 0] with lengths 3 and 1 -> baseline
    # 3/4 -> [0.25, -0.75]; a group of one keeps its score.
    for t in range(30):
        scores, group = random_batch(rng, rng.randint(1, 8), rng.choice([1, 2, 3, 4, 8]), binary=t % 3 != 2)
        c = {"fn": "outcome", "estimator": "opo", "scores": scores, "group": group,
             "len": [0 if t % 7 == 0 else rng.randint(1, 40) for _ in scores]}
        if t % 4 == 0:
            c["use"] = [rng.random() < 0.8 for _ in scores]
        cases.append(c)
    cases.append({"fn": "outcome", "estimator": "opo", "scores": [1, 0, 0.5], "group": [4, 4, 9], "len": [3, 1, 7],
                  "expect": [0.25, -0.75, 0.5]})
    for t in range(6):
        scores, group = random_batch(rng, rng.randint(1, 6), rng.choice([1, 2, 4]))
        cases.append({"fn": "step", "scores": scores, "group": group, "estimator": "opo",
                      "mode": ("none", "before", "after")[t % 3], "truncated": [rng.random() < 0.3 for _ in scores],
                      "reject": t % 2 == 0, "len": [rng.randint(1, 30) for _ in scores]})
    cases.append({"fn": "report", "rows": [["a", 2, 3]], "n_drawn": 4})
    cases.append({"fn": "report", "rows": []})
    return cases


# ---- comparison ---------------------------------------------------------------------------

def compare(i, c, r):
    fn, tag = c["fn"], f"case {i} ({c['fn']})"
    if fn == "adv":
        want = ref_grpo(c["scores"], c["group"], c.get("use"), c.get("norm_by_std", True), c.get("eps", 1e-6))
        check(all(close(a, b, 1e-5, 1e-6) for a, b in zip(r["adv"], want)) and len(r["adv"]) == len(want),
              f"{tag}: adv {r['adv']} != torch {want}")
        if "expect" in c:
            check(all(close(a, b, 1e-5, 1e-6) for a, b in zip(r["adv"], c["expect"])),
                  f"{tag}: adv {r['adv']} != labelled {c['expect']}")
    elif fn == "outcome":
        want = ref_outcome(c, c.get("use"))
        check(len(r["adv"]) == len(want) and all(close(a, b, 1e-5, 1e-6) for a, b in zip(r["adv"], want)),
              f"{tag}: {c['estimator']} adv {r['adv']} != torch {want}")
        if "expect" in c:
            check(all(close(a, b, 1e-5, 1e-6) for a, b in zip(r["adv"], c["expect"])),
                  f"{tag}: {c['estimator']} adv {r['adv']} != labelled {c['expect']}")
    elif fn == "length":
        want = ref_length(c)
        got = [None if g is None or (isinstance(g, float) and math.isnan(g)) else g for g in r["reward"]]
        check(len(got) == len(want) and all((a is None and b is None) or (a is not None and b is not None and
                                             close(a, b, 1e-6, 1e-6)) for a, b in zip(got, want)),
              f"{tag}: length-shaped rewards {got} != torch {want}")
        if "expect" in c:
            check(all(close(a, b, 1e-6, 1e-6) for a, b in zip(got, c["expect"])),
                  f"{tag}: {got} != labelled {c['expect']}")
    elif fn == "trunc":
        s, l = ref_trunc(c["truncated"], c["mode"])
        check(r["in_stats"] == s and r["in_loss"] == l, f"{tag}: masks {r} != {s}, {l}")
    elif fn == "reject":
        kept, verdicts, order = ref_reject(c["scores"], c["group"], c.get("use"), c.get("keep_single", False))
        check(r["kept"] == kept and r["verdicts"] == verdicts and r["group_ids"] == order,
              f"{tag}: {r} != {kept} {verdicts} {order}")
        check(r["kept_groups"] == verdicts.count("kept") and r["solve_none"] == verdicts.count("solve_none")
              and r["solve_all"] == verdicts.count("solve_all") and r["constant"] == verdicts.count("constant")
              and r["empty"] == verdicts.count("empty"), f"{tag}: counts {r}")
        if "expect_verdicts" in c:
            check(r["verdicts"] == c["expect_verdicts"], f"{tag}: verdicts {r['verdicts']} != {c['expect_verdicts']}")
    elif fn in ("step", "stats"):
        adv, in_loss, verdicts, order = ref_step(c)
        check(all(close(a, b, 1e-5, 1e-6) for a, b in zip(r["adv"], adv)), f"{tag}: adv {r['adv']} != {adv}")
        check(r["in_loss"] == in_loss, f"{tag}: in_loss {r['in_loss']} != {in_loss}")
        check(r["verdicts"] == verdicts, f"{tag}: verdicts {r['verdicts']} != {verdicts}")
        for key in ("expect", "expect_in_loss", "expect_verdicts"):
            if key in c:
                got = {"expect": r["adv"], "expect_in_loss": r["in_loss"], "expect_verdicts": r["verdicts"]}[key]
                ok = all(close(a, b, 1e-5, 1e-6) for a, b in zip(got, c[key])) if key == "expect" else got == c[key]
                check(ok, f"{tag}: {key}: {got} != {c[key]}")
        if fn == "stats":
            st, n, sc = r["stats"], len(c["scores"]), c["scores"]
            groups = {}
            for s, g in zip(sc, c["group"]):
                groups.setdefault(g, []).append(s)
            hist = [0] * 10
            for v in groups.values():
                v = [x for x in v if x is not None]
                if v:
                    hist[min(9, int(sum(x >= 1 for x in v) * 10 // len(v)))] += 1
            kept_groups = len({g for g, l in zip(c["group"], in_loss) if l})
            decided = [x for x in sc if x is not None]
            want = {"samples": n, "groups": len(groups),
                    "reward_mean": sum(decided) / len(decided) if decided else 0.0,
                    "accuracy": sum(x >= 1 for x in decided) / len(decided) if decided else 0.0,
                    "solve_none_ratio": verdicts.count("solve_none") / len(groups),
                    "solve_all_ratio": verdicts.count("solve_all") / len(groups),
                    "kept_groups": kept_groups, "kept_samples": sum(in_loss),
                    "response_length_mean": sum(c["len"]) / n, "response_length_max": max(c["len"]),
                    "truncated_ratio": sum(c["truncated"]) / n,
                    "loss_tokens": sum(l for l, k in zip(c["len"], in_loss) if k), "accuracy_hist": hist}
            for k, v in want.items():
                check(st.get(k) == v if isinstance(v, (int, list)) else close(st.get(k), v, 1e-12, 1e-12),
                      f"{tag}: stats {k} = {st.get(k)} != {v}")
    elif fn == "refill":
        if "group_kept" in c:
            take, taken = [], 0
            for k in c["group_kept"]:
                take.append(k and taken < c["need"])
                taken += take[-1]
            check(r["take"] == take and r["taken"] == taken, f"{tag}: {r} != {take}")
        else:
            want = ("train" if c["kept"] >= c["need"] and c["kept"] > 0 else "more" if c["rounds_done"] < c["max_rounds"]
                    else "train" if c["kept"] > 0 else "skip")
            check(r["action"] == want, f"{tag}: {c} -> {r['action']} != {want}")
    elif fn == "entropy":
        mode = c.get("mode", "adaptive")
        ctl = EntController(c.get("initial", 0.0), c.get("c_max", 5e-3), c.get("c_min", 0.0), c.get("delta", 1e-4),
                            c.get("target", 0.2))
        alpha, coef, en = [], [], []
        for e in c["entropies"]:
            if mode == "adaptive":
                alpha.append(ctl.value * ctl.entropy_loss_enabled)
                ctl.update(e)
            else:
                alpha.append(c.get("initial", 0.0) if mode == "constant" else 0.0)
            coef.append(ctl.value)
            en.append(bool(ctl.entropy_loss_enabled))
        check(all(close(a, b, 0, 1e-15) for a, b in zip(r["alpha"], alpha)), f"{tag}: alpha {r['alpha']} != {alpha}")
        if mode == "adaptive":
            check(all(close(a, b, 0, 1e-15) for a, b in zip(r["coef"], coef)), f"{tag}: coef {r['coef']} != {coef}")
            check(r["enabled"] == en, f"{tag}: enabled {r['enabled']} != {en}")
        for key, got in (("expect_alpha", r["alpha"]), ("expect_coef", r["coef"])):
            if key in c:
                check(all(close(a, b, 0, 1e-12) for a, b in zip(got, c[key])), f"{tag}: {key} {got} != {c[key]}")
        if "expect_enabled" in c:
            check(r["enabled"] == c["expect_enabled"], f"{tag}: enabled {r['enabled']}")
    elif fn == "entropy_estimate":
        use = c.get("use", [True] * len(c["logp"]))
        toks = [torch.tensor(x, dtype=torch.float32).double() for x, u in zip(c["logp"], use) if u]
        allt = torch.cat(toks) if toks else torch.zeros(0)
        want = float(-allt.mean()) if allt.numel() else 0.0
        check(close(r["estimate"], want, 1e-12, 1e-12), f"{tag}: {r['estimate']} != {want}")
    elif fn == "kl":
        base = c["kind"].rstrip("+")
        v, g = ref_kl(base, c["logp"], c["ref"])
        if c["kind"].endswith("+"):
            g = c["logp"] - c["ref"]
        check(close(r["value"], v, 1e-12, 1e-12), f"{tag}: {c['kind']} value {r['value']} != torch {v}")
        check(close(r["grad"], g, 1e-12, 1e-12), f"{tag}: {c['kind']} grad {r['grad']} != autograd {g}")
        d = c["logp"] - c["ref"]
        kink = abs(d) < 1e-4 or abs(abs(d) - 20) < 1e-4 or abs(math.exp(min(20, max(-20, -d))) + d - 1 - 10) < 1e-3
        if not kink and not c["kind"].endswith("+"):
            fd = (r["value_plus"] - r["value_minus"]) / (2 * c["h"])
            check(close(fd, r["grad"], 1e-4, 1e-6), f"{tag}: {c['kind']} grad {r['grad']} != finite diff {fd}")
    elif fn == "parse":
        want = {"k3+": "k3+", "low_var_kl": "k3", "after": "after", "constant": "constant"}.get(c["s"])
        if want:
            check(r.get("name") == want, f"{tag}: parse {c['s']!r} -> {r}")
        else:
            check("error" in r and c["s"] in r["error"], f"{tag}: parse {c['s']!r} should fail naming it: {r}")
    elif fn == "passk":
        n, cc, k = c["n"], c["c"], c["k"]
        if 1 <= k <= n and 0 <= cc <= n:
            check(close(r["value"], ref_pass(n, cc, k), 1e-12, 1e-12), f"{tag}: pass@{k}({n},{cc}) {r['value']}")
        else:
            check(r["value"] is None, f"{tag}: invalid pass@k should be NaN: {r}")
    elif fn == "report":
        rows = c["rows"]
        n = c.get("n_drawn", max((x[1] for x in rows), default=0))
        if not rows or any(x[1] > n or x[2] > x[1] for x in rows):
            check("error" in r, f"{tag}: should fail: {r}")
            return
        ks, k = [], 1
        while k < n:
            ks.append(k)
            k *= 2
        ks.append(n)

        def mean(vals):
            return sum(vals) / len(vals) if vals else None

        def agg(sel):
            scored = [x for x in sel if x[1] > 0]
            g = {"problems": len(scored), "n": n, f"avg@{n}": mean([x[2] / x[1] for x in scored])}
            for k in ks:
                g[f"pass@{k}"] = mean([ref_pass(x[1], x[2], k) for x in scored if x[1] >= k])
            return g
        want = {"overall": agg(rows), "by_source": {}}
        for s in dict.fromkeys(x[0] for x in rows):
            want["by_source"][s] = agg([x for x in rows if x[0] == s])
        got = r["report"]
        check(list(got["by_source"]) == list(want["by_source"]), f"{tag}: sources {list(got['by_source'])}")
        for name, g in [("overall", got["overall"])] + list(got["by_source"].items()):
            w = want["overall"] if name == "overall" else want["by_source"][name]
            check(set(g) == set(w) and all(g[k] == w[k] if w[k] is None or g[k] is None else close(g[k], w[k], 1e-12, 1e-12) for k in w),
                  f"{tag}: {name}: {g} != {w}")


def main(driver, workdir):
    os.makedirs(workdir, exist_ok=True)
    rng = random.Random(20250522)
    cases = build_cases(rng)
    path = os.path.join(workdir, "algo_cases.jsonl")
    with open(path, "w") as f:
        for c in cases:
            f.write(json.dumps(c) + "\n")
    p = subprocess.run([driver, path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"algo_driver failed ({p.returncode}): {p.stderr}")
    results = [json.loads(line) for line in p.stdout.splitlines()]
    if len(results) != len(cases):
        sys.exit(f"{len(results)} results for {len(cases)} cases")
    for i, (c, r) in enumerate(zip(cases, results)):
        compare(i, c, r)
    print(f"{len(cases)} cases")
    finish("rl_algo")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
