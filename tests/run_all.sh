#!/usr/bin/env bash
# The whole test suite: workflow lint, code lint, CITATION.cff, the compiled core's own tests and lint (when Rust is
# installed), and pytest (testbed tests need root).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== snakemake --lint"
snakemake --lint
echo "== ruff"
ruff check src tests bench
echo "== cffconvert --validate"
bash tests/tools/validate_citation.sh
CARGO=$(command -v cargo || true)
[ -z "$CARGO" ] && [ -x "$HOME/.cargo/bin/cargo" ] && CARGO="$HOME/.cargo/bin/cargo"
if [ -n "$CARGO" ]; then
    echo "== cargo test (rust/quicack_core)"
    "$CARGO" test --locked --manifest-path rust/quicack_core/Cargo.toml
    if "$CARGO" clippy --version >/dev/null 2>&1; then
        echo "== cargo clippy (rust/quicack_core)"
        "$CARGO" clippy --locked --manifest-path rust/quicack_core/Cargo.toml --all-targets -- -D warnings
    else
        echo "== cargo clippy: not installed, skipped"
    fi
else
    echo "== cargo: not installed, the compiled core's tests skipped (quicack runs its pure-Python engines)"
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
