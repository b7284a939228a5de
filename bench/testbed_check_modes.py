"""Check IACK and WFC on the wire in recorded testbed runs.

For every run folder under RAW (run.json with mode iack/wfc), looks at the server side capture
(sim/trace_node_right.pcap[.gz]; the client side one, sim/trace_node_left, for runs recorded without it) and
classifies the server's first datagram (never dropped by a drop list):

* IACK expected: the first server datagram carries only an Initial packet and is small (an ACK, no ServerHello);
  the next datagram carries the ServerHello flight (Initial + Handshake), ≥ Δt later.
* WFC expected: the first server datagram coalesces Initial (ACK + ServerHello) and Handshake packets.

Packet types are read from the long headers (no decryption needed). With ``--tshark N`` it also decrypts the first
N runs per mode with tshark and the server keylog, and prints the frames of the first two server datagrams.

    python bench/testbed_check_modes.py data/sample/raw [--tshark 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import Counter
from pathlib import Path

from quicack.testbed.calibrate import split_datagrams

SIDES = {"trace_node_right": "server", "trace_node_left": "client"}


def _capture(run: Path) -> tuple[Path, str] | None:
    for stem, side in SIDES.items():
        for name in (f"{stem}.pcap", f"{stem}.pcap.gz"):
            if (run / "sim" / name).exists():
                return run / "sim" / name, side
    return None


def classify(run: Path, client_addr: str) -> tuple[str, float | None, str | None]:
    found = _capture(run)
    if found is None:
        return "no capture", None, None
    cap, side = found
    _, s2c = split_datagrams(cap)
    if not s2c:
        return "no server datagram", None, side
    k1 = s2c[0].kinds
    if k1 == ("initial",) and s2c[0].size < 200:
        sh = next((d for d in s2c[1:] if "handshake" in d.kinds), None)
        gap = (sh.time_ns - s2c[0].time_ns) / 1e6 if sh else None
        return "separate ACK", gap, side
    if "initial" in k1 and "handshake" in k1:
        return "coalesced ACK+SH", None, side
    return f"other {k1}", None, side


def tshark_frames(run: Path, n: int = 3) -> str:
    cap, _ = _capture(run)
    keys = run / "server" / "keys.log"
    out = subprocess.run(
        ["tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "udp.srcport == 443",
         "-T", "fields", "-e", "frame.time_relative", "-e", "udp.length", "-e", "quic.long.packet_type",
         "-e", "quic.frame_type", "-e", "tls.handshake.type"],
        capture_output=True, text=True, encoding="utf-8",
    )  # fmt: skip
    return "\n".join(out.stdout.splitlines()[:n]) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path)
    ap.add_argument("--tshark", type=int, default=0, help="decrypt and print this many runs per mode")
    a = ap.parse_args()
    counts: dict[str, Counter[str]] = {"iack": Counter(), "wfc": Counter()}
    gaps: dict[tuple[str, float, float], list[float]] = {}
    shown: Counter[str] = Counter()
    for rj in sorted(a.raw.rglob("run.json")):
        meta = json.loads(rj.read_text(encoding="utf-8"))
        mode = meta.get("mode")
        if mode not in counts:
            continue
        if meta["testbed"].get("capture_snaplen"):
            counts[mode]["truncated capture, not checked"] += 1
            continue
        kind, gap, side = classify(rj.parent, meta["testbed"]["addresses"]["client"])
        counts[mode][kind if side in (None, "server") else f"{kind} (client side)"] += 1
        # At the client side the gap measures Δt only when no server datagram was dropped before it.
        if gap is not None and not (side == "client" and meta.get("drop_to_client")):
            # The *_paper_stack runs hold the ServerHello on top of Δt (run.json server_hello_hold_ms).
            gaps.setdefault((side, meta["cert_delay_ms"], meta.get("server_hello_hold_ms") or 0.0), []).append(gap)
        if shown[mode] < a.tshark:
            shown[mode] += 1
            print(f"--- {meta['raw_path']} (server datagrams: time, UDP length, packet types, frame types, TLS)")
            print(tshark_frames(rj.parent))
    for mode, c in counts.items():
        print(f"{mode}: " + ", ".join(f"{k}: {v}" for k, v in c.most_common()))
    for (side, delta, hold), g in sorted(gaps.items()):
        g.sort()
        held = f", ServerHello held {hold:g} ms" if hold else ""
        print(f"IACK, Δt = {delta:g} ms{held}: ACK → ServerHello gap at the {side}, median {g[len(g) // 2]:.2f} ms, "
              f"min {g[0]:.2f} ms, max {g[-1]:.2f} ms (n={len(g)})")  # fmt: skip


if __name__ == "__main__":
    main()
