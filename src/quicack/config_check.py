"""What the workflow's JSON schema cannot refuse in a configuration, checked before it: more values than any
configuration holds (a YAML file whose aliases repeat a list in a list in a list — "billion laughs" — loads in a
moment, as shared objects, but the schema's error message would print it expanded, exhausting memory) and numbers
that are not finite (``.nan`` passes every bound a schema can state: a NaN compression-ratio limit switches the
decompression-bomb check off)."""

from __future__ import annotations

import math
from collections.abc import Mapping

# Far above any real configuration (the testbed matrix, the largest, holds some 600 values).
MAX_VALUES = 100_000


def config_problems(config: Mapping, max_values: int = MAX_VALUES) -> list[str]:
    """What is wrong with ``config`` (a loaded YAML or JSON document): each non-finite number by its place
    (``limits.max_compression_ratio``), or one line when it holds more than ``max_values`` values (counted as
    written out, every alias expanded; the walk stops there, so it costs at most that much)."""
    problems: list[str] = []
    pending: list[tuple[str, object]] = [("", config)]
    seen = 0
    while pending:
        where, value = pending.pop()
        seen += 1
        if seen > max_values:
            return [
                f"more than {max_values:,} values once its YAML aliases are written out (aliases repeating a list "
                "or mapping inside one another, a 'billion laughs' file?): refused before it is validated"
            ]
        if isinstance(value, Mapping):
            pending.extend((f"{where}.{key}" if where else str(key), item) for key, item in value.items())
        elif isinstance(value, list | tuple):
            pending.extend((f"{where}[{index}]", item) for index, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(f"{where}: {value} is not a finite number")
    return sorted(problems)
