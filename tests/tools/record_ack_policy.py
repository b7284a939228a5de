#!/usr/bin/env python3
"""Record tests/data/ack_policy/raw: real testbed runs of the aioquic client with a set ACK policy.

The matrix is tests/data/ack_policy/testbed.yaml (ACK ratios 1, 2, 10, 20; the delay timer; D, NR and 3A under
random loss), each a 1 MB download from the aioquic server through the testbed's namespaces. Needs root.

    python tests/tools/record_ack_policy.py

The impairment runs without real-time priority and without spinning (``PathImpairment.rt_priority = 0``,
``spin_ms = 0``): these fixtures are for what the receiver does (which packets an ACK covers and why), not for
sub-millisecond timing, and the machine is shared. The old raw folder is replaced.

To keep the fixture small, only the client-side capture (sim/trace_node_left.pcap.gz) is kept, and in it every
datagram not sent by the client is cut to 96 bytes, as tcpdump's snap length would (``-s 96``, caplen < len): the
server's data packets no longer decrypt, the client's ACK packets — up to ~150 bytes with many ACK ranges, longer
than any one snap length that keeps the fixture small — stay whole.
"""

from __future__ import annotations

import json
import shutil
import sys
from functools import partial
from pathlib import Path

from quicack.testbed import router
from quicack.testbed.reduce import cut_frames_not_from
from quicack.testbed.run import load_config, run_group
from quicack.testbed.scenarios import expand

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "ack_policy"
SERVER_DATAGRAM_SNAPLEN = 96


def main() -> int:
    groups = expand(load_config(FIXTURE / "testbed.yaml"))
    raw = FIXTURE / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    router.PathImpairment = partial(router.PathImpairment, rt_priority=0, spin_ms=0.0)  # type: ignore[misc]
    failed = 0
    for group in groups:
        failed += sum(result.status != "ok" for result in run_group(group, raw))
    for server_side in raw.glob("*/*/*/sim/trace_node_right.pcap*"):
        server_side.unlink()
    for client_side in raw.glob("*/*/*/sim/trace_node_left.pcap.gz"):
        run = json.loads((client_side.parents[1] / "run.json").read_text())
        cut_frames_not_from(client_side, run["testbed"]["addresses"]["client"], SERVER_DATAGRAM_SNAPLEN)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
