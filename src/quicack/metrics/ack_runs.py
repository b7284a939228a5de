"""The ``ack_runs`` table: one row per download of the ACK-ratio study (ackfreq22, rethink, tcpquic) with what the
receiver (the client) sent back, how its ACKs came about and how long the download took.

Each run is read at one capture point: the client side of the emulated link (``sim_left``) where it was captured,
else the first other (``quicack.metrics.return_path.one_vantage_per_run``). What the wire does not show is read from
the captured ACK frames (the client's ACKs are always decrypted; the embedded data cuts the server's 1-RTT packets to
a snap length, so their frames and packet numbers are unknown):

- forward data packets: the server's datagrams after the first round trip up to the end of the download (as
  ``return_path`` counts them; a download's server sends almost nothing else);
- end of the download: the last server datagram before the client's first CONNECTION_CLOSE (the HTTP client closes
  as soon as the response is complete), else the last server datagram;
- measured ACK ratio: how far each ACK's largest acknowledged packet number moved
  (``ack_policy.captured_acks``; exact while nothing is lost), over the ACKs that moved it;
- loss clusters (Eq. 5's L): the distinct gaps the client ever reported in its ACK ranges — each gap is one run of
  consecutive server packets that never arrived. Counted so only for an aioquic server, which numbers its packets
  without skipping (a server that skips packet numbers, as quic-go and quiche do against optimistic ACKs, would show
  gaps without loss); for the others the runs of consecutive datagrams the impairment program dropped at random
  (``runs.s2c_random_loss_clusters``; queue overflows not counted), ``loss_clusters_source`` says which;
- the forward rate the path carried once the transfer was under way: the server's IP bits from the moment half of
  the download's forward IP bytes had arrived to the end, over that time (a 1 MB download over a long path is still
  in slow start then; a 10 MB one has filled the path);
- why each ACK was sent: the receiver's own qlog (``frames.ack_reason``, quicack's ACK-policy receiver) where it
  logs it (``ack_trigger_source`` 'qlog'); else inferred from the capture ('inferred'): an ACK whose advance reached
  the configured ACK ratio (2 when none is configured) was sent by the packet threshold, one that advanced less by
  the delay timer, one that advanced nothing (the handshake's, or an ACK of a gap) is 'other'; reordering cannot
  be told from the capture and stays null.

TCP runs (``tcp_segments``) get the same columns from ``quicack.metrics.tcp_ack_runs``
through ``with_tcp_rows``.
"""

from __future__ import annotations

import polars as pl

from quicack.metrics.ack_policy import ACK_FRAMES, captured_acks
from quicack.metrics.return_path import one_vantage_per_run, quic_wire_packets
from quicack.schema import ACK_RUNS

# Linux TCP's and RFC 9000's default: an ACK every second ack-eliciting packet.
DEFAULT_ACK_RATIO = 2
# Servers known to number their packets without gaps: a gap in the client's ACK ranges is then a loss.
CONSECUTIVE_PACKET_NUMBERS = ("aioquic",)
TRIGGERS = ("packet_threshold", "delay_timer", "reordering", "other")
RUN_VANTAGE = ["run_id", "vantage"]


def _chosen_vantage(datagrams: pl.DataFrame) -> pl.DataFrame:
    return one_vantage_per_run(datagrams).select(RUN_VANTAGE).unique()


def _download_end(datagrams: pl.DataFrame, frames: pl.DataFrame) -> pl.DataFrame:
    """Per (run_id, vantage): ``download_start_ms`` (first client datagram) and ``download_end_ms``."""
    close = (
        frames.filter(
            (pl.col("source") == "pcap") & (pl.col("direction") == "c2s") & (pl.col("frame_type") == "connection_close")
        )
        .group_by(RUN_VANTAGE)
        .agg(pl.col("time_ms").min().alias("close_ms"))
    )
    return (
        datagrams.join(close, on=RUN_VANTAGE, how="left")
        .group_by(RUN_VANTAGE)
        .agg(
            pl.col("time_ms").filter(pl.col("direction") == "c2s").min().alias("download_start_ms"),
            pl.col("time_ms")
            .filter(
                (pl.col("direction") == "s2c")
                & (pl.col("close_ms").is_null() | (pl.col("time_ms") <= pl.col("close_ms")))
            )
            .max()
            .alias("download_end_ms"),
        )
    )


