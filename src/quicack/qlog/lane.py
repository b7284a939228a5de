"""The JSON-SEQ / NDJSON reader with the compiled lane (`quicack_core.QlogLane`) doing the common events.

`LaneFileReader` is `python_reader.FileReader` with the record loop in the lane: the lane splits and parses the
records and normalizes every event of the common form on a connection it knows (rows into its typed buffers,
state in its connection records); everything else comes back here as before (headers, damage, the first event of
each connection, values of unusual types) and goes through the Python reader unchanged. What both sides use is
held once, in the lane: the reader's counters and each connection's state are properties reading and writing
it, and a connection's rows buffered in the lane move into its Python lists before the Python handlers add one,
so the rows of a connection stay in event order (Python rows first, then the lane's). A batch whose rows all
come from the lane reaches polars through the Arrow C data interface; a batch with Python rows takes the lane's
rows as Python values and goes through `batch.Merged` as the Python reader's would.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from quicack.reading.compressed import open_input
from quicack.reading.limits import Limits

from .batch import FRAME_DTYPES, METRIC_DTYPES, PACKET_DTYPES, Merged
from .normalize import TraceConnection
from .python_reader import FileReader, QlogBatch, Trace, is_header_record
from .records import CHUNK, STREAM_ERRORS, Damage, Joined, parse_records, separator, too_long, unreadable

# What QlogLane.step stops for (its STOP_* codes).
_NEED, _END, _RECORD, _TOO_LONG, _FLUSH = range(5)
_FLUSH_NOW = object()  # a batch is full (from the record stream to the record loop)

# TraceConnection's state kept in the lane, by the lane's field number.
LANE_FIELDS = ("origin_t", "first_t", "first_packet_t", "events", "pending_events", "local_max_ack_delay_ms",
               "peer_max_ack_delay_ms", "local_ack_delay_exponent", "peer_ack_delay_exponent", "peer_params_seen",
               "local_params_seen", "handshake_confirmed_t", "last_datagram_rx_t")


def _lane_field(index: int, name: str) -> property:
    def get(self: LaneConnection) -> Any:
        own = self.own
        return self.lane.get(self.cid, index) if own is None else own[name]

    def put(self: LaneConnection, value: Any) -> None:
        if self.own is None:
            try:
                self.lane.set(self.cid, index, value)
                return
            except (TypeError, OverflowError):  # a value the lane cannot hold: the connection stays here
                self.take_over()
        self.own[name] = value  # type: ignore[index]  # own is set by take_over

    return property(get, put)


def _rows(table: int) -> property:
    def get(self: LaneConnection) -> list[Any]:
        if self.own is None and self.lane.has_rows(self.cid):
            self.move_rows()  # before a Python handler adds a row
        return self.py_rows[table]

    def put(self: LaneConnection, value: list[Any]) -> None:
        self.py_rows[table] = value

    return property(get, put)


class _LaneAckReasons:
    """TraceConnection.ack_reasons of a connection whose reasons are in the lane (the operations the handlers use)."""

    __slots__ = ("conn",)

    def __init__(self, conn: LaneConnection) -> None:
        self.conn = conn

    def __bool__(self) -> bool:
        return self.conn.lane.ack_reasons_len(self.conn.cid) > 0

    def pop(self, key: tuple[Any, Any], default: Any) -> Any:
        return self.conn.lane.ack_reason_pop(self.conn.cid, key[0], key[1], default)

    def __setitem__(self, key: tuple[Any, Any], value: tuple[Any, Any]) -> None:
        conn = self.conn
        try:
            conn.lane.ack_reason_set(conn.cid, key[0], key[1], value[0], value[1])
        except (TypeError, OverflowError):
            conn.take_over()
            conn.own["ack_reasons"][key] = value  # type: ignore[index]  # own is set by take_over


class LaneConnection(TraceConnection):
    """A TraceConnection whose state is the lane's connection ``cid`` (or its own, ``own``, once the lane was
    given a value it cannot hold: from then on the lane hands all events of this connection back)."""

    def __init__(self, lane: Any, cid: int, **fields: Any) -> None:
        self.lane = lane
        self.cid = cid
        self.own: dict[str, Any] | None = None
        self.py_rows: list[list[Any]] = [[], [], []]
        self.lane_reasons = _LaneAckReasons(self)
        super().__init__(**fields)

    def move_rows(self) -> None:
        for table, rows in enumerate(self.py_rows):
            rows.extend(self.lane.take_python(self.cid, table))

    def take_over(self) -> None:
        self.move_rows()
        own = {name: self.lane.get(self.cid, index) for index, name in enumerate(LANE_FIELDS)}
        own["ack_reasons"] = self.lane.take_ack_reasons(self.cid)
        self.lane.release(self.cid)
        self.own = own

    @property
    def ack_reasons(self) -> Any:
        return self.lane_reasons if self.own is None else self.own["ack_reasons"]

    @ack_reasons.setter
    def ack_reasons(self, value: dict[Any, Any]) -> None:
        if self.own is None and value:
            self.take_over()
        if self.own is not None:
            self.own["ack_reasons"] = value

    def take_buffers(self) -> tuple[list[Any], list[Any], list[Any]]:
        """The Python rows; the lane's rows (after them) are taken by `LaneMerged`."""
        out = tuple(self.py_rows)
        self.py_rows = [[], [], []]
        self.pending_events = 0
        return out  # type: ignore[return-value]  # three lists

    packets = _rows(0)
    frames = _rows(1)
    metrics = _rows(2)


