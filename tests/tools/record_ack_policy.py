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

import sys
from pathlib import Path

from fixture_recording import keep_client_side_cut, record_fixture

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "ack_policy"


def main() -> int:
    raw, failed = record_fixture(FIXTURE)
    keep_client_side_cut(raw)
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
