"""pcapng written in forms other writers use: interface timestamp options and obsolete Packet Blocks.

Both `_derived_` files are the real recording tests/data/pcap/aioquic_ipv4_fragments.pcap, turned into pcapng with
its secrets (`editcap -F pcapng --inject-secrets tls,aioquic_ipv4_fragments.keys.log`) and then rewritten by
tests/tools/rewrite_pcapng_blocks.py (tests/data/pcap/README.md), so every datagram's time and bytes must be those of
the recording:

- `aioquic_ipv4_fragments_tsoffset_derived.pcapng`: the interface has if_tsoffset = 100 s and if_tsresol = 9, its
  timestamps are nanoseconds counted from 100 s after the epoch (without the offset every time was 100 s early);
- `aioquic_ipv4_fragments_packet_blocks_derived.pcapng`: every packet in an obsolete Packet Block (type 2), as
  pcapng writers before 2010 wrote them (they were skipped without a word: no datagram at all).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from test_pcap_support import DATA

from quicack.pcap.decode import decode_capture
from quicack.pcap.decoder_engine import compiled_engine

PCAP = DATA / "pcap"
RECORDED = PCAP / "aioquic_ipv4_fragments.pcap"
TSOFFSET = PCAP / "aioquic_ipv4_fragments_tsoffset_derived.pcapng"
PACKET_BLOCKS = PCAP / "aioquic_ipv4_fragments_packet_blocks_derived.pcapng"
TSHARK = shutil.which("tshark")
ENGINES = ("python", "compiled") if compiled_engine() is not None else ("python",)
TABLES = ("datagrams", "packets", "frames", "ingest_issues")


def _tables(path: Path, engine: str) -> dict[str, pl.DataFrame]:
    keylogs = [PCAP / "aioquic_ipv4_fragments.keys.log"] if path == RECORDED else None  # the pcapng carry theirs
    batches = list(decode_capture(path, keylogs, "r", "v", engine=engine))
    return {name: pl.concat([getattr(b, name) for b in batches]) for name in TABLES}


def _tshark_times_and_sizes(path: Path) -> list[tuple[int, int]]:
    """(time_abs_ns, UDP payload bytes) of each UDP datagram tshark finds."""
    out = subprocess.run(
        [TSHARK, "-r", str(path), "-Y", "udp", "-T", "fields", "-e", "frame.time_epoch", "-e", "udp.length"],
        capture_output=True, text=True, check=True, encoding="utf-8",
    ).stdout  # fmt: skip
    rows = [(t.split("."), int(length) - 8) for t, length in (line.split("\t") for line in out.splitlines())]
    return [(int(whole) * 1_000_000_000 + int(part.ljust(9, "0")), size) for (whole, part), size in rows]


@pytest.mark.parametrize("path", [TSOFFSET, PACKET_BLOCKS], ids=lambda p: p.name)
@pytest.mark.parametrize("engine", ENGINES)
def test_derived_pcapng_forms_give_the_recordings_rows(path: Path, engine: str) -> None:
    derived, recorded = _tables(path, engine), _tables(RECORDED, engine)
    assert derived["ingest_issues"].height == 0, derived["ingest_issues"]["message"].to_list()
    assert derived["datagrams"].height == 11
    for name in ("datagrams", "packets", "frames"):
        assert derived[name].equals(recorded[name]), name


def test_derived_if_tsoffset_is_added_at_nanosecond_resolution() -> None:
    times = _tables(TSOFFSET, "python")["datagrams"]["time_abs_ns"]
    recorded = _tables(RECORDED, "python")["datagrams"]["time_abs_ns"]
    assert times.to_list() == recorded.to_list()
    assert times[0] % 1000 == 0  # the recording's microseconds


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (the reference dissector)")
@pytest.mark.parametrize("path", [TSOFFSET, PACKET_BLOCKS], ids=lambda p: p.name)
def test_derived_pcapng_forms_give_tsharks_times(path: Path) -> None:
    theirs = _tshark_times_and_sizes(path)
    assert len(theirs) == 11  # the recording's datagrams, reassembled from its fragments
    assert _tables(path, "python")["datagrams"].select("time_abs_ns", "udp_payload_bytes").rows() == theirs
