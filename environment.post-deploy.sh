#!/usr/bin/env bash
# Snakemake runs this inside the environment made from environment.yml (--use-conda), from the working directory,
# the repository root: it installs quicack itself, whose `quicack` command every rule calls. Conda cannot do it
# from environment.yml, because Snakemake copies that file elsewhere before creating the environment.
set -euo pipefail
python -m pip install --no-deps --no-build-isolation -e .
