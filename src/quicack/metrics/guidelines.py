"""imc24 Table 2 from the measurements: per scenario, which mode had the lower median TTFB and by
how much — computed, never typed in."""

from __future__ import annotations

import polars as pl

from quicack.metrics.summary import summarize

# A margin below this is within run-to-run jitter of the testbed: reported as a tie.
TIE_MS = 1.0


def guidelines(handshakes: pl.DataFrame, ttfb_column: str = "ttfb_capture_ms") -> pl.DataFrame:
    """Per (scenario, RTT, client) the mode with the lower median TTFB and the margin, and per
    scenario the mode most configurations prefer. The client-side capture TTFB is the default
    because it exists for every client (quinn's qlog has no frames)."""
    medians = summarize(handshakes, ttfb_column).pivot(on="mode", index=["client_impl", "scenario", "rtt_ms"], values="median")
    per_configuration = medians.filter(pl.col("iack").is_not_null() & pl.col("wfc").is_not_null()).with_columns(
        (pl.col("wfc") - pl.col("iack")).alias("iack_advantage_ms"),
    ).with_columns(
        pl.when(pl.col("iack_advantage_ms").abs() < TIE_MS)
        .then(pl.lit("tie"))
        .when(pl.col("iack_advantage_ms") > 0)
        .then(pl.lit("iack"))
        .otherwise(pl.lit("wfc"))
        .alias("preferred")
    )
    return per_configuration.sort("scenario", "rtt_ms", "client_impl")


def guidelines_by_scenario(handshakes: pl.DataFrame, ttfb_column: str = "ttfb_capture_ms") -> pl.DataFrame:
    """Table 2's cells: per scenario, how many (client, RTT) configurations prefer each mode, the
    median margin (WFC − IACK median TTFB; positive = IACK faster) and the preferred mode: 'tie'
    when the median margin is below ``TIE_MS``, else the mode most configurations prefer."""
    return (
        guidelines(handshakes, ttfb_column)
        .group_by("scenario")
        .agg(
            (pl.col("preferred") == "iack").sum().alias("configurations_iack"),
            (pl.col("preferred") == "wfc").sum().alias("configurations_wfc"),
            (pl.col("preferred") == "tie").sum().alias("configurations_tie"),
            pl.col("iack_advantage_ms").median().alias("median_iack_advantage_ms"),
        )
        .with_columns(
            # A scenario whose median margin is within jitter prefers neither mode, whatever
            # the per-configuration counts say.
            pl.when(pl.col("median_iack_advantage_ms").abs() < TIE_MS)
            .then(pl.lit("tie"))
            .when(pl.col("configurations_iack") > pl.col("configurations_wfc"))
            .then(pl.lit("iack"))
            .when(pl.col("configurations_wfc") > pl.col("configurations_iack"))
            .then(pl.lit("wfc"))
            .otherwise(pl.lit("tie"))
            .alias("preferred")
        )
        .sort("scenario")
    )
