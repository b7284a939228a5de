"""Normalize qlog events of one connection into column buffers of the data contract.

Parsing is per event (a Python loop is unavoidable there); the per-row arithmetic that does not need the
event (time origin, absolute time, direction) is done later with polars expressions when a batch is built.
Times are kept in the trace's own clock, converted to ms, until the connection's time origin (its first
client Initial at this vantage point) is known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

try:
    import orjson

    def _dumps(value: Any) -> str:
        return orjson.dumps(value).decode()
except ImportError:  # pragma: no cover
    import json

    def _dumps(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))


from quicack.frame_types import QLOG_NAMES, WIRE_NAMES

from .profiles import ACK_DELAY_ENCODED, ACK_DELAY_ENCODED_MS, ACK_DELAY_US, Profile

# Event kinds, from the event name without its category (transport:, quic:, recovery:, ...).
PACKET_SENT = 1
PACKET_RECEIVED = 2
METRICS = 3
PARAMETERS = 4
DATAGRAM_RX = 5
ACK_SENT = 6
OTHER = 0

# quicack's own event (quicack.testbed.ack_policy_receiver): why the receiver sent an ACK, logged beside the
# packet_sent that carries it. Matched by its full name: the category is ours.
ACK_SENT_EVENT = "quicack:ack_sent"
_QLOG_PN_SPACE = {"initial": "initial", "handshake": "handshake", "application_data": "appdata"}

_KIND_BY_EVENT = {
    "packet_sent": PACKET_SENT,
    "packet_received": PACKET_RECEIVED,
    "metrics_updated": METRICS,  # recovery:metrics_updated (qlog <= 0.4)
    "recovery_metrics_updated": METRICS,  # quic:recovery_metrics_updated (main schema)
    "metric_update": METRICS,  # mvfst draft-00 (recovery category)
    "congestion_metric_update": METRICS,  # mvfst draft-00 (metric_update category)
    "parameters_set": PARAMETERS,
    "datagrams_received": DATAGRAM_RX,
    "datagram_received": DATAGRAM_RX,
    "udp_datagrams_received": DATAGRAM_RX,
}


def _no_handler(t: float, data: dict[str, Any]) -> None:
    """The handler of kind 0 (no kind): never called, the reader checks the kind first."""


def event_kind(name: str, cache: dict[str, int]) -> int:
    """Kind of a full event name (``transport:packet_sent``, ``quic:packet_sent``, ``PACKET_SENT``, ...)."""
    kind = cache.get(name)
    if kind is None:
        short = name.rsplit(":", 1)[-1].lower()
        kind = ACK_SENT if name.lower() == ACK_SENT_EVENT else _KIND_BY_EVENT.get(short, OTHER)
        cache[name] = kind
    return kind


_PACKET_TYPES = {
    "initial": "initial",
    "handshake": "handshake",
    "0rtt": "0rtt",
    "zerortt": "0rtt",
    "zero_rtt": "0rtt",
    "0rtt_protected": "0rtt",
    "1rtt": "1rtt",
    "onertt": "1rtt",
    "one_rtt": "1rtt",
    "1rtt_protected": "1rtt",
    "short": "1rtt",
    "short_header": "1rtt",
    "retry": "retry",
    "version_negotiation": "version_negotiation",
    "stateless_reset": "stateless_reset",
}
_PACKET_TYPES.update({k.upper(): v for k, v in _PACKET_TYPES.items()})  # "1RTT", "INITIAL", ... without .lower()
_PN_SPACE = {"initial": "initial", "handshake": "handshake", "0rtt": "appdata", "1rtt": "appdata"}
_AEAD_TAG = {"initial": 16, "handshake": 16, "0rtt": 16, "1rtt": 16}  # bytes; other packet types carry none


def packet_type(value: Any) -> str:
    if not isinstance(value, str):
        return "unknown"
    return _PACKET_TYPES.get(value.lower(), "unknown")


_FRAME_TYPES = QLOG_NAMES  # lower-case qlog spelling -> name, from quicack/frame_types.csv
# Frame type numbers, for logs that give a number instead of a name (qlog's UnknownFrame: raw_frame_type in 0.3,
# frame_type_value in 0.4, frame_type_bytes later): those of frame_types.csv (ACK_FREQUENCY 0xaf, IMMEDIATE_ACK 0x1f
# and 0xac of the ack-frequency drafts, DATAGRAM, RFC 9000's)
_FRAME_NUMBERS = WIRE_NAMES
# Where a log gives an unknown frame's type number (qlog's UnknownFrame, by qlog version).
_RAW_TYPE_FIELDS = ("raw_frame_type", "frame_type_value", "frame_type_bytes")
# A frame the reader does not know travels as "unknown:<its name or number>" in the frame_type of its row until the
# batch is built (batch.Merged.finish), where the name goes to raw_frame_type and frame_type becomes 'unknown'.
UNKNOWN_PREFIX = "unknown:"
_NOT_ELICITING = frozenset(("ack", "padding", "connection_close"))


def frame_type(value: Any) -> str:
    if not isinstance(value, str):
        return "unknown"
    return _FRAME_TYPES.get(value.lower(), "unknown")


def unknown_frame_type(frame: dict[str, Any], value: Any) -> str:
    """The frame_type of a frame whose name (`value`) the reader does not know: a known frame after all when the
    log gives its type number, else "unknown:<name as written, or number as 0x..>" ("unknown" when it gives
    neither)."""
    number = None
    for name in _RAW_TYPE_FIELDS:
        number = _int(frame.get(name))
        if number is not None:
            break
    if number is None and isinstance(value, str) and value.lower().startswith("0x"):
        number = _int_or_none(value, 16)
    elif number is None and isinstance(value, int) and not isinstance(value, bool):
        number = value
    if number is not None and number in _FRAME_NUMBERS:
        return _FRAME_NUMBERS[number]
    if isinstance(value, str) and value and value.lower() != "unknown":
        return UNKNOWN_PREFIX + value
    if number is not None and number >= 0:
        return f"{UNKNOWN_PREFIX}0x{number:x}"
    return "unknown"


def _int_or_none(text: str, base: int) -> int | None:
    try:
        return int(text, base)
    except ValueError:
        return None


def _int(value: Any) -> int | None:
    """Integer from a number or a numeric string (mvfst logs stream ids as strings); else None."""
    if value.__class__ is int or value is None:
        return value
    if isinstance(value, bool):
        return None
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):  # OverflowError: "inf", 1e400
        return None


def _num(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def normalize_ranges(acked: Any) -> list[list[int]] | None:
    """qlog acked_ranges ([[low, high]] or [n] singletons, any order) as [[low, high], ...] highest first."""
    if not isinstance(acked, list):
        return None
    out: list[list[int]] = []
    for r in acked:
        if isinstance(r, list) and r:
            lo = _int(r[0])
            hi = _int(r[1]) if len(r) > 1 else lo
        else:
            lo = hi = _int(r)
        if lo is None or hi is None:
            continue
        if lo > hi:
            lo, hi = hi, lo
        out.append([lo, hi])
    if len(out) > 1:
        out.sort(key=lambda x: x[1], reverse=True)
    return out


PACKET_COLUMNS = ("event", "t", "packet_type", "pn_space", "packet_number", "packet_bytes", "aead_tag_bytes",
                  "ack_eliciting", "frames_logged")
FRAME_COLUMNS = ("event", "t", "pn_space", "packet_number", "frame_index", "frame_type", "frame_bytes",
                 "ack_delay_ms", "largest_acked", "first_ack_range", "ack_ranges", "stream_id", "offset", "length",
                 "fin", "ack_reason", "ack_eliciting_since_previous_ack")
METRIC_COLUMNS = ("t", "smoothed_rtt_ms", "rtt_variance_ms", "latest_rtt_ms", "min_rtt_ms", "pto_count",
                  "cwnd_bytes", "bytes_in_flight")


_EMPTY: dict[str, Any] = {}
_NO_REASON = (None, None)
# Default of dict.get that tells an absent key from a null value with one lookup instead of two (the fallback
# key is only read when the first is absent, as with get(a, get(b)), which always evaluates get(b)).
_ABSENT: Any = object()


@dataclass
class TraceConnection:
    """State of one connection (one trace, or one group_id inside a trace) while its events stream by.

    Rows are buffered flat, row after row, each in the order of PACKET_COLUMNS / FRAME_COLUMNS / METRIC_COLUMNS:
    ``extend`` with a tuple literal per row is as cheap as appending the tuple, but the tuple dies at once (it
    comes from the free list and the garbage collector never sees it), and the batch builder takes each column
    as one C-level slice (``flat[j::width]``) instead of a pass over row tuples.
    """

    run_id: str
    group_id: str | None
    vantage: str | None
    implementation: str | None
    dialect: str
    qlog_version: str | None
    profile: Profile
    ref_abs_ns: int | None  # absolute Unix ns of trace time 0, when the log says
    vantage_point_type: str | None = None  # vantage_point.type as the file wrote it (endpoints.vantage_point_type)
    origin_t: float | None = None  # trace time (ms) of the first client Initial at this vantage point
    first_t: float | None = None
    first_packet_t: float | None = None
    events: int = 0
    pending_events: int = 0  # events buffered since the last flush
    local_max_ack_delay_ms: float | None = None
    peer_max_ack_delay_ms: float | None = None
    local_ack_delay_exponent: int | None = None
    peer_ack_delay_exponent: int | None = None
    peer_params_seen: bool = False
    local_params_seen: bool = False
    handshake_confirmed_t: float | None = None
    last_datagram_rx_t: float | None = None
    origin_fallback: str | None = None  # why the origin is not a client Initial, if so
    packets: list[Any] = field(default_factory=list)  # flat rows of PACKET_COLUMNS
    frames: list[Any] = field(default_factory=list)  # flat rows of FRAME_COLUMNS
    metrics: list[Any] = field(default_factory=list)  # flat rows of METRIC_COLUMNS
    # quicack:ack_sent events waiting for the packet_sent that carries their ACK: (pn_space, packet number) ->
    # (reason, ack-eliciting packets since the previous ACK)
    ack_reasons: dict[tuple[str | None, int | None], tuple[Any, Any]] = field(default_factory=dict)
    on: tuple[Callable[[float, dict[str, Any]], None], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.on = self.handlers()

    def take_buffers(self) -> tuple[list[Any], list[Any], list[Any]]:
        out = (self.packets, self.frames, self.metrics)
        self.packets, self.frames, self.metrics = [], [], []
        self.pending_events = 0
        return out

    # -- events -------------------------------------------------------------------------------------------

    def handlers(self) -> tuple[Callable[[float, dict[str, Any]], None], ...]:
        """Handler per event kind (index = kind), each called as ``handler(t, data)`` with ``data`` a dict.

        The reader indexes this tuple instead of calling a dispatching method: one Python call per event
        fewer (the tuple holds bound methods, hence a reference cycle, collected with the connection).
        """
        by_kind: dict[int, Callable[[float, dict[str, Any]], None]] = {
            PACKET_SENT: partial(self.on_packet, True),
            PACKET_RECEIVED: partial(self.on_packet, False),
            METRICS: self.on_metrics,
            PARAMETERS: self.on_parameters,
            DATAGRAM_RX: self.on_datagram_received,
            ACK_SENT: self.on_ack_sent,
        }
        return tuple(by_kind.get(k, _no_handler) for k in range(max(by_kind) + 1))

    def on_datagram_received(self, t: float, data: dict[str, Any]) -> None:
        self.last_datagram_rx_t = t

    def on_ack_sent(self, t: float, data: dict[str, Any]) -> None:
        """quicack:ack_sent: kept until the packet_sent carrying the ACK, whose ACK frame row gets the reason."""
        space = _QLOG_PN_SPACE.get(data.get("packet_number_space", ""))
        reason = data.get("reason")
        self.ack_reasons[(space, _int(data.get("packet_number")))] = (
            reason if reason.__class__ is str else None, _int(data.get("acked_packets")))

    def on_packet(self, sent: bool, t: float, data: dict[str, Any]) -> None:
        """One packet_sent / packet_received event: a packets row and a frames row per logged frame."""
        header = data.get("header")
        if header.__class__ is not dict:
            header = _EMPTY
        pt = header.get("packet_type") or data.get("packet_type") or data.get("type")  # pcap2qlog: data.type
        ptype = _PACKET_TYPES.get(pt) if pt.__class__ is str else None
        if ptype is None:
            ptype = packet_type(pt)
        if sent:
            event = "sent"
        else:
            event = "received"
            if self.profile.received_time_from_datagram and self.last_datagram_rx_t is not None \
                    and self.last_datagram_rx_t <= t:
                # The packet was logged after processing; its datagram arrived at the datagrams_received time.
                t = self.last_datagram_rx_t
        if self.first_packet_t is None:
            self.first_packet_t = t
        if self.origin_t is None and ptype == "initial":
            if (sent and self.vantage == "client") or (not sent and self.vantage == "server"):
                self.origin_t = t
        pn = header.get("packet_number", _ABSENT)
        if pn is _ABSENT:
            pn = data.get("packet_number")
        if pn.__class__ is not int and pn is not None:
            pn = _int(pn)
        raw = data.get("raw")
        size = raw.get("length") if raw.__class__ is dict else None
        if size is None:
            size = header.get("packet_size", _ABSENT)  # picoquic / mvfst
            if size is _ABSENT:
                size = data.get("packet_size")
            if size is None and self.profile.header_length_is_packet_size:
                size = header.get("length")
        if size is not None and size.__class__ is not int:
            size = _int(size)
        space = _PN_SPACE.get(ptype)
        frames = data.get("frames")
        if frames.__class__ is not list:
            self.packets.extend((event, t, ptype, space, pn, size, _AEAD_TAG.get(ptype), None, False))
            return
        eliciting = False
        add_row = self.frames.extend  # one row per call, flat (see the class docstring)
        for i, fr in enumerate(frames):
            if fr.__class__ is not dict:
                continue
            ft = fr.get("frame_type")
            name = _FRAME_TYPES.get(ft) if ft.__class__ is str else None
            if name is None:
                name = frame_type(ft)
            if name == "unknown":  # qlog's own "unknown" (with a type number) too
                name = unknown_frame_type(fr, ft)
            fraw = fr.get("raw")
            nbytes = fraw.get("length") if fraw.__class__ is dict else None
            # Branches in order of frequency: STREAM frames are most of all frames in a transfer.
            if name == "stream" or name == "crypto" or name == "datagram":
                eliciting = True
                length = fr.get("length")
                if length is None:
                    length = fr.get("len")  # mvfst CRYPTO
                    if length is None and fraw.__class__ is dict:
                        length = fraw.get("payload_length")  # main schema RawInfo
                if length.__class__ is not int and length is not None:
                    length = _int(length)
                if name == "stream":
                    sid = fr.get("stream_id", _ABSENT)
                    if sid is _ABSENT:
                        sid = fr.get("id")  # picoquic: "id"
                    if sid.__class__ is not int and sid is not None:
                        sid = _int(sid)  # mvfst logs stream ids as strings
                    offset = fr.get("offset")
                    if offset.__class__ is not int and offset is not None:
                        offset = _int(offset)
                    add_row((event, t, space, pn, i, name, nbytes, None, None, None, None, sid, offset, length,
                            True if fr.get("fin") else False, None, None))
                elif name == "crypto":
                    add_row((event, t, space, pn, i, name, nbytes, None, None, None, None, None,
                            _int(fr.get("offset")), length, None, None, None))
                else:
                    add_row((event, t, space, pn, i, name, nbytes, None, None, None, None, None, None, length,
                            None, None, None))
            elif name == "ack":
                rs = normalize_ranges(fr.get("acked_ranges"))
                la: int | None
                far: int | None
                ranges: str | None
                if rs:
                    top = rs[0]
                    la, far, ranges = top[1], top[1] - top[0], _dumps(rs)
                else:
                    la = far = ranges = None
                why = self.ack_reasons.pop((space, pn), _NO_REASON) if sent and self.ack_reasons else _NO_REASON
                add_row((event, t, space, pn, i, name, nbytes, self._ack_delay_ms(fr.get("ack_delay"), sent),
                        la, far, ranges, None, None, None, None, *why))
            else:
                if name not in _NOT_ELICITING:
                    eliciting = True
                sid = None
                if name == "padding":
                    if nbytes is None:
                        nbytes = fr.get("length", fr.get("payload_length"))
                elif name == "handshake_done":
                    if self.handshake_confirmed_t is None and sent == (self.vantage == "server"):
                        self.handshake_confirmed_t = t
                elif "stream_id" in fr:
                    sid = _int(fr.get("stream_id"))
                add_row((event, t, space, pn, i, name, nbytes, None, None, None, None, sid, None, None, None, None,
                         None))
        self.packets.extend((event, t, ptype, space, pn, size, _AEAD_TAG.get(ptype), eliciting, True))

    def _ack_delay_ms(self, value: Any, sent: bool) -> float | None:
        v = value if value.__class__ is float else _num(value)
        if v is None:
            return 0.0 if value is None and self.profile.missing_ack_delay_is_zero else None
        mode = self.profile.ack_delay
        if mode == ACK_DELAY_US:
            return v / 1000.0
        if mode == ACK_DELAY_ENCODED or mode == ACK_DELAY_ENCODED_MS:
            # The exponent is the ACK sender's: ours for ACKs we send, the peer's for ACKs we receive.
            exp = self.local_ack_delay_exponent if sent else self.peer_ack_delay_exponent
            scaled = v * (1 << (3 if exp is None else exp))
            return scaled if mode == ACK_DELAY_ENCODED_MS else scaled / 1000.0
        return v

    def on_metrics(self, t: float, data: dict[str, Any]) -> None:
        g = data.get
        srtt, var, lat, mn = g("smoothed_rtt"), g("rtt_variance"), g("latest_rtt"), g("min_rtt")
        cwnd = g("congestion_window")
        if cwnd is None:
            cwnd = g("cwnd", g("current_cwnd"))  # picoquic / mvfst names
        pto, bif = g("pto_count"), g("bytes_in_flight")
        if srtt is None and var is None and lat is None and mn is None and cwnd is None and pto is None \
                and bif is None:
            return  # e.g. pacing-only updates carry none of our fields
        scale = self.profile.rtt_to_ms
        if scale == 1.0:
            # Raw values: polars casts numbers (and numeric strings) when the batch is built; anything else is
            # sanitized there (see batch.Merged), which keeps this per-event path short.
            self.metrics.extend((t, srtt, var, lat, mn, pto, cwnd, bif))
            return
        rtts = [_num(v) for v in (srtt, var, lat, mn)]
        self.metrics.extend((t, *(None if v is None else v * scale for v in rtts), _int(pto), _int(cwnd), _int(bif)))

    def on_parameters(self, t: float, data: dict[str, Any]) -> None:
        owner = data.get("owner", data.get("initiator"))
        mad = _num(data.get("max_ack_delay"))
        ade = _int(data.get("ack_delay_exponent"))
        if owner == "remote":
            self.peer_params_seen = True
            if mad is not None:
                self.peer_max_ack_delay_ms = mad
            if ade is not None:
                self.peer_ack_delay_exponent = ade
        elif owner == "local":
            self.local_params_seen = True
            if mad is not None:
                self.local_max_ack_delay_ms = mad
            if ade is not None:
                self.local_ack_delay_exponent = ade
