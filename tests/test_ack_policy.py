"""Receivers' ACK policies measured from their qlogs, on runs recorded on loopback with real implementations."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from quicack.metrics.ack_policy import ack_policy_per_run, receiver_acks
from quicack.pcap.decode import decode_capture
from quicack.qlog import read_qlog

LOOPBACK = Path(__file__).parent / "data" / "loopback"


def _client_qlog(run: Path):
    (path,) = (run / "client" / "qlog").iterdir()
    return read_qlog(path, run_id="run", vantage="client")


def test_quic_go_acknowledges_every_second_packet() -> None:
    """quic-go's fixed policy (ackfreq22 Table 2: AR 2), over a 1 MB download."""
    log = _client_qlog(LOOPBACK / "quic-go_quic-go" / "transfer_1MB" / "1")
    (policy,) = ack_policy_per_run(log.packets, log.frames).iter_rows(named=True)
    assert policy["ack_ratio_median"] == 2.0 and policy["acks_sent"] > 100


def test_quiche_acknowledges_every_packet() -> None:
    """quiche sends an ACK with everything it sends (ackfreq22: 1-37; here every packet of a short transfer)."""
    log = _client_qlog(LOOPBACK / "aioquic_quiche" / "transfer_10KB" / "1")
    acks = receiver_acks(log.packets, log.frames)
    assert acks.height >= 10 and acks["packets_acknowledged"].max() == 1


def test_counted_packets_are_the_ack_eliciting_packets_received_before_the_last_ack() -> None:
    log = _client_qlog(LOOPBACK / "quic-go_quic-go" / "transfer_1MB" / "1")
    acks = receiver_acks(log.packets, log.frames)
    received = log.packets.filter(
        (pl.col("event") == "received") & (pl.col("pn_space") == "appdata") & pl.col("ack_eliciting")
        & (pl.col("time_ms") <= acks["time_ms"].max())
    )  # fmt: skip
    assert acks["packets_acknowledged"].sum() == received.height


def test_ack_only_sizes_from_the_qlog_equal_the_captured_datagrams() -> None:
    run = LOOPBACK / "quic-go_quic-go" / "transfer_1MB" / "1"
    log = _client_qlog(run)
    acks = receiver_acks(log.packets, log.frames).filter(pl.col("ack_only"))
    batches = list(decode_capture(run / "sim" / "loopback.pcap.gz", run / "client" / "keys.log", run_id="run"))
    datagrams = pl.concat([b.datagrams for b in batches])
    packets = pl.concat([b.packets for b in batches])
    captured = (
        packets.filter((pl.col("direction") == "c2s") & (pl.col("pn_space") == "appdata"))
        .join(datagrams, on=["direction", "datagram_index"])
        .select(
            "packet_number",
            (pl.col("ip_header_bytes") + pl.col("udp_header_bytes") + pl.col("udp_payload_bytes")).alias("wire"),
        )
    )
    joined = acks.join(captured, on="packet_number")
    assert joined.height == acks.height > 100
    assert (joined["ack_wire_bytes"] == joined["wire"]).all()
