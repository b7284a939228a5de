"""Stream qlog batches of many files into one Parquet file per table, with flat memory."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import polars as pl

from quicack.reading.issues import ERROR, count_errors, issue_row, issues_frame
from quicack.reading.limits import DEFAULT_LIMITS, Limits
from quicack.schema import ENDPOINTS, FRAMES, INGEST_ISSUES, METRICS_LOGGED, PACKETS, RTT_SAMPLES, Table
from quicack.storage.table_writer import ROW_GROUP_ROWS, TableWriter

from .python_reader import STAGE
from .qlog_file import iter_qlog

TABLES: tuple[Table, ...] = (PACKETS, FRAMES, METRICS_LOGGED, ENDPOINTS, INGEST_ISSUES)

# What turns one file's sent packets, ACK frames and endpoints into rtt_samples rows (quicack.metrics.rtt's
# recompute_rtt_samples; passed in, because the metrics build on this reader, not the other way round).
RttDeriver = Callable[[pl.DataFrame, pl.DataFrame, pl.DataFrame], pl.DataFrame]


@dataclass
class FileSummary:
    """What one qlog file gave."""

    path: Path
    dialect: str | None = None
    connections: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    errors: int = 0


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
    rtt_samples: RttDeriver | None = None,
    on_file: Callable[[FileSummary], None] | None = None,
    row_group_rows: int = ROW_GROUP_ROWS,
    limits: Limits = DEFAULT_LIMITS,
) -> IngestSummary:
    """Read every qlog in ``paths`` and write ``out_dir/<table>.parquet`` for packets, frames, metrics_logged,
    endpoints and ingest_issues (and rtt_samples when ``rtt_samples`` derives them). Batches are written as
    Parquet row groups as they come, so peak memory is one batch (JSON-SEQ / NDJSON) or one file (JSON
    documents) plus the rows waiting for a row group (``row_group_rows``), independent of the total input size; for
    rtt_samples a file's sent packets and ACK frames
    wait until its end. ``on_file`` hears what each file gave.

    No paths at all is reported as an ``ingest_issues`` row (an empty folder or a run without qlog).
    """
    out_dir = Path(out_dir)
    summary = IngestSummary()
    names = [t.name for t in TABLES] + ([RTT_SAMPLES.name] if rtt_samples else [])
    with TableWriter.in_folder(out_dir, names, row_group_rows) as writer:
        for path in paths:
            path = Path(path)
            summary.files += 1
            try:
                summary.input_bytes += path.stat().st_size
            except OSError:
                pass
            vantage = vantage_for(path) if vantage_for else None
            rows_before = dict(writer.rows)
            file_summary = FileSummary(path)
            sent_packets: list[pl.DataFrame] = []
            ack_frames: list[pl.DataFrame] = []
            for batch in iter_qlog(path, run_id_for(path), vantage, batch_events=batch_events, limits=limits):
                summary.events += batch.events
                for t in TABLES:
                    writer.write(t.name, getattr(batch, t.name))
                file_summary.errors += count_errors(batch.ingest_issues)
                if batch.endpoints.height:
                    file_summary.connections += batch.endpoints.height
                    file_summary.dialect = cast(str | None, batch.endpoints["dialect"].first())  # a text column
                if rtt_samples:
                    sent_packets.append(batch.packets.filter(pl.col("event") == "sent"))
                    ack_frames.append(batch.frames.filter(pl.col("ack_ranges").is_not_null()))
                    if batch.endpoints.height:
                        writer.write(
                            RTT_SAMPLES.name,
                            rtt_samples(pl.concat(sent_packets), pl.concat(ack_frames), batch.endpoints),
                        )
            file_summary.rows = {name: writer.rows[name] - rows_before[name] for name in names}
            if on_file:
                on_file(file_summary)
        if summary.files == 0:
            issue = issue_row(
                str(out_dir), None, STAGE, ERROR, "no qlog files to read (empty folder or a run without qlog output)"
            )
            writer.write("ingest_issues", issues_frame([issue]))
    summary.rows = {t.name: writer.rows[t.name] for t in TABLES}
    summary.outputs = dict(writer.paths)
    return summary


__all__ = ["FileSummary", "IngestSummary", "write_qlog_parquet"]
