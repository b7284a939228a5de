"""quicack.metrics.scalars: a polars aggregate of a recorded table as the Python number its caller expects, and a clear
error for anything else (no rows, a text column) instead of a TypeError further on."""

from __future__ import annotations

import polars as pl
import pytest

from quicack.metrics.scalars import integer, number, optional_number


def test_aggregates_of_recorded_frames_are_numbers(ack_policy_tables) -> None:
    frames = ack_policy_tables["frames"]
    assert not frames.is_empty()
    largest = integer(frames["packet_number"].max())
    assert isinstance(largest, int) and largest == frames["packet_number"].to_list()[frames["packet_number"].arg_max()]
    first = number(frames["time_ms"].min())
    assert isinstance(first, float) and first == min(t for t in frames["time_ms"].to_list() if t is not None)


def test_no_rows_is_none_or_a_clear_error(ack_policy_tables) -> None:
    nothing = ack_policy_tables["frames"].filter(pl.lit(False))["time_ms"]
    assert optional_number(nothing.median()) is None
    with pytest.raises(ValueError, match="no value"):
        number(nothing.median())


def test_a_text_column_is_not_a_number(ack_policy_tables) -> None:
    with pytest.raises(TypeError, match="not a number"):
        number(ack_policy_tables["frames"]["frame_type"].max())
    with pytest.raises(TypeError, match="not an integer"):
        integer(ack_policy_tables["frames"]["time_ms"].max())
