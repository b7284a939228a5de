"""The DuckDB file of the dataset: one view per contract table over exactly the Parquet files of a snapshot, paths
relative to the repository root, a ``COMMENT ON`` for every view and column; the small tables stored inside it;
opening it from anywhere.

Layout: ``results/<dataset>/quicack.duckdb`` beside ``results/<dataset>/parquet/`` (``quicack.storage.parquet_store``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from polars.datatypes import DataTypeClass

from quicack.schema import TABLES, Table

# duckdb is imported where it is used: a command that writes Parquet only starts without it.
if TYPE_CHECKING:
    import duckdb


def sql_string(text: str) -> str:
    """A SQL string literal of ``text`` (quotes doubled)."""
    return "'" + text.replace("'", "''") + "'"


def one_value(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """The value of a query that returns one row of one column (``count(*)``, ``current_setting(...)``)."""
    row = con.execute(sql).fetchone()
    if row is None:
        raise ValueError(f"no row from {sql}")
    return row[0]


def write_commented_table(con: duckdb.DuckDBPyConnection, table: Table, frame: pl.DataFrame) -> None:
    """Store ``frame`` (conformed to ``table``) inside the database as a table of that name, with the contract's
    comments on it and its columns: the small tables build-db adds beside the Parquet views."""
    arrow = table.conform(frame).to_arrow()  # noqa: F841 - read by DuckDB's replacement scan below
    con.execute(f"CREATE OR REPLACE TABLE {table.name} AS SELECT * FROM arrow")
    con.execute(f"COMMENT ON TABLE {table.name} IS {sql_string(table.comment)}")
    for column in table.columns:
        con.execute(f"COMMENT ON COLUMN {table.name}.{_quote(column.name)} IS {sql_string(column.comment)}")


def _sql_type(dtype: pl.DataType | DataTypeClass) -> str:
    """The DuckDB type of a contract column (lists and structs included: VARCHAR[], STRUCT(low BIGINT, ...)[])."""
    if isinstance(dtype, pl.List):
        return _sql_type(dtype.inner) + "[]"
    if isinstance(dtype, pl.Struct):
        return "STRUCT(" + ", ".join(f"{_quote(field.name)} {_sql_type(field.dtype)}" for field in dtype.fields) + ")"
    mapping: dict[object, str] = {pl.Utf8: "VARCHAR", pl.Float64: "DOUBLE", pl.Int64: "BIGINT", pl.Boolean: "BOOLEAN"}
    return mapping[dtype if isinstance(dtype, type) else type(dtype)]


def build_database(db_path: Path, files: dict[str, list[Path]], repo_root: Path) -> dict[str, int]:
    """Create the DuckDB file ``db_path`` (replaced if it exists) with one commented view per table over
    exactly ``files`` (table name → its Parquet files; `quicack.storage.publish` gives a snapshot's); return row counts.

    View paths are relative to ``repo_root`` where they can be, so that the file opens from the repository
    root with the DuckDB CLI and keeps working when the checkout moves; ``connect`` sets the search path for
    Python users anywhere.
    """
    import duckdb

    db_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.unlink(missing_ok=True)
    root = Path(repo_root).resolve()
    counts: dict[str, int] = {}
    with duckdb.connect(str(db_path)) as con:
        con.execute(f"SET file_search_path = {sql_string(str(root))}")
        for table in TABLES.values():
            columns = ", ".join(
                f"CAST({_quote(c.name)} AS {_sql_type(c.dtype)}) AS {_quote(c.name)}" for c in table.columns
            )
            paths = [_view_path(path, root) for path in files.get(table.name, [])]
            if paths:
                listed = ", ".join(sql_string(path) for path in paths)
                con.execute(
                    f"CREATE VIEW {table.name} AS SELECT {columns} FROM read_parquet([{listed}], union_by_name = true)"
                )
            else:
                nulls = ", ".join(f"CAST(NULL AS {_sql_type(c.dtype)}) AS {_quote(c.name)}" for c in table.columns)
                con.execute(f"CREATE VIEW {table.name} AS SELECT {nulls} WHERE false")
            con.execute(f"COMMENT ON VIEW {table.name} IS {sql_string(table.comment)}")
            for column in table.columns:
                con.execute(f"COMMENT ON COLUMN {table.name}.{_quote(column.name)} IS {sql_string(column.comment)}")
            counts[table.name] = one_value(con, f"SELECT count(*) FROM {table.name}")
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


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def connect(db_path: Path, repo_root: Path | None = None, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """Open the database from anywhere: the views' relative paths resolve against ``repo_root``
    (default: the folder holding ``results/``)."""
    import duckdb

    db_path = Path(db_path).resolve()
    con = duckdb.connect(str(db_path), read_only=read_only)
    root = repo_root if repo_root is not None else _view_root(con, db_path) or _guess_repo_root(db_path)
    con.execute(f"SET file_search_path = {sql_string(str(Path(root).resolve()))}")
    # DuckDB keeps the Parquet it has read in memory for the next query (up to its memory limit, 80 % of RAM): a
    # figure reading the packets a batch of runs at a time would then hold them all by its end.
    con.execute("SET enable_external_file_cache = false")
    return con


# The first file a view reads (DuckDB stores the list as main.list_value('…', …)).
_FIRST_VIEW_PATH = re.compile(r"read_parquet\([^']*'((?:[^']|'')*)'")


def _view_root(con: duckdb.DuckDBPyConnection, db_path: Path) -> Path | None:
    """The folder the views' relative paths start from (the one the database was built from): the nearest folder
    holding ``db_path`` in which a view's first Parquet file exists. Whatever the results folder is called; None
    when the views name no relative path or the file is gone."""
    sql = con.execute(
        "SELECT sql FROM duckdb_views() WHERE NOT internal AND sql LIKE '%read_parquet(%' LIMIT 1"
    ).fetchone()
    found = _FIRST_VIEW_PATH.search(sql[0]) if sql else None
    if found is None:
        return None
    relative = re.sub(r"\[([*?\[])\]", r"\1", found.group(1).replace("''", "'"))  # _view_path's escaping undone
    if Path(relative).is_absolute():
        return None
    return next((folder for folder in db_path.parents if (folder / relative).is_file()), None)


def _guess_repo_root(db_path: Path) -> Path:
    for parent in db_path.parents:
        if parent.name == "results":
            return parent.parent
    return db_path.parent