for _index, _name in enumerate(LANE_FIELDS):
    setattr(LaneConnection, _name, _lane_field(_index, _name))


class LaneMerged(Merged):
    """`Merged` for one table of a batch of lane connections: Arrow columns from the lane when no row of the batch
    comes from Python, else every row as Python values through `Merged` (as the Python reader builds it)."""

    def __init__(self, dtypes: dict[str, Any], lane: Any, table: int) -> None:
        super().__init__(dtypes)
        self.lane = lane
        self.table = table
        self.parts: list[tuple[LaneConnection, list[Any]]] = []

    def add(self, conn: TraceConnection, flat: list[Any]) -> None:
        self.parts.append((conn, flat))  # type: ignore[arg-type]  # conn is not None here

    def frame(self, table: Any) -> pl.DataFrame:
        lane, number = self.lane, self.table
        for conn, flat in self.parts:
            # rows the Python handlers wrote (a connection's first event, mostly): into the lane when typed as the
            # lane types them, so that the batch stays on the Arrow path
            if flat and lane.absorb(conn.cid, number, flat):
                flat.clear()
        if any(flat for _, flat in self.parts):
            for conn, flat in self.parts:
                flat.extend(lane.take_python(conn.cid, number))
                super().add(conn, flat)
            return super().frame(table)
        conns = [conn for conn, _ in self.parts]
        take_batch = getattr(lane, "take_batch", None)  # a core built before it: finish derives the columns
        try:
            if take_batch is None:
                raise TypeError("no take_batch")
            # the columns `finish` derives, computed in the lane as it computes them (origin_t or 0.0 as there)
            columns, lengths = take_batch(number, [c.cid for c in conns], [c.run_id for c in conns],
                                          [c.vantage for c in conns], [c.origin_t or 0.0 for c in conns],
                                          [c.ref_abs_ns for c in conns])
        except (TypeError, OverflowError):  # an attribute the lane cannot hold (nothing was taken): finish does it
            columns, lengths = lane.take_arrow(number, [c.cid for c in conns])
            self.conns = [conn for conn, n in zip(conns, lengths, strict=True) if n]
            self.lengths = [n for n in lengths if n]
            return self.finish(pl.DataFrame(columns), table) if self.conns else table.empty()
        return table.conform(pl.DataFrame(columns)) if any(lengths) else table.empty()


def _counter(index: int) -> property:
    return property(lambda self: self.lane.get_counter(index), lambda self, value: self.lane.set_counter(index, value))


