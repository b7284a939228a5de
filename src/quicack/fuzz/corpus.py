"""Seed files for the fuzzer: the real captures and qlogs of the test data, with the key log of each capture."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from quicack.layout import is_qlog_name
from quicack.layout.runs import is_capture_name

READERS = ("pcap", "qlog")


@dataclass(frozen=True)
class Seed:
    path: Path
    keylog: Path | None  # for captures: decryption reaches the QUIC frame parser

    @property
    def suffix(self) -> str:
        """The file's suffixes (.pcap.gz, .sqlog): the mutated copy keeps them, so the same reader takes it."""
        return "".join(self.path.suffixes[-2:]) if len(self.path.suffixes) > 1 else self.path.suffix


def find_seeds(root: Path, reader: str) -> list[Seed]:
    """Seeds of ``reader`` under ``root``, sorted (the fuzz run depends only on the seed and this list)."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if reader == "qlog":
        return [Seed(p, None) for p in files if is_qlog_name(p) or p.name.endswith((".qlog", ".sqlog"))]
    return [Seed(p, _keylog_of(p)) for p in files if is_capture_name(p)]


def _keylog_of(capture: Path) -> Path | None:
    """<name>.keys.log beside the capture (tests/data/pcap), else the run's client/keys.log (run folders)."""
    stem = capture.name.split(".")[0]
    beside = capture.with_name(f"{stem}.keys.log")
    if beside.is_file():
        return beside
    for folder in (capture.parent, *capture.parents[:3]):
        for candidate in (folder / "client" / "keys.log", folder / "keys.log"):
            if candidate.is_file():
                return candidate
    return None
