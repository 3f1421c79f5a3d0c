"""The dataset of or1/data.h on the real shared data files and on malformed rows.

Runs tests/rl/data_driver with various options and checks its output against this script's
own reading of the files with the json module: every row kept and in order, the fields,
the difficulty filter, the prompt-length filter (token counts from a byte-level tokenizer
with no merges, so a prompt's length is the UTF-8 length of its chat text), the weighted
seeded sampler (permutations per epoch, drop_last, determinism, resume), the online filter,
and clean errors naming file:line and the key for malformed rows.
Usage: test_data.py DATA_DRIVER SHARED_DATA_DIR WORKDIR
"""
import collections
import json
import os
import subprocess
import sys

from or1test.check import check, finish


def run(driver, *args, ok=True):
    """Runs the driver; returns (rows, batches, stats) or the error text when ok is False."""
    p = subprocess.run([driver, *map(str, args)], capture_output=True, text=True)
    if not ok:
        check(p.returncode != 0, f"{args}: should fail")
        return p.stderr
    if p.returncode != 0:
        check(False, f"{args}: failed: {p.stderr.strip()}")
        return [], [], {}
    rows, batches, stats = [], [], {}
    for line in p.stdout.splitlines():
        j = json.loads(line)
        if "row" in j:
            rows.append(j["row"])
        elif "batch" in j or "stage_dropped" in j:
            batches.append(j)
        else:
            stats = j["stats"]
    return rows, batches, stats


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [(i + 1, json.loads(line)) for i, line in enumerate(f) if line.strip()]


def test_real_files(driver, data):
    """Every row of every shared file is kept, in order, with its fields."""
    for name in ("aime24", "aime25", "math500", "code_eval", "lcb_2408_2502_public_tests", "deepscaler_first500"):
        path = os.path.join(data, name + ".jsonl")
        want = read_jsonl(path)
        rows, _, stats = run(driver, "--file", path)
        check(stats.get("read") == len(want) and stats.get("kept") == len(want) and len(rows) == len(want),
              f"{name}: {stats} for {len(want)} rows")
        for r, (line, w) in zip(rows, want):
            ok = (r["line"] == line and r["data_source"] == w["data_source"] and r["code"] == (w["ability"] == "code")
                  and r["prompt"] == w["prompt"] and r["ground_truth"] == w["reward_model"]["ground_truth"]
                  and r["index"] == w["extra_info"].get("index", -1) and r["difficulty"] == -1 and r["n_ids"] == 0)
            if not ok:
                check(False, f"{name}:{line}: row differs: {str(r)[:300]}")
                break


def write(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def row(i, difficulty=None, ability="math", **over):
    r = {"data_source": "train-math-x", "prompt": [{"role": "user", "content": f"problem {i} " + "é" * (i % 7)}],
         "ability": ability, "reward_model": {"ground_truth": json.dumps([str(i)]), "style": "rule"},
         "extra_info": {"index": i}}
    if ability == "code":
        r["reward_model"]["ground_truth"] = json.dumps({"inputs": ["1\n"], "outputs": ["1\n"]})
    if difficulty is not None:
        r["extra_info"]["model_difficulty"] = difficulty
    r.update(over)
    return r


def test_difficulty(driver, work):
    """Offline filter: keep rows whose difficulty for the named model is in [lo, hi]."""
    rows = []
    for i in range(60):
        d = None if i % 5 == 0 else {"DeepSeek-R1-Distill-Qwen-7B": i % 17, "DeepSeek-R1-Distill-Qwen-32B": 16 - i % 17}
        if i % 10 == 1:
            d["DeepSeek-R1-Distill-Qwen-7B"] = None  # a null entry counts as missing
        rows.append(row(i, d))
    path = write(os.path.join(work, "diff.jsonl"), rows)
    for model, lo, hi, missing in (("DeepSeek-R1-Distill-Qwen-7B", 1, 15, "drop"), ("DeepSeek-R1-Distill-Qwen-32B", 3, 9, "keep"),
                                   ("DeepSeek-R1-Distill-Qwen-1.5B", 0, 16, "keep"), ("DeepSeek-R1-Distill-Qwen-1.5B", 0, 16, "drop")):
        kept, miss, out = [], 0, 0
        for i, r in enumerate(rows):
            d = r["extra_info"].get("model_difficulty", {}).get(model)
            if d is None:
                miss += missing == "drop"
                if missing == "keep":
                    kept.append(i)
            elif lo <= d <= hi:
                kept.append(i)
            else:
                out += 1
        if not kept:
            run(driver, "--file", path, "--difficulty", model, lo, hi, missing, ok=False)
            continue
        got, _, st = run(driver, "--file", path, "--difficulty", model, lo, hi, missing)
        check([r["index"] for r in got] == kept, f"difficulty {model} [{lo},{hi}] {missing}: kept {[r['index'] for r in got]}")
        check(st.get("dropped_missing") == miss and st.get("dropped_difficulty") == out, f"difficulty counts {st}")
        want_d = [rows[i]["extra_info"].get("model_difficulty", {}).get(model, -1) for i in kept]
        check([r["difficulty"] for r in got] == want_d, "difficulty values")


def byte_tokenizer(path):
    """A byte-level BPE tokenizer.json with the 256 byte tokens and no merge."""
    def byte_char(b):
        if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF:
            return chr(b)
        k = sum(1 for x in range(b) if not (0x21 <= x <= 0x7E or 0xA1 <= x <= 0xAC or 0xAE <= x <= 0xFF))
        return chr(0x100 + k)
    tj = {"model": {"type": "BPE", "vocab": {byte_char(b): b for b in range(256)}, "merges": []},
          "added_tokens": [], "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
          "decoder": {"type": "ByteLevel"}}
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f)
    return path


