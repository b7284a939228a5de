"""Row tuples of the normalizer -> polars frames conforming to the data contract.

One frame per table per batch, whatever the number of connections in it; per-connection values (run id,
vantage, time origin, absolute reference) are attached with one gather, and time_ms, time_abs_ns and direction
are computed as polars expressions rather than per row in Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from quicack.schema import FRAMES, METRICS_LOGGED, PACKETS, ack_ranges_from_json
from quicack.schema.engine_columns import reader_schema

from .normalize import FRAME_COLUMNS, METRIC_COLUMNS, PACKET_COLUMNS, UNKNOWN_PREFIX, TraceConnection, _int, _num

# The normalizer's columns with the contract's types (the trace time `t` a reader column, ACK ranges as JSON text).
PACKET_DTYPES = reader_schema(PACKETS, PACKET_COLUMNS)
FRAME_DTYPES = reader_schema(FRAMES, FRAME_COLUMNS)
METRIC_DTYPES = reader_schema(METRICS_LOGGED, METRIC_COLUMNS)
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

class Merged:
    """Flat rows (see ``normalize.TraceConnection``) of several connections plus, per connection, its attributes and
    row count."""

    def __init__(self, dtypes: dict[str, Any]) -> None:
        self.dtypes = dtypes
        self.width = len(dtypes)
        self.flat: list[Any] = []
        self.lengths: list[int] = []
        self.conns: list[TraceConnection] = []
        self.sanitized = False

    def add(self, conn: TraceConnection, flat: list[Any]) -> None:
        if flat:
            if len(flat) % self.width:
                raise ValueError(f"flat rows of {len(flat)} values are not rows of {self.width}")  # a bug, not input
            self.flat.extend(flat)
            self.lengths.append(len(flat) // self.width)
            self.conns.append(conn)

    def frame(self, table: Any) -> pl.DataFrame:
        if not self.flat:
            return table.empty()
        dtypes, width = self.dtypes, self.width
        columns = [self.flat[j::width] for j in range(width)]
        df = strict_columns(columns, dtypes)
        if df is None:
            rows = list(zip(*columns, strict=True))
            try:
                df = pl.DataFrame(rows, schema=dtypes, orient="row", strict=False)
            except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError):
                # a log put a non-numeric value where a number belongs: coerce per column, unparseable -> null
                df = pl.DataFrame([sanitize(r, dtypes) for r in rows], schema=dtypes, orient="row", strict=False)
                self.sanitized = True
        return self.finish(df, table)

    def finish(self, df: pl.DataFrame, table: Any) -> pl.DataFrame:
        """``df`` (the rows of ``self.conns``, ``self.lengths`` each, typed) with the connections' attributes and
        the derived columns, as ``table``."""
        attrs = pl.DataFrame(
            {
                "run_id": [c.run_id for c in self.conns],
                "vantage": [c.vantage for c in self.conns],
                "_origin": [c.origin_t or 0.0 for c in self.conns],
                "_ref": [c.ref_abs_ns for c in self.conns],
            },
            schema={"run_id": pl.Utf8, "vantage": pl.Utf8, "_origin": pl.Float64, "_ref": pl.Int64},
        )
        if len(self.conns) == 1:
            df = df.with_columns([pl.lit(v, dtype=attrs.schema[k]).alias(k)
                                  for k, v in attrs.row(0, named=True).items()])
        else:
            idx = pl.Series("_i", np.repeat(np.arange(len(self.conns)), self.lengths))
            df = pl.concat([df, attrs[idx]], how="horizontal")
        exprs: list[pl.Expr] = [(pl.col("t") - pl.col("_origin")).alias("time_ms")]
        if table is not METRICS_LOGGED:
            sent = pl.col("event") == "sent"
            client = pl.col("vantage") == "client"
            server = pl.col("vantage") == "server"
            # client sent / server received -> c2s; client received / server sent -> s2c
            direction = (
                pl.when((client & sent) | (server & ~sent)).then(pl.lit("c2s"))
                .when((client & ~sent) | (server & sent)).then(pl.lit("s2c"))
                .otherwise(pl.lit(None, dtype=pl.Utf8))
            )
            exprs += [pl.lit("qlog").alias("source"), direction.alias("direction")]
        if table is FRAMES:
            if df.schema["ack_ranges"] == pl.Utf8:  # the Python rows' JSON text; the lane's are lists already
                exprs.append(ack_ranges_from_json("ack_ranges"))
            # a frame the reader does not know keeps its name (normalize.UNKNOWN_PREFIX)
            unknown = pl.col("frame_type").str.starts_with(UNKNOWN_PREFIX)
            exprs += [
                pl.when(unknown).then(pl.lit("unknown")).otherwise(pl.col("frame_type")).alias("frame_type"),
                pl.when(unknown).then(pl.col("frame_type").str.slice(len(UNKNOWN_PREFIX))).alias("raw_frame_type"),
            ]
        if table is PACKETS:
            # integer addition: a float64 near 1.7e18 ns cannot hold single nanoseconds
            exprs += [pl.lit(True).alias("decrypted"),
                      ((pl.col("t") * 1e6).round().cast(pl.Int64) + pl.col("_ref")).alias("time_abs_ns")]
        replaced = {expr.meta.output_name() for expr in exprs}
        keep = [c for c in df.columns if c in table.schema and c not in replaced]
        return table.conform(df.select([*keep, *exprs]))


def strict_columns(columns: list[list[Any]], dtypes: dict[str, Any]) -> pl.DataFrame | None:
    """The columns as a frame with strict dtypes; None if any value does not fit.

    Typed Series from column lists cost less than half of polars' row-oriented constructor (0.2 s instead of
    0.5 s for the 100 MB bench input: the largest cost per row after parsing). Strict, because only values of
    the column's own type (ints in float columns, bools in int columns) convert here exactly as the
    row-oriented non-strict constructor would; anything else (numeric strings, floats in int columns, junk)
    returns None so that the caller takes that constructor and its sanitizing fallback, unchanged.
    """
    try:
        return pl.DataFrame([pl.Series(name, col, dtype=dt) for (name, dt), col in zip(dtypes.items(), columns,
                                                                                      strict=True)])
    except (pl.exceptions.PolarsError, TypeError, ValueError, OverflowError):
        return None


def sanitize(row: tuple[Any, ...], dtypes: dict[str, Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for v, dt in zip(row, dtypes.values(), strict=True):
        if v is None:
            out.append(None)
        elif dt == pl.Int64:
            number = _int(v)
            out.append(number if number is None or INT64_MIN <= number <= INT64_MAX else None)
        elif dt == pl.Float64:
            out.append(_num(v))
        elif dt == pl.Boolean:
            out.append(v if isinstance(v, bool) else None)
        else:
            out.append(v if isinstance(v, str) else str(v))
    return tuple(out)


def concat(frames: list[pl.DataFrame], table: Any) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    if not frames:
        return table.empty()
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical")
