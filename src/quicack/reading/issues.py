"""Ingest issues, one home: the row every reader writes for a problem with its input (the ``ingest_issues`` contract),
how they are counted, and how the summary tells them in few lines: grouped by cause (the message without what varies
from row to row — the file it names, counts, frame numbers, connection IDs, numbers), each cause with its count and
one example, the full list in a file (``results/<dataset>/ingest_issues.csv``) the summary points to. An ``error``
means the input was skipped, a ``warning`` that it was used in part, an ``info`` row says what the input does not
say (a run.json key left out): the input is whole, so strict mode does not fail on it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from quicack.schema import INGEST_ISSUES

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITIES = (ERROR, WARNING, INFO)
IssueRow = dict[str, str | None]


def issue_row(path: str, run_id: str | None, stage: str, severity: str, message: str) -> IssueRow:
    """One ``ingest_issues`` row: where (``path``, ``run_id``), which reader (``stage``), how bad, what."""
    return {"path": path, "run_id": run_id, "stage": stage, "severity": severity, "message": message}


def issues_frame(rows: Iterable[IssueRow]) -> pl.DataFrame:
    """Issue rows as the contract's table (empty, with its columns, when there are none)."""
    rows = list(rows)
    return pl.DataFrame(rows, schema=INGEST_ISSUES.schema) if rows else INGEST_ISSUES.empty()


def relative_paths(frame: pl.DataFrame, raw_root: Path) -> pl.DataFrame:
    """``frame`` with the paths it names, in its ``path`` column and in its messages (an issue's message starts with
    the file it is about), relative to the raw folder: where the data sits changes no output."""
    if frame.is_empty():
        return frame
    path = pl.col("path")
    message = pl.col("message") if "message" in frame.columns else None
    for prefix in sorted({str(raw_root.resolve()) + "/", str(raw_root) + "/"}, key=len, reverse=True):
        path = path.str.strip_prefix(prefix)
        if message is not None:
            message = message.str.replace_all(prefix, "", literal=True)
    return frame.with_columns(path, *([message] if message is not None else []))


def count_errors(issues: pl.DataFrame) -> int:
    """How many of the ``ingest_issues`` rows are errors."""
    return issues.filter(pl.col("severity") == ERROR).height


def count_by_severity(issues: pl.DataFrame) -> dict[str, int]:
    """How many ``ingest_issues`` rows of each severity (``SEVERITIES``, each present, 0 where none)."""
    return {severity: issues.filter(pl.col("severity") == severity).height for severity in SEVERITIES}


# Error rows (input skipped) before warnings (input used in part) before information.
SEVERITY_ORDER = {severity: order for order, severity in enumerate(SEVERITIES)}
CSV_COLUMNS = ("severity", "stage", "cause", "path", "run_id", "message")


def issue_cause() -> pl.Expr:
    """The cause an issue's message states, with what varies between rows of that cause replaced: the path the
    message starts with (the row's own, whatever characters it holds, else a word with a '/'), '[N times]',
    '(capture frame …)', hexadecimal IDs (→ <id>) and numbers (→ N)."""
    return (
        pl.col("message")
        .str.strip_prefix(pl.col("path").fill_null("") + ": ")
        .str.replace(r"^\S+/\S+: ", "")
        .str.replace_all(r"\s*\[\d+ times?\]", "")
        .str.replace_all(r"\s*\((?:capture )?(?:frame|record|byte|offset)s?\b[^)]*\)", "")
        .str.replace_all(r"\b[0-9a-fA-F]{8,}\b", "<id>")
        .str.replace_all(r"\b\d+(?:\.\d+)?\b", "N")
        .str.replace_all(r"\s+", " ")
        .str.strip_chars(" ;,")
        .alias("cause")
    )


def with_causes(issues: pl.DataFrame) -> pl.DataFrame:
    """``issues`` with a ``cause`` column, sorted by severity (errors first), stage, path."""
    return issues.with_columns(issue_cause()).sort(
        pl.col("severity").replace_strict(SEVERITY_ORDER, default=len(SEVERITY_ORDER), return_dtype=pl.Int64),
        "stage", "path",
        maintain_order=True,
    )  # fmt: skip


def grouped_issues(issues: pl.DataFrame) -> pl.DataFrame:
    """One row per (severity, stage, cause): ``rows``, ``files`` (distinct paths) and the first row's path and message
    as the example; errors first, then the most frequent."""
    return (
        with_causes(issues)
        .group_by("severity", "stage", "cause", maintain_order=True)
        .agg(
            pl.len().alias("rows"),
            pl.col("path").n_unique().alias("files"),
            pl.col("path").first().alias("example_path"),
            pl.col("message").first().alias("example_message"),
        )  # fmt: skip
        .sort(
            pl.col("severity").replace_strict(SEVERITY_ORDER, default=len(SEVERITY_ORDER), return_dtype=pl.Int64),
            pl.col("rows"),
            "stage",
            "cause",
            descending=[False, True, False, False],
        )  # fmt: skip
    )


def issue_lines(issues: pl.DataFrame, full_list: str) -> list[str]:
    """The summary's lines about the issues: one per cause with its count and one example; where the full list is."""
    if issues.is_empty():
        return []
    groups = grouped_issues(issues)
    lines = [f"    {groups.height} cause(s); every row: {full_list}"]
    for g in groups.iter_rows(named=True):
        files = f", {g['files']} files" if g["files"] > 1 else ""
        lines.append(f"    [{g['severity']}] {g['stage']}, {g['rows']} rows{files}: {g['cause']}")
        path, message = g["example_path"] or "", g["example_message"]
        lines.append(f"        e.g. {message if path in message else f'{path}: {message}'}")
    return lines


def write_issue_list(issues: pl.DataFrame, path: Path) -> None:
    """Every issue row with its cause, errors first: the file the summary points to."""
    with_causes(issues).select(*CSV_COLUMNS).write_csv(path)
