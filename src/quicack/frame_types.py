"""QUIC frame-type names and numbers, read from their one home, ``frame_types.csv`` beside this module.

The capture decoder names wire frame types with ``WIRE_NAMES``, the qlog reader maps the spellings of qlog writers
with ``QLOG_NAMES``; the compiled core (rust/quicack_core) compiles the same file in, and exposes what it compiled
as ``quicack_core.FRAME_TYPES`` (tests/test_frame_types.py checks that both agree).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib.resources import files


@dataclass(frozen=True, slots=True)
class FrameType:
    name: str
    wire_types: tuple[int, ...]  # the numbers the capture decoder names so; empty: qlog-only names
    qlog_names: tuple[str, ...]  # other spellings of qlog writers (lower case)
    spec: str


def _wire_types(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in text.split():
        low, _, high = part.partition("-")
        out.extend(range(int(low, 16), int(high or low, 16) + 1))
    return tuple(out)


def read_frame_types(text: str) -> tuple[FrameType, ...]:
    """The rows of a frame_types.csv text (lines starting with '#' are comments)."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return tuple(
        FrameType(row["name"], _wire_types(row["wire_types"]), tuple(row["qlog_names"].split()), row["spec"])
        for row in csv.DictReader(lines)
    )


FRAME_TYPES: tuple[FrameType, ...] = read_frame_types(
    files("quicack").joinpath("frame_types.csv").read_text(encoding="utf-8")
)
# wire frame type -> name (the capture decoder's frame walker)
WIRE_NAMES: dict[int, str] = {number: t.name for t in FRAME_TYPES for number in t.wire_types}
# lower-case qlog spelling -> name (the qlog reader); "unknown" is also what an unlisted spelling gives
QLOG_NAMES: dict[str, str] = {
    spelling: t.name for t in FRAME_TYPES for spelling in (t.name, *t.qlog_names)
}
