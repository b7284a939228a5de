"""Parquet files per table and run group, and the DuckDB file of views over them.

Layout: ``results/<dataset>/parquet/<table>/<part>.parquet``; the database
``results/<dataset>/quicack.duckdb`` holds one view per table over its glob, with paths
relative to the repository root, and a ``COMMENT ON`` for every view and column.
"""

from __future__ import annotations

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
    table.conform(frame).write_parquet(path, **_PARQUET_OPTIONS)
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


def build_database(db_path: Path, parquet_root: Path, repo_root: Path) -> dict[str, int]:
    """(Re)create the DuckDB file with one commented view per table; return row counts.

    View paths are relative to ``repo_root`` so that the file opens from the repository root
    with the DuckDB CLI and keeps working when the checkout moves; ``connect`` sets the search
    path for Python users anywhere.
    """
    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = db_path.with_suffix(".duckdb.tmp")
    tmp_path.unlink(missing_ok=True)
    parquet_root = Path(parquet_root).resolve()
    try:
        view_root = parquet_root.relative_to(Path(repo_root).resolve())
    except ValueError:
        view_root = parquet_root  # results outside the repository: absolute paths
    counts: dict[str, int] = {}
    with duckdb.connect(str(tmp_path)) as con:
        con.execute(f"SET file_search_path = {_sql_string(str(Path(repo_root).resolve()))}")
        for table in TABLES.values():
            files = sorted((parquet_root / table.name).glob("*.parquet"))
            columns = ", ".join(
                f"CAST({_quote(c.name)} AS {_sql_type(c.dtype)}) AS {_quote(c.name)}" for c in table.columns
            )
            if files:
                glob = _sql_string(f"{view_root}/{table.name}/*.parquet")
                source = f"read_parquet({glob}, union_by_name = true)"
                con.execute(f"CREATE VIEW {table.name} AS SELECT {columns} FROM {source}")
            else:
                nulls = ", ".join(f"CAST(NULL AS {_sql_type(c.dtype)}) AS {_quote(c.name)}" for c in table.columns)
                con.execute(f"CREATE VIEW {table.name} AS SELECT {nulls} WHERE false")
            con.execute(f"COMMENT ON VIEW {table.name} IS {_sql_string(table.comment)}")
            for column in table.columns:
                con.execute(f"COMMENT ON COLUMN {table.name}.{_quote(column.name)} IS {_sql_string(column.comment)}")
            counts[table.name] = con.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0]
    tmp_path.replace(db_path)
    return counts


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
