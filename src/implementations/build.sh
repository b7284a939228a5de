#!/usr/bin/env bash
# Builds the compiled QUIC clients of the testbed into src/implementations/<impl>/bin/.
# Idempotent: go and cargo rebuild only what changed, so a second run takes seconds.
# Versions are pinned by the committed go.mod/go.sum and Cargo.lock (--locked).
# Needs Go and Rust toolchains; the aioquic client is a Python script (aioquic from pip)
# and the ngtcp2 client is Debian's ngtcp2-client package (gtlsclient), so neither is built here.
#
# usage: src/implementations/build.sh [impl ...]     (default: all of quic-go quic-go-old go-x-net quinn quiche scanner)
#        scanner is the package's QScanner-compatible scan tool (quicack.testbed.scan), not a client.
#        quic-go builds the quic-go client and the imc24 IACK/WFC server (quic-go + iack.patch, below).
#
# quiche compiles BoringSSL from source the first time (about 6 minutes on 2 cores; cargo keeps target/ for the
# next build) and needs cmake and libclang-dev (install.sh --dev installs them).
set -uo pipefail

CLIENTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ALL_IMPLS=(quic-go quic-go-old go-x-net quinn quiche scanner)
if [ "$#" -gt 0 ]; then IMPLS=("$@"); else IMPLS=("${ALL_IMPLS[@]}"); fi

# The Go toolchain is often installed outside PATH.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    export PATH="$PATH:/usr/local/go/bin"
fi
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$PATH:$HOME/.cargo/bin"
fi

failed=()

build_go() {  # build_go <impl dir> <output name> <package>
    local dir="$CLIENTS_DIR/$1" out="$2" pkg="$3"
    if ! command -v go >/dev/null 2>&1; then
        echo "build.sh: $1: go not found (install Go >= 1.24)" >&2
        return 1
    fi
    (cd "$dir" && go build -trimpath -mod=readonly -o "bin/$out" "$pkg") || {
        echo "build.sh: $1: go build failed" >&2
        return 1
    }
}

# The imc24 IACK/WFC server: the pinned quic-go (go.mod) copied from the module cache into quic-go/build/quic-go,
# patched with quic-go/iack.patch (our change; --fuzz=0: a hunk that does not apply exactly fails the build, naming
# the version, so that a new quic-go pin cannot silently lose the modes), then cmd/server built against the copy
# (go.iack.mod: replace => ./build/quic-go). The copy is made afresh each time; Go's build cache keeps it cheap.
build_quic_go_iack_server() {
    local dir="$CLIENTS_DIR/quic-go" version src patch_sha
    if ! command -v go >/dev/null 2>&1; then
        echo "build.sh: quic-go: go not found (install Go >= 1.26)" >&2
        return 1
    fi
    command -v patch >/dev/null 2>&1 || { echo "build.sh: quic-go: patch not found (apt-get install patch)" >&2; return 1; }
    version=$(cd "$dir" && go list -mod=readonly -m -f '{{.Version}}' github.com/quic-go/quic-go) &&
        (cd "$dir" && go mod download github.com/quic-go/quic-go) &&
        src=$(cd "$dir" && go list -mod=readonly -m -f '{{.Dir}}' github.com/quic-go/quic-go) || {
        echo "build.sh: quic-go: cannot fetch the pinned quic-go from the Go module proxy" >&2
        return 1
    }
    rm -rf "$dir/build/quic-go" && mkdir -p "$dir/build" && cp -r "$src" "$dir/build/quic-go" && chmod -R u+w "$dir/build/quic-go" || return 1
    if ! patch -d "$dir/build/quic-go" -p1 --forward --batch --fuzz=0 --quiet < "$dir/iack.patch"; then
        echo "build.sh: quic-go: FAILED: iack.patch does not apply to quic-go $version; update the patch for this version" >&2
        return 1
    fi
    patch_sha=$(sha256sum "$dir/iack.patch" | cut -d' ' -f1)
    (cd "$dir" && go build -trimpath -mod=readonly -modfile=go.iack.mod -tags quicack_iack \
        -ldflags "-X main.quicGoVersion=$version -X main.patchSHA256=$patch_sha" -o bin/quic-go-server ./cmd/server) || {
        echo "build.sh: quic-go: go build of the IACK/WFC server failed" >&2
        return 1
    }
}

build_cargo() {  # build_cargo <impl dir> <crate binary> <output name>
    local dir="$CLIENTS_DIR/$1" crate_bin="$2" out="$3"
    if ! command -v cargo >/dev/null 2>&1; then
        echo "build.sh: $1: cargo not found (install Rust >= 1.88)" >&2
        return 1
    fi
    (cd "$dir" && cargo build --release --locked --quiet) || {
        echo "build.sh: $1: cargo build failed" >&2
        return 1
    }
    mkdir -p "$dir/bin"
    # Copy only when changed so that the binary's mtime tells when it was last rebuilt.
    cmp -s "$dir/target/release/$crate_bin" "$dir/bin/$out" ||
        cp "$dir/target/release/$crate_bin" "$dir/bin/$out"
}

