#!/usr/bin/env bash
# Hostile input through the CLI: every case must exit non-zero with a clear message (and
# never crash), and the good path must still work. usage: cli_errors.sh OR1 TOKENIZER_DIR
set -uo pipefail
or1=$1
tok=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# expect_error NAME EXPECTED-SUBSTRING COMMAND... (stdin from $tmp/in)
expect_error() {
  local name=$1 want=$2
  shift 2
  "$@" < "$tmp/in" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [[ $rc -ne 0 && $rc -lt 128 ]] && grep -qF -- "$want" "$tmp/err"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: rc=$rc, stderr: $(head -c 300 "$tmp/err")"
  fi
}

printf '{"text": "ok"}\n{"text": "bad \xff byte"}\n' > "$tmp/in"
expect_error "invalid UTF-8" "-:2: encode: invalid UTF-8 at byte 4" "$or1" tokenize --tokenizer "$tok"
printf '{"text": "ok"}\n{"text": \n' > "$tmp/in"
expect_error "malformed JSONL" "-:2: invalid JSON" "$or1" tokenize --tokenizer "$tok"
printf '{"text": "ok"}\n{"text": "a\\ud800"}\n' > "$tmp/in"
expect_error "a lone surrogate escape" "-:2: invalid JSON near byte 11" "$or1" tokenize --tokenizer "$tok"
printf '{"text": "ok"}\n{"text": "a\\udc00\\ud800"}\n' > "$tmp/in"
expect_error "surrogates in the wrong order" "-:2: invalid JSON near byte 11" "$or1" tokenize --tokenizer "$tok"
printf '{"text": "ok"}\n{"text": "a\0"}\n' > "$tmp/in"
expect_error "a raw NUL byte (JSON wants it escaped)" "-:2: a NUL byte at byte 11" "$or1" tokenize --tokenizer "$tok"
printf '{"txt": "ok"}\n' > "$tmp/in"
expect_error "missing text" "missing key \"text\"" "$or1" tokenize --tokenizer "$tok"
printf '{"text": 5}\n' > "$tmp/in"
expect_error "text not a string" "must be a string" "$or1" tokenize --tokenizer "$tok"
printf '{"ids": [1, 999999999]}\n' > "$tmp/in"
expect_error "id out of range" "999999999 at position 1 is not in the vocabulary" "$or1" detokenize --tokenizer "$tok"
printf '{"ids": [1, -3]}\n' > "$tmp/in"
expect_error "negative id" "\"ids\"[1]" "$or1" detokenize --tokenizer "$tok"
printf '{"ids": "12"}\n' > "$tmp/in"
expect_error "ids not an array" "must be an array" "$or1" detokenize --tokenizer "$tok"
printf '{"messages": [{"role": "user"}]}\n' > "$tmp/in"
expect_error "message without content" "messages[0]: missing key \"content\"" "$or1" chat --tokenizer "$tok"
printf '{"messages": [{"role": "tool", "content": "x"}]}\n' > "$tmp/in"
# the model's own template renders a tool turn; a family written in C refuses the role
expect_error "unsupported role" "role \"tool\"" "$or1" chat --tokenizer "$tok" --template chatml
printf '{"messages": []}\n' > "$tmp/in"
expect_error "unknown template" "unknown template \"jinja\"" "$or1" chat --tokenizer "$tok" --template jinja
expect_error "missing --tokenizer" "missing required flag --tokenizer" "$or1" tokenize
expect_error "unknown flag" "typo" "$or1" tokenize --tokenizer "$tok" --typo
expect_error "missing tokenizer file" "/nonexistent" "$or1" tokenize --tokenizer /nonexistent
mkdir -p "$tmp/bad"
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}' > "$tmp/bad/tokenizer.json"
expect_error "malformed tokenizer.json" "tokenizer.json: model.merges[0]" "$or1" tokenize --tokenizer "$tmp/bad"
head -c 100000 /dev/urandom > "$tmp/bad/tokenizer.json"
expect_error "random bytes as tokenizer.json" "tokenizer.json" "$or1" tokenize --tokenizer "$tmp/bad"

# A long input (8 MB on one line) goes through and decodes back to itself.
python3 -c 'import json; print(json.dumps({"text": ("x = 1  # \u4e2d\u6587 \U0001F600\n" * 300000) + "9" * 100000}))' > "$tmp/long.jsonl"
if "$or1" tokenize --tokenizer "$tok" --input "$tmp/long.jsonl" --output "$tmp/ids.jsonl" &&
   "$or1" detokenize --tokenizer "$tok" --input "$tmp/ids.jsonl" --output "$tmp/back.jsonl" &&
   python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["text"]; b=json.load(open(sys.argv[2]))["text"]; sys.exit(a != b)' "$tmp/long.jsonl" "$tmp/back.jsonl"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
  echo "FAIL long input round trip"
fi
echo "tokenizer CLI errors: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
