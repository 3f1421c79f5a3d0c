"""Shared plumbing of the rollout tests: running `or1 generate` / `or1 logprobs` and reading output."""
import json
import os

from or1test import files, proc

OUT_KEYS = ["index", "sample", "response_ids", "logprobs", "finish_reason"]


def write_prompts(path, prompts):
    """An input file with one {"prompt_ids": [...]} line per prompt."""
    return files.write_jsonl(path, [{"prompt_ids": p} for p in prompts])


def flag_args(flags):
    """{"max-new-tokens": 8, ...} -> ["--max-new-tokens", "8", ...] (None values are skipped)."""
    args = []
    for k, v in flags.items():
        if v is not None:
            args += ["--" + k, str(v)]
    return args


def generate_raw(or1, model, inp, **flags):
    """Runs `or1 generate` and returns the CompletedProcess."""
    return proc.run_or1(or1, ["generate", "--model", model, "--input", inp] + flag_args(flags))


def parse_rows(chk, what, stdout, n_prompts, n_samples):
    """Parses generate's stdout and checks its shape: keys, (index, sample) order, lengths agree.

    Returns the list of row dicts, or None after recording a failure."""
    lines = stdout.splitlines()
    if not chk.ok(len(lines) == n_prompts * n_samples,
                  f"{what}: {len(lines)} output lines, want {n_prompts} x {n_samples}"):
        return None
    rows = []
    for k, line in enumerate(lines):
        row = proc.parse_json_line(line, f"{what} line {k + 1}")
        want_pos = (k // n_samples, k % n_samples)
        ok = chk.ok(list(row)[:5] == OUT_KEYS, f"{what} line {k + 1}: keys {list(row)}")
        ok = ok and chk.ok((row["index"], row["sample"]) == want_pos,
                           f"{what} line {k + 1}: (index, sample) = {(row['index'], row['sample'])}, "
                           f"want {want_pos}")
        ok = ok and chk.ok(len(row["response_ids"]) == len(row["logprobs"]) > 0,
                           f"{what} line {k + 1}: {len(row['response_ids'])} ids but "
                           f"{len(row['logprobs'])} logprobs")
        ok = ok and chk.ok(row["finish_reason"] in ("stop", "length"),
                           f"{what} line {k + 1}: finish_reason {row['finish_reason']!r}")
        if not ok:
            return None
        rows.append(row)
    return rows


def generate_lines(chk, or1, model, inp, n_prompts, **flags):
    """Runs `or1 generate`; returns (parsed rows, raw stdout lines), or (None, None) on failure."""
    what = f"generate {' '.join(flag_args(flags))}"
    r = generate_raw(or1, model, inp, **flags)
    if not chk.ok(r.returncode == 0 and not proc.sanitizer_report(r.stderr),
                  f"{what}: exit {r.returncode}: {r.stderr.strip()[-2000:]}"):
        return None, None
    rows = parse_rows(chk, what, r.stdout, n_prompts, int(flags.get("n") or 1))
    return (rows, r.stdout.splitlines()) if rows is not None else (None, None)


def generate(chk, or1, model, inp, n_prompts, **flags):
    """Runs `or1 generate` and returns its parsed rows (None after recording a failure)."""
    return generate_lines(chk, or1, model, inp, n_prompts, **flags)[0]


def same_logprobs(chk, what, row, full):
    """A generate row's log-probs equal, bit for bit, the last len(response) entries of full (the
    whole sequence's log-probs from `or1 logprobs`); the first difference is named."""
    got, want = row["logprobs"], full[-len(row["response_ids"]):]
    bad = [i for i, (a, b) in enumerate(zip(got, want)) if a != b]
    return chk.ok(not bad and len(got) == len(want),
                  f"{what}: prompt {row['index']} sample {row['sample']}: {len(bad)} of {len(got)} log-probs "
                  "differ from the trainer's" + (f" (first at token {bad[0]}: {got[bad[0]]!r} vs {want[bad[0]]!r})"
                                                 if bad else ""))


def logprobs(chk, or1, model, seqs, tmp, temperature=1.0, name="lp.jsonl", precision=None):
    """`or1 logprobs` of each sequence: a list of len(seq) - 1 next-token log-probs (None on failure)."""
    path = os.path.join(tmp, name)
    files.write_jsonl(path, [{"ids": s} for s in seqs])
    args = ["logprobs", "--model", model, "--input", path]
    if temperature != 1.0:
        args += ["--temperature", temperature]
    if precision:
        args += ["--precision", precision]
    r = proc.run_or1(or1, args)
    if not chk.ok(r.returncode == 0 and not proc.sanitizer_report(r.stderr),
                  f"logprobs T={temperature}: exit {r.returncode}: {r.stderr.strip()[-2000:]}"):
        return None
    lines = r.stdout.splitlines()
    if not chk.ok(len(lines) == len(seqs), f"logprobs: {len(lines)} lines for {len(seqs)} sequences"):
        return None
    return [json.loads(line)["logprobs"] for line in lines]


def set_config(model, **changes):
    """Rewrites keys of a checkpoint's config.json (a None value deletes the key)."""
    path = os.path.join(model, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    for k, v in changes.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)
