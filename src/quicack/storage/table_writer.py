"""The one Parquet writer of the data contract's tables (``TableWriter``, streaming; ``write_tables`` for whole
frames): one file per table, row groups of ``ROW_GROUP_ROWS``, written by quicack_core's ParquetFileWriter where
it is installed, else by pyarrow, with the same settings. Read back with ``quicack.storage.parquet_store``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict

import polars as pl

from quicack.schema import TABLES

# pyarrow is imported where it is used: `quicack pcap` on one small capture then starts without it (pyarrow
# with numpy alone costs ~0.15 s).
if TYPE_CHECKING:
    import pyarrow as pa

# Parquet settings fixed so that two runs on the same input give identical files.
class _ParquetOptions(TypedDict):
    compression: Literal["zstd"]
    compression_level: int
    statistics: bool


_PARQUET_OPTIONS: _ParquetOptions = {"compression": "zstd", "compression_level": 3, "statistics": True}
# Rows per Parquet row group when a table is written in several pieces: big enough that the row groups'
# overhead is small, small enough that the rows waiting for one stay a few MB.
ROW_GROUP_ROWS = 65_536
# Frames waiting for a row group are gathered into one after this many: a table of a row or so per run
# (ingest_issues: 9,700 rows for quinn_quinn's 8,300 runs at 100x the embedded data) fills no row group and held
# thousands of one-row frames, each with its own buffers (bench/README.md, "At a hundred times the data": that
# group's ingest 761 -> 579 MiB).
PENDING_FRAMES_GATHERED = 64


def _gathered(frames: list[pl.DataFrame]) -> pl.DataFrame:
    """``frames`` as one frame with one buffer per column (PENDING_FRAMES_GATHERED)."""
    return pl.concat(frames, how="vertical", rechunk=True)


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """The string columns: dictionary-encode those only. The contract's strings repeat (run, vantage, connection,
    direction, packet and frame types), its numbers mostly do not (times, packet numbers, offsets), and building a
    dictionary that overflows and falls back to plain encoding took a quarter of the writer's CPU time on a large
    capture (bench/README.md), for a larger file."""
    import pyarrow as pa

    textual = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    return [field.name for field in schema if any(test(field.type) for test in textual)]


# Which appending writer writes the row groups of a table larger than one: "compiled" (quicack_core's
# ParquetFileWriter, the parquet crate, used when installed) or "pyarrow" (pyarrow's ParquetWriter). Both store
# the same columns with the same settings (tests/test_parquet_writers.py); the compiled one takes the frames as
# they are (Arrow C stream, no `to_arrow` copy, no concatenation per row group) and encodes them faster
# (bench/README.md, issue 37).
WRITER_VARIABLE = "QUICACK_PARQUET_WRITER"
WRITERS = ("compiled", "pyarrow")


class _FileWriter(Protocol):
    def write(self, frame: pl.DataFrame) -> None: ...  # rows of the open row group
    def flush(self) -> None: ...  # end the open row group
    def close(self) -> None: ...


class _PyarrowFile:
    """pyarrow's ParquetWriter; a row group's frames wait until ``flush`` writes them as one table."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        import pyarrow.parquet as pq

        self._frames: list[pl.DataFrame] = []
        self._writer = pq.ParquetWriter(
            path, schema, compression="zstd", compression_level=_PARQUET_OPTIONS["compression_level"],
            write_statistics=True, use_dictionary=_dictionary_columns(schema),
        )  # fmt: skip

    def write(self, frame: pl.DataFrame) -> None:
        self._frames.append(frame)
        if len(self._frames) >= PENDING_FRAMES_GATHERED:
            self._frames = [_gathered(self._frames)]

    def flush(self) -> None:
        if self._frames:
            frames, self._frames = self._frames, []
            self._writer.write_table(pl.concat(frames, how="vertical").to_arrow())

    def close(self) -> None:
        self.flush()
        self._writer.close()


def _open_file(path: Path, first: pl.DataFrame, writer: str | None) -> _FileWriter:
    """The appending writer of ``path`` (``writer``, else QUICACK_PARQUET_WRITER, else compiled when installed)."""
    name = writer or os.environ.get(WRITER_VARIABLE) or None
    if name not in (None, *WRITERS):
        raise ValueError(f"unknown Parquet writer {name!r} (choose from {', '.join(WRITERS)})")
    if name != "pyarrow":
        try:
            import quicack_core
        except ImportError:
            quicack_core = None
        compiled = getattr(quicack_core, "ParquetFileWriter", None)
        if compiled is not None:
            file: _FileWriter = compiled(str(path), _PARQUET_OPTIONS["compression_level"])
            return file
        if name == "compiled":
            raise ImportError("quicack_core with ParquetFileWriter is not installed: run install.sh")
    return _PyarrowFile(path, first.head(0).to_arrow().schema)


