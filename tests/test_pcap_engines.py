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
from aioquic.quic.crypto import CryptoPair
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pcap_support import DATA, Capture, find_captures

from quicack.frame_types import WIRE_NAMES
from quicack.pcap.columns import assemble_batch
from quicack.pcap.decode import decode_capture
from quicack.pcap.decoder_engine import compiled_engine, python_engine, select_engine
from quicack.pcap.quic import initial_keys
from tests.conftest import SAMPLE_RAW as SAMPLE

pytestmark = pytest.mark.skipif(compiled_engine() is None, reason="quicack_core is not built (install.sh builds it)")
TABLES = ("datagrams", "packets", "frames", "tcp_segments", "ingest_issues")


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
    from quicack.pcap.decode import CaptureDecoder
    from quicack.pcap.keylog import load_keylogs
    from quicack.pcap.lane_bridge import open_lane
    from quicack.reading.limits import DEFAULT_LIMITS

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
    from quicack.pcap.decode import CaptureDecoder
    from quicack.pcap.keylog import load_keylogs
    from quicack.pcap.lane_bridge import open_lane
    from quicack.reading.limits import DEFAULT_LIMITS

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


@pytest.mark.skipif(
    compiled_engine() is None or not getattr(compiled_engine().pcap_lane, "CUT_DATAGRAMS", False),
    reason="a quicack_core built before its lane added datagrams cut by the snap length",
)
def test_the_lane_adds_datagrams_cut_by_the_snap_length_as_the_decoder_would(monkeypatch: pytest.MonkeyPatch) -> None:
    # Firefox's 1 MB download, every datagram it did not send cut to 96 bytes (tests/data/browser_acks' README; 867
    # cut 1-RTT datagrams after the handshake): the lane adds their rows itself, after the first few only counting
    # them for the issue; rows and the issue (count, first examples) as when the Python decoder adds them.
    from quicack.pcap.decode import CaptureDecoder
    from quicack.pcap.keylog import load_keylogs
    from quicack.pcap.lane_bridge import open_lane
    from quicack.reading.limits import DEFAULT_LIMITS

    run = DATA / "browser_acks" / "raw" / "quic-go_firefox" / "ack_ratio-none-rtt200ms-1MB-h3" / "1"
    capture, keylog = run / "sim" / "trace_node_left.pcap.gz", run / "client" / "keys.log"
    original = CaptureDecoder._add_one_datagram
    results = {}
    for cut_by_lane in (False, True):
        cut_in_python: list[int] = []

        def count(self, connection, direction, datagram, seen=cut_in_python):
            if len(datagram.payload) < datagram.udp_payload_bytes:
                seen.append(datagram.record_number)
            original(self, connection, direction, datagram)

        monkeypatch.setattr(CaptureDecoder, "_add_one_datagram", count)
        engine = compiled_engine()
        decoder = CaptureDecoder(load_keylogs([keylog]), "r", "v", str(capture), engine)
        stream, lane = open_lane(capture, engine, DEFAULT_LIMITS)
        with stream:
            decoder.use_lane(lane)
            decoder.lane_cut_datagrams = cut_by_lane
            batches = [*decoder.decode_through_lane(32_768, 64), decoder.take_batch(final=True)]
        tables = {name: pl.concat([getattr(batch, name) for batch in batches]) for name in TABLES}
        results[cut_by_lane] = (tables, cut_in_python, lane.cut_count)
    (by_python, python_cut, _), (by_lane, lane_cut, counted_by_lane) = results[False], results[True]
    assert len(python_cut) > 800 and not lane_cut and counted_by_lane > 800  # the lane took them
    assert by_python["ingest_issues"]["message"].str.contains(f"snap length.*{len(python_cut)} times").any()
    for name in TABLES:
        assert by_python[name].equals(by_lane[name]), name


# Property tests: the compiled parts against their Python twins on generated inputs (hypothesis). Real captures
# (above) cover what implementations send; these cover what they rarely do: every frame layout with field values
# of every varint length, non-minimal encodings, damaged and truncated payloads, packets encrypted by aioquic with
# any packet number and decrypted from any expected packet number.

_VARINT_LENGTHS = {1: (0x00, 6), 2: (0x40, 14), 4: (0x80, 30), 8: (0xC0, 62)}


@st.composite
def _varints(draw, max_bits: int = 62) -> bytes:
    """A varint of any encoded length, minimal or not."""
    length = draw(st.sampled_from([n for n, (_, bits) in _VARINT_LENGTHS.items() if bits >= 6]))
    prefix, bits = _VARINT_LENGTHS[length]
    value = draw(st.integers(0, (1 << min(bits, max_bits)) - 1))
    return (value | prefix << (8 * length - 8)).to_bytes(length, "big")


def _small_varint(value: int) -> bytes:
    return bytes([value]) if value < 64 else (value | 0x4000).to_bytes(2, "big")


