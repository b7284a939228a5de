"""Fidelity of the testbed's emulated delay: applied one-way delay per datagram vs configured.

For each one-way delay (default 0.5, 4.5, 150 ms) it builds a fresh client/router/server topology, sends UDP
probes both ways (client→server echo) at a steady rate, captures both router interfaces as a run does, and
matches each datagram between the ingress and egress capture by its payload. Error = applied − configured.
Prints p50/p99/max of |error| per delay and direction; target p99 ≤ 0.5 ms. Needs root.

    python bench/testbed_fidelity.py [--delays 0.5 4.5 150] [--packets 2000] [--rate 200] [--size 1200]

``--from-raw DIR`` instead measures recorded runs (no root needed): the same matching on every run's two captures,
grouped by configured one-way delay. There the applied delay also contains the tbf serialization and queueing of
bursts (10 Mbit/s: ~1 ms per full datagram), so it is reported twice: all datagrams, and only "isolated" ones
(the previous datagram of the same direction left ≥ 3 ms before this one was due: no tbf queueing), which
isolates the delay.

    python bench/testbed_fidelity.py --from-raw data/sample/raw
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from quicack.pcap.capture_file import UdpDatagram
from quicack.pcap.capture_file import read_udp as read_capture
from quicack.testbed import capture, netns, router
from quicack.testbed.procs import ProcessSet

ECHO = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('{addr}', 9000))
while True:
    d, a = s.recvfrom(4000); s.sendto(b'R' + d[1:], a)
"""
SENDER = """
import socket, time, sys
n, rate, size = {n}, {rate}, {size}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setblocking(False)
t0 = time.perf_counter()
for i in range(n):
    d = t0 + i / rate - time.perf_counter()
    if d > 0: time.sleep(d)
    s.sendto(b'Q' + i.to_bytes(4, 'big') + b'x' * (size - 5), ('{addr}', 9000))
time.sleep(0.5)
"""



def udp_datagrams(path: Path) -> list[UdpDatagram]:
    """The UDP datagrams of a capture, read with the package's capture reader."""
    return [d for d in read_capture(path) if isinstance(d, UdpDatagram)]

def measure(
    delay_ms: float, n: int, rate: float, size: int, bw: float | None, workdir: Path, spin_ms: float, rt: int
) -> dict:
    topo = netns.Topology(netns.new_job_id())
    procs = ProcessSet(workdir / "logs")
    imp = router.PathImpairment(
        delay_ms, delay_ms, bandwidth_c2s_mbit=bw, bandwidth_s2c_mbit=bw, spin_ms=spin_ms, rt_priority=rt
    )
    try:
        netns.create(topo)
        router.configure(topo, imp)
        router.start_impairment(topo, imp, procs, workdir / "impair.json")
        caps = capture.start_captures(topo, workdir / "sim", procs)
        procs.start("echo", netns.ns_argv(topo.server_ns, [sys.executable, "-c", ECHO.format(addr=topo.server_addr)]))
        time.sleep(0.3)
        subprocess.run(
            netns.ns_argv(topo.client_ns, [sys.executable, "-c", SENDER.format(n=n, rate=rate, size=size,
                                                                                addr=topo.server_addr)]),
            check=True,
        )  # fmt: skip
        time.sleep(delay_ms / 1000 * 2 + 0.3)
        caps.stop()
    finally:
        procs.stop_all()
        netns.destroy(topo)
    client = str(topo.client_addr)
    left = {(d.src == client, d.payload): d.time_abs_ns for d in udp_datagrams(caps.left_path)}
    right = {(d.src == client, d.payload): d.time_abs_ns for d in udp_datagrams(caps.right_path)}
    out = {}
    for name, from_client in (("c2s", True), ("s2c", False)):
        errs = []
        for (fc, payload), t_left in left.items():
            if fc != from_client or (fc, payload) not in right:
                continue
            t_right = right[(fc, payload)]
            applied = (t_right - t_left) if from_client else (t_left - t_right)
            errs.append(applied / 1e6 - delay_ms)
        e = np.abs(np.array(errs))
        out[name] = {
            "matched": len(errs),
            "mean_error_ms": float(np.mean(errs)) if errs else None,
            "p50_abs_error_ms": float(np.percentile(e, 50)) if errs else None,
            "p99_abs_error_ms": float(np.percentile(e, 99)) if errs else None,
            "max_abs_error_ms": float(np.max(e)) if errs else None,
        }
    return out


