"""Hostile inputs: or1 must exit 1 or 2 with "or1: <message>" naming the file (and the tensor or
key), never die by a signal, never trigger an ASan/UBSan/LSan report, and print on stdout only
lines of strict JSON (no NaN or infinity).

usage: test_malformed.py OR1 GROUP   (GROUP: safetensors | config | batch)

Each case starts from a valid tiny checkpoint and breaks one thing. Expected substrings are
matched case-sensitively; a tuple means any one of its members will do.
"""
import json
import os
import shutil
import struct
import sys
import tempfile

from or1test import files, proc, ref
from or1test import safetensors as st
from or1test.check import Checker

T = "model.layers.1.mlp.up_proj.weight"   # the tensor the per-tensor cases break
Q = "model.layers.0.self_attn.q_proj.weight"
GROUPS = {"safetensors": [], "config": [], "batch": []}


def case(group):
    """Registers a case: a function (Base) -> (or1 args, stdin text or None, expected strings)."""
    def register(fn):
        GROUPS[group].append(fn)
        return fn
    return register


class Base:
    """A valid checkpoint, batch and logprobs input under tmp, copied afresh for each case."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.src = os.path.join(tmp, "valid")
        self.cfg, self.params = ref.new_checkpoint(self.src, seed=1)
        self.batch = ref.make_batch(self.params, self.cfg, seed=2, lengths=((3, 4), (2, 5)))
        self.n = 0

    def model(self, shards=1):
        """A fresh copy of the valid checkpoint (optionally resharded); returns its directory."""
        self.n += 1
        d = os.path.join(self.tmp, f"case{self.n}")
        if shards == 1:
            shutil.copytree(self.src, d)
        else:
            ref.save_checkpoint(d, self.cfg, self.params, shards=shards)
        return d

    def logprobs_args(self, model):
        """or1 logprobs on a valid input file."""
        inp = os.path.join(self.tmp, "in.jsonl")
        files.write_jsonl(inp, [{"ids": [1, 2, 3, 4]}, {"ids": [5, 6]}])
        return ["logprobs", "--model", model, "--input", inp]

    def grad_args(self, rows, name="batch.jsonl"):
        """or1 grad on the valid model with the given batch rows (dicts or raw text lines)."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            for r in rows:
                f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
        return ["grad", "--model", self.src, "--batch", path,
                "--out", os.path.join(self.tmp, "g.safetensors")]


def raw_file(model):
    """(path, header dict, data bytes) of a checkpoint's model.safetensors."""
    path = os.path.join(model, "model.safetensors")
    return (path, *st.read_raw(path))


def edit_header(base, fn, header_len=None):
    """A model whose model.safetensors header went through fn(header); returns the directory."""
    d = base.model()
    path, header, data = raw_file(d)
    fn(header)
    st.write_raw(path, header, data, header_len)
    return d


def edit_bytes(base, fn):
    """A model whose model.safetensors bytes went through fn(blob)."""
    d = base.model()
    path = os.path.join(d, "model.safetensors")
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(fn(blob))
    return d


def set_entry(name, key, value):
    """A header edit setting header[name][key] = value."""
    def fn(h):
        h[name][key] = value
    return fn


# --- safetensors ------------------------------------------------------------------------------

ST = ("model.safetensors",)


@case("safetensors")
def truncated_data(b):
    """The file ends 100 bytes early, inside the last tensor's data."""
    return b.logprobs_args(edit_bytes(b, lambda x: x[:len(x) - 100])), None, ST


@case("safetensors")
def shorter_than_length_prefix(b):
    """Only 5 bytes: not even the 8-byte header length."""
    return b.logprobs_args(edit_bytes(b, lambda x: x[:5])), None, ST


@case("safetensors")
def empty_file(b):
    """A zero-byte weights file."""
    return b.logprobs_args(edit_bytes(b, lambda x: b"")), None, ST


