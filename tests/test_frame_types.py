"""QUIC frame-type names and numbers have one home (src/quicack/frame_types.csv): the Python decoders and the
compiled core read the same table, and both frame walkers and both qlog readers name every listed frame type as
the table says.

The payloads here are hand-made (one frame of each listed wire type followed by zeros): no capture holds every
frame type, and the walker's naming, not the capture, is under test.
"""

from __future__ import annotations

import polars as pl
import pytest

from quicack.frame_types import FRAME_TYPES, QLOG_NAMES, WIRE_NAMES, read_frame_types
from quicack.pcap.frames import FrameColumns, walk_frames
from quicack.qlog.normalize import frame_type

try:
    import quicack_core
except ImportError:  # the pure-Python engines alone
    quicack_core = None
needs_core = pytest.mark.skipif(quicack_core is None, reason="quicack_core is not built (install.sh)")


def _varint(value: int) -> bytes:
    for length, prefix in ((1, 0x00), (2, 0x40), (4, 0x80), (8, 0xC0)):
        if value < 1 << (8 * length - 2):
            return (value | prefix << (8 * length - 8)).to_bytes(length, "big")
    raise ValueError(value)


def test_the_table_keeps_the_data_contract_names() -> None:
    assert WIRE_NAMES[0x1E] == "handshake_done"
    assert WIRE_NAMES[0xAF] == "ack_frequency"
    assert WIRE_NAMES[0x1F] == WIRE_NAMES[0xAC] == "immediate_ack"
    assert WIRE_NAMES[0x30] == WIRE_NAMES[0x31] == "datagram"
    assert {WIRE_NAMES[t] for t in range(0x08, 0x10)} == {"stream"}
    assert QLOG_NAMES["ack_ecn"] == "ack" and QLOG_NAMES["time_stamp"] == "time_stamp"
    names = [t.name for t in FRAME_TYPES]
    assert len(names) == len(set(names)) and "unknown" in names
    spellings = [s for t in FRAME_TYPES for s in (t.name, *t.qlog_names)]
    assert len(spellings) == len(set(spellings)), "a qlog spelling names two frame types"
    wire = [n for t in FRAME_TYPES for n in t.wire_types]
    assert len(wire) == len(set(wire)), "a wire type has two names"


def test_ranges_and_comments_of_the_file_format() -> None:
    text = "# comment\nname,wire_types,qlog_names,spec\nx,0x02-0x04 0xaf,a b,RFC 1 §2\ny,,,\n"
    x, y = read_frame_types(text)
    assert (x.name, x.wire_types, x.qlog_names, x.spec) == ("x", (2, 3, 4, 0xAF), ("a", "b"), "RFC 1 §2")
    assert (y.wire_types, y.qlog_names) == ((), ())


@needs_core
def test_the_compiled_core_holds_the_same_table() -> None:
    """Fails too when the installed core was built from an older table: rebuild it (install.sh)."""
    if not hasattr(quicack_core, "FRAME_TYPES"):
        pytest.fail("the installed quicack_core predates frame_types.csv: rebuild it (install.sh)")
    compiled = [(name, tuple(wire), tuple(aliases)) for name, wire, aliases in quicack_core.FRAME_TYPES]
    assert compiled == [(t.name, t.wire_types, t.qlog_names) for t in FRAME_TYPES]


@pytest.mark.parametrize("number", sorted(WIRE_NAMES), ids=hex)
def test_both_walkers_name_every_wire_type_as_the_table(number: int) -> None:
    payload = _varint(number) + bytes(40)  # zero-valued fields, then padding
    columns = FrameColumns()
    walk_frames(payload, columns)
    assert columns.frame_type[0] == WIRE_NAMES[number]
    if quicack_core is not None:
        rows = quicack_core.RowBuffers()
        count = rows.walk(payload)[0]
        rows.add_packet(0, "1rtt", len(payload), frame_count=count)
        assert pl.DataFrame(rows.columns()["frames"])["frame_type"].to_list() == columns.frame_type


def test_the_python_qlog_reader_maps_every_spelling() -> None:
    for t in FRAME_TYPES:
        for spelling in (t.name, *t.qlog_names):
            assert frame_type(spelling) == t.name
            assert frame_type(spelling.upper()) == t.name
    assert frame_type("no_such_frame") == "unknown"