def test_prompt_length(driver, data, work):
    """Prompt-length filter on real rows: the plain template renders "User: <content>\\n" per
    user message then "Assistant:", and each byte is one token."""
    tok = byte_tokenizer(os.path.join(work, "bytetok"))
    for name, limit in (("math500", 200), ("deepscaler_first500", 180), ("code_eval", 2000)):
        path = os.path.join(data, name + ".jsonl")
        want = []
        for line, w in read_jsonl(path):
            text = "".join(("User: " if m["role"] == "user" else "Assistant: ") + m["content"] + "\n"
                           if m["role"] != "system" else m["content"] + "\n\n" for m in w["prompt"]) + "Assistant:"
            n = len(text.encode("utf-8"))
            if n <= limit:
                want.append((line, n))
        rows, _, st = run(driver, "--file", path, "--tokenizer", tok, "--template", "plain", "--max-prompt-length", limit)
        got = [(r["line"], r["n_ids"]) for r in rows]
        check(got == want, f"{name}: length filter kept {len(got)} rows, reference {len(want)}")
        check(st.get("dropped_length") == st.get("read", 0) - len(want), f"{name}: length counts {st}")


def test_thinking(driver, data, work):
    """enable_thinking through the data path train and eval use: Qwen3's own template (from
    data/tokenizers/qwen3) over a byte tokenizer, so each rendered byte is one id. With the
    variable false the generation prompt closes an empty <think> block (19 more bytes); a row's
    chat_template_kwargs win over the default given for every row (the config's)."""
    tok = byte_tokenizer(os.path.join(work, "qwen3tok"))
    with open(os.path.join(data, "tokenizers", "qwen3", "tokenizer_config.json"), encoding="utf-8") as f:
        template = json.load(f)["chat_template"]
    with open(os.path.join(tok, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"chat_template": template}, f)
    kw = lambda v: {} if v is None else {"chat_template_kwargs": {"enable_thinking": v}}  # noqa: E731
    path = write(os.path.join(work, "thinking.jsonl"), [dict(row(1), **kw(v)) for v in (None, False, True)])
    closed = len("<think>\n\n</think>\n\n")
    for default, extra in ((None, (0, closed, 0)), (0, (closed, closed, 0)), (1, (0, closed, 0))):
        flags = [] if default is None else ["--enable-thinking", default]
        rows, _, _ = run(driver, "--file", path, "--tokenizer", tok, *flags)
        n = [r["n_ids"] for r in rows]
        check(len(n) == 3 and [k - n[0] + extra[0] for k in n] == list(extra),
              f"enable_thinking default {default}: prompt lengths {n}, want offsets {extra}")


