"""or1's losses, advantages and KL terms against verl's own code (and TRL's GRPO loss).

usage: peer_loss.py OR1 ALGO_DRIVER TOKENIZER   (run by bench/peer_loss.sh with the peers' venv;
       TOKENIZER: any tokenizer folder, which TRL's trainer needs to exist)

The oracle of each `or1 grad` case is Hugging Face transformers' Qwen2 in float64 (the model
people train) feeding verl's registered policy-loss function and `agg_loss`, combined as
verl's actor does (pg_loss - entropy_coeff * agg_loss(entropy)), differentiated by autograd:
or1's loss and every parameter gradient must match. The cases are those of
tests/model/test_variants.py, so every loss mode and aggregation of docs/algorithms.md is
covered, with the rollout corrections (ROLLOUT); the conventions that differ on purpose are
mapped in verl_mode and rollout_weights and named in NOTES. Advantages (grpo, drgrpo, rloo,
reinforce++-baseline, opo) and the KL estimators go through or1's algo driver and verl's functions on
the cases of tests/rl/test_algo.py. TRL: GRPOTrainer._compute_loss of a real trainer around the
same model, for each loss_type with an or1 counterpart (TRL_CASES, conventions in TRL_NOTES).
"""
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..", "tests", "model"),
                os.path.join(HERE, "..", "tests", "rl")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402
import verl.utils.torch_functional as verl_F  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo import rollout_corr_helper as rollout_corr  # noqa: E402
from verl.workers.config import ActorConfig, PolicyLossConfig  # noqa: E402

from or1test import files, ref  # noqa: E402
from or1test.check import Checker  # noqa: E402
import test_algo  # noqa: E402
from test_grad import STAT_TOL, check_grads  # noqa: E402
from test_variants import BASE, CASES, LENGTHS, run_grad  # noqa: E402

torch.set_default_dtype(torch.float64)

# Conventions where or1 and verl differ on purpose, each a mapping applied below.
NOTES = {
    "ppo": "verl's `vanilla` always applies the dual clip (clip_ratio_c 3); or1's `ppo` has none: "
           "compared with clip_ratio_c = 1e30",
    "gspo": "or1 aggregates GSPO's pg term seq-mean-token-mean whatever loss.agg says (the paper); "
            "verl follows loss_agg_mode: compared with verl's pg term at seq-mean-token-mean",
    "clip-cov": "verl draws I_clip with torch.randperm, or1 with its own seeded draw: compared where "
                "every candidate is drawn; verl's pg_clipfrac is or1's cov_selected_frac",
    "mis": "verl's rejection (rollout_rs token_k1 / seq_mean_k1) bounds log(pi_rollout / pi_old), the "
           "reverse of or1's r = pi_old / pi_rollout, and takes the rejected token out of the normaliser "
           "as well; or1 keeps it in T: compared with bounds 1/high_1/low, the mask as the weight",
    "gmpo": "verl's geo_mean takes the mean over sequences whatever loss_agg_mode says (as or1 does), "
            "divides by L_i + 1e-8 where or1 divides by L_i, and counts as clipped every token whose log-ratio "
            "its clamp moves; or1 counts those whose clipped side wins (its clip_frac not compared)",
    "top_entropy": "the 80/20 rule has no verl key (the paper's patch): not compared",
}


def verl_mode(settings):
    """verl's loss_mode and ActorConfig settings for an or1 grad case (see NOTES)."""
    mode = settings.get("mode", "ppo")
    low, high = settings.get("clip_low", 0.2), settings.get("clip_high", 0.2)
    cfg = dict(clip_ratio_low=low, clip_ratio_high=high, clip_ratio_c=1e30)
    pl = {}
    if mode == "dual-clip":
        cfg["clip_ratio_c"] = settings.get("clip_c", 3.0)
    elif mode == "cispo":
        cfg.update(clip_ratio_low=settings.get("cispo_low", 10.0), clip_ratio_high=settings.get("cispo_high", 0.2))
    elif mode == "gspo":
        cfg.update(clip_ratio_low=settings.get("gspo_low", 3e-4), clip_ratio_high=settings.get("gspo_high", 4e-4))
    elif mode == "clip-cov":
        pl.update(clip_cov_ratio=settings.get("clip_cov_ratio", 2e-4), clip_cov_lb=settings.get("clip_cov_lb", 1.0),
                  clip_cov_ub=settings.get("clip_cov_ub", 5.0))
    elif mode == "kl-cov":
        pl.update(kl_cov_ratio=settings.get("kl_cov_ratio", 2e-3), ppo_kl_coef=settings.get("ppo_kl_coef", 1.0))
    name = {"ppo": "vanilla", "dual-clip": "vanilla", "clip-cov": "clip_cov", "kl-cov": "kl_cov",
            "gmpo": "geo_mean"}.get(mode, mode)
    return name, cfg, pl


