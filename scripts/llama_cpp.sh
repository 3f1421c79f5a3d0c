#!/usr/bin/env bash
# Installs llama.cpp's Python package (scripts/llama-cpp-requirements.txt) into the tests' virtual
# environment VENV. PyPI has its source only, so the wheel is built once per machine, with the
# CPU backend alone and without the multimodal library, into a cache outside the clone
# (OR1_CACHE, default /var/cache/or1, else ~/.cache/or1) that a fresh clone's build does not
# remove; later calls install the cached wheel. Its runtime imports (numpy, jinja2) are pinned in
# scripts/python-test-requirements.txt; diskcache and typing-extensions with it here.
# usage: llama_cpp.sh VENV
set -euo pipefail
venv=${1:?usage: llama_cpp.sh VENV}
here=$(cd "$(dirname "$0")" && pwd)
req="$here/llama-cpp-requirements.txt"
record="$venv/or1-llama-cpp.txt"
if cmp -s "$req" "$record"; then
  exit 0
fi
cache=${OR1_CACHE:-/var/cache/or1}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache="$HOME/.cache/or1"
key=$(cat "$req" "$here/llama-cpp-build-constraints.txt" | sha256sum | cut -c1-16)  # contents only: any clone finds it
wheels="$cache/llama-cpp-$key"
py="$venv/bin/python"
if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "llama.cpp: building llama-cpp-python from source into $wheels (once per machine, a few minutes)" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: --require-hashes \
    -r "$req" -d "$tmp/src" >&2
  PIP_CONSTRAINT="$here/llama-cpp-build-constraints.txt" \
  CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_BLAS=OFF -DGGML_OPENMP=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
    "$py" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$tmp/wheel" "$tmp"/src/*.tar.gz >&2
  mkdir -p "$wheels"
  mv "$tmp"/wheel/*.whl "$wheels/"
fi
"$py" -m pip install --quiet --disable-pip-version-check --no-deps "$wheels"/llama_cpp_python-*.whl \
  diskcache==5.6.3 typing-extensions==4.15.0 >&2
cp "$req" "$record"
