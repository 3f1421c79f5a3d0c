"""`or1 grad` with a per-token response mask against the float64 reference.

usage: test_mask.py OR1

A tool-integrated rollout's response holds tokens the policy did not sample (a tool's output,
template glue): their "response_mask" is 0, and they must be context only. The batch here has
masked runs inside responses, one response masked whole, old and rollout log-probs on both sides
of every clip and correction bound, and at every masked token log-probs that would dominate
any term they reached (+-40 nats). Under each aggregation, policy-loss mode, selection, rollout
correction and the off-policy mask, the printed statistics (token counts included) and every
gradient must equal ref.grpo_loss, which drops the masked tokens before anything else, and must
not equal the reference without the mask. The masked tokens' log-probs are then replaced by
ordinary ones: the gradients must stay the same, bit for bit. Some cases run again split into
micro-batches, one line each.
"""
import copy
import os
import sys
import tempfile

from or1test import files, ref
from or1test.check import Checker
from test_grad import check_grads, check_stats
from test_microbatch import compare_runs
from test_variants import BASE, SELECTION_STATS, Quiet, run_grad

LENGTHS = ((7, 9), (3, 4), (12, 10), (2, 11), (5, 3), (4, 6))
# Each row's mask, by response position: runs of 0 inside, at the start and at the end, and
# the fifth row masked whole (it leaves N, T and the longest response).
MASKS = [[1, 1, 0, 0, 0, 1, 1, 1, 1], [0, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0, 1, 1, 1],
         [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0], [0, 0, 0], [1, 0, 1, 0, 1, 1]]
WILD = 40.0

# (settings, run the micro-batch splits)
CASES = [
    (dict(agg="token-mean"), True),
    (dict(agg="seq-mean-token-mean"), True),
    (dict(agg="seq-mean-token-sum"), False),
    (dict(agg="seq-mean-token-sum-norm"), False),
    (dict(mode="dual-clip", clip_c=1.5), False),
    (dict(mode="cispo"), False),
    (dict(mode="gspo", gspo_low=0.05, gspo_high=0.05), True),
    (dict(mode="gmpo"), False),
    (dict(mode="clip-cov", clip_cov_ratio=0.1, clip_cov_lb=0.2, clip_cov_ub=3.0, seed=7), True),
    (dict(mode="kl-cov", kl_cov_ratio=0.15), False),
    (dict(top_entropy=0.5), True),
    (dict(rollout_is="tis", rollout_is_high=1.5), False),
    (dict(rollout_is="mis"), False),
    (dict(rollout_is="mis-geo", rollout_is_low=0.7, rollout_is_high=1.5), False),
    (dict(rollout_is="decoupled"), False),
    (dict(offpolicy_delta=0.05), False),
]


def masked_batch(plain):
    """The batch with MASKS, and log-probs far off at every masked token."""
    out = copy.deepcopy(plain)
    for row, mask in zip(out, MASKS):
        assert len(mask) == len(row["response_ids"])
        row["response_mask"] = mask
        for key, sign in (("old_logprobs", 1.0), ("rollout_logprobs", -1.0)):
            row[key] = [v if m else v + sign * WILD for v, m in zip(row[key], mask)]
    return out


def check_case(chk, or1, tmp, model, paths, params, cfg, batches, settings, micro):
    """Statistics and gradients against the masked reference; the unmasked one refused; the
    masked tokens' log-probs without effect; the micro-batch splits the same."""
    kw = dict(BASE, **settings)
    what = f"{settings}"
    got = run_grad(chk, or1, tmp, model, paths["masked"], kw, what)
    want_stats, want_grads = ref.loss_and_grads(params, cfg, batches["masked"], **kw)
    if not got:
        return
    check_stats(chk, what, got[0], want_stats)
    for key in SELECTION_STATS + ("offpolicy_masked_frac",):
        chk.close(f"{what}: {key}", got[0].get(key), want_stats[key], 1e-12)
    gpath = os.path.join(tmp, "g.safetensors")
    check_grads(chk, what, gpath, want_grads)
    unmasked_stats, unmasked_grads = ref.loss_and_grads(params, cfg, batches["plain"], **kw)
    q = Quiet("unmasked")
    check_stats(q, what, unmasked_stats, want_stats)
    for name, w in want_grads.items():
        q.close(name, unmasked_grads[name], w, 1e-4 * max(float(w.abs().max()), 1e-12))
    chk.ok(len(q.failures) > 0, f"{what}: the reference without the mask passes the same checks")
    tame = run_grad(chk, or1, tmp, model, paths["tame"], kw, what + " (masked log-probs ordinary)")
    if tame:
        for name, g in got[1].items():
            chk.ok(tame[1][name].equal(g), f"{what}: grad {name} changes with a masked token's log-probs")
    if micro:
        for k in (20, 1):
            split = run_grad(chk, or1, tmp, model, paths["masked"], kw, f"{what} micro-batches of {k} tokens", k)
            if split:
                compare_runs(chk, f"{what} K={k}", split, got,
                             ("loss", "pg_loss", "entropy", "clip_frac", "grad_norm") + SELECTION_STATS)


def main():
    or1 = sys.argv[1]
    chk = Checker("response mask")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        cfg, params = ref.new_checkpoint(model, seed=5, arch="qwen2", tied=False)
        plain = ref.make_batch(params, cfg, seed=9, lengths=LENGTHS, temperature=BASE["temperature"],
                               with_rollout=True)
        masked = masked_batch(plain)
        tame = copy.deepcopy(plain)
        for row, mask in zip(tame, MASKS):
            row["response_mask"] = mask
        batches = {"plain": plain, "masked": masked, "tame": tame}
        paths = {}
        for name, batch in batches.items():
            paths[name] = os.path.join(tmp, f"{name}.jsonl")
            files.write_jsonl(paths[name], batch)
        for settings, micro in CASES:
            check_case(chk, or1, tmp, model, paths, params, cfg, batches, settings, micro)
    chk.finish()


if __name__ == "__main__":
    main()
