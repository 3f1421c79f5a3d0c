"""Independent float64 PyTorch reference for the or1 model core.

Parts, each readable on its own:
  * safetensors as torch tensors (the format itself is or1test.safetensors; BF16 through
    torch.bfloat16 views),
  * checkpoints: random Hugging Face style Qwen2/Llama checkpoints with tiny shapes,
  * the model: the HF Qwen2/Llama decoder and the Skywork-OR1 loss (eq. 3.1) in float64,
  * AdamW: torch.optim.AdamW driven with given gradients.
"""
import json
import math
import os

import numpy as np
import torch

from or1test import safetensors as st

torch.set_default_dtype(torch.float64)

# ---------------------------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------------------------

def bf16_bits_to_f32(bits):
    """Widens raw bfloat16 bits (uint16 numpy array) to a float32 torch tensor."""
    t = torch.from_numpy(bits.astype(np.uint16).view(np.int16).copy())
    return t.view(torch.bfloat16).to(torch.float32)


def f32_to_bf16_bits(x):
    """Rounds a tensor to bfloat16 (nearest even, torch's rule) and returns the raw uint16 bits."""
    t = torch.as_tensor(x).to(torch.float32).to(torch.bfloat16)
    return t.view(torch.int16).numpy().view(np.uint16)


def to_torch(raw, dtype):
    """A stored array as a torch tensor: floats widened to float64 (BF16 bits decoded), ints to int64."""
    if dtype == "BF16":
        return bf16_bits_to_f32(raw).to(torch.float64)
    if dtype in ("I64", "I32", "U8"):
        return torch.from_numpy(raw.astype(np.int64))
    return torch.from_numpy(raw.astype(np.float64))


def read_safetensors(path):
    """Reads a safetensors file (checked, see st.read_arrays); returns
    ({name: float64 or int64 tensor}, {name: dtype}, metadata)."""
    arrays, dtypes, meta = st.read_arrays(path)
    return {name: to_torch(a, dtypes[name]) for name, a in arrays.items()}, dtypes, meta


