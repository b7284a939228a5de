"""Packet-sized tables read a batch of runs at a time, never whole.

Every table at packet granularity (``datagrams``, ``packets``, ``frames``, ``tcp_segments``) is keyed by run_id, and
what the figures, claims and derived tables compute from it per run depends on that run's rows alone. So a stage
that needs such a table cuts its runs into batches of at most ``ROWS_PER_BATCH`` rows — by each run's own row count,
so that a batch of ten 10 MB downloads weighs no more than one of a thousand handshakes — reads one batch, computes,
keeps the (small) result and reads the next: its memory is a batch's, whatever the dataset's size.

A stage receives such a table either in memory (a ``polars.DataFrame``: tests, small datasets, the derive stage's
own batches) or as a ``StoredView`` of ``quicack.duckdb``; ``per_run_batches`` treats both alike.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias, overload

import polars as pl

from quicack.storage import database

# Rows (summed over the tables a computation reads) per batch: ≈ 100–250 MB of polars frames with every column.
ROWS_PER_BATCH = 200_000


@dataclass(frozen=True)
class StoredView:
    """A view of ``quicack.duckdb`` too large to read whole: ``per_run_batches`` reads it a batch of runs at a
    time (``SELECT *`` of those runs, so each batch has exactly the columns and types a whole read would have)."""

    db: Path
    name: str


RunRows: TypeAlias = pl.DataFrame | StoredView


def in_memory(table: RunRows) -> pl.DataFrame:
    """A table that is never packet-sized (runs, ack_runs...), hence always read whole, as the frame it is."""
    if isinstance(table, StoredView):
        raise TypeError(f"{table.name} is a packet-sized view: read it a batch of runs at a time (per_run_batches)")
    return table


def batches_by_rows(
    rows_per_run: pl.DataFrame, max_rows: int = ROWS_PER_BATCH, max_runs: int | None = None
) -> list[list[str]]:
    """``rows_per_run`` (run_id, rows; in the order wanted) cut into consecutive batches of run ids of at most
    ``max_rows`` rows (a run larger than that is a batch alone) and, if given, at most ``max_runs`` runs. At least
    one (perhaps empty) batch."""
    batches: list[list[str]] = []
    current: list[str] = []
    rows_in_batch = 0
    for run_id, rows in rows_per_run.select("run_id", "rows").iter_rows():  # one row per run, not per packet
        if current and (rows_in_batch + rows > max_rows or len(current) == max_runs):
            batches.append(current)
            current, rows_in_batch = [], 0
        current.append(run_id)
        rows_in_batch += rows
    batches.append(current)
    return batches


def _rows_of(con, view: StoredView, run_ids: list[str]) -> pl.DataFrame:
    if not run_ids:
        return con.sql(f'SELECT * FROM "{view.name}" WHERE false').pl()
    listed = ", ".join(database.sql_string(run_id) for run_id in run_ids)
    # The range beside the list lets DuckDB skip the Parquet row groups whose run_id statistics miss the batch (a
    # batch is consecutive in run_id order); the list alone becomes a join over every row (5× slower at 10×).
    low, high = database.sql_string(min(run_ids)), database.sql_string(max(run_ids))
    return con.sql(f'SELECT * FROM "{view.name}" WHERE run_id BETWEEN {low} AND {high} AND run_id IN ({listed})').pl()


def _counted_runs(run_ids: list[str], counted: list[pl.DataFrame]) -> pl.DataFrame:
    """run_id (in the order of ``run_ids``) and its rows summed over the ``counted`` (run_id, rows) tables."""
    wanted = pl.DataFrame({"run_id": run_ids}, schema={"run_id": pl.Utf8})
    if not counted:
        return wanted.with_columns(pl.lit(0, pl.Int64).alias("rows"))
    rows = (
        pl.concat([c.cast({"rows": pl.Int64}) for c in counted], how="vertical")
        .group_by("run_id")
        .agg(pl.col("rows").sum())
    )
    return wanted.join(rows, on="run_id", how="left", maintain_order="left").with_columns(pl.col("rows").fill_null(0))


# Per-run results over stored views, by (computation, runs, views, the database file's version): a figure or a
# claims table asks for the same per-run step several times (one claim per client, per table cell), and reading
# the packets again each time costs far more than keeping the small result. A rebuilt database is a new version.
_KEPT: OrderedDict[Hashable, pl.DataFrame] = OrderedDict()
_KEPT_MOST = 32
_KEPT_LARGEST_BYTES = 32 * 2**20  # a result larger than that (per-packet rows) is not kept: memory stays a batch's


def _database_version(db: Path) -> tuple[str, int, int]:
    stat = db.stat()
    return str(db.resolve()), stat.st_mtime_ns, stat.st_size


def _kept(key: Hashable, make: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    if key in _KEPT:
        _KEPT.move_to_end(key)
        return _KEPT[key]
    value = make()
    if value.estimated_size() <= _KEPT_LARGEST_BYTES:
        _KEPT[key] = value
        while len(_KEPT) > _KEPT_MOST:
            _KEPT.popitem(last=False)
    return value


def _reusable(compute: Callable[..., pl.DataFrame]) -> bool:
    # A lambda or a nested function is a new object at every call of its parent: keeping its result would only
    # ever miss. Callable objects (a frozen dataclass naming its step) are compared by value.
    qualname = getattr(compute, "__qualname__", None) or type(compute).__qualname__
    return "<lambda>" not in qualname and "<locals>" not in qualname


def _rows_per_run(con, views: list[StoredView], run_ids: list[str]) -> pl.DataFrame:
    def counted(view: StoredView) -> pl.DataFrame:
        query = f'SELECT run_id, count(*) AS rows FROM "{view.name}" GROUP BY run_id'
        return _kept(("rows", _database_version(view.db), view.name), lambda: con.sql(query).pl())

    return _counted_runs(run_ids, [counted(view) for view in views])


def parquet_rows_per_run(parquet_root: Path, names: Iterable[str], part: str, run_ids: list[str]) -> pl.DataFrame:
    """run_id (in the order of ``run_ids``) and its rows summed over one part of the named tables
    (``parquet_root/<table>/<part>.parquet``; only their run_id column is read)."""
    paths = (parquet_root / name / f"{part}.parquet" for name in names)
    return _counted_runs(
        run_ids,
        [
            pl.scan_parquet(path).group_by("run_id").agg(pl.len().alias("rows")).collect()
            for path in paths
            if path.exists()
        ],
    )


def per_run_batches(
    compute: Callable[..., pl.DataFrame],
    run_ids: Iterable[str],
    *tables: RunRows | None,
    max_rows: int = ROWS_PER_BATCH,
) -> pl.DataFrame:
    """``compute(*tables)`` on the rows of ``run_ids`` only, evaluated a batch of runs at a time where a table is a
    ``StoredView`` and the results concatenated (in run_id order). ``compute`` must be per run: its rows for a run
    depend only on that run's rows. In-memory tables alone: one call (nothing is re-read)."""
    stored = [table for table in tables if isinstance(table, StoredView)]
    if not stored:
        return compute(*(_read(None, table, list(run_ids)) for table in tables))
    databases = {table.db for table in stored}
    if len(databases) != 1:
        raise ValueError(f"tables of several databases in one computation: {sorted(map(str, databases))}")
    ids = sorted(set(run_ids))
    if all(table is None or isinstance(table, StoredView) for table in tables) and _reusable(compute):
        key = (compute, tuple(ids), tables, _database_version(stored[0].db), max_rows)
        return _kept(key, lambda: _in_batches(compute, ids, tables, stored[0].db, max_rows))
    return _in_batches(compute, ids, tables, stored[0].db, max_rows)


