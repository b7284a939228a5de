"""Byte accounting on every real capture of the test data: nothing invented, nothing lost.

    IP header + UDP header + sum(QUIC packet bytes) == bytes of the IP datagram on the wire
    QUIC header + AEAD tag + sum(frame bytes)      == packet bytes   (every decrypted packet)

The wire sizes are read here independently of the decoder, from the raw link-layer records.
"""

from __future__ import annotations

import polars as pl
import pytest
from test_pcap_support import Capture, decode, find_captures

from quicack.pcap.capture_file import LinkRecord, open_capture, read_link_records

CAPTURES = find_captures()


def wire_udp_bytes(capture: Capture) -> tuple[int, int]:
    """(number of UDP datagrams, total IP-datagram bytes of them) straight from the capture records. A datagram
    the sender's kernel fragmented counts once (its first fragment), its bytes those of every fragment."""
    count = total = 0
    with open_capture(capture.path) as stream:
        for record in read_link_records(stream):
            if not isinstance(record, LinkRecord):
                continue
            data = record.data
            offset = {1: 14, 113: 16, 276: 20, 101: 0, 9: 2}[record.linktype]  # 9: PPP as ns-3 writes it
            if record.linktype == 1 and data[12:14] not in (b"\x08\x00", b"\x86\xdd"):
                continue
            version = data[offset] >> 4
            if version == 4 and data[offset + 9] == 17:
                total += int.from_bytes(data[offset + 2 : offset + 4], "big")
                count += not int.from_bytes(data[offset + 6 : offset + 8], "big") & 0x1FFF  # fragment offset 0
            elif version == 6 and data[offset + 6] == 17:
                total += 40 + int.from_bytes(data[offset + 4 : offset + 6], "big")
                count += 1
            elif version == 6 and data[offset + 6] == 44 and data[offset + 40] == 17:  # a Fragment header
                total += 40 + int.from_bytes(data[offset + 4 : offset + 6], "big")
                count += not int.from_bytes(data[offset + 42 : offset + 44], "big") & 0xFFF8
    return count, total


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda c: c.name)
def test_datagram_bytes_equal_wire_bytes(capture: Capture) -> None:
    decoded = decode(capture)
    datagrams = decoded.datagrams
    assert datagrams.height > 0
    records, wire_total = wire_udp_bytes(capture)
    ours = datagrams.select(
        (pl.col("ip_header_bytes") + pl.col("udp_header_bytes") + pl.col("udp_payload_bytes")).sum()
    ).item()
    # A UDP GSO super-datagram (loopback) is split into its real datagrams, each with its own IP and UDP header.
    extra_segments = datagrams.height - records
    per_segment_headers = datagrams["ip_header_bytes"].first() + 8
    assert ours == wire_total + extra_segments * per_segment_headers


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda c: c.name)
def test_packets_fill_their_datagram_exactly(capture: Capture) -> None:
    decoded = decode(capture)
    per_datagram = decoded.packets.group_by("direction", "datagram_index").agg(
        packet_bytes=pl.col("packet_bytes").sum(), packets=(pl.col("packet_type") != "datagram_padding").sum()
    )
    joined = decoded.datagrams.join(per_datagram, on=["direction", "datagram_index"], how="left")
    mismatched = joined.filter(
        (pl.col("udp_payload_bytes") != pl.col("packet_bytes").fill_null(0))
        | (pl.col("quic_packets") != pl.col("packets").fill_null(0))
    )
    assert mismatched.height == 0, mismatched.head()


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda c: c.name)
def test_frames_fill_their_packet_exactly(capture: Capture) -> None:
    decoded = decode(capture)
    # Frames follow their packets in order and frame_index restarts at 0 for each packet; this pairs them even
    # when (direction, space, number, time) repeat: a packet resent verbatim, or two connections in one capture.
    frames = decoded.frames.with_columns(packet=(pl.col("frame_index") == 0).cum_sum() - 1)
    per_packet = frames.group_by("packet").agg(
        pl.col("frame_bytes").sum(), pl.col("packet_number").first(), pl.col("direction").first()
    )
    decrypted = decoded.packets.filter(pl.col("decrypted") & pl.col("packet_number").is_not_null()).with_row_index(
        "packet"
    )
    joined = decrypted.join(per_packet.with_columns(pl.col("packet").cast(pl.UInt32)), on="packet", how="left")
    assert (joined["packet_number"] == joined["packet_number_right"]).all()
    assert (joined["direction"] == joined["direction_right"]).all()
    mismatched = joined.filter(
        pl.col("header_bytes") + pl.col("aead_tag_bytes") + pl.col("frame_bytes").fill_null(0) != pl.col("packet_bytes")
    )
    assert mismatched.height == 0, mismatched.head()
    assert per_packet.height == decrypted.height


@pytest.mark.parametrize(
    "capture", [c for c in CAPTURES if c.keylogs or c.path.suffix == ".pcapng"], ids=lambda c: c.name
)
def test_everything_decrypts_with_the_keylog(capture: Capture) -> None:
    packets = decode(capture).packets
    quic = packets.filter(~pl.col("packet_type").is_in(["unknown", "datagram_padding"]))
    assert quic.filter(~pl.col("decrypted")).height == 0
    # Every connection's handshake is named from its CRYPTO frames.
    messages = set(decode(capture).frames["tls_messages"].drop_nulls().explode())
    for message in ("client_hello", "server_hello", "encrypted_extensions", "certificate", "finished"):
        assert message in messages