def test_sampler(driver, data, work):
    """Weighted, seeded, drop_last sampling; permutations per epoch; determinism; resume;
    the online filter."""
    a = os.path.join(data, "aime24.jsonl")
    b = os.path.join(data, "aime25.jsonl")
    n, steps = 7, 30
    rows, batches, _ = run(driver, "--file", a + ":2", "--file", b + ":1", "--shuffle", 42, "--draw", n, steps)
    check(len(rows) == 60, "two files: 60 rows")
    weights = collections.Counter({i: 2 if i < 30 else 1 for i in range(60)})
    slots = sum(weights.values())  # 90 slots, 12 batches of 7 per epoch (6 left over)
    per_epoch = slots // n
    by_epoch = collections.defaultdict(list)
    for bt in batches:
        check(len(bt["batch"]) == n, "batch size")
    for k, bt in enumerate(batches):
        by_epoch[k // per_epoch].extend(bt["batch"])
    for e, ids in by_epoch.items():
        c = collections.Counter(ids)
        check(all(c[i] <= weights[i] for i in c), f"epoch {e}: a row drawn more often than its weight")
        if len(ids) == per_epoch * n:
            check(sum(weights[i] - c[i] for i in weights) == slots - per_epoch * n, f"epoch {e}: drop_last leftover")
    check(batches[per_epoch]["epoch"] == 1 and batches[per_epoch - 1]["epoch"] == 0, "epoch boundary after 12 batches")
    check(by_epoch[0] != by_epoch[1][:len(by_epoch[0])], "epochs are shuffled differently")
    _, again, _ = run(driver, "--file", a + ":2", "--file", b + ":1", "--shuffle", 42, "--draw", n, steps)
    check([x["batch"] for x in again] == [x["batch"] for x in batches], "same seed, same batches")
    _, other, _ = run(driver, "--file", a + ":2", "--file", b + ":1", "--shuffle", 43, "--draw", n, steps)
    check([x["batch"] for x in other] != [x["batch"] for x in batches], "another seed, other batches")
    _, plain, _ = run(driver, "--file", a, "--draw", 4, 9)
    check([x["batch"] for x in plain[:7]] == [list(range(k, k + 4)) for k in range(0, 28, 4)] and
          plain[7]["batch"] == [0, 1, 2, 3], "no shuffle: file order, drop_last wraps to the next epoch")
    # Weight 2 draws a row twice as often over whole epochs.
    _, many, _ = run(driver, "--file", a + ":2", "--file", b + ":1", "--shuffle", 7, "--draw", 10, 90)
    c = collections.Counter(i for x in many for i in x["batch"])
    wa, wb = sum(c[i] for i in range(30)), sum(c[i] for i in range(30, 60))
    check(abs(wa / wb - 2) < 0.1, f"weight 2 vs 1: {wa} vs {wb} draws")
    # Resume: 5 steps, save; a new process restores and draws 6 more = 11 steps in one run.
    st = os.path.join(work, "state.json")
    _, first, _ = run(driver, "--file", a + ":2", "--file", b, "--shuffle", 9, "--draw", n, 5, "--state-out", st)
    _, second, _ = run(driver, "--file", a + ":2", "--file", b, "--shuffle", 9, "--state-in", st, "--draw", n, 20)
    _, whole, _ = run(driver, "--file", a + ":2", "--file", b, "--shuffle", 9, "--draw", n, 25)
    check([x["batch"] for x in first + second] == [x["batch"] for x in whole], "resume gives the same batches")
    # Online filter: dropped rows never come back, also after a resume.
    dropped = list(range(0, 60, 3))
    _, fb, _ = run(driver, "--file", a + ":2", "--file", b, "--shuffle", 9, "--drop", ",".join(map(str, dropped)),
                   "--draw", n, 10, "--state-out", st)
    check(not set(i for x in fb for i in x["batch"]) & set(dropped), "dropped rows drawn")
    _, fb2, _ = run(driver, "--file", a + ":2", "--file", b, "--shuffle", 9, "--state-in", st, "--draw", n, 10)
    check(not set(i for x in fb2 for i in x["batch"]) & set(dropped), "dropped rows drawn after resume")
    err = run(driver, "--file", a, "--drop", ",".join(map(str, range(27))), "--draw", 4, 1, ok=False)
    check("only 3 remain" in err, f"too few active rows: {err}")
    err = run(driver, "--file", a, "--drop", "30", ok=False)
    check("out of range" in err, f"drop out of range: {err}")
    err = run(driver, "--file", b, "--state-in", st, ok=False)
    check("changed" in err, f"state of other data: {err}")
    with open(st, "w") as f:
        f.write('{"epoch": 0}')
    err = run(driver, "--file", a + ":2", "--file", b, "--shuffle", 9, "--state-in", st, ok=False)
    check("pos" in err, f"truncated state: {err}")


def test_stage_filter(driver, data, work):
    """The online filter at a stage start drops the prompts solved by every sample each time
    they were drawn in the stage; the records survive a checkpoint and reset at the filter."""
    a = os.path.join(data, "aime24.jsonl")
    st = os.path.join(work, "stage.json")
    run(driver, "--file", a, "--record", "0:4:4,1:3:4,1:4:4,2:0:4,5:4:4,5:4:4", "--state-out", st)
    _, out, _ = run(driver, "--file", a, "--state-in", st, "--stage-filter", "--draw", 4, 20, "--state-out", st)
    check(out and out[0].get("stage_dropped") == 2, f"stage filter dropped {out[:1]}")
    drawn = set(i for x in out[1:] for i in x["batch"])
    check(not drawn & {0, 5} and {1, 2} <= drawn, f"stage filter: rows drawn {sorted(drawn)}")
    _, out, _ = run(driver, "--file", a, "--state-in", st, "--stage-filter")
    check(out and out[0].get("stage_dropped") == 0, f"records reset after the filter: {out[:1]}")
    err = run(driver, "--file", a, "--record", "3:5:4", ok=False)
    check("3" in err and "5 of 4" in err, f"bad record: {err}")


def test_malformed(driver, work):
    """Every malformed row is an error naming file:line and the key; nothing crashes."""
    good = row(1)
    bad = [
        ("not json", "invalid JSON"),
        ("[1, 2]", "JSON object"),
        (dict(good, data_source=None), "data_source"),
        (dict(good, data_source=5), "data_source"),
        (dict(good, data_source=""), "data_source"),
        (dict(good, data_source="x" * 300), "data_source"),
        ({k: v for k, v in good.items() if k != "prompt"}, "prompt"),
        (dict(good, prompt="hello"), "prompt"),
        (dict(good, prompt=[]), "prompt"),
        (dict(good, prompt=[{"role": "user"}]), "prompt[0].content"),
        (dict(good, prompt=[{"role": "robot", "content": "x"}]), "prompt[0].role"),
        (dict(good, prompt=[{"role": "user", "content": "a"}, "b"]), "prompt[1]"),
        (dict(good, prompt=[{"role": "user", "content": 7}]), "prompt[0].content"),
        (dict(good, prompt=[{"role": "user", "content": "x"}] * 65), "prompt"),
        (dict(good, ability="physics"), "ability"),
        ({k: v for k, v in good.items() if k != "ability"}, "ability"),
        (dict(good, reward_model={"style": "rule"}), "reward_model.ground_truth"),
        (dict(good, reward_model="x"), "reward_model"),
        # a math ground truth: a string holding one answer or a JSON-encoded list of answers
        (dict(good, reward_model={"ground_truth": ["1"]}), "reward_model.ground_truth"),
        (dict(good, reward_model={"ground_truth": 72}), "reward_model.ground_truth"),
        (dict(good, reward_model={"ground_truth": 7.5}), "reward_model.ground_truth"),
        (dict(good, reward_model={"ground_truth": True}), "reward_model.ground_truth"),
        (dict(good, reward_model={"ground_truth": {"a": "1"}}), "reward_model.ground_truth"),
        (dict(good, reward_model={"ground_truth": None}), "reward_model.ground_truth"),
        (dict(good, reward_model={"ground_truth": ""}), "is empty"),
        (dict(good, reward_model={"ground_truth": "[]"}), "must not be empty"),
        (dict(good, reward_model={"ground_truth": '["1", ""]'}), "element 1"),
        (dict(good, reward_model={"ground_truth": '["1", 2]'}), "element 1"),
        (dict(good, reward_model={"ground_truth": '""'}), "empty"),
        (dict(good, reward_model={"ground_truth": '{"inputs": ["1"], "outputs": ["1"]}'}), "JSON object"),
        (dict(good, reward_model={"ground_truth": '["a\\u0000b"]'}), "U+0000"),
        (dict(row(2, ability="code"), reward_model={"ground_truth": json.dumps({"inputs": ["1"], "outputs": []})}),
         "reward_model.ground_truth"),
        (dict(row(2, ability="code"), reward_model={"ground_truth": json.dumps(["1"])}), "reward_model.ground_truth"),
        # Loads only what the sandbox can run: a function-call test needs its entry point.
        (dict(row(2, ability="code"), reward_model={"ground_truth": json.dumps({"import_prefix": "", "test_code": "x"})}),
         "reward_model.ground_truth"),
        (dict(good, extra_info=[1]), "extra_info"),
        (dict(good, extra_info={"index": -1}), "index"),
        (dict(good, extra_info={"index": 1.5}), "index"),
        (dict(good, extra_info={"model_difficulty": [1]}), "model_difficulty"),
        (dict(good, extra_info={"model_difficulty": {"m": "easy"}}), "\"m\""),
        (dict(good, extra_info={"model_difficulty": {"m": -3}}), "\"m\""),
        # a key the row shape lacks (a misspelt chat_template_kwargs would change nothing silently)
        (dict(good, chat_template_kwarg={"enable_thinking": False}), "chat_template_kwarg"),
        (dict(good, chat_template_kwargs={"enable_thinkng": False}), "enable_thinkng"),
        (dict(good, chat_template_kwargs={"enable_thinking": "no"}), "enable_thinking"),
        (dict(good, chat_template_kwargs=[1]), "chat_template_kwargs"),
    ]
    for k, (r, key) in enumerate(bad):
        path = write(os.path.join(work, f"bad{k}.jsonl"), [row(0), row(1), r])
        err = run(driver, "--file", path, ok=False)
        check(f"bad{k}.jsonl:3" in err and key in err and "error:" in err, f"malformed row {k}: {err.strip()}")
    err = run(driver, "--file", os.path.join(work, "missing.jsonl"), ok=False)
    check("missing.jsonl" in err, f"missing file: {err}")
    with open(os.path.join(work, "binary.jsonl"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    err = run(driver, "--file", os.path.join(work, "binary.jsonl"), ok=False)
    check("binary.jsonl:1" in err, f"binary file: {err}")
    path = write(os.path.join(work, "okextra.jsonl"), [dict(row(0), chat_template_kwargs={"enable_thinking": False},
                                                            extra_info=None)])
    rows, _, _ = run(driver, "--file", path)
    check(len(rows) == 1 and rows[0]["index"] == -1, "chat_template_kwargs and a null extra_info are allowed")
    path = write(os.path.join(work, "w0.jsonl"), [row(0)])
    err = run(driver, "--file", path + ":0", ok=False)
    check("weight" in err, f"weight 0: {err}")


def test_plain_truth(driver, work):
    """A math row's ground truth may be one answer as a plain string (verl's GSM8K and MATH rows)
    beside Skywork-OR1's JSON-encoded list; the row keeps the text as written."""
    truths = ["72", "-63", "[1, 2]", "[0, 1)", "x^2 + 1", "\\frac{1}{2}", '["1", "2"]', '"72"', "not json", "[1]"]
    rows = [dict(row(i), reward_model={"style": "rule", "ground_truth": t}) for i, t in enumerate(truths)]
    # verl's GSM8K row as its examples/data_preprocess/gsm8k.py writes it
    rows.append({"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "What is 20 - 83?"}],
                 "ability": "math", "reward_model": {"style": "rule", "ground_truth": "-63"},
                 "extra_info": {"split": "train", "index": 7, "answer": "20 - 83 = -63 #### -63",
                                "question": "What is 20 - 83?"}})
    path = write(os.path.join(work, "plain.jsonl"), rows)
    got, _, _ = run(driver, "--file", path)
    check([r["ground_truth"] for r in got] == truths + ["-63"], f"plain ground truths: {[r['ground_truth'] for r in got]}")
    check(len(got) == len(rows) and got[-1]["index"] == 7, "verl's GSM8K row loads with its index")


def main(driver, data, work):
    os.makedirs(work, exist_ok=True)
    test_real_files(driver, data)
    test_difficulty(driver, work)
    test_prompt_length(driver, data, work)
    test_thinking(driver, data, work)
    test_sampler(driver, data, work)
    test_stage_filter(driver, data, work)
    test_malformed(driver, work)
    test_plain_truth(driver, work)
    finish("rl_data")


if __name__ == "__main__":
    main(*sys.argv[1:4])
