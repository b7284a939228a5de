"""The QUIC client programs of the testbed: how to run each one for a single download.

Every client downloads one URL, saves the body as ``download_dir / <basename of the URL path>``,
writes a TLS keylog (NSS ``SSLKEYLOGFILE`` format) and one qlog per connection into ``qlog_dir``.
Each client is declared once in ``quicack.testbed.client_registry`` (protocols, program, command line, qlog); this
module runs them. The compiled clients live in ``src/implementations/<impl>/`` and are built by
``src/implementations/build.sh``, which reads the registry.
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
from quicack.testbed.client_registry import (
    BROWSER,
    BY_NAME,
    CLIENTS,
    CONTRACT,
    GTLSCLIENT,
    H3,
    HQ,
    TCP,
    Browser,
    CargoBuild,
    Client,
    DebianProgram,
    GoBuild,
    Kernel,
    PythonScript,
)
from quicack.testbed.receiver_ack_control import ngtcp2_client_options

LINUX_TCP = "linux-tcp"

# Every client the testbed runs (quicack.testbed.client_registry): the QUIC ones and the kernel's TCP.
TESTBED_CLIENTS: tuple[str, ...] = tuple(client.name for client in CLIENTS)
# The QUIC clients: those with a keylog and, but Chromium, a qlog.
KNOWN_IMPLS: tuple[str, ...] = tuple(client.name for client in CLIENTS if TCP not in client.protocols)
# Chromium's NetLog (its own log of the connection; it writes no qlog), beside the client's keylog, gzipped.
CHROMIUM_NETLOG = "chromium_netlog.json.gz"
# Clients whose TLS stack offers a post-quantum key share by default (client_registry.Client.key_share).
KEY_SHARE_CLIENTS = frozenset(client.name for client in CLIENTS if client.key_share)
KEY_SHARES = ("x25519",)


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


def client_spec(impl: str) -> Client:
    """The registry's entry of `impl` (quicack.testbed.client_registry)."""
    try:
        return BY_NAME[impl]
    except KeyError:
        raise ValueError(f"unknown client implementation {impl!r}; known: {', '.join(TESTBED_CLIENTS)}") from None


def supported_protocols(impl: str) -> frozenset[str]:
    """Application protocols ('h3', 'hq') that the client of `impl` can speak."""
    return client_spec(impl).protocols


def can_set_ack_policy(impl: str) -> bool:
    """Whether the testbed can set this client's ACK policy: aioquic's whole policy (a QuicConnection subclass,
    quicack.testbed.ack_policy_receiver), ngtcp2's ACK ratio (``--ack-thresh``) and Linux TCP's ACK ratio, from
    outside (quickack route, kernel default, router ACK thinning). A quinn client's is requested by the quinn
    server instead (quicack.testbed.receiver_ack_control)."""
    return client_spec(impl).ack_policy


def takes_key_share(impl: str) -> bool:
    """Whether the client's key shares can be set (``key_share``): those of KEY_SHARE_CLIENTS."""
    return client_spec(impl).key_share


def url_scheme(impl: str) -> str:
    """The scheme of the URL the client of `impl` downloads: ``tcp`` for linux-tcp, else ``https``."""
    return "tcp" if TCP in supported_protocols(impl) else "https"


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
    return client_spec(impl).exit_status_is_reliable


def preferred_protocol(impl: str) -> str:
    """HTTP/3 where the client supports it, else hq-interop."""
    return H3 if H3 in supported_protocols(impl) else HQ