@case("safetensors")
def header_length_beyond_file(b):
    """The header length prefix points past the end of the file."""
    return b.logprobs_args(edit_bytes(b, lambda x: struct.pack("<Q", len(x)) + x[8:])), None, ST


@case("safetensors")
def header_length_absurd(b):
    """Header length 2^64-1 (an overflow trap for 8 + n)."""
    return b.logprobs_args(edit_bytes(b, lambda x: b"\xff" * 8 + x[8:])), None, ST


@case("safetensors")
def header_not_json(b):
    """The header bytes are not JSON."""
    def fn(x):
        (n,) = struct.unpack("<Q", x[:8])
        return x[:8] + b"{not json" + b" " * (n - 9) + x[8 + n:]
    return b.logprobs_args(edit_bytes(b, fn)), None, ST


@case("safetensors")
def header_not_object(b):
    """The header is JSON but an array, not an object."""
    def fn(x):
        (n,) = struct.unpack("<Q", x[:8])
        return x[:8] + b"[1,2,3]" + b" " * (n - 7) + x[8 + n:]
    return b.logprobs_args(edit_bytes(b, fn)), None, ST


@case("safetensors")
def offsets_beyond_data(b):
    """One tensor's end offset lies past the data section."""
    _, _, data = raw_file(b.src)
    begin = raw_file(b.src)[1][T]["data_offsets"][0]
    d = edit_header(b, set_entry(T, "data_offsets", [begin, len(data) + 64]))
    return b.logprobs_args(d), None, ST + (T,)


@case("safetensors")
def offsets_huge(b):
    """Offsets near 2^63 (an overflow trap for data + offset)."""
    d = edit_header(b, set_entry(T, "data_offsets", [2 ** 63, 2 ** 63 + 16]))
    return b.logprobs_args(d), None, ST + (T,)


@case("safetensors")
def offsets_reversed(b):
    """begin > end."""
    begin, end = raw_file(b.src)[1][T]["data_offsets"]
    d = edit_header(b, set_entry(T, "data_offsets", [end, begin]))
    return b.logprobs_args(d), None, ST + (T,)


@case("safetensors")
def offsets_disagree_with_shape(b):
    """The byte range is 4 bytes shorter than shape x dtype size."""
    begin, end = raw_file(b.src)[1][T]["data_offsets"]
    d = edit_header(b, set_entry(T, "data_offsets", [begin, end - 4]))
    return b.logprobs_args(d), None, ST + (T,)


@case("safetensors")
def offsets_not_a_list(b):
    """data_offsets is a string."""
    return b.logprobs_args(edit_header(b, set_entry(T, "data_offsets", "0-16"))), None, ST + (T,)


@case("safetensors")
def unknown_dtype(b):
    """A dtype name that does not exist."""
    return b.logprobs_args(edit_header(b, set_entry(T, "dtype", "F9"))), None, ST + (T,)


@case("safetensors")
def unsupported_dtype(b):
    """A real safetensors dtype the model cannot use (I32)."""
    return b.logprobs_args(edit_header(b, set_entry(T, "dtype", "I32"))), None, ST + (T,)


def poison(blob, name, index, value):
    """blob with element `index` of tensor `name` set to value (F32, BF16 or F16 data)."""
    n = struct.unpack("<Q", blob[:8])[0]
    entry = json.loads(blob[8:8 + n])[name]
    size = {"F32": 4, "BF16": 2, "F16": 2}[entry["dtype"]]
    if entry["dtype"] == "F32":
        raw = struct.pack("<f", value)
    elif entry["dtype"] == "BF16":
        raw = struct.pack("<f", value)[2:]
    else:
        raw = struct.pack("<e", value)
    at = 8 + n + entry["data_offsets"][0] + index * size
    return blob[:at] + raw + blob[at + size:]


@case("safetensors")
def nan_weight(b):
    """One weight is NaN (a corrupt or diverged checkpoint): refused, naming tensor and element."""
    d = edit_bytes(b, lambda x: poison(x, T, 3, float("nan")))
    return b.logprobs_args(d), None, ST + (f'tensor "{T}" element 3 is nan', "non-finite weights are refused")


