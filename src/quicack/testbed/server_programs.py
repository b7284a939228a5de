"""The QUIC server programs of the testbed: how to run each one, when it is ready, what it is.

Two servers have imc24's handshake modes (``mode`` 'iack' / 'wfc', or 'none' for the implementation as released)
and its certificate-store delay Δt (``cert_delay_ms``):

* ``quic-go`` — **imc24's server**: ``src/implementations/quic-go/bin/quic-go-server``, quic-go v0.65.0 with our
  patch (``src/implementations/quic-go/iack.patch``: IACK sends an ACK-only Initial for the client's first Initial at
  once; WFC sends nothing before the ServerHello, which carries the ACK; Δt holds the ClientHello back from TLS;
  ``server_hello_hold_ms`` holds the first flight until that long after TLS got the ClientHello, an emulated
  stack delay). h3 and hq-interop, GSO off like the client. Every imc24 scenario runs on it; in mode 'none' it is
  quic-go as released (imc24 Table 3's quic-go row).
* ``aioquic`` — ``python -m quicack.testbed.iack_wfc_server``: aioquic 1.7.2 with the same modes emulated in a
  ``QuicConnection`` subclass; the sender of the ACK-ratio study and, in mode 'none', Table 3's aioquic row.

The others serve the run's file with their implementation's defaults, for imc24 Table 3 (the ACK Delay of the
server's first ACKs) and the ACK-ratio study:

* ``quinn`` — ``src/implementations/quinn/bin/quinn-server`` (hq-interop only); with a receiver ACK policy it asks
  the quinn client for it with ACK_FREQUENCY frames (quicack.testbed.receiver_ack_control);
* ``ngtcp2`` — Debian's ``gtlsserver`` (``ngtcp2-server``; HTTP/3 only), one datagram per GSO call;
* ``quiche`` — ``src/implementations/quiche/bin/quiche-server`` (h3 and hq-interop), the ACK-ratio study's sender.

The senders' congestion control and pacing (``SENDER_SETTINGS``): the aioquic server takes Reno or CUBIC and its
pacer on or off; quiche takes Reno or CUBIC and never paces them (quiche 0.30 paces only its BBR); with Reno the
testbed switches quiche's HyStart++ off, so that quiche's Reno is RFC 9002's NewReno as in quicly, the ACK-ratio
papers' sender (ackfreq22 §4.1, §5.5; rethink §VII); quinn takes NewReno, CUBIC or BBR and always paces (its
token-bucket pacer has no off switch). quic-go and ngtcp2 run as they are.

All of them serve the testbed's certificate chain (``--cert-size``), write a TLS keylog (NSS format) and a qlog
into the run's ``server/`` folder. For another client program (a browser driver) the interface is
``ServerRequest`` → ``server_command`` (argv, environment) → start it in the server namespace → ``is_ready`` →
``server_info`` (run.json's server fields); ``quicack.testbed.run.execute_run`` does exactly that for every run.
``linux-tcp`` is the kernel's TCP (``python -m quicack.testbed.tcp_transfer serve``):
no certificate, keylog or qlog; it is ready once it listens on the TCP port. ``server_command`` only builds the command
line; the runner starts it in the
server namespace and waits for ``ready`` before starting the client.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quicack.testbed.ack_policy_receiver import AckPolicy
from quicack.testbed.certs import CERT_SIZES, cert_paths
from quicack.testbed.clients import H3, HQ, LINUX_TCP, TCP, implementations_dir
from quicack.testbed.receiver_ack_control import quinn_server_options

KNOWN_SERVERS: tuple[str, ...] = ("aioquic", "quic-go", "quinn", "ngtcp2", "quiche")
# Every server the testbed runs: the QUIC ones above and the kernel's TCP (no certificate, keylog or qlog).
TESTBED_SERVERS: tuple[str, ...] = (*KNOWN_SERVERS, LINUX_TCP)
_PROTOCOLS: dict[str, frozenset[str]] = {
    "aioquic": frozenset({H3, HQ}),
    "quic-go": frozenset({H3, HQ}),
    # quinn-server answers "GET /path" on bidirectional streams only.
    "quinn": frozenset({HQ}),
    # gtlsserver is ngtcp2's HTTP/3 example server.
    "ngtcp2": frozenset({H3}),
    "quiche": frozenset({H3, HQ}),
    LINUX_TCP: frozenset({TCP}),
}
_BUILT_BINARIES = {"quic-go": "quic-go/bin/quic-go-server", "quinn": "quinn/bin/quinn-server",
                   "quiche": "quiche/bin/quiche-server"}
_NGTCP2_SERVER = "gtlsserver"
_NGTCP2_DEBIAN_PACKAGE = "ngtcp2-server"
# Initial RTT before the first sample, per implementation default (server_initial_rtt_ms in run.json); the
# first PTO is 3x that (RFC 9002: srtt + 4 * srtt/2). aioquic 1.7 and quic-go take 2x (their servers report it).
_DEFAULT_INITIAL_RTT_MS = {"quinn": 333.0, "ngtcp2": 333.0, "quiche": 333.0}
# Servers with imc24's handshake modes and Δt; quic-go's (patched) also holds its first flight
# (server_hello_hold_ms); aioquic's also takes sender settings.
_MODAL_SERVERS = ("quic-go", "aioquic")
# Servers that describe themselves in the ready file once they listen.
_SELF_DESCRIBING = ("aioquic", "quic-go", LINUX_TCP)


@dataclass(frozen=True)
class SenderSettings:
    """What a server's congestion control and pacing can be set to: the congestion controllers it takes (None = no
    setting), its default one, and which pacing values it can run with."""

    congestion_controls: tuple[str, ...] | None
    default_congestion_control: str | None
    pacing: tuple[bool, ...]


SENDER_SETTINGS: dict[str, SenderSettings] = {
    "aioquic": SenderSettings(("reno", "cubic"), "reno", (True, False)),
    # quiche 0.30 paces with BBR only (gcongestion); its Reno and CUBIC send each window as it opens.
    "quiche": SenderSettings(("reno", "cubic"), "cubic", (False,)),
    # quinn-proto's Pacer has no switch.
    "quinn": SenderSettings(("newreno", "cubic", "bbr"), "cubic", (True,)),
    "quic-go": SenderSettings(None, "cubic", (True,)),
    # gtlsserver --cc; ngtcp2 paces every controller (cwnd / smoothed RTT, ngtcp2_conn_update_pkt_tx_time).
    "ngtcp2": SenderSettings(("reno", "cubic", "bbr"), "cubic", (True,)),
}


@dataclass(frozen=True)
class ServerRequest:
    impl: str  # one of TESTBED_SERVERS
    host: str
    port: int
    cert_size: str  # 'small' | 'large'
    www: Path  # served files
    qlog_dir: Path
    keylog_path: Path
    ready_file: Path  # aioquic writes its server info here once listening
    mode: str = "none"  # quic-go and aioquic: 'iack' | 'wfc' | 'none'
    cert_delay_ms: float = 0.0  # quic-go and aioquic: Δt
    server_hello_hold_ms: float = (
        0.0  # quic-go only: the first flight no earlier than this after TLS got the ClientHello
    )
    initial_rtt_ms: float | None = None  # aioquic only
    congestion_control: str | None = None  # SENDER_SETTINGS (None: the implementation's default)
    pacing: bool | None = None  # None: the server's own (SENDER_SETTINGS); the aioquic server's pacer on/off
    ack_policy: AckPolicy | None = None  # quinn only: the ACK policy to request of the client (ACK_FREQUENCY)


def supported_protocols(impl: str) -> frozenset[str]:
    try:
        return _PROTOCOLS[impl]
    except KeyError:
        raise ValueError(f"unknown server implementation {impl!r}; known: {', '.join(TESTBED_SERVERS)}") from None


def has_handshake_modes(impl: str) -> bool:
    """Whether the server has IACK/WFC (and Δt); the others run as their implementation does."""
    supported_protocols(impl)
    return impl in _MODAL_SERVERS


def holds_server_hello(impl: str) -> bool:
    """Whether the server can hold its first flight back by an emulated stack delay (``server_hello_hold_ms``)."""
    supported_protocols(impl)
    return impl == "quic-go"


def check_sender_settings(impl: str, congestion_control: str | None, pacing: bool | None) -> None:
    """ValueError unless the server ``impl`` can run with this congestion controller and pacing (SENDER_SETTINGS;
    None: its own)."""
    supported_protocols(impl)
    settings = SENDER_SETTINGS.get(impl)
    if settings is None:
        if congestion_control is not None or pacing is False:
            raise ValueError(f"server_congestion_control / server_pacing: the {impl} server has no sender settings")
        return
    if congestion_control is not None and congestion_control not in (settings.congestion_controls or ()):
        takes = ", ".join(settings.congestion_controls) if settings.congestion_controls else "none (it runs its own)"
        raise ValueError(f"server_congestion_control {congestion_control!r}: the {impl} server takes {takes}")
    if pacing is not None and pacing not in settings.pacing:
        raise ValueError(
            f"server_pacing {str(pacing).lower()}: the {impl} server "
            f"{'always paces' if pacing is False else 'cannot pace with reno or cubic'}"
            " (quicack.testbed.server_programs.SENDER_SETTINGS)"
        )


def sender_of(impl: str, congestion_control: str | None, pacing: bool | None) -> dict[str, Any]:
    """What run.json records about the server as a sender: its congestion controller (the configured one, else the
    implementation's default) and whether it paced; null where not known."""
    settings = SENDER_SETTINGS.get(impl)
    if settings is None:
        return {"congestion_control": None, "pacing": None}
    own_pacing = settings.pacing[0] if len(settings.pacing) == 1 else True  # aioquic paces unless switched off
    return {"congestion_control": congestion_control or settings.default_congestion_control,
            "pacing": own_pacing if pacing is None else pacing}


def server_executable(impl: str) -> Path | None:
    """The program that runs the server of `impl` (None if it is not built/installed)."""
    supported_protocols(impl)
    if impl in ("aioquic", LINUX_TCP):
        return Path(sys.executable)
    if impl == "ngtcp2":
        found = shutil.which(_NGTCP2_SERVER) or (Path("/usr/sbin") / _NGTCP2_SERVER).as_posix()
        return Path(found) if Path(found).is_file() else None
    binary = implementations_dir() / _BUILT_BINARIES[impl]
    return binary if binary.is_file() else None


def server_command(req: ServerRequest) -> tuple[list[str], dict[str, str]]:
    """argv and extra environment variables that start the server of ``req.impl`` for one run."""
    executable = server_executable(req.impl)
    if executable is None:
        raise FileNotFoundError(
            f"{req.impl} server is not built/installed (src/implementations/build.sh; apt ngtcp2-server)"
        )
    if req.impl == LINUX_TCP:
        argv = [str(executable), "-m", "quicack.testbed.tcp_transfer", "serve", "--host", req.host,
                "--port", str(req.port), "--www", str(req.www), "--ready-file", str(req.ready_file)]  # fmt: skip
        return argv, {}
    for directory in (req.qlog_dir, req.keylog_path.parent):
        directory.mkdir(parents=True, exist_ok=True)
    if req.server_hello_hold_ms and not holds_server_hello(req.impl):
        raise ValueError(f"the {req.impl} server cannot hold its ServerHello (server_hello_hold_ms: only quic-go's)")
    if req.mode != "none" and not has_handshake_modes(req.impl):
        raise ValueError(f"the {req.impl} server has no handshake modes (mode {req.mode!r})")
    if req.impl == "aioquic":
        argv = [
            str(executable), "-m", "quicack.testbed.iack_wfc_server",
            "--host", req.host, "--port", str(req.port),
            "--cert-size", req.cert_size, "--mode", req.mode, "--cert-delay-ms", f"{req.cert_delay_ms:g}",
            "--www", str(req.www), "--qlog-dir", str(req.qlog_dir),
            "--keylog", str(req.keylog_path), "--ready-file", str(req.ready_file),
        ]  # fmt: skip
        if req.initial_rtt_ms is not None:
            argv += ["--initial-rtt-ms", f"{req.initial_rtt_ms:g}"]
        if req.congestion_control is not None:
            argv += ["--congestion-control", req.congestion_control]
        if req.pacing is False:
            argv.append("--no-pacing")
        return argv, {}
    check_sender_settings(req.impl, req.congestion_control, req.pacing)
    if req.ack_policy is not None and req.impl != "quinn":
        raise ValueError(f"the {req.impl} server cannot request an ACK policy (only quinn's, with ACK_FREQUENCY)")
    certs = cert_paths(req.cert_size)
    if req.impl == "quic-go":
        argv = [
            str(executable), "--listen", f"{req.host}:{req.port}", "--cert", str(certs.chain), "--key", str(certs.key),
            "--www", str(req.www), "--keylog", str(req.keylog_path), "--qlog-dir", str(req.qlog_dir),
            "--mode", req.mode, "--ready-file", str(req.ready_file),
        ]  # fmt: skip
        if req.mode != "none":
            argv += [
                "--cert-delay-ms",
                f"{req.cert_delay_ms:g}",
                "--server-hello-hold-ms",
                f"{req.server_hello_hold_ms:g}",
            ]
        return argv, {"QUIC_GO_DISABLE_GSO": "true"}
    if req.impl == "quinn":
        argv = [
            str(executable), "--listen", f"{req.host}:{req.port}", "--root", str(req.www),
            "--cert", str(certs.chain), "--key", str(certs.key),
            "--keylog", str(req.keylog_path), "--qlog-dir", str(req.qlog_dir),
        ]  # fmt: skip
        if req.ack_policy is not None:
            argv += quinn_server_options(req.ack_policy)
        if req.congestion_control is not None:
            argv += ["--congestion-control", req.congestion_control]
        return argv, {}
    if req.impl == "quiche":
        congestion_control = req.congestion_control or SENDER_SETTINGS["quiche"].default_congestion_control
        argv = [
            str(executable), "--listen", f"{req.host}:{req.port}", "--root", str(req.www),
            "--cert", str(certs.chain), "--key", str(certs.key),
            "--keylog", str(req.keylog_path), "--qlog-dir", str(req.qlog_dir), "--cc", str(congestion_control),
        ]  # fmt: skip
        if congestion_control == "reno":
            argv.append("--no-hystart")  # RFC 9002 NewReno, as quicly's: no HyStart++
        return argv, {}
    # ngtcp2: GnuTLS logs the secrets to SSLKEYLOGFILE (no flag); qlog file named by the server's SCID.
    argv = [
        str(executable), "--quiet", "--no-quic-dump", "--no-http-dump", f"--htdocs={req.www}",
        f"--qlog-dir={req.qlog_dir}", "--max-gso-dgrams=1",
        *([f"--cc={req.congestion_control}"] if req.congestion_control else []),
        req.host, str(req.port), str(certs.key), str(certs.chain),
    ]  # fmt: skip
    return argv, {"SSLKEYLOGFILE": str(req.keylog_path)}


def udp_listening(ns_argv: list[str], port: int) -> bool:
    """Whether a UDP socket is bound to `port` (``ns_argv`` runs ``ss`` in the server namespace)."""
    try:
        out = subprocess.run(
            [*ns_argv, "ss", "-Hlun", f"sport = :{port}"], capture_output=True, text=True, timeout=5, encoding="utf-8"
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(out.stdout.strip())


def is_ready(req: ServerRequest, ns_argv: list[str]) -> bool:
    if req.impl in _SELF_DESCRIBING:
        return req.ready_file.exists()
    return udp_listening(ns_argv, req.port)


def server_info(req: ServerRequest) -> dict[str, Any]:
    """What run.json records about the server (aioquic reports it itself through the ready file; the others' sender
    settings are what the testbed configured, ``sender_of``)."""
    if req.impl == "aioquic":
        return json.loads(req.ready_file.read_text(encoding="utf-8"))
    if req.impl == "quic-go":
        own = json.loads(req.ready_file.read_text(encoding="utf-8"))
        return own | {"server_version": f"quic-go {own['server_version']}", "host": req.host, "port": req.port,
                      "cert_size": req.cert_size, "mode": own["mode"] if own["mode"] != "none" else None,
                      } | sender_of(req.impl, req.congestion_control, req.pacing)  # fmt: skip
    if req.impl == LINUX_TCP:
        # No certificate; the kernel's initial RTO (1 s, RFC 6298) is not a QUIC PTO: left null.
        return {"server_impl": req.impl, "server_version": server_version(req.impl), "host": req.host,
                "port": req.port, "mode": None, "cert_size": None, "cert_bytes": None, "cert_delay_ms": 0.0,
                "server_initial_rtt_ms": None, "server_initial_pto_ms": None, "alpn": []}  # fmt: skip
    rtt = _DEFAULT_INITIAL_RTT_MS[req.impl]
    return {
        "server_impl": req.impl,
        "server_version": server_version(req.impl),
        "host": req.host,
        "port": req.port,
        "mode": None,
        "cert_size": req.cert_size,
        "cert_bytes": CERT_SIZES[req.cert_size],
        "cert_delay_ms": 0.0,
        "server_initial_rtt_ms": rtt,
        "server_initial_pto_ms": 3 * rtt,
        "alpn": sorted("hq-interop" if p == HQ else p for p in supported_protocols(req.impl)),
    } | sender_of(req.impl, req.congestion_control, req.pacing) | (
        {"hystart": (req.congestion_control or "cubic") != "reno"} if req.impl == "quiche" else {}
    )


def server_version(impl: str) -> str | None:
    if impl == LINUX_TCP:
        return f"Linux {platform.release()} TCP"
    if impl == "aioquic":
        from importlib import metadata

        return metadata.version("aioquic")
    if impl == "ngtcp2":
        try:
            out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", _NGTCP2_DEBIAN_PACKAGE],
                                 capture_output=True, text=True, timeout=10, check=True, encoding="utf-8")  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return "ngtcp2 (Debian ngtcp2-server) unknown"
        return f"ngtcp2 (Debian ngtcp2-server) {out.stdout.strip()}"
    # quic-go-server names the pinned release and the patch (v0.65.0+quicack-iack.patch.<sha256 prefix>);
    # quinn-server and quiche-server have --version too.
    probe = implementations_dir() / _BUILT_BINARIES[impl]
    try:
        out = subprocess.run(
            [str(probe), "--version"], capture_output=True, text=True, timeout=10, check=True, encoding="utf-8"
        )
    except (OSError, subprocess.SubprocessError):
        return None
    version = out.stdout.strip()
    return f"quic-go {version}" if impl == "quic-go" else version or None