@overload
def _read(con, table: RunRows, run_ids: list[str]) -> pl.DataFrame: ...
@overload
def _read(con, table: RunRows | None, run_ids: list[str]) -> pl.DataFrame | None: ...
def _read(con, table: RunRows | None, run_ids: list[str]) -> pl.DataFrame | None:
    """The rows of these runs: from the database (``con``) for a stored view, by a filter for a frame in memory."""
    if isinstance(table, StoredView):
        return _rows_of(con, table, run_ids)
    if table is None:
        return None
    return table.filter(pl.col("run_id").is_in(pl.Series(run_ids, dtype=pl.Utf8).implode()))


def _detached(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` in buffers of its own. A polars result can share the string buffers of the batch it was computed
    from (a run_id column taken from the input is a view into them): kept as it is, each small per-run result would
    keep its whole batch in memory. Through Arrow's plain strings, every column is copied out."""
    # from_arrow of a Table is a DataFrame
    return pl.from_arrow(frame.to_arrow(compat_level=pl.CompatLevel.oldest()))  # type: ignore[return-value]


def _in_batches(
    compute: Callable[..., pl.DataFrame], ids: list[str], tables: tuple[RunRows | None, ...], db: Path, max_rows: int
) -> pl.DataFrame:
    stored = [table for table in tables if isinstance(table, StoredView)]
    parts = []
    with database.connect(db) as con:
        for batch in batches_by_rows(_rows_per_run(con, stored, ids), max_rows):
            parts.append(_detached(compute(*(_read(con, table, batch) for table in tables))))
    return pl.concat(parts, how="vertical_relaxed") if len(parts) > 1 else parts[0]


def rows_in(run_ids: Iterable[str], *tables: RunRows | None) -> int:
    """How many rows the tables hold of these runs (stored views: from their per-run counts, nothing else read)."""
    ids = sorted(set(run_ids))
    total = 0
    for table in tables:
        if isinstance(table, StoredView):
            with database.connect(table.db) as con:
                total += int(_rows_per_run(con, [table], ids)["rows"].sum())
        elif table is not None:
            total += _read(None, table, ids).height
    return total


def rows_of_runs(table: RunRows, run_ids: Iterable[str]) -> pl.DataFrame:
    """The rows of a few runs (a figure that draws them one by one), read in one go."""
    ids = sorted(set(run_ids))
    if isinstance(table, StoredView):
        with database.connect(table.db) as con:
            return _read(con, table, ids)
    return _read(None, table, ids)
