"""How the per-group subcommands (ingest-group, derive-group) name their run group."""

from __future__ import annotations

import argparse

from quicack.layout import group_from_key, group_key


def add_group_arguments(parser: argparse.ArgumentParser) -> None:
    names = parser.add_mutually_exclusive_group(required=True)
    names.add_argument("--group", help="the run group's folder name")
    # What the Snakemake rules pass: any folder name survives the shell, wildcards and option parsing.
    names.add_argument("--group-key", help="the run group's name as quicack.layout.group_key encodes it")


def group_of(args: argparse.Namespace) -> tuple[str, str]:
    """The run group's folder name and its key (its name in the Parquet parts): a ``--group-key`` is used as given,
    the folder name decoded from it; a ``--group`` is encoded here, once."""
    if args.group is not None:
        return args.group, group_key(args.group)
    return group_from_key(args.group_key), args.group_key
