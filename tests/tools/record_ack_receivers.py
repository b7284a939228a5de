#!/usr/bin/env python3
"""Record tests/data/ack_receivers/raw: real testbed runs of receivers other than quicack's aioquic one — quinn
asked for an ACK policy by the quinn server (ACK_FREQUENCY), ngtcp2 with --ack-thresh, the fixed policies of
quic-go and go-x-net — and of the aioquic server as a sender with its congestion control and pacing set.

The matrix is tests/data/ack_receivers/testbed.yaml. Needs root, and ``QUICACK_IMPLEMENTATIONS_DIR`` holding a
quinn-server built from this checkout (``src/implementations/build.sh quinn``) next to the Go clients.

    python tests/tools/record_ack_receivers.py

As tests/tools/record_ack_policy.py does: the impairment without real-time priority, only the client-side capture
kept and every datagram in it not sent by the client cut to 96 bytes (the client's ACK packets stay whole and
decrypt). The clients' qlogs are dropped (the ACK ratio is measured on the wire, for every client alike), and the
server's qlog is kept only in the groups that keep it (``server_qlog``: the sender runs, for the congestion window).
"""

from __future__ import annotations

import json
import shutil
import sys
from functools import partial
from pathlib import Path

from record_ack_policy import SERVER_DATAGRAM_SNAPLEN, cut_other_than

from quicack.testbed import router
from quicack.testbed.run import load_config, run_group
from quicack.testbed.scenarios import expand

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "ack_receivers"


def main() -> int:
    groups = expand(load_config(FIXTURE / "testbed.yaml"))
    raw = FIXTURE / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    router.PathImpairment = partial(router.PathImpairment, rt_priority=0, spin_ms=0.0)  # type: ignore[misc]
    failed = 0
    for group in groups:
        failed += sum(result.status != "ok" for result in run_group(group, raw))
    for client_qlogs in raw.glob("*/*/*/client/qlog"):
        shutil.rmtree(client_qlogs)
    for client_side in raw.glob("*/*/*/sim/trace_node_left.pcap.gz"):
        run = json.loads((client_side.parents[1] / "run.json").read_text())
        cut_other_than(client_side, run["testbed"]["addresses"]["client"], SERVER_DATAGRAM_SNAPLEN)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
