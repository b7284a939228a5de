"""The data contract: every table users query, its columns, types and descriptions, and which stage writes it.

One source of truth for four consumers: the writers (Parquet files get exactly these columns in this order), the
DuckDB builder (``COMMENT ON`` text), the workflow (which stage's rules write which tables: ``tables_written_by``)
and the README. Times are float64 milliseconds relative to the connection's first client Initial at that vantage
point; sizes are bytes. ``contract`` says what a table is; the tables are defined by the stage that writes them
(``ingest_tables``, ``derived_tables``, ``scan_tables``, ``database_tables``) and gathered here.
"""

from __future__ import annotations

from .contract import (
    ACK_RANGE,
    ACK_RANGES,
    DATABASE,
    DERIVE,
    INGEST,
    SCAN,
    STAGES,
    Column,
    Table,
    ack_ranges_from_json,
)
from .database_tables import DATASET_DESCRIPTION, PATH_CHECKS, RFC9002_AGREEMENT
from .derived_tables import ACK_BREAKDOWN, ACK_RUNS, CONNECTIONS, ESTIMATOR_AGREEMENT, HANDSHAKE_RUNS, RTT_SAMPLES
from .ingest_tables import DATAGRAMS, ENDPOINTS, FRAMES, INGEST_ISSUES, METRICS_LOGGED, PACKETS, RUNS, TCP_SEGMENTS
from .scan_tables import SCAN_CONNECTIONS, SCAN_TRUTH

# The Parquet tables (one view each in the database), in the database's order.
TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        RUNS,
        DATAGRAMS,
        TCP_SEGMENTS,
        PACKETS,
        FRAMES,
        METRICS_LOGGED,
        RTT_SAMPLES,
        CONNECTIONS,
        HANDSHAKE_RUNS,
        ESTIMATOR_AGREEMENT,
        ACK_BREAKDOWN,
        ACK_RUNS,
        SCAN_CONNECTIONS,
        SCAN_TRUTH,
        ENDPOINTS,
        INGEST_ISSUES,
    )
}


def tables_written_by(stage: str) -> tuple[str, ...]:
    """The names of the Parquet tables ``stage`` (one of STAGES) writes, in TABLES' order."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r} (choose from {', '.join(STAGES)})")
    return tuple(name for name, table in TABLES.items() if stage in table.written_by)


__all__ = [
    "ACK_BREAKDOWN",
    "ACK_RANGE",
    "ACK_RANGES",
    "ACK_RUNS",
    "CONNECTIONS",
    "DATABASE",
    "DATAGRAMS",
    "DATASET_DESCRIPTION",
    "DERIVE",
    "ENDPOINTS",
    "ESTIMATOR_AGREEMENT",
    "FRAMES",
    "HANDSHAKE_RUNS",
    "INGEST",
    "INGEST_ISSUES",
    "METRICS_LOGGED",
    "PACKETS",
    "PATH_CHECKS",
    "RFC9002_AGREEMENT",
    "RTT_SAMPLES",
    "RUNS",
    "SCAN",
    "SCAN_CONNECTIONS",
    "SCAN_TRUTH",
    "STAGES",
    "TABLES",
    "TCP_SEGMENTS",
    "Column",
    "Table",
    "ack_ranges_from_json",
    "tables_written_by",
]
