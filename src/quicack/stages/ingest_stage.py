"""The ingest stage: a run group's raw files -> its ingest tables (`quicack ingest-group`), and the dataset's own
input problems (`quicack dataset-issues`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quicack.layout import group_key
from quicack.reading.limits import DEFAULT_LIMITS, Limits, add_limit_arguments, limits_from_args
from quicack.stages import ingest
from quicack.stages.group_arguments import add_group_arguments, group_of
from quicack.storage import table_writer

FOLLOW_HELP = "read files and run groups that are symbolic links leading outside the raw folder (default: refused)"


def ingest_group_stage(
    raw_root: Path, group: str, dataset: str, parquet_root: Path, limits: Limits = DEFAULT_LIMITS,
    follow_external_symlinks: bool = False, key: str | None = None,
) -> dict[str, int]:
    """``key``: the group's part name as the caller has it (the workflow's --group-key); None = `group_key`."""
    # Streamed into the Parquet files run by run: a group's tables never sit in memory whole.
    part = key if key is not None else group_key(group)
    with table_writer.TableWriter.part(parquet_root, ingest.INGEST_TABLES, part) as writer:
        for name, frame in ingest.ingest_group_frames(raw_root, group, dataset, limits, follow_external_symlinks):
            writer.write(name, frame)
    return dict(writer.rows)


def dataset_issues_stage(raw_root: Path, parquet_root: Path, follow_external_symlinks: bool = False) -> int:
    frame = ingest.dataset_issues(raw_root, follow_external_symlinks)
    table_writer.write_tables({"ingest_issues": frame}, parquet_root, "_dataset")
    return frame.height


def add_ingest_group_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raw", type=Path, required=True)
    add_group_arguments(parser)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--parquet", type=Path, required=True)
    parser.add_argument("--follow-external-symlinks", action="store_true", help=FOLLOW_HELP)
    add_limit_arguments(parser)
    parser.set_defaults(handler=_ingest_group)


def add_dataset_issues_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raw", type=Path, required=True)
    parser.add_argument("--parquet", type=Path, required=True)
    parser.add_argument("--follow-external-symlinks", action="store_true", help=FOLLOW_HELP)
    parser.set_defaults(handler=_dataset_issues)


def _ingest_group(args: argparse.Namespace) -> int:
    group, key = group_of(args)
    counts = ingest_group_stage(args.raw, group, args.dataset, args.parquet, limits_from_args(args),
                                args.follow_external_symlinks, key)
    print(f"{group!r}: " + ", ".join(f"{name} {rows}" for name, rows in counts.items()))
    return 0


def _dataset_issues(args: argparse.Namespace) -> int:
    # A raw folder that holds no dataset (a typo, an empty or misplaced folder) fails the run with the reason.
    if (reason := ingest.unusable_raw_folder(args.raw, args.follow_external_symlinks)) is not None:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    dataset_issues_stage(args.raw, args.parquet, args.follow_external_symlinks)
    return 0
