"""ackfreq22's 1 MB downloads as its tables count them: the ok runs of a selection with their ``ack_runs`` row, Table
4's condition of each run (no loss, or 1 % loss with D, NR or 3A) and its download time. Shared by the tables
(``quicack.figures.ackfreq22``) and the claims on their cells (``quicack.claims.ackfreq22_cells``), which must not
depend on the figures."""

from __future__ import annotations

import polars as pl

from quicack.markup import plural
from quicack.metrics.selection import MissingData, ackfreq22_matrix_runs, require_runs

WHERE = "1 MB downloads over the emulated ackfreq22 paths"


def ok_runs(selected: pl.DataFrame) -> pl.DataFrame:
    return selected.filter(pl.col("status") == "ok")


def measured_runs(selected: pl.DataFrame, ack_runs: pl.DataFrame, metric: str, what: str) -> pl.DataFrame:
    """The ok selected runs with their ``ack_runs`` row, MissingData when none has ``metric``."""
    drawn = ok_runs(selected).join(ack_runs, on="run_id")
    if drawn.filter(pl.col(metric).is_not_null()).is_empty():
        counted = plural(selected.height, "run")
        raise MissingData(f"no ok run with {metric} of the {what} ({counted} of it in the dataset)")
    return drawn


def table4_condition() -> pl.Expr:
    """'no loss' or '1 % loss D' / 'NR' / '3A': Table 4's rows."""
    return (
        pl.when(pl.col("lossy"))
        .then(pl.format("1 % loss {}", pl.col("ack_reordering")))
        .otherwise(pl.lit("no loss"))
        .alias("condition")
    )


def download_times(runs: pl.DataFrame, ack_runs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the runs of Table 4, every ok one with its condition and download time in s)."""
    selected = require_runs(ackfreq22_matrix_runs(runs), f"of the {WHERE} at AR 2, 10, 20 with d = 25 ms")
    drawn = measured_runs(selected, ack_runs, "download_time_ms", WHERE).with_columns(
        table4_condition(), (pl.col("download_time_ms") / 1000.0).alias("download_s")
    )
    return selected, drawn