@st.composite
def _frames(draw) -> bytes:
    """One frame of a listed wire type with generated fields, or bytes of anything."""
    number = draw(st.sampled_from([*sorted(WIRE_NAMES), 0x20, 0x21, 0x40, 0xFF]))
    out = bytearray(_small_varint(number))
    if number == 0x00:
        return bytes(out) + bytes(draw(st.integers(0, 8)))
    data = draw(st.binary(max_size=24))
    if 0x08 <= number <= 0x0F:
        out += draw(_varints())
        if number & 0x04:
            out += draw(_varints())
        if number & 0x02:
            out += _small_varint(len(data))
        return bytes(out + data)
    if number in (0x02, 0x03):
        out += draw(_varints()) + draw(_varints())
        ranges = draw(st.integers(0, 4))
        out += _small_varint(ranges) + draw(_varints())
        for _ in range(ranges):
            out += draw(_varints(8)) + draw(_varints(8))
        if number == 0x03:
            out += draw(_varints()) + draw(_varints()) + draw(_varints())
        return bytes(out)
    if number in (0x06, 0x07, 0x31):
        if number == 0x06:
            out += draw(_varints())
        return bytes(out + _small_varint(len(data)) + data)
    if number == 0x18:
        cid = draw(st.binary(max_size=20))
        return bytes(
            out
            + draw(_varints())
            + draw(_varints())
            + bytes([len(cid)])
            + cid
            + draw(st.binary(min_size=16, max_size=16))
        )
    if number in (0x1C, 0x1D):
        out += draw(_varints()) + (draw(_varints()) if number == 0x1C else b"")
        return bytes(out + _small_varint(len(data)) + data)
    fields = {0x04: 3, 0x05: 2, 0x11: 2, 0x15: 2, 0xAF: 4}.get(number, 1 if 0x10 <= number <= 0x19 else 0)
    for _ in range(fields):
        out += draw(_varints())
    if number in (0x1A, 0x1B):
        out += draw(st.binary(min_size=8, max_size=8))
    if number == 0x30:
        out += data
    return bytes(out)


@st.composite
def _payloads(draw) -> bytes:
    payload = b"".join(draw(st.lists(st.one_of(_frames(), st.binary(max_size=6)), min_size=1, max_size=6)))
    if draw(st.booleans()):
        payload = payload[: draw(st.integers(0, len(payload)))]  # cut anywhere
    return payload


def _walked(rows_class, payloads: list[bytes]) -> tuple[list, object]:
    rows = rows_class()
    results = []
    for payload in payloads:
        result = rows.walk(payload)
        count = result[0]
        rows.add_packet(0, "1rtt", len(payload), frame_count=count)
        results.append((count, result[1], result[2], result[3], result[4], result[5]))
    rows.add_datagram("odcid", "c2s", 1, 0.0, 0, 20, 100, len(payloads))
    return results, assemble_batch(rows, "r", "client", "p", [])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_payloads(), min_size=1, max_size=4))
def test_both_frame_walkers_give_the_same_rows_for_any_payload(payloads: list[bytes]) -> None:
    python_results, python_batch = _walked(python_engine().row_buffers, payloads)
    compiled_results, compiled_batch = _walked(compiled_engine().row_buffers, payloads)
    assert compiled_results == python_results
    for name in ("packets", "frames"):
        assert getattr(compiled_batch, name).equals(getattr(python_batch, name)), name


@settings(max_examples=150, deadline=None)
@given(
    payload=st.binary(min_size=1, max_size=300),
    packet_number=st.integers(0, (1 << 32) - 1),
    expected=st.integers(0, (1 << 40)),
    damage=st.one_of(st.none(), st.tuples(st.integers(0, 400), st.integers(1, 255))),
    cut=st.one_of(st.none(), st.integers(0, 400)),
    version=st.sampled_from([0x00000001, 0x6B3343CF]),
)
def test_both_packet_protections_agree_on_any_initial_packet(payload, packet_number, expected, damage, cut, version):
    dcid = bytes(range(8))
    sender = CryptoPair()
    sender.setup_initial(dcid, is_client=True, version=version)
    pn_bytes = 4 if packet_number >= 1 << 16 else 2
    # An Initial's long header: flags, version, DCID, empty SCID, empty token, length, packet number
    length = pn_bytes + len(payload) + 16
    header = bytes([0xC0 | (pn_bytes - 1)]) + version.to_bytes(4, "big") + bytes([8]) + dcid + b"\x00\x00"
    header += (length | 0x4000).to_bytes(2, "big") + (packet_number & ((1 << (8 * pn_bytes)) - 1)).to_bytes(
        pn_bytes, "big"
    )
    packet = bytearray(sender.encrypt_packet(header, payload.ljust(20, b"\x00"), packet_number))
    if damage is not None:
        packet[damage[0] % len(packet)] ^= damage[1]
    if cut is not None:
        packet = packet[:cut]
    pn_offset = len(header) - pn_bytes
    outcomes = []
    for keys_class in (python_engine().packet_keys, compiled_engine().packet_keys):
        client, _ = initial_keys(dcid, version, keys_class)
        try:
            decrypted = client.decrypt(bytes(packet), 0, pn_offset, len(packet), expected, False)
            outcomes.append((decrypted.packet_number, decrypted.header_bytes, bytes(decrypted.payload)))
        except ValueError:
            outcomes.append(None)
    assert outcomes[0] == outcomes[1]
    if damage is None and cut is None and abs(expected - packet_number) < 1 << (8 * pn_bytes - 1):
        assert outcomes[0] is not None and outcomes[0][0] == packet_number
