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

import shutil
import sys
from functools import partial
from pathlib import Path

from quicack.testbed import router
from quicack.testbed.run import load_config, run_group
from quicack.testbed.scenarios import expand

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "tcp"


def main() -> int:
    groups = expand(load_config(FIXTURE / "testbed.yaml"))
    raw = FIXTURE / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    router.PathImpairment = partial(router.PathImpairment, rt_priority=0, spin_ms=0.0)  # type: ignore[misc]
    failed = 0
    for group in groups:
        failed += sum(result.status != "ok" for result in run_group(group, raw))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
