"""Many first tokens from a tiny model against the exact sampling distribution (chi-square).

usage: test_distribution.py OR1

The exact distribution comes from `or1 logprobs --temperature T` over prompt + [v] for every token v
of a 24-token vocabulary, truncated in float64 the way Hugging Face orders its warpers: temperature,
then top-k (the k most likely), then top-p on what is left (the smallest set of most likely tokens
whose renormalised mass reaches p), then renormalised. `or1 generate --n 4000 --max-new-tokens 1
--seed 1` (fixed, so the test is deterministic) must give counts whose chi-square p-value is above
1e-3 (cells with under 5 expected are pooled), and never a token outside the truncated set.
So that passing means something, each case also checks that its counts reject (p < 1e-6) the
distribution a plausible bug would produce: the untempered one, the untruncated one, or top-p
applied to the untruncated distribution instead of the top-k remainder.
"""
import math
import os
import sys
import tempfile

import torch

from or1test import ref, rollout
from or1test.check import Checker

N = 4000
ALPHA = 1e-3
POWER = 1e-6
MARGIN = 0.01  # truncation boundaries must be this far from the chosen k/p (probability units)
# (name, temperature, top_k, top_p, the wrong distributions that the counts must reject)
CASES = [("plain T=1", 1.0, 0, 1.0, [("T=0.6", 0.6, 0, 1.0)]),
         ("plain T=0.6", 0.6, 0, 1.0, [("T=1", 1.0, 0, 1.0)]),
         ("top-p 0.7", 1.0, 0, 0.7, [("no top-p", 1.0, 0, 1.0), ("top-p 0.8", 1.0, 0, 0.8),
                                     ("the set below p", 1.0, 3, 1.0)]),
         ("top-k 5 T=0.8", 0.8, 5, 1.0, [("top-k 6", 0.8, 6, 1.0), ("T=1", 1.0, 5, 1.0)]),
         ("top-k 4 top-p 0.8", 1.0, 4, 0.8,
          [("top-p of the full distribution", 1.0, 0, 0.8), ("top-k alone", 1.0, 4, 1.0)]),
         ("top-k 5 top-p 0.75 T=0.7", 0.7, 5, 0.75, [("T=1", 1.0, 5, 0.75)])]


def exact_logp(chk, or1, model, prompt, vocab, temperature, tmp):
    """log p_T(v | prompt) for every v, from `or1 logprobs` (float64 tensor, or None)."""
    lps = rollout.logprobs(chk, or1, model, [prompt + [v] for v in range(vocab)], tmp, temperature)
    return None if lps is None else torch.tensor([lp[-1] for lp in lps], dtype=torch.float64)


def truncate(chk, what, logp, top_k, top_p, margins=True):
    """Hugging Face's top-k then top-p over probabilities exp(logp); the renormalised result.

    With margins, also checks that k and p are not within MARGIN of a boundary, where float32
    rounding could legitimately move a token in or out."""
    p = logp.exp()
    p = p / p.sum()
    order = torch.argsort(p, descending=True, stable=True)
    keep = torch.zeros_like(p, dtype=torch.bool)
    n = len(p) if top_k <= 0 else min(top_k, len(p))
    if margins and 0 < top_k < len(p):
        chk.ok(float(p[order[top_k - 1]] - p[order[top_k]]) > MARGIN / 10,
               f"{what}: the k-th and (k+1)-th probabilities nearly tie")
    if top_p < 1:
        q = p[order[:n]] / p[order[:n]].sum()
        cum = torch.cumsum(q, 0)
        n = int((cum < top_p).sum()) + 1
        chk.ok(not margins or min(abs(float(c) - top_p) for c in cum) > MARGIN,
               f"{what}: top-p {top_p} is within {MARGIN} of a cumulative mass {cum.tolist()}")
    keep[order[:n]] = True
    out = torch.where(keep, p, torch.zeros_like(p))
    return out / out.sum()


def chi_square_p(counts, probs):
    """Pearson chi-square p-value of counts against probs over the support of probs (cells with
    expected count < 5 pooled into one)."""
    exp = probs * counts.sum()
    support = probs > 0
    big = support & (exp >= 5)
    obs_cells = counts[big].tolist()
    exp_cells = exp[big].tolist()
    small = support & ~big
    if small.any():
        obs_cells.append(float(counts[small].sum()))
        exp_cells.append(float(exp[small].sum()))
    stat = sum((o - e) ** 2 / e for o, e in zip(obs_cells, exp_cells))
    df = len(obs_cells) - 1
    if df < 1:
        return 1.0, stat, df
    pval = float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))
    return pval, stat, df


def check_case(chk, or1, model, inp, prompt, vocab, case, tmp, cache):
    """One sampling setting: goodness of fit, support, and power against the wrong distributions."""
    name, temp, top_k, top_p, wrongs = case

    def dist(t, k, p, what, margins):
        """The truncated distribution at temperature t (log-probs cached per temperature)."""
        if t not in cache:
            cache[t] = exact_logp(chk, or1, model, prompt, vocab, t, tmp)
        return None if cache[t] is None else truncate(chk, what, cache[t], k, p, margins)

    want = dist(temp, top_k, top_p, name, True)
    flags = {"n": N, "seed": 1, "max-new-tokens": 1, "temperature": temp,
             "top-k": top_k or None, "top-p": top_p if top_p < 1 else None}
    rows = rollout.generate(chk, or1, model, inp, 1, **flags)
    if rows is None or want is None:
        return
    counts = torch.zeros(vocab, dtype=torch.float64)
    for r in rows:
        counts[r["response_ids"][0]] += 1
    outside = [v for v in range(vocab) if counts[v] > 0 and want[v] == 0]
    chk.ok(not outside, f"{name}: tokens {outside} sampled but outside the truncated set "
           f"{[v for v in range(vocab) if want[v] > 0]}")
    pval, stat, df = chi_square_p(counts, want)
    print(f"{name}: {int((want > 0).sum())} tokens kept, chi2 {stat:.1f} on {df} df, p = {pval:.3g}")
    chk.ok(pval > ALPHA, f"{name}: chi-square p-value {pval:.3g} <= {ALPHA} (chi2 {stat:.1f}, {df} df);"
           f" counts {counts.tolist()} vs expected {(want * N).tolist()}")
    for wname, t, k, p in wrongs:
        bad = dist(t, k, p, f"{name} vs {wname}", False)
        if bad is None:
            continue
        if (counts[bad == 0] > 0).any():
            continue  # the wrong distribution is already rejected outright
        wp, wstat, _ = chi_square_p(counts, bad)
        chk.ok(wp < POWER, f"{name}: the counts do not reject the wrong distribution '{wname}' "
               f"(p = {wp:.3g}); the test lacks power")


def main():
    or1 = sys.argv[1]
    chk = Checker("rollout distribution")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        cfg, _ = ref.new_checkpoint(model, seed=3, vocab=24)
        prompt = [3, 17, 5, 9, 1]
        inp = rollout.write_prompts(os.path.join(tmp, "in.jsonl"), [prompt])
        cache = {}
        for case in CASES:
            check_case(chk, or1, model, inp, prompt, cfg["vocab_size"], case, tmp, cache)
        if 1.0 in cache and cache[1.0] is not None:
            p = cache[1.0].exp()
            chk.ok(float(p.max()) < 0.5 and int((p > 0.02).sum()) >= 8,
                   f"the model's first-token distribution is too peaked for this test: {p.tolist()}")
    chk.finish()


if __name__ == "__main__":
    main()