def actor_config(settings):
    """A verl ActorConfig holding the case's loss settings (one process: dp_size 1)."""
    name, cfg, pl = verl_mode(settings)
    c = ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1,
                    loss_agg_mode=settings.get("agg", "token-mean"), entropy_coeff=settings.get("ent_coef", 0.0),
                    policy_loss=PolicyLossConfig(loss_mode=name, **pl), **cfg)
    scale = settings.get("agg_scale", 0)
    c.global_batch_info["loss_scale_factor"] = scale if scale else None
    return c


def padded(rows, width):
    """Rows of unequal length as one (B, width) tensor padded with zeros, keeping autograd."""
    return torch.stack([torch.nn.functional.pad(r, (0, width - r.numel())) for r in rows])


def hf_forward(model, batch, temperature):
    """log-probs, entropies (verl_F, logits divided by the temperature as verl's actor does) and
    the response mask, each (B, longest response)."""
    lps, ents = [], []
    for row in batch:
        ids = row["prompt_ids"] + row["response_ids"]
        logits = model(input_ids=torch.tensor([ids])).logits[0]
        logits = logits[len(row["prompt_ids"]) - 1:len(ids) - 1] / temperature
        labels = torch.tensor(row["response_ids"])
        lps.append(verl_F.logprobs_from_logits(logits, labels))
        ents.append(verl_F.entropy_from_logits(logits))
    width = max(r.numel() for r in lps)
    mask = padded([torch.ones(r.numel()) for r in lps], width).bool()
    return padded(lps, width), padded(ents, width), mask


def rollout_weights(batch, old, mask, settings):
    """verl's rollout correction of the batch (None without one): TIS weights from
    compute_rollout_correction_weights, MIS masks from compute_rollout_rejection_mask (NOTES)."""
    mode = settings.get("rollout_is", "none")
    if mode == "none":
        return None
    log_ratio = old - padded([torch.tensor(r["rollout_logprobs"]) for r in batch], old.shape[1])
    if mode == "tis":
        w, _ = rollout_corr.compute_rollout_correction_weights(log_ratio, mask, "token", settings["rollout_is_high"])
        return w
    bounds = f"{1 / settings['rollout_is_high']!r}_{1 / settings['rollout_is_low']!r}"
    keep, _ = rollout_corr.compute_rollout_rejection_mask(
        log_ratio, mask, "token_k1" if mode == "mis" else "seq_mean_k1", bounds)
    return keep.to(old.dtype)


def verl_loss(model, batch, settings):
    """verl's actor loss for the batch: (loss, pg_loss, entropy token mean, pg metrics, grads)."""
    model.zero_grad()
    config = actor_config(settings)
    logp, ent, mask = hf_forward(model, batch, settings.get("temperature", 1.0))
    old = padded([torch.tensor(r["old_logprobs"]) for r in batch], logp.shape[1])
    adv = mask * torch.tensor([[float(r["advantage"])] for r in batch])
    weights = rollout_weights(batch, old, mask, settings)
    fn = core_algos.get_policy_loss_fn(config.policy_loss.loss_mode)
    pg_agg = "seq-mean-token-mean" if settings.get("mode") in ("gspo", "gmpo") else config.loss_agg_mode
    pg_loss, metrics = fn(old_log_prob=old, log_prob=logp, advantages=adv, response_mask=mask,
                          loss_agg_mode=pg_agg, config=config, rollout_is_weights=weights)
    ent_loss = core_algos.agg_loss(loss_mat=ent, loss_mask=mask, loss_agg_mode=config.loss_agg_mode,
                                   **config.global_batch_info)
    loss = pg_loss - config.entropy_coeff * ent_loss
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    return float(loss.detach()), float(pg_loss.detach()), float(verl_F.masked_mean(ent, mask).detach()), metrics, grads


def compared(settings):
    """Whether a case of test_variants has a verl counterpart (NOTES): not the 80/20 rule, not a
    Clip-Cov draw of some candidates only."""
    return settings.get("top_entropy", 1.0) == 1.0 and settings.get("mode") != "clip-cov"