@case("safetensors")
def inf_weight(b):
    """One weight is -inf: refused the same way."""
    d = edit_bytes(b, lambda x: poison(x, Q, 7, float("-inf")))
    return b.logprobs_args(d), None, ST + (f'tensor "{Q}" element 7 is -inf',)


@case("safetensors")
def missing_tensor(b):
    """A required tensor is absent from the header."""
    return b.logprobs_args(edit_header(b, lambda h: h.pop(T))), None, (T,)


@case("safetensors")
def wrong_shape_same_size(b):
    """Right element count, wrong shape (an extra unit axis)."""
    def fn(h):
        h[Q]["shape"] = list(reversed(h[Q]["shape"])) + [1]
    return b.logprobs_args(edit_header(b, fn)), None, (Q,)


@case("safetensors")
def wrong_shape_transposed(b):
    """An [I, H] weight stored as [H, I]."""
    rows, cols = b.cfg["intermediate_size"], b.cfg["hidden_size"]
    return b.logprobs_args(edit_header(b, set_entry(T, "shape", [cols, rows]))), None, (T,)


@case("safetensors")
def negative_dim(b):
    """A negative dimension."""
    H = b.cfg["hidden_size"]
    return b.logprobs_args(edit_header(b, set_entry(T, "shape", [-1, H]))), None, ST + (T,)


@case("safetensors")
def absurd_dims(b):
    """Dimensions whose product overflows 64 bits."""
    d = edit_header(b, set_entry(T, "shape", [2 ** 62, 2 ** 62, 2 ** 40]))
    return b.logprobs_args(d), None, ST + (T,)


@case("safetensors")
def fractional_dim(b):
    """A non-integer dimension."""
    H = b.cfg["hidden_size"]
    return b.logprobs_args(edit_header(b, set_entry(T, "shape", [64.5, H]))), None, ST + (T,)


@case("safetensors")
def weights_file_missing(b):
    """config.json without any weights file."""
    d = b.model()
    os.remove(os.path.join(d, "model.safetensors"))
    return b.logprobs_args(d), None, ST


@case("safetensors")
def index_names_missing_shard(b):
    """The index maps tensors to a shard file that does not exist."""
    d = b.model(shards=2)
    os.remove(os.path.join(d, ref.shard_file_name(2, 2)))
    return b.logprobs_args(d), None, (ref.shard_file_name(2, 2),)


@case("safetensors")
def index_not_json(b):
    """The shard index is truncated JSON."""
    d = b.model(shards=2)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        f.write('{"weight_map": {"model.norm.weight": ')
    return b.logprobs_args(d), None, ("model.safetensors.index.json",)


@case("safetensors")
def index_lacks_tensor(b):
    """A tensor is neither in the index nor in any shard."""
    d = b.model(shards=2)
    path = os.path.join(d, "model.safetensors.index.json")
    with open(path) as f:
        index = json.load(f)
    shard = index["weight_map"].pop(T)
    with open(path, "w") as f:
        json.dump(index, f)
    # the tensor is gone from the shard too, so no reader can find it by scanning
    spath = os.path.join(d, shard)
    tensors, _, _ = ref.read_safetensors(spath)
    tensors.pop(T)
    ref.write_safetensors(spath, tensors)
    return b.logprobs_args(d), None, (T,)


@case("safetensors")
def index_shard_path_escapes(b):
    """The index names a shard outside the checkpoint directory."""
    d = b.model(shards=2)
    path = os.path.join(d, "model.safetensors.index.json")
    with open(path) as f:
        index = json.load(f)
    index["weight_map"][T] = "../../../../nonexistent/" + "x" * 300 + ".safetensors"
    with open(path, "w") as f:
        json.dump(index, f)
    return b.logprobs_args(d), None, (("model.safetensors.index.json", "nonexistent"),)


# --- config.json ------------------------------------------------------------------------------

CFG = ("config.json",)


