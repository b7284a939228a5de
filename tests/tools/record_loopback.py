#!/usr/bin/env python3
"""Record the real loopback fixtures in tests/data/loopback/ (QUIC Interop Runner layout + run.json).

Each fixture is one download over 127.0.0.1 by a real client from a real server, captured with
tcpdump on ``lo``, with both endpoints' keylogs and qlogs:

    tests/data/loopback/<server>_<client>/<testcase>/<repetition>/
        run.json  client/keys.log  client/qlog/*  server/keys.log  server/qlog/*  sim/loopback.pcap[.gz]

Needs root (tcpdump), the built clients (src/clients/build.sh), and Debian's ngtcp2-client/-server.
Uses UDP ports 4460-4499 on 127.0.0.1 only.

    python tests/tools/record_loopback.py                 # every fixture
    python tests/tools/record_loopback.py --only quic-go  # fixtures whose group name contains "quic-go"
    python tests/tools/record_loopback.py --list
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from quicack.testbed.certs import cert_paths
from quicack.testbed.clients import (
    ClientRequest,
    client_command,
    client_executable,
    client_versions,
    implementations_dir,
)
from quicack.testbed.files import FILE_SIZES, ensure_files

REPO = Path(__file__).resolve().parents[2]
OUT_ROOT = REPO / "tests" / "data" / "loopback"
PORTS = range(4460, 4500)
PCAP_GZIP_THRESHOLD_BYTES = 200 * 1024
SCENARIO = "noloss"
# Built only on request (BoringSSL); without it, its committed fixtures are kept.
OPTIONAL_CLIENTS = frozenset({"quiche"})
# Time for the last CONNECTION_CLOSE (and the server's reply to it) to reach the capture.
SETTLE_S = 0.5
SERVER_WARMUP_S = 1.0
# A 1 MB transfer on lo outruns a per-packet-writing tcpdump with the default 2 MiB ring.
CAPTURE_BUFFER_KIB = 256 * 1024
CAPTURE_ATTEMPTS = 3


@dataclass(frozen=True)
class Fixture:
    server: str  # 'aioquic' (the testbed server), 'quic-go', 'ngtcp2'
    client: str  # an impl of quicack.testbed.clients
    file_name: str  # a name of quicack.testbed.files.FILE_SIZES
    app_protocol: str  # 'h3' | 'hq'
    mode: str | None = None  # aioquic server only: None (plain), 'iack', 'wfc'
    cert_delay_ms: float = 0.0
    repetition: int = 1

    @property
    def group(self) -> str:
        return f"{self.server}_{self.client}"

    @property
    def testcase(self) -> str:
        # The IACK/WFC runs share a group with the plain run, so their mode goes into the testcase.
        suffix = f"_{self.mode}" if self.mode else ""
        return f"transfer_{self.file_name}{suffix}"

    @property
    def run_dir(self) -> Path:
        return OUT_ROOT / self.group / self.testcase / str(self.repetition)


FIXTURES: tuple[Fixture, ...] = (
    # Every client against the testbed's aioquic server: one qlog dialect per client.
    Fixture("aioquic", "aioquic", "10KB", "h3"),
    Fixture("aioquic", "quic-go", "10KB", "h3"),
    Fixture("aioquic", "quic-go-old", "10KB", "h3"),
    Fixture("aioquic", "go-x-net", "10KB", "hq"),
    Fixture("aioquic", "ngtcp2", "10KB", "h3"),
    Fixture("aioquic", "quinn", "10KB", "h3"),
    Fixture("aioquic", "quiche", "10KB", "h3"),
    # The two handshake behaviours of imc24, with a certificate-store delay large enough to see on loopback.
    Fixture("aioquic", "quic-go", "10KB", "h3", mode="iack", cert_delay_ms=50.0),
    Fixture("aioquic", "quic-go", "10KB", "h3", mode="wfc", cert_delay_ms=50.0),
    # Same implementation at both ends: both qlogs have frames and recovery metrics.
    Fixture("quic-go", "quic-go", "10KB", "h3"),
    Fixture("quic-go", "quic-go", "1MB", "h3"),
    Fixture("ngtcp2", "ngtcp2", "10KB", "h3"),
    Fixture("ngtcp2", "ngtcp2", "1MB", "h3"),
)


def _udp_port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _udp_port_is_bound(port: int) -> bool:
    needle = f":{port:04X} "
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            lines = Path(table).read_text(encoding="utf-8").splitlines()[1:]
        except OSError:
            continue
        if any(line.split()[1].endswith(needle.strip()) for line in lines):
            return True
    return False


def _free_port() -> int:
    for port in PORTS:
        if _udp_port_is_free(port):
            return port
    raise RuntimeError(f"no free UDP port in {PORTS.start}-{PORTS.stop - 1}")


def _wait_until(predicate, timeout_s: float, what: str, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what}: process exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


def _stop(process: subprocess.Popen, sig: int = signal.SIGTERM, timeout_s: float = 5.0) -> int:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def _server_command(fixture: Fixture, port: int, www: Path, server_dir: Path) -> tuple[list[str], dict[str, str], int]:
    """argv, extra env and the stop signal of the fixture's server."""
    keylog, qlog_dir = server_dir / "keys.log", server_dir / "qlog"
    qlog_dir.mkdir(parents=True, exist_ok=True)
    certs = cert_paths("small")
    if fixture.server == "aioquic":
        argv = [
            sys.executable, "-m", "quicack.testbed.iack_wfc_server", "--host", "127.0.0.1", "--port", str(port),
            "--mode", fixture.mode or "none", "--cert-delay-ms", f"{fixture.cert_delay_ms:g}", "--cert-size", "small",
            "--www", str(www), "--qlog-dir", str(qlog_dir), "--keylog", str(keylog),
        ]  # fmt: skip
        return argv, {}, signal.SIGTERM
    if fixture.server == "quic-go":
        binary = implementations_dir() / "quic-go" / "bin" / "quic-go-server"
        argv = [
            str(binary), "-listen", f"127.0.0.1:{port}", "-cert", str(certs.chain), "-key", str(certs.key),
            "-www", str(www), "-keylog", str(keylog), "-qlog-dir", str(qlog_dir),
        ]  # fmt: skip
        # One datagram per captured frame on lo (loopback accepts UDP GSO super-packets otherwise).
        return argv, {"QUIC_GO_DISABLE_GSO": "true"}, signal.SIGTERM
    if fixture.server == "ngtcp2":
        argv = [
            "gtlsserver", "--quiet", "--no-quic-dump", "--no-http-dump", f"--htdocs={www}", f"--qlog-dir={qlog_dir}",
            # One datagram per sendmsg: loopback would carry (and tcpdump record) UDP GSO super-packets.
            "--max-gso-dgrams=1",
            "127.0.0.1", str(port), str(certs.key), str(certs.chain),
        ]  # fmt: skip
        # gtlsserver flushes its qlog files only on a clean exit, which SIGINT gives and SIGTERM does not.
        return argv, {"SSLKEYLOGFILE": str(keylog)}, signal.SIGINT
    raise ValueError(f"unknown server {fixture.server!r}")


