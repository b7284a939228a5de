"""Reading what a figure needs from the database the pipeline built."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from quicack import store


def read_views(db: str | Path, *names: str) -> dict[str, pl.DataFrame]:
    """The named views of ``quicack.duckdb`` as polars frames (the Parquet behind them, read
    through DuckDB so that ad-hoc SQL and the figures see exactly the same rows)."""
    with store.connect(Path(db)) as con:
        return {name: con.sql(f'SELECT * FROM "{name}"').pl() for name in names}


def read_view(db: str | Path, name: str) -> pl.DataFrame:
    return read_views(db, name)[name]
