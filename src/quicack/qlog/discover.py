"""Find the qlog files of a run folder (QUIC Interop Runner layout) and report runs without any."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from quicack.schema import INGEST_ISSUES

QLOG_SUFFIXES = (".qlog", ".sqlog", ".json", ".ndjson", ".jsonl")
COMPRESSED = (".gz", ".zst")


QLOG_ONLY_SUFFIXES = (".qlog", ".sqlog")
QLOG_FOLDERS = ("qlog", "qlogs")


def is_qlog_name(path: Path) -> bool:
    """A qlog by its name: *.qlog / *.sqlog anywhere; generic JSON suffixes only inside a
    ``qlog/`` folder, because run folders also hold other JSON (run.json, server info,
    impairment logs)."""
    name = path.name.lower()
    for c in COMPRESSED:
        if name.endswith(c):
            name = name[: -len(c)]
    if name.endswith(QLOG_ONLY_SUFFIXES):
        return True
    return name.endswith(QLOG_SUFFIXES) and any(part.lower() in QLOG_FOLDERS for part in path.parent.parts)


def discover_qlogs(run_dir: Path, run_id: str | None = None) -> tuple[list[tuple[Path, str | None]], pl.DataFrame]:
    """``[(path, vantage)]`` for every qlog under ``run_dir`` (sorted, so outputs are deterministic), and
    ``ingest_issues`` rows when the folder is missing or holds no qlog.

    The vantage comes from the QIR layout (``.../client/qlog/`` or ``.../server/qlog/``), else None.
    """
    run_dir = Path(run_dir)
    issues = []
    found: list[tuple[Path, str | None]] = []
    if not run_dir.is_dir():
        issues.append({"path": str(run_dir), "run_id": run_id, "stage": "qlog", "severity": "error",
                       "message": f"{run_dir}: run folder does not exist"})
    else:
        for p in sorted(run_dir.rglob("*")):
            if p.is_file() and is_qlog_name(p):
                parts = [x.lower() for x in p.relative_to(run_dir).parts[:-1]]
                vantage = next((x for x in reversed(parts) if x in ("client", "server")), None)
                found.append((p, vantage))
        if not found:
            issues.append({"path": str(run_dir), "run_id": run_id, "stage": "qlog", "severity": "warning",
                           "message": f"{run_dir}: no qlog files (*.qlog, *.sqlog, optionally .gz/.zst) in this "
                                      "run; was qlog output enabled for both endpoints?"})
    df = pl.DataFrame(issues, schema=INGEST_ISSUES.schema) if issues else INGEST_ISSUES.empty()
    return found, df
