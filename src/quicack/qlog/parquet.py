"""Stream qlog batches of many files into one Parquet file per table, with flat memory."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from quicack.schema import ENDPOINTS, FRAMES, INGEST_ISSUES, METRICS_LOGGED, PACKETS, Table

from .reader import STAGE, iter_qlog

TABLES: tuple[Table, ...] = (PACKETS, FRAMES, METRICS_LOGGED, ENDPOINTS, INGEST_ISSUES)


@dataclass
class IngestSummary:
    """What ``write_qlog_parquet`` read and wrote."""

    files: int = 0
    input_bytes: int = 0
    events: int = 0
    rows: dict[str, int] = field(default_factory=lambda: {t.name: 0 for t in TABLES})
    outputs: dict[str, Path] = field(default_factory=dict)

    @property
    def issues(self) -> int:
        return self.rows["ingest_issues"]


def write_qlog_parquet(
    paths: Iterable[Path],
    out_dir: Path,
    run_id_for: Callable[[Path], str],
    vantage_for: Callable[[Path], str | None] | None = None,
    batch_events: int = 50_000,
) -> IngestSummary:
    """Read every qlog in ``paths`` and write ``out_dir/<table>.parquet`` for packets, frames, metrics_logged,
    endpoints and ingest_issues. Batches are written as Parquet row groups as they come, so peak memory is one
    batch (JSON-SEQ / NDJSON) or one file (JSON documents), independent of the total input size.

    No paths at all is reported as an ``ingest_issues`` row (an empty folder or a run without qlog).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = IngestSummary()
    schemas = {t.name: t.empty().to_arrow().schema for t in TABLES}
    writers = {t.name: pq.ParquetWriter(out_dir / f"{t.name}.parquet", schemas[t.name]) for t in TABLES}
    try:
        for path in paths:
            path = Path(path)
            summary.files += 1
            try:
                summary.input_bytes += path.stat().st_size
            except OSError:
                pass
            vantage = vantage_for(path) if vantage_for else None
            for batch in iter_qlog(path, run_id_for(path), vantage, batch_events=batch_events):
                summary.events += batch.events
                for t in TABLES:
                    df = getattr(batch, t.name)
                    if df.height:
                        writers[t.name].write_table(df.to_arrow().cast(schemas[t.name]))
                        summary.rows[t.name] += df.height
        if summary.files == 0:
            issue = pl.DataFrame(
                [{"path": str(out_dir), "run_id": None, "stage": STAGE, "severity": "error",
                  "message": "no qlog files to read (empty folder or a run without qlog output)"}],
                schema=INGEST_ISSUES.schema,
            )
            writers["ingest_issues"].write_table(issue.to_arrow().cast(schemas["ingest_issues"]))
            summary.rows["ingest_issues"] += 1
    finally:
        for name, w in writers.items():
            w.close()
            summary.outputs[name] = out_dir / f"{name}.parquet"
    return summary


__all__ = ["IngestSummary", "write_qlog_parquet"]
