#!/usr/bin/env bash
# Builds the compiled QUIC clients of the testbed into src/implementations/<impl>/bin/.
# Idempotent: go and cargo rebuild only what changed, so a second run takes seconds.
# Versions are pinned by the committed go.mod/go.sum and Cargo.lock (--locked).
# Needs Go and Rust toolchains; the aioquic client is a Python script (aioquic from pip)
# and the ngtcp2 client is Debian's ngtcp2-client package (gtlsclient), so neither is built here.
#
# usage: src/implementations/build.sh [impl ...]     (default: every client the registry builds, then scanner)
#        src/implementations/build.sh --dry-run [impl ...]   prints what it would build, builds nothing
#        The clients and how each is built (Go or Cargo, folder, package or crate binary, output) come from the
#        client registry, src/quicack/testbed/client_registry.py (run as a script: standard library only).
#        scanner is the package's QScanner-compatible scan tool (quicack.testbed.scan), not a client.
#        quic-go builds the quic-go client and the imc24 IACK/WFC server (quic-go + iack.patch, below); quinn and
#        quiche copy their servers beside their clients (build_servers_beside).
#
# quiche compiles BoringSSL from source the first time (about 6 minutes on 2 cores; cargo keeps target/ for the
# next build) and needs cmake and libclang-dev (install.sh --dev installs them).
set -uo pipefail

CLIENTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REGISTRY="$CLIENTS_DIR/../quicack/testbed/client_registry.py"
DRY_RUN=0
if [ "${1:-}" = "--dry-run" ]; then DRY_RUN=1; shift; fi

# One line per client: <go|cargo|python|debian> <name> <fields...> (client_registry.build_lines).
if ! REGISTRY_LINES=$("${PYTHON:-python3}" "$REGISTRY" builds); then
    echo "build.sh: cannot read the client registry $REGISTRY (python3 >= 3.11 needed; or set PYTHON)" >&2
    exit 1
fi
declare -A BUILD_OF=()  # client -> "<go|cargo> <folder> <package or crate binary> <output> <version label>"
BUILT_CLIENTS=()
while read -r kind name rest; do
    case "$kind" in
        go | cargo) BUILD_OF[$name]="$kind $rest"; BUILT_CLIENTS+=("$name") ;;
    esac
done <<< "$REGISTRY_LINES"
ALL_IMPLS=("${BUILT_CLIENTS[@]}" scanner)
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
    local dir="$CLIENTS_DIR/$1" out="bin/$2" pkg="$3"
    if [ "$DRY_RUN" = 1 ]; then echo "would build $1/$out (go build $pkg in $1)"; return 0; fi
    if ! command -v go >/dev/null 2>&1; then
        echo "build.sh: $1: go not found (install Go >= 1.24)" >&2
        return 1
    fi
    (cd "$dir" && go build -trimpath -mod=readonly -o "$out" "$pkg") || {
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
    local dir="$CLIENTS_DIR/$1" crate_bin="$2" out="bin/$3"
    if [ "$DRY_RUN" = 1 ]; then echo "would build $1/$out (cargo build, binary $crate_bin, in $1)"; return 0; fi
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
    cmp -s "$dir/target/release/$crate_bin" "$dir/$out" ||
        cp "$dir/target/release/$crate_bin" "$dir/$out"
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

# What a client's folder builds besides the client: the testbed's server of that implementation.
build_servers_beside() {  # build_servers_beside <client>
    [ "$DRY_RUN" = 1 ] && return 0
    case "$1" in
        quic-go)
            build_quic_go_iack_server &&
                echo "built $CLIENTS_DIR/quic-go/bin/quic-go-server (imc24 IACK/WFC server: quic-go $("$CLIENTS_DIR/quic-go/bin/quic-go-server" --version))"
            ;;
        quinn)
            copy_cargo_bin quinn quinn-server quinn-server &&
                echo "built $CLIENTS_DIR/quinn/bin/quinn-server (hq-interop, for quinn <-> quinn captures)"
            ;;
        quiche)
            copy_cargo_bin quiche quiche-server quiche-server &&
                echo "built $CLIENTS_DIR/quiche/bin/quiche-server (h3 and hq-interop; the ACK-ratio study's sender)"
            ;;
    esac
}

# What a client's build needs besides the toolchain.
check_prerequisites() {  # check_prerequisites <client>
    case "$1" in
        quiche) check_quiche_prerequisites ;;
    esac
}

build_client() {  # build_client <client>: as the registry says (BUILD_OF)
    local kind folder from out label version
    read -r kind folder from out label <<< "${BUILD_OF[$1]}"
    [ "$DRY_RUN" = 1 ] || check_prerequisites "$1" || return 1
    case "$kind" in
        go) build_go "$folder" "$out" "$from" ;;
        cargo) build_cargo "$folder" "$from" "$out" ;;
    esac || return 1
    if [ "$DRY_RUN" = 0 ]; then
        version=$("$CLIENTS_DIR/$folder/bin/$out" --version)
        echo "built $CLIENTS_DIR/$folder/bin/$out (${label//\{\}/$version})"
    fi
    build_servers_beside "$1"
}

for impl in "${IMPLS[@]}"; do
    if [ -n "${BUILD_OF[$impl]:-}" ]; then
        build_client "$impl" || failed+=("$impl")
    elif [ "$impl" = scanner ]; then
        if [ "$DRY_RUN" = 1 ]; then
            build_go scanner scanner .
        else
            build_go scanner scanner . &&
                echo "built $CLIENTS_DIR/scanner/bin/scanner (quic-go $("$CLIENTS_DIR/scanner/bin/scanner" -print-version))" ||
                failed+=("$impl")
        fi
    else
        echo "build.sh: unknown client '$impl' (known: ${ALL_IMPLS[*]})" >&2
        failed+=("$impl")
    fi
done

# Not built here (the registry's Python scripts and Debian programs), but reported so that one command shows every
# client's state.
if [ "$#" -eq 0 ] && [ "$DRY_RUN" = 0 ]; then
    while read -r kind name first second; do
        case "$kind" in
            debian)  # <executable> <package>
                if command -v "$first" >/dev/null 2>&1; then
                    echo "found $(command -v "$first") ($name $(dpkg-query -W -f='${Version}' "$second" 2>/dev/null || echo unknown))"
                else
                    echo "note: $name client missing: apt-get install $second"
                fi
                ;;
            python)  # <script> <distribution>
                if "${PYTHON:-python3}" -c "import importlib.metadata as m; m.version('$second')" 2>/dev/null; then
                    echo "found $CLIENTS_DIR/$first ($second $("${PYTHON:-python3}" -c "import importlib.metadata as m; print(m.version('$second'))"))"
                else
                    echo "note: $name client needs the $second Python package"
                fi
                ;;
        esac
    done <<< "$REGISTRY_LINES"
fi

if [ "${#failed[@]}" -gt 0 ]; then
    echo "build.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