def _volumes(datagrams: pl.DataFrame, ends: pl.DataFrame) -> pl.DataFrame:
    wire = quic_wire_packets(datagrams).join(ends, on=RUN_VANTAGE)
    forward_data = pl.col("carries_data") & (pl.col("time_ms") <= pl.col("download_end_ms"))
    forward = wire.filter((pl.col("direction") == "s2c") & (pl.col("time_ms") <= pl.col("download_end_ms"))).sort(
        *RUN_VANTAGE, "time_ms"
    )
    halfway = forward.with_columns(pl.col("ip_bytes").cum_sum().over(RUN_VANTAGE).alias("so_far")).filter(
        pl.col("so_far") >= pl.col("ip_bytes").sum().over(RUN_VANTAGE) / 2
    )
    second_half = halfway.group_by(RUN_VANTAGE).agg(
        # bytes that arrived after the halfway datagram, over the time from it to the last one
        (
            (pl.col("ip_bytes").sum() - pl.col("ip_bytes").first())
            * 8
            / 1000.0
            / (pl.col("time_ms").max() - pl.col("time_ms").first())
        ).alias("forward_mbit_second_half")
    )
    return (
        wire.group_by(RUN_VANTAGE)
        .agg(
            pl.col("ip_bytes").filter(pl.col("direction") == "s2c").sum().alias("forward_ip_bytes"),
            pl.col("ip_bytes").filter(pl.col("direction") == "c2s").sum().alias("return_ip_bytes"),
            pl.col("ip_bytes")
            .filter((pl.col("direction") == "c2s") & pl.col("after_first_rtt"))
            .sum()
            .alias("return_ip_bytes_after_first_rtt"),
            forward_data.sum().alias("forward_data_packets"),
            pl.col("time_ms").filter(forward_data).min().alias("first_data_ms"),
        )
        .join(second_half, on=RUN_VANTAGE, how="left")
    )


def _ack_only_packets(datagrams: pl.DataFrame, packets: pl.DataFrame, frames: pl.DataFrame) -> pl.DataFrame:
    """Per (run_id, vantage): the client's captured packets that carry an ACK and nothing ack-eliciting, and the
    median IP size of the datagrams that hold one alone (after the handshake every one is alone)."""
    key = [*RUN_VANTAGE, "direction", "datagram_index", "pn_space", "packet_number"]
    client_pcap = (pl.col("source") == "pcap") & (pl.col("direction") == "c2s")
    with_ack = frames.filter(client_pcap & pl.col("frame_type").is_in(ACK_FRAMES)).select(key).unique()
    ack_only = packets.filter(
        client_pcap & pl.col("decrypted").fill_null(False) & ~pl.col("ack_eliciting").fill_null(True)
    ).join(with_ack, on=key, how="semi")
    wire = datagrams.filter(pl.col("direction") == "c2s").select(
        *RUN_VANTAGE,
        "datagram_index",
        "quic_packets",
        (pl.col("ip_header_bytes") + pl.col("udp_header_bytes") + pl.col("udp_payload_bytes")).alias("ip_bytes"),
    )
    sized = ack_only.join(wire, on=[*RUN_VANTAGE, "datagram_index"], how="left")
    return sized.group_by(RUN_VANTAGE).agg(
        pl.len().alias("ack_packets"),
        pl.col("ip_bytes").filter(pl.col("quic_packets") == 1).median().alias("ack_packet_bytes_median"),
    )