def client_executable(impl: str) -> Path | None:
    """The program that runs the client of `impl`, or None if it is not built/installed."""
    program = client_spec(impl).program
    if isinstance(program, Kernel):
        return Path(__file__).with_name("tcp_transfer.py")
    if isinstance(program, PythonScript):
        script = implementations_dir() / program.path
        return script if script.is_file() else None
    if isinstance(program, DebianProgram):
        found = shutil.which(program.executable)
        return Path(found) if found else None
    if isinstance(program, Browser):
        return browsers.executable(impl)
    binary = implementations_dir() / program.binary
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def client_command(req: ClientRequest) -> tuple[list[str], dict[str, str]]:
    """argv and the extra environment variables that make the client of ``req.impl`` do ``req``.

    Creates ``download_dir``, ``qlog_dir`` and the keylog's directory, because some clients
    (ngtcp2) fail when they are missing and the others would each behave differently.
    """
    spec = client_spec(req.impl)
    if req.app_protocol not in spec.protocols:
        raise ValueError(
            f"{req.impl} client does not support {req.app_protocol!r} "
            f"(supports {', '.join(sorted(spec.protocols))})"
        )
    if isinstance(spec.program, Kernel):
        # No keylog, no qlog: the kernel's TCP writes neither (the captures are the record).
        return [sys.executable, "-m", "quicack.testbed.tcp_transfer", "fetch", "--download-dir", str(req.download_dir),
                "--timeout", f"{req.timeout_s:g}", req.url], {}  # fmt: skip
    url = urlsplit(req.url)
    if url.scheme != "https" or not url.hostname or not url.port:
        raise ValueError(f"expected https://<host>:<port>/<file>, got {req.url!r}")
    if not url.path.rstrip("/"):
        raise ValueError(f"URL has no file path: {req.url!r}")
    if req.ack_policy is not None and not spec.ack_policy:
        raise ValueError(f"the {req.impl} client's ACK policy cannot be set on its command line (only aioquic's "
                         "and ngtcp2's)")
    if req.key_share is not None and (not spec.key_share or req.key_share not in KEY_SHARES):
        raise ValueError(f"the {req.impl} client cannot be set to key share {req.key_share!r} (clients "
                         f"{', '.join(sorted(KEY_SHARE_CLIENTS))}; shares {', '.join(KEY_SHARES)})")
    executable = client_executable(req.impl)
    if executable is None:
        raise FileNotFoundError(f"{req.impl} client is not built (run src/implementations/build.sh)")

    for directory in (req.download_dir, req.qlog_dir, req.keylog_path.parent):
        directory.mkdir(parents=True, exist_ok=True)

    if spec.command_line == GTLSCLIENT:
        return _ngtcp2_command(executable, req, url.hostname, url.port)
    if spec.command_line == BROWSER:
        return _browser_command(req), {}
    if spec.command_line != CONTRACT:
        raise ValueError(f"{req.impl}: no command line of kind {spec.command_line!r}")

    options = [
        "--alpn", req.app_protocol,
        "--keylog", str(req.keylog_path),
        "--qlog-dir", str(req.qlog_dir),
        "--download-dir", str(req.download_dir),
    ]  # fmt: skip
    if req.key_share is not None:
        options += ["--key-share", req.key_share]
    if req.ack_policy is not None:
        options += ack_policy_options(req.ack_policy)
    launcher = [sys.executable] if isinstance(spec.program, PythonScript) else []
    timeout = f"{req.timeout_s:g}{spec.timeout_unit}"
    return [*launcher, str(executable), *options, "--timeout", timeout, req.url], dict(spec.environment)


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
    return 10.0 + (browsers.QUIT_BUDGET_S if isinstance(client_spec(impl).program, Browser) else 0.0)


def writes_qlog(impl: str) -> bool:
    """Whether the client writes a qlog: all but Chromium (its NetLog, ``CHROMIUM_NETLOG`` beside the keylog, is
    its own format) and the kernel's TCP."""
    return client_spec(impl).qlog is not None


def confined_to_its_flow(impl: str) -> bool:
    """Whether the client's namespace lets only its QUIC flow to the server out (quicack.testbed.netns
    ``confine_client``): the browsers would otherwise reach out for updates, settings and, Firefox, race TCP to the
    server — packets of other connections in the captures."""
    return isinstance(client_spec(impl).program, Browser)


def client_versions() -> dict[str, str]:
    """impl -> version string, only for clients that are built or installed."""
    versions: dict[str, str] = {}
    for impl in TESTBED_CLIENTS:
        executable = client_executable(impl)
        if executable is None:
            continue
        version = _version_of(client_spec(impl), executable)
        if version:
            versions[impl] = version
    return versions


def _version_of(spec: Client, executable: Path) -> str | None:
    program = spec.program
    if isinstance(program, Kernel):
        return f"Linux {platform.release()} TCP"
    if isinstance(program, PythonScript):
        try:
            return f"{program.distribution} {metadata.version(program.distribution)}"
        except metadata.PackageNotFoundError:
            return None
    if isinstance(program, Browser):
        return browsers.version(spec.name)
    if isinstance(program, DebianProgram):
        # gtlsclient has no --version flag (-v selects the QUIC version): the package's version is the client's.
        return _debian_package_version(program.package, prefix=f"{spec.name} (Debian {program.package}) ")
    assert isinstance(program, (GoBuild, CargoBuild))
    try:
        out = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=10, check=True, encoding="utf-8"
        )
    except (OSError, subprocess.SubprocessError):
        return None
    version = out.stdout.strip()
    return spec.version_label.format(version) if version else None


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
