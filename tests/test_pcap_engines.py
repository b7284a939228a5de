"""The two engines of the capture decoder (quicack.pcap.decoder_engine) write the same tables on every real capture.

The compiled one (quicack_core, built from rust/quicack_core by install.sh) is what the other test_pcap_* modules
decode with when it is installed; here every capture of the test data and of the embedded dataset is decoded
with both, once with the default batch size and once with tiny batches (batch boundaries, the pcap lane's
budget and its hand-over to the Python decoder), and the tables must be equal, value for value and row for row.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from test_pcap_support import DATA, Capture, find_captures

from quicack.pcap.decode import decode_capture
from quicack.pcap.decoder_engine import compiled_engine, select_engine

pytestmark = pytest.mark.skipif(compiled_engine() is None, reason="quicack_core is not built (install.sh builds it)")
SAMPLE = Path(__file__).parent.parent / "data" / "sample" / "raw"
TABLES = ("datagrams", "packets", "frames", "ingest_issues")


def _tables(capture: Capture, engine: str, batch_rows: int) -> dict[str, pl.DataFrame]:
    batches = list(decode_capture(capture.path, list(capture.keylogs) or None, "r", "v", batch_rows, engine=engine))
    return {name: pl.concat([getattr(batch, name) for batch in batches]) for name in TABLES}


def _assert_same(capture: Capture, batch_rows: int) -> None:
    python, compiled = (_tables(capture, engine, batch_rows) for engine in ("python", "compiled"))
    for name in TABLES:
        assert python[name].equals(compiled[name]), f"{capture.path}: {name} differs (batch_rows={batch_rows})"


@pytest.mark.parametrize("capture", find_captures(True, DATA, include_empty=True), ids=lambda c: c.name)
@pytest.mark.parametrize("batch_rows", [32_768, 40])
def test_engines_agree_on_test_captures(capture: Capture, batch_rows: int) -> None:
    _assert_same(capture, batch_rows)


def test_engines_agree_on_the_embedded_dataset() -> None:
    captures = find_captures(True, SAMPLE, include_empty=True)
    assert len(captures) > 700
    for capture in captures:
        _assert_same(capture, 32_768)


def test_engine_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUICACK_PCAP_ENGINE", raising=False)
    assert select_engine().name == "compiled"
    monkeypatch.setenv("QUICACK_PCAP_ENGINE", "python")
    assert select_engine().name == "python"
    assert select_engine("compiled").name == "compiled"
    with pytest.raises(ValueError, match="unknown capture decoder engine"):
        select_engine("fortran")


def _decoded_connections(capture: Path, keylog: Path) -> list:
    """The connections of a capture after the compiled engine decoded it through its lane."""
    from quicack.limits import DEFAULT_LIMITS
    from quicack.pcap.decode import CaptureDecoder
    from quicack.pcap.keylog import load_keylogs
    from quicack.pcap.lane_bridge import open_lane

    engine = compiled_engine()
    decoder = CaptureDecoder(load_keylogs([keylog]), "r", "v", str(capture), engine)
    stream, lane = open_lane(capture, engine, DEFAULT_LIMITS)
    with stream:
        decoder.use_lane(lane)
        for _ in decoder.decode_through_lane(32_768, 64):
            pass
    return list(decoder.connections_by_odcid.values())


@pytest.mark.skipif(
    compiled_engine() is None or not hasattr(compiled_engine().packet_keys, "used"),
    reason="a quicack_core built before PacketKeys.used makes no keys early",
)
def test_1rtt_keys_made_early_are_those_of_the_first_packet() -> None:
    # The lane decodes a connection's first 1-RTT datagram with keys made before it (Connection.make_keys_early);
    # they must be the keys decrypt_with_keylog would have made at that packet, whatever changed in between.
    from quicack.pcap.quic import VERSION_1, VERSION_2

    connection = _decoded_connections(DATA / "pcap" / "aioquic_v1_keyupdate.pcap.gz",
                                      DATA / "pcap" / "aioquic_v1_keyupdate.keys.log")[0]  # fmt: skip
    assert connection.keys[("1rtt", "c2s")].used and not connection.early_keys  # made early, then used
    # Again from just before the first 1-RTT packet: keys made early, remade while unused when the version changes.
    connection.keys.pop(("1rtt", "c2s")), connection.keys.pop(("1rtt", "s2c"))
    connection.make_keys_early()
    first = connection.keys[("1rtt", "c2s")]
    assert not first.used and connection.early_keys[("1rtt", "c2s")][0][3] == VERSION_1
    connection.make_keys_early()
    assert connection.keys[("1rtt", "c2s")] is first  # nothing changed: kept
    connection.version = VERSION_2
    connection.make_keys_early()
    remade = connection.keys[("1rtt", "c2s")]
    assert remade is not first and connection.early_keys[("1rtt", "c2s")][0][3] == VERSION_2
    with pytest.raises(ValueError):
        remade.decrypt(bytes(64), 0, 9, 64, 0, True)  # the first 1-RTT packet came (even one that fails)
    connection.version = VERSION_1
    connection.make_keys_early()
    assert connection.keys[("1rtt", "c2s")] is remade and ("1rtt", "c2s") not in connection.early_keys  # they stay
    assert connection.early_keys[("1rtt", "s2c")][0][3] == VERSION_1  # the unused ones follow the version
    # A Retry forgets the client random: unused early keys are no longer determined, so they go.
    connection.client_random = None
    connection.make_keys_early()
    assert ("1rtt", "s2c") not in connection.keys and not connection.early_keys


@pytest.mark.skipif(
    compiled_engine() is None or not getattr(compiled_engine().pcap_lane, "LONG_HEADERS", False),
    reason="a quicack_core built before its lane decoded long header packets",
)
def test_the_lane_decodes_long_header_datagrams_as_the_decoder_would(monkeypatch: pytest.MonkeyPatch) -> None:
    # The lane takes a handshake datagram (the client's Initial ACK + Handshake Finished + first 1-RTT packet) when
    # its keys are known; the rows must be those the Python decoder writes when it is given the same datagrams.
    from quicack.limits import DEFAULT_LIMITS
    from quicack.pcap.decode import CaptureDecoder
    from quicack.pcap.keylog import load_keylogs
    from quicack.pcap.lane_bridge import open_lane

    capture, keylog = DATA / "pcap" / "aioquic_v1_keyupdate.pcap.gz", DATA / "pcap" / "aioquic_v1_keyupdate.keys.log"
    original = CaptureDecoder._add_one_datagram
    results = {}
    for long_headers in (False, True):
        long_header_datagrams: list[int] = []

        def count(self, connection, direction, datagram, seen=long_header_datagrams):
            if datagram.payload[0] & 0x80:
                seen.append(datagram.record_number)
            original(self, connection, direction, datagram)

        monkeypatch.setattr(CaptureDecoder, "_add_one_datagram", count)
        engine = compiled_engine()
        decoder = CaptureDecoder(load_keylogs([keylog]), "r", "v", str(capture), engine)
        stream, lane = open_lane(capture, engine, DEFAULT_LIMITS)
        with stream:
            decoder.use_lane(lane)
            decoder.lane_long_headers = long_headers
            batches = [*decoder.decode_through_lane(32_768, 64), decoder.take_batch(final=True)]
        tables = {name: pl.concat([getattr(batch, name) for batch in batches]) for name in TABLES}
        results[long_headers] = (tables, long_header_datagrams)
    (by_python, python_count), (by_lane, lane_count) = results[False], results[True]
    assert len(lane_count) < len(python_count)  # the lane took some
    assert by_python["packets"].filter(pl.col("packet_type") == "handshake").height > 0
    for name in TABLES:
        assert by_python[name].equals(by_lane[name]), name
