"""The tables' columns as both reader engines see them: the types of what a reader hands to the batch assembly,
and ``columns.csv`` beside this file, the column names and types of the tables the readers fill, for the compiled
core.

The data contract (the tables in this package) is the one home of column names and types. The Python readers
take their columns' types from it here (`reader_schema`); the compiled core (rust/quicack_core) cannot import
Python, so its build script reads ``columns.csv``, written from the contract by ``python -m
quicack.schema.engine_columns`` (tests/test_engine_columns.py fails while the file and the contract differ), and
names its columns through the constants it generates: a column the contract lacks, or of another type, does not
compile. Adding a column to a table is: the contract, this file rewritten, the code computing it in each engine.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from .contract import ACK_RANGES, Table
from .ingest_tables import DATAGRAMS, FRAMES, METRICS_LOGGED, PACKETS, TCP_SEGMENTS

CSV_PATH = Path(__file__).with_name("columns.csv")
# The tables the readers fill (the others' columns never reach the core, so changing them rebuilds nothing).
READER_TABLES = (DATAGRAMS, TCP_SEGMENTS, PACKETS, FRAMES, METRICS_LOGGED)

# Columns the readers hand to the batch assembly that no table has: the trace time before the connection's origin
# is subtracted (qlog, `t`), the row a packet's datagram and a frame's packet have in the batch, the ACK delay
# exponent of a packet's sender and an ACK's unscaled ACK Delay field (captures). The core's row buffers name them
# as table `reader` of columns.csv.
READER_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "t": pl.Float64,
    "datagram_row": pl.Int64,
    "packet_row": pl.Int64,
    "exponent": pl.Int64,
    "ack_delay_raw": pl.Int64,
}
READER_TABLE = "reader"

# The types as columns.csv spells them (build.rs maps each to the core's `Dtype`).
DTYPE_NAMES: tuple[tuple[pl.DataType | type[pl.DataType], str], ...] = (
    (pl.Utf8, "text"),
    (pl.Int64, "int"),
    (pl.Float64, "float"),
    (pl.Boolean, "bool"),
    (pl.List(pl.Utf8), "text_list"),
    (ACK_RANGES, "ack_ranges"),
)


def reader_schema(table: Table, names: Iterable[str]) -> dict[str, pl.DataType | type[pl.DataType]]:
    """The types of the columns ``names`` a reader hands over for ``table``: the table's own, a reader column's
    (READER_COLUMNS), and the ACK ranges as the JSON text both readers build (`contract.ack_ranges_from_json`)."""
    out: dict[str, pl.DataType | type[pl.DataType]] = {}
    for name in names:
        dtype = READER_COLUMNS[name] if name in READER_COLUMNS else table.schema[name]
        out[name] = pl.Utf8 if dtype == ACK_RANGES else dtype
    return out


def dtype_name(dtype: pl.DataType | type[pl.DataType]) -> str:
    for known, name in DTYPE_NAMES:
        if dtype == known:
            return name
    raise ValueError(f"no columns.csv name for the type {dtype} (add it to DTYPE_NAMES and build.rs)")


def render(tables: Iterable[Table]) -> str:
    """columns.csv's text: one line per column (table, column, type), the tables and their columns in order."""
    lines = [
        "# Generated from quicack.schema by `python -m quicack.schema.engine_columns`: edit the schema, not this file.",
        "table,column,dtype",
    ]
    for table in tables:
        lines += [f"{table.name},{column.name},{dtype_name(column.dtype)}" for column in table.columns]
    lines += [f"{READER_TABLE},{name},{dtype_name(dtype)}" for name, dtype in READER_COLUMNS.items()]
    return "\n".join(lines) + "\n"


def expected_text() -> str:
    return render(READER_TABLES)


def main(argv: list[str] | None = None) -> int:
    """Write columns.csv from the schema (with --check: exit 1 when it differs, writing nothing)."""
    args = sys.argv[1:] if argv is None else argv
    text = expected_text()
    current = CSV_PATH.read_text(encoding="utf-8") if CSV_PATH.is_file() else None
    if "--check" in args:
        if current != text:
            print(f"{CSV_PATH} differs from the schema: run python -m quicack.schema.engine_columns", file=sys.stderr)
            return 1
        return 0
    if current != text:
        CSV_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {CSV_PATH} (rebuild quicack_core: bash install.sh)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
