#!/usr/bin/env python3
"""Record tests/data/tcp/raw: real testbed runs of Linux TCP (client and server linux-tcp) at ACK ratios 1, 2 and
10 (router ACK thinning), and one with 2 % loss server -> client so that SACK blocks appear. Needs root.

    python tests/tools/record_tcp.py

The matrix is tests/data/tcp/testbed.yaml. As for tests/data/ack_policy, the impairment runs without real-time
priority and without spinning (the fixtures are about which segments the receiver acknowledges and their bytes, not
sub-millisecond timing, and the machine is shared). Both router captures are kept, cut by tcpdump's snap length
(128 bytes: all headers and options). The old raw folder is replaced.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fixture_recording import record_fixture

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "tcp"


def main() -> int:
    _raw, failed = record_fixture(FIXTURE)
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
