"""``ack_runs`` rows of the Linux TCP runs (``tcp_segments``): the same columns as the QUIC rows of
``quicack.metrics.ack_runs``, read from the TCP headers, which nothing encrypts.

Each run is read as its links carried it (``return_path.tcp_link_segments``): forward segments at the client side,
return segments at the server side, after the router's ACK thinning — so an "AR 10" run made by thinning shows the
ACKs that crossed the return link, not the kernel's before the filter.

- forward data packets: the server's segments with payload up to the end of the download (its last one);
- ACK packets: the client's pure ACKs (``tcp_segments.pure_ack``), their median IP size;
- measured ACK ratio: per ACK that moved the cumulative acknowledgement, how many forward data segments it newly
  covered (segments whose end, sequence number + payload, the new acknowledgement number reached). The
  kernel acknowledges whole segments, so this counts packets as QUIC's largest-acknowledged advance does;
- triggers and loss clusters stay null: a TCP ACK does not say why it was sent, and SACK blocks are not
  counted as Eq. 5's loss clusters here.
"""

from __future__ import annotations

import polars as pl

from quicack.metrics.ack_runs import finished_rows
from quicack.metrics.return_path import link_wire_packets, tcp_link_segments

_SEQ_SPACE = 1 << 32
RUN_VANTAGE = ["run_id", "vantage"]


def _relative(column: str, origin: str) -> pl.Expr:
    """A sequence or acknowledgement number relative to the server's initial sequence number (modulo 2^32)."""
    return ((pl.col(column) - pl.col(origin)) % _SEQ_SPACE).alias(column)


def _segments_acknowledged(links: pl.DataFrame) -> pl.DataFrame:
    """Per client ACK that moved the cumulative acknowledgement: how many forward data segments it newly covered."""
    server_isn = (
        links.filter(pl.col("direction") == "s2c")
        .sort("time_ms")
        .group_by("run_id")
        .agg(
            pl.col("seq").filter((pl.col("flags") & 2) != 0).first().fill_null(pl.col("seq").min()).alias("server_isn")
        )
    )
    data_ends = (
        links.filter((pl.col("direction") == "s2c") & (pl.col("payload_bytes") > 0))
        .join(server_isn, on="run_id")
        .with_columns(_relative("seq", "server_isn"))
        .select("run_id", (pl.col("seq") + pl.col("payload_bytes")).alias("end"))
        .unique()  # a retransmission covers the same segment again
        .sort("run_id", "end")
        .with_columns(pl.int_range(1, pl.len() + 1).over("run_id").alias("segments_covered"))
        .sort("end")  # join_asof wants the key sorted as a whole (per run it then is too)
    )
    acks = (
        links.filter((pl.col("direction") == "c2s") & ((pl.col("flags") & 16) != 0))
        .join(server_isn, on="run_id")
        .with_columns(_relative("ack", "server_isn"))
        .sort("run_id", "time_ms")
        .select("run_id", "time_ms", pl.col("ack").cum_max().over("run_id").alias("end"))
        .sort("end")
    )
    covered = acks.join_asof(
        data_ends, on="end", by="run_id", strategy="backward", check_sortedness=False
    ).with_columns(pl.col("segments_covered").fill_null(0))
    return (
        covered.sort("run_id", "time_ms")
        .with_columns(
            (pl.col("segments_covered") - pl.col("segments_covered").shift(1).over("run_id").fill_null(0)).alias(
                "advance"
            )
        )
        .filter(pl.col("advance") > 0)
    )


def tcp_ack_runs(runs: pl.DataFrame, tcp_segments: pl.DataFrame | None) -> pl.DataFrame | None:
    """``ack_runs`` rows (protocol 'tcp') of every run with TCP segments; None when there are none."""
    if tcp_segments is None or tcp_segments.is_empty():
        return None
    links = tcp_link_segments(tcp_segments.join(runs.select("run_id"), on="run_id", how="semi"))
    if links.is_empty():
        return None
    wire = link_wire_packets(links)
    forward_data = (pl.col("direction") == "s2c") & pl.col("carries_data")
    volumes = wire.group_by(RUN_VANTAGE).agg(
        pl.col("ip_bytes").filter(pl.col("direction") == "s2c").sum().alias("forward_ip_bytes"),
        pl.col("ip_bytes").filter(pl.col("direction") == "c2s").sum().alias("return_ip_bytes"),
        pl.col("ip_bytes")
        .filter((pl.col("direction") == "c2s") & pl.col("after_first_rtt"))
        .sum()
        .alias("return_ip_bytes_after_first_rtt"),
        forward_data.sum().alias("forward_data_packets"),
        pl.col("time_ms").filter(pl.col("direction") == "c2s").min().alias("download_start_ms"),
        pl.col("time_ms").filter(forward_data).min().alias("first_data_ms"),
        pl.col("time_ms").filter(forward_data).max().alias("download_end_ms"),
    )
    client_acks = links.filter((pl.col("direction") == "c2s") & pl.col("pure_ack")).group_by(RUN_VANTAGE).agg(
        pl.len().alias("ack_packets"), pl.col("ip_bytes").median().alias("ack_packet_bytes_median")
    )
    advance = pl.col("advance")
    ratios = _segments_acknowledged(links).group_by("run_id").agg(
        advance.median().alias("measured_ack_ratio_median"),
        advance.quantile(0.25, "lower").alias("measured_ack_ratio_p25"),
        advance.quantile(0.75, "higher").alias("measured_ack_ratio_p75"),
    )
    rows = volumes.join(client_acks, on=RUN_VANTAGE, how="left").join(ratios, on="run_id", how="left")
    return finished_rows(rows, "tcp")