def edit_config(b, fn):
    """A model whose config.json went through fn(cfg dict)."""
    d = b.model()
    path = os.path.join(d, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    fn(cfg)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return d


def set_key(key, value):
    """A config edit setting cfg[key] = value."""
    def fn(c):
        c[key] = value
    return fn


@case("config")
def config_not_json(b):
    """config.json is truncated JSON."""
    d = b.model()
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write('{"model_type": "qwen2", "hidden_size": 32,')
    return b.logprobs_args(d), None, CFG


@case("config")
def config_missing(b):
    """No config.json."""
    d = b.model()
    os.remove(os.path.join(d, "config.json"))
    return b.logprobs_args(d), None, CFG


@case("config")
def config_not_object(b):
    """config.json is an array."""
    d = b.model()
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write("[32, 64]")
    return b.logprobs_args(d), None, CFG


@case("config")
def missing_key(b):
    """A required key is absent."""
    d = edit_config(b, lambda c: c.pop("num_attention_heads"))
    return b.logprobs_args(d), None, CFG + ("num_attention_heads",)


@case("config")
def wrong_type(b):
    """An integer key given as a string."""
    d = edit_config(b, set_key("hidden_size", "32"))
    return b.logprobs_args(d), None, CFG + ("hidden_size",)


@case("config")
def wrong_type_bool(b):
    """A boolean key given as a string."""
    d = edit_config(b, set_key("tie_word_embeddings", "yes"))
    return b.logprobs_args(d), None, CFG + ("tie_word_embeddings",)


@case("config")
def fractional_size(b):
    """An integer key given as 64.5."""
    d = edit_config(b, set_key("intermediate_size", 64.5))
    return b.logprobs_args(d), None, CFG + ("intermediate_size",)


@case("config")
def heads_do_not_divide_hidden(b):
    """hidden_size 32 with 5 heads and no head_dim."""
    return b.logprobs_args(edit_config(b, set_key("num_attention_heads", 5))), None, CFG


@case("config")
def kv_heads_do_not_divide_heads(b):
    """4 query heads over 3 KV heads."""
    return b.logprobs_args(edit_config(b, set_key("num_key_value_heads", 3))), None, CFG


@case("config")
def zero_layers(b):
    """num_hidden_layers = 0."""
    d = edit_config(b, set_key("num_hidden_layers", 0))
    return b.logprobs_args(d), None, CFG + ("num_hidden_layers",)


@case("config")
def zero_kv_heads(b):
    """num_key_value_heads = 0 (a division by zero trap)."""
    return b.logprobs_args(edit_config(b, set_key("num_key_value_heads", 0))), None, CFG


@case("config")
def negative_vocab(b):
    """A negative vocabulary size."""
    d = edit_config(b, set_key("vocab_size", -97))
    return b.logprobs_args(d), None, CFG + ("vocab_size",)


@case("config")
def absurd_hidden(b):
    """hidden_size 2^40: must fail before allocating."""
    d = edit_config(b, set_key("hidden_size", 2 ** 40))
    return b.logprobs_args(d), None, (("config.json", "model.safetensors"),)


@case("config")
def unknown_model_type(b):
    """A model_type or1 does not implement."""
    d = edit_config(b, set_key("model_type", "gpt2"))
    return b.logprobs_args(d), None, CFG + ("model_type",)


@case("config")
def vocab_disagrees_with_weights(b):
    """config.json says one more token than the embedding has."""
    d = edit_config(b, set_key("vocab_size", b.cfg["vocab_size"] + 1))
    return b.logprobs_args(d), None, ("model.embed_tokens.weight",)


@case("config")
def untied_without_lm_head(b):
    """tie_word_embeddings false but no lm_head.weight."""
    d = b.model()
    cfg = dict(b.cfg)
    params = {n: t for n, t in b.params.items() if n != "lm_head.weight"}
    ref.save_checkpoint(d, cfg, params)
    return b.logprobs_args(d), None, ("lm_head.weight",)


@case("config")
def non_positive_eps(b):
    """A negative rms_norm_eps."""
    d = edit_config(b, set_key("rms_norm_eps", -1.0))
    return b.logprobs_args(d), None, CFG + ("rms_norm_eps",)


@case("config")
def rope_scaling_unknown_type(b):
    """A RoPE scaling or1 does not implement (LongRoPE) is refused, naming it."""
    d = edit_config(b, set_key("rope_scaling", {"rope_type": "longrope", "factor": 4.0}))
    return b.logprobs_args(d), None, CFG + ("rope_scaling", "longrope")


@case("config")
def rope_yarn_betas_reversed(b):
    """YaRN with beta_fast below beta_slow (a ramp running backwards): refused, naming both."""
    d = edit_config(b, set_key("rope_parameters", {"rope_type": "yarn", "factor": 4.0, "beta_fast": 1.0,
                                                   "beta_slow": 32.0, "original_max_position_embeddings": 64}))
    return b.logprobs_args(d), None, CFG + ("rope_parameters", "beta_fast", "beta_slow")


@case("config")
def rope_yarn_attention_factor_negative(b):
    """YaRN with a negative attention_factor (cos and sin flipped in sign)."""
    d = edit_config(b, set_key("rope_scaling", {"type": "yarn", "factor": 2.0, "attention_factor": -1.0}))
    return b.logprobs_args(d), None, CFG + ("rope_scaling", "attention_factor")


@case("config")
def rope_scaling_without_factor(b):
    """Linear scaling without its factor."""
    d = edit_config(b, set_key("rope_scaling", {"type": "linear"}))
    return b.logprobs_args(d), None, CFG + ("rope_scaling", "factor")


@case("config")
def rope_llama3_factors_reversed(b):
    """Llama 3 scaling with low_freq_factor above high_freq_factor (a division by zero or worse)."""
    d = edit_config(b, set_key("rope_scaling", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                                                "high_freq_factor": 1.0, "original_max_position_embeddings": 64}))
    return b.logprobs_args(d), None, CFG + ("rope_scaling", "low_freq_factor")


