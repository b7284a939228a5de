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

import shutil
import sys
from pathlib import Path

from fixture_recording import keep_client_side_cut, record_fixture

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "ack_receivers"


def main() -> int:
    raw, failed = record_fixture(FIXTURE)
    for client_qlogs in raw.glob("*/*/*/client/qlog"):
        shutil.rmtree(client_qlogs)
    keep_client_side_cut(raw)
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