copy_cargo_bin() {  # copy_cargo_bin <impl dir> <crate binary> <output name>: another binary of an already built crate
    local dir="$CLIENTS_DIR/$1" crate_bin="$2" out="$3"
    cmp -s "$dir/target/release/$crate_bin" "$dir/bin/$out" ||
        cp "$dir/target/release/$crate_bin" "$dir/bin/$out"
}

check_quiche_prerequisites() {
    local missing=()
    command -v cmake >/dev/null 2>&1 || missing+=(cmake)
    # bindgen (boring-sys) loads libclang.so itself; libclang-cpp (installed with other LLVM packages) is not it.
    ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/x86_64-linux-gnu/libclang-[0-9]*.so* >/dev/null 2>&1 ||
        missing+=(libclang-dev)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "build.sh: quiche: missing ${missing[*]} (apt-get install ${missing[*]})" >&2
        return 1
    fi
}

for impl in "${IMPLS[@]}"; do
    case "$impl" in
        quic-go)
            build_go quic-go quic-go-client ./cmd/client &&
                build_quic_go_iack_server &&
                echo "built $CLIENTS_DIR/quic-go/bin/quic-go-client (quic-go $("$CLIENTS_DIR/quic-go/bin/quic-go-client" --version))" &&
                echo "built $CLIENTS_DIR/quic-go/bin/quic-go-server (imc24 IACK/WFC server: quic-go $("$CLIENTS_DIR/quic-go/bin/quic-go-server" --version))" ||
                failed+=("$impl")
            ;;
        quic-go-old)
            build_go quic-go-old quic-go-old-client ./cmd/client &&
                echo "built $CLIENTS_DIR/quic-go-old/bin/quic-go-old-client (quic-go $("$CLIENTS_DIR/quic-go-old/bin/quic-go-old-client" --version))" ||
                failed+=("$impl")
            ;;
        go-x-net)
            build_go go-x-net go-x-net-client ./cmd/client &&
                echo "built $CLIENTS_DIR/go-x-net/bin/go-x-net-client (golang.org/x/net $("$CLIENTS_DIR/go-x-net/bin/go-x-net-client" --version))" ||
                failed+=("$impl")
            ;;
        scanner)
            build_go scanner scanner . &&
                echo "built $CLIENTS_DIR/scanner/bin/scanner (quic-go $("$CLIENTS_DIR/scanner/bin/scanner" -print-version))" ||
                failed+=("$impl")
            ;;
        quinn)
            build_cargo quinn quicack-quinn-client quinn-client &&
                copy_cargo_bin quinn quinn-server quinn-server &&
                echo "built $CLIENTS_DIR/quinn/bin/quinn-client ($("$CLIENTS_DIR/quinn/bin/quinn-client" --version))" &&
                echo "built $CLIENTS_DIR/quinn/bin/quinn-server (hq-interop, for quinn <-> quinn captures)" ||
                failed+=("$impl")
            ;;
        quiche)
            check_quiche_prerequisites &&
                build_cargo quiche quicack-quiche-client quiche-client &&
                copy_cargo_bin quiche quiche-server quiche-server &&
                echo "built $CLIENTS_DIR/quiche/bin/quiche-client ($("$CLIENTS_DIR/quiche/bin/quiche-client" --version))" &&
                echo "built $CLIENTS_DIR/quiche/bin/quiche-server (h3 and hq-interop; the ACK-ratio study's sender)" ||
                failed+=("$impl")
            ;;
        *)
            echo "build.sh: unknown client '$impl' (known: quic-go quic-go-old go-x-net quinn quiche scanner)" >&2
            failed+=("$impl")
            ;;
    esac
done

# Not built here, but reported so that one command shows every client's state.
if [ "$#" -eq 0 ]; then
    if command -v gtlsclient >/dev/null 2>&1; then
        echo "found $(command -v gtlsclient) (ngtcp2 $(dpkg-query -W -f='${Version}' ngtcp2-client 2>/dev/null || echo unknown))"
    else
        echo "note: ngtcp2 client missing: apt-get install ngtcp2-client ngtcp2-server"
    fi
    if python3 -c 'import aioquic' 2>/dev/null; then
        echo "found $CLIENTS_DIR/aioquic/aioquic_client.py (aioquic $(python3 -c 'import aioquic; print(aioquic.__version__)'))"
    else
        echo "note: aioquic client needs the aioquic Python package"
    fi
fi

if [ "${#failed[@]}" -gt 0 ]; then
    echo "build.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
