"""tcpdump on both router interfaces, as the QUIC Interop Runner's simulator captures.

``sim/trace_node_left.pcap`` is the router interface facing the client, ``sim/trace_node_right.pcap`` the one
facing the server. Each sees one direction before the impairment (ingress) and the other after it (egress,
after tbf), so the pair measures the delay the router actually applied. UDP and TCP are captured (the
ACK-ratio study's Linux TCP runs); ARP and the rest are not.
"""

from __future__ import annotations

import gzip
import shutil
import signal
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from quicack.layout.vantage import CAPTURE_FILE_NAMES, SIM_LEFT, SIM_RIGHT
from quicack.testbed.netns import Topology, ns_argv
from quicack.testbed.procs import Managed, ProcessSet, wait_until

# The simulator's file names: the analysis finds captures by these (quicack.layout.vantage).
LEFT = CAPTURE_FILE_NAMES[SIM_LEFT]
RIGHT = CAPTURE_FILE_NAMES[SIM_RIGHT]


@dataclass
class Captures:
    left: Managed
    right: Managed
    left_path: Path
    right_path: Path

    def stop(self) -> None:
        # SIGINT makes tcpdump flush and close the file cleanly.
        for m in (self.left, self.right):
            m.stop(signal.SIGINT, grace_s=5.0)


def _says_listening(tcpdump: Managed) -> bool:
    return b"listening on" in tcpdump.stderr_path.read_bytes()


def start_captures(topo: Topology, sim_dir: Path, procs: ProcessSet, snaplen: int = 0) -> Captures:
    sim_dir.mkdir(parents=True, exist_ok=True)
    handles = []
    for name, dev, fname in (
        ("tcpdump_left", topo.router_left_if, LEFT),
        ("tcpdump_right", topo.router_right_if, RIGHT),
    ):
        path = sim_dir / fname
        argv = ["tcpdump", "-i", dev, "-n", "-U", "--immediate-mode", "-s", str(snaplen), "-w", str(path), "udp or tcp"]
        m = procs.start(name, ns_argv(topo.router_ns, argv))
        handles.append((m, path))
    for m, _ in handles:
        wait_until(partial(_says_listening, m), 10.0, m, f"{m.name} to listen")
    (lm, lp), (rm, rp) = handles
    return Captures(lm, rm, lp, rp)


def gzip_file(path: Path) -> Path:
    """Replace `path` by `path.gz` (deterministic header: no name, mtime 0)."""
    out = path.with_name(path.name + ".gz")
    with (
        path.open("rb") as src,
        out.open("wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as dst,
    ):
        shutil.copyfileobj(src, dst)
    path.unlink()
    return out
