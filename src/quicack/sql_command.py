"""`quicack sql`: a query on the database, printed as a table or CSV; without a query, the DuckDB shell on it."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

DEFAULT_DB = Path("results/sample/quicack.duckdb")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", nargs="?")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB)
    parser.add_argument("--csv", action="store_true", help="print CSV instead of a table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not args.db.exists():
        print(f"no database at {args.db}: run `snakemake --cores all` first, or pass --db", file=sys.stderr)
        return 1
    if args.query is None:
        shell = shutil.which("duckdb")
        if shell is None:
            print("the DuckDB CLI is not installed: pip install duckdb-cli", file=sys.stderr)
            return 1
        os.execv(shell, [shell, "-readonly", str(args.db)])
    import duckdb
    import polars as pl

    from quicack import database

    with database.connect(args.db) as con:
        try:
            frame = con.execute(args.query).pl()
        except duckdb.Error as error:
            print(f"query failed: {error}", file=sys.stderr)
            return 1
    if args.csv:
        sys.stdout.write(frame.write_csv())
    else:
        with pl.Config(tbl_rows=50, tbl_cols=20, fmt_str_lengths=60):
            print(frame)
    return 0