class TableWriter:
    """Streams frames of contract tables into one Parquet file per table, one row group per frame.

    The one writer of the package: the pipeline's parts, ``quicack pcap`` and ``quicack qlog`` use it.
    Memory is one frame per table, whatever the number of frames. Each file is written aside and renamed into
    place by ``close`` (a reader never sees a half-written file, and a published snapshot's hard link, see
    ``quicack.storage.publish``, keeps the old content instead of seeing the new one written into it); every table
    given gets a file, an empty one if no rows came, so that a job always leaves the same outputs behind.
    Leaving the ``with`` block on an exception removes the partial files and publishes nothing.
    """

    def __init__(self, paths: dict[str, Path], row_group_rows: int = ROW_GROUP_ROWS, writer: str | None = None) -> None:
        self.paths = {name: Path(path) for name, path in paths.items()}
        self.rows = dict.fromkeys(self.paths, 0)
        self.row_group_rows = row_group_rows
        self.writer = writer  # the appending writer's name (WRITERS); None: QUICACK_PARQUET_WRITER or compiled
        # Frames wait here until a row group's worth has come: many small frames (one per qlog file) would
        # otherwise each cost a row group's overhead. A table that never fills one (most run groups and
        # captures) is written by polars alone at close; the appending writer opens at the first flush and from
        # then on takes the frames as they come, a row group ending where a row group's worth has come.
        self._pending: dict[str, list[pl.DataFrame]] = {name: [] for name in self.paths}
        self._pending_rows = dict.fromkeys(self.paths, 0)
        self._writers: dict[str, _FileWriter] = {}

    @classmethod
    def in_folder(cls, folder: Path, names: Iterable[str], row_group_rows: int = ROW_GROUP_ROWS,
                  writer: str | None = None) -> TableWriter:
        """``folder/<table>.parquet`` for each table (the command-line tools' output)."""
        return cls({name: Path(folder) / f"{name}.parquet" for name in names}, row_group_rows, writer)

    @classmethod
    def part(cls, parquet_root: Path, names: Iterable[str], part: str) -> TableWriter:
        """``parquet_root/<table>/<part>.parquet`` for each table (the pipeline's output of one run group)."""
        return cls({name: Path(parquet_root) / name / f"{part}.parquet" for name in names})

    def write(self, name: str, frame: pl.DataFrame) -> None:
        """Append ``frame`` (conformed to the contract) to table ``name``; empty frames cost nothing."""
        if not frame.height:
            return
        frame = TABLES[name].conform(frame)
        writer = self._writers.get(name)
        if writer is None:
            self._pending[name].append(frame)
        else:
            writer.write(frame)
        self.rows[name] += frame.height
        self._pending_rows[name] += frame.height
        if self._pending_rows[name] >= self.row_group_rows:
            self._flush(name)
        elif len(pending := self._pending[name]) >= PENDING_FRAMES_GATHERED:
            self._pending[name] = [_gathered(pending)]

    def _flush(self, name: str) -> None:
        """End the row group of the rows waiting (opening the file at the first)."""
        writer = self._writers.get(name)
        if writer is None:
            pending = self._pending[name]
            writer = self._writers[name] = _open_file(self._partial(name), pending[0], self.writer)
            for frame in pending:
                writer.write(frame)
            self._pending[name] = []
        writer.flush()
        self._pending_rows[name] = 0

    def close(self) -> dict[str, int]:
        """Finish every file and rename it into place; return the rows written per table."""
        for name, path in self.paths.items():
            partial = self._partial(name)
            if name in self._writers:
                self._writers.pop(name).close()  # the rows waiting are the last row group
            else:
                pending = self._pending.pop(name)
                frame = pl.concat(pending, how="vertical") if pending else TABLES[name].empty()
                frame.write_parquet(partial, **_PARQUET_OPTIONS)
            os.replace(partial, path)
        return dict(self.rows)

    def abandon(self) -> None:
        """Drop what was written so far; the files in place (if any) stay as they were."""
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        self._pending.clear()
        for name in self.paths:
            self._partial(name).unlink(missing_ok=True)

    def _partial(self, name: str) -> Path:
        path = self.paths[name]
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.with_name(path.name + ".partial")

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.abandon()


def write_tables(frames: dict[str, pl.DataFrame], parquet_root: Path, part: str) -> list[Path]:
    """Write one part of several tables: ``parquet_root/<table>/<part>.parquet`` each (empty files included)."""
    with TableWriter.part(parquet_root, frames, part) as writer:
        for name, frame in frames.items():
            writer.write(name, frame)
    return list(writer.paths.values())
