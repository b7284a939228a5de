"""``quicack scan PATH... --out DIR``: measurement folders (or roots of them) to Parquet tables."""

from __future__ import annotations

import argparse
from pathlib import Path

CAPTURE_TABLES = ("datagrams", "packets", "frames")


def add_subparser(commands) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "scan",
        help="scanner output (QScanner, the imc24 authors' <root>/<vantage_point>/data/<timestamp>/ layout) to Parquet",
        description="Writes DIR/scan_connections.parquet and DIR/ingest_issues.parquet, and the capture tables "
        "(datagrams, packets, frames; run_id = scan_id) unless --no-capture-tables.",
    )
    parser.add_argument("paths", nargs="+", type=Path, help="measurement folders, <vantage_point> folders or roots")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--prefix-to-asn", type=Path, help="pyasn ipasn file or a prefix,asn CSV (origin AS and CDN)")
    parser.add_argument("--no-capture-tables", action="store_true", help="write only scan_connections and ingest_issues")
    parser.set_defaults(handler=scan_command)
    return parser


def scan_command(args: argparse.Namespace) -> int:
    from quicack.layout import find_measurements
    from quicack.store import TableWriter

    from .asn import read_prefix_table
    from .files import Issues
    from .measurement import read_measurement

    folders = find_measurements(args.paths)
    issues = Issues("")
    prefixes = read_prefix_table(args.prefix_to_asn, issues) if args.prefix_to_asn else None
    names = ["scan_connections", "ingest_issues", *([] if args.no_capture_tables else CAPTURE_TABLES)]
    # Capture tables stream out batch by batch, so a 1M-connection capture never sits in memory as rows.
    with TableWriter.in_folder(args.out, names) as writer:

        def write_batch(batch) -> None:
            for name in CAPTURE_TABLES:
                writer.write(name, getattr(batch, name))

        writer.write("ingest_issues", issues.frame())
        for folder in folders:
            tables = read_measurement(folder, prefixes, None if args.no_capture_tables else write_batch)
            writer.write("scan_connections", tables.scan_connections)
            writer.write("ingest_issues", tables.ingest_issues)
            counts = tables.scan_connections["first_datagram_class"].value_counts(sort=True).rows()
            summary = ", ".join(f"{kind or 'unclassified'} {count}" for kind, count in counts)
            print(f"{folder.scan_id}: {tables.scan_connections.height} connection(s) ({summary}), {tables.ingest_issues.height} issue(s)")
    if not folders:
        print("no measurement folder found (expected <root>/<vantage_point>/data/<timestamp>/)")
        return 1
    return 0
