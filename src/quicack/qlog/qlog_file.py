"""One qlog file's rows: ``iter_qlog`` streams them in batches, ``read_qlog`` returns them whole.

A JSON-SEQ / NDJSON file goes to the compiled lane (``quicack.qlog.lane``) when the engine chosen by
``quicack.qlog.reader_engine`` has it, anything else to the Python reader (``quicack.qlog.python_reader``); both
give the same rows. Neither raises on bad input: every problem becomes an ``ingest_issues`` row (stage ``qlog``)
and every good event before the damage is kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from quicack.reading.limits import DEFAULT_LIMITS, Limits
from quicack.schema import ENDPOINTS, FRAMES, INGEST_ISSUES, METRICS_LOGGED, PACKETS

from .batch import concat
from .detect import JSON_SEQ, NDJSON, detect_dialect
from .lane import LaneFileReader
from .python_reader import FileReader, QlogBatch
from .reader_engine import lane_class


@dataclass
class QlogResult:
    """All rows of one qlog file; each frame conforms to the data contract."""

    packets: pl.DataFrame
    frames: pl.DataFrame
    metrics_logged: pl.DataFrame
    endpoints: pl.DataFrame
    ingest_issues: pl.DataFrame


def iter_qlog(
    path: Path, run_id: str, vantage: str | None = None, batch_events: int = 50_000, limits: Limits = DEFAULT_LIMITS,
    engine: str | None = None,
) -> Iterator[QlogBatch]:
    """Stream the rows of one qlog file in batches of about ``batch_events`` events.

    The last batch carries the file's ``endpoints`` rows. Bad input yields ``ingest_issues`` rows, never an
    exception. Memory is bounded by one batch for JSON-SEQ / NDJSON and by one file for JSON documents.
    ``engine`` ("compiled" or "python", default ``QUICACK_QLOG_ENGINE`` or the compiled one when installed, see
    ``quicack.qlog.reader_engine``) reads JSON-SEQ / NDJSON files; both give the same rows.
    """
    path = Path(path)
    lane = lane_class(engine)
    if lane is not None and _is_sequence(path):
        return LaneFileReader(lane, path, run_id, vantage, batch_events, limits).run()
    return FileReader(path, run_id, vantage, batch_events, limits).run()


def _is_sequence(path: Path) -> bool:
    """Whether ``path`` reads as JSON-SEQ / NDJSON; anything unreadable goes to the Python reader, which says why."""
    try:
        return path.stat().st_size > 0 and detect_dialect(path).container in (JSON_SEQ, NDJSON)
    except Exception:  # noqa: BLE001 - the reader reports it
        return False


def read_qlog(path: Path, run_id: str, vantage: str | None = None, limits: Limits = DEFAULT_LIMITS,
              engine: str | None = None) -> QlogResult:
    """All rows of one qlog file (the batches of ``iter_qlog`` concatenated)."""
    parts: dict[str, list[pl.DataFrame]] = {k: [] for k in ("packets", "frames", "metrics_logged", "endpoints",
                                                            "ingest_issues")}
    for batch in iter_qlog(path, run_id, vantage, limits=limits, engine=engine):
        for k, lst in parts.items():
            df = getattr(batch, k)
            if df.height:
                lst.append(df)
    tables = {"packets": PACKETS, "frames": FRAMES, "metrics_logged": METRICS_LOGGED, "endpoints": ENDPOINTS,
              "ingest_issues": INGEST_ISSUES}
    return QlogResult(**{k: concat(v, tables[k]) for k, v in parts.items()})
