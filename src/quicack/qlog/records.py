"""Split a qlog file into JSON records, streaming.

JSON-SEQ (RFC 7464, RS-separated) and NDJSON are read in fixed-size chunks, so memory is bounded by the
largest record (at most ``Limits.max_record_bytes``) plus one chunk, never by the file, and time is linear in
the record length. A single-document JSON file (aioquic, picoquic, mvfst) is parsed as a whole: memory is
bounded by one file (at most ``Limits.max_document_bytes``). When that document is damaged (a file cut while
the implementation was still writing, the common case for a crashed or killed endpoint), the events before the
damage are recovered one by one with ``raw_decode`` so nothing good is lost. No text reaches a parser before
its nesting depth has been checked against ``Limits.max_nesting_depth``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from quicack.reading.compressed import CorruptCompressedData, open_input
from quicack.reading.limits import DEFAULT_LIMITS, InputLimitExceeded, Limits, config_key

from .detect import JSON, JSON_SEQ, NDJSON, UTF8_BOM
from .nesting import too_deep

try:  # orjson parses qlog records ~3-5x faster than the standard library; fall back when absent.
    import orjson

    _loads: Callable[[bytes | str], Any] = orjson.loads
    _JSONError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError, RecursionError)
except ImportError:  # pragma: no cover - exercised only without orjson
    _loads = json.loads
    _JSONError = (ValueError, RecursionError)

# What ends reading a file early: the decompressor found damage, or a limit tripped.
STREAM_ERRORS = (CorruptCompressedData, InputLimitExceeded, OSError, EOFError)

CHUNK = 1 << 20


@dataclass(frozen=True)
class Damage:
    """A record that could not be parsed."""

    offset: int
    number: int
    message: str
    at_end: bool  # the damaged record is the last one: the file was cut mid-record
    stops_file: bool = False  # damaged compression or a tripped limit: nothing after it can be read
    resumed_at: int | None = None  # where reading went on after the damage (the next event found), if anywhere


@dataclass(frozen=True)
class Joined:
    """A JSON-SEQ / NDJSON record that held several JSON texts (the separator between them was lost): each text
    follows as a record of its own (or a Damage, for a text that does not parse)."""

    offset: int
    number: int
    texts: int


def iter_seq(path: Path, separator: bytes, limits: Limits = DEFAULT_LIMITS) -> Iterator[dict[str, Any] | Damage]:
    """Records of a JSON-SEQ (``separator`` = RS) or NDJSON (``separator`` = newline) file.

    Yields each record's JSON object, or a Damage (with byte offset and record number) for a record that does
    not parse, is not an object, nests too deeply or is too long; the records after it are read on. Damaged
    compression or a tripped decompression limit ends the file with a Damage. Good records are yielded bare: a
    wrapper object per event costs measurable time.
    """
    number = 0
    lines = separator == b"\n"
    max_depth = limits.max_nesting_depth
    next_offset = 0
    with open_input(path, limits) as f:
        try:
            for offset, part, length, last in _separated(f.read, separator, limits.max_record_bytes):
                next_offset = offset + length + len(separator)
                if part is None:
                    number += 1
                    yield too_long(offset, number, length, limits)
                    continue
                part = record_text(part, offset, lines)
                if not part or part.isspace():
                    continue  # blank record (isspace stops at the first non-blank byte; strip() would copy)
                number += 1
                yield from parse_records(part, offset, number, last, max_depth)
        except STREAM_ERRORS as exc:
            yield unreadable(next_offset, number, exc)


def record_text(part: bytes, offset: int, lines: bool) -> bytes:
    """A record without what precedes its JSON text: the byte order mark a file may start with (the record at offset
    0), and in NDJSON the RS quic-go v0.3x wrote before each line. The compiled lane strips the same
    (rust/quicack_core/src/qlog/split.rs, record_text)."""
    if offset == 0 and part[:3] == UTF8_BOM:
        part = part[3:]
    if lines and part[:1] == b"\x1e":
        part = part[1:]
    return part


def too_long(offset: int, number: int, length: int, limits: Limits) -> Damage:
    return Damage(offset, number, f"record of {length} bytes exceeds {limits.max_record_bytes} bytes "
                                  f"({config_key('max_record_bytes')})", at_end=False)


def unreadable(next_offset: int, records_before: int, exc: Exception) -> Damage:
    """Damaged compression or a tripped limit after ``records_before`` records: nothing after it can be read."""
    return Damage(next_offset, records_before + 1, str(exc), at_end=True, stops_file=True)


def parse_record(part: bytes, offset: int, number: int, last: bool, max_depth: int) -> dict[str, Any] | Damage:
    """The JSON object of one non-blank record, or a Damage saying why not."""
    if len(part) > max_depth and too_deep(part, max_depth):  # shorter records cannot nest deeper
        return Damage(offset, number, f"JSON nested deeper than {max_depth} levels "
                                      f"({config_key('max_nesting_depth')}); not parsed", at_end=False)
    try:
        value = _loads(part)
    except _JSONError as exc:
        token = non_json_token(exc)
        if token is not None:  # the record is whole: a writer's NaN, not a cut
            return Damage(offset, number, f"invalid JSON ({token})", at_end=False)
        return Damage(offset, number, f"invalid JSON ({exc})", at_end=last)
    if value.__class__ is dict:
        return value
    return Damage(offset, number, f"a JSON {type(value).__name__}, expected an object", at_end=False)


# Numbers JSON does not have (RFC 8259 §6), as JavaScript and Python's json.dumps write them.
_NON_JSON_NUMBER = re.compile(r"-?(?:NaN|Infinity)")


def non_json_token(error: Exception | None) -> str | None:
    """What a JSON parse error met, said as it is, when it is a NaN or an infinity (`non_json_number_at`); None for
    any other error (a text cut short, a syntax error)."""
    text, at = getattr(error, "doc", None), getattr(error, "pos", None)
    if not isinstance(text, str) or not isinstance(at, int):
        return None
    return non_json_number_at(text, at)


def non_json_number_at(text: str, at: int) -> str | None:
    """The NaN or infinity at ``at`` of ``text`` with its line and column (1-based, in characters, as the parsers
    count), or None."""
    found = _NON_JSON_NUMBER.match(text, at)
    if found is None:
        return None
    line = text.count("\n", 0, at) + 1
    column = at - text.rfind("\n", 0, at)
    return f"{found.group()} at line {line}, column {column}: not JSON, which has no NaN or Infinity"


def parse_records(part: bytes, offset: int, number: int, last: bool, max_depth: int) -> Iterator[Any]:
    """`parse_record`, and when the record is not one JSON text but several with only whitespace between them (a
    writer that lost a separator), a `Joined` note followed by each text's object (or Damage): the events are not
    lost with the separator. Text that does not parse in between is one Damage; reading goes on at the next line
    that starts a JSON text. Both qlog engines read damaged records here (quicack.qlog.lane hands them back)."""
    value = parse_record(part, offset, number, last, max_depth)
    if value.__class__ is not Damage or not value.message.startswith("invalid JSON"):
        yield value
        return
    texts = _joined_texts(part, offset, number, last, max_depth)
    if texts is None:
        yield value
        return
    yield Joined(offset, number, sum(1 for t in texts if t.__class__ is not Damage))
    yield from texts


# Where a JSON text may start after damage: a line that starts with an object (JSON-SEQ and NDJSON writers put one
# record per line). Python's decoder finds where a text ends (raw_decode); orjson parses the text itself, so that a
# value reads the same as in an undamaged record.
_LINE_STARTS_OBJECT = re.compile(r"\n[ \t\r]*\{")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _joined_texts(part: bytes, offset: int, number: int, last: bool, max_depth: int) -> list[Any] | None:
    """The texts of a record that holds several JSON objects (their objects, a Damage for text between them that
    does not parse), or None when it holds one text, none that parses, a text that is not an object, or more than
    `MAX_DAMAGED_TEXTS` damaged stretches (the record's own Damage stands then). Linear in the record: each decode
    starts past the previous one's end or error, and byte offsets are counted as the reading moves on."""
    try:
        text = part.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    out: list[Any] = []
    damaged = 0
    at = 0  # the character position `byte` counts up to
    byte = offset

    def byte_at(position: int) -> int:
        nonlocal at, byte
        byte += len(text[at:position].encode())
        at = position
        return byte

    pos = _JSON_SPACE.match(text, 0).end()  # type: ignore[union-attr]  # matches the empty string
    while pos < len(text):
        try:
            _, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError) as error:
            damaged += 1
            if damaged > MAX_DAMAGED_TEXTS:
                return None
            failed_at = max(getattr(error, "pos", None) or pos, pos)
            resume = _LINE_STARTS_OBJECT.search(text, failed_at)
            stop = resume.end() - 1 if resume else len(text)
            start_byte = byte_at(pos)
            stop_byte = byte_at(stop)
            out.append(Damage(start_byte, number, f"invalid JSON (a text that does not parse, {stop_byte - start_byte} "
                              "bytes)", at_end=last and resume is None, resumed_at=stop_byte if resume else None))
            pos = stop
            continue
        value = parse_record(text[pos:end].encode(), byte_at(pos), number, last, max_depth)
        if value.__class__ is not dict:
            return None
        out.append(value)
        pos = _JSON_SPACE.match(text, end).end()  # type: ignore[union-attr]  # matches the empty string
    return out if len(out) - damaged >= 1 and len(out) > 1 else None


