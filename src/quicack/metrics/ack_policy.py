"""What a receiver's ACK policy does, measured from its own qlog: every ACK it sent in the application data
space, how many ack-eliciting packets had arrived since its previous ACK (the measured ACK ratio), and the
size on the wire of its ACK-only packets (ackfreq22 Table 2's "default AR" and "ACK size").

The qlog is the receiver's view, so the count is exactly what its policy saw; the packet sizes it logs equal
the captured ones (checked against the captures in the tests). A wire size adds the IPv4 and UDP headers of
the testbed's paths: a 1-RTT ACK-only packet is alone in its datagram (a short header packet ends a datagram,
and after the handshake nothing precedes it).
"""

from __future__ import annotations

import polars as pl

IPV4_UDP_HEADER_BYTES = 28
ACK_FRAMES = ("ack", "ack_ecn")
# Frames that an "ACK-only" packet may carry besides ACKs: padding adds bytes, not meaning.
ACK_ONLY_FRAMES = (*ACK_FRAMES, "padding")
PACKET_KEY = ["run_id", "vantage", "event", "pn_space", "packet_number"]


def receiver_acks(packets: pl.DataFrame, frames: pl.DataFrame, vantage: str = "client") -> pl.DataFrame:
    """One row per application-data packet carrying an ACK that ``vantage`` sent (qlog): ``time_ms``,
    ``ack_only``, ``ack_wire_bytes`` (ACK-only packets: packet + IPv4/UDP header; else null) and
    ``packets_acknowledged`` — ack-eliciting application-data packets received since the previous such ACK."""
    own = (pl.col("source") == "qlog") & (pl.col("vantage") == vantage) & (pl.col("pn_space") == "appdata")
    sent_frames = frames.filter(own & (pl.col("event") == "sent") & pl.col("packet_number").is_not_null())
    ack_packets = sent_frames.group_by(PACKET_KEY).agg(
        pl.col("frame_type").is_in(ACK_FRAMES).any().alias("has_ack"),
        pl.col("frame_type").is_in(ACK_ONLY_FRAMES).all().alias("ack_only"),
    ).filter(pl.col("has_ack"))
    sent = (
        packets.filter(own & (pl.col("event") == "sent"))
        .join(ack_packets, on=PACKET_KEY)
        .select(
            "run_id",
            "time_ms",
            "packet_number",
            "ack_only",
            pl.when(pl.col("ack_only")).then(pl.col("packet_bytes") + IPV4_UDP_HEADER_BYTES).alias("ack_wire_bytes"),
            pl.lit(0).alias("received"),
            pl.lit(1).alias("order"),  # at the same time, a packet received counts before the ACK sent
        )
    )
    received = packets.filter(own & (pl.col("event") == "received") & pl.col("ack_eliciting").fill_null(False)).select(
        "run_id",
        "time_ms",
        pl.lit(None, pl.Int64).alias("packet_number"),
        pl.lit(None, pl.Boolean).alias("ack_only"),
        pl.lit(None, pl.Int64).alias("ack_wire_bytes"),
        pl.lit(1).alias("received"),
        pl.lit(0).alias("order"),
    )
    timeline = pl.concat([sent, received]).sort("run_id", "time_ms", "order")
    return (
        timeline.with_columns(pl.col("received").cum_sum().over("run_id").alias("received_so_far"))
        .filter(pl.col("order") == 1)
        .with_columns(
            (pl.col("received_so_far") - pl.col("received_so_far").shift(1, fill_value=0).over("run_id")).alias(
                "packets_acknowledged"
            )
        )
        .select("run_id", "time_ms", "packet_number", "ack_only", "ack_wire_bytes", "packets_acknowledged")
    )


def ack_policy_per_run(packets: pl.DataFrame, frames: pl.DataFrame, vantage: str = "client") -> pl.DataFrame:
    """Per run: ACKs sent, median / p10 / p90 of the measured ACK ratio (over ACKs that acknowledged at least
    one new packet) and the median wire size of the ACK-only packets."""
    acks = receiver_acks(packets, frames, vantage)
    acknowledging = pl.col("packets_acknowledged") > 0
    return acks.group_by("run_id").agg(
        pl.len().alias("acks_sent"),
        pl.col("packets_acknowledged").sum().alias("packets_received"),
        pl.col("packets_acknowledged").filter(acknowledging).median().alias("ack_ratio_median"),
        pl.col("packets_acknowledged").filter(acknowledging).quantile(0.1, "lower").alias("ack_ratio_p10"),
        pl.col("packets_acknowledged").filter(acknowledging).quantile(0.9, "higher").alias("ack_ratio_p90"),
        pl.col("ack_wire_bytes").median().alias("ack_bytes_median"),
        pl.col("ack_wire_bytes").count().alias("ack_only_packets"),
    )
