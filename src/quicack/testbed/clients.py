"""The QUIC client programs of the testbed: how to run each one for a single download.

Every client downloads one URL, saves the body as ``download_dir / <basename of the URL path>``,
writes a TLS keylog (NSS ``SSLKEYLOGFILE`` format) and one qlog per connection into ``qlog_dir``.
The compiled clients live in ``src/implementations/<impl>/`` and are built by ``src/implementations/build.sh``.
``linux-tcp`` is not QUIC: the kernel's TCP through ``quicack.testbed.tcp_transfer`` (URL ``tcp://host:port/file``,
no keylog, no qlog), for the TCP side of the ACK-ratio study. ``chromium`` and ``firefox`` are Debian's browsers
(Google QUIC and neqo), HTTP/3 only, driven by ``quicack.testbed.browsers`` with the same contract (Chromium writes no
qlog: its NetLog is kept beside the keylog instead).

``client_command`` only builds the command line; the caller runs it (inside the client's network
namespace in the testbed) and enforces ``timeout_s`` on the whole process as well.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

from quicack.testbed import browsers
from quicack.testbed.ack_policy_receiver import AckPolicy
from quicack.testbed.receiver_ack_control import ngtcp2_client_options

H3 = "h3"
HQ = "hq"  # ALPN "hq-interop"
TCP = "tcp"  # a plain TCP byte stream (quicack.testbed.tcp_transfer), not QUIC
LINUX_TCP = "linux-tcp"

# Order: the imc24 testbed clients first, then the extra dialect for the qlog reader, then the browsers.
KNOWN_IMPLS: tuple[str, ...] = (
    "aioquic",
    "quic-go",
    "go-x-net",
    "ngtcp2",
    "quinn",
    "quiche",
    "quic-go-old",
    *browsers.BROWSERS,
)
# Every client the testbed runs: the QUIC ones above and the kernel's TCP (no keylog, no qlog).
TESTBED_CLIENTS: tuple[str, ...] = (*KNOWN_IMPLS, LINUX_TCP)

_PROTOCOLS: dict[str, frozenset[str]] = {
    "aioquic": frozenset({H3, HQ}),
    "quic-go": frozenset({H3, HQ}),
    "quic-go-old": frozenset({H3, HQ}),
    # golang.org/x/net/quic has no HTTP/3 layer.
    "go-x-net": frozenset({HQ}),
    # Debian ships ngtcp2's HTTP/3 example client only (no HTTP/0.9 "h09client").
    "ngtcp2": frozenset({H3}),
    "quinn": frozenset({H3, HQ}),
    "quiche": frozenset({H3, HQ}),
    browsers.CHROMIUM: frozenset({H3}),
    browsers.FIREFOX: frozenset({H3}),
    LINUX_TCP: frozenset({TCP}),
}
# Chromium's NetLog (its own log of the connection; it writes no qlog), beside the client's keylog, gzipped.
CHROMIUM_NETLOG = "chromium_netlog.json.gz"

# Binaries built by src/implementations/build.sh, relative to src/implementations/.
_BUILT_BINARIES: dict[str, str] = {
    "quic-go": "quic-go/bin/quic-go-client",
    "quic-go-old": "quic-go-old/bin/quic-go-old-client",
    "go-x-net": "go-x-net/bin/go-x-net-client",
    "quinn": "quinn/bin/quinn-client",
    # Optional (BoringSSL build): `src/implementations/build.sh quiche`.
    "quiche": "quiche/bin/quiche-client",
}
# Clients whose TLS stack offers a post-quantum key share by default (X25519MLKEM768: Go >= 1.24's crypto/tls,
# BoringSSL in quiche 0.30), so their ClientHello spans two Initial datagrams. ``key_share='x25519'`` makes them offer
# X25519 alone, a one-datagram ClientHello like the paper's 2024 clients (imc24 Table 4: every client's second
# flight starts at datagram 2). The other clients' default ClientHello fits one datagram already.
KEY_SHARE_CLIENTS = frozenset({"quic-go", "go-x-net", "quiche"})
KEY_SHARES = ("x25519",)
_AIOQUIC_SCRIPT = "aioquic/aioquic_client.py"
_NGTCP2_CLIENT = "gtlsclient"
_NGTCP2_DEBIAN_PACKAGE = "ngtcp2-client"


@dataclass(frozen=True)
class ClientRequest:
    impl: str  # one of TESTBED_CLIENTS
    url: str  # https://<host>:<port>/<file>
    app_protocol: str  # 'h3' or 'hq' (hq = ALPN "hq-interop")
    download_dir: Path  # body saved as download_dir / <basename of the URL path>
    keylog_path: Path
    qlog_dir: Path
    timeout_s: float = 30.0
    ack_policy: AckPolicy | None = None  # the receiver's ACK policy (aioquic only); None = the client's default
    # The PEM chain the server presents: the browsers need it (Chromium accepts its key, Firefox trusts its CA); the
    # other clients skip certificate verification. None: the testbed's small chain.
    server_chain: Path | None = None
    key_share: str | None = None  # 'x25519': offer X25519 alone (KEY_SHARE_CLIENTS); None = the client's default


def implementations_dir() -> Path:
    """Where the client programs are: ``src/implementations`` of this checkout, or ``$QUICACK_IMPLEMENTATIONS_DIR``."""
    override = os.environ.get("QUICACK_IMPLEMENTATIONS_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "implementations"


def supported_protocols(impl: str) -> frozenset[str]:
    """Application protocols ('h3', 'hq') that the client of `impl` can speak."""
    try:
        return _PROTOCOLS[impl]
    except KeyError:
        raise ValueError(f"unknown client implementation {impl!r}; known: {', '.join(TESTBED_CLIENTS)}") from None


def can_set_ack_policy(impl: str) -> bool:
    """Whether the testbed can set this client's ACK policy: aioquic's whole policy (a QuicConnection subclass,
    quicack.testbed.ack_policy_receiver), ngtcp2's ACK ratio (``--ack-thresh``) and Linux TCP's ACK ratio, from
    outside (quickack route, kernel default, router ACK thinning). A quinn client's is requested by the quinn
    server instead (quicack.testbed.receiver_ack_control)."""
    supported_protocols(impl)
    return impl in ("aioquic", "ngtcp2", LINUX_TCP)


def takes_key_share(impl: str) -> bool:
    """Whether the client's key shares can be set (``key_share``): those of KEY_SHARE_CLIENTS."""
    supported_protocols(impl)
    return impl in KEY_SHARE_CLIENTS


