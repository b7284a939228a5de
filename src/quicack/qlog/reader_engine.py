"""Which reader reads JSON-SEQ / NDJSON qlogs: compiled (`quicack_core.QlogLane`, built from rust/quicack_core by
install.sh) or Python.

Both write the same rows (tests/test_qlog_engines.py reads every qlog with both and compares the tables); the
compiled one is used when installed. `QUICACK_QLOG_ENGINE=python` (or `iter_qlog(..., engine="python")`) forces
the pure-Python reader, `=compiled` requires the compiled lane. A `quicack_core` built before the lane existed
is used for captures only; qlogs are then read by Python.
"""

from __future__ import annotations

import os

ENVIRONMENT_VARIABLE = "QUICACK_QLOG_ENGINE"
ENGINES = ("compiled", "python")


def lane_class(name: str | None = None) -> type | None:
    """`quicack_core.QlogLane` for the engine named (or by QUICACK_QLOG_ENGINE), None for the Python reader."""
    name = name or os.environ.get(ENVIRONMENT_VARIABLE) or None
    if name not in (None, *ENGINES):
        raise ValueError(f"unknown qlog reader engine {name!r} (choose from {', '.join(ENGINES)})")
    if name == "python":
        return None
    try:
        import quicack_core
    except ImportError:
        quicack_core = None
    lane = getattr(quicack_core, "QlogLane", None)
    if lane is None and name == "compiled":
        raise ImportError("quicack_core with QlogLane is not installed: run install.sh (it builds rust/quicack_core)")
    return lane
