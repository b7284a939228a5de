#!/usr/bin/env bash
# Installs what quicack needs on a fresh Debian 12 machine with Python 3.11, as root.
#   bash install.sh          the pipeline: Debian packages + the Python package (pinned)
#   bash install.sh --dev    also test tools, the testbed's packages, the QUIC client and server programs (quiche's
#                            BoringSSL: ~6 min the first time on 2 cores) and SLURM (the executor plugin; slurm-wlm
#                            and munge for tests/test_slurm.py's one-node cluster)
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")"

dev=0
[ "${1:-}" = "--dev" ] && dev=1

python=${PYTHON:-python3}
"$python" -c 'import sys; assert sys.version_info >= (3, 11), "quicack needs Python >= 3.11"'

apt_packages=(tshark tcpdump)
if [ $dev = 1 ]; then
  # The testbed: namespaces, NFQUEUE, captures, ngtcp2's example client/server; hyperfine for bench/.
  apt_packages+=(iproute2 iptables nftables ethtool procps libnetfilter-queue-dev python3-dev build-essential ngtcp2-client ngtcp2-server hyperfine time)
  # src/implementations/build.sh: patch applies quic-go/iack.patch (imc24's IACK/WFC server); cmake and libclang-dev
  # build BoringSSL for the quiche client (bindgen loads libclang.so itself).
  apt_packages+=(patch cmake libclang-dev)
  # SLURM for tests/test_slurm.py, which starts its own munged, slurmctld and slurmd on a generated configuration
  # (the packages' own services are not used).
  apt_packages+=(slurm-wlm munge)
fi
missing=()
for package in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

extras=""
[ $dev = 1 ] && extras="[dev,testbed,cluster]"
"$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -e ".${extras}"
"$python" -m ipykernel install --sys-prefix --name python3 >/dev/null
# An editable install leaves the package's bytecode to the first run, which cannot write it where
# PYTHONDONTWRITEBYTECODE is set: every `quicack` start would compile our modules again (~30 ms, a seventh of
# `quicack pcap` on one small capture). Compile them once here.
"$python" -m compileall -q src/quicack >/dev/null || true
# The embedded dataset is kept in git as one archive (quicack.layout.archive); the pipeline, the tests and the
# testbed read the raw folder it unpacks to: in the user's cache (~/.cache/quicack), linked as data/sample/raw, so
# that data/ holds only what git tracks (a folder of one's own recordings there is left alone).
"$python" -m quicack.layout.archive unpack --cached data/sample/raw.tar.xz data/sample/raw

# The capture decoder's compiled core (rust/quicack_core: pyo3 + RustCrypto, built by maturin, pinned in its
# pyproject.toml; crates pinned by its Cargo.lock). Like src/implementations/build.sh, it uses the cargo on PATH
# or in ~/.cargo/bin and needs Rust >= 1.85 (Debian 12's rustc 1.63 is too old; rustup is up to the user).
# Without it quicack decodes captures in pure Python: the same tables, slower.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$PATH:$HOME/.cargo/bin"
fi
rust_minor=$(rustc --version 2>/dev/null | sed -n 's/^rustc 1\.\([0-9]*\).*/\1/p')
if [ -n "$rust_minor" ] && [ "$rust_minor" -ge 85 ]; then
  "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore ./rust/quicack_core ||
    echo "install.sh: building quicack_core failed: captures are decoded in pure Python (same output, slower)" >&2
else
  echo "install.sh: no Rust >= 1.85 (cargo): quicack_core not built, captures are decoded in pure Python" >&2
fi

if [ $dev = 1 ] && [ -x src/implementations/build.sh ]; then
  bash src/implementations/build.sh
fi
echo "quicack installed ($("$python" -c 'import quicack; print(quicack.__version__)'); capture decoder engine: $("$python" -c 'from quicack.pcap.engine import select_engine; print(select_engine().name)'); qlog reader: $("$python" -c 'from quicack.qlog.engine import lane_class; print("compiled" if lane_class() else "python")'))"
