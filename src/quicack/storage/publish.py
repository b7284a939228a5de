"""Publishing a dataset: the Parquet set and the database a reader sees change in one step.

The ingest and derive jobs replace ``parquet/<table>/<part>.parquet`` files one at a time while a rebuild runs;
a database whose views read that folder would show a mix of old and new parts, and the parts of run groups that
no longer exist. So the database never reads the working folder: ``build-db`` links the parts of the current run
groups into a snapshot (``snapshots/<id>/<table>/<part>.parquet``, hard links: no copy of the data), builds the
database beside the published one with views naming the snapshot's files one by one, and renames it over the
published file. A reader holding the old database keeps reading the old snapshot, which stays until the next
publication replaces it; parts of removed or renamed run groups are deleted from the working folder.

The workflow never removes the published database: Snakemake deletes a job's declared outputs before it runs, so
the database rule declares a receipt beside it (``quicack.duckdb.published``: the published file's sha256), written
after the rename. Until the new database is renamed into place the old one answers every query; a build killed or
failed before that leaves it there (and no receipt, so the next run builds again).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

SNAPSHOTS = "snapshots"
# The published snapshot and the one before it (a reader may still hold a database that names it).
SNAPSHOTS_KEPT = 2


def current_parts(parquet_root: Path, tables: list[str], parts: list[str] | None) -> dict[str, list[Path]]:
    """Each table's Parquet files of `parts` (all files found when None), sorted; files of other parts are
    deleted, so that a removed run group leaves nothing behind and a renamed one is not counted twice."""
    files: dict[str, list[Path]] = {}
    for table in tables:
        folder = parquet_root / table
        present = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
        if parts is None:
            files[table] = present
            continue
        wanted = set(parts)
        for stale in (p for p in present if p.stem not in wanted):
            stale.unlink()
        files[table] = [p for p in present if p.stem in wanted]
    return files


def snapshot(parquet_root: Path, files: dict[str, list[Path]]) -> dict[str, list[Path]]:
    """Hard links of `files` in a new snapshot folder beside the Parquet folder, named by their content's
    identity (path, size, modification time); the same files give the same snapshot."""
    identity = hashlib.sha256()
    for table, paths in sorted(files.items()):
        for path in paths:
            stat = path.stat()
            identity.update(f"{table}/{path.name}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ino}\n".encode())
    root = parquet_root.parent / SNAPSHOTS / identity.hexdigest()[:16]
    linked: dict[str, list[Path]] = {}
    for table, paths in files.items():
        (root / table).mkdir(parents=True, exist_ok=True)
        linked[table] = []
        for path in paths:
            target = root / table / path.name
            if not target.exists():
                try:
                    os.link(path, target)
                except OSError:  # another file system, or no hard links: a copy is slower but as good
                    shutil.copy2(path, target)
            linked[table].append(target)
    os.utime(root)  # newest first when pruning, also when an identical snapshot is published again
    return linked


def prune_snapshots(parquet_root: Path, keep: int = SNAPSHOTS_KEPT) -> None:
    folder = parquet_root.parent / SNAPSHOTS
    if not folder.is_dir():
        return
    snapshots = sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in snapshots[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def publish(built: Path, published: Path, receipt: Path | None = None) -> str:
    """Make the database built aside the published one, in one rename (atomic on one file system), then write
    ``receipt`` (if given) naming what was published: the file's sha256, which is what the database's readers
    (the notebooks) depend on. Returns the sha256."""
    digest = hashlib.file_digest(built.open("rb"), "sha256").hexdigest()
    os.replace(built, published)
    if receipt is not None:
        write_atomically(receipt, f"{digest}  {published.name}\n")
    return digest


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds its old content or ``text``, never a part of it (written aside, renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
