"""Measure what an emulated path delivers, against what its profile says (ackfreq22 Table 1 beside ours).

For each path profile (data/reference/path_profiles.csv) the testbed's topology is built as for a run — the same
router configuration (NFQUEUE delay and loss in user space, tbf rate and queues) — and plain UDP probes measure:

- the RTT: 40 small echo probes from the client (min and median);
- the rate of each direction: a sender 25 % above the profile's rate for a few seconds; delivered = bytes that
  arrived over the time between the first and the last arrival (the excess is dropped at the bottleneck queue);
- the random loss of each direction: a sender at half the rate (no queue drops), loss = 1 − received / sent;
- how late the impairment program released packets (its own summary), the limit of user-space delay.

    sudo python -m quicack.testbed.path_check --profile ackfreq22-satellite --profile rethink-satellite \
        --out data/reference/path_check.csv

The probes are UDP like QUIC; the figures set these numbers beside the profile (ackfreq22-tab01).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl

from quicack.reference import path_profile
from quicack.testbed import netns, router
from quicack.testbed.netns import Topology, ns_argv
from quicack.testbed.procs import ProcessSet

PORT = 4999
PROBE = struct.Struct("!Qd")  # sequence number, send time (s)
DATAGRAM_BYTES = 1200  # UDP payload, like a full QUIC datagram
IP_UDP_HEADER_BYTES = 28


@dataclass(frozen=True)
class PathMeasurement:
    profile: str
    rtt_min_ms: float | None
    rtt_median_ms: float | None
    s2c_rate_mbit: float | None
    c2s_rate_mbit: float | None
    s2c_packets_per_s: float | None
    c2s_packets_per_s: float | None
    s2c_loss_percent: float | None
    c2s_loss_percent: float | None
    s2c_loss_probes: int
    c2s_loss_probes: int
    impairment_max_lateness_ms: float | None
    note: str


# ---------------------------------------------------------------------------------------------------------------
# The probe programs (run inside a namespace: python -m quicack.testbed.path_check --role ...)


def _sink(port: int, seconds: float, report: Path) -> None:
    """Count datagrams until ``seconds`` pass without any (after the first) or in all."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind(("0.0.0.0", port))
    sock.settimeout(seconds)
    received, wire_bytes, first, last = 0, 0, None, None
    report.write_text(json.dumps({"ready": True}), encoding="utf-8")
    try:
        while True:
            data = sock.recv(65535)
            now = time.time()
            first = first or now
            last = now
            received += 1
            wire_bytes += len(data) + IP_UDP_HEADER_BYTES
            sock.settimeout(2.0)
    except TimeoutError:
        pass
    report.write_text(
        json.dumps({"received": received, "wire_bytes": wire_bytes, "first": first, "last": last}), encoding="utf-8"
    )


