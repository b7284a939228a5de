"""Recomputed RFC 9002 estimator beside the implementation's own logged values.

Each recomputed sample is paired, in order, with a *change* of the logged (smoothed_rtt,
rtt_variance) close to it in time (most implementations log only the fields that changed, so
fields are carried forward; see ``pair_in_order``). A sample the implementation did not take
pairs with no change or with a later one: the comparison is then conservative.
"""

from __future__ import annotations

import polars as pl

from quicack.metrics.connections import logged_estimates, logged_pto
from quicack.schema import ESTIMATOR_AGREEMENT

KEY = ["run_id", "vantage"]
# A logged change more than this after the sample belongs to a later event: the sample then
# counts as not taken by the implementation (quic-go skips some, imc24 App. E).
MATCH_TOLERANCE_MS = 1.0
# quic-go logs the metrics update before the packet_received event of the ACK that caused it.
LOOK_BACK_MS = 1.0


def pair_in_order(sample_times: list[float], change_times: list[float], back_ms: float, forward_ms: float) -> list[int | None]:
    """Pair each sample with the earliest not yet paired logged change within
    [sample - back_ms, sample + forward_ms], in time order.

    In order, because several samples may share one timestamp (integer-ms logs); with a
    small look-back, because some implementations log the metrics update while processing
    the ACK and the packet_received event only after it (quic-go).
    """
    pairs: list[int | None] = []
    next_change = 0
    for time in sample_times:
        while next_change < len(change_times) and change_times[next_change] < time - back_ms:
            next_change += 1
        if next_change < len(change_times) and change_times[next_change] <= time + forward_ms:
            pairs.append(next_change)
            next_change += 1
        else:
            pairs.append(None)
    return pairs


def estimator_agreement(rtt_samples: pl.DataFrame, metrics: pl.DataFrame, endpoints: pl.DataFrame) -> pl.DataFrame:
    samples = rtt_samples.filter(pl.col("source") == "qlog").sort([*KEY, "sample_index"])
    changes = (
        logged_estimates(metrics)
        .with_columns(pl.int_range(pl.len()).over(KEY).alias("logged_index"))
        .rename({"time_ms": "logged_time_ms", "smoothed_rtt_ms": "smoothed_rtt_logged_ms", "rtt_variance_ms": "rttvar_logged_ms"})
    )
    pairs = []
    for (run_id, vantage), endpoint_samples in samples.group_by(KEY, maintain_order=True):
        change_times = changes.filter((pl.col("run_id") == run_id) & (pl.col("vantage") == vantage))["logged_time_ms"].to_list()
        indices = pair_in_order(endpoint_samples["time_ms"].to_list(), change_times, LOOK_BACK_MS, MATCH_TOLERANCE_MS)
        pairs.append(endpoint_samples.select(*KEY, "sample_index").with_columns(pl.Series("logged_index", indices, dtype=pl.Int64)))
    matched = pl.concat(pairs) if pairs else samples.select(*KEY, "sample_index").with_columns(pl.lit(None, pl.Int64).alias("logged_index"))
    implementations = endpoints.filter(pl.col("source") == "qlog").unique(KEY, keep="first").select(*KEY, "implementation")
    return ESTIMATOR_AGREEMENT.conform(
        samples.join(matched, on=[*KEY, "sample_index"], how="left")
        .join(changes.drop("logged_time_ms"), on=[*KEY, "logged_index"], how="left")
        .join(implementations, on=KEY, how="left")
        .with_columns(
            (pl.col("smoothed_rtt_logged_ms") - pl.col("smoothed_rtt_ms")).alias("smoothed_delta_ms"),
            (pl.col("rttvar_logged_ms") - pl.col("rttvar_ms")).alias("rttvar_delta_ms"),
            (
                logged_pto(pl.col("smoothed_rtt_logged_ms"), pl.col("rttvar_logged_ms"))
                - logged_pto(pl.col("smoothed_rtt_ms"), pl.col("rttvar_ms"))
            ).alias("pto_delta_ms"),
        )
        .select([c.name for c in ESTIMATOR_AGREEMENT.columns])
        .sort([*KEY, "sample_index"])
    )


def agreement_summary(agreement: pl.DataFrame) -> pl.DataFrame:
    """Per implementation and vantage: how many samples, and the median / max absolute deviation."""
    return (
        agreement.group_by("implementation", "vantage")
        .agg(
            pl.len().alias("samples"),
            pl.col("smoothed_rtt_logged_ms").is_not_null().sum().alias("samples_with_logged_value"),
            pl.col("smoothed_delta_ms").abs().median().alias("smoothed_abs_delta_median_ms"),
            pl.col("smoothed_delta_ms").abs().max().alias("smoothed_abs_delta_max_ms"),
            pl.col("rttvar_delta_ms").abs().median().alias("rttvar_abs_delta_median_ms"),
            pl.col("rttvar_delta_ms").abs().max().alias("rttvar_abs_delta_max_ms"),
            pl.col("pto_delta_ms").abs().max().alias("pto_abs_delta_max_ms"),
        )
        .sort("implementation", "vantage")
    )
