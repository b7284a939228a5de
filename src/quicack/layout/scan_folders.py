"""The scanner layout of the imc24 authors (QScanner run by their ``measurement.sh``)::

    <root>/<vantage_point>/data/<ISO timestamp>/
        capture.pcap[.zst]   targets[.zst]   key.log[.zst]
        quic_connection_info.csv[.zst]   quic_shared_config.csv[.zst]   http_header.csv[.zst]   ...
        pcap.csv[.zst]       the authors' tshark export, used when the capture itself is absent

A measurement folder is named by ``date -Ins`` (``2026-11-22T19:45:34,033078863+00:00``); its vantage point is
the folder two levels up. Every file may be zstd-compressed (``.zst``) or plain. This module only finds folders
and files and reads folder names; what the files hold is read by ``quicack.scan``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from quicack.layout.runs import group_key

DATA_FOLDER = "data"
CAPTURE = "capture.pcap"
KEYLOG = "key.log"
TARGETS = "targets"
CONNECTION_INFO = "quic_connection_info.csv"
SHARED_CONFIG = "quic_shared_config.csv"
HTTP_HEADER = "http_header.csv"
PCAP_CSV = "pcap.csv"
# The configured truth an emulated scan keeps beside every measurement (quicack.testbed.scan); absent in real scans.
TRUTH = "truth.csv"
# Files that mark a folder as a scanner output even when its name is not a timestamp (so it is reported,
# not silently passed over).
MEASUREMENT_MARKERS = (CAPTURE, CONNECTION_INFO, TARGETS, PCAP_CSV)
COMPRESSED_SUFFIX = ".zst"

# `date -Ins` / `date --iso-8601=ns`: a comma or a dot before up to nine fraction digits, an offset or Z.
_TIMESTAMP = re.compile(
    r"^(?P<seconds>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[.,](?P<fraction>\d{1,9}))?(?P<offset>Z|[+-]\d{2}:?\d{2})$"
)


@dataclass(frozen=True)
class MeasurementTime:
    """A measurement's start as its folder names it, to the nanosecond (datetime stops at microseconds)."""

    unix_ns: int

    @property
    def iso(self) -> str:
        """ISO 8601 in UTC with nine fraction digits: sorts as text in time order."""
        seconds, nanoseconds = divmod(self.unix_ns, 1_000_000_000)
        moment = datetime.fromtimestamp(seconds, UTC)
        return f"{moment:%Y-%m-%dT%H:%M:%S}.{nanoseconds:09d}+00:00"

    @property
    def date(self) -> str:
        return self.iso[:10]


def parse_measurement_time(name: str) -> MeasurementTime | None:
    """The time a measurement folder's name gives (``date -Ins`` output), or None if it is not one."""
    match = _TIMESTAMP.match(name)
    if match is None:
        return None
    try:
        moment = datetime.fromisoformat(match["seconds"]).replace(tzinfo=UTC)
    except ValueError:
        return None
    offset = match["offset"]
    if offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        hours, minutes = int(offset[1:3]), int(offset[-2:])
        if hours > 23 or minutes > 59:
            return None
        moment -= sign * timedelta(hours=hours, minutes=minutes)
    fraction = (match["fraction"] or "").ljust(9, "0")
    return MeasurementTime(int(moment.timestamp()) * 1_000_000_000 + int(fraction or 0))


@dataclass(frozen=True)
class MeasurementFolder:
    path: Path
    vantage_point: str
    time: MeasurementTime | None  # None: the folder's name is not a timestamp

    @property
    def scan_id(self) -> str:
        """``<vantage_point>/<folder name>``: unique within a root, readable in query results."""
        return f"{self.vantage_point}/{self.path.name}"

    def file(self, name: str) -> Path | None:
        """``name`` or ``name.zst`` in the folder (the plain one if both exist), or None."""
        for candidate in (self.path / name, self.path / (name + COMPRESSED_SUFFIX)):
            if candidate.is_file():
                return candidate
        return None


def is_measurement_folder(path: Path) -> bool:
    """A folder holding scanner output: named by a timestamp, or holding one of its files."""
    if not path.is_dir():
        return False
    if parse_measurement_time(path.name) is not None:
        return True
    return any((path / name).is_file() or (path / (name + COMPRESSED_SUFFIX)).is_file() for name in MEASUREMENT_MARKERS)


def measurement_folder(path: Path) -> MeasurementFolder:
    """Describe one measurement folder; the vantage point is ``<vp>`` of ``<vp>/data/<timestamp>``, else the
    parent folder's name."""
    path = Path(path)
    parent = path.parent
    vantage_point = parent.parent.name if parent.name == DATA_FOLDER else parent.name
    return MeasurementFolder(path, vantage_point or "unknown", parse_measurement_time(path.name))


def find_measurements(paths: Iterable[Path]) -> list[MeasurementFolder]:
    """Measurement folders in ``paths``: each is a measurement folder, a ``<vp>`` folder (holding ``data/``),
    a ``<vp>/data`` folder, or a root of ``<vp>`` folders. Sorted by vantage point and folder name; hidden
    folders are left out."""
    found: dict[Path, MeasurementFolder] = {}
    for path in paths:
        for folder in _measurement_paths(Path(path)):
            found.setdefault(folder.resolve(), measurement_folder(folder))
    return sorted(found.values(), key=lambda m: (m.vantage_point, m.path.name))


def _measurement_paths(path: Path) -> list[Path]:
    if is_measurement_folder(path):
        return [path]
    if not path.is_dir():
        return []
    if path.name == DATA_FOLDER:
        return _children(path)
    if (path / DATA_FOLDER).is_dir():
        return _children(path / DATA_FOLDER)
    return [
        folder
        for vantage in _children(path)
        if (vantage / DATA_FOLDER).is_dir()
        for folder in _children(vantage / DATA_FOLDER)
    ]


def _children(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))


# A pipeline part (one Parquet file per table) holds the measurements of one vantage point and UTC day: the unit of
# the paper's tables (Table 1 is per vantage point and day), a handful of 1M-connection top-list measurements or a
# day of a per-minute series. The leading '@' keeps part keys apart from run-group keys (folder names of the QIR
# layout never start with it in practice, and group_key leaves it as it is).
SCAN_PART_PREFIX = "@scan"
UNDATED = "undated"


def scan_part_key(folder: MeasurementFolder) -> str:
    """The pipeline part a measurement folder belongs to: ``@scan@<vantage point>@<YYYY-MM-DD | undated>``."""
    day = folder.time.date if folder.time is not None else UNDATED
    return f"{SCAN_PART_PREFIX}@{group_key(folder.vantage_point)}@{day}"


def scan_parts(root: Path) -> dict[str, list[MeasurementFolder]]:
    """The measurement folders below ``root`` by pipeline part, in part-key order."""
    parts: dict[str, list[MeasurementFolder]] = {}
    for folder in find_measurements([root]):
        parts.setdefault(scan_part_key(folder), []).append(folder)
    return dict(sorted(parts.items()))