MAX_DAMAGED_TEXTS = 16


def _separated(read, separator: bytes, max_record: int) -> Iterator[tuple[int, bytes | None, int, bool]]:
    """(stream offset, bytes or None when longer than ``max_record``, length, is the last) of each record.

    The record that a chunk leaves open is kept as pieces and joined once when it ends: a record of n chunks
    costs O(n), where growing one bytes object by each chunk cost O(n^2) (a 512 MB record took 130 s)."""
    sep_len = len(separator)
    pieces: list[bytes] = []
    length = 0  # of the open record; its pieces are dropped once it is longer than max_record
    offset = 0  # of the open record
    while True:
        chunk = read(CHUNK)
        if not chunk:
            if length:
                yield offset, b"".join(pieces) if length <= max_record else None, length, True
            return
        parts = chunk.split(separator)
        if len(parts) == 1:
            length += len(chunk)
            if length <= max_record:
                pieces.append(chunk)
            else:
                pieces = []
            continue
        first = parts[0]
        length += len(first)
        if length <= max_record:
            pieces.append(first)
            yield offset, b"".join(pieces) if len(pieces) > 1 else first, length, False
        else:
            yield offset, None, length, False
        offset += length + sep_len
        for part in parts[1:-1]:
            yield offset, part if len(part) <= max_record else None, len(part), False
            offset += len(part) + sep_len
        tail = parts[-1]
        length = len(tail)
        pieces = [tail] if tail and length <= max_record else []


