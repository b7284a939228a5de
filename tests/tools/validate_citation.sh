#!/usr/bin/env bash
# Validates CITATION.cff with cffconvert (PyPI), in a virtual environment of its own: cffconvert 2.0.0, the newest,
# requires jsonschema < 4, and quicack pins jsonschema 4.26 (Snakemake's config validation), so the two cannot share
# one environment. The environment is made once, in the user's cache.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${XDG_CACHE_HOME:-$HOME/.cache}/quicack/cffconvert-2.0.0"
if [ ! -x "$venv/bin/cffconvert" ]; then
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check cffconvert==2.0.0 jsonschema==3.2.0
fi
"$venv/bin/cffconvert" --validate -i CITATION.cff
