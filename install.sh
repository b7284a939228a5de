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

# Resolved once: the Rust toolchain's folder goes first on PATH for the core's build below, and /usr/bin/python3 must
# not replace the Python of an active virtualenv or pyenv then.
python=$(command -v "${PYTHON:-python3}")
"$python" -c 'import sys; assert sys.version_info >= (3, 11), "quicack needs Python >= 3.11"'

apt_packages=(tshark tcpdump)
if [ $dev = 1 ]; then
  # The testbed: namespaces, NFQUEUE, captures, ngtcp2's example client/server; hyperfine for bench/.
  apt_packages+=(iproute2 iptables nftables ethtool procps libnetfilter-queue-dev python3-dev build-essential ngtcp2-client ngtcp2-server hyperfine time)
  # Debian's browsers as HTTP/3 clients of the testbed (quicack.testbed.browsers): Chromium (Google QUIC), Firefox ESR
  # (neqo), and certutil for Firefox's profile trusting the testbed's CA.
  apt_packages+=(chromium firefox-esr libnss3-tools)
  # Chromium's WebDriver: tests/test_report_html.py opens the HTML report in headless Chromium (selenium).
  apt_packages+=(chromium-driver)
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
"$python" -m quicack.layout.archive unpack --cached data/sample data/sample/raw
# The dataset recorded under the papers' conditions (config/paper.yaml, data/paper/README.md), kept as one archive
# per whole part of its recording, unpacked the same way.
if compgen -G "data/paper/*.tar.xz*" >/dev/null; then
  "$python" -m quicack.layout.archive unpack --cached data/paper data/paper/raw
fi

# The compiled core of the capture decoder and the qlog reader (rust/quicack_core: pyo3 + RustCrypto, built by
# maturin, pinned in its pyproject.toml; crates pinned by its Cargo.lock) needs Rust >= its Cargo.toml's
# rust-version. The first toolchain that is new enough is used (tools/find_rust.sh, which tests/run_all.sh uses too):
# cargo on PATH, ~/.cargo/bin (rustup), /usr/bin.
# When none is, Debian's rustc-web/cargo-web are installed (Debian 12 ships them beside its rustc 1.63, which is too
# old; they replace Debian's rustc/cargo packages if those are installed). Without any, quicack reads captures and
# qlogs in pure Python: the same tables, slower. A core built from the same sources is not built again. With --dev, a
# core that fails to build fails the install (at its end): the test suite requires the core where Rust can build it.
# shellcheck source=tools/find_rust.sh
source tools/find_rust.sh
core_failed=0
rust_dir=$(find_rust)
if [ -z "$rust_dir" ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  candidate=$(apt-cache policy rustc-web 2>/dev/null | sed -n 's/^ *Candidate: \([0-9][0-9.]*\).*/\1/p')
  if new_enough "$candidate"; then
    echo "install.sh: no Rust >= $rust_minimum: installing Debian's rustc-web and cargo-web $candidate" >&2
    apt-get install -y -qq --no-install-recommends rustc-web cargo-web >/dev/null
    rust_dir=$(find_rust)
  fi
fi
core_sources=$(find rust/quicack_core -path rust/quicack_core/target -prune -o -type f -print | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
core_stamp="${XDG_CACHE_HOME:-$HOME/.cache}/quicack/quicack_core-$("$python" -c 'import sys; print(sys.prefix)' | sha256sum | cut -c1-16)"
if [ -n "$rust_dir" ]; then
  if [ "$(cat "$core_stamp" 2>/dev/null)" = "$core_sources" ] && "$python" -c 'import quicack_core' 2>/dev/null; then
    echo "install.sh: quicack_core is built from these sources already ($core_sources)"
  else
    echo "install.sh: building quicack_core with $("$rust_dir/rustc" --version) ($rust_dir)"
    if PATH="$rust_dir:$PATH" "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        --force-reinstall --no-deps ./rust/quicack_core; then
      mkdir -p "$(dirname "$core_stamp")" && echo "$core_sources" >"$core_stamp"
    else
      echo "install.sh: building quicack_core failed: captures and qlogs are read in pure Python (same output, slower)" >&2
      core_failed=1
    fi
  fi
else
  echo "install.sh: no Rust >= $rust_minimum and none from Debian: quicack_core not built, captures and qlogs are read in pure Python" >&2
fi

if [ $dev = 1 ] && [ -x src/implementations/build.sh ]; then
  bash src/implementations/build.sh
fi
# What is in use now (`quicack doctor` says more: tshark, the testbed's programs found).
echo "installed: $("$python" -m quicack.cli --version)"
if [ $dev = 1 ] && [ $core_failed = 1 ]; then
  echo "install.sh --dev: quicack_core did not build with $rust_dir (see above): tests/run_all.sh requires it" >&2
  exit 1
fi
