"""The qlog files of a run folder, and an ``ingest_issues`` row for a run without any.

Which files are qlogs and which endpoint wrote them is a rule of the raw layout (``quicack.layout``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from quicack.layout import qlog_files
from quicack.reading.issues import ERROR, WARNING, issue_row, issues_frame


def discover_qlogs(run_dir: Path, run_id: str | None = None) -> tuple[list[tuple[Path, str | None]], pl.DataFrame]:
    """``[(path, vantage)]`` for every qlog under ``run_dir`` (sorted, so outputs are deterministic), and
    ``ingest_issues`` rows when the folder is missing or holds no qlog.

    The vantage comes from the QIR layout (``.../client/qlog/`` or ``.../server/qlog/``), else None.
    """
    run_dir = Path(run_dir)
    issues = []
    found: list[tuple[Path, str | None]] = []
    if not run_dir.is_dir():
        issues.append(issue_row(str(run_dir), run_id, "qlog", ERROR, f"{run_dir}: run folder does not exist"))
    else:
        found = qlog_files(run_dir)
        if not found:
            issues.append(issue_row(str(run_dir), run_id, "qlog", WARNING,
                                    f"{run_dir}: no qlog files (*.qlog, *.sqlog, optionally .gz/.zst) in this "
                                    "run; was qlog output enabled for both endpoints?"))
    return found, issues_frame(issues)
