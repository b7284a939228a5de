"""Split a qlog file into JSON records, streaming.

JSON-SEQ (RFC 7464, RS-separated) and NDJSON are read in fixed-size chunks, so memory is bounded by the
largest record plus one chunk, never by the file. A single-document JSON file (aioquic, picoquic, mvfst) is
parsed as a whole: memory is bounded by one file. When that document is damaged (a file cut while the
implementation was still writing, the common case for a crashed or killed endpoint), the events before the
damage are recovered one by one with ``raw_decode`` so nothing good is lost.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .detect import JSON, JSON_SEQ, NDJSON, open_binary

try:  # orjson parses qlog records ~3-5x faster than the standard library; fall back when absent.
    import orjson

    _loads = orjson.loads
    _JSONError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - exercised only without orjson
    _loads = json.loads
    _JSONError = (ValueError,)

CHUNK = 1 << 20


@dataclass(frozen=True)
class Damage:
    """A record that could not be parsed."""

    offset: int
    number: int
    message: str
    at_end: bool  # the damaged record is the last one: the file was cut mid-record


def iter_seq(path: Path, separator: bytes) -> Iterator[dict[str, Any] | Damage]:
    """Records of a JSON-SEQ (``separator`` = RS) or NDJSON (``separator`` = newline) file.

    Yields each record's JSON object, or a Damage (with byte offset and record number) for a record that does
    not parse or is not an object. Good records are yielded bare: a wrapper object per event costs measurable time.
    """
    number = 0
    sep_len = len(separator)
    lines = separator == b"\n"
    with open_binary(path) as f:
        pending = b""
        base = 0  # offset of pending[0] in the stream
        while True:
            chunk = f.read(CHUNK)
            if chunk:
                pending += chunk
                parts = pending.split(separator)
                pending = parts.pop()  # possibly incomplete last record
            else:
                parts = [pending]
                pending = b""
            for part in parts:
                start = base
                base += len(part) + sep_len
                if lines and part[:1] == b"\x1e":
                    part = part[1:]  # RS-prefixed lines: quic-go v0.3x wrote RS before its NDJSON records
                if not part or part.isspace():
                    continue  # blank record (isspace stops at the first non-blank byte; strip() would copy)
                number += 1
                try:
                    value = _loads(part)
                except _JSONError as exc:
                    yield Damage(start, number, f"invalid JSON ({exc})", at_end=not chunk)
                    continue
                if value.__class__ is dict:
                    yield value
                else:
                    yield Damage(start, number, f"a JSON {type(value).__name__}, expected an object", at_end=False)
            if not chunk:
                return


def iter_seq_lines(path: Path) -> Iterator[dict[str, Any] | Damage]:
    """NDJSON, also accepting RS before each line."""
    return iter_seq(path, b"\n")


_EVENTS_KEY = re.compile(r'"events"\s*:\s*\[')


def iter_document(path: Path) -> Iterator[Any | Damage]:
    """The single JSON document of ``path`` (its parsed value), or a salvage of the events before the damage.

    On damage, yields a synthetic ``{"traces": [...], "_salvaged": True}`` document holding each trace's
    header fields found before its ``"events"`` array plus the events that parsed, then a Damage.
    """
    with open_binary(path) as f:
        data = f.read()
    try:
        value = _loads(data)
    except _JSONError as exc:
        first_error = str(exc)
    else:
        yield value
        return
    text = data.decode("utf-8", "replace")
    del data
    decoder = json.JSONDecoder()
    traces: list[dict[str, Any]] = []
    damage_at = len(text)
    pos = 0
    for m in _EVENTS_KEY.finditer(text):
        if m.start() < pos:
            continue
        header = _salvage_header(text[pos : m.start()])
        events: list[Any] = []
        i = m.end()
        ok = True
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            if i >= len(text):
                ok = False
                break
            if text[i] == "]":
                i += 1
                break
            try:
                value, i = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                ok = False
                break
            events.append(value)
        header["events"] = events
        traces.append(header)
        pos = i
        if not ok:
            damage_at = i
            break
    yield {"traces": traces, "_salvaged": True}
    yield Damage(damage_at, 1, f"invalid JSON document ({first_error})", at_end=True)


_HEADER_STRINGS = {
    "qlog_version": re.compile(r'"qlog_version"\s*:\s*"([^"]*)"'),
    "title": re.compile(r'"title"\s*:\s*"([^"]*)"'),
    "vantage": re.compile(r'"vantage_point"\s*:\s*\{[^}]*"type"\s*:\s*"([^"]*)"'),
    "odcid": re.compile(r'"(?:ODCID|odcid|group_id|dcid)"\s*:\s*"([^"]*)"'),
    "time_units": re.compile(r'"time_units"\s*:\s*"([^"]*)"'),
    "reference_time": re.compile(r'"reference_time"\s*:\s*"?([0-9.]+)"?'),
    "event_fields": re.compile(r'"event_fields"\s*:\s*(\[[^\]]*\])'),
}


def _salvage_header(fragment: str) -> dict[str, Any]:
    """Trace-level fields visible in the text before a trace's events (regex: the JSON is incomplete)."""
    out: dict[str, Any] = {}
    found = {k: rx.search(fragment) for k, rx in _HEADER_STRINGS.items()}
    if found["vantage"]:
        out["vantage_point"] = {"type": found["vantage"].group(1)}
    common: dict[str, Any] = {}
    if found["odcid"]:
        common["group_id"] = found["odcid"].group(1)
    if found["reference_time"]:
        common["reference_time"] = found["reference_time"].group(1)
    if common:
        out["common_fields"] = common
    if found["time_units"]:
        out["configuration"] = {"time_units": found["time_units"].group(1)}
    if found["event_fields"]:
        try:
            out["event_fields"] = json.loads(found["event_fields"].group(1))
        except ValueError:
            pass
    if found["title"]:
        out["title"] = found["title"].group(1)
    return out


def iter_records(path: Path, container: str) -> Iterator[Any | Damage]:
    if container == JSON_SEQ:
        return _seq_or_lines(path)
    if container == NDJSON:
        return iter_seq_lines(path)
    if container == JSON:
        return iter_document(path)
    raise ValueError(f"unknown container {container!r}")


def _seq_or_lines(path: Path) -> Iterator[dict[str, Any] | Damage]:
    """JSON-SEQ; files whose header says JSON-SEQ but that lack RS are read line by line."""
    with open_binary(path) as f:
        first = f.read(64).lstrip()
    if first[:1] == b"\x1e":
        return iter_seq(path, b"\x1e")
    return iter_seq_lines(path)
