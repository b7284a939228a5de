#!/usr/bin/env bash
# Snakemake runs this inside the environment made from environment.yml (--use-conda), from the working directory,
# the repository root: it installs quicack itself, whose `quicack` command every rule calls. Conda cannot do it
# from environment.yml, because Snakemake copies that file elsewhere before creating the environment.
set -euo pipefail
python -m pip install --no-deps --no-build-isolation -e .
python -m compileall -q src/quicack >/dev/null || true  # bytecode once (see install.sh)
# The capture decoder's compiled core, when a Rust toolchain is on PATH (else captures decode in pure Python).
if command -v cargo >/dev/null 2>&1; then
  python -m pip install --no-deps --no-build-isolation ./rust/quicack_core ||
    echo "environment.post-deploy.sh: quicack_core not built: captures are decoded in pure Python" >&2
fi