def _ack_ratios(
    frames: pl.DataFrame, chosen: pl.DataFrame, ack_ratio: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per (run_id, vantage): quartiles of the captured ACKs' advance; and the triggers inferred from it."""
    per_vantage = [
        captured_acks(frames, vantage).with_columns(pl.lit(vantage).alias("vantage"))
        for vantage in chosen["vantage"].unique().sort()
    ]
    acks = pl.concat(per_vantage, how="vertical").join(chosen, on=RUN_VANTAGE, how="semi")
    advance = pl.col("largest_acked_advance")
    moved = advance > 0
    quartiles = acks.group_by(RUN_VANTAGE).agg(
        advance.filter(moved).median().alias("measured_ack_ratio_median"),
        advance.filter(moved).quantile(0.25, "lower").alias("measured_ack_ratio_p25"),
        advance.filter(moved).quantile(0.75, "higher").alias("measured_ack_ratio_p75"),
    )
    threshold = pl.col("ack_ratio").fill_null(DEFAULT_ACK_RATIO)
    inferred = (
        acks.join(ack_ratio, on="run_id", how="left")
        .with_columns(
            pl.when(advance >= threshold)
            .then(pl.lit("packet_threshold"))
            .when(moved)
            .then(pl.lit("delay_timer"))
            .otherwise(pl.lit("other"))
            .alias("ack_reason")
        )
        .group_by(RUN_VANTAGE)
        .agg(*[(pl.col("ack_reason") == t).sum().alias(f"acks_by_{t}") for t in TRIGGERS if t != "reordering"])
        .with_columns(
            pl.lit(None, pl.Int64).alias("acks_by_reordering"), pl.lit("inferred").alias("ack_trigger_source")
        )
    )
    return quartiles, inferred


def _logged_triggers(frames: pl.DataFrame) -> pl.DataFrame:
    """Per run: the receiver's own reasons for its ACKs (every packet number space), where its qlog logs them."""
    reasons = frames.filter(
        (pl.col("source") == "qlog") & (pl.col("vantage") == "client") & (pl.col("event") == "sent")
        & pl.col("frame_type").is_in(ACK_FRAMES) & pl.col("ack_reason").is_not_null()
    )  # fmt: skip
    return reasons.group_by("run_id").agg(
        *[(pl.col("ack_reason") == t).sum().alias(f"acks_by_{t}") for t in TRIGGERS],
        pl.lit("qlog").alias("ack_trigger_source"),
    )


def _loss_clusters(frames: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Per (run_id, vantage): distinct gaps in the client's captured application-data ACK ranges (aioquic servers)."""
    consecutive = runs.filter(pl.col("server_impl").is_in(CONSECUTIVE_PACKET_NUMBERS)).select("run_id")
    acks = frames.filter(
        (pl.col("source") == "pcap") & (pl.col("direction") == "c2s") & (pl.col("pn_space") == "appdata")
        & pl.col("frame_type").is_in(ACK_FRAMES)
    ).join(consecutive, on="run_id", how="semi")  # fmt: skip
    # ranges are highest first: every range but the lowest has a gap below it, named by the range's low end
    gaps = (
        acks.select(
            *RUN_VANTAGE, pl.col("ack_ranges").list.slice(0, pl.col("ack_ranges").list.len() - 1).alias("above_gap")
        )
        .explode("above_gap")
        .drop_nulls("above_gap")
        .select(*RUN_VANTAGE, pl.col("above_gap").struct.field("low").alias("gap_above"))
    )
    counted = gaps.group_by(RUN_VANTAGE).agg(pl.col("gap_above").n_unique().alias("loss_clusters"))
    # runs whose ACKs never reported a gap lost nothing
    return (
        acks.select(RUN_VANTAGE)
        .unique()
        .join(counted, on=RUN_VANTAGE, how="left")
        .with_columns(pl.col("loss_clusters").fill_null(0))
    )


def quic_ack_runs(
    runs: pl.DataFrame, datagrams: pl.DataFrame, packets: pl.DataFrame, frames: pl.DataFrame
) -> pl.DataFrame:
    """``ack_runs`` rows of every captured QUIC run in the tables."""
    datagrams = one_vantage_per_run(datagrams)
    chosen = datagrams.select(RUN_VANTAGE).unique().sort(RUN_VANTAGE)
    if chosen.is_empty():
        return ACK_RUNS.empty()
    ends = _download_end(datagrams, frames.join(chosen, on=RUN_VANTAGE, how="semi"))
    quartiles, inferred = _ack_ratios(frames, chosen, runs.select("run_id", "ack_ratio"))
    logged = _logged_triggers(frames)
    triggers = pl.concat(
        [logged.join(chosen, on="run_id"), inferred.join(logged, on="run_id", how="anti")], how="diagonal_relaxed"
    )
    rows = (
        chosen.join(_volumes(datagrams, ends), on=RUN_VANTAGE, how="left")
        .join(ends, on=RUN_VANTAGE, how="left")
        .join(_ack_only_packets(datagrams, packets, frames), on=RUN_VANTAGE, how="left")
        .join(quartiles, on=RUN_VANTAGE, how="left")
        .join(triggers, on=RUN_VANTAGE, how="left")
        .join(_loss_clusters(frames, runs), on=RUN_VANTAGE, how="left")
    )
    return finished_rows(_with_emulated_loss_clusters(rows, runs), "quic")


def _with_emulated_loss_clusters(rows: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """``loss_clusters`` from the client's ACK gaps where counted (aioquic servers), else the impairment program's
    random-loss clusters where run.json records them; ``loss_clusters_source`` says which."""
    emulated = (
        runs.select("run_id", "s2c_random_loss_clusters") if "s2c_random_loss_clusters" in runs.columns
        else runs.select("run_id", pl.lit(None, pl.Int64).alias("s2c_random_loss_clusters"))
    )  # fmt: skip
    return (
        rows.join(emulated, on="run_id", how="left")
        .with_columns(
            pl.when(pl.col("loss_clusters").is_not_null())
            .then(pl.lit("client_acks"))
            .when(pl.col("s2c_random_loss_clusters").is_not_null())
            .then(pl.lit("impairment"))
            .alias("loss_clusters_source"),
            pl.coalesce("loss_clusters", "s2c_random_loss_clusters").alias("loss_clusters"),
        )
        .drop("s2c_random_loss_clusters")
    )


def finished_rows(rows: pl.DataFrame, protocol: str) -> pl.DataFrame:
    """``ack_runs`` rows from per-run volumes and times (QUIC's here, TCP's in tcp_ack_runs): the return share, the
    download time and the forward rate from ``download_start_ms`` / ``download_end_ms`` / ``first_data_ms``."""
    finished = rows.with_columns(
        pl.lit(protocol).alias("protocol"),
        (100.0 * pl.col("return_ip_bytes") / pl.col("forward_ip_bytes")).alias("return_percent_of_forward"),
        (pl.col("download_end_ms") - pl.col("download_start_ms")).alias("download_time_ms"),
        (1000.0 * pl.col("forward_data_packets") / (pl.col("download_end_ms") - pl.col("first_data_ms"))).alias(
            "forward_data_packets_per_s"
        ),
    ).drop("download_start_ms", "download_end_ms", "first_data_ms")
    return ACK_RUNS.conform(finished)


def with_tcp_rows(quic_rows: pl.DataFrame, tcp_rows: pl.DataFrame | None) -> pl.DataFrame:
    """The QUIC rows and, where the dataset has TCP runs, the rows ``quicack.metrics.tcp_ack_runs`` computes from
    ``tcp_segments`` (same columns)."""
    if tcp_rows is None or tcp_rows.is_empty():
        return quic_rows
    return pl.concat([quic_rows, ACK_RUNS.conform(tcp_rows)], how="vertical").sort(RUN_VANTAGE)
