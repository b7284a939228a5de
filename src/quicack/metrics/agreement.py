"""Recomputed RFC 9002 estimator beside the implementation's own logged values.

Each recomputed sample is paired with the first *change* of the logged (smoothed_rtt,
rtt_variance) at or after it (implementations log right after processing the ACK; most log
only the fields that changed, so fields are carried forward). A sample that leaves the logged
values unchanged therefore pairs with the next change: the comparison is then conservative.
"""

from __future__ import annotations

import polars as pl

from quicack.metrics.connections import logged_estimates, logged_pto
from quicack.schema import ESTIMATOR_AGREEMENT

KEY = ["run_id", "vantage"]
# A logged update more than this after the sample belongs to a later event, not this sample.
MATCH_TOLERANCE_MS = 5.0


def estimator_agreement(rtt_samples: pl.DataFrame, metrics: pl.DataFrame, endpoints: pl.DataFrame) -> pl.DataFrame:
    samples = rtt_samples.filter(pl.col("source") == "qlog").sort([*KEY, "sample_index"])
    # Each distinct logged estimate, in order; index them so that several samples processed
    # within one logged timestamp (integer-ms logs) pair with successive logged changes.
    logged = (
        logged_estimates(metrics)
        .with_columns(pl.int_range(pl.len()).over(KEY).alias("logged_index"))
        .rename({"time_ms": "logged_time_ms", "smoothed_rtt_ms": "smoothed_rtt_logged_ms", "rtt_variance_ms": "rttvar_logged_ms"})
    )
    first_at_or_after = samples.select(*KEY, "sample_index", "time_ms").sort("time_ms").join_asof(
        logged.select(*KEY, "logged_time_ms", "logged_index").sort("logged_time_ms"),
        left_on="time_ms",
        right_on="logged_time_ms",
        by=KEY,
        strategy="forward",
        tolerance=MATCH_TOLERANCE_MS,
        check_sortedness=False,  # sorted by time above; polars cannot verify it per group
    )
    matched = first_at_or_after.with_columns(
        (pl.col("logged_index") + pl.int_range(pl.len()).over([*KEY, "logged_index"])).alias("logged_index")
    ).select(*KEY, "sample_index", "logged_index")
    implementations = endpoints.filter(pl.col("source") == "qlog").unique(KEY, keep="first").select(*KEY, "implementation")
    return ESTIMATOR_AGREEMENT.conform(
        samples.join(matched, on=[*KEY, "sample_index"], how="left")
        .join(logged.drop("logged_time_ms"), on=[*KEY, "logged_index"], how="left")
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
