#!/usr/bin/env bash
# Before the test suite (tests/run_all.sh runs it first): is the compiled core (rust/quicack_core) what the suite
# should test? Without it 235 tests skip (the compiled engines'), so where it can be built its absence is a failure:
#   - a Rust toolchain new enough (tools/find_rust.sh, found as install.sh finds it) and no quicack_core: fails;
#   - an installed quicack_core not built from the checkout's sources (stale): fails;
#   - in CI (CI=true, as CI services set it) or with QUICACK_REQUIRE_CORE=1: no toolchain fails too;
#   - otherwise, no toolchain: a clear skip (the pure-Python engines are tested, the compiled ones' tests skip).
# QUICACK_REQUIRE_CORE=0 skips the core on purpose (the pure-Python engines only), even where it could be built.
# PYTHON names the interpreter (default python3). Exit status 0: go on; 1: the message says what to do.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=../../tools/find_rust.sh
source tools/find_rust.sh
python=${PYTHON:-python3}
fail() { echo "== quicack_core: FAILED: $1" >&2; exit 1; }

if [ "${QUICACK_REQUIRE_CORE:-}" = 0 ]; then
  echo "== quicack_core: not required (QUICACK_REQUIRE_CORE=0): the compiled engines' tests skip"
  exit 0
fi
required=0
{ [ "${CI:-}" = true ] || [ "${QUICACK_REQUIRE_CORE:-}" = 1 ]; } && required=1
rust_dir=$(find_rust)
if [ -z "$rust_dir" ] && [ $required = 1 ]; then
  why=$([ "${CI:-}" = true ] && echo "CI (CI=true)" || echo "QUICACK_REQUIRE_CORE=1")
  fail "no Rust >= $rust_minimum (cargo with its rustc on PATH, in ~/.cargo/bin or /usr/bin), and $why tests the
compiled core and its Rust tests: install Rust (bash install.sh installs Debian's rustc-web), then bash install.sh"
fi
# One line: "ok <identity>", "missing" or "stale <why>" (quicack.compiled_core: the installed build's identity
# against the one the checkout's sources make).
state=$("$python" -c '
from quicack.compiled_core import installed_identity, stale_core_warning
installed, stale = installed_identity(), stale_core_warning()
print("missing" if installed is None else f"stale {stale}" if stale else f"ok {installed}")' 2>&1) ||
  fail "could not ask $python (quicack.compiled_core) about it: $state"
case "$state" in
  ok*) echo "== quicack_core ${state#ok } is built from these sources${rust_dir:+ (Rust $(rust_version "$rust_dir") at $rust_dir)}" ;;
  stale*) fail "${state#stale }" ;;
  missing)
    if [ -n "$rust_dir" ]; then
      fail "not installed, although Rust $(rust_version "$rust_dir") at $rust_dir can build it: bash install.sh
builds it (or pip install ./rust/quicack_core with $rust_dir first on PATH; QUICACK_REQUIRE_CORE=0 tests the
pure-Python engines only)"
    fi
    echo "== quicack_core: no Rust >= $rust_minimum found (cargo on PATH, ~/.cargo/bin, /usr/bin): the compiled core" \
      "and its Rust tests skipped, the pure-Python engines tested (the compiled engines' tests skip)" ;;
  *) fail "unexpected answer of quicack.compiled_core: $state" ;;
esac