@case("config")
def rope_parameters_disagree(b):
    """transformers 5's rope_parameters with a theta other than the top-level rope_theta."""
    def fn(c):
        c["rope_theta"] = 10000.0
        c["rope_parameters"] = {"rope_type": "default", "rope_theta": 500000.0}
    return b.logprobs_args(edit_config(b, fn)), None, CFG + ("rope_parameters", "rope_theta")


@case("config")
def rope_scaling_and_parameters_disagree(b):
    """rope_scaling and rope_parameters naming different scalings."""
    def fn(c):
        c["rope_parameters"] = {"rope_type": "linear", "factor": 2.0}
        c["rope_scaling"] = {"rope_type": "linear", "factor": 4.0}
    return b.logprobs_args(edit_config(b, fn)), None, CFG + ("rope_scaling", "rope_parameters")


@case("config")
def sliding_window_on(b):
    """use_sliding_window true: attention or1 does not compute."""
    d = edit_config(b, set_key("use_sliding_window", True))
    return b.logprobs_args(d), None, CFG + ("use_sliding_window",)


@case("config")
def sliding_layer_types(b):
    """layer_types naming a sliding-window layer."""
    d = edit_config(b, set_key("layer_types", ["full_attention", "sliding_attention"]))
    return b.logprobs_args(d), None, CFG + ("layer_types", "sliding_attention")


@case("config")
def experts(b):
    """A mixture-of-experts config (num_experts)."""
    d = edit_config(b, set_key("num_experts", 8))
    return b.logprobs_args(d), None, CFG + ("num_experts",)


@case("config")
def partial_rotary(b):
    """Half the head dimensions rotated."""
    d = edit_config(b, set_key("partial_rotary_factor", 0.5))
    return b.logprobs_args(d), None, CFG + ("partial_rotary_factor",)


