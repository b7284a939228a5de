"""Streaming: memory held while reading a JSON-SEQ qlog does not grow with the file (tracemalloc peak, 1x vs 10x).

The inputs are real ngtcp2 events repeated (one connection whose log is ten times longer), built in tmp_path.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import polars as pl
from test_qlog_common import QLOG_DATA

from quicack.qlog import iter_qlog, write_qlog_parquet

NGTCP2 = QLOG_DATA / "ngtcp2" / "client.sqlog"


def _long_log(tmp_path: Path, repeats: int) -> Path:
    records = NGTCP2.read_bytes().split(b"\x1e")
    header, body = b"\x1e" + records[1], b"".join(b"\x1e" + r for r in records[2:])
    p = tmp_path / f"long{repeats}.sqlog"
    p.write_bytes(header + body * repeats)
    return p


def _peak_bytes(path: Path, batch_events: int) -> tuple[int, int]:
    tracemalloc.start()
    try:
        rows = 0
        for batch in iter_qlog(path, "r", batch_events=batch_events):
            rows += batch.packets.height  # consume and drop each batch, as the Parquet writer does
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, rows


def test_json_seq_memory_does_not_grow_with_file_size(tmp_path: Path):
    small, large = _long_log(tmp_path, 40), _long_log(tmp_path, 400)
    assert large.stat().st_size > 9 * small.stat().st_size
    peak_small, rows_small = _peak_bytes(small, batch_events=2_000)
    peak_large, rows_large = _peak_bytes(large, batch_events=2_000)
    assert rows_large == 10 * rows_small
    # bounded by one batch and one read chunk, not by the file: 10x the input may not cost even 2x the memory
    assert peak_large < 2 * peak_small, (peak_small, peak_large)
    assert peak_large < large.stat().st_size


def test_batches_are_bounded_by_batch_events(tmp_path: Path):
    p = _long_log(tmp_path, 50)
    sizes = [b.events for b in iter_qlog(p, "r", batch_events=1_000)]
    events_per_copy = len(NGTCP2.read_bytes().split(b"\x1e")) - 2  # minus the empty split and the header
    assert max(sizes) <= 1_000 and sum(sizes) == 50 * events_per_copy


def test_write_parquet_streams_batches_into_row_groups(tmp_path: Path):
    p = _long_log(tmp_path, 30)
    s = write_qlog_parquet([p], tmp_path / "out", run_id_for=lambda _: "r", batch_events=1_000, row_group_rows=1_000)
    packets = pl.read_parquet(tmp_path / "out" / "packets.parquet")
    assert packets.height == s.rows["packets"] and s.rows["endpoints"] == 1
    import pyarrow.parquet as pq

    assert pq.ParquetFile(tmp_path / "out" / "packets.parquet").num_row_groups > 1
    # time_ms stays relative to the one first client Initial across batches
    assert packets["time_ms"].min() == 0.0
