"""ack_breakdown on every real capture of the test data: the components add up to the wire bytes, exactly."""

from __future__ import annotations

import polars as pl
import pytest
from test_pcap_support import Capture, decode, find_captures

from quicack.metrics.ack_breakdown import KEYS, ack_breakdown

# Captures cut by a snap length too: their unreadable packets are the 'undecrypted' component.
CAPTURES_WITH_SNAPLEN = find_captures(include_snaplen_cut=True)


@pytest.mark.parametrize("capture", CAPTURES_WITH_SNAPLEN, ids=lambda c: c.name)
def test_components_add_up_to_the_ip_bytes_of_each_direction(capture: Capture) -> None:
    decoded = decode(capture)
    breakdown = ack_breakdown(decoded.datagrams, decoded.packets, decoded.frames)
    assert breakdown.height > 0
    ip_bytes = (
        decoded.datagrams.group_by("direction")
        .agg((pl.col("ip_header_bytes") + pl.col("udp_header_bytes") + pl.col("udp_payload_bytes")).sum().alias("ip"))
        .sort("direction")
    )
    components = breakdown.group_by("direction").agg(pl.col("bytes").sum().alias("ip")).sort("direction")
    assert components.equals(ip_bytes)
    # direction_bytes is the sum of the components of its (run, vantage, direction, phase)
    per_phase = breakdown.group_by(KEYS).agg(pl.col("bytes").sum(), pl.col("direction_bytes").unique())
    assert (per_phase["direction_bytes"].list.len() == 1).all()
    assert (per_phase["bytes"] == per_phase["direction_bytes"].list.first()).all()
    # one ip_header and one udp_header per datagram
    headers = breakdown.filter(pl.col("component") == "udp_header")
    assert headers["packets"].sum() == decoded.datagrams.height
    assert headers["bytes"].sum() == 8 * decoded.datagrams.height


def test_the_first_rtt_ends_with_the_clients_answer_to_the_server() -> None:
    """aioquic handshake: before the end of the first round trip the client sent only its padded Initial."""
    (capture,) = [c for c in CAPTURES_WITH_SNAPLEN if c.name == "pcap/aioquic_sll.pcap"]
    decoded = decode(capture)
    breakdown = ack_breakdown(decoded.datagrams, decoded.packets, decoded.frames)
    first_rtt_client = breakdown.filter((pl.col("direction") == "c2s") & ~pl.col("after_first_rtt"))
    assert first_rtt_client.filter(pl.col("component") == "ip_header")["packets"].to_list() == [1]
    assert set(first_rtt_client["component"]) <= {
        "ip_header", "udp_header", "quic_header", "aead_tag", "frame:crypto", "frame:padding", "datagram_padding"
    }  # fmt: skip
    # the client's ACKs all come after it
    client_acks = breakdown.filter((pl.col("direction") == "c2s") & (pl.col("component") == "frame:ack"))
    assert client_acks["after_first_rtt"].all() and client_acks["bytes"].sum() > 0


def test_packets_cut_by_the_snap_length_are_counted_whole_as_undecrypted() -> None:
    (capture,) = [c for c in CAPTURES_WITH_SNAPLEN if "snaplen" in c.name]
    decoded = decode(capture)
    breakdown = ack_breakdown(decoded.datagrams, decoded.packets, decoded.frames)
    cut = decoded.packets.filter(~pl.col("decrypted").fill_null(True))
    undecrypted = breakdown.filter(pl.col("component") == "undecrypted")
    assert cut.height > 0
    assert (undecrypted["bytes"].sum(), undecrypted["packets"].sum()) == (cut["packet_bytes"].sum(), cut.height)