# Clip-Cov with every candidate drawn (a share of 1), so verl's random draw and or1's agree.
CLIP_COV_ALL = [dict(mode="clip-cov", clip_cov_ratio=1.0, clip_cov_lb=0.3),
                dict(mode="clip-cov", clip_cov_ratio=1.0, clip_cov_lb=0.2, clip_cov_ub=3.0, agg="seq-mean-token-sum")]


# The rollout correction on a batch that carries the sampler's log-probs (ratios on both sides
# of every bound: ref.make_batch with_rollout).
ROLLOUT = [dict(rollout_is="tis", rollout_is_high=2.0), dict(rollout_is="tis", rollout_is_high=1.5, agg="seq-mean-token-mean"),
           dict(rollout_is="mis", rollout_is_low=0.5, rollout_is_high=2.0),
           dict(rollout_is="mis", rollout_is_low=0.7, rollout_is_high=1.5, mode="cispo"),
           dict(rollout_is="mis-geo", rollout_is_low=0.7, rollout_is_high=1.5)]


def loss_cases(chk, or1, tmp):
    """Every comparable loss case of test_variants, CLIP_COV_ALL and ROLLOUT; returns the count."""
    model_dir = os.path.join(tmp, "m")
    cfg, params = ref.new_checkpoint(model_dir, seed=4, arch="qwen2", tied=False)
    hf = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float64, attn_implementation="eager")
    n = 0
    for with_rollout, cases in ((False, [c[0] for c in CASES if compared(c[0])] + CLIP_COV_ALL), (True, ROLLOUT)):
        batch = ref.make_batch(params, cfg, seed=6, lengths=LENGTHS, temperature=BASE["temperature"],
                               with_rollout=with_rollout)
        bpath = os.path.join(tmp, "b.jsonl")
        files.write_jsonl(bpath, batch)
        for settings in cases:
            n += loss_case(chk, or1, tmp, model_dir, bpath, hf, batch, settings)
    return n


def loss_case(chk, or1, tmp, model_dir, bpath, hf, batch, settings):
    """One or1 grad run against verl's loss: its loss, statistics and every gradient."""
    kw = dict(BASE, **settings)
    what = f"verl {settings}"
    got = run_grad(chk, or1, tmp, model_dir, bpath, kw, what)
    if not got:
        return 0
    stats = got[0]
    loss, pg_loss, ent, metrics, want = verl_loss(hf, batch, kw)
    chk.close(f"{what}: loss", stats["loss"], loss, STAT_TOL * max(1.0, abs(loss)))
    chk.close(f"{what}: entropy", stats["entropy"], ent, STAT_TOL * max(1.0, abs(ent)))
    if kw.get("agg", "token-mean") == "token-mean" and kw.get("mode") not in ("gspo", "gmpo"):
        chk.close(f"{what}: pg_loss", stats["pg_loss"], pg_loss, STAT_TOL * max(1.0, abs(pg_loss)))
    mode = kw.get("mode", "ppo")
    if mode in ("ppo", "dual-clip", "cispo", "gspo"):
        chk.close(f"{what}: clip_frac", stats["clip_frac"], metrics["actor/pg_clipfrac"], 1e-9)
    if mode == "clip-cov":
        chk.ok(stats["cov_selected_frac"] > 0, f"{what}: no token drawn, nothing compared")
        chk.close(f"{what}: cov_selected_frac", stats["cov_selected_frac"], metrics["actor/pg_clipfrac"], 1e-9)
    if kw.get("rollout_is", "none") != "none":
        chk.ok(0 < stats["is_masked_frac"] < 1 or kw["rollout_is"] == "tis", f"{what}: nothing or all masked")
    check_grads(chk, what, os.path.join(tmp, "g.safetensors"), want)
    return 1


