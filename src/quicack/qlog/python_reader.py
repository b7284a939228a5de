"""The Python reader of one qlog file of any dialect: its records into batches of data-contract rows.

``quicack.qlog.qlog_file`` chooses it (for JSON documents always; for JSON-SEQ / NDJSON when the compiled lane is
not installed or not chosen); ``quicack.qlog.lane`` builds on it. It never raises on bad input: every problem becomes an
``ingest_issues`` row (stage ``qlog``) and
every good event before the damage is kept.

Connections and run ids: a file may hold several connections (several traces of a JSON document, several
header records in a concatenated JSON-SEQ file, or events carrying different ``group_id`` values). The first
connection of a file gets the caller's ``run_id``; each further connection gets ``"<run_id>#<group_id>"``
(``#trace<N>`` when it has no group id; ``~2``, ``~3`` appended if that id repeats). This keeps a file with a
single connection under the plain run id without reading the file twice, which streaming cannot afford.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from quicack.layout import endpoint_from_path
from quicack.reading.compressed import CorruptCompressedData
from quicack.reading.issues import issue_row
from quicack.reading.limits import InputLimitExceeded, Limits
from quicack.schema import ENDPOINTS, FRAMES, INGEST_ISSUES, METRICS_LOGGED, PACKETS

from .batch import FRAME_DTYPES, METRIC_DTYPES, PACKET_DTYPES, Merged
from .detect import JSON, UNKNOWN, Dialect, detect_dialect, implementation_from_text, read_head
from .normalize import (
    TraceConnection,
    event_kind,
)
from .plausibility import PlausibilityChecks
from .profiles import ACK_DELAY_ENCODED, profile_for, time_unit_to_ms
from .records import Damage, Joined, iter_records
from .traces import (
    Trace,
    finite_number,
    is_converted_capture,
    parse_rfc3339_ns,
    side_of_vantage_point,
    vantage_from_title,
)

STAGE = "qlog"

# Trace times above this many ms are absolute Unix-epoch ms (aioquic logs time.time() * 1000): 1e11 ms is 1973.
_EPOCH_MS_THRESHOLD = 1e11
# A reference_time.wall_clock_time anchors trace time 0 only if the trace's times are small (relative).
_MAX_RELATIVE_MS = 86_400_000.0
# Beyond this many ms from 0 (the year 2115), an event time or a reference time is corrupt: a reference plus
# a trace time, both within it, always fits the int64 nanoseconds of time_abs_ns.
MAX_TIME_MS = 4.6e12
_BEYOND_NS = int(MAX_TIME_MS * 1_000_000)



def is_header_record(value: dict[str, Any]) -> bool:
    """A JSON-SEQ / NDJSON record that starts a trace (qlog's header: trace, qlog_version, file_schema, traces), not an
    event."""
    return "name" not in value and ("trace" in value or "qlog_version" in value or "file_schema" in value
                                    or "traces" in value)

@dataclass
class QlogBatch:
    """Rows read from a part of one qlog file; each frame conforms to the data contract (maybe empty)."""

    packets: pl.DataFrame
    frames: pl.DataFrame
    metrics_logged: pl.DataFrame
    ingest_issues: pl.DataFrame
    endpoints: pl.DataFrame  # only the file's last batch holds rows (a connection is summarised at its end)
    events: int = 0  # events read since the previous batch


class FileReader:
    """The Python reader of one qlog file of any dialect (JSON, JSON-SEQ, NDJSON): records to rows, batch by batch."""

    def __init__(self, path: Path, run_id: str, vantage: str | None, batch_events: int, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        self.bad_times = 0  # events skipped for a time no clock can show
        self.first_bad_time: tuple[int, Any] | None = None  # (event number in the file, its time)
        self.events_before_batch = 0  # events of the batches already yielded
        self.run_id = run_id
        self.vantage_arg = vantage
        self.batch_events = max(1, batch_events)
        self.issues: list[dict[str, Any]] = []
        self.conns: dict[tuple[int, str | None], TraceConnection] = {}
        self.dirty: dict[tuple[int, str | None], None] = {}  # connections with buffered rows, in first-seen order
        self.used_run_ids: set[str] = set()
        self.repeats: dict[str, int] = {}
        self.dialect: Dialect | None = None
        self.pending = 0
        self.kind_cache: dict[str, int] = {}
        self.events_since_batch = 0
        self.checks = PlausibilityChecks()

    # -- issues ----------------------------------------------------------------------------------------------

    def issue(self, severity: str, message: str, run_id: str | None = None) -> None:
        self.issues.append(issue_row(str(self.path), run_id or self.run_id, STAGE, severity, message))

    # -- main loop -------------------------------------------------------------------------------------------

    def run(self) -> Iterator[QlogBatch]:
        try:
            yield from self._run()
        except Exception as exc:  # noqa: BLE001 - bad input must never stop the pipeline
            self.issue("error", f"{self.path}: reading stopped by an unexpected {type(exc).__name__}: {exc}; "
                                "rows before this point are kept (please report this file)")
            try:
                yield self._flush(final=True)
            except Exception as again:  # noqa: BLE001 - the buffered rows themselves are what failed
                self.dirty.clear()
                self.conns.clear()
                self.issue("error", f"{self.path}: the rows buffered since the last batch were lost too "
                                    f"({type(again).__name__}: {again})")
                yield self._flush(final=True)

    def _run(self) -> Iterator[QlogBatch]:
        path = self.path
        try:
            size = path.stat().st_size
        except OSError as exc:
            self.issue("error", f"{path}: cannot read qlog file ({exc.strerror or exc})")
            yield self._flush(final=True)
            return
        if size == 0:
            self.issue("error", f"{path}: empty file (0 bytes); expected a qlog written by the endpoint")
            yield self._flush(final=True)
            return
        try:
            dialect = detect_dialect(path)
            head, _ = read_head(path, 64)
        except (OSError, EOFError, ValueError, CorruptCompressedData, InputLimitExceeded) as exc:
            self.issue("error", f"{path}: cannot decompress or read the file header ({exc})")
            yield self._flush(final=True)
            return
        self.dialect = dialect
        if dialect.container == UNKNOWN:
            # What the file holds is not repeated here: a rejected file may be anything (a link to a secret).
            found = "only whitespace" if not head.strip() else "something else (content not shown)"
            self.issue("error", f"{path}: not a qlog file: expected JSON, NDJSON or JSON-SEQ (RS-separated) text "
                                f"starting with '{{' or 0x1e, found {found}")
            yield self._flush(final=True)
            return
        if not dialect.known_version:
            self.issue("warning", f"{path}: unknown qlog version {dialect.qlog_version!r} (known: draft-00, "
                                  "draft-01, draft-02, 0.3, 0.4, file_schema urn:ietf:params:qlog:file:*); "
                                  "read with best effort, check the rows")
        if dialect.container == JSON:
            yield from self._document(iter_records(path, JSON, self.limits))
        else:
            yield from self._read_sequence(dialect.container)
        self._report_bad_times()
        yield self._flush(final=True)

    # -- single JSON document (aioquic, picoquic, mvfst) ------------------------------------------------------

    def _document(self, records: Iterator[Any]) -> Iterator[QlogBatch]:
        for rec in records:
            if rec.__class__ is Damage and rec.stops_file:
                self.issue("error", f"{self.path}: {rec.message}")
                continue
            if rec.__class__ is Damage and rec.resumed_at is not None:
                self.issue("warning", f"{self.path}: JSON document damaged at byte {rec.offset} ({rec.message}); "
                                      f"read on from the next event, at byte {rec.resumed_at}: the events before "
                                      "and after the damage are kept")
                continue
            if rec.__class__ is Damage:
                kept = sum(c.events for c in self.conns.values())
                cut = "the file was probably cut while being written; " if rec.at_end else ""
                self.issue("warning", f"{self.path}: JSON document damaged at byte {rec.offset} ({rec.message}); "
                                      f"{cut}kept the {kept} events before the damage")
                continue
            doc = rec
            if not isinstance(doc, dict):
                self.issue("error", f"{self.path}: top-level JSON value is a {type(doc).__name__}, expected an "
                                    "object with 'traces'")
                continue
            traces = doc.get("traces")
            if traces is None and "trace" in doc:
                traces = [doc["trace"]]
            if not isinstance(traces, list) or not traces:
                self.issue("error", f"{self.path}: JSON document has no 'traces' list; not a qlog file?")
                continue
            for index, tr in enumerate(traces):
                if not isinstance(tr, dict):
                    continue
                if "error_description" in tr:  # qlog: a trace the tool could not produce
                    self.issue("warning", f"{self.path}: trace {index} is an error trace: {tr['error_description']}")
                    continue
                trace = self._make_trace(index, doc, tr)
                events = tr.get("events")
                if not isinstance(events, list):
                    self.issue("warning", f"{self.path}: trace {index} has no events list")
                    continue
                for ev in events:
                    self._event(trace, ev)
                    if self.pending >= self.batch_events:
                        yield self._flush(final=False)
                tr["events"] = None  # release parsed events as we go

    # -- JSON-SEQ / NDJSON --------------------------------------------------------------------------------------

    def _read_sequence(self, container: str) -> Iterator[QlogBatch]:
        yield from self._sequence(iter_records(self.path, container, self.limits))

    def _sequence(self, records: Iterator[Any]) -> Iterator[QlogBatch]:
        trace: Trace | None = None
        traces = 0
        event, limit = self._event, self.batch_events  # locals: read once per record
        for value in records:
            if value.__class__ is Damage or value.__class__ is Joined:
                self._damaged_record(value)
                continue
            if is_header_record(value):
                trace = self._header_trace(traces, value)
                traces += 1
                continue
            if trace is None:
                trace = self._headless_trace(traces)
                traces += 1
            event(trace, value)
            if self.pending >= limit:
                yield self._flush(final=False)
        if traces == 0:
            self.issue("error", f"{self.path}: no qlog records found")

    def _damaged_record(self, rec: Damage | Joined) -> None:
        if isinstance(rec, Joined):
            self.issue("warning", f"{self.path}: record {rec.number} at byte {rec.offset} is not one JSON text but "
                                  f"several (a separator missing between them): read the {rec.texts} object(s) in it "
                                  "one by one")
            return
        if rec.resumed_at is not None:
            self.issue("warning", f"{self.path}: skipped an unreadable part of record {rec.number}, bytes "
                                  f"{rec.offset}-{rec.resumed_at} ({rec.message}); read on at the next JSON text")
            return
        if rec.stops_file:
            self.issue("error", f"{self.path}: reading stopped at byte {rec.offset} before record "
                                f"{rec.number}: {rec.message}; the records before are kept")
        elif rec.at_end:
            self.issue("warning", f"{self.path}: file cut mid-event: record {rec.number} at byte "
                                  f"{rec.offset} is incomplete ({rec.message}); kept the events before it")
        else:
            self.issue("warning", f"{self.path}: skipped unreadable record {rec.number} at byte "
                                  f"{rec.offset} ({rec.message})")

    def _header_trace(self, index: int, header: dict[str, Any]) -> Trace:
        """The trace a JSON-SEQ / NDJSON header record starts."""
        tr = header.get("trace")
        if not isinstance(tr, dict):
            trs = header.get("traces")
            tr = trs[0] if isinstance(trs, list) and trs and isinstance(trs[0], dict) else {}
        return self._make_trace(index, header, tr)

    def _headless_trace(self, index: int) -> Trace:
        self.issue("warning", f"{self.path}: no qlog header record before the first event; using the "
                              "dialect detected from the file start")
        return self._make_trace(index, {}, {})

    # -- traces and connections ----------------------------------------------------------------------------------

    def _make_trace(self, index: int, top: dict[str, Any], tr: dict[str, Any]) -> Trace:
        d = self.dialect
        vp = vp_field if isinstance(vp_field := tr.get("vantage_point"), dict) else {}
        vp_type = vp.get("type") if isinstance(vp.get("type"), str) else None
        vantage = side_of_vantage_point(vp)
        if vantage is None and (vp_type or "unknown").lower() == "unknown" and d and d.vantage:
            vantage = d.vantage
        if vantage is None:
            vantage = self.vantage_arg or vantage_from_title(tr.get("title"), top.get("title")) \
                or endpoint_from_path(self.path)
            if vantage is None and (vp_type or "").lower() == "network":
                self.issue("warning", f"{self.path}: trace {index} was seen from the network (vantage_point type "
                                      f"{vp_type!r}) without a 'flow' saying whose packets are 'sent'; direction will "
                                      "be null (pass vantage=)")
            elif vantage is None:
                self.issue("warning", f"{self.path}: trace {index} has no client/server vantage point and none was "
                                      "given; direction will be null (pass vantage= or use the .../client/qlog/ "
                                      "layout)")
        elif self.vantage_arg and self.vantage_arg != vantage:
            self.issue("warning", f"{self.path}: file says vantage {vantage!r} but the caller said "
                                  f"{self.vantage_arg!r}; using the file's")
        common = common_field if isinstance(common_field := tr.get("common_fields"), dict) else {}
        group = common.get("group_id") or common.get("ODCID") or common.get("odcid") or common.get("dcid")
        if not group and isinstance(tr.get("description"), str) and re.fullmatch(r"[0-9a-fA-F]{8,40}",
                                                                                 tr["description"]):
            group = tr["description"]  # picoquic puts the initial CID in the trace description
        config = config_field if isinstance(config_field := tr.get("configuration"), dict) else {}
        time_units = config.get("time_units") or common.get("time_units")
        if time_units is not None and time_unit_to_ms(time_units) is None:
            self.issue("warning", f"{self.path}: trace {index} has time_units {str(time_units)[:40]!r}, which no qlog "
                                  "draft defines ('ms', 'us'); read as milliseconds")
        impl = d.implementation if d else None
        if impl is None and isinstance(vp.get("name"), str):
            # aioquic writes vantage_point (name "aioquic") after the events, beyond the first KiB
            impl = implementation_from_text(vp["name"].encode())
        if impl is None and isinstance(top.get("title"), str):
            impl = implementation_from_text(top["title"].encode())
        if impl is None and is_converted_capture(top, tr):
            impl = "pcap2qlog"
        version = top.get("qlog_version") or top.get("file_schema") or (d.qlog_version if d else None)
        fields = tr.get("event_fields")
        event_fields = [str(x).lower() for x in fields] if isinstance(fields, list) else None
        time_format = common.get("time_format")
        if event_fields and "delta_time" in event_fields and "relative_time" not in event_fields:
            time_format = "delta"  # qlog draft-00/01: each event's time is relative to the previous one
        return Trace(
            index=index,
            vantage=vantage,
            group_id=str(group) if group else None,
            implementation=impl,
            qlog_version=version,
            time_units=time_units,
            reference=common.get("reference_time", tr.get("reference_time")),
            time_format=time_format,
            event_fields=event_fields,
            group_is_connection=profile_for(impl, time_units).group_id_per_event_is_connection,
            vantage_point_type=vp_type,
            time_offset=finite_number(config.get("time_offset")),
        )

    def _connection(self, trace: Trace, group: str | None) -> TraceConnection:
        key = (trace.index, group)
        conn = self.conns.get(key)
        if conn is not None:
            return conn
        if not self.used_run_ids:
            run_id = self.run_id
        else:
            run_id = f"{self.run_id}#{group or f'trace{trace.index}'}"
            if run_id in self.used_run_ids:
                # the same group id again (concatenated logs): number the repeats, in O(1) per connection
                base = run_id
                n = self.repeats.get(base, 1)
                while run_id in self.used_run_ids:
                    n += 1
                    run_id = f"{base}~{n}"
                self.repeats[base] = n
        self.used_run_ids.add(run_id)
        d = self.dialect
        conn = self._new_connection(
            key,
            run_id=run_id,
            group_id=group,
            vantage=trace.vantage,
            implementation=trace.implementation,
            dialect=d.name if d else "unknown",
            qlog_version=trace.qlog_version,
            profile=profile_for(trace.implementation, trace.time_units),
            ref_abs_ns=None,
            vantage_point_type=trace.vantage_point_type,
        )
        self.conns[key] = conn
        return conn

    def _new_connection(self, key: tuple[int, str | None], **fields: Any) -> TraceConnection:
        return TraceConnection(**fields)

    def _resolve_reference(self, trace: Trace, conn: TraceConnection, first_t: float) -> None:
        """Absolute time of trace time 0, from reference_time or from absolute event times."""
        if not trace.ref_resolved:
            trace.ref_resolved = True
            ref = trace.reference
            scale = conn.profile.time_to_ms
            ref_ns: int | None = None
            if isinstance(ref, dict):
                epoch = ref.get("epoch")
                wall = ref.get("wall_clock_time")
                if isinstance(epoch, str) and epoch != "unknown":
                    ref_ns = parse_rfc3339_ns(epoch)
                elif isinstance(wall, str) and abs(first_t) < _MAX_RELATIVE_MS:
                    ref_ns = parse_rfc3339_ns(wall)
            elif ref is not None:
                try:
                    ms = float(ref) * scale
                except (TypeError, ValueError, OverflowError):
                    ms = math.nan
                # 0 (ngtcp2 0.12, mvfst) and small values mean "no absolute reference".
                if ms > _EPOCH_MS_THRESHOLD:
                    ref_ns = round(ms * 1e6) if ms < MAX_TIME_MS else _BEYOND_NS
            if ref_ns is not None and not -_BEYOND_NS < ref_ns < _BEYOND_NS:
                self.issue("warning", f"{self.path}: trace {trace.index} reference_time {str(ref)[:80]} is beyond "
                                      "the year 2115 (corrupt); absolute times (time_abs_ns) left null")
            elif ref_ns is not None:
                trace.ref_abs_ns = ref_ns
            elif first_t > _EPOCH_MS_THRESHOLD:
                trace.ref_abs_ns = 0  # event times are themselves Unix-epoch ms (aioquic)
            if trace.ref_abs_ns is not None and trace.time_offset:
                # configuration.time_offset (qlog draft-00 … -02, in time_units): the trace's shift against the
                # clock, for aligning vantage points; it moves absolute times only (time_ms is relative)
                offset_ns = round(trace.time_offset * scale * 1e6)
                if -_BEYOND_NS < trace.ref_abs_ns + offset_ns < _BEYOND_NS:
                    trace.ref_abs_ns += offset_ns
        conn.ref_abs_ns = trace.ref_abs_ns

    # -- events ----------------------------------------------------------------------------------------------------

    def _event(self, trace: Trace, ev: Any) -> None:
        # Hot path: one call per event. Plain dict lookups and class checks, no exceptions in the common case.
        self.pending += 1
        self.events_since_batch += 1
        t: Any  # a number, or text that may be one (picoquic, mvfst)
        if ev.__class__ is dict:
            t = ev.get("time")
            name = ev.get("name")
            if name is None:  # qlog draft-01: separate category / event fields
                name = f"{ev.get('category', '')}:{ev.get('event', ev.get('event_type', ''))}"
            data = ev.get("data")
            group = ev.get("group_id")
        elif ev.__class__ is list and trace.event_fields:
            f = trace.event_fields
            try:
                t = ev[f.index("relative_time")] if "relative_time" in f else \
                    ev[f.index("delta_time")] if "delta_time" in f else ev[f.index("time")]
                cat = ev[f.index("category")] if "category" in f else ""
                evn = ev[f.index("event_type")] if "event_type" in f else ev[f.index("event")]
                data = ev[f.index("data")]
            except (ValueError, IndexError):
                return
            name = f"{cat}:{evn}"
            group = None
        else:
            return
        if name.__class__ is not str:
            return
        if t.__class__ is not float and t.__class__ is not int:
            try:
                t = float(t)  # picoquic / mvfst write times as strings
            except (TypeError, ValueError):
                return
            if t != t:  # NaN
                return
        if group is None or group == trace.group_id or not trace.group_is_connection:
            conn = trace.conn
            if conn is None:
                if trace.group_id is None and group is not None:
                    trace.group_id = str(group)  # quinn: the first event's group_id (the original DCID) names it
                conn = trace.conn = self._connection(trace, trace.group_id)
            if conn.pending_events == 0:
                self.dirty[(trace.index, trace.group_id)] = None  # first event since the connection's last flush
        else:
            key = (trace.index, str(group))
            conn = self.conns.get(key) or self._connection(trace, key[1])
            if conn.pending_events == 0:
                self.dirty[key] = None
        t *= conn.profile.time_to_ms
        if trace.time_format == "delta":
            t = trace.last_t + t
            if not -MAX_TIME_MS < t < MAX_TIME_MS:
                self._bad_time(t)
                return
            trace.last_t = t
        elif not -MAX_TIME_MS < t < MAX_TIME_MS:  # also false for NaN and infinities
            self._bad_time(t)
            return
        if conn.first_t is None:
            self._resolve_reference(trace, conn, t)
            conn.first_t = t
        conn.events += 1
        conn.pending_events += 1
        if data.__class__ is dict:
            kind = self.kind_cache.get(name)
            if kind is None:
                kind = event_kind(name, self.kind_cache)
            if kind:
                conn.on[kind](t, data)

    def _bad_time(self, t: float) -> None:
        self.bad_times += 1
        if self.first_bad_time is None:
            self.first_bad_time = (self.events_before_batch + self.events_since_batch, t)

    def _report_bad_times(self) -> None:
        if self.bad_times:
            number, t = self.first_bad_time or (0, None)
            self.issue("warning", f"{self.path}: {self.bad_times} event(s) skipped: time beyond ±{MAX_TIME_MS:g} ms "
                                  f"(year 2115), corrupt (first: event {number}, time {t!r} ms)")

    # -- batches ---------------------------------------------------------------------------------------------------

    def _flush(self, final: bool) -> QlogBatch:
        # Rows of all ready connections go into one frame per table: building many small frames per batch
        # (a concatenation of short traces) would cost more than parsing.
        merged = self._merged()
        for key in list(self.dirty):
            conn = self.conns[key]
            if conn.origin_t is None:
                if not final and conn.pending_events < self.batch_events:
                    continue  # wait for the first client Initial to fix the time origin
                self._fallback_origin(conn)
            for m, cols in zip(merged, conn.take_buffers(), strict=True):
                m.add(conn, cols)
            del self.dirty[key]
        self.pending = sum(self.conns[k].pending_events for k in self.dirty)
        n, self.events_since_batch = self.events_since_batch, 0
        self.events_before_batch += n
        tables = (merged[0].frame(PACKETS), merged[1].frame(FRAMES), merged[2].frame(METRICS_LOGGED))
        self.checks.add_batch(*tables)
        endpoints = self._endpoints() if final else ENDPOINTS.empty()  # after the checks saw the last rows
        if final:
            self._report_checks()
        for m, name in zip(merged, ("packets", "frames", "metrics_logged"), strict=True):
            if m.sanitized:
                self.issue("warning", f"{self.path}: some {name} fields held non-numeric values where numbers "
                                      "belong, or integers beyond 64 bits; those values were set to null")
        issues = INGEST_ISSUES.empty()
        if self.issues:
            issues = INGEST_ISSUES.conform(pl.DataFrame(self.issues, schema=INGEST_ISSUES.schema))
            self.issues = []
        return QlogBatch(
            packets=tables[0],
            frames=tables[1],
            metrics_logged=tables[2],
            ingest_issues=issues,
            endpoints=endpoints,
            events=n,
        )

    def _merged(self) -> list[Merged]:
        """Where a batch's rows of packets, frames and metrics_logged are gathered."""
        return [Merged(PACKET_DTYPES), Merged(FRAME_DTYPES), Merged(METRIC_DTYPES)]

    def _fallback_origin(self, conn: TraceConnection) -> None:
        what = "first sent Initial" if conn.vantage == "client" else "first received Initial"
        if conn.first_packet_t is not None:
            conn.origin_t = conn.first_packet_t
            conn.origin_fallback = "first packet"
        else:
            conn.origin_t = conn.first_t if conn.first_t is not None else 0.0
            conn.origin_fallback = "first event"
        self.issue("warning", f"{self.path}: connection {conn.group_id or conn.run_id}: no {what} logged; "
                              f"time_ms is relative to the {conn.origin_fallback} instead", conn.run_id)

    def _report_checks(self) -> None:
        """The file's issues from the plausibility checks (one per failed check and connection), the frames it
        did not know, and a converter's raw ACK Delay field read as such."""
        for conn in self.conns.values():
            for _, message in self.checks.failed(conn.run_id, conn.local_max_ack_delay_ms, conn.peer_max_ack_delay_ms):
                self.issue("warning", f"{self.path}: connection {conn.group_id or conn.run_id}: {message}", conn.run_id)
        unknown = self.checks.unknown_frames_message()
        if unknown:
            self.issue("warning", f"{self.path}: {unknown}")
        raw_delays = [c for c in self.conns.values() if c.implementation == "pcap2qlog"
                      and c.profile.ack_delay == ACK_DELAY_ENCODED and c.run_id in self.checks.observed
                      and self.checks.observed[c.run_id].max_ack_delay_ms]
        if raw_delays:
            self.issue(
                "warning",
                f"{self.path}: a capture converted by pcap2qlog: its ACK frames' ack_delay is the raw "
                "ACK Delay field (tshark's quic.ack.ack_delay), read as units of 2^ack_delay_exponent "
                "microseconds (the exponent of the transport parameters logged, else 3)",
            )

    def _endpoints(self) -> pl.DataFrame:
        rows = []
        for conn in self.conns.values():
            origin = conn.origin_t
            hs = None
            if conn.handshake_confirmed_t is not None and origin is not None:
                hs = conn.handshake_confirmed_t - origin
            abs_origin = None
            if conn.ref_abs_ns is not None and origin is not None:
                abs_origin = conn.ref_abs_ns + round(origin * 1e6)
            peer_ade = conn.peer_ack_delay_exponent
            peer_mad = conn.peer_max_ack_delay_ms
            if conn.peer_params_seen:
                # RFC 9000 §18.2 defaults when the peer's logged transport parameters omit them
                peer_ade = 3 if peer_ade is None else peer_ade
                peer_mad = 25.0 if peer_mad is None else peer_mad
            local_mad = conn.local_max_ack_delay_ms
            if local_mad is None and conn.local_params_seen:
                local_mad = 25.0
            failed = self.checks.failed(conn.run_id, conn.local_max_ack_delay_ms, conn.peer_max_ack_delay_ms)
            rows.append({
                "run_id": conn.run_id, "source": "qlog", "vantage": conn.vantage, "path": str(self.path),
                "implementation": conn.implementation, "dialect": conn.dialect, "qlog_version": conn.qlog_version,
                "group_id": conn.group_id, "time_origin_abs_ns": abs_origin,
                "local_max_ack_delay_ms": local_mad,
                "peer_max_ack_delay_ms": peer_mad, "peer_ack_delay_exponent": peer_ade,
                "handshake_confirmed_ms": hs, "events": conn.events,
                "vantage_point_type": conn.vantage_point_type, "plausibility_flags": [check for check, _ in failed],
            })
        if not rows:
            return ENDPOINTS.empty()
        return ENDPOINTS.conform(pl.DataFrame(rows, schema=ENDPOINTS.schema))
