"""qlog ingest: one streaming reader for every qlog dialect, normalized into the data contract.

``detect_dialect`` names the container, version and implementation from a file's first KiB;
``iter_qlog`` / ``read_qlog`` turn one file into ``packets``, ``frames``, ``metrics_logged``, ``endpoints``
and ``ingest_issues`` rows; ``write_qlog_parquet`` streams many files into Parquet with flat memory;
``discover_qlogs`` lists a run's qlog files and reports runs without any. JSON-SEQ / NDJSON files are read by
quicack_core's compiled lane when it is installed (``engine``: the same rows as the Python reader).
"""

from .detect import Dialect, detect_dialect
from .discover import discover_qlogs
from .parquet import FileSummary, IngestSummary, write_qlog_parquet
from .python_reader import QlogBatch
from .qlog_file import QlogResult, iter_qlog, read_qlog

__all__ = [
    "Dialect",
    "FileSummary",
    "IngestSummary",
    "QlogBatch",
    "QlogResult",
    "detect_dialect",
    "discover_qlogs",
    "iter_qlog",
    "read_qlog",
    "write_qlog_parquet",
]
