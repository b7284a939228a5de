"""Congestion window over time from an endpoint's qlog (recovery:metrics_updated, the ``metrics_logged`` table):
rethink Fig. 4 and ackfreq22 Fig. 5 draw the sender's (the server's) window."""

from __future__ import annotations

import polars as pl

from quicack.storage.run_batches import RunRows, per_run_batches


def cwnd_over_time(metrics_logged: pl.DataFrame, vantage: str = "server") -> pl.DataFrame:
    """Per run: every logged congestion window of ``vantage`` with its time since that endpoint's first logged
    update (run_id, time_s, cwnd_bytes). Updates that log no window (RTT only) are left out, not filled in."""
    rows = metrics_logged.filter(pl.col("vantage") == vantage)
    return (
        rows.with_columns(((pl.col("time_ms") - pl.col("time_ms").min().over("run_id")) / 1000.0).alias("time_s"))
        .filter(pl.col("cwnd_bytes").is_not_null())
        .select("run_id", "time_s", "cwnd_bytes")
        .sort("run_id", "time_s")
    )


def cwnd_of_runs(selected: pl.DataFrame, metrics_logged: RunRows, vantage: str = "server") -> pl.DataFrame:
    """``cwnd_over_time`` of the ``selected`` runs, their qlog metrics read a batch of runs at a time."""
    return per_run_batches(
        lambda metrics_logged: cwnd_over_time(metrics_logged, vantage), selected["run_id"], metrics_logged
    )