def encode_tensor(x, dtype):
    """Converts a tensor to the little-endian bytes of a safetensors dtype."""
    x = torch.as_tensor(x).detach()
    if dtype == "BF16":
        return f32_to_bf16_bits(x).astype("<u2").tobytes()
    np_dtype = st.DTYPES[dtype][0]
    return x.to(torch.float64).numpy().astype(np.dtype(np_dtype).newbyteorder("<")).tobytes()


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    """Writes {name: tensor} to path, every tensor stored as dtype (F32, F16 or BF16)."""
    header, chunks, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, x in tensors.items():
        raw = encode_tensor(x, dtype)
        header[name] = {"dtype": dtype, "shape": list(torch.as_tensor(x).shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    st.write_raw(path, header, b"".join(chunks))


# ---------------------------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------------------------

def make_config(arch="qwen2", hidden=32, inter=64, layers=2, heads=4, kv_heads=2, vocab=97,
                head_dim=None, tied=False, theta=10000.0, eps=1e-6, attention_bias=None):
    """A config.json dict in Hugging Face form for a tiny Qwen2, Qwen3 or Llama model."""
    classes = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM"}
    cfg = {"model_type": arch, "architectures": [classes[arch]],
           "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
           "num_attention_heads": heads, "num_key_value_heads": kv_heads, "vocab_size": vocab,
           "rms_norm_eps": eps, "rope_theta": theta, "tie_word_embeddings": tied,
           "max_position_embeddings": 4096, "hidden_act": "silu", "torch_dtype": "float32"}
    if head_dim is not None:
        cfg["head_dim"] = head_dim
    if attention_bias is not None:
        cfg["attention_bias"] = attention_bias
    return cfg


def head_dim_of(cfg):
    """Per-head width: head_dim when given, otherwise hidden / heads."""
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def has_qkv_bias(cfg):
    """Qwen2 always has q/k/v biases; Llama and Qwen3 only with attention_bias (then o_proj too)."""
    return cfg["model_type"] == "qwen2" or bool(cfg.get("attention_bias", False))


def has_o_bias(cfg):
    """Llama and Qwen3 with attention_bias put a bias on o_proj too (LlamaAttention, Qwen3Attention)."""
    return cfg["model_type"] in ("llama", "qwen3") and bool(cfg.get("attention_bias", False))


def has_qk_norm(cfg):
    """Qwen3Attention normalises each query and key head (q_norm, k_norm: RMSNorm over head_dim)."""
    return cfg["model_type"] == "qwen3"


def param_shapes(cfg):
    """{HF name: shape} of every parameter, in checkpoint order."""
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = head_dim_of(cfg)
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": [V, H]}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = [H]
        for name, rows in (("q", q), ("k", kv), ("v", kv)):
            shapes[p + f"self_attn.{name}_proj.weight"] = [rows, H]
            if has_qkv_bias(cfg):
                shapes[p + f"self_attn.{name}_proj.bias"] = [rows]
        if has_qk_norm(cfg):
            shapes[p + "self_attn.q_norm.weight"] = [hd]
            shapes[p + "self_attn.k_norm.weight"] = [hd]
        shapes[p + "self_attn.o_proj.weight"] = [H, q]
        if has_o_bias(cfg):
            shapes[p + "self_attn.o_proj.bias"] = [H]
        shapes[p + "post_attention_layernorm.weight"] = [H]
        shapes[p + "mlp.gate_proj.weight"] = [I, H]
        shapes[p + "mlp.up_proj.weight"] = [I, H]
        shapes[p + "mlp.down_proj.weight"] = [H, I]
    shapes["model.norm.weight"] = [H]
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = [V, H]
    return shapes


def random_params(cfg, seed=0):
    """Random float32 weights scaled so that logits spread over a few nats (not near-uniform)."""
    g = torch.Generator().manual_seed(seed)
    H = cfg["hidden_size"]
    params = {}
    for name, shape in param_shapes(cfg).items():
        if name.endswith("norm.weight"):
            t = 1.0 + 0.1 * torch.randn(shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(shape, generator=g)
        elif name == "model.embed_tokens.weight":
            t = torch.randn(shape, generator=g) * (2.0 / math.sqrt(H) if cfg["tie_word_embeddings"]
                                                   else 1.0)
        elif name == "lm_head.weight":
            t = torch.randn(shape, generator=g) * (2.0 / math.sqrt(H))
        else:
            t = torch.randn(shape, generator=g) / math.sqrt(shape[1])
        params[name] = t.to(torch.float32)
    return params


def shard_file_name(k, n):
    """Hugging Face shard naming: model-0000k-of-0000n.safetensors."""
    return f"model-{k:05d}-of-{n:05d}.safetensors"


def save_checkpoint(path, cfg, params, dtype="F32", shards=1):
    """Writes config.json and the weights (one file, or `shards` files plus the index)."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    names = list(params)
    if shards == 1:
        write_safetensors(os.path.join(path, "model.safetensors"), params, dtype,
                          {"format": "pt"})
        return
    weight_map = {}
    for k in range(shards):
        part = names[k * len(names) // shards:(k + 1) * len(names) // shards]
        fname = shard_file_name(k + 1, shards)
        write_safetensors(os.path.join(path, fname), {n: params[n] for n in part}, dtype,
                          {"format": "pt"})
        weight_map.update({n: fname for n in part})
    total = sum(params[n].numel() * (4 if dtype == "F32" else 2) for n in names)
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)


def load_checkpoint(path):
    """Reads a checkpoint directory back: (config dict, {name: float64 tensor})."""
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    index = os.path.join(path, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    params = {}
    for fname in files:
        params.update(read_safetensors(os.path.join(path, fname))[0])
    return cfg, params


def new_checkpoint(path, seed=0, dtype="F32", shards=1, **cfg_kw):
    """Generates, saves and re-reads a random checkpoint: (cfg, float64 params as stored)."""
    cfg = make_config(**cfg_kw)
    save_checkpoint(path, cfg, random_params(cfg, seed), dtype, shards)
    return load_checkpoint(path)


# ---------------------------------------------------------------------------------------------
# the model (float64)
# ---------------------------------------------------------------------------------------------

def rms_norm(x, w, eps):
    """RMSNorm: x * rsqrt(mean(x^2) + eps) * w over the last axis."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_params(cfg):
    """(theta, scaling dict or None) from config.json: rope_theta and rope_scaling (transformers 4)
    or rope_parameters (transformers 5, theta inside); a "default" type means no scaling."""
    rp = cfg.get("rope_parameters") or {}
    theta = cfg.get("rope_theta", rp.get("rope_theta", 10000.0))
    scaling = cfg.get("rope_scaling") or (rp if rp.get("rope_type", rp.get("type")) not in (None, "default") else None)
    return theta, scaling


def rope_inv_freq(cfg, hd, dtype=torch.float64):
    """Inverse frequencies as transformers' rope utilities compute them: theta^(-2i/hd), then the
    scaling's rule (linear: / factor; llama3: by wavelength against the original context; yarn:
    / factor by yarn_ramp's share)."""
    theta, s = rope_params(cfg)
    inv = theta ** (-torch.arange(0, hd, 2, dtype=dtype) / hd)
    kind = s and s.get("rope_type", s.get("type"))
    if kind == "linear":
        return inv / s["factor"]
    if kind == "llama3":
        factor, lo, hi = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
        old = s.get("original_max_position_embeddings", cfg["max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        return torch.where(medium, smoothed, scaled)
    if kind == "yarn":
        ramp = yarn_ramp(cfg, s, hd, theta, dtype)
        return inv * (1 - ramp) + inv / s["factor"] * ramp
    assert kind is None, f"the reference has no {kind} RoPE"
    return inv


def yarn_ramp(cfg, s, hd, theta, dtype):
    """YaRN's share of interpolation per pair, as transformers' _compute_yarn_parameters (4.56 on,
    5.x) computes it: the dimensions where the pretraining context (original_max_position_embeddings,
    else max_position_embeddings) turns a pair beta_fast (null/0: 32) and beta_slow (null/0: 1)
    times, floored and ceiled unless truncate is false, clamped to [0, hd - 1]; a linear ramp from
    0 to 1 between them (min == max: max + 0.001)."""
    orig = s.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
    dims = [hd * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(theta))
            for rot in (s.get("beta_fast") or 32, s.get("beta_slow") or 1)]
    lo, hi = (math.floor(dims[0]), math.ceil(dims[1])) if s.get("truncate", True) else dims
    lo, hi = max(lo, 0), min(hi, hd - 1)
    hi = hi + 0.001 if lo == hi else hi
    return ((torch.arange(hd // 2, dtype=dtype) - lo) / (hi - lo)).clamp(0, 1)


def rope_attention_scaling(cfg):
    """What transformers multiplies cos and sin by (attention_scaling): for yarn, attention_factor
    when given, else mscale(factor, mscale) / mscale(factor, mscale_all_dim) when both are set
    (non-zero), else mscale(factor, 1), with mscale(f, m) = 0.1 m ln f + 1 (1 for f <= 1); 1 for
    every other scaling."""
    s = rope_params(cfg)[1]
    if not s or s.get("rope_type", s.get("type")) != "yarn":
        return 1.0
    if s.get("attention_factor") is not None:
        return s["attention_factor"]
    def mscale(m):
        return 0.1 * m * math.log(s["factor"]) + 1.0 if s["factor"] > 1 else 1.0
    if s.get("mscale") and s.get("mscale_all_dim"):
        return mscale(s["mscale"]) / mscale(s["mscale_all_dim"])
    return mscale(1.0)


def rope(x, cfg):
    """Rotary embedding, rotate_half form, positions 0..n-1; x is [n, heads, hd]; cos and sin
    times the scaling's attention factor, as transformers' rotary embeddings apply it."""
    n, _, hd = x.shape
    inv_freq = rope_inv_freq(cfg, hd, x.dtype)
    angles = torch.arange(n, dtype=x.dtype)[:, None] * inv_freq[None, :]
    m = rope_attention_scaling(cfg)
    cos = m * torch.cat([angles.cos(), angles.cos()], -1)[:, None, :]
    sin = m * torch.cat([angles.sin(), angles.sin()], -1)[:, None, :]
    x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


MATMUL = {"bf16": False}  # set_matmul_precision switches every matmul of the model to bf16


def set_matmul_precision(precision):
    """'bf16' (or1's `precision: bf16`): each matmul of the model (projections, MLP, head) takes its
    input and weight rounded to bfloat16 (nearest even), their products summed in float64; the
    input gradient is taken against the rounded weight, the weight gradient against the unrounded
    input; the embedding rows are read from the rounded table, their gradient passing straight
    through. 'fp32': none."""
    MATMUL["bf16"] = precision == "bf16"


def bf16_round(x):
    """x rounded to bfloat16 and widened back to its dtype (float64 is rounded to float32 first)."""
    return x.to(torch.float32).to(torch.bfloat16).to(x.dtype)


def matmul_t(x, w):
    """x @ w^T, in the precision set_matmul_precision chose: in bf16 the value r(x) r(w)^T, with
    d/dx through r(w) and d/dw through x (r: rounding to bf16)."""
    if not MATMUL["bf16"]:
        return x @ w.T
    wr = bf16_round(w.detach())
    to_x, to_w = x @ wr.T, x.detach() @ w.T
    value = bf16_round(x.detach()) @ wr.T
    return to_x + to_w + (value - to_x.detach() - to_w.detach())


def embed_rows(table, ids):
    """Rows ids of the embedding table (of its bf16 rounding in bf16, gradient straight through)."""
    if MATMUL["bf16"]:
        table = table + (bf16_round(table.detach()) - table.detach())
    return table[torch.as_tensor(ids, dtype=torch.long)]


def linear(x, p, name):
    """x @ W^T (+ b when the checkpoint has that bias)."""
    y = matmul_t(x, p[name + ".weight"])
    return y + p[name + ".bias"] if name + ".bias" in p else y


def attention(x, p, pre, cfg):
    """Causal grouped-query self-attention of one sequence x [n, H]."""
    n = x.shape[0]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim_of(cfg)
    q, k = linear(x, p, pre + "q_proj").view(n, nh, hd), linear(x, p, pre + "k_proj").view(n, nkv, hd)
    if has_qk_norm(cfg):  # Qwen3: each head through RMSNorm over head_dim, before RoPE
        q = rms_norm(q, p[pre + "q_norm.weight"], cfg["rms_norm_eps"])
        k = rms_norm(k, p[pre + "k_norm.weight"], cfg["rms_norm_eps"])
    q, k = rope(q, cfg), rope(k, cfg)
    v = linear(x, p, pre + "v_proj").view(n, nkv, hd)
    k = k.repeat_interleave(nh // nkv, dim=1)  # query head h reads kv head h // (nh / nkv)
    v = v.repeat_interleave(nh // nkv, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    probs = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    out = torch.einsum("hqk,khd->qhd", probs, v).reshape(n, nh * hd)
    return linear(out, p, pre + "o_proj")


def mlp(x, p, pre):
    """SwiGLU: down(silu(gate(x)) * up(x))."""
    return linear(torch.nn.functional.silu(linear(x, p, pre + "gate_proj")) *
                  linear(x, p, pre + "up_proj"), p, pre + "down_proj")


def forward_logits(p, cfg, ids):
    """Logits [n, V] of one sequence (positions start at 0)."""
    eps = cfg["rms_norm_eps"]
    h = embed_rows(p["model.embed_tokens.weight"], ids)
    for i in range(cfg["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        h = h + attention(rms_norm(h, p[pre + "input_layernorm.weight"], eps), p,
                          pre + "self_attn.", cfg)
        h = h + mlp(rms_norm(h, p[pre + "post_attention_layernorm.weight"], eps), p, pre + "mlp.")
    head = p.get("lm_head.weight", p["model.embed_tokens.weight"])
    return matmul_t(rms_norm(h, p["model.norm.weight"], eps), head)


def token_logprobs(logits, targets, temperature):
    """log softmax(logits/T)[target] and the softmax entropy (nats), row by row."""
    logp_all = torch.log_softmax(logits / temperature, -1)
    logp = logp_all.gather(-1, torch.as_tensor(targets, dtype=torch.long)[:, None])[:, 0]
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy


def sequence_logprobs(p, cfg, ids, temperature=1.0):
    """The `or1 logprobs` row of one sequence: n-1 log-probs of the next ids, and entropies."""
    logits = forward_logits(p, cfg, ids)[:-1]
    return token_logprobs(logits, ids[1:], temperature)


def ppo_clip_term(logp, old, adv, clip_low, clip_high):
    """Per-token max(-A*rho, -A*clip(rho, 1-eps_low, 1+eps_high)) and whether the clip won."""
    rho = torch.exp(logp - old)
    unclipped = -adv * rho
    clipped = -adv * rho.clamp(1 - clip_low, 1 + clip_high)
    wins = clipped > unclipped
    return torch.where(wins, clipped, unclipped), wins


def dual_clip_term(logp, old, adv, clip_low, clip_high, clip_c):
    """Dual-clip PPO (Ye et al. 2019, eq. 5): for A < 0, min(PPO term, -A * c)."""
    term, wins = ppo_clip_term(logp, old, adv, clip_low, clip_high)
    if adv < 0:
        term = torch.minimum(term, torch.full_like(term, -adv * clip_c))
    return term, wins


def cispo_term(logp, old, adv, eps_low, eps_high):
    """CISPO (MiniMax-M1 eq. 4): -sg(clip(rho, 1-eps_low, 1+eps_high)) * A * log pi; a token
    counts as clipped when the weight is not rho."""
    rho = torch.exp(logp - old).detach()
    weight = rho.clamp(1 - eps_low, 1 + eps_high)
    return -weight * adv * logp, weight != rho


def gspo_term(logp, old, adv, eps_low, eps_high):
    """GSPO (eq. 7-10): s_i = exp(mean_t log(pi/pi_old)), token form
    s_i,t = sg(s_i) * pi_t / sg(pi_t) (log clamped at 10), PPO-clipped with GSPO's epsilons."""
    log_s = (logp - old).mean().detach()
    s = torch.exp(torch.clamp(log_s + logp - logp.detach(), max=10.0))
    unclipped = -adv * s
    clipped = -adv * s.clamp(1 - eps_low, 1 + eps_high)
    return torch.maximum(unclipped, clipped), clipped > unclipped


def gmpo_term(logp, old, adv, clip_low, clip_high):
    """GMPO (arXiv 2507.20673): r_i = exp(mean_t c_t), c_t = sgn(A) min(sgn(A) l_t, sgn(A)
    clip(l_t, -clip_low, clip_high)) with l_t = log(pi/pi_old) (the clip in log space, on the
    side the advantage's sign makes binding); every token holds the sequence's term -A r_i, so
    seq-mean-token-mean aggregation gives the paper's mean over sequences. A token counts as
    clipped when c_t is not l_t."""
    lr = logp - old
    sgn = float((adv > 0) - (adv < 0))
    c = sgn * torch.minimum(sgn * lr, sgn * lr.clamp(-clip_low, clip_high))
    r = torch.exp(c.mean())
    return (-adv * r).expand_as(logp), (c != lr) & torch.full_like(lr, sgn != 0, dtype=torch.bool)


MASK64 = (1 << 64) - 1


def _mix64(z):
    """splitmix64's output mix (src/core/rng.c)."""
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK64
    return z ^ (z >> 31)


def rand_u64(seed, stream, counter):
    """or1_rand_u64: a value that depends only on (seed, stream, counter)."""
    k = _mix64((seed + 0x9e3779b97f4a7c15) & MASK64)
    k = _mix64(k ^ ((stream + 0x632be59bd9b4e019) & MASK64))
    return _mix64(k ^ ((counter * 0x9e3779b97f4a7c15 + 0x1d8e4e27c47d124f) & MASK64))


def covariances(logps, advs):
    """Cui et al. 2025's centred cross-product per token, (log pi - mean) (A - mean), the means
    over every response token of the batch (one tensor per row, detached)."""
    lp = torch.cat([x.detach() for x in logps])
    a = torch.cat([torch.full_like(x, adv) for x, adv in zip(logps, advs)])
    cov = (lp - lp.mean()) * (a - a.mean())
    return list(torch.split(cov, [x.numel() for x in logps]))


def clip_cov_drawn(covs, wins, ratio, lb, ub, seed, positions=None):
    """Clip-Cov's I_clip (verl compute_policy_loss_clip_cov over the whole batch): candidates
    have no PPO clip and lb < Cov < ub; max(1, int(ratio T)) of them are drawn, here the ones
    with the largest key or1_rand_u64(seed, row, token) (a uniform draw, reproducible); token
    is the position in the response (positions[row][j] for the j-th kept token, when given)."""
    tokens = sum(c.numel() for c in covs)
    cands = [(rand_u64(seed, i, positions[i][j] if positions else j), i, j)
             for i, (c, w) in enumerate(zip(covs, wins))
             for j in range(c.numel()) if not w[j] and lb < float(c[j]) < ub]
    want = max(int(ratio * tokens), 1)
    drawn = [torch.zeros(c.numel(), dtype=torch.bool) for c in covs]
    for _, i, j in sorted(cands, reverse=True)[:want]:
        drawn[i][j] = True
    return drawn, len(cands)


def kl_cov_selected(covs, ratio):
    """KL-Cov's I_KL (verl compute_policy_loss_kl_cov over the whole batch): the
    max(1, int(ratio T)) tokens of largest Cov."""
    cov = torch.cat(covs)
    k = max(1, int(cov.numel() * ratio))
    sel = torch.zeros(cov.numel(), dtype=torch.bool)
    sel[torch.topk(cov, k).indices] = True
    return list(torch.split(sel, [c.numel() for c in covs]))


def low_entropy_tokens(ents, rho):
    """The 80/20 rule (Wang et al. 2025): tokens below the batch's top-rho entropy threshold,
    tau = the ceil(rho T)-th largest entropy."""
    ent = torch.cat([e.detach() for e in ents])
    k = max(1, math.ceil(rho * ent.numel() - 1e-9))
    tau = torch.sort(ent, descending=True).values[k - 1]
    return list(torch.split(ent < tau, [e.numel() for e in ents]))


def pg_term(logp, old, adv, mode, kw):
    """The per-token policy-gradient term of a loss mode, and which tokens count as clipped."""
    if mode == "dual-clip":
        return dual_clip_term(logp, old, adv, kw["clip_low"], kw["clip_high"], kw["clip_c"])
    if mode == "cispo":
        return cispo_term(logp, old, adv, kw["cispo_low"], kw["cispo_high"])
    if mode == "gspo":
        return gspo_term(logp, old, adv, kw["gspo_low"], kw["gspo_high"])
    if mode == "gmpo":
        return gmpo_term(logp, old, adv, kw["clip_low"], kw["clip_high"])
    return ppo_clip_term(logp, old, adv, kw["clip_low"], kw["clip_high"])


def aggregate(per_seq, agg, scale):
    """verl's loss_agg_mode over a mini-batch of per-sequence token tensors: token-mean (all
    tokens / T), seq-mean-token-mean (mean over sequences of token means), seq-mean-token-sum
    (mean over sequences of token sums), seq-mean-token-sum-norm (all tokens / (N * scale));
    N counts the sequences with at least one token."""
    seqs = [t for t in per_seq if t.numel() > 0]
    if agg == "token-mean":
        return torch.cat(seqs).sum() / sum(t.numel() for t in seqs)
    if agg == "seq-mean-token-mean":
        return sum(t.mean() for t in seqs) / len(seqs)
    if agg == "seq-mean-token-sum":
        return sum(t.sum() for t in seqs) / len(seqs)
    if agg == "seq-mean-token-sum-norm":
        return torch.cat(seqs).sum() / (len(seqs) * scale)
    raise ValueError(agg)


def rollout_is_weight(old, rollout, mode, low, high):
    """verl's rollout correction: r = exp(old - rollout); TIS min(r, high), MIS 1 inside
    [low, high] and 0 outside, none 1; mis-geo: MIS on the row's geometric mean exp(mean log r),
    the same for all its tokens; decoupled: r itself, untruncated, low and high unused (decoupled
    PPO's w = pi_prox / pi_behav). Detached (a weight, not a path for gradients)."""
    r = torch.exp(old - rollout)
    if mode == "decoupled":
        return r
    if mode == "mis-geo":
        geo = torch.exp((old - rollout).mean())
        return torch.full_like(r, 1.0 if low <= float(geo) <= high else 0.0)
    if mode == "tis":
        return torch.clamp(r, max=high)
    if mode == "mis":
        return ((r >= low) & (r <= high)).to(r.dtype)
    return torch.ones_like(r)


def mismatch_stats(logp, rollout):
    """|logp - rollout| mean and max, and the k3 estimate exp(d) - 1 - d of KL(rollout||train)."""
    d = (logp.detach() - rollout)
    w = torch.exp(d)
    return {"mismatch_abs_mean": d.abs().mean().item(), "mismatch_abs_max": d.abs().max().item(),
            "mismatch_k3": (torch.expm1(d) - d).mean().item(),
            "is_ess": (w.sum() ** 2 / (w.numel() * (w * w).sum())).item()}


def nearest_rank(x, q):
    """The nearest-rank q-quantile: the ceil(q n)-th smallest value (at least the first)."""
    v = torch.sort(x.detach()).values
    k = min(max(1, math.ceil(q * v.numel() - 1e-9)), v.numel())
    return v[k - 1].item()


def offpolicy_dropped(adv, logp, behaviour, delta):
    """DeepSeek-V3.2's off-policy sequence mask: A < 0 and the mean of log(pi_old / pi_theta)
    over the row's tokens above delta, pi_old the sampling policy (`behaviour`: the row's
    rollout_logprobs, else its old_logprobs). None: off."""
    if delta is None or adv >= 0 or behaviour.numel() == 0:
        return False
    return float((behaviour - logp.detach()).mean()) > delta


def select_terms(terms, wins, logps, olds, advs, ents, mode, kw, positions=None):
    """Clip-Cov, KL-Cov and the 80/20 rule over the whole batch: the per-row terms and clip
    flags after them, and the per-row count of Clip-Cov / KL-Cov tokens and low-entropy ones."""
    n_sel = [torch.zeros(t.numel(), dtype=torch.bool) for t in terms]
    if mode in ("clip-cov", "kl-cov"):
        covs = covariances(logps, advs)
    if mode == "clip-cov":
        n_sel, _ = clip_cov_drawn(covs, wins, kw["clip_cov_ratio"], kw["clip_cov_lb"], kw["clip_cov_ub"], kw["seed"],
                                  positions)
        terms = [torch.where(d, torch.zeros_like(t), t) for d, t in zip(n_sel, terms)]
    if mode == "kl-cov":
        n_sel = kl_cov_selected(covs, kw["kl_cov_ratio"])
        terms = [-adv * torch.exp(lp - old) + kw["ppo_kl_coef"] * sel * (lp - old).abs()
                 for lp, old, adv, sel in zip(logps, olds, advs, n_sel)]
        wins = [torch.zeros_like(w) for w in wins]
    low = [torch.zeros(t.numel(), dtype=torch.bool) for t in terms]
    if kw["top_entropy"] < 1:
        low = low_entropy_tokens(ents, kw["top_entropy"])
        terms = [torch.where(m, torch.zeros_like(t), t) for m, t in zip(low, terms)]
        wins = [w & ~m for w, m in zip(wins, low)]
    return terms, wins, n_sel, low


# The sequence-level modes: their pg term is aggregated seq-mean-token-mean whatever `agg` says.
SEQUENCE_MODES = ("gspo", "gmpo")


def grpo_loss(p, cfg, batch, temperature=1.0, clip_low=0.2, clip_high=0.2, ent_coef=0.0, rollout_is="none",
              rollout_is_low=0.5, rollout_is_high=2.0, agg="token-mean", agg_scale=0, mode="ppo", clip_c=3.0,
              gspo_low=3e-4, gspo_high=4e-4, cispo_low=10.0, cispo_high=0.2, clip_cov_ratio=2e-4, clip_cov_lb=1.0,
              clip_cov_ub=5.0, kl_cov_ratio=2e-3, ppo_kl_coef=1.0, top_entropy=1.0, seed=0, offpolicy_delta=None):
    """Eq. 3.1 by default: token-mean over the whole batch of the clipped surrogate minus
    alpha * entropy, each token's surrogate weighted by the rollout correction when rows carry
    rollout_logprobs. `mode` picks the policy-gradient term and `agg` how the terms add up
    (GSPO's term always seq-mean-token-mean, the entropy always `agg`); agg_scale 0 is the
    longest response of the batch. A row's response_mask drops its 0 tokens before anything
    else: they stay in the forward pass as context but are absent from every term, mean and
    count, as if the response did not hold them.

    Returns the scalar loss tensor and the printed statistics (pg_loss, entropy, tokens,
    clip_frac, and with rollout log-probs the mismatch and the weights) as floats."""
    terms, ents, clips, weights, lps, rolls, logps, olds, advs, is_w = [], [], [], [], [], [], [], [], [], []
    behaviours, positions = [], []
    for row in batch:
        prompt, resp = row["prompt_ids"], row["response_ids"]
        ids = prompt + resp
        logits = forward_logits(p, cfg, ids)[len(prompt) - 1:len(ids) - 1]
        logp, ent = token_logprobs(logits, resp, temperature)
        keep = torch.as_tensor(row.get("response_mask", [1] * len(resp))) != 0
        logp, ent = logp[keep], ent[keep]
        positions.append(torch.nonzero(keep).flatten().tolist())
        old = (torch.as_tensor(row["old_logprobs"], dtype=logp.dtype)[keep]
               if "old_logprobs" in row else logp.detach())
        kw = dict(clip_low=clip_low, clip_high=clip_high, clip_c=clip_c, gspo_low=gspo_low, gspo_high=gspo_high,
                  cispo_low=cispo_low, cispo_high=cispo_high)
        term, wins = pg_term(logp, old, float(row["advantage"]), mode if mode not in ("clip-cov", "kl-cov") else "ppo", kw)
        w = torch.ones_like(logp)
        behaviours.append(old)
        if "rollout_logprobs" in row:
            rollout = torch.as_tensor(row["rollout_logprobs"], dtype=logp.dtype)[keep]
            behaviours[-1] = rollout
            w = rollout_is_weight(old, rollout, rollout_is, rollout_is_low, rollout_is_high)
            weights.append(w)
            lps.append(logp)
            rolls.append(rollout)
        is_w.append(w)
        terms.append(term)
        ents.append(ent)
        clips.append(wins)
        logps.append(logp)
        olds.append(old)
        advs.append(float(row["advantage"]))
    kw.update(clip_cov_ratio=clip_cov_ratio, clip_cov_lb=clip_cov_lb, clip_cov_ub=clip_cov_ub,
              kl_cov_ratio=kl_cov_ratio, ppo_kl_coef=ppo_kl_coef, top_entropy=top_entropy, seed=seed)
    terms, clips, n_sel, low = select_terms(terms, clips, logps, olds, advs, ents, mode, kw, positions)
    terms = [t * w for t, w in zip(terms, is_w)]
    dropped = [offpolicy_dropped(adv, lp, b, offpolicy_delta) for adv, lp, b in zip(advs, logps, behaviours)]
    terms = [torch.zeros_like(t) if d else t for t, d in zip(terms, dropped)]
    pg, ent, clip = torch.cat(terms), torch.cat(ents), torch.cat(clips)
    tokens = pg.numel()
    scale = agg_scale or max(t.numel() for t in terms)
    loss = (aggregate(terms, "seq-mean-token-mean" if mode in SEQUENCE_MODES else agg, scale) -
            ent_coef * aggregate(ents, agg, scale))
    stats = {"loss": loss.item(), "pg_loss": pg.mean().item(), "entropy": ent.mean().item(),
             "tokens": tokens, "clip_frac": clip.double().mean().item(),
             "cov_selected_frac": torch.cat(n_sel).double().mean().item(),
             "low_entropy_frac": torch.cat(low).double().mean().item(),
             "offpolicy_masked_frac": sum(t.numel() for t, d in zip(terms, dropped) if d) / tokens,
             "clip_frac_pos": sum(int(w.sum()) for w, a in zip(clips, advs) if a > 0) / tokens,
             "clip_frac_neg": sum(int(w.sum()) for w, a in zip(clips, advs) if a < 0) / tokens,
             "entropy_p10": nearest_rank(ent, 0.1), "entropy_p50": nearest_rank(ent, 0.5),
             "entropy_p90": nearest_rank(ent, 0.9)}
    if weights:
        w = torch.cat(weights)
        stats.update(mismatch_stats(torch.cat(lps), torch.cat(rolls)))
        stats["is_weight_mean"] = w.sum().item() / tokens if rollout_is != "none" else 1.0
        stats["is_masked_frac"] = (w == 0).double().sum().item() / tokens if rollout_is != "none" else 0.0
    return loss, stats


def loss_and_grads(params, cfg, batch, **kw):
    """The loss statistics, {name: gradient} and the global gradient L2 norm, all float64."""
    p = {n: t.detach().clone().requires_grad_(True) for n, t in params.items()}
    loss, stats = grpo_loss(p, cfg, batch, **kw)
    loss.backward()
    grads = {n: t.grad if t.grad is not None else torch.zeros_like(t) for n, t in p.items()}
    stats["grad_norm"] = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    return stats, grads


def random_ids(g, vocab, n):
    """n token ids drawn uniformly from the vocabulary."""
    return torch.randint(0, vocab, (n,), generator=g).tolist()


def make_batch(params, cfg, seed=0, lengths=((3, 5), (1, 7), (6, 2), (4, 9), (2, 1)),
               temperature=1.0, with_old=True, with_rollout=False):
    """A grad batch whose old_logprobs put tokens on both sides of both clip bounds.

    Advantages alternate in sign; old = reference logp minus a shift, so rho = exp(shift) is
    one of 0.61, 0.76, 0.95, 1.05, 1.25, 1.65: well inside or outside [0.8, 1.2], and two of
    them (0.76, 1.25) between the bounds of clip 0.2 and clip 0.28, so swapping or merging
    clip_low/clip_high changes the result. Each rho is >= 2.5% (in log) from 1 +- 0.15, 0.2,
    0.28, 0.3, far above the fp32 error of logp."""
    g = torch.Generator().manual_seed(seed)
    shifts = [0.5, -0.05, -0.5, 0.22, 0.05, -0.27]
    batch = []
    for k, (n_prompt, n_resp) in enumerate(lengths):
        row = {"prompt_ids": random_ids(g, cfg["vocab_size"], n_prompt),
               "response_ids": random_ids(g, cfg["vocab_size"], n_resp),
               "advantage": (1.0 if k % 2 == 0 else -1.0) * (0.5 + 0.25 * k)}
        if with_old:
            ids = row["prompt_ids"] + row["response_ids"]
            with torch.no_grad():
                logits = forward_logits(params, cfg, ids)[n_prompt - 1:len(ids) - 1]
                logp, _ = token_logprobs(logits, row["response_ids"], temperature)
            row["old_logprobs"] = [float(lp) - shifts[(k + j) % len(shifts)]
                                   for j, lp in enumerate(logp.tolist())]
        if with_old and with_rollout:
            # rollout = old - s: the correction's ratio exp(s) is 0.37, 0.55, 0.82, 1.35, 1.82,
            # 2.7, 4.5: on both sides of MIS bounds [0.5, 2] / [0.7, 1.5] and of TIS caps 2 and 1.5
            rs = [-1.0, -0.6, -0.2, 0.3, 0.6, 1.0, 1.5]
            row["rollout_logprobs"] = [o - rs[(2 * k + j) % len(rs)] for j, o in enumerate(row["old_logprobs"])]
        batch.append(row)
    return batch


# ---------------------------------------------------------------------------------------------
# AdamW (torch.optim.AdamW driven with given gradients)
# ---------------------------------------------------------------------------------------------

class RefAdamW:
    """torch.nn.utils.clip_grad_norm_ + torch.optim.AdamW on float64 copies of the parameters."""

    def __init__(self, params, lr, weight_decay, max_grad_norm):
        self.p = {n: t.detach().clone().requires_grad_(True) for n, t in params.items()}
        self.opt = torch.optim.AdamW(list(self.p.values()), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                                     weight_decay=weight_decay)
        self.max_grad_norm = max_grad_norm

    def step(self, grads):
        """Clips the given gradients by global norm and takes one AdamW step; returns the norm."""
        for n, t in self.p.items():
            t.grad = grads[n].detach().to(torch.float64).clone()
        norm = torch.nn.utils.clip_grad_norm_(list(self.p.values()), self.max_grad_norm)
        self.opt.step()
        return float(norm)

    def params(self):
        """Current parameters, detached."""
        return {n: t.detach().clone() for n, t in self.p.items()}
