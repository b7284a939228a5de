"""`quicack sql`: a query on the database, printed as a table or CSV; without a query, a query prompt on it.

It is for exploring the dataset, so by default DuckDB may read only the dataset's own files: the Parquet files its
views name (``allowed_paths``, with external access off and the configuration locked), installs and loads no
extension, and a statement that writes or opens files (COPY, EXPORT DATABASE, ATTACH, INSTALL, LOAD, ...) is refused
before it runs. ``--unrestricted`` lifts all of it (and opens the DuckDB shell without a query) for users who ask.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

DEFAULT_DB = Path("results/sample/quicack.duckdb")
UNRESTRICTED_HINT = "quicack sql reads only the dataset's own files; `quicack sql --unrestricted` lifts this"
# Statements that only read (or change the session, whose file and extension settings are locked). Anything else
# (COPY, EXPORT, ATTACH, DETACH, LOAD/INSTALL, UPDATE EXTENSIONS, PREPARE/EXECUTE of any of them, ...) is refused:
# DuckDB's settings cannot refuse a COPY onto one of the dataset's own Parquet files, which reads must reach.
_READING = {"SELECT", "CALL", "PRAGMA", "SET", "VARIABLE_SET", "CREATE", "DROP", "TRANSACTION"}
# EXPLAIN [ANALYZE] [(options)] runs what follows it under ANALYZE: that statement is checked instead.
_EXPLAIN = re.compile(r"\s*explain\s+(?:\([^)]*\)\s*)?(?:analy[sz]e\s+)?", re.IGNORECASE)
# The string literals of a view's SQL: the Parquet paths of read_parquet([...])
# (quicack.storage.database.build_database).
_SQL_STRING = re.compile(r"'((?:[^']|'')*)'")
_GLOB_ESCAPE = re.compile(r"\[([*?[])\]")
# enable_logging() can send DuckDB's log to a file: refused (to a file it is not allowed to open, DuckDB aborts).
_LOGGING = re.compile(r"\benable_logging\b", re.IGNORECASE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="?", help="SQL to run (without one: a query prompt; statements end with ;)")
    parser.add_argument(
        "--db",
        default=str(DEFAULT_DB),
        help=f"the database file (default: {DEFAULT_DB}), a folder of quicack Parquet (the output of quicack qlog / "
        "pcap: <table>.parquet; or a results parquet/ folder: <table>/*.parquet), each table a view, or :memory:",
    )
    parser.add_argument("--csv", action="store_true", help="print CSV instead of a table (list columns as JSON)")
    parser.add_argument(
        "--unrestricted",
        action="store_true",
        help="let queries read and write any file and install extensions (default: only the dataset's own files "
        "are read, nothing is written); without a query, open the DuckDB shell",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    db = Path(args.db)
    if args.db != MEMORY and not db.exists():
        print(f"no database at {db}: run `snakemake --cores all` first, or pass --db", file=sys.stderr)
        return 1
    if args.query is None and args.unrestricted and db.is_file():
        shell = shutil.which("duckdb")
        if shell is None:
            print("the DuckDB CLI is not installed: pip install duckdb-cli", file=sys.stderr)
            return 1
        os.execv(shell, [shell, "-readonly", str(db)])
    from quicack.storage import database

    with database.connect(db) if db.is_file() else parquet_folder(None if args.db == MEMORY else db) as con:
        if not args.unrestricted:
            restrict(con)
        if args.query is not None:
            return _answer(con, args.query, args.csv, args.unrestricted)
        return _prompt(con, args.csv)


MEMORY = ":memory:"


def parquet_folder(folder: Path | None) -> duckdb.DuckDBPyConnection:
    """An in-memory database with a view per quicack table found in ``folder`` (none for :memory:):
    ``<table>.parquet`` (what quicack qlog / pcap write) or ``<table>/*.parquet`` (a results parquet/ folder). The
    views name their files, as the database's do, so that `restrict` allows exactly them."""
    import duckdb

    from quicack.schema import TABLES
    from quicack.storage.database import sql_string

    con = duckdb.connect(MEMORY)
    for name in TABLES if folder is not None else ():
        assert folder is not None  # (the loop runs only then)
        files = (
            [folder / f"{name}.parquet"]
            if (folder / f"{name}.parquet").is_file()
            else sorted((folder / name).glob("*.parquet"))
        )
        if files:
            paths = ", ".join(sql_string(str(path.resolve())) for path in files)
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet([{paths}], union_by_name = true)")
    return con


def restrict(con: duckdb.DuckDBPyConnection) -> None:
    """Confine ``con`` (opened by quicack.storage.database.connect) to reading the Parquet files its views name:
    external access off but for those files, no extension installed or loaded on demand, the configuration locked."""
    from quicack.storage.database import one_value

    search_path = one_value(con, "SELECT current_setting('file_search_path')")
    roots = [Path(folder) for folder in search_path.split(",") if folder]  # DuckDB's list is comma-separated
    allowed: set[str] = set()
    for (view_sql,) in con.execute("SELECT sql FROM duckdb_views() WHERE NOT internal").fetchall():
        for literal in _SQL_STRING.findall(view_sql):
            pattern = literal.replace("''", "'")
            # DuckDB checks a relative path as written, then as found on the search path, and the file its glob
            # pattern matches (a name's glob characters are escaped as [*]): all are allowed.
            for path in {pattern, _GLOB_ESCAPE.sub(r"\1", pattern)}:
                allowed.update({path, *(str(root / path) for root in roots)})
    con.execute(f"SET allowed_paths = {_sql_list(sorted(allowed))}")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET allow_community_extensions = false")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def refusal(con: duckdb.DuckDBPyConnection, query: str) -> str | None:
    """Why ``query`` may not run on a restricted connection (one statement that does not only read), or None."""
    import duckdb

    try:
        statements = con.extract_statements(query)
    except duckdb.PermissionException as error:  # IMPORT DATABASE reads its files while it is parsed
        return f"refused: {UNRESTRICTED_HINT}\n{error}"
    except duckdb.Error:  # a syntax error: running the query says it
        return None
    if _LOGGING.search(query):
        return f"refused: enable_logging may write DuckDB's log to a file ({UNRESTRICTED_HINT})"
    for statement in statements:
        kind = statement.type.name
        if kind == "EXPLAIN":
            inner = _EXPLAIN.sub("", statement.query, count=1)
            try:
                con.extract_statements(inner)
            except duckdb.Error:  # what EXPLAIN runs could not be told apart (a comment inside EXPLAIN ANALYZE, ...)
                return f"refused: EXPLAIN of a statement that could not be checked ({UNRESTRICTED_HINT})"
            if (reason := refusal(con, inner)) is not None:
                return reason
            continue
        if kind not in _READING:
            word = statement.query.split(None, 1)[0].upper()
            return f"refused: {word} writes or opens files, databases or extensions ({UNRESTRICTED_HINT})"
    return None


def _answer(con: duckdb.DuckDBPyConnection, query: str, csv: bool, unrestricted: bool) -> int:
    import duckdb
    import polars as pl

    if not unrestricted and (reason := refusal(con, query)) is not None:
        print(f"query {reason}", file=sys.stderr)
        return 1
    try:
        frame = con.execute(query).pl()
    except duckdb.Error as error:
        if isinstance(error, duckdb.PermissionException) or "configuration has been locked" in str(error):
            print(f"query refused: {UNRESTRICTED_HINT}\n{error}", file=sys.stderr)
        else:
            print(f"query failed: {error}", file=sys.stderr)
        return 1
    if csv:
        # CSV has no lists or structs: such a column is written as its JSON text.
        nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
        sys.stdout.write(frame.with_columns(pl.col(nested).map_elements(_json, return_dtype=pl.String)).write_csv())
    else:
        with pl.Config(tbl_rows=50, tbl_cols=20, fmt_str_lengths=60):
            print(frame)
    return 0


def _prompt(con: duckdb.DuckDBPyConnection, csv: bool) -> int:
    """Read statements ending in ``;`` from stdin and answer each under the same restrictions (the DuckDB shell cannot
    refuse a statement): `quicack sql --unrestricted` opens that shell."""
    try:
        import readline  # noqa: F401 - line editing and history for input()
    except ImportError:
        pass
    interactive = sys.stdin.isatty()
    if interactive:
        print(f"{UNRESTRICTED_HINT}. End a statement with ';' (SHOW TABLES; lists the tables), quit with Ctrl-D.")
    status, lines = 0, list[str]()
    while True:
        try:
            line = input(("quicack> " if not lines else "    ...> ") if interactive else "")
        except EOFError:
            break
        lines.append(line)
        text = "\n".join(lines)
        if text.strip() and text.rstrip().endswith(";"):
            lines = []
            status = _answer(con, text, csv, unrestricted=False) or status
    if "\n".join(lines).strip():  # a last statement without its ';'
        status = _answer(con, "\n".join(lines), csv, unrestricted=False) or status
    return status


def _json(value) -> str:
    import json

    return json.dumps(value.to_list() if hasattr(value, "to_list") else value, ensure_ascii=False)


def _sql_list(items: list[str]) -> str:
    from quicack.storage.database import sql_string

    return "[" + ", ".join(sql_string(item) for item in items) + "]"