def url_scheme(impl: str) -> str:
    """The scheme of the URL the client of `impl` downloads: ``tcp`` for linux-tcp, else ``https``."""
    supported_protocols(impl)
    return "tcp" if impl == LINUX_TCP else "https"


def ack_policy_options(policy: AckPolicy) -> list[str]:
    """The aioquic client's command-line options for ``policy``."""
    delay = (["--ack-delay-ms", f"{policy.ack_delay_ms:g}"] if policy.ack_delay_ms is not None
             else ["--ack-delay-rtt-fraction", f"{policy.ack_delay_rtt_fraction:g}"])
    return ["--ack-ratio", str(policy.ack_ratio), *delay, "--reordering", policy.reordering]


def exit_status_is_reliable(impl: str) -> bool:
    """Whether a failed download makes the client exit non-zero (linux-tcp: yes, tcp_transfer exits 1).

    Debian's gtlsclient (ngtcp2 0.12) exits 0 even after a handshake timeout; for every client the
    downloaded file's hash is what decides success.
    """
    supported_protocols(impl)
    return impl != "ngtcp2"


def preferred_protocol(impl: str) -> str:
    """HTTP/3 where the client supports it, else hq-interop."""
    return H3 if H3 in supported_protocols(impl) else HQ


def client_executable(impl: str) -> Path | None:
    """The program that runs the client of `impl`, or None if it is not built/installed."""
    supported_protocols(impl)
    if impl == LINUX_TCP:
        return Path(__file__).with_name("tcp_transfer.py")
    if impl == "aioquic":
        script = implementations_dir() / _AIOQUIC_SCRIPT
        return script if script.is_file() else None
    if impl == "ngtcp2":
        found = shutil.which(_NGTCP2_CLIENT)
        return Path(found) if found else None
    if impl in browsers.BROWSERS:
        return browsers.executable(impl)
    binary = implementations_dir() / _BUILT_BINARIES[impl]
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def client_command(req: ClientRequest) -> tuple[list[str], dict[str, str]]:
    """argv and the extra environment variables that make the client of ``req.impl`` do ``req``.

    Creates ``download_dir``, ``qlog_dir`` and the keylog's directory, because some clients
    (ngtcp2) fail when they are missing and the others would each behave differently.
    """
    if req.app_protocol not in supported_protocols(req.impl):
        raise ValueError(
            f"{req.impl} client does not support {req.app_protocol!r} "
            f"(supports {', '.join(sorted(supported_protocols(req.impl)))})"
        )
    if req.impl == LINUX_TCP:
        # No keylog, no qlog: the kernel's TCP writes neither (the captures are the record).
        return [sys.executable, "-m", "quicack.testbed.tcp_transfer", "fetch", "--download-dir", str(req.download_dir),
                "--timeout", f"{req.timeout_s:g}", req.url], {}  # fmt: skip
    url = urlsplit(req.url)
    if url.scheme != "https" or not url.hostname or not url.port:
        raise ValueError(f"expected https://<host>:<port>/<file>, got {req.url!r}")
    if not url.path.rstrip("/"):
        raise ValueError(f"URL has no file path: {req.url!r}")
    if req.ack_policy is not None and not can_set_ack_policy(req.impl):
        raise ValueError(f"the {req.impl} client's ACK policy cannot be set on its command line (only aioquic's "
                         "and ngtcp2's)")
    if req.key_share is not None and (not takes_key_share(req.impl) or req.key_share not in KEY_SHARES):
        raise ValueError(f"the {req.impl} client cannot be set to key share {req.key_share!r} (clients "
                         f"{', '.join(sorted(KEY_SHARE_CLIENTS))}; shares {', '.join(KEY_SHARES)})")
    executable = client_executable(req.impl)
    if executable is None:
        raise FileNotFoundError(f"{req.impl} client is not built (run src/implementations/build.sh)")

    for directory in (req.download_dir, req.qlog_dir, req.keylog_path.parent):
        directory.mkdir(parents=True, exist_ok=True)

    if req.impl == "ngtcp2":
        return _ngtcp2_command(executable, req, url.hostname, url.port)
    if req.impl in browsers.BROWSERS:
        return _browser_command(req), {}

    options = [
        "--alpn", req.app_protocol,
        "--keylog", str(req.keylog_path),
        "--qlog-dir", str(req.qlog_dir),
        "--download-dir", str(req.download_dir),
    ]  # fmt: skip
    if req.key_share is not None:
        options += ["--key-share", req.key_share]
    if req.impl == "aioquic":
        if req.ack_policy is not None:
            options += ack_policy_options(req.ack_policy)
        return [sys.executable, str(executable), *options, "--timeout", f"{req.timeout_s:g}", req.url], {}
    if req.impl in ("quinn", "quiche"):
        return [str(executable), *options, "--timeout", f"{req.timeout_s:g}", req.url], {}
    # Go's flag package takes "--name value" as well as "-name value"; durations need a unit.
    # Without GSO every datagram is its own packet on the wire and in captures, whatever the
    # interface's offload settings (loopback accepts UDP GSO super-packets as they are).
    return [str(executable), *options, "--timeout", f"{req.timeout_s:g}s", req.url], {"QUIC_GO_DISABLE_GSO": "true"}


