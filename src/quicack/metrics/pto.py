"""Retransmissions, spurious retransmissions and PTO expiries per run and sender, from the captures.

The testbed captures both ends of the emulated link: a sender's packets are seen at its own side
before the emulator may drop them (c2s: sim_left, s2c: sim_right), and at the other side only if
they were delivered. That makes loss and spuriousness observable without any qlog:

* a *retransmission* is a CRYPTO frame (per packet number space) or STREAM frame (per stream)
  whose first byte lies below the highest byte the sender had already sent on it;
* it is *spurious* when the packet that first carried that byte reached the receiver side;
* a *PTO expiry* is inferred as a burst of probe packets (ack-eliciting, without new data) sent
  while nothing arrived from the peer in the preceding ``TIMER_GAP_MS`` — loss detection retransmits
  only right after an ACK arrives, a PTO fires on a timer. The same rule applied to the client's qlog
  (``client_pto_expiries_from_qlog``) serves runs that keep the qlog alone; where an implementation
  logs ``pto_count`` (ngtcp2, quic-go, quinn) the count of its increments is reported beside it.
"""

from __future__ import annotations

import polars as pl

from quicack.layout.vantage import SIM_LEFT, SIM_RIGHT

SENDER_SIDE = {"c2s": SIM_LEFT, "s2c": SIM_RIGHT}
RECEIVER_SIDE = {"c2s": SIM_RIGHT, "s2c": SIM_LEFT}
# A probe sent this long after the last datagram from the peer is timer driven, not ACK driven.
TIMER_GAP_MS = 2.0
# Probe packets closer than this to the previous one belong to the same PTO expiry (RFC 9002
# §6.2.4: up to two probe datagrams per expiry).
PROBE_BURST_MS = 2.0
PACKET_KEY = ["run_id", "direction", "pn_space", "packet_number"]


def _side(direction_to_vantage: dict[str, str]) -> pl.Expr:
    return pl.col("vantage") == pl.col("direction").replace_strict(direction_to_vantage, default=None)


def sender_frames(frames: pl.DataFrame) -> pl.DataFrame:
    """Capture frames at their sender's side of the link."""
    return frames.filter((pl.col("source") == "pcap") & _side(SENDER_SIDE))


DATA_GROUP = ["run_id", "direction", "data_key"]
NOT_ACK_ELICITING = ("ack", "ack_ecn", "padding", "connection_close")


def data_frames(frames: pl.DataFrame) -> pl.DataFrame:
    """CRYPTO/STREAM frames at the sender side, each flagged ``retransmission`` when its first
    byte lies below the highest byte already sent on its stream / crypto space."""
    data = (
        sender_frames(frames)
        .filter(pl.col("frame_type").is_in(["crypto", "stream"]) & pl.col("offset").is_not_null())
        .with_columns(
            # CRYPTO offsets restart per packet number space, STREAM offsets per stream.
            pl.when(pl.col("frame_type") == "crypto")
            .then(pl.lit("crypto:") + pl.col("pn_space"))
            .otherwise(pl.lit("stream:") + pl.col("stream_id").cast(pl.Utf8))
            .alias("data_key"),
            (pl.col("offset") + pl.col("length").fill_null(0)).alias("end"),
        )
        .sort("run_id", "direction", "data_key", "time_ms", "packet_number", "frame_index")
    )
    return data.with_columns(
        pl.col("end").cum_max().shift(1).over(DATA_GROUP).fill_null(0).alias("sent_before"),
    ).with_columns((pl.col("offset") < pl.col("sent_before")).alias("retransmission"))


def retransmitted_frames(frames: pl.DataFrame) -> pl.DataFrame:
    """CRYPTO/STREAM frames at the sender side that resend already sent bytes, with whether the
    packet that first carried their first byte was delivered (``spurious``)."""
    group = DATA_GROUP
    data = data_frames(frames)
    originals = data.filter(~pl.col("retransmission")).select(
        *group, "offset", pl.col("end").alias("original_end"), pl.col("pn_space").alias("original_space"),
        pl.col("packet_number").alias("original_packet_number"),
    )
    delivered = (
        frames.filter((pl.col("source") == "pcap") & _side(RECEIVER_SIDE))
        .select(*PACKET_KEY)
        .unique()
        .rename({"pn_space": "original_space", "packet_number": "original_packet_number"})
        .with_columns(pl.lit(True).alias("original_delivered"))
    )
    return (
        data.filter(pl.col("retransmission"))
        .sort("offset")
        .join_asof(originals.sort("offset"), on="offset", by=group, strategy="backward", check_sortedness=False)
        .join(delivered, on=["run_id", "direction", "original_space", "original_packet_number"], how="left")
        .with_columns(
            (pl.col("original_delivered").fill_null(False) & (pl.col("offset") < pl.col("original_end"))).alias(
                "spurious"
            )
        )
    )


