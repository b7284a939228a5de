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

from quicack.storage.run_batches import RunRows, per_run_batches

IPV4_UDP_HEADER_BYTES = 28
ACK_FRAMES = ("ack", "ack_ecn")
# Frames that an "ACK-only" packet may carry besides ACKs: padding adds bytes, not meaning.
ACK_ONLY_FRAMES = (*ACK_FRAMES, "padding")
PACKET_KEY = ["run_id", "vantage", "event", "pn_space", "packet_number"]


def receiver_acks(packets: pl.DataFrame, frames: pl.DataFrame, vantage: str = "client") -> pl.DataFrame:
    """One row per application-data packet carrying an ACK that ``vantage`` sent (qlog): ``time_ms``,
    ``ack_only``, ``ack_wire_bytes`` (ACK-only packets: packet + IPv4/UDP header; else null),
    ``packets_acknowledged`` — ack-eliciting application-data packets received since the previous such ACK — and
    ``wait_since_first_unacknowledged_ms``: from the first of those packets to this ACK (what an ACK delay timer
    measures; null when the ACK acknowledged no new packet)."""
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
    timeline = pl.concat([sent, received]).sort("run_id", "time_ms", "order").with_columns(
        pl.col("received").cum_sum().over("run_id").alias("received_so_far")
    )
    # The n-th ack-eliciting packet received, by n: the first one an ACK covers is the one after the previous ACK's.
    arrivals = timeline.filter(pl.col("order") == 0).select(
        "run_id", pl.col("received_so_far").alias("first_unacknowledged"), pl.col("time_ms").alias("first_arrival_ms")
    )
    previous = pl.col("received_so_far").shift(1, fill_value=0).over("run_id")
    return (
        timeline.filter(pl.col("order") == 1)
        .with_columns((pl.col("received_so_far") - previous).alias("packets_acknowledged"),
                      (previous + 1).alias("first_unacknowledged"))  # fmt: skip
        .join(arrivals, on=["run_id", "first_unacknowledged"], how="left")
        .with_columns(
            pl.when(pl.col("packets_acknowledged") > 0)
            .then(pl.col("time_ms") - pl.col("first_arrival_ms"))
            .alias("wait_since_first_unacknowledged_ms")
        )
        .sort("run_id", "time_ms")
        .select("run_id", "time_ms", "packet_number", "ack_only", "ack_wire_bytes", "packets_acknowledged",
                "wait_since_first_unacknowledged_ms")  # fmt: skip
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


def ack_policy_of_runs(selected: pl.DataFrame, packets: RunRows, frames: RunRows) -> pl.DataFrame:
    """``ack_policy_per_run`` of the ``selected`` runs, their tables read a batch of runs at a time."""
    return per_run_batches(ack_policy_per_run, selected["run_id"], packets, frames)


def ack_reasons(frames: pl.DataFrame, vantage: str = "client") -> pl.DataFrame:
    """The application-data ACKs ``vantage`` sent whose qlog says why (frames.ack_reason, logged by quicack's
    ACK-policy receiver): one row per ACK with ``time_ms``, ``packet_number``, ``ack_reason``,
    ``ack_eliciting_since_previous_ack`` (the receiver's own count) and ``ack_delay_ms`` (the ACK Delay field)."""
    return frames.filter(
        (pl.col("source") == "qlog") & (pl.col("vantage") == vantage) & (pl.col("event") == "sent")
        & (pl.col("pn_space") == "appdata") & pl.col("frame_type").is_in(ACK_FRAMES)
        & pl.col("ack_reason").is_not_null()
    ).select("run_id", "time_ms", "packet_number", "ack_reason", "ack_eliciting_since_previous_ack",
             "ack_delay_ms")  # fmt: skip


def ack_reason_counts(frames: pl.DataFrame, vantage: str = "client") -> pl.DataFrame:
    """Per run and reason: ACKs sent (``acks``) and the median ack-eliciting packets each covered — ackfreq22
    Table 5 is the ``delay_timer`` share of a run's ACKs."""
    return (
        ack_reasons(frames, vantage)
        .group_by("run_id", "ack_reason")
        .agg(
            pl.len().alias("acks"), pl.col("ack_eliciting_since_previous_ack").median().alias("packets_per_ack_median")
        )
        .with_columns((pl.col("acks") / pl.col("acks").sum().over("run_id")).alias("share"))
        .sort("run_id", "ack_reason")
    )


def captured_acks(frames: pl.DataFrame, vantage: str = "sim_left", direction: str = "c2s") -> pl.DataFrame:
    """The application-data ACK frames a capture saw in ``direction`` (default: the client's ACKs at the client side
    of the emulated link), one row each in capture order, with ``largest_acked_advance``: how far its largest
    acknowledged packet number moved beyond every earlier ACK's — on the wire, without the receiver's log, the
    packets an ACK newly acknowledged (exactly so while nothing is lost; a lost packet inside the advance counts
    as well, and an ACK that only fills a gap advances 0). ``first_ack_range``: the packets below the largest in its
    top range (small after a gap: receivers acknowledge at once while a packet is newly missing, RFC 9000 §13.2.1).
    Needs only the ACK packets decrypted: a capture cut to a short snap length still decrypts ACK-only packets."""
    acks = frames.filter(
        (pl.col("source") == "pcap") & (pl.col("vantage") == vantage) & (pl.col("direction") == direction)
        & (pl.col("pn_space") == "appdata") & pl.col("frame_type").is_in(ACK_FRAMES)
    ).sort("run_id", "time_ms", "packet_number")  # fmt: skip
    highest_before = pl.col("largest_acked").cum_max().shift(1).over("run_id")
    return acks.select(
        "run_id", "time_ms", "packet_number", "largest_acked", "first_ack_range", "ack_delay_ms",
        pl.when(highest_before.is_null()).then(None)
        .otherwise((pl.col("largest_acked") - highest_before).clip(lower_bound=0))
        .alias("largest_acked_advance"),
    )  # fmt: skip


def captured_ack_ratio_per_run(frames: pl.DataFrame, vantage: str = "sim_left", direction: str = "c2s") -> pl.DataFrame:
    """Per run, from a capture: ACKs seen and the median / p10 / p25 / p75 / p90 of ``largest_acked_advance`` over
    the ACKs that advanced (the ACK ratio on the wire; see ``captured_acks``)."""
    advance = pl.col("largest_acked_advance").filter(pl.col("largest_acked_advance") > 0)
    return captured_acks(frames, vantage, direction).group_by("run_id").agg(
        pl.len().alias("acks_captured"),
        advance.median().alias("ack_ratio_median"),
        advance.quantile(0.1, "lower").alias("ack_ratio_p10"),
        advance.quantile(0.25, "lower").alias("ack_ratio_p25"),
        advance.quantile(0.75, "higher").alias("ack_ratio_p75"),
        advance.quantile(0.9, "higher").alias("ack_ratio_p90"),
    )


def default_ack_policies(
    selected: pl.DataFrame, packets: RunRows, frames: RunRows, ack_runs: pl.DataFrame | None
) -> pl.DataFrame:
    """Per ``selected`` run, the receiver's measured ACK policy: from its qlog (``ack_policy_per_run``) where that logs
    its frames, else from the client-side capture (``captured_ack_ratio_per_run``; the ACK-only packet size from
    ``ack_runs``) — Chromium writes no qlog. Columns run_id, ack_ratio_median, ack_ratio_p10, ack_ratio_p90,
    ack_bytes_median, measured_from ('client qlog' | 'capture'); runs measured neither way are left out."""
    logged = ack_policy_of_runs(selected, packets, frames).filter(pl.col("ack_ratio_median").is_not_null())
    unlogged = selected.join(logged, on="run_id", how="anti")
    ratios = per_run_batches(captured_ack_ratio_per_run, unlogged["run_id"], frames).select(
        "run_id", "ack_ratio_median", "ack_ratio_p10", "ack_ratio_p90"
    )
    sizes = (
        ack_runs.select("run_id", pl.col("ack_packet_bytes_median").cast(pl.Float64).alias("ack_bytes_median"))
        if ack_runs is not None
        else pl.DataFrame(schema={"run_id": pl.Utf8, "ack_bytes_median": pl.Float64})
    )
    captured = ratios.filter(pl.col("ack_ratio_median").is_not_null()).join(sizes, on="run_id", how="left")
    return pl.concat(
        [
            logged.select("run_id", "ack_ratio_median", "ack_ratio_p10", "ack_ratio_p90", "ack_bytes_median",
                          pl.lit("client qlog").alias("measured_from")),
            captured.with_columns(pl.lit("capture").alias("measured_from")),
        ],
        how="diagonal_relaxed",
    )  # fmt: skip
