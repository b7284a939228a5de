"""A client port reused for a new connection on the same UDP 4-tuple (real: six scan connections of one emulated
100k-connection scan, tests/data/scan_port_reuse) is a new connection: a client Initial with another Source
Connection ID starts it, in the capture decoder (both engines, pcapng and classic pcap) and in the scan reader's
identify pass. Before, all six were decoded as one connection and 71 of 86 packets failed to decrypt."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from quicack.pcap.decode import decode_capture
from quicack.pcap.decoder_engine import compiled_engine
from quicack.scan.identify import ConnectionIdentifier, datagram_owners

DATA = Path(__file__).resolve().parent / "data" / "scan_port_reuse"
SCIDS = [
    "0000000000000a5e",
    "0000000000000fd8",
    "000000000000130a",
    "0000000000002eec",
    "0000000000005511",
    "00000000000056fd",
]


@pytest.mark.parametrize("engine", ["python", "compiled"])
@pytest.mark.parametrize("name", ["capture.pcapng", "capture.pcap"])
def test_each_reuse_of_the_port_is_its_own_connection(engine, name):
    if engine == "compiled" and compiled_engine() is None:
        pytest.skip("compiled engine not installed")
    batches = list(decode_capture(DATA / name, DATA / "capture.keys.log", "reuse", "vp", engine=engine))
    datagrams = pl.concat([b.datagrams for b in batches])
    packets = pl.concat([b.packets for b in batches])
    frames = pl.concat([b.frames for b in batches])
    assert datagrams.height == 62 and datagrams["connection_odcid"].n_unique() == 6
    assert packets["decrypted"].all() and packets.height == 86
    # every connection has its handshake and its close
    per_connection = frames.group_by("connection_odcid").agg(
        crypto=(pl.col("frame_type") == "crypto").any(), closed=(pl.col("frame_type") == "connection_close").any()
    )
    assert per_connection["crypto"].all() and per_connection["closed"].all() and per_connection.height == 6
    assert pl.concat([b.ingest_issues for b in batches]).is_empty()


def test_the_identify_pass_splits_them_too():
    identifier = ConnectionIdentifier()
    owners = list(datagram_owners(DATA / "capture.pcapng", identifier))
    connections = identifier.connection_frame()
    assert connections["client_scid"].to_list() == SCIDS
    assert connections["client_hello_sni"].str.ends_with(".fastly.test").all()
    assert sorted({owner.connection for owner in owners}) == [1, 2, 3, 4, 5, 6]