def probe_packets(frames: pl.DataFrame, datagrams: pl.DataFrame) -> pl.DataFrame:
    """Sender packets that look like PTO probes: ack-eliciting, carrying no new CRYPTO/STREAM
    bytes (only PING, resent data or resent control frames such as NEW_CONNECTION_ID), sent at
    least ``TIMER_GAP_MS`` after the last datagram the sender received from its peer. Packets
    with new data are left out: at that time they are sent by the application or pacing; so are
    packets following the sender's previous datagram within ``TIMER_GAP_MS``."""
    per_packet = sender_frames(frames).group_by(PACKET_KEY).agg(
        pl.col("time_ms").min(),
        (~pl.col("frame_type").is_in(NOT_ACK_ELICITING)).any().alias("ack_eliciting"),
    )
    new_data = data_frames(frames).filter(~pl.col("retransmission")).select(PACKET_KEY).unique()
    candidates = per_packet.filter(pl.col("ack_eliciting")).join(new_data, on=PACKET_KEY, how="anti")
    # What the sender had received: the peer's datagrams at the sender's own side of the link,
    # i.e. after any drop. Datagrams, not frames, so truncated captures still count.
    received = (
        datagrams.with_columns(
            pl.col("direction").replace_strict({"c2s": "s2c", "s2c": "c2s"}, default=None).alias("own")
        )
        .filter(pl.col("vantage") == pl.col("own").replace_strict(SENDER_SIDE, default=None))
        .select("run_id", pl.col("own").alias("direction"), pl.col("time_ms").alias("last_received_ms"))
        .sort("last_received_ms")
    )
    # The sender's own previous datagram: a packet sent right after another one continues work
    # already under way (e.g. a client finishing a slow certificate check), it was not woken by
    # a timer.
    sent = (
        datagrams.filter(pl.col("vantage") == pl.col("direction").replace_strict(SENDER_SIDE, default=None))
        .select("run_id", "direction", pl.col("time_ms").alias("previous_sent_ms"))
        .sort("previous_sent_ms")
    )
    return (
        candidates.sort("time_ms")
        .join_asof(
            received,
            left_on="time_ms",
            right_on="last_received_ms",
            by=["run_id", "direction"],
            strategy="backward",
            check_sortedness=False,
        )
        .join_asof(
            sent,
            left_on="time_ms",
            right_on="previous_sent_ms",
            by=["run_id", "direction"],
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        .filter(
            ((pl.col("time_ms") - pl.col("last_received_ms").fill_null(-1e9)) >= TIMER_GAP_MS)
            & ((pl.col("time_ms") - pl.col("previous_sent_ms").fill_null(-1e9)) >= TIMER_GAP_MS)
        )
    )


def pto_expiries(probes: pl.DataFrame) -> pl.DataFrame:
    """Per run and sender direction of ``probes`` (``probe_packets``): its PTO expiries (bursts of probes, a new one
    after ``PROBE_BURST_MS``) and the time of its first probe."""
    return (
        probes.sort("run_id", "direction", "time_ms")
        .with_columns(
            (pl.col("time_ms").diff().over("run_id", "direction").fill_null(float("inf")) > PROBE_BURST_MS).alias(
                "new_burst"
            )
        )
        .group_by("run_id", "direction")
        .agg(
            pl.col("new_burst").sum().cast(pl.Int64).alias("pto_expiries"),
            pl.col("time_ms").min().alias("first_probe_ms"),
        )
    )


def client_pto_expiries_from_qlog(frames: pl.DataFrame) -> pl.DataFrame:
    """Per run: the client's PTO expiries inferred by the capture's rule (``probe_packets``, bursts as in
    ``retransmission_summary``) from the client's own qlog, whose packet_sent / packet_received frames stand for its
    side of the link (``SIM_LEFT``) — for runs that keep the client's qlog alone (the dataset 'paper''s library runs)
    and clients that log no pto_count (aioquic, go-x-net). Runs whose client qlog logs no sent frame (quinn's has no
    frames) get no row: unknown, not zero. On the embedded dataset's imc24 runs with both, it equals the capture's
    count in every amplification run of aioquic, quic-go, go-x-net and quiche, where quic-go's logged pto_count
    misses half (tests/test_metrics_imc24.py)."""
    logged = frames.filter((pl.col("source") == "qlog") & (pl.col("vantage") == "client")).with_columns(
        pl.lit("pcap").alias("source"), pl.lit(SIM_LEFT).alias("vantage")
    )
    # The times at which the client logged a packet stand for its datagrams (coalesced packets share one).
    datagrams = logged.select("run_id", "vantage", "direction", "time_ms").unique()
    sent = logged.filter(pl.col("direction") == "c2s").select("run_id").unique()
    return sent.join(
        pto_expiries(probe_packets(logged, datagrams)).filter(pl.col("direction") == "c2s"), on="run_id", how="left"
    ).select("run_id", pl.col("pto_expiries").fill_null(0).alias("client_pto_expiries_qlog"))


def pto_counts_logged(metrics: pl.DataFrame) -> pl.DataFrame:
    """Per (run, qlog vantage): how often the logged pto_count rose (null when never logged)."""
    logged = metrics.filter(pl.col("pto_count").is_not_null()).sort("run_id", "vantage", "time_ms", maintain_order=True)
    return logged.group_by("run_id", "vantage").agg(
        (pl.col("pto_count").diff().fill_null(pl.col("pto_count").first()) > 0)
        .sum()
        .cast(pl.Int64)
        .alias("pto_expiries_logged")
    )


def retransmission_summary(frames: pl.DataFrame, datagrams: pl.DataFrame) -> pl.DataFrame:
    """Per run and sender direction: retransmitted packets, spurious ones, inferred PTO expiries
    and the time of the first probe."""
    retransmitted = retransmitted_frames(frames)
    per_packet = retransmitted.group_by(PACKET_KEY).agg(pl.col("spurious").all())
    counts = per_packet.group_by("run_id", "direction").agg(
        pl.len().cast(pl.Int64).alias("retransmitted_packets"),
        pl.col("spurious").sum().cast(pl.Int64).alias("spurious_retransmissions"),
    )
    expiries = pto_expiries(probe_packets(frames, datagrams))
    senders = sender_frames(frames).select("run_id", "direction").unique()
    return (
        senders.join(counts, on=["run_id", "direction"], how="left")
        .join(expiries, on=["run_id", "direction"], how="left")
        .with_columns(pl.col("retransmitted_packets", "spurious_retransmissions", "pto_expiries").fill_null(0))
        .sort("run_id", "direction")
    )