class LaneFileReader(FileReader):
    """`FileReader` of a JSON-SEQ / NDJSON file with the record loop in a `quicack_core.QlogLane`."""

    pending = _counter(0)
    events_since_batch = _counter(1)
    events_before_batch = _counter(2)
    bad_times = _counter(3)
    first_bad_time = _counter(4)

    def __init__(self, lane_class: type, path: Path, run_id: str, vantage: str | None, batch_events: int,
                 limits: Limits) -> None:
        dirty: dict[tuple[int, str | None], None] = {}
        self.lane = lane_class(dirty, limits.max_record_bytes, limits.max_nesting_depth, max(1, batch_events))
        self.lane_trace: Trace | None = None  # the trace whose events the lane reads
        super().__init__(path, run_id, vantage, batch_events, limits)
        self.dirty = dirty  # the lane adds the connections that get their first event of a batch
        core = sys.modules.get(lane_class.__module__)
        if hasattr(core, "plausibility_packets"):  # a core built before them: the checks stay in polars
            self.checks.compiled = core

    def _new_connection(self, key: tuple[int, str | None], **fields: Any) -> TraceConnection:
        p = fields["profile"]
        cid = self.lane.register(key, key[0], key[1], fields["vantage"], p.time_to_ms, p.rtt_to_ms, p.ack_delay,
                                 p.received_time_from_datagram, p.header_length_is_packet_size,
                                 p.missing_ack_delay_is_zero)
        return LaneConnection(self.lane, cid, **fields)

    def _merged(self) -> list[Merged]:
        lane = self.lane
        return [LaneMerged(PACKET_DTYPES, lane, 0), LaneMerged(FRAME_DTYPES, lane, 1),
                LaneMerged(METRIC_DTYPES, lane, 2)]

    def _share_trace(self, trace: Trace | None) -> None:
        """Tell the lane the trace of the events that follow (none: it hands them all back)."""
        if trace is None or trace.event_fields is not None:  # events as lists: the Python reader's
            self.lane_trace = None
            self.lane.set_trace()
            return
        self.lane_trace = trace
        conn = trace.conn
        self.lane.set_trace(
            trace.index,
            trace.group_id,
            trace.group_is_connection,
            trace.time_format == "delta",
            trace.last_t,
            conn.cid if conn is not None else None,  # type: ignore[attr-defined]  # a lane connection has cid
        )

    def _read_sequence(self, container: str) -> Iterator[QlogBatch]:
        trace: Trace | None = None
        traces = 0
        limit = self.batch_events
        for value in self._lane_records(container):
            if value is _FLUSH_NOW:
                yield self._flush(final=False)
                continue
            if value.__class__ is Damage or value.__class__ is Joined:
                self._damaged_record(value)
                continue
            if is_header_record(value):
                trace = self._header_trace(traces, value)
                traces += 1
                self._share_trace(trace)
                continue
            if trace is None:
                trace = self._headless_trace(traces)
                traces += 1
            if self.lane_trace is trace:
                trace.last_t = self.lane.last_t  # the lane's events moved it (time_format "delta")
            self._event(trace, value)
            self._share_trace(trace)
            if self.pending >= limit:
                yield self._flush(final=False)
        if traces == 0:
            self.issue("error", f"{self.path}: no qlog records found")

    def _lane_records(self, container: str) -> Iterator[Any]:
        """The records the lane hands back, as `records.iter_seq` yields them, and _FLUSH_NOW when a batch is full."""
        lane, limits = self.lane, self.limits
        lane.start(separator(self.path, container, limits) == b"\n")
        max_depth = limits.max_nesting_depth
        with open_input(self.path, limits) as f:
            try:
                while True:
                    stop = lane.step()
                    code = stop[0]
                    if code == _NEED:
                        lane.feed(f.read(CHUNK))
                    elif code == _RECORD:
                        _, offset, number, part, last = stop
                        yield from parse_records(part, offset, number, last, max_depth)
                    elif code == _FLUSH:
                        yield _FLUSH_NOW
                    elif code == _TOO_LONG:
                        _, offset, number, length = stop
                        yield too_long(offset, number, length, limits)
                    else:
                        return
            except STREAM_ERRORS as exc:
                yield unreadable(lane.next_offset, lane.number, exc)
