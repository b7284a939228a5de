"""Builds tests/data/qir_as_found/: the embedded dataset's handshake runs laid out as the imc24 artifact
publishes its QUIC Interop Runner captures (``all-interop-servers/<day>/<server>_<client>/handshake/``, only
``client/keys.log`` and ``sim/trace_node_left.pcap``, no run.json, no qlog), with the capture's link layer
rewritten to PPP as ns-3 writes it (link type 9, protocol field 0x0021). Only the link-layer header changes; the
IP, UDP and QUIC bytes are the recorded ones. One day of one server has an empty capture, as a failed run leaves.

    python tests/tools/make_qir_as_found.py
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from quicack.pcap.capture_file import LinkRecord, open_capture, read_link_records

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data/sample/raw"
OUT = REPO / "tests/data/qir_as_found/all-interop-servers"
LINKTYPE_PPP = 9
PPP_IPV4 = b"\x00\x21"
# Server runs of the embedded dataset (client aioquic); each repetition becomes one day.
SERVERS = {
    "aioquic": "aioquic_aioquic/handshake-iack-rtt30ms-10KB-h3",
    "ngtcp2": "ngtcp2_aioquic/handshake-none-rtt30ms-10KB-h3",
    "quic-go": "quic-go_aioquic/handshake-none-rtt30ms-10KB-h3",
    "quinn": "quinn_aioquic/handshake-none-rtt30ms-10KB-hq",
}
DAYS = ("2024-05-14", "2024-05-15", "2024-05-16")
EMPTY = ("2024-05-16", "quinn")  # the run that failed that day: an empty capture


def write_ppp(source: Path, target: Path) -> int:
    with open_capture(source) as stream:
        records = [r for r in read_link_records(stream) if isinstance(r, LinkRecord)]
    with target.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_PPP))
        for record in records:
            frame = PPP_IPV4 + record.data[14:]  # Ethernet header off, PPP protocol field on
            seconds, nanoseconds = divmod(record.time_abs_ns, 1_000_000_000)
            out.write(struct.pack("<IIII", seconds, nanoseconds // 1000, len(frame), len(frame)) + frame)
    return len(records)


def main() -> None:
    shutil.rmtree(OUT.parent, ignore_errors=True)
    for repetition, day in enumerate(DAYS, start=1):
        for server, testcase in SERVERS.items():
            source = SAMPLE / testcase / str(repetition)
            run = OUT / day / f"{server}_aioquic" / "handshake"
            (run / "client").mkdir(parents=True)
            (run / "sim").mkdir()
            shutil.copy(source / "client/keys.log", run / "client/keys.log")
            capture = run / "sim/trace_node_left.pcap"
            if (day, server) == EMPTY:
                capture.touch()
            else:
                write_ppp(source / "sim/trace_node_left.pcap.gz", capture)
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
