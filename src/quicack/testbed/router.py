"""Router namespace configuration: NFQUEUE rules for the impairment program and tbf for the bandwidth."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from quicack.testbed.netns import Topology, ns_argv
from quicack.testbed.procs import Managed, ProcessSet, wait_until


@dataclass(frozen=True)
class PathImpairment:
    """What the router does to each direction (c2s: client to server, s2c: server to client)."""

    delay_c2s_ms: float
    delay_s2c_ms: float
    bandwidth_c2s_mbit: float | None = 10.0
    bandwidth_s2c_mbit: float | None = 10.0
    loss_c2s: float = 0.0
    loss_s2c: float = 0.0
    drop_c2s: tuple[int, ...] = ()
    drop_s2c: tuple[int, ...] = ()
    drop_c2s_finished_flight: int = 0  # impair.py --drop-c2s-finished-flight (0 = off)
    thin_c2s_tcp_acks: int = 0  # impair.py --thin-c2s-tcp-acks K: forward every K-th pure TCP ACK (0 = off)
    seed: int = 1
    queue_limit_packets: int = 100  # default queue of each direction: this many full-size packets, in bytes
    queue_s2c_bytes: int | None = None  # a path profile's forward queue (≈ 1 BDP), in bytes
    queue_c2s_packets: int | None = None  # a path profile's return queue, in packets whatever their size
    spin_ms: float = 0.15  # see impair.py: wake early and spin (costs CPU; helps only on idle cores)
    rt_priority: int = 50  # SCHED_FIFO priority of the impairment program (0 = normal)


def _run(argv: list[str]) -> None:
    p = subprocess.run(argv, capture_output=True, text=True, encoding="utf-8")
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {p.stderr.strip()}")


def _tbf(topo: Topology, dev: str, mbit: float, limit_bytes: int, limit_packets: int | None = None) -> None:
    """tbf at `mbit` on `dev`. Its own queue is limited in bytes; with `limit_packets` a pfifo child counts
    packets instead, so that a return path of small ACKs holds as many ACKs as a profile says, not as many as fit
    in the bytes of full-size frames (at 100 kbit/s, 100 × 1,514 B of 60 B ACKs would be 12 s of queue)."""
    rate_bps = mbit * 1e6
    # Bucket: at least two full-size frames, and at least 1 ms worth of tokens.
    burst = max(3200, int(rate_bps / 8 / 1000))
    _run(ns_argv(topo.router_ns, ["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "tbf",
                                  "rate", f"{int(rate_bps)}bit", "burst", str(burst), "limit",
                                  str(limit_bytes)]))  # fmt: skip
    if limit_packets is not None:
        _run(ns_argv(topo.router_ns, ["tc", "qdisc", "replace", "dev", dev, "parent", "1:1", "handle", "10:",
                                      "pfifo", "limit", str(limit_packets)]))  # fmt: skip


def configure(topo: Topology, imp: PathImpairment, queue: int = 0) -> None:
    """NFQUEUE for forwarded UDP and TCP (per input interface = per direction), tbf on each egress interface."""
    for dev, q in ((topo.router_left_if, queue), (topo.router_right_if, queue + 1)):
        # No --queue-bypass: if the impairment program is not there, packets are dropped, not passed unimpaired.
        # TCP too (the ACK-ratio study's Linux TCP runs): the same delay, loss and queue as QUIC.
        for transport in ("udp", "tcp"):
            _run(ns_argv(topo.router_ns, ["iptables", "-w", "-A", "FORWARD", "-i", dev, "-p", transport,
                                          "-j", "NFQUEUE", "--queue-num", str(q)]))  # fmt: skip
    # s2c leaves the router on the left interface, c2s on the right one.
    default_bytes = imp.queue_limit_packets * 1514
    if imp.bandwidth_s2c_mbit:
        _tbf(topo, topo.router_left_if, imp.bandwidth_s2c_mbit, imp.queue_s2c_bytes or default_bytes)
    if imp.bandwidth_c2s_mbit:
        # The pfifo child holds the packets; tbf's own byte limit must not be the smaller one.
        c2s_bytes = default_bytes if imp.queue_c2s_packets is None else max(default_bytes, imp.queue_c2s_packets * 1514)
        _tbf(topo, topo.router_right_if, imp.bandwidth_c2s_mbit, c2s_bytes, imp.queue_c2s_packets)


def start_impairment(topo: Topology, imp: PathImpairment, procs: ProcessSet, summary: Path, queue: int = 0) -> Managed:
    argv = [
        sys.executable, "-m", "quicack.testbed.impair",
        "--queue", str(queue),
        "--delay-c2s-ms", f"{imp.delay_c2s_ms}", "--delay-s2c-ms", f"{imp.delay_s2c_ms}",
        "--loss-c2s", f"{imp.loss_c2s}", "--loss-s2c", f"{imp.loss_s2c}",
        "--drop-c2s", ",".join(map(str, imp.drop_c2s)), "--drop-s2c", ",".join(map(str, imp.drop_s2c)),
        "--drop-c2s-finished-flight", str(imp.drop_c2s_finished_flight),
        "--thin-c2s-tcp-acks", str(imp.thin_c2s_tcp_acks),
        "--seed", str(imp.seed), "--summary", str(summary),
        "--spin-ms", f"{imp.spin_ms}", "--rt-priority", str(imp.rt_priority),
    ]  # fmt: skip
    m = procs.start("impair", ns_argv(topo.router_ns, argv))
    wait_until(lambda: b'"ready": true' in m.stdout_path.read_bytes(), 15.0, m, "impairment to bind its queues")
    return m


def qdisc_stats(topo: Topology) -> str:
    p = subprocess.run(
        ns_argv(topo.router_ns, ["tc", "-s", "qdisc", "show"]), capture_output=True, text=True, encoding="utf-8"
    )
    return p.stdout