def iter_seq_lines(path: Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[dict[str, Any] | Damage]:
    """NDJSON, also accepting RS before each line."""
    return iter_seq(path, b"\n", limits)


_EVENTS_KEY = re.compile(r'"events"\s*:\s*\[')
_BETWEEN_EVENTS = re.compile(r"[ \t\r\n,]*")


def iter_document(path: Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[Any | Damage]:
    """The single JSON document of ``path`` (its parsed value), or a salvage of the events before the damage.

    On damage, yields a synthetic ``{"traces": [...], "_salvaged": True}`` document holding each trace's
    header fields found before its ``"events"`` array plus the events that parsed, then a Damage. A document
    larger than ``limits.max_document_bytes`` or nested deeper than ``limits.max_nesting_depth`` is not parsed
    (one Damage); damaged compression keeps what was decompressed before it, as a cut file.
    """
    stream_error: Exception | None = None
    with open_input(path, limits) as f:
        pieces: list[bytes] = []
        size = 0
        while size <= limits.max_document_bytes:
            try:
                piece = f.read(CHUNK)
            except STREAM_ERRORS as exc:
                stream_error = exc
                break
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
    if size > limits.max_document_bytes:
        yield Damage(0, 1, f"JSON document larger than {limits.max_document_bytes} bytes "
                           f"({config_key('max_document_bytes')}); not parsed", at_end=False, stops_file=True)
        return
    if pieces:
        pieces[0] = pieces[0].removeprefix(UTF8_BOM)
    data = b"".join(pieces)
    del pieces
    if too_deep(data, limits.max_nesting_depth):
        yield Damage(0, 1, f"JSON nested deeper than {limits.max_nesting_depth} levels "
                           f"({config_key('max_nesting_depth')}); not parsed", at_end=False, stops_file=True)
        return
    failure: Exception | None = None  # the parser's error, where the text is whole
    if stream_error is not None:
        first_error = f"file unreadable after byte {size}: {stream_error}"
    else:
        try:
            value = _loads(data)
        except _JSONError as exc:
            first_error = str(exc)
            failure = exc
        else:
            yield value
            return
    text = data.decode("utf-8", "replace")
    del data
    traces, skipped, damage_at = _salvage(text)
    if skipped and damage_at is None and stream_error is None:
        # Every damage was an event that could be skipped to the next: the document without those events is
        # read whole, with the fields after the events too (aioquic writes vantage_point there).
        kept = [text[begin:end] for begin, end in _kept_spans(len(text), skipped)]
        try:
            repaired = _loads("".join(kept).encode("utf-8", "surrogatepass"))
        except _JSONError as exc:
            repaired = None
            failure = exc
        if repaired is not None:
            yield repaired
            yield from (_skipped_event(skip) for skip in skipped)
            return
    yield {"traces": traces, "_salvaged": True}
    yield from (_skipped_event(skip) for skip in skipped)
    at = len(text) if damage_at is None else damage_at
    token = non_json_token(failure) if damage_at is None and failure is not None else None
    if isinstance(stream_error, InputLimitExceeded):  # a bomb is reported as such, not as a cut file
        yield Damage(at, 1, f"{stream_error}; the events before byte {at} are kept", at_end=True, stops_file=True)
    elif token is not None:  # every event was read or skipped; a NaN outside them (a trace's field) is no cut
        # failure is not None with a token
        where = _original_position(failure.pos, skipped) if skipped else failure.pos  # type: ignore[union-attr]
        yield Damage(where, 1, f"invalid JSON document ({non_json_number_at(text, where)})", at_end=False)
    elif damage_at is not None or not skipped or stream_error is not None:
        yield Damage(at, 1, f"invalid JSON document ({first_error})", at_end=True)


def _original_position(position: int, skipped: list[Skipped]) -> int:
    """Where ``position`` of the document without the ``skipped`` spans is in the document."""
    for skip in skipped:
        if position < skip.begin:
            break
        position += skip.end - skip.begin
    return position


@dataclass(frozen=True)
class Skipped:
    """An event of a damaged document that is not read: the span cut out of the document (``begin``-``end``, with
    a separator next to it), where the event starts (``at``) and, when it is whole but for a NaN or an infinity,
    what it holds (``why``)."""

    begin: int
    end: int
    at: int
    why: str | None = None


def _skipped_event(skip: Skipped) -> Damage:
    why = skip.why or f"an event that does not parse, {skip.end - skip.at} characters"
    return Damage(skip.at, 1, why, at_end=False, resumed_at=skip.end)


def _kept_spans(length: int, skipped: list[Skipped]) -> Iterator[tuple[int, int]]:
    """The spans of a text of ``length`` left when the ``skipped`` spans (sorted, apart) are cut out."""
    begin = 0
    for skip in skipped:
        yield begin, skip.begin
        begin = skip.end
    yield begin, length


# After an event that does not parse, reading goes on at the next event: an object (or, for traces with
# event_fields, an array) after a comma that parses as a whole, is followed by the next comma or the end of the
# list, and has an event's fields (time and name, or time and event). Inner objects of the damaged event that
# happen to parse are not events (no time and name). At most this many candidates are tried per damage.
_NEXT_EVENT = re.compile(r",[ \t\r\n]*[{\[]")
_AFTER_EVENT = re.compile(r"[ \t\r\n]*[,\]]")
MAX_RESYNC_CANDIDATES = 10_000


def _salvage(text: str) -> tuple[list[dict[str, Any]], list[Skipped], int | None]:
    """A damaged document's traces, each with its header fields found before its ``"events"`` array and the
    events that parse; the events skipped; where reading stopped for good (None: it did not). An event is JSON as
    orjson reads it: one with a NaN or an infinity (which Python's decoder would take) is skipped and named."""
    traces: list[dict[str, Any]] = []
    skipped: list[Skipped] = []
    pos = 0
    for m in _EVENTS_KEY.finditer(text):
        if m.start() < pos:
            continue
        header = _salvage_header(text[pos : m.start()])
        following = _EVENTS_KEY.search(text, m.end())
        limit = following.start() if following else len(text)
        arrays = "event_fields" in header
        events: list[Any] = []
        i = m.end()
        kept_end: int | None = None  # where the last event read ends
        ok = True
        while True:
            i = _BETWEEN_EVENTS.match(text, i).end()  # type: ignore[union-attr]  # matches the empty string
            if i >= len(text):
                ok = False
                break
            if text[i] == "]":
                i += 1
                break
            try:
                value, i = _JSON_ONLY.raw_decode(text, i)
            except (ValueError, RecursionError) as error:  # JSONDecodeError, or an integer of more than 4300 digits
                skip = _event_with_non_json_number(text, i, kept_end, skipped)
                if skip is None:
                    resume = _next_event(_JSON_ONLY, text, max(getattr(error, "pos", None) or i, i), limit, arrays)
                    if resume is None:
                        ok = False
                        break
                    skip = Skipped(i, resume, i)
                skipped.append(skip)
                i = skip.end
                continue
            events.append(value)
            kept_end = i
        header["events"] = events
        traces.append(header)
        pos = i
        if not ok:
            return traces, skipped, i
    return traces, skipped, None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Python's decoder reads NaN and the infinities, which JSON (and orjson) do not have; these are refused here, so that
# an event reads as in an undamaged document.
_JSON_ONLY = json.JSONDecoder(parse_constant=_refuse_constant)
_WITH_CONSTANTS = json.JSONDecoder()


def _event_with_non_json_number(text: str, at: int, kept_end: int | None, skipped: list[Skipped]) -> Skipped | None:
    """The event at ``at`` as a `Skipped` when it is whole but for a NaN or an infinity in it, else None. Its span
    takes the separator before it when an event read precedes it (the separator after it, if any, stays for the
    next event; a last event leaves no comma before the ']'), else the separator after it."""
    try:
        _, end = _WITH_CONSTANTS.raw_decode(text, at)
        _loads(text[at:end].encode("utf-8", "surrogatepass"))
    except _JSONError as error:
        where = getattr(error, "pos", None)
        why = non_json_number_at(text, at + where) if isinstance(where, int) else None
        if why is None:
            return None
    except (ValueError, RecursionError):
        return None
    else:
        return None  # it parses: what failed was not in this event
    why = f"an event holding {why}"
    if kept_end is not None and (not skipped or skipped[-1].end <= kept_end):
        return Skipped(kept_end, end, at, why)
    # (the pattern matches the empty string)
    return Skipped(at, _BETWEEN_EVENTS.match(text, end).end(), at, why)  # type: ignore[union-attr]


def _next_event(decoder: json.JSONDecoder, text: str, start: int, limit: int, arrays: bool) -> int | None:
    """Where the next whole event after ``start`` (and before ``limit``) begins, or None."""
    for tried, candidate in enumerate(_NEXT_EVENT.finditer(text, start, limit)):
        if tried >= MAX_RESYNC_CANDIDATES:
            return None
        begin = candidate.end() - 1
        try:
            value, end = decoder.raw_decode(text, begin)
        except (ValueError, RecursionError):
            continue
        if not _AFTER_EVENT.match(text, end):
            continue
        if isinstance(value, dict) and "time" in value and ("name" in value or "event" in value):
            return begin
        if arrays and isinstance(value, list) and len(value) >= 3:
            return begin
    return None


_HEADER_STRINGS = {
    "qlog_version": re.compile(r'"qlog_version"\s*:\s*"([^"]*)"'),
    "title": re.compile(r'"title"\s*:\s*"([^"]*)"'),
    "vantage": re.compile(r'"vantage_point"\s*:\s*\{[^}]*"type"\s*:\s*"([^"]*)"'),
    "flow": re.compile(r'"vantage_point"\s*:\s*\{[^}]*"flow"\s*:\s*"([^"]*)"'),
    "original_uris": re.compile(r'"original_uris"\s*:\s*(\[[^\]]*\])'),
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
        if found["flow"]:
            out["vantage_point"]["flow"] = found["flow"].group(1)
    common: dict[str, Any] = {}
    if found["odcid"]:
        common["group_id"] = found["odcid"].group(1)
    if found["reference_time"]:
        common["reference_time"] = found["reference_time"].group(1)
    if common:
        out["common_fields"] = common
    configuration: dict[str, Any] = {}
    if found["time_units"]:
        configuration["time_units"] = found["time_units"].group(1)
    if found["original_uris"]:
        try:
            configuration["original_uris"] = json.loads(found["original_uris"].group(1))
        except ValueError:
            pass
    if configuration:
        out["configuration"] = configuration
    if found["event_fields"]:
        try:
            out["event_fields"] = json.loads(found["event_fields"].group(1))
        except ValueError:
            pass
    if found["title"]:
        out["title"] = found["title"].group(1)
    return out


def iter_records(path: Path, container: str, limits: Limits = DEFAULT_LIMITS) -> Iterator[Any | Damage]:
    if container == JSON_SEQ:
        return _seq_or_lines(path, limits)
    if container == NDJSON:
        return iter_seq_lines(path, limits)
    if container == JSON:
        return iter_document(path, limits)
    raise ValueError(f"unknown container {container!r}")


def _seq_or_lines(path: Path, limits: Limits) -> Iterator[dict[str, Any] | Damage]:
    return iter_seq(path, separator(path, JSON_SEQ, limits), limits)


def separator(path: Path, container: str, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The record separator of a JSON-SEQ or NDJSON file: RS, or newline for NDJSON and for files whose header
    says JSON-SEQ but that lack RS (read line by line)."""
    if container != JSON_SEQ:
        return b"\n"
    try:
        with open_input(path, limits) as f:
            first = f.read(64).removeprefix(UTF8_BOM).lstrip()
    except STREAM_ERRORS:
        first = b"\x1e"  # unreadable from the start: iter_seq reports it where it happens
    return b"\x1e" if first[:1] == b"\x1e" else b"\n"
