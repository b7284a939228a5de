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

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
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


def run_groups(raw_root: Path, follow_external_symlinks: bool = False) -> list[str]:
    """Run groups of a dataset: the folders directly below its raw folder, sorted (`raw_entries` says which and
    what is left out, and why)."""
    return raw_entries(raw_root, follow_external_symlinks).groups


@dataclass(frozen=True)
class LeftOut:
    """Something in the raw layout that is not read, and why (an ``ingest_issues`` row: quicack.stages.ingest)."""

    path: Path
    severity: str  # "error": input not read; "warning": read elsewhere or nothing to read
    reason: str


@dataclass(frozen=True)
class RawEntries:
    groups: list[str]
    left_out: list[LeftOut] = field(default_factory=list)


def raw_entries(raw_root: Path, follow_external_symlinks: bool = False) -> RawEntries:
    """The run groups below ``raw_root`` and the folders left out.

    A hidden folder (name starting with '.') is a run group like any other when it holds a run folder, and left
    out with a warning when it holds none (a .git folder). A symbolic link to a folder is not a run group when it
    leads to a folder inside the raw folder (its runs would count twice) and, unless ``follow_external_symlinks``,
    when it leads outside (the data folder is what a user hands over; a link out of it must be asked for)."""
    if not raw_root.is_dir():
        return RawEntries([])
    groups, left_out = [], []
    root = raw_root.resolve()
    for path in sorted(raw_root.iterdir()):
        if path.is_symlink() and not path.exists():  # leads nowhere, or into a loop of links
            left_out.append(LeftOut(path, "warning", "symbolic link to nothing: ignored"))
            continue
        if not path.is_dir():
            continue
        if path.is_symlink():
            if _inside(path.resolve(), root):
                left_out.append(LeftOut(path, "warning", "symbolic link to a folder inside the raw folder: not a run "
                                                         "group of its own (its runs are read where they are)"))
                continue
            if not follow_external_symlinks:
                left_out.append(LeftOut(path, "error", EXTERNAL_REFUSED))
                continue
        if path.name.startswith(".") and next(iter(group_tree(path, raw_root).runs), None) is None:
            left_out.append(LeftOut(path, "warning", "hidden folder without a run folder (<testcase>/<repetition>/ "
                                                     "with run.json or client/server/sim folders): ignored"))
            continue
        groups.append(path.name)
    return RawEntries(groups, left_out)


EXTERNAL_REFUSED = ("symbolic link leading outside the raw folder: not read (config follow_external_symlinks: true "
                    "reads such links)")


def _inside(resolved: Path, root: Path) -> bool:
    return resolved == root or root in resolved.parents


def leaves_raw(path: Path, raw_root: Path) -> bool:
    """Whether ``path`` (a file or folder below ``raw_root``) is, through a symbolic link, somewhere outside it."""
    return not _inside(path.resolve(), raw_root.resolve())


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


@dataclass(frozen=True)
class GroupTree:
    runs: list[RunFolder]
    folder_links: list[Path]  # symbolic links to folders found below the group: not followed
    dangling_links: list[Path]  # symbolic links to nothing (no file, no folder)


def group_tree(group_root: Path, raw_root: Path) -> GroupTree:
    """Every run folder below a group (a folder holding run.json or client/server/sim folders), sorted, and the
    symbolic links to folders met on the way. Links are not followed: ``latest -> 3`` would count run 3 twice and
    ``client/loop -> ..`` would nest the run in itself; the group's own folder is read even if it is a link."""
    folders: list[Path] = []
    links: list[Path] = []
    dangling: list[Path] = []
    for top, dirs, files in os.walk(group_root):
        folders.append(Path(top))
        for name in list(dirs):
            if (Path(top) / name).is_symlink():
                links.append(Path(top) / name)
                dirs.remove(name)
        dangling.extend(Path(top) / name for name in files if not (Path(top) / name).exists())
    runs = [
        RunFolder(run_id=path.relative_to(raw_root).as_posix(), path=path)
        for path in sorted(folders)
        if path.name not in (*RUN_PARTS, QLOG_FOLDER) and any((path / marker).exists() for marker in RUN_MARKERS)
    ]
    return GroupTree(runs, sorted(links), sorted(dangling))


def discover_runs(group_root: Path, raw_root: Path) -> Iterator[RunFolder]:
    """Every run folder below a group (`group_tree`)."""
    yield from group_tree(group_root, raw_root).runs


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