def _ngtcp2_command(executable: Path, req: ClientRequest, host: str, port: int) -> tuple[list[str], dict[str, str]]:
    # gtlsclient logs TLS secrets through GnuTLS, which reads SSLKEYLOGFILE; there is no flag.
    timeout_ms = max(1, round(req.timeout_s * 1000))
    argv = [
        str(executable),
        "--quiet",
        "--no-quic-dump",
        "--no-http-dump",
        "--exit-on-all-streams-close",
        f"--download={req.download_dir}",
        f"--qlog-dir={req.qlog_dir}",
        # An idle timeout; the caller bounds the whole run.
        f"--timeout={timeout_ms}ms",
        f"--handshake-timeout={timeout_ms}ms",
        *(ngtcp2_client_options(req.ack_policy) if req.ack_policy is not None else []),
        host,
        str(port),
        req.url,
    ]
    return argv, {"SSLKEYLOGFILE": str(req.keylog_path)}


def _browser_command(req: ClientRequest) -> list[str]:
    argv = [sys.executable, "-m", "quicack.testbed.browsers", "--browser", req.impl, "--keylog", str(req.keylog_path),
            "--qlog-dir", str(req.qlog_dir), "--download-dir", str(req.download_dir), "--timeout",
            f"{req.timeout_s:g}"]  # fmt: skip
    if req.impl == browsers.CHROMIUM:
        argv += ["--netlog", str(req.keylog_path.parent / CHROMIUM_NETLOG)]
    if req.server_chain is not None:
        argv += ["--server-chain", str(req.server_chain)]
    return [*argv, req.url]


