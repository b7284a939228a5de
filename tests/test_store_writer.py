"""quicack.storage.table_writer.TableWriter, the one Parquet writer: row groups, empty tables, and nothing published
on failure."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from quicack.pcap.decode import decode_capture
from quicack.schema import TABLES
from quicack.storage.table_writer import PENDING_FRAMES_GATHERED, TableWriter

DATA = Path(__file__).parent / "data" / "pcap"
CAPTURE = DATA / "aioquic_v1_keyupdate.pcap.gz"
KEYLOG = DATA / "aioquic_v1_keyupdate.keys.log"


def test_small_batches_gather_into_row_groups_with_the_same_rows(tmp_path: Path) -> None:
    batches = list(decode_capture(CAPTURE, KEYLOG, run_id="run", batch_rows=50))
    assert len(batches) > 4
    with TableWriter.in_folder(tmp_path, ["packets", "frames", "ingest_issues"], row_group_rows=200) as writer:
        for batch in batches:
            writer.write("packets", batch.packets)
            writer.write("frames", batch.frames)
    expected = pl.concat([batch.packets for batch in batches])
    written = pl.read_parquet(tmp_path / "packets.parquet")
    assert written.equals(expected)
    assert writer.rows["packets"] == expected.height
    row_groups = pq.ParquetFile(tmp_path / "packets.parquet").num_row_groups
    assert 1 < row_groups < len(batches)  # gathered, not one row group per batch
    # a table given but never written is an empty file with the contract's columns
    assert pl.read_parquet(tmp_path / "ingest_issues.parquet").columns == list(TABLES["ingest_issues"].schema)


def test_many_small_frames_are_held_as_few_and_written_as_they_came(tmp_path: Path) -> None:
    packets = pl.concat([batch.packets for batch in decode_capture(CAPTURE, KEYLOG, run_id="run")])
    rows = [packets.slice(at, 1) for at in range(min(packets.height, 3 * PENDING_FRAMES_GATHERED + 5))]
    held = []
    with TableWriter.in_folder(tmp_path, ["packets"]) as writer:  # no row group fills: all wait for close
        for row in rows:
            writer.write("packets", row)
            held.append(len(writer._pending["packets"]))
    assert max(held) <= PENDING_FRAMES_GATHERED
    assert pl.read_parquet(tmp_path / "packets.parquet").equals(pl.concat(rows))


def test_a_failure_inside_the_block_publishes_nothing(tmp_path: Path) -> None:
    batch = next(iter(decode_capture(CAPTURE, KEYLOG, run_id="run")))
    with TableWriter.in_folder(tmp_path, ["packets"]) as writer:
        writer.write("packets", batch.packets)
    before = (tmp_path / "packets.parquet").read_bytes()
    with pytest.raises(RuntimeError), TableWriter.in_folder(tmp_path, ["packets"], row_group_rows=10) as writer:
        writer.write("packets", batch.packets.with_columns(run_id=pl.lit("other")))
        raise RuntimeError("interrupted")
    assert (tmp_path / "packets.parquet").read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["packets.parquet"]