# (or1 grad settings, TRL GRPOConfig settings) with the same loss; the entropy bonus only where or1
# aggregates it as TRL does (a token mean), see TRL_NOTES.
TRL_CASES = [
    (dict(agg="token-mean"), dict(loss_type="bnpo")),
    (dict(agg="token-mean"), dict(loss_type="dapo")),
    (dict(agg="seq-mean-token-mean", ent_coef=0.0), dict(loss_type="grpo")),
    (dict(agg="seq-mean-token-sum-norm", agg_scale=16, ent_coef=0.0), dict(loss_type="dr_grpo", max_completion_length=16)),
    (dict(mode="dual-clip", clip_c=1.5), dict(loss_type="bnpo", delta=1.5)),
    (dict(mode="cispo", cispo_high=0.28), dict(loss_type="cispo", epsilon_high=1.28)),
    (dict(mode="gspo", gspo_low=0.05, gspo_high=0.05, ent_coef=0.0),
     dict(loss_type="grpo", importance_sampling_level="sequence", epsilon=0.05, epsilon_high=0.05)),
]
# Prompts of one length: a left-padded prompt row makes transformers' attention NaN at the pad
# positions, which no loss reads but which reach every gradient.
TRL_LENGTHS = ((5, 9), (5, 4), (5, 6), (5, 11), (5, 3))
TRL_NOTES = {
    "entropy": "TRL's entropy bonus is a token mean whatever loss_type says; or1's follows loss.agg: "
               "compared with a bonus at token-mean only",
    "cispo": "TRL's CISPO caps the weight at epsilon_high itself (no lower bound); or1's at 1 + cispo_high",
    "dual-clip": "TRL's `delta` caps the ratio of both signs; for A < 0 that is or1's dual clip at c = delta",
    "gspo": "TRL's sequence-level importance sampling with loss_type grpo is GSPO (seq-mean-token-mean)",
    "top_entropy": "TRL's 80/20 threshold is torch.quantile's interpolation and masks the entropy bonus too: "
                   "not compared",
}


def trl_trainer(model, tok, settings, trl_kw, out_dir):
    """A real TRL GRPOTrainer around the float64 model with the case's loss settings."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    kw = dict(epsilon=settings.get("clip_low", 0.2), epsilon_high=settings.get("clip_high", 0.2))
    kw.update(trl_kw)
    args = GRPOConfig(output_dir=out_dir, per_device_train_batch_size=len(TRL_LENGTHS),
                      num_generations=len(TRL_LENGTHS), temperature=settings.get("temperature", 1.0), beta=0.0,
                      entropy_coef=settings.get("ent_coef", 0.0), report_to="none", use_cpu=True, bf16=False,
                      disable_tqdm=True, **kw)
    trainer = GRPOTrainer(model=model, reward_funcs=lambda completions, **_: [0.0] * len(completions), args=args,
                          train_dataset=Dataset.from_list([{"prompt": "x"}] * len(TRL_LENGTHS)), processing_class=tok)
    trainer.current_gradient_accumulation_steps = 1
    return trainer


def trl_inputs(batch):
    """The batch as GRPOTrainer's _compute_loss reads it: left-padded prompts, right-padded
    completions, one advantage per row, the old log-probs."""
    p_len, c_len = max(len(r["prompt_ids"]) for r in batch), max(len(r["response_ids"]) for r in batch)
    pid, pm, cid, cm, old = [], [], [], [], []
    for r in batch:
        n_p, n_c = len(r["prompt_ids"]), len(r["response_ids"])
        pid.append([0] * (p_len - n_p) + r["prompt_ids"])
        pm.append([0] * (p_len - n_p) + [1] * n_p)
        cid.append(r["response_ids"] + [0] * (c_len - n_c))
        cm.append([1] * n_c + [0] * (c_len - n_c))
        old.append(r["old_logprobs"] + [0.0] * (c_len - n_c))
    t = torch.tensor
    return {"prompt_ids": t(pid), "prompt_mask": t(pm), "completion_ids": t(cid), "completion_mask": t(cm),
            "advantages": t([float(r["advantage"]) for r in batch]), "old_per_token_logps": t(old),
            "num_items_in_batch": t(float(sum(cm_i for row in cm for cm_i in row)))}


def trl_cases(chk, or1, tmp, model_dir, tok_dir):
    """or1 grad against TRL's GRPO loss (GRPOTrainer._compute_loss) for each of TRL_CASES."""
    from transformers import AutoTokenizer
    cfg, params = ref.load_checkpoint(model_dir)
    batch = ref.make_batch(params, cfg, seed=6, lengths=TRL_LENGTHS, temperature=BASE["temperature"])
    bpath = os.path.join(tmp, "b.jsonl")
    files.write_jsonl(bpath, batch)
    tok = AutoTokenizer.from_pretrained(tok_dir)
    n = 0
    for settings, trl_kw in TRL_CASES:
        kw = dict(BASE, **settings)
        what = f"TRL {trl_kw} / or1 {settings}"
        got = run_grad(chk, or1, tmp, model_dir, bpath, kw, what)
        if not got:
            continue
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float64, attn_implementation="eager")
        trainer = trl_trainer(model, tok, kw, trl_kw, os.path.join(tmp, "trl"))
        trainer.model.train()
        loss = trainer._compute_loss(trainer.model, trl_inputs(batch))
        loss.backward()
        want = {name: p.grad.detach().clone() for name, p in trainer.model.named_parameters()}
        value = float(loss.detach())
        chk.close(f"{what}: loss", got[0]["loss"], value, STAT_TOL * max(1.0, abs(value)))
        check_grads(chk, what, os.path.join(tmp, "g.safetensors"), want)
        n += 1
    return n


