"""Parquet files per table and run group, and the DuckDB file of views over them.

Layout: ``results/<dataset>/parquet/<table>/<part>.parquet``; the database
``results/<dataset>/quicack.duckdb`` holds one view per table over its glob, with paths
relative to the repository root, and a ``COMMENT ON`` for every view and column.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import duckdb
import polars as pl

from quicack.schema import TABLES, Table

# Parquet settings fixed so that two runs on the same input give identical files.
_PARQUET_OPTIONS = {"compression": "zstd", "compression_level": 3, "statistics": True}


def write_table(table: Table, frame: pl.DataFrame, path: Path) -> Path:
    """Write ``frame`` conformed to ``table`` to ``path`` (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside, then renamed: a reader never sees a half-written file, and a published snapshot's hard
    # link (quicack.publish) keeps the old content instead of seeing this one being written into it.
    partial = path.with_name(path.name + ".partial")
    table.conform(frame).write_parquet(partial, **_PARQUET_OPTIONS)
    os.replace(partial, path)
    return path


def write_tables(frames: dict[str, pl.DataFrame], parquet_root: Path, part: str) -> list[Path]:
    """Write one part of several tables: ``parquet_root/<table>/<part>.parquet`` each.

    Every table named in ``frames`` gets a file, even an empty one, so that a run group
    always leaves the same set of outputs behind.
    """
    return [write_table(TABLES[name], frame, parquet_root / name / f"{part}.parquet") for name, frame in frames.items()]


def read_table(parquet_root: Path, name: str, parts: Iterable[str] | None = None) -> pl.DataFrame:
    """Read a table's parts (all by default), conformed to the contract; empty if none exist."""
    table = TABLES[name]
    folder = parquet_root / name
    files = sorted(folder.glob("*.parquet")) if parts is None else [folder / f"{p}.parquet" for p in parts]
    files = [f for f in files if f.exists()]
    if not files:
        return table.empty()
    return pl.concat([table.conform(pl.read_parquet(f)) for f in files], how="vertical")


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_type(dtype: pl.DataType | type[pl.DataType]) -> str:
    mapping = {pl.Utf8: "VARCHAR", pl.Float64: "DOUBLE", pl.Int64: "BIGINT", pl.Boolean: "BOOLEAN"}
    return mapping[dtype if isinstance(dtype, type) else type(dtype)]


def build_database(db_path: Path, files: dict[str, list[Path]], repo_root: Path) -> dict[str, int]:
    """Create the DuckDB file ``db_path`` (replaced if it exists) with one commented view per table over
    exactly ``files`` (table name → its Parquet files; `quicack.publish` gives a snapshot's); return row counts.

    View paths are relative to ``repo_root`` where they can be, so that the file opens from the repository
    root with the DuckDB CLI and keeps working when the checkout moves; ``connect`` sets the search path for
    Python users anywhere.
    """
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.unlink(missing_ok=True)
    root = Path(repo_root).resolve()
    counts: dict[str, int] = {}
    with duckdb.connect(str(db_path)) as con:
        con.execute(f"SET file_search_path = {_sql_string(str(root))}")
        for table in TABLES.values():
            columns = ", ".join(
                f"CAST({_quote(c.name)} AS {_sql_type(c.dtype)}) AS {_quote(c.name)}" for c in table.columns
            )
            paths = [_view_path(path, root) for path in files.get(table.name, [])]
            if paths:
                listed = ", ".join(_sql_string(path) for path in paths)
                con.execute(f"CREATE VIEW {table.name} AS SELECT {columns} FROM read_parquet([{listed}], union_by_name = true)")
            else:
                nulls = ", ".join(f"CAST(NULL AS {_sql_type(c.dtype)}) AS {_quote(c.name)}" for c in table.columns)
                con.execute(f"CREATE VIEW {table.name} AS SELECT {nulls} WHERE false")
            con.execute(f"COMMENT ON VIEW {table.name} IS {_sql_string(table.comment)}")
            for column in table.columns:
                con.execute(f"COMMENT ON COLUMN {table.name}.{_quote(column.name)} IS {_sql_string(column.comment)}")
            counts[table.name] = con.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0]
    return counts


def _view_path(path: Path, root: Path) -> str:
    """A Parquet file as a view names it: relative to the repository when inside it (results outside the
    repository keep absolute paths). Glob characters are escaped: a file name is one file, never a pattern."""
    resolved = path.resolve()
    try:
        text = str(resolved.relative_to(root))
    except ValueError:
        text = str(resolved)
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def read_files(name: str, files: list[Path]) -> pl.DataFrame:
    """A table from exactly these Parquet files, conformed to the contract; empty when there are none."""
    table = TABLES[name]
    frames = [table.conform(pl.read_parquet(f)) for f in files]
    return pl.concat(frames, how="vertical") if frames else table.empty()


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def connect(db_path: Path, repo_root: Path | None = None, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open the database from anywhere: the views' relative paths resolve against ``repo_root``
    (default: the folder holding ``results/``)."""
    db_path = Path(db_path).resolve()
    root = repo_root if repo_root is not None else _guess_repo_root(db_path)
    con = duckdb.connect(str(db_path), read_only=read_only)
    con.execute(f"SET file_search_path = {_sql_string(str(Path(root).resolve()))}")
    return con


def _guess_repo_root(db_path: Path) -> Path:
    for parent in db_path.parents:
        if parent.name == "results":
            return parent.parent
    return db_path.parent
