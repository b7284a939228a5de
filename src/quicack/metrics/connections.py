"""The first ``connections`` table: one row per (run, qlog vantage), and a client row from the client-side capture
alone for a client that writes no qlog (Chromium); polars only."""

from __future__ import annotations

import polars as pl

from quicack.metrics.rtt import no_rtt_sample_reasons
from quicack.metrics.ttfb import ttfb_by_source
from quicack.models.recovery import K_GRANULARITY_MS
from quicack.schema import CONNECTIONS

KEY = ["run_id", "vantage"]


def logged_pto(smoothed: pl.Expr, rttvar: pl.Expr) -> pl.Expr:
    """PTO from logged estimator values, the RFC 9002 way; null when rttvar is not logged."""
    return smoothed + pl.max_horizontal(4 * rttvar, pl.lit(K_GRANULARITY_MS))


def logged_estimates(metrics: pl.DataFrame) -> pl.DataFrame:
    """Logged (smoothed_rtt, rtt_variance) per update, carried forward where an update omits one
    (implementations log only changed fields), with consecutive duplicates removed; with the latest_rtt logged in
    the same update (not carried forward: null where the update omits it).

    The count of what is left is how many RTT samples the implementation exposed (imc24 App. E:
    "we remove consecutive duplicates", which may merge two samples with equal values).
    """
    filled = (
        metrics.sort([*KEY, "time_ms"], maintain_order=True)
        .with_columns(pl.col("smoothed_rtt_ms", "rtt_variance_ms").forward_fill().over(KEY))
        .filter(pl.col("smoothed_rtt_ms").is_not_null())
    )
    changed = (pl.col("smoothed_rtt_ms") != pl.col("smoothed_rtt_ms").shift(1).over(KEY)) | (
        pl.col("rtt_variance_ms").fill_null(-1.0) != pl.col("rtt_variance_ms").shift(1).over(KEY).fill_null(-1.0)
    )
    return filled.filter(changed.fill_null(True)).select(
        *KEY, "time_ms", "smoothed_rtt_ms", "rtt_variance_ms", "latest_rtt_ms"
    )


def connections_table(
    packets: pl.DataFrame,
    frames: pl.DataFrame,
    metrics: pl.DataFrame,
    endpoints: pl.DataFrame,
    rtt_samples: pl.DataFrame,
    runs: pl.DataFrame,
) -> pl.DataFrame:
    qlog_endpoints = (
        endpoints.filter(pl.col("source") == "qlog")
        .group_by(KEY, maintain_order=True)
        .agg(pl.col("handshake_confirmed_ms").min().alias("handshake_ms"))
    )
    recomputed = (
        rtt_samples.filter(pl.col("source") == "qlog")
        .sort([*KEY, "sample_index"])
        .group_by(KEY, maintain_order=True)
        .agg(
            pl.col("latest_rtt_ms").first().alias("first_rtt_ms"),
            pl.col("pto_ms").first().alias("first_pto_ms"),
            pl.len().cast(pl.Int64).alias("rtt_samples"),
        )
    )
    # Some implementations (ngtcp2, quinn) log their initial estimator state (333 ms) before any
    # packet arrived; no RTT sample can exist before the endpoint received a packet, so updates
    # before its first received packet are not samples (neither for the first PTO nor the count).
    first_received = (
        packets.lazy()
        .filter((pl.col("source") == "qlog") & (pl.col("event") == "received"))
        .group_by(KEY)
        .agg(pl.col("time_ms").min().alias("first_received_ms"))
        .collect()
    )
    estimates = (
        logged_estimates(metrics)
        .join(first_received, on=KEY, how="left", nulls_equal=True)
        .filter(pl.col("time_ms") >= pl.col("first_received_ms").fill_null(float("-inf")))
    )
    logged = estimates.group_by(KEY, maintain_order=True).agg(
        logged_pto(pl.col("smoothed_rtt_ms"), pl.col("rtt_variance_ms")).first().alias("first_pto_logged_ms"),
        pl.len().cast(pl.Int64).alias("rtt_samples_logged"),
    )
    # TTFB is a client metric: it goes on the client row only.
    ttfb = ttfb_by_source(runs, frames, packets).with_columns(pl.lit("client").alias("vantage"))
    handshake = instant_ack_timing(frames)
    # A client without a qlog (Chromium writes none) still has its capture's TTFB: its row comes from that alone.
    capture_only = (
        ttfb.filter(pl.col("ttfb_capture_ms").is_not_null()).select(KEY).join(qlog_endpoints, on=KEY, how="anti")
    )
    return CONNECTIONS.conform(
        pl.concat([qlog_endpoints, capture_only], how="diagonal_relaxed")
        .join(recomputed, on=KEY, how="left", nulls_equal=True)
        .join(logged, on=KEY, how="left", nulls_equal=True)
        .join(ttfb, on=KEY, how="left", nulls_equal=True)
        .join(handshake, on=KEY, how="left", nulls_equal=True)
        .join(no_rtt_sample_reasons(packets, frames, rtt_samples), on=KEY, how="left", nulls_equal=True)
        .with_columns((pl.col("first_pto_logged_ms") - pl.col("first_pto_ms")).alias("first_pto_delta_ms"))
        .sort(KEY)
    )


def instant_ack_timing(frames: pl.DataFrame) -> pl.DataFrame:
    """Per client qlog: was the first server Initial an ACK without CRYPTO (instant ACK), and
    how long after it did the ServerHello (first received Initial CRYPTO) arrive."""
    # Lazy: only these rows and columns of a large frames table are gathered.
    initial_s2c = (
        frames.lazy()
        .filter(
            (pl.col("source") == "qlog")
            & (pl.col("vantage") == "client")
            & (pl.col("event") == "received")
            & (pl.col("pn_space") == "initial")
        )
        .select(*KEY, "packet_number", "time_ms", "frame_type")
        .collect()
    )
    per_packet = initial_s2c.group_by([*KEY, "packet_number"]).agg(
        pl.col("time_ms").min(),
        (pl.col("frame_type") == "ack").any().alias("has_ack"),
        (pl.col("frame_type") == "crypto").any().alias("has_crypto"),
    )
    return (
        per_packet.sort([*KEY, "time_ms", "packet_number"])
        .group_by(KEY, maintain_order=True)
        .agg(
            (pl.col("has_ack") & ~pl.col("has_crypto")).first().alias("iack"),
            pl.col("time_ms").first().alias("first_initial_ms"),
            pl.col("time_ms").filter(pl.col("has_crypto")).first().alias("server_hello_ms"),
        )
        .with_columns(
            pl.when(pl.col("iack")).then(pl.col("server_hello_ms") - pl.col("first_initial_ms")).alias("iack_to_sh_ms")
        )
        .select(*KEY, "iack", "iack_to_sh_ms")
    )
