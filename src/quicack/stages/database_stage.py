"""The database stage (`quicack build-db`): the current Parquet parts -> a snapshot, the DuckDB file of commented
views over it (quicack.storage.database), the dataset's description, path checks and RFC 9002 agreement summary
stored beside them, and the ingest summary (results/<dataset>/summary.txt); published by a rename, so that readers
see the old database or the new."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from quicack.reading.issues import ERROR, INFO, WARNING, count_by_severity, issue_lines, write_issue_list
from quicack.schema import TABLES
from quicack.storage import database, parquet_store


@dataclass(frozen=True)
class Summary:
    text: str
    errors: int
    warnings: int
    # Rows that say what the input does not (a run.json key left out): strict mode does not fail on them.
    info: int = 0


def summarize(files: dict[str, list[Path]], counts: dict[str, int], issue_list: Path | None = None) -> Summary:
    """What was read and what was skipped, for the terminal and results/<dataset>/summary.txt: over exactly
    the Parquet files the database was built on. The issues are grouped by cause
    (``quicack.reading.issues.issue_lines``);
    with ``issue_list`` every row is written there (CSV) and the summary points to it."""
    issues = parquet_store.read_files("ingest_issues", files.get("ingest_issues", []))
    runs = parquet_store.read_files("runs", files.get("runs", []))
    lines = ["quicack ingest summary", ""]
    lines += [f"  {name:<18} {rows:>10,} rows" for name, rows in counts.items()]
    ok = runs.filter(pl.col("status") == "ok").height
    failed = runs.filter(pl.col("status") == "failed").height
    lines += ["", f"  runs: {runs.height} ({ok} ok, {failed} failed, {runs.height - ok - failed} without status)"]
    severities = count_by_severity(issues)
    lines += [f"  ingest issues: {severities[ERROR]} errors (input skipped), {severities[WARNING]} warnings "
              f"(input used in part), {severities[INFO]} info (what the input does not say)"]  # fmt: skip
    where = (
        f"{issue_list.name} beside this summary (or SELECT * FROM ingest_issues)"
        if issue_list
        else "SELECT * FROM ingest_issues"
    )
    lines += issue_lines(issues, where)
    if issue_list is not None:
        write_issue_list(issues, issue_list)
    return Summary("\n".join(lines) + "\n", severities[ERROR], severities[WARNING], severities[INFO])


def write_rfc9002_agreement(db: Path, files: dict[str, list[Path]]) -> int:
    """Store the table rfc9002_agreement in ``db``: the dataset's estimator_agreement over every run group,
    per implementation and vantage, with the recorded causes (quicack.metrics.agreement); returns its rows."""
    from quicack.metrics.agreement import rfc9002_agreement
    from quicack.schema import RFC9002_AGREEMENT

    table = rfc9002_agreement(
        parquet_store.read_files("estimator_agreement", files.get("estimator_agreement", [])),
        parquet_store.read_files("endpoints", files.get("endpoints", [])),
    )
    with database.connect(db, read_only=False) as con:
        database.write_commented_table(con, RFC9002_AGREEMENT, table)
    return table.height


def add_build_db_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parquet", type=Path, required=True)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument(
        "--receipt",
        type=Path,
        help="written after the database is published: its sha256 (the workflow's declared "
        "output, so that Snakemake never removes the database itself)",
    )
    parser.add_argument("--summary", type=Path, required=True)
    parser.add_argument(
        "--issues", type=Path, help="write every ingest issue here (CSV, with its cause); the summary groups them"
    )
    parser.add_argument("--strict", action="store_true", help="fail when the input had any issue")
    parser.add_argument(
        "--parts",
        nargs="*",
        help="the Parquet parts of the dataset (run-group keys and _dataset); parts of others "
        "are deleted. Default: every part found",
    )
    parser.add_argument(
        "--description",
        type=Path,
        help="the dataset's description (dataset.yaml), stored as table dataset_description; without: origin unknown",
    )
    parser.add_argument(
        "--scan-description",
        type=Path,
        help="the description of the scan measurements (their dataset.yaml), when the database has any",
    )
    parser.add_argument(
        "--path-checks",
        type=Path,
        help="what quicack.testbed.path_check measured of the dataset's paths (path_check.csv), stored as table "
        "path_checks",
    )
    parser.set_defaults(handler=build_db)


def build_db(args: argparse.Namespace) -> int:
    from quicack.provenance import DescriptionError, write_description
    from quicack.storage import publish

    repo_root = Path.cwd()
    files = publish.current_parts(args.parquet, list(TABLES), args.parts)
    snapshot = publish.snapshot(args.parquet, files)
    # Built aside and renamed over the published database at the end: a reader sees the old dataset or the
    # new one, never a mix, and a failed build leaves no half-made database behind.
    building = args.db.with_name(args.db.name + ".building")
    counts = database.build_database(building, snapshot, repo_root)
    counts["rfc9002_agreement"] = write_rfc9002_agreement(building, snapshot)
    try:
        for given in (args.description, args.scan_description):
            if given is not None and not given.is_file():
                raise DescriptionError(f"{given}: no such file")
        described = write_description(
            building, args.description, args.scan_description, with_scan=bool(snapshot.get("scan_connections"))
        )
    except DescriptionError as error:
        building.unlink(missing_ok=True)
        print(f"dataset description: {error}", file=sys.stderr)
        return 2
    for description in described:
        print(
            f"dataset description ({description.part}): {description.kind} ({description.description_file or 'none'})"
        )
    if args.path_checks is not None:
        from quicack.storage.path_checks import PathChecksError, write_path_checks

        try:
            print(f"path checks: {write_path_checks(building, args.path_checks)} profile(s) ({args.path_checks})")
        except PathChecksError as error:
            building.unlink(missing_ok=True)
            print(f"path checks: {error}", file=sys.stderr)
            return 2
    summary = summarize(snapshot, counts, args.issues)
    if args.strict and (summary.errors or summary.warnings):
        print(summary.text)
        print(f"strict mode: {summary.errors + summary.warnings} ingest issue(s); failing", file=sys.stderr)
        building.unlink(missing_ok=True)
        return 2
    publish.write_atomically(args.summary, summary.text)
    # Last: nothing can fail after the new database is in place (a failure would leave it without its receipt).
    publish.publish(building, args.db, args.receipt)
    publish.prune_snapshots(args.parquet)
    print(summary.text)
    return 0
