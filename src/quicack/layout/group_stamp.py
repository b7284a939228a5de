"""A run group's raw files as one workflow input: a stamp file holding the digest of their paths, sizes and
modification times, rewritten only when that digest changes.

The ingest job of a group used to take every raw file of the group as an input. Snakemake's cost is per input, at
every start and in every scheduling pass: building the DAG checks each file (at 100× the embedded data, 533,100
files: 103 CPU-s and 1.6 GB for `snakemake -n`), and each pass that finds jobs ready asks the size of every input
of every waiting job again (asynchronously, one coroutine per file), so a pass costs as much as the dataset has
files and there are passes as long as ingest runs: the scheduling grows with the square of the data. One stamp
per group instead: the files are listed and stat-ed once per start, here, and a changed, added or removed file
changes the stamp's content and so its modification time, which re-runs the group as a changed input did.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# The testbed writes group.json (a testbed rule's output): the analysis must never ask to re-run the testbed, and
# reading it is not what makes a group's data.
NOT_GROUP_DATA = frozenset({"group.json"})


def group_files(group_root: Path) -> list[tuple[str, int, int]]:
    """(path relative to the group, size, modification time in ns) of every file below the group, sorted by path:
    files and links to files, not group.json, not below links to folders (as `quicack.layout.group_tree` does: they
    are never read); the group's own folder is read even if it is a link."""
    found: list[tuple[str, int, int]] = []
    pending = [""]
    while pending:
        relative = pending.pop()
        with os.scandir(group_root / relative) as entries:
            for entry in entries:
                path = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_dir(follow_symlinks=False):
                    pending.append(path)
                elif entry.name not in NOT_GROUP_DATA and entry.is_file():
                    status = entry.stat()
                    found.append((path, status.st_size, status.st_mtime_ns))
    return sorted(found)


def group_digest(group_root: Path) -> tuple[str, int]:
    """(SHA-256 of every file's path, size and modification time, number of files) of a run group."""
    digest = hashlib.sha256()
    files = group_files(group_root)
    for path, size, mtime_ns in files:
        digest.update(f"{path}\0{size}\0{mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest(), len(files)


def write_group_stamp(group_root: Path, stamp: Path) -> Path:
    """Write `stamp` with the group's digest unless it holds it already (so that its modification time says when
    the group's files last changed as far as the workflow saw), and return it."""
    digest, count = group_digest(group_root)
    content = f"{digest} {count} files\n"
    try:
        if stamp.read_text(encoding="utf-8") == content:
            return stamp
    except FileNotFoundError:
        pass
    stamp.parent.mkdir(parents=True, exist_ok=True)
    partial = stamp.with_name(f".{stamp.name}.{os.getpid()}")
    partial.write_text(content, encoding="utf-8")
    partial.replace(stamp)
    return stamp
