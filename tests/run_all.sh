#!/usr/bin/env bash
# The whole test suite: workflow lint, code lint, CITATION.cff, and pytest (testbed tests need root).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== snakemake --lint"
snakemake --lint
echo "== ruff"
ruff check src tests bench
echo "== cffconvert --validate"
bash tests/tools/validate_citation.sh
echo "== pytest"
python3 -m pytest -ra "$@"
