"""Fuzz targets that misbehave on purpose, so that tests/test_fuzz.py can show the fuzzer counts what it must."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def misbehave_by_input(reader: str, path: Path, keylog: Path | None, out: Path) -> int:
    """Input sizes decide: some raise, some segfault, some hang, the rest answer one issue row."""
    size = path.stat().st_size
    if size % 7 == 1:
        raise RuntimeError("uncaught, as a reader bug would be")
    if size % 7 == 2:
        os.kill(os.getpid(), signal.SIGSEGV)
    if size % 7 == 3:
        time.sleep(60)
    return 1
