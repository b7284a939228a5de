"""``quicack scan PATH... --out DIR``: measurement folders (or roots of them) to Parquet tables; and the pipeline's
``quicack scan-part``: one part (a vantage point's measurements of one UTC day) into the pipeline's Parquet tree."""

from __future__ import annotations

import argparse
from pathlib import Path

from quicack.schema import SCAN, tables_written_by

CAPTURE_TABLES = ("datagrams", "packets", "frames")
# The scan stage's tables (the schema says which).
SCAN_TABLES = tables_written_by(SCAN)


def add_scan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Writes DIR/scan_connections.parquet, DIR/scan_truth.parquet (emulated scans) and DIR/ingest_issues.parquet, "
        "and the capture tables (datagrams, packets, frames; run_id = scan_id) unless --no-capture-tables."
    )
    parser.add_argument("paths", nargs="+", type=Path, help="measurement folders, <vantage_point> folders or roots")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--prefix-to-asn", type=Path, help="pyasn ipasn file or a prefix,asn CSV (origin AS and CDN)")
    parser.add_argument("--no-capture-tables", action="store_true", help="write only the scan tables and ingest_issues")
    parser.set_defaults(handler=scan_command)


def add_scan_part_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root", type=Path, required=True, help="the scan's root (<root>/<vantage_point>/data/<timestamp>/)"
    )
    parser.add_argument("--part", required=True, help="part key (quicack.layout.scan_folders.scan_part_key)")
    parser.add_argument("--parquet", type=Path, required=True, help="the pipeline's Parquet folder")
    parser.add_argument("--prefix-to-asn", type=Path, help="pyasn ipasn file or a prefix,asn CSV (origin AS and CDN)")
    parser.set_defaults(handler=scan_part_command)


def _write_measurements(
    writer, folders, prefix_file: Path | None, capture_tables: bool, issues_run_id: str = "", root: Path | None = None
) -> None:
    """Read each measurement folder into ``writer``'s scan tables (and capture tables), printing one line each. With
    ``root`` (the pipeline's scan folder) the issues name their files relative to it, as ingest's do to the raw
    folder: where the scan sits changes no output."""
    from quicack.reading.issues import relative_paths

    from .asn import read_prefix_table
    from .measurement import read_measurement
    from .qscanner_files import Issues

    issues = Issues(issues_run_id)
    prefixes = read_prefix_table(prefix_file, issues) if prefix_file else None
    writer.write("ingest_issues", issues.frame())

    def write_batch(batch) -> None:
        for name in CAPTURE_TABLES:
            writer.write(name, getattr(batch, name))

    # Capture tables stream out batch by batch, so a 1M-connection capture never sits in memory as rows.
    for folder in folders:
        tables = read_measurement(folder, prefixes, write_batch if capture_tables else None)
        for name in SCAN_TABLES:
            table = getattr(tables, name)
            writer.write(name, relative_paths(table, root) if name == "ingest_issues" and root is not None else table)
        counts = tables.scan_connections["first_datagram_class"].value_counts(sort=True).rows()
        summary = ", ".join(f"{kind or 'unclassified'} {count}" for kind, count in counts)
        print(
            f"{folder.scan_id}: {tables.scan_connections.height} connection(s) ({summary}), "
            f"{tables.ingest_issues.height} issue(s)"
        )


def scan_command(args: argparse.Namespace) -> int:
    from quicack.layout import find_measurements
    from quicack.storage.table_writer import TableWriter

    folders = find_measurements(args.paths)
    names = [*SCAN_TABLES, *([] if args.no_capture_tables else CAPTURE_TABLES)]
    with TableWriter.in_folder(args.out, names) as writer:
        _write_measurements(writer, folders, args.prefix_to_asn, capture_tables=not args.no_capture_tables)
    if not folders:
        print("no measurement folder found (expected <root>/<vantage_point>/data/<timestamp>/)")
        return 1
    return 0


def scan_part_command(args: argparse.Namespace) -> int:
    """The pipeline's scan stage: the scan tables of one part. The capture tables stay out of the database: the
    scan figures need only scan_connections, and datagrams of scan connections have no runs row (use
    ``quicack scan --out`` for them)."""
    from quicack.layout.scan_folders import scan_parts
    from quicack.storage.table_writer import TableWriter

    folders = scan_parts(args.root).get(args.part, [])
    with TableWriter.part(args.parquet, SCAN_TABLES, args.part) as writer:
        _write_measurements(
            writer, folders, args.prefix_to_asn, capture_tables=False, issues_run_id=args.part, root=args.root
        )
        if not folders:
            from .qscanner_files import Issues

            issues = Issues(args.part)
            issues.add(
                ".",
                "error",
                f"no measurement folder of part {args.part} in the scan folder (removed while the pipeline ran?)",
            )
            writer.write("ingest_issues", issues.frame())
    return 0
