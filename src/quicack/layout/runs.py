"""The QUIC Interop Runner layout: run groups, run folders, and the files a run keeps.

::

    <raw>/<server>_<client>/<testcase>/<repetition>/
        run.json                              the testbed's description of the run (optional)
        client/{keys.log, qlog/*.qlog, ...}   the client's keylog and qlogs
        server/{keys.log, qlog/*.qlog, ...}
        sim/{trace_node_left.pcap[.gz], trace_node_right.pcap[.gz]}

Folders written by other tools follow the same shape with fewer files (the imc24 artifact's QIR captures have
only ``client/keys.log`` and ``sim/``); anything found is used, anything missing is reported by the readers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from quicack.layout.vantage import CLIENT, ENDPOINTS, SERVER

RUN_JSON = "run.json"
SIM_FOLDER = "sim"
QLOG_FOLDER = "qlog"
KEYLOG_NAME = "keys.log"
# Folders inside a run; a run folder is one that holds run.json or one of these.
RUN_PARTS = (CLIENT, SERVER, SIM_FOLDER)
RUN_MARKERS = (RUN_JSON, *RUN_PARTS)

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap")
COMPRESSED_SUFFIXES = (".gz", ".zst")
KEYLOG_NAMES = (KEYLOG_NAME, "keylog.txt", "sslkeylogfile.txt")
QLOG_SUFFIXES = (".qlog", ".sqlog", ".json", ".ndjson", ".jsonl")
# Only these say "qlog" by themselves; generic JSON names count only inside a qlog folder.
QLOG_ONLY_SUFFIXES = (".qlog", ".sqlog")
QLOG_FOLDERS = (QLOG_FOLDER, "qlogs")


@dataclass(frozen=True)
class RunFolder:
    run_id: str  # the run's folder relative to the raw folder, '/'-separated
    path: Path


def run_groups(raw_root: Path) -> list[str]:
    """Run groups of a dataset: the folders directly below its raw folder, sorted; hidden ones left out."""
    if not raw_root.is_dir():
        return []
    return sorted(p.name for p in raw_root.iterdir() if p.is_dir() and not p.name.startswith("."))


# Characters a run group's name keeps in file names and Snakemake wildcards; everything else is %-encoded.
_KEY_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-+=,@")


def group_key(group: str) -> str:
    """A run group's name as a part of file names and Snakemake wildcards: any folder name the file system
    allows (braces, glob characters, a newline, a leading '-' or '.', bytes that are not UTF-8) is
    %-encoded, so it cannot be read as a wildcard, a glob or an option; so is a leading '@', which starts the
    scan's part keys. Ordinary names stay as they are."""
    encoded = []
    for position, char in enumerate(group):
        # A leading '@' is kept for the scan's part keys (quicack.layout.scan_folders.scan_part_key).
        if char in _KEY_SAFE and not (position == 0 and char in "-.@"):
            encoded.append(char)
        else:
            encoded.append("".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogateescape")))
    return "".join(encoded)


def group_from_key(key: str) -> str:
    """The run group's folder name back from `group_key`."""
    return unquote(key, errors="surrogateescape")


def discover_runs(group_root: Path, raw_root: Path) -> Iterator[RunFolder]:
    """Every run folder below a group: a folder holding run.json or client/server/sim folders."""
    for path in sorted(p for p in [group_root, *group_root.rglob("*")] if p.is_dir()):
        if path.name in (*RUN_PARTS, QLOG_FOLDER):
            continue
        if any((path / marker).exists() for marker in RUN_MARKERS):
            yield RunFolder(run_id=path.relative_to(raw_root).as_posix(), path=path)


def _uncompressed_name(path: Path) -> str:
    name = path.name.lower()
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def is_capture_name(path: Path) -> bool:
    return _uncompressed_name(path).endswith(CAPTURE_SUFFIXES)


def is_qlog_name(path: Path) -> bool:
    """A qlog by its name: *.qlog / *.sqlog anywhere (optionally .gz/.zst); generic JSON suffixes only inside a
    ``qlog/`` folder, because run folders also hold other JSON (run.json, server info, impairment logs)."""
    name = _uncompressed_name(path)
    if name.endswith(QLOG_ONLY_SUFFIXES):
        return True
    return name.endswith(QLOG_SUFFIXES) and any(part.lower() in QLOG_FOLDERS for part in path.parent.parts)


def capture_files(run: RunFolder) -> list[Path]:
    """Captures of a run, sorted (the decoder names their capture point: sim_left / sim_right / file stem)."""
    return [p for p in sorted(run.path.rglob("*")) if p.is_file() and is_capture_name(p)]


def keylog_files(run: RunFolder) -> list[Path]:
    return sorted(p for p in run.path.rglob("*") if p.is_file() and p.name.lower() in KEYLOG_NAMES)


def qlog_files(run_dir: Path) -> list[tuple[Path, str | None]]:
    """``[(path, endpoint)]`` for every qlog below a run folder, sorted; the endpoint is the nearest
    ``client``/``server`` folder above the file (QIR layout), else None."""
    found = []
    for path in sorted(run_dir.rglob("*")):
        if path.is_file() and is_qlog_name(path):
            folders = [part.lower() for part in path.relative_to(run_dir).parts[:-1]]
            found.append((path, next((f for f in reversed(folders) if f in ENDPOINTS), None)))
    return found


# Where a recorder puts a run's files (the testbed writes exactly this shape).


def qlog_folder(run_dir: Path, endpoint: str) -> Path:
    return run_dir / endpoint / QLOG_FOLDER


def keylog_path(run_dir: Path, endpoint: str) -> Path:
    return run_dir / endpoint / KEYLOG_NAME


def sim_folder(run_dir: Path) -> Path:
    return run_dir / SIM_FOLDER