def token_rewards(scores, lens):
    """verl's token_level_rewards: each score on its response's last token."""
    width = max(lens)
    r, m = torch.zeros(len(scores), width), torch.zeros(len(scores), width)
    for i, (s, n) in enumerate(zip(scores, lens)):
        r[i, n - 1] = test_algo.f32(s)
        m[i, :n] = 1
    return r, m


def verl_advantages(c):
    """verl's advantages for an outcome case, restricted to the used samples (0 elsewhere)."""
    est = c.get("estimator", "grpo")
    rows = [i for i in range(len(c["scores"])) if c.get("use") is None or c["use"][i]]
    if not rows:
        return [0.0] * len(c["scores"])
    lens = [c["len"][i] if "len" in c else 1 for i in rows]
    rewards, mask = token_rewards([c["scores"][i] for i in rows], lens)
    index = np.array([c["group"][i] for i in rows], dtype=object)
    eps = c.get("eps", 1e-6)
    if est in ("grpo", "drgrpo"):
        adv, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, index, eps,
                                                           est == "grpo" and c.get("norm_by_std", True))
    elif est == "rloo":
        adv, _ = core_algos.compute_rloo_outcome_advantage(rewards, mask, index, eps)
    elif est == "opo":
        adv, _ = core_algos.compute_opo_outcome_advantage(rewards, mask, index, eps)
    else:
        adv, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(rewards, mask, index, eps)
    out = [0.0] * len(c["scores"])
    for r, i in enumerate(rows):
        out[i] = float(adv[r, 0])
    return out


def verl_kl(kind, logp, ref_lp):
    """verl's kl_penalty value and its autograd derivative in logp."""
    lp = torch.tensor(logp, requires_grad=True)
    v = core_algos.kl_penalty(lp, torch.tensor(ref_lp), kind)
    v.backward()
    return float(v.detach()), float(lp.grad)


def algo_cases(chk, driver, tmp):
    """or1's advantage estimators and KL terms (test_algo's cases) against verl's functions."""
    cases = [c for c in test_algo.build_cases(random.Random(20250522))
             if (c["fn"] == "adv") or (c["fn"] == "outcome" and c["estimator"] != "grpo-batch-std") or c["fn"] == "kl"]
    path = os.path.join(tmp, "algo.jsonl")
    files.write_jsonl(path, cases)
    p = subprocess.run([driver, path], capture_output=True, text=True)
    if not chk.ok(p.returncode == 0, f"algo driver: exit {p.returncode}: {p.stderr}"):
        return 0
    for i, (c, line) in enumerate(zip(cases, p.stdout.splitlines())):
        r = json.loads(line)
        if c["fn"] == "kl":
            v, g = verl_kl(c["kind"], c["logp"], c["ref"])
            chk.close(f"kl case {i} {c['kind']}: value", r["value"], v, 1e-12 * max(1.0, abs(v)))
            chk.close(f"kl case {i} {c['kind']}: grad", r["grad"], g, 1e-12 * max(1.0, abs(g)))
            continue
        want = verl_advantages(c)
        for k, (a, b) in enumerate(zip(r["adv"], want)):
            chk.close(f"adv case {i} ({c.get('estimator', 'grpo')}) sample {k}", a, b, 1e-5 * max(1.0, abs(b)))
    return len(cases)


def main():
    or1, driver, tok_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    chk = Checker("peer_loss")
    with tempfile.TemporaryDirectory() as tmp:
        n_loss = loss_cases(chk, or1, tmp)
        n_algo = algo_cases(chk, driver, tmp)
        n_trl = trl_cases(chk, or1, tmp, os.path.join(tmp, "m"), tok_dir)
    for k, v in NOTES.items():
        print(f"convention (verl) {k}: {v}")
    for k, v in TRL_NOTES.items():
        print(f"convention (TRL) {k}: {v}")
    print(f"TRL GRPOTrainer._compute_loss: {n_trl} loss cases (loss, every gradient)")
    print(f"verl {core_algos.__name__}: {n_loss} loss cases (loss, statistics, every gradient), "
          f"{n_algo} advantage and KL cases")
    chk.finish()


if __name__ == "__main__":
    main()