def exit_grace_s(impl: str) -> float:
    """How long after its own timeout the client may take to exit. A browser quits cleanly after its download (so
    that its logs end whole; Firefox through a Marionette session), which takes up to 20 s on a busy 2-core machine."""
    supported_protocols(impl)
    return 10.0 + (browsers.QUIT_BUDGET_S if impl in browsers.BROWSERS else 0.0)


def writes_qlog(impl: str) -> bool:
    """Whether the client writes a qlog: all but Chromium (its NetLog, ``CHROMIUM_NETLOG`` beside the keylog, is
    its own format) and the kernel's TCP."""
    supported_protocols(impl)
    return impl not in (browsers.CHROMIUM, LINUX_TCP)


def confined_to_its_flow(impl: str) -> bool:
    """Whether the client's namespace lets only its QUIC flow to the server out (quicack.testbed.netns
    ``confine_client``): the browsers would otherwise reach out for updates, settings and, Firefox, race TCP to the
    server — packets of other connections in the captures."""
    supported_protocols(impl)
    return impl in browsers.BROWSERS


def client_versions() -> dict[str, str]:
    """impl -> version string, only for clients that are built or installed."""
    versions: dict[str, str] = {}
    for impl in TESTBED_CLIENTS:
        executable = client_executable(impl)
        if executable is None:
            continue
        version = _version_of(impl, executable)
        if version:
            versions[impl] = version
    return versions


def _version_of(impl: str, executable: Path) -> str | None:
    if impl == LINUX_TCP:
        return f"Linux {platform.release()} TCP"
    if impl == "aioquic":
        try:
            return f"aioquic {metadata.version('aioquic')}"
        except metadata.PackageNotFoundError:
            return None
    if impl in browsers.BROWSERS:
        return browsers.version(impl)
    if impl == "ngtcp2":
        # gtlsclient has no --version flag (-v selects the QUIC version).
        return _debian_package_version(_NGTCP2_DEBIAN_PACKAGE, prefix="ngtcp2 (Debian ngtcp2-client) ")
    try:
        out = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=10, check=True, encoding="utf-8"
        )
    except (OSError, subprocess.SubprocessError):
        return None
    version = out.stdout.strip()
    if impl in ("quic-go", "quic-go-old"):
        return f"quic-go {version}"
    if impl == "go-x-net":
        return f"golang.org/x/net {version}"
    return version or None


def _debian_package_version(package: str, prefix: str) -> str | None:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
            encoding="utf-8",
        )
    except (OSError, subprocess.SubprocessError):
        return f"{prefix.strip()} unknown"
    return prefix + out.stdout.strip()
