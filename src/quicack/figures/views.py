"""Reading what a figure needs from the database the pipeline built."""

from __future__ import annotations

from pathlib import Path

from quicack.storage import database
from quicack.storage.run_batches import RunRows, StoredView

# The views at packet granularity (and the qlogs' metric updates, as many): a figure reads them a batch of its runs
# at a time (quicack.storage.run_batches), so its memory does not grow with the dataset.
PACKET_SIZED_VIEWS = frozenset({"datagrams", "packets", "frames", "tcp_segments", "metrics_logged"})


def read_views(db: str | Path, *names: str) -> dict[str, RunRows]:
    """The named views of ``quicack.duckdb`` (the Parquet behind them, read through DuckDB so that ad-hoc SQL and
    the figures see exactly the same rows): polars frames, except the packet-sized views, which are
    ``StoredView`` handles the figure functions read a batch of their runs at a time."""
    with database.connect(Path(db)) as con:
        return {name: _view(con, Path(db), name) for name in names}


def _view(con, db: Path, name: str) -> RunRows:
    if name in PACKET_SIZED_VIEWS:
        return StoredView(db, name)
    return con.sql(f'SELECT * FROM "{name}"').pl()


def read_view_if_present(db: str | Path, name: str) -> RunRows | None:
    """The named view, or None when the database has none of that name (e.g. ``tcp_segments`` in a dataset
    recorded before the testbed captured TCP): the figures then draw QUIC alone."""
    with database.connect(Path(db)) as con:
        present = con.sql(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", params=[name]
        ).fetchone()
        if not present or present[0] == 0:
            return None
        return _view(con, Path(db), name)
