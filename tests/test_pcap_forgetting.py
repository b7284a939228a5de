"""The capture decoder forgets a connection some time after its CONNECTION_CLOSE (memory of a million-connection
scan capture follows its open connections), without changing what it decodes: on a real scan capture (the embedded
emulated scan, 40 connections that each close within a second), forgetting closed connections after 200 ms of
capture time gives the same tables as keeping every connection to the end."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from quicack.pcap import decode as decode_module
from quicack.pcap.decode import decode_capture
from quicack.pcap.decoder_engine import compiled_engine

MEASUREMENT = (
    Path(__file__).resolve().parents[1]
    / "data"
    / "scan"
    / "raw"
    / "hamburg"
    / "data"
    / "2024-08-07T12:00:00,000000000+00:00"
)


def _tables(linger_ns: int, engine: str, batch_rows: int) -> tuple[dict[str, pl.DataFrame], int]:
    forgotten = []
    original = decode_module.CaptureDecoder._forget

    def counting(self, connection):
        forgotten.append(connection.odcid)
        original(self, connection)

    decode_module.CaptureDecoder._forget = counting
    try:
        batches = list(
            decode_capture(
                MEASUREMENT / "capture.pcap.zst",
                MEASUREMENT / "key.log.zst",
                "scan",
                "vp",
                batch_rows=batch_rows,
                engine=engine,
                closed_linger_ns=linger_ns,
            )
        )
    finally:
        decode_module.CaptureDecoder._forget = original
    names = ("datagrams", "packets", "frames", "ingest_issues")
    return {name: pl.concat([getattr(b, name) for b in batches]) for name in names}, len(forgotten)


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_forgetting_closed_connections_changes_nothing_decoded(engine):
    if engine == "compiled" and compiled_engine() is None:
        pytest.skip("compiled engine not installed")
    kept, none_forgotten = _tables(10**18, engine, batch_rows=16)
    forgetful, forgotten = _tables(200_000_000, engine, batch_rows=16)
    assert none_forgotten == 0 and forgotten >= 30  # most of the 40 connections were dropped before the end
    for name in kept:
        assert kept[name].equals(forgetful[name]), name
    assert kept["frames"].filter(pl.col("frame_type") == "connection_close").height >= 40


def test_a_datagram_after_a_forgotten_close_is_reported_not_lost():
    """Forgetting too early (50 ms, shorter than this capture's draining periods) loses a late datagram's decoding,
    and the issue rows say that datagrams were skipped."""
    kept, _ = _tables(10**18, "python", batch_rows=16)
    early, forgotten = _tables(50_000_000, "python", batch_rows=16)
    skipped = kept["datagrams"].height - early["datagrams"].height
    assert forgotten > 0 and skipped > 0
    assert early["ingest_issues"]["message"].str.contains("were skipped").any()
