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
    import polars as pl
    import pyarrow.parquet as pq

    from quicack import store
    from quicack.layout import find_measurements
    from quicack.schema import INGEST_ISSUES, SCAN_CONNECTIONS, TABLES

    from .asn import read_prefix_table
    from .files import Issues
    from .measurement import read_measurement

    folders = find_measurements(args.paths)
    issues = Issues("")
    prefixes = read_prefix_table(args.prefix_to_asn, issues) if args.prefix_to_asn else None
    args.out.mkdir(parents=True, exist_ok=True)
    # Capture tables stream out batch by batch, so a 1M-connection capture never sits in memory as rows.
    writers: dict[str, pq.ParquetWriter] = {}

    def write_batch(batch) -> None:
        for name in CAPTURE_TABLES:
            arrow = getattr(batch, name).to_arrow()
            if name not in writers:
                writers[name] = pq.ParquetWriter(args.out / f"{name}.parquet", arrow.schema, compression="zstd")
            writers[name].write_table(arrow)

    connections, issue_frames = [], [issues.frame()]
    try:
        for folder in folders:
            tables = read_measurement(folder, prefixes, None if args.no_capture_tables else write_batch)
            connections.append(tables.scan_connections)
            issue_frames.append(tables.ingest_issues)
            counts = tables.scan_connections["first_datagram_class"].value_counts(sort=True).rows()
            summary = ", ".join(f"{kind or 'unclassified'} {count}" for kind, count in counts)
            print(f"{folder.scan_id}: {tables.scan_connections.height} connection(s) ({summary}), {tables.ingest_issues.height} issue(s)")
    finally:
        for writer in writers.values():
            writer.close()
    if not args.no_capture_tables:
        for name in CAPTURE_TABLES:
            if name not in writers:
                store.write_table(TABLES[name], TABLES[name].empty(), args.out / f"{name}.parquet")
    scan_rows = pl.concat(connections) if connections else SCAN_CONNECTIONS.empty()
    issue_rows = pl.concat([f for f in issue_frames if not f.is_empty()] or [INGEST_ISSUES.empty()])
    store.write_table(SCAN_CONNECTIONS, scan_rows, args.out / "scan_connections.parquet")
    store.write_table(INGEST_ISSUES, issue_rows, args.out / "ingest_issues.parquet")
    if not folders:
        print("no measurement folder found (expected <root>/<vantage_point>/data/<timestamp>/)")
        return 1
    return 0
