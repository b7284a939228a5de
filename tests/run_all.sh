#!/usr/bin/env bash
# The whole test suite: the compiled core checked (tests/tools/check_core.sh: where Rust can build it, and always in
# CI, a missing or stale core fails here), workflow lint, code lint, type check, CITATION.cff, the compiled core's
# own tests and lint (with the Rust toolchain install.sh builds it with, tools/find_rust.sh), and pytest (testbed
# tests need root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/tools/check_core.sh
echo "== snakemake --lint"
snakemake --lint
echo "== ruff"
ruff check src tests bench
# The type checker over src/quicack ([tool.mypy] in pyproject.toml; its cache in .mypy_cache makes a rerun quick).
echo "== mypy"
mypy --no-error-summary
echo "== cffconvert --validate"
bash tests/tools/validate_citation.sh
# shellcheck source=../tools/find_rust.sh
source tools/find_rust.sh
rust_dir=$(find_rust)
if [ -n "$rust_dir" ]; then
    # rust_cargo puts the toolchain's folder first on PATH for cargo only: cargo runs rustc and clippy-driver from
    # PATH, and a /usr/bin first for pytest below would replace a virtualenv's python3.
    echo "== cargo test (rust/quicack_core, Rust $(rust_version "$rust_dir") at $rust_dir)"
    rust_cargo "$rust_dir" test --locked --manifest-path rust/quicack_core/Cargo.toml
    if rust_cargo "$rust_dir" clippy --version >/dev/null 2>&1; then
        echo "== cargo clippy (rust/quicack_core)"
        rust_cargo "$rust_dir" clippy --locked --manifest-path rust/quicack_core/Cargo.toml --all-targets -- -D warnings
    else
        echo "== cargo clippy: not installed, skipped"
    fi
else
    echo "== cargo: no Rust >= $rust_minimum, the compiled core's tests skipped (quicack runs its pure-Python engines)"
fi
# The tests that need no testbed on two workers, one test file per worker at a time (a file's fixtures are built
# once), the longest files first (tests/conftest.py); then the testbed's, one at a time: they time real traffic
# through network namespaces and must not share the two cores with other tests. Both parts together are every test.
# pytest's exit status 5 (no test selected) is not a failure when arguments select tests of one part only.
status=0
part() {
    local code=0
    python3 -m pytest -ra --durations=25 "$@" || code=$?
    [ $code = 0 ] || [ $code = 5 ] || status=$code
}
echo "== pytest, no testbed (two workers)"
part -m "not testbed" --numprocesses ${QUICACK_TEST_WORKERS:-2} --dist loadfile --no-loadscope-reorder "$@"
echo "== pytest, testbed"
part -m testbed "$@"
exit $status
