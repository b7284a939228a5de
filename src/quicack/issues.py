"""Ingest issues, one home: the row every reader writes for a problem with its input (the ``ingest_issues`` contract)
and how they are counted. An ``error`` means the input was skipped, a ``warning`` that it was used in part."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from quicack.schema import INGEST_ISSUES

ERROR, WARNING = "error", "warning"
IssueRow = dict[str, str | None]


def issue_row(path: str, run_id: str | None, stage: str, severity: str, message: str) -> IssueRow:
    """One ``ingest_issues`` row: where (``path``, ``run_id``), which reader (``stage``), how bad, what."""
    return {"path": path, "run_id": run_id, "stage": stage, "severity": severity, "message": message}


def issues_frame(rows: Iterable[IssueRow]) -> pl.DataFrame:
    """Issue rows as the contract's table (empty, with its columns, when there are none)."""
    rows = list(rows)
    return pl.DataFrame(rows, schema=INGEST_ISSUES.schema) if rows else INGEST_ISSUES.empty()


def count_errors(issues: pl.DataFrame) -> int:
    """How many of the ``ingest_issues`` rows are errors; the rest are warnings."""
    return issues.filter(pl.col("severity") == ERROR).height
