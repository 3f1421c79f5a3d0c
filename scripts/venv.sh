#!/usr/bin/env bash
# Makes the tests' Python virtual environment VENV (Debian's python3 and the pinned packages of
# REQUIREMENTS from PyPI), once: a later call finds the same pins recorded in VENV and does
# nothing; changed pins re-create it. The record is written last, so an interrupted install is
# redone. usage: venv.sh VENV REQUIREMENTS
set -euo pipefail
venv=${1:?usage: venv.sh VENV REQUIREMENTS}
req=${2:?usage: venv.sh VENV REQUIREMENTS}
record="$venv/or1-requirements.txt"
if cmp -s "$req" "$record"; then
  exit 0
fi
echo "venv: installing $(grep -c '^[^#]' "$req") pinned packages of $req into $venv" >&2
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-deps \
  --only-binary=:all: -r "$req" >&2
cp "$req" "$record"
