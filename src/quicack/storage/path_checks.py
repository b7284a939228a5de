"""The dataset's path checks: ``path_check.csv`` beside its raw folder, as ``python -m quicack.testbed.path_check``
writes it (one row per path profile the runs used), stored by ``quicack build-db --path-checks`` as the commented
table ``path_checks`` so that ackfreq22-tab01 can set what the emulated paths delivered beside the profiles."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from quicack.schema import PATH_CHECKS
from quicack.storage import database

FILE_NAME = "path_check.csv"


class PathChecksError(ValueError):
    """The path-check file cannot be read as the table's columns."""


def read_path_checks(csv: Path) -> pl.DataFrame:
    """The rows of a path-check CSV, conformed to the ``path_checks`` contract."""
    try:
        frame = pl.read_csv(csv, infer_schema_length=None)
    except (OSError, pl.exceptions.PolarsError) as error:
        raise PathChecksError(f"{csv}: {error}") from error
    missing = {"profile"} - set(frame.columns)
    unknown = set(frame.columns) - set(PATH_CHECKS.schema)
    if missing or unknown:
        raise PathChecksError(f"{csv}: not a path-check file (missing {sorted(missing)}, unknown {sorted(unknown)})")
    return PATH_CHECKS.conform(frame)


def write_path_checks(db: Path, csv: Path) -> int:
    """Store ``csv`` in ``db`` as the table path_checks; returns its rows."""
    frame = read_path_checks(csv)
    with database.connect(Path(db), read_only=False) as con:
        database.write_commented_table(con, PATH_CHECKS, frame)
    return frame.height
