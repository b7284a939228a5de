"""The Parquet files of the data contract's tables, read back: a table's parts, one part's runs, a frame made
contiguous. Their writer is ``quicack.storage.table_writer``'s (apart, so that a job that only reads them does not
depend on the compiled core the writer may use: quicack.jobs.code_graph).

Layout: ``results/<dataset>/parquet/<table>/<part>.parquet``, a part per run group (or scan part); the database
over them is ``quicack.storage.database``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from quicack.schema import TABLES


def read_table(parquet_root: Path, name: str, parts: Iterable[str] | None = None) -> pl.DataFrame:
    """Read a table's parts (all by default), conformed to the contract; empty if none exist."""
    table = TABLES[name]
    folder = parquet_root / name
    files = sorted(folder.glob("*.parquet")) if parts is None else [folder / f"{p}.parquet" for p in parts]
    files = [f for f in files if f.exists()]
    if not files:
        return table.empty()
    return pl.concat([table.conform(pl.read_parquet(f)) for f in files], how="vertical")


def read_table_runs(parquet_root: Path, name: str, part: str, run_ids: list[str]) -> pl.DataFrame:
    """The rows of these runs from one part of a table, conformed; only they are read into memory (a lazy scan
    filtered by run_id: row groups whose run_id range misses the runs are skipped)."""
    table = TABLES[name]
    path = parquet_root / name / f"{part}.parquet"
    if not path.exists():
        return table.empty()
    return contiguous(table.conform(pl.scan_parquet(path).filter(pl.col("run_id").is_in(run_ids)).collect()))


def contiguous(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every column in one chunk, made one column at a time (in place). A filtered scan returns
    columns chunked differently (run_id in one piece per row group read, the others not), and every eager
    expression over such a frame first copies all of it into aligned chunks: each filter of the derive stage cost a
    copy of the whole batch (+650 MB on a run of 2·10⁶ qlog events, bench/derive_memory.py). One column at a time,
    the copy is one column's."""
    if len(set(frame.n_chunks("all"))) <= 1:
        return frame
    for index, name in enumerate(frame.columns):
        frame.replace_column(index, frame.get_column(name).rechunk())
    return frame


def read_files(name: str, files: list[Path]) -> pl.DataFrame:
    """A table from exactly these Parquet files, conformed to the contract; empty when there are none."""
    table = TABLES[name]
    frames = [table.conform(pl.read_parquet(f)) for f in files]
    return pl.concat(frames, how="vertical") if frames else table.empty()
