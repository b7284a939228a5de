"""What a qlog trace header says: vantage point, group id, time reference."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .normalize import TraceConnection


@dataclass
class Trace:
    """What a trace header says; shared by the connections of that trace."""

    index: int
    vantage: str | None
    group_id: str | None
    implementation: str | None
    qlog_version: str | None
    time_units: str | None
    reference: Any
    time_format: str | None
    event_fields: list[str] | None = None
    ref_abs_ns: int | None = None
    ref_resolved: bool = False
    last_t: float = 0.0
    conn: TraceConnection | None = None  # the connection of events without their own group_id
    group_is_connection: bool = True  # False: per-event group_id values do not split connections (quinn)
    vantage_point_type: str | None = None  # as the file wrote it ('SERVER', 'network', ...)
    time_offset: float | None = None  # configuration.time_offset (draft-00 … -02), in time_units


def parse_rfc3339_ns(value: str) -> int | None:
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000


def vantage_from_title(*titles: Any) -> str | None:
    """quinn writes vantage_point.type "unknown" but ends its title with "client" or "server"."""
    for title in titles:
        if isinstance(title, str):
            words = set(re.findall(r"[a-z]+", title.lower()))
            if ("client" in words) != ("server" in words):
                return "client" if "client" in words else "server"
    return None