def _stats(errs: list[float]) -> dict:
    if not errs:
        return {"matched": 0}
    e = np.abs(np.array(errs))
    return {
        "matched": len(errs),
        "mean_error_ms": float(np.mean(errs)),
        "p50_abs_error_ms": float(np.percentile(e, 50)),
        "p99_abs_error_ms": float(np.percentile(e, 99)),
        "max_abs_error_ms": float(np.max(e)),
    }


def from_raw(raw: Path) -> dict:
    """Applied vs configured one-way delay in recorded runs, per configured delay and direction."""
    errs: dict[tuple[float, str, bool], list[float]] = {}
    for rj in sorted(raw.rglob("run.json")):
        meta = json.loads(rj.read_text(encoding="utf-8"))
        sim = rj.parent / "sim"
        lp = next(iter(sorted(sim.glob("trace_node_left.pcap*"))), None)
        rp = next(iter(sorted(sim.glob("trace_node_right.pcap*"))), None)
        if lp is None or rp is None or meta.get("testbed", {}).get("capture_snaplen"):
            continue  # truncated captures may not tell datagrams apart by payload
        client = meta["testbed"]["addresses"]["client"]
        left = [(d.src == client, d.payload, d.time_abs_ns) for d in udp_datagrams(lp)]
        right = [(d.src == client, d.payload, d.time_abs_ns) for d in udp_datagrams(rp)]
        for name, from_client, ingress, egress in (("c2s", True, left, right), ("s2c", False, right, left)):
            out_t = {p: t for fc, p, t in egress if fc == from_client}
            prev_out = None
            delay = meta["one_way_delay_ms"][name]
            for fc, p, t in ingress:
                if fc != from_client:
                    continue
                due = t + delay * 1e6
                # Isolated: the previous datagram of this direction left ≥ 3 ms before this one was due, so the
                # token bucket is full again and no tbf queueing adds to the delay.
                isolated = prev_out is None or due - prev_out >= 3_000_000
                if p in out_t:
                    prev_out = out_t[p]
                    err = (out_t[p] - t) / 1e6 - delay
                    errs.setdefault((delay, name, False), []).append(err)
                    if isolated:
                        errs.setdefault((delay, name, True), []).append(err)
    return {f"{d:g} ms {n} {'isolated' if iso else 'all'}": _stats(v) for (d, n, iso), v in sorted(errs.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delays", type=float, nargs="+", default=[0.5, 4.5, 150.0])
    ap.add_argument("--packets", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=200.0, help="probe datagrams per second")
    ap.add_argument("--size", type=int, default=1200, help="UDP payload bytes")
    ap.add_argument("--bandwidth-mbit", type=float, default=None, help="tbf rate (default: none)")
    ap.add_argument("--spin-ms", type=float, default=0.15, help="impairment spin margin")
    ap.add_argument("--rt-priority", type=int, default=50, help="impairment SCHED_FIFO priority (0 = off)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--from-raw", type=Path, help="measure recorded runs under this raw folder instead")
    a = ap.parse_args()
    if a.from_raw:
        res = from_raw(a.from_raw)
        for k, r in res.items():
            if r["matched"]:
                print(f"{k:28s} n={r['matched']:6d} p50={r['p50_abs_error_ms']:.4f} ms "
                      f"p99={r['p99_abs_error_ms']:.4f} ms max={r['max_abs_error_ms']:.4f} ms "
                      f"mean={r['mean_error_ms']:+.4f} ms")  # fmt: skip
        if a.json:
            a.json.write_text(json.dumps(res, indent=1), encoding="utf-8")
        return
    netns.require_root()
    results = {}
    for d in a.delays:
        with tempfile.TemporaryDirectory(prefix="quicack-fidelity-") as tmp:
            results[str(d)] = measure(
                d, a.packets, a.rate, a.size, a.bandwidth_mbit, Path(tmp), a.spin_ms, a.rt_priority
            )
        for direction, r in results[str(d)].items():
            print(f"delay {d:7.2f} ms {direction}: n={r['matched']:5d} p50={r['p50_abs_error_ms']:.4f} ms "
                  f"p99={r['p99_abs_error_ms']:.4f} ms max={r['max_abs_error_ms']:.4f} ms "
                  f"mean={r['mean_error_ms']:+.4f} ms", flush=True)  # fmt: skip
    if a.json:
        a.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