@case("config")
def mlp_bias(b):
    """A Llama config with MLP biases."""
    def fn(c):
        c["model_type"], c["attention_bias"], c["mlp_bias"] = "llama", True, True
    return b.logprobs_args(edit_config(b, fn)), None, CFG + ("mlp_bias",)


@case("config")
def qwen2_weights_labelled_llama(b):
    """Qwen2 weights (q, k, v biases) under model_type llama without attention_bias: the biases
    would be dropped, so the load is refused naming one."""
    d = edit_config(b, set_key("model_type", "llama"))
    return b.logprobs_args(d), None, ("model.safetensors", "self_attn.q_proj.bias", "llama")


@case("config")
def extra_tensor(b):
    """A checkpoint with a tensor its architecture lacks (a Qwen3 q_norm in a Qwen2 model)."""
    d = b.model()
    params = dict(b.params)
    q = params["model.layers.0.self_attn.q_proj.bias"]
    params["model.layers.0.self_attn.q_norm.weight"] = q[:b.cfg["hidden_size"] // b.cfg["num_attention_heads"]].clone()
    ref.save_checkpoint(d, dict(b.cfg), params)
    return b.logprobs_args(d), None, ("model.safetensors", "q_norm", "qwen2")


@case("config")
def extra_tensor_sharded(b):
    """The same through an index of shards: the index names the file."""
    d = b.model(shards=2)
    path = os.path.join(d, "model.safetensors.index.json")
    with open(path) as f:
        index = json.load(f)
    index["weight_map"]["model.layers.0.self_attn.k_norm.weight"] = next(iter(index["weight_map"].values()))
    with open(path, "w") as f:
        json.dump(index, f)
    return b.logprobs_args(d), None, ("model.safetensors.index.json", "k_norm")


# --- batch / input lines and flags --------------------------------------------------------------

BATCH = ("batch.jsonl",)


def row(b, k=0, **changes):
    """A copy of valid batch row k with some fields changed (None deletes a field)."""
    r = dict(b.batch[k])
    for key, value in changes.items():
        if value is None:
            r.pop(key, None)
        else:
            r[key] = value
    return r


@case("batch")
def batch_truncated_json(b):
    """Line 2 of the batch is cut in the middle."""
    text = json.dumps(b.batch[1])
    return b.grad_args([b.batch[0], text[:len(text) // 2]]), None, BATCH


@case("batch")
def batch_not_object(b):
    """A batch line that is an array."""
    return b.grad_args([b.batch[0], "[1, 2, 3]"]), None, BATCH


@case("batch")
def response_id_out_of_vocab(b):
    """A response id equal to the vocabulary size."""
    bad = row(b, 1, response_ids=[1, b.cfg["vocab_size"], 2], old_logprobs=None)
    return b.grad_args([b.batch[0], bad]), None, BATCH


@case("batch")
def prompt_id_negative(b):
    """A negative prompt id."""
    return b.grad_args([row(b, 0, prompt_ids=[3, -1, 2])]), None, BATCH


@case("batch")
def id_not_integer(b):
    """A fractional token id."""
    return b.grad_args([row(b, 0, prompt_ids=[3, 1.5, 2])]), None, BATCH


@case("batch")
def id_huge(b):
    """A token id of 2^64."""
    return b.grad_args([row(b, 0, prompt_ids=[3, 2 ** 64, 2])]), None, BATCH


@case("batch")
def old_logprobs_too_short(b):
    """One old log-prob fewer than response tokens."""
    r = row(b, 1)
    r["old_logprobs"] = r["old_logprobs"][:-1]
    return b.grad_args([b.batch[0], r]), None, BATCH + ("old_logprobs",)


@case("batch")
def old_logprobs_too_long(b):
    """One old log-prob more than response tokens."""
    r = row(b, 0)
    r["old_logprobs"] = r["old_logprobs"] + [-1.0]
    return b.grad_args([r]), None, BATCH + ("old_logprobs",)


@case("batch")
def response_mask_too_short(b):
    """A response mask one value shorter than the response."""
    r = row(b, 1, response_mask=[1] * (len(b.batch[1]["response_ids"]) - 1))
    return b.grad_args([b.batch[0], r]), None, BATCH + ("response_mask", ":2")


@case("batch")
def response_mask_not_binary(b):
    """A response mask value of 2."""
    r = row(b, 0, response_mask=[1] * (len(b.batch[0]["response_ids"]) - 1) + [2])
    return b.grad_args([r]), None, BATCH + ("response_mask",)


@case("batch")
def response_mask_all_zero(b):
    """Every response token masked out: nothing to train."""
    rows = [row(b, k, response_mask=[0] * len(b.batch[k]["response_ids"])) for k in range(2)]
    return b.grad_args(rows), None, BATCH + ("response_mask",)


@case("batch")
def empty_response(b):
    """An empty response."""
    return b.grad_args([row(b, 0, response_ids=[], old_logprobs=[])]), None, \
        BATCH + ("response_ids",)


@case("batch")
def empty_prompt(b):
    """An empty prompt (the first response token would have no position)."""
    return b.grad_args([row(b, 0, prompt_ids=[])]), None, BATCH + ("prompt_ids",)


@case("batch")
def missing_response(b):
    """No response_ids key."""
    return b.grad_args([row(b, 0, response_ids=None, old_logprobs=None)]), None, \
        BATCH + ("response_ids",)


@case("batch")
def missing_advantage(b):
    """No advantage key."""
    return b.grad_args([row(b, 0, advantage=None)]), None, BATCH + ("advantage",)


@case("batch")
def advantage_not_number(b):
    """A string advantage."""
    return b.grad_args([row(b, 0, advantage="high")]), None, BATCH + ("advantage",)


@case("batch")
def batch_file_missing(b):
    """--batch names a file that does not exist."""
    args = b.grad_args([b.batch[0]])
    args[args.index("--batch") + 1] = os.path.join(b.tmp, "no-such-batch.jsonl")
    return args, None, ("no-such-batch.jsonl",)


@case("batch")
def logprobs_truncated_json(b):
    """logprobs input on /dev/stdin cut in the middle of a line."""
    return ["logprobs", "--model", b.src, "--input", "/dev/stdin"], '{"ids": [1, 2\n', \
        ("/dev/stdin",)


@case("batch")
def logprobs_id_out_of_vocab(b):
    """A logprobs id beyond the vocabulary."""
    inp = os.path.join(b.tmp, "in-oov.jsonl")
    files.write_jsonl(inp, [{"ids": [1, 2]}, {"ids": [3, b.cfg["vocab_size"] + 5]}])
    return ["logprobs", "--model", b.src, "--input", inp], None, ("in-oov.jsonl",)


@case("batch")
def logprobs_empty_ids(b):
    """A logprobs line with no ids."""
    inp = os.path.join(b.tmp, "in-empty.jsonl")
    files.write_jsonl(inp, [{"ids": []}])
    return ["logprobs", "--model", b.src, "--input", inp], None, ("in-empty.jsonl",)


@case("batch")
def flag_temperature_zero(b):
    """--temperature 0 (division by zero)."""
    return b.grad_args([b.batch[0]]) + ["--temperature", "0"], None, ("temperature",)


@case("batch")
def flag_temperature_not_number(b):
    """--temperature that is not a number."""
    return b.grad_args([b.batch[0]]) + ["--temperature", "hot"], None, ("temperature",)


@case("batch")
def flag_micro_batch_zero(b):
    """--micro-batch-tokens 0."""
    return b.grad_args([b.batch[0]]) + ["--micro-batch-tokens", "0"], None, ("micro-batch-tokens",)


@case("batch")
def flag_unknown(b):
    """A misspelt flag."""
    return b.grad_args([b.batch[0]]) + ["--bogus-flag", "1"], None, ("bogus-flag",)


@case("batch")
def flag_model_missing(b):
    """No --model."""
    args = b.grad_args([b.batch[0]])
    i = args.index("--model")
    return args[:i] + args[i + 2:], None, ("model",)


@case("batch")
def flag_model_not_a_dir(b):
    """--model names a directory that does not exist."""
    args = b.grad_args([b.batch[0]])
    args[args.index("--model") + 1] = os.path.join(b.tmp, "no-such-model")
    return args, None, ("no-such-model",)


@case("batch")
def flag_step_without_save(b):
    """--step with nowhere to save the result."""
    return b.grad_args([b.batch[0]]) + ["--step", "--lr", "1e-3"], None, ("save",)


# --- weights out of range: every command fails naming the row and token, printing no JSON it cannot hold

def huge_second_shard(b):
    """A checkpoint in two shards whose second shard's tensor T holds 1e38 everywhere: finite, as
    bytes flipped in a copy can leave a weight, but every activation after it overflows."""
    d = os.path.join(b.tmp, f"huge{b.n}")
    b.n += 1
    params = dict(b.params)
    params[T] = params[T] * 0 + 1e38
    ref.save_checkpoint(d, b.cfg, params, shards=2)
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        assert json.load(f)["weight_map"][T].endswith("00002-of-00002.safetensors")
    return d


@case("batch")
def logprobs_not_finite(b):
    """or1 logprobs on huge weights: the first row's first token is named."""
    return b.logprobs_args(huge_second_shard(b)), None, ("in.jsonl:1: token 1", "JSON cannot hold")


@case("batch")
def generate_not_finite(b):
    """or1 generate on huge weights: the engine stops at the first logits that are not finite."""
    inp = os.path.join(b.tmp, "prompts.jsonl")
    files.write_jsonl(inp, [{"prompt_ids": [1, 2, 3]}])
    return (["generate", "--model", huge_second_shard(b), "--input", inp, "--max-new-tokens", 3],
            None, ("request 0, sample 0, token 0", "not finite"))


@case("batch")
def grad_not_finite(b):
    """or1 grad on huge weights."""
    args = b.grad_args(b.batch, "huge_batch.jsonl")
    args[args.index("--model") + 1] = huge_second_shard(b)
    return args, None, ("huge_batch.jsonl", "not finite", "JSON cannot hold")


def strict_json(line):
    """The JSON value of line, refusing NaN and infinities (which Python's json otherwise reads)."""
    def refuse(c):
        raise ValueError(f"{c} is not JSON")
    return json.loads(line, parse_constant=refuse)


def printed_json(out):
    """None if every line of out is strict JSON, else the first line that is not."""
    for line in out.splitlines():
        try:
            strict_json(line)
        except ValueError:
            return line
    return None


def run_case(chk, or1, b, fn):
    """Runs one case and checks exit status, message form, named things and sanitizer silence."""
    args, stdin, expect = fn(b)
    r = proc.run_or1(or1, args, stdin=stdin, timeout=120)
    what = fn.__name__
    err = r.stderr
    chk.ok(r.returncode in (1, 2), f"{what}: exit status {r.returncode} (want 1 or 2); "
           f"stderr: {err.strip()[:400]}")
    chk.ok(not proc.sanitizer_report(err), f"{what}: sanitizer report: {err.strip()[:1500]}")
    bad = printed_json(r.stdout)
    chk.ok(bad is None, f"{what}: stdout holds a line that is not JSON: {str(bad)[:200]!r}")
    chk.ok(err.startswith("or1: "), f"{what}: stderr does not start with 'or1: ': {err[:200]!r}")
    for e in expect:
        alts = e if isinstance(e, tuple) else (e,)
        chk.ok(any(a in err for a in alts), f"{what}: message does not name {' or '.join(alts)}: "
               f"{err.strip()[:400]!r}")


def main():
    or1, group = sys.argv[1], sys.argv[2]
    chk = Checker(f"malformed {group}")
    with tempfile.TemporaryDirectory() as tmp:
        b = Base(tmp)
        for fn in GROUPS[group]:
            run_case(chk, or1, b, fn)
    chk.finish()


if __name__ == "__main__":
    main()