def _blast(address: str, port: int, rate_bps: float, seconds: float, report: Path) -> None:
    """Send ``DATAGRAM_BYTES`` datagrams at ``rate_bps`` (IP bytes) for ``seconds``, paced in 1 ms steps."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    padding = bytes(DATAGRAM_BYTES - PROBE.size)
    interval = (DATAGRAM_BYTES + IP_UDP_HEADER_BYTES) * 8 / rate_bps
    start = time.time()
    sent = 0
    while (now := time.time()) - start < seconds:
        due = int((now - start) / interval) + 1
        while sent < due:
            sock.sendto(PROBE.pack(sent, now) + padding, (address, port))
            sent += 1
        time.sleep(0.001)
    report.write_text(json.dumps({"sent": sent}), encoding="utf-8")


def _echo(port: int, seconds: float) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", port))
    sock.settimeout(seconds)
    try:
        while True:
            data, peer = sock.recvfrom(2048)
            sock.sendto(data, peer)
    except TimeoutError:
        pass


def _ping(address: str, port: int, count: int, report: Path) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(0.02)
    sent_at: dict[int, float] = {}
    rtts: list[float] = []
    for seq in range(count):
        sent_at[seq] = time.time()
        sock.sendto(PROBE.pack(seq, sent_at[seq]), (address, port))
        deadline = time.time() + 0.05
        while time.time() < deadline:
            try:
                got, _ = PROBE.unpack(sock.recv(64))
                rtts.append((time.time() - sent_at[got]) * 1e3)
            except TimeoutError:
                pass
    sock.settimeout(3.0)
    try:
        while len(rtts) < count:
            got, _ = PROBE.unpack(sock.recv(64))
            rtts.append((time.time() - sent_at[got]) * 1e3)
    except TimeoutError:
        pass
    report.write_text(json.dumps({"rtts_ms": rtts}), encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# The measurement


def _role(*args: str) -> list[str]:
    return [sys.executable, "-m", "quicack.testbed.path_check", "--role", *args]


def _transfer(topo: Topology, procs: ProcessSet, work: Path, direction: str, rate_bps: float, seconds: float) -> dict:
    """One sender → sink transfer; returns the sink's and the sender's reports."""
    sink_ns, sender_ns, target = (
        (topo.client_ns, topo.server_ns, topo.client_addr)
        if direction == "s2c"
        else (topo.server_ns, topo.client_ns, topo.server_addr)
    )
    sink_report, sender_report = work / f"sink-{direction}.json", work / f"sender-{direction}.json"
    sink_report.unlink(missing_ok=True)
    sink = procs.start(
        f"sink-{direction}",
        ns_argv(
            sink_ns, _role("sink", "--port", str(PORT), "--seconds", str(seconds + 10), "--report", str(sink_report))
        ),
    )
    deadline = time.time() + 10
    while not sink_report.exists() and time.time() < deadline:
        time.sleep(0.05)
    sender = procs.start(f"sender-{direction}", ns_argv(sender_ns, _role(
        "blast", "--address", str(target), "--port", str(PORT), "--rate-bps", str(rate_bps), "--seconds", str(seconds),
        "--report", str(sender_report))))  # fmt: skip
    sender.popen.wait(timeout=seconds + 30)
    sink.popen.wait(timeout=seconds + 30)
    return json.loads(sink_report.read_text(encoding="utf-8")) | json.loads(sender_report.read_text(encoding="utf-8"))


def measure(profile_name: str, seconds: float = 5.0, spin_ms: float | None = None) -> PathMeasurement:
    """Build the profile's path and measure it (needs root); ``spin_ms``: the impairment program's early wake-up, as
    the runs over the path had it (None = its default)."""
    netns.require_root()
    profile = path_profile(profile_name)
    imp = router.PathImpairment(
        delay_c2s_ms=float(profile["c2s_delay_ms"]), delay_s2c_ms=float(profile["s2c_delay_ms"]),
        bandwidth_c2s_mbit=float(profile["c2s_rate_mbit"]), bandwidth_s2c_mbit=float(profile["s2c_rate_mbit"]),
        loss_c2s=float(profile["c2s_loss_percent"]) / 100, loss_s2c=float(profile["s2c_loss_percent"]) / 100,
        queue_s2c_bytes=int(profile["s2c_queue_bytes"]), queue_c2s_packets=int(profile["c2s_queue_packets"]),
        spin_ms=router.PathImpairment.spin_ms if spin_ms is None else spin_ms,  # None: the field's default
    )  # fmt: skip
    topo = Topology(netns.new_job_id())
    work = Path(tempfile.mkdtemp(prefix="quicack-pathcheck-"))
    procs = ProcessSet(work)
    try:
        netns.create(topo)
        router.configure(topo, imp)
        router.start_impairment(topo, imp, procs, work / "impairment.json")
        echo = procs.start("echo", ns_argv(topo.server_ns, _role("echo", "--port", str(PORT + 1), "--seconds", "15")))
        time.sleep(0.3)
        ping = procs.start(
            "ping",
            ns_argv(
                topo.client_ns,
                _role(
                    "ping",
                    "--address",
                    str(topo.server_addr),
                    "--port",
                    str(PORT + 1),
                    "--count",
                    "40",
                    "--report",
                    str(work / "ping.json"),
                ),
            ),
        )
        ping.popen.wait(timeout=60)
        echo.stop()
        rtts = json.loads((work / "ping.json").read_text(encoding="utf-8"))["rtts_ms"]
        results: dict[str, dict[str, float | int | None]] = {}
        for direction in ("s2c", "c2s"):
            rate_bps = float(profile[f"{direction}_rate_mbit"]) * 1e6
            saturated = _transfer(topo, procs, work, direction, rate_bps * 1.25, seconds)
            span = (saturated["last"] or 0) - (saturated["first"] or 0)
            below = _transfer(topo, procs, work, direction, rate_bps * 0.5, seconds)
            results[direction] = {
                "rate_mbit": saturated["wire_bytes"] * 8 / span / 1e6 if span > 0 else None,
                "packets_per_s": saturated["received"] / span if span > 0 else None,
                "loss_percent": 100 * (1 - below["received"] / below["sent"]) if below["sent"] else None,
                "loss_probes": below["sent"],
            }
        procs.stop_all()
        summary = (
            json.loads((work / "impairment.json").read_text(encoding="utf-8"))
            if (work / "impairment.json").exists()
            else {}
        )
        lateness = [
            late for d in summary.values()
            if isinstance(d, dict) and (late := d.get("max_release_lateness_ms")) is not None
        ]
    finally:
        procs.stop_all()
        netns.destroy(topo)
    s2c, c2s = results["s2c"], results["c2s"]
    note = ""
    if s2c["rate_mbit"] is not None and s2c["rate_mbit"] < 0.9 * float(profile["s2c_rate_mbit"]):
        note = (
            f"forward rate not reached: {s2c['rate_mbit']:.1f} of {profile['s2c_rate_mbit']:g} Mbit/s (user-space "
            "impairment)"
        )
    return PathMeasurement(
        profile=profile_name,
        rtt_min_ms=min(rtts) if rtts else None,
        rtt_median_ms=statistics.median(rtts) if rtts else None,
        s2c_rate_mbit=s2c["rate_mbit"], c2s_rate_mbit=c2s["rate_mbit"],
        s2c_packets_per_s=s2c["packets_per_s"], c2s_packets_per_s=c2s["packets_per_s"],
        s2c_loss_percent=s2c["loss_percent"], c2s_loss_percent=c2s["loss_percent"],
        s2c_loss_probes=int(s2c["loss_probes"] or 0), c2s_loss_probes=int(c2s["loss_probes"] or 0),
        impairment_max_lateness_ms=max(lateness) if lateness else None,
        note=note,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", action="append", help="a path profile (repeatable)")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each rate and loss probe")
    ap.add_argument("--out", type=Path, help="CSV to write (one row per profile)")
    ap.add_argument("--spin-ms", type=float, help="the impairment program's early wake-up (impair.py; default its own)")
    ap.add_argument("--role", choices=["sink", "blast", "echo", "ping"], help=argparse.SUPPRESS)
    ap.add_argument("--address", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rate-bps", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.role == "sink":
        _sink(args.port, args.seconds, args.report)
    elif args.role == "blast":
        _blast(args.address, args.port, args.rate_bps, args.seconds, args.report)
    elif args.role == "echo":
        _echo(args.port, args.seconds)
    elif args.role == "ping":
        _ping(args.address, args.port, args.count, args.report)
    else:
        rows = []
        for name in args.profile or []:
            m = measure(name, args.seconds, args.spin_ms)
            print(json.dumps(asdict(m)), flush=True)
            rows.append(asdict(m))
        if args.out and rows:
            pl.DataFrame(rows).write_csv(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
