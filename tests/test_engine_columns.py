"""One source for the tables' columns: the data contract (quicack.schema) names and types every column; the
compiled core reads it from src/quicack/schema/columns.csv (through build.rs) and the Python readers from the
schema itself (quicack.schema.engine_columns)."""

from __future__ import annotations

import polars as pl
import pytest

from quicack.pcap.columns import RowBuffers
from quicack.pcap.decoder_engine import compiled_engine
from quicack.qlog.normalize import FRAME_COLUMNS, METRIC_COLUMNS, PACKET_COLUMNS
from quicack.qlog.reader_engine import lane_class
from quicack.schema import FRAMES
from quicack.schema.engine_columns import CSV_PATH, expected_text, main, reader_schema


def test_columns_csv_is_what_the_schema_says() -> None:
    assert CSV_PATH.read_text(encoding="utf-8") == expected_text(), (
        "src/quicack/schema/columns.csv differs from the schema: run python -m quicack.schema.engine_columns "
        "(and rebuild quicack_core)"
    )
    assert main(["--check"]) == 0


def test_a_reader_column_outside_the_contract_has_no_type() -> None:
    assert reader_schema(FRAMES, ["t", "first_ack_range", "ack_ranges"]) == {
        "t": pl.Float64, "first_ack_range": pl.Int64, "ack_ranges": pl.Utf8,
    }  # fmt: skip
    with pytest.raises(KeyError):
        reader_schema(FRAMES, ["not_a_frames_column"])


@pytest.mark.skipif(lane_class() is None, reason="quicack_core with QlogLane is not built (install.sh)")
def test_the_compiled_qlog_reader_buffers_the_python_readers_columns_in_its_order() -> None:
    # The lane and the Python handlers hand each other flat rows: the same columns, in the same order.
    lane = lane_class()
    assert lane.row_columns() == [list(PACKET_COLUMNS), list(FRAME_COLUMNS), list(METRIC_COLUMNS)]


@pytest.mark.skipif(compiled_engine() is None, reason="quicack_core is not built (install.sh builds it)")
def test_both_capture_engines_hand_over_the_same_columns() -> None:
    import quicack_core

    python = RowBuffers().columns()
    compiled = quicack_core.RowBuffers().columns()
    for table in ("datagrams", "packets", "frames"):
        assert set(python[table]) == set(pl.DataFrame(compiled[table]).columns), table
