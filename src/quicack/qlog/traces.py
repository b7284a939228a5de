"""What a qlog trace header says: vantage point, group id, time reference."""

from __future__ import annotations

import math
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


def side_of_vantage_point(vp: dict[str, Any]) -> str | None:
    """'client' or 'server' from a trace's vantage_point, in any case ("SERVER" from quic-trace converters); a
    'network' vantage point (a converted capture) takes its 'flow': whose packets it logs as 'sent'."""
    kind = vp.get("type")
    kind = kind.lower() if isinstance(kind, str) else None
    if kind in ("client", "server"):
        return kind
    flow = vp.get("flow")
    flow = flow.lower() if isinstance(flow, str) else None
    if kind == "network" and flow in ("client", "server"):
        return flow
    return None


def is_converted_capture(top: dict[str, Any], trace: dict[str, Any]) -> bool:
    """A trace pcap2qlog made from a capture: it names the capture in configuration.original_uris, or itself."""
    config = config_field if isinstance(config_field := trace.get("configuration"), dict) else {}
    uris = config.get("original_uris")
    if isinstance(uris, list) and any(isinstance(u, str) and u.lower().endswith((".pcap", ".pcapng")) for u in uris):
        return True
    text = " ".join(str(x) for x in (top.get("description"), top.get("title"), trace.get("description")) if x)
    return "pcap2qlog" in text.lower()


def finite_number(value: Any) -> float | None:
    """A finite number from a number or numeric string (time_offset "0"), else None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None
