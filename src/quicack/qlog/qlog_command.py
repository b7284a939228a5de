"""``quicack qlog PATH... --out DIR``: qlog files (or folders of them) to DIR/<table>.parquet, with the RTT samples
recomputed from them.

The ``quicack`` command adds its arguments through ``add_arguments(parser)`` (quicack.cli.COMMANDS);
``qlog_command(argv)`` runs it alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The reader, polars and the metrics are imported where they are used: `quicack --help` only registers this.
from quicack.reading.limits import add_limit_arguments, limits_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", type=Path, help="qlog files (.qlog, .sqlog, JSON, NDJSON; .gz/.zst too) or folders of them"
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder: <table>.parquet per table")
    add_limit_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from quicack.metrics.rtt import recompute_rtt_samples
    from quicack.stages.derive_stage import write_folder_connections

    from .parquet import FileSummary, write_qlog_parquet

    readable = 0

    def report(file: FileSummary) -> None:
        nonlocal readable
        rows = file.rows
        readable += rows["packets"] > 0 or rows["metrics_logged"] > 0
        print(
            f"{file.path}: {file.dialect or '?'}, {file.connections} connection(s), {rows['packets']} packets, "
            f"{rows['frames']} frames, {rows['metrics_logged']} metrics updates, "
            f"{rows['rtt_samples']} RTT samples recomputed, {rows['ingest_issues']} issue(s) ({file.errors} errors)"
        )

    files = _expand_qlog_paths(args.paths)
    write_qlog_parquet(files, args.out, _run_id_for, rtt_samples=recompute_rtt_samples, on_file=report,
                       limits=limits_from_args(args))
    if not files:
        print("no qlog files found", file=sys.stderr)
    connections = write_folder_connections(args.out)
    print_outputs(args.out, connections)
    return 0 if readable else 1


def print_outputs(out: Path, connections: int) -> None:
    """Where the tables went, and every issue's reason (not only in ingest_issues.parquet): on stderr."""
    import polars as pl

    tables = sorted(p.name for p in out.glob("*.parquet"))
    print(f"-> {out}/: {', '.join(tables)} ({connections} connection(s)); query: quicack sql --db {out} "
          "\"SELECT * FROM connections\"", file=sys.stderr)
    issues = out / "ingest_issues.parquet"
    if issues.is_file():
        # The message names the file.
        for severity, message in pl.read_parquet(issues).select("severity", "message").iter_rows():
            print(f"  {severity}: {message}", file=sys.stderr)


def qlog_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="quicack qlog", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def _run_id_for(path: Path) -> str:
    """The file's path without its suffixes: unique per file, readable in query results."""
    return path.with_name(path.name.split(".")[0]).as_posix()


def _expand_qlog_paths(paths: list[Path]) -> list[Path]:
    from quicack.layout import is_qlog_name

    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file() and is_qlog_name(p)))
        else:
            files.append(path)
    return files
