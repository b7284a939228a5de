# shellcheck shell=bash
# The Rust toolchain that builds and tests the compiled core (rust/quicack_core), found one way for install.sh and
# tests/run_all.sh (both source this file): the first folder holding cargo and a rustc at least the crate's
# rust-version, among cargo's folder on PATH, ~/.cargo/bin (rustup's, often not on PATH) and /usr/bin (Debian's
# rustc-web). rustc is taken from cargo's own folder: cargo runs `rustc -vV` first, and a cargo found outside PATH
# finds no rustc there. QUICACK_RUST_DIRS (folders separated by ':') replaces those three.
#   rust_minimum     the crate's rust-version ("1.85")
#   find_rust        prints the toolchain's folder, or nothing when no folder has a new enough one
#   new_enough V     whether version V is at least rust_minimum
#   rust_cargo DIR … runs DIR's cargo with DIR first on PATH (for its rustc, clippy-driver), for that command only
rust_minimum=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../rust/quicack_core/Cargo.toml")
rust_version() { "$1/rustc" --version 2>/dev/null | sed -n 's/^rustc \([0-9][0-9.]*\).*/\1/p'; }
new_enough() { [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$rust_minimum" "$1" | sort -V | head -n 1)" = "$rust_minimum" ]; }
find_rust() {
  local dir dirs
  if [ -n "${QUICACK_RUST_DIRS:-}" ]; then
    IFS=: read -r -a dirs <<<"$QUICACK_RUST_DIRS"
  else
    dirs=("$(dirname "$(command -v cargo 2>/dev/null || echo /nonexistent/cargo)")" "$HOME/.cargo/bin" /usr/bin)
  fi
  for dir in "${dirs[@]}"; do
    if [ -x "$dir/cargo" ] && new_enough "$(rust_version "$dir")"; then echo "$dir"; return 0; fi
  done
  return 0
}
rust_cargo() { local dir=$1; shift; PATH="$dir:$PATH" "$dir/cargo" "$@"; }
