#!/usr/bin/env python3
"""Record tests/data/browsers/raw and tests/data/browser_acks/raw: real HTTP/3 downloads by Debian's Chromium and
Firefox ESR (quicack.testbed.browsers) through the testbed, from the stock quic-go server.

    python tests/tools/record_browsers.py

Needs root, `chromium`, `firefox-esr` and `certutil` (apt: chromium firefox-esr libnss3-tools) and the quic-go
server (src/implementations/build.sh). browsers: a 10 KB download each, both captures and every log kept whole.
browser_acks: a 1 MB download each; as tests/tools/record_ack_receivers.py does, only the client-side capture is kept
and every datagram in it not sent by the browser is cut to 96 bytes (the browser's ACK packets stay whole and decrypt).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fixture_recording import keep_client_side_cut, record_fixture

DATA = Path(__file__).resolve().parents[1] / "data"


def main() -> int:
    _raw, failed_whole = record_fixture(DATA / "browsers")
    raw, failed_cut = record_fixture(DATA / "browser_acks")
    keep_client_side_cut(raw)
    return 1 if failed_whole or failed_cut else 0


if __name__ == "__main__":
    sys.exit(main())
