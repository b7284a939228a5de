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


def read_view_if_present(db: str | Path, name: str) -> pl.DataFrame | None:
    """The named view, or None when the database has none of that name (e.g. ``tcp_segments`` in a dataset
    recorded before the testbed captured TCP): the figures then draw QUIC alone."""
    with store.connect(Path(db)) as con:
        present = con.sql("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", params=[name]).fetchone()
        if not present or present[0] == 0:
            return None
        return con.sql(f'SELECT * FROM "{name}"').pl()
