"""Which QUIC packets share which datagram during the handshake (imc24 Fig. 3), per run and as the
usual pattern per (client, mode).

A datagram is described as its packets in order, each as ``type[frame,frame]`` (PADDING left
out, repeated frame types once), joined by ``+``; e.g. WFC's first server datagram
``initial[ack,crypto]+handshake[crypto]``. Read at the sender's side of the link so that
emulated drops do not hide datagrams.
"""

from __future__ import annotations

import polars as pl

from quicack.metrics.pto import SENDER_SIDE
from quicack.storage.run_batches import RunRows, per_run_batches

LONG_HEADER_TYPES = ("initial", "handshake", "0rtt", "retry")
PACKET_KEY = ["run_id", "vantage", "direction", "pn_space", "packet_number"]


def handshake_datagrams(packets: pl.DataFrame, frames: pl.DataFrame) -> pl.DataFrame:
    """Per run and direction: every datagram up to the last one carrying a long-header packet,
    with its index, time and packet/frame content."""
    sender_packets = packets.filter(
        (pl.col("source") == "pcap")
        & (pl.col("vantage") == pl.col("direction").replace_strict(SENDER_SIDE, default=None))
    ).with_row_index("packet_order")
    frame_lists = (
        frames.filter((pl.col("source") == "pcap") & (pl.col("frame_type") != "padding"))
        .sort("frame_index")
        .group_by(PACKET_KEY, maintain_order=True)
        .agg(pl.col("frame_type").unique(maintain_order=True).str.join(",").alias("frame_list"))
    )
    described = sender_packets.join(frame_lists, on=PACKET_KEY, how="left").with_columns(
        (pl.col("packet_type") + "[" + pl.col("frame_list").fill_null("") + "]").alias("packet_description")
    )
    datagrams = (
        described.filter(pl.col("packet_type") != "datagram_padding")
        .sort("packet_order")
        .group_by("run_id", "direction", "datagram_index", maintain_order=True)
        .agg(
            pl.col("time_ms").min(),
            pl.col("packet_description").str.join("+").alias("content"),
            pl.col("packet_type").is_in(LONG_HEADER_TYPES).any().alias("long_header"),
        )
    )
    last_long = datagrams.filter(pl.col("long_header")).group_by("run_id", "direction").agg(
        pl.col("datagram_index").max().alias("last_long_header_datagram")
    )
    return (
        datagrams.join(last_long, on=["run_id", "direction"], how="inner")
        .filter(pl.col("datagram_index") <= pl.col("last_long_header_datagram"))
        .select("run_id", "direction", "datagram_index", "time_ms", "content")
        .sort("run_id", "direction", "datagram_index")
    )


def coalescence_patterns(
    runs: pl.DataFrame, packets: RunRows, frames: RunRows, scenario: str = "noloss"
) -> pl.DataFrame:
    """Per (client, mode, direction, datagram index): the most frequent content over the runs of
    ``scenario`` and how many of them showed it (``runs_with_pattern`` of ``runs``)."""
    chosen = runs.filter((pl.col("scenario") == scenario) & (pl.col("status") == "ok")).select(
        "run_id", "client_impl", "mode"
    )
    per_run = per_run_batches(handshake_datagrams, chosen["run_id"], packets, frames).join(
        chosen, on="run_id", how="inner"
    )
    group = ["client_impl", "mode", "direction", "datagram_index"]
    counted = per_run.group_by(*group, "content").agg(pl.len().alias("runs_with_pattern"))
    return (
        counted.sort("runs_with_pattern", "content", descending=[True, False])
        .group_by(group, maintain_order=True)
        .agg(
            pl.col("content").first(),
            pl.col("runs_with_pattern").first(),
            pl.col("runs_with_pattern").sum().alias("runs"),
        )
        .sort(group)
    )