def _server_version(server: str, versions: dict[str, str]) -> str:
    if server == "aioquic":
        return versions.get("aioquic", "aioquic unknown")
    if server == "quic-go":
        return versions.get("quic-go", "quic-go unknown")
    try:
        package_version = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "ngtcp2-server"],
            capture_output=True,
            text=True,
            check=True,
            encoding="utf-8",
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        package_version = "unknown"
    return f"ngtcp2 (Debian ngtcp2-server) {package_version}"


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def record(fixture: Fixture, www: Path, versions: dict[str, str]) -> dict:
    run_dir = fixture.run_dir
    if run_dir.exists():
        shutil.rmtree(run_dir)
    client_dir, server_dir, sim_dir = run_dir / "client", run_dir / "server", run_dir / "sim"
    for d in (client_dir, server_dir, sim_dir):
        d.mkdir(parents=True)
    port = _free_port()
    pcap = sim_dir / "loopback.pcap"
    url = f"https://127.0.0.1:{port}/{fixture.file_name}"
    served = ensure_files(www, [fixture.file_name])[fixture.file_name]

    with tempfile.TemporaryDirectory(prefix="quicack-download-") as download_dir:
        req = ClientRequest(
            impl=fixture.client,
            url=url,
            app_protocol=fixture.app_protocol,
            download_dir=Path(download_dir),
            keylog_path=client_dir / "keys.log",
            qlog_dir=client_dir / "qlog",
            timeout_s=30.0,
        )
        client_argv, client_env = client_command(req)
        server_argv, server_env, server_stop_signal = _server_command(fixture, port, www, server_dir)

        tcpdump = subprocess.Popen(
            ["tcpdump", "-i", "lo", "-U", "--immediate-mode", "-B", str(CAPTURE_BUFFER_KIB), "-n", "-s", "0",
             "-w", str(pcap), f"udp port {port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, encoding="utf-8",
        )  # fmt: skip
        server = None
        failure_reason = None
        client_rc = None
        client_stderr = ""
        try:
            assert tcpdump.stderr is not None
            # tcpdump prints "listening on lo" once the capture is armed.
            line = tcpdump.stderr.readline()
            if "listening" not in line:
                raise RuntimeError(f"tcpdump did not start: {line}")
            server_log = (server_dir / "server.log").open("w", encoding="utf-8")
            server = subprocess.Popen(
                server_argv, env=os.environ | server_env, stdout=server_log, stderr=subprocess.STDOUT, cwd=server_dir
            )
            _wait_until(lambda: _udp_port_is_bound(port), 20, f"{fixture.server} server to listen", server)
            # A server that has just bound its socket may still be starting up (the aioquic server
            # finishes imports lazily); a handshake then would show start-up time, not the protocol.
            time.sleep(SERVER_WARMUP_S)
            start_ns = time.time_ns()
            try:
                result = subprocess.run(
                    client_argv, env=os.environ | client_env, capture_output=True, text=True,
                    timeout=req.timeout_s + 10, cwd=client_dir, encoding="utf-8",
                )  # fmt: skip
                client_rc, client_stderr = result.returncode, result.stderr
            except subprocess.TimeoutExpired:
                failure_reason = f"client timed out after {req.timeout_s + 10:g} s"
            end_ns = time.time_ns()
            time.sleep(SETTLE_S)
        finally:
            if server is not None:
                _stop(server, server_stop_signal)
                server_log.close()
            _stop(tcpdump, signal.SIGINT)
            assert tcpdump.stderr is not None
            capture_dropped = _dropped_by_kernel(tcpdump.stderr.read())

        downloaded = Path(download_dir) / fixture.file_name
        digest = hashlib.sha256(downloaded.read_bytes()).hexdigest() if downloaded.is_file() else None
    if failure_reason is None:
        if client_rc != 0:
            failure_reason = f"client exited {client_rc}: {client_stderr.strip()[-500:]}"
        elif digest is None:
            failure_reason = "client saved no file"
        elif digest != served.sha256:
            failure_reason = f"downloaded bytes differ from the served file (sha256 {digest})"
    # The server's own log only matters when something went wrong.
    if failure_reason is None:
        (server_dir / "server.log").unlink(missing_ok=True)

    if pcap.stat().st_size > PCAP_GZIP_THRESHOLD_BYTES:
        with pcap.open("rb") as src, gzip.GzipFile(pcap.with_suffix(".pcap.gz"), "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        pcap.unlink()

    meta = {
        "client_impl": fixture.client,
        "server_impl": fixture.server,
        "mode": fixture.mode,
        "scenario": SCENARIO,
        "testcase": fixture.testcase,
        "rtt_ms": None,  # loopback: no emulated delay
        "cert_delay_ms": fixture.cert_delay_ms if fixture.mode else None,
        "cert_bytes": cert_paths("small").chain_der_bytes,
        "file_name": fixture.file_name,
        "file_bytes": FILE_SIZES[fixture.file_name],
        "file_sha256": served.sha256,
        "app_protocol": fixture.app_protocol,
        "ack_ratio": None,
        "ack_delay_ms": None,
        "path_profile": None,
        "repetition": fixture.repetition,
        "status": "ok" if failure_reason is None else "failed",
        "failure_reason": failure_reason,
        "versions": {
            "client": versions.get(fixture.client, "unknown"),
            "server": _server_version(fixture.server, versions),
        },
        "start_time": _iso(start_ns),
        "end_time": _iso(end_ns),
        "start_unix_ns": start_ns,
        "end_unix_ns": end_ns,
        "capture": {
            "interface": "lo",
            "filter": f"udp port {port}",
            "tool": "tcpdump -U --immediate-mode",
            "dropped_by_kernel": capture_dropped,
        },
        "server_address": f"127.0.0.1:{port}",
        "client_command": [_relative(a) for a in client_argv],
        "server_command": [_relative(a) for a in server_argv],
    }
    (run_dir / "run.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return meta


def _dropped_by_kernel(tcpdump_stderr: str) -> int | None:
    for line in tcpdump_stderr.splitlines():
        if line.endswith("packets dropped by kernel"):
            return int(line.split()[0])
    return None


def _relative(arg: str) -> str:
    """Paths in the recorded commands relative to the repository, so run.json does not name this machine."""
    for prefix in (str(REPO) + "/", tempfile.gettempdir() + "/"):
        arg = arg.replace(prefix, "" if prefix.startswith(str(REPO)) else "$TMP/")
    return arg.replace(sys.executable, "python")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="record only fixtures whose <server>_<client> group contains this")
    parser.add_argument("--list", action="store_true", help="list the fixtures and exit")
    args = parser.parse_args()
    fixtures = [f for f in FIXTURES if not args.only or args.only in f.group]
    if args.list:
        for f in fixtures:
            print(f.run_dir.relative_to(REPO))
        return 0
    if os.geteuid() != 0:
        print("record_loopback.py needs root (tcpdump on lo)", file=sys.stderr)
        return 2
    missing = {f.client for f in fixtures if client_executable(f.client) is None}
    if missing - OPTIONAL_CLIENTS:
        print(f"clients not built: {', '.join(sorted(missing))} (run src/clients/build.sh)", file=sys.stderr)
        return 2
    for client in sorted(missing):
        print(f"skip   {client}: not built (src/clients/build.sh {client}); its fixtures stay as they are")
    fixtures = [f for f in fixtures if f.client not in missing]
    versions = client_versions()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="quicack-www-") as www:
        for fixture in fixtures:
            for _attempt in range(CAPTURE_ATTEMPTS):
                meta = record(fixture, Path(www), versions)
                if meta["capture"]["dropped_by_kernel"] == 0:
                    break
                print(
                    f"retry  {fixture.run_dir.relative_to(REPO)}: capture dropped "
                    f"{meta['capture']['dropped_by_kernel']}"
                )
            size = sum(p.stat().st_size for p in fixture.run_dir.rglob("*") if p.is_file())
            print(
                f"{meta['status']:6} {fixture.run_dir.relative_to(REPO)}  {size / 1024:.0f} KiB"
                + (f"  ({meta['failure_reason']})" if meta["failure_reason"] else "")
            )
            failures += meta["status"] != "ok"
    total = sum(p.stat().st_size for p in OUT_ROOT.rglob("*") if p.is_file())
    print(f"tests/data/loopback: {total / 1024 / 1024:.2f} MiB")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
