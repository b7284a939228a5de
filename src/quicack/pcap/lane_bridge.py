"""The bridge to the compiled engine's pcap reader (`quicack_core.PcapLane`): which flows the lane may decode itself
(their keys, connection ID lengths and transport parameters are known, nothing in their headers is new), opening a
classic pcap file for it, and reading through it, the datagrams it hands back going to the capture decoder in file
order.

`LaneBridge` is a part of `quicack.pcap.decode.CaptureDecoder`, which calls `_init_lane` in its constructor.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from quicack.reading.compressed import CorruptCompressedData
from quicack.reading.limits import DEFAULT_LIMITS, InputLimitExceeded, Limits

from .capture_file import (
    PCAP_MAGIC_NS_LE,
    PCAP_MAGIC_US_LE,
    PCAPNG_SHB,
    LinkRecord,
    ReadIssue,
    TlsKeylogSecrets,
    UdpDatagram,
    link_to_udp,
    open_capture,
    read_udp,
    unreadable_message,
)
from .connection import C2S, S2C, Connection, Endpoint
from .ip_fragments import FragmentReassembly
from .tcp import TcpSegment
from .versions import quic_version

if TYPE_CHECKING:
    from .columns import CaptureBatch
    from .decode import CaptureDecoder
    from .decoder_engine import Engine
    from .flows import Flow

ONE_RTT_C2S, ONE_RTT_S2C = ("1rtt", C2S), ("1rtt", S2C)  # keys of Connection.keys
INITIAL_C2S, INITIAL_S2C, HANDSHAKE_C2S, HANDSHAKE_S2C = (
    ("initial", C2S), ("initial", S2C), ("handshake", C2S), ("handshake", S2C)
)
# as read_udp: a damaged gzip/zstd stream, or a decompression limit that tripped (quicack.reading.compressed)
READ_ERRORS = (OSError, EOFError, ValueError, CorruptCompressedData, InputLimitExceeded)


class LaneBridge:
    """What the decoder tells the lane, flow by flow (see the module's docstring)."""

    # The decoder's, of which this is a part (quicack.pcap.decode.CaptureDecoder, quicack.pcap.flows.FlowTracking)
    engine: Engine
    flows: dict[Flow, tuple[Connection, str]]
    lane: Any  # a quicack_core.PcapLane (compiled, untyped), or None

    def _init_lane(self) -> None:
        # The compiled engine's pcap reader, which decodes the 1-RTT datagrams of the flows offered to it.
        self.lane = None
        self.make_keys_early = False
        self.lane_long_headers = False  # whether the lane decodes long header packets too (decode_long)
        self.lane_cut_datagrams = False  # whether it adds the rows of datagrams cut by the snap length too

    def use_lane(self, lane) -> None:
        """Read through `lane` (a quicack_core.PcapLane): it counts datagrams per direction from now on."""
        self.lane = lane
        self.next_datagram_index = lane.next_datagram_index
        # Keys made before their space's first packet let the lane decode that packet too (Connection.make_keys_early)
        self.make_keys_early = hasattr(self.engine.packet_keys, "used")
        self.lane_long_headers = getattr(lane, "LONG_HEADERS", False)
        self.lane_cut_datagrams = getattr(lane, "CUT_DATAGRAMS", False)
        tcp_rows = getattr(cast("CaptureDecoder", self).tcp, "core", None)
        if tcp_rows is not None and hasattr(type(lane), "tcp_rows"):
            lane.tcp_rows = tcp_rows  # the lane adds the TCP segments it reads to the decoder's rows itself
        else:
            _read_tcp_segments(lane)

    def _offer_to_lane(self, connection: Connection) -> None:
        """Let the lane decode the 1-RTT datagrams of the connection's flows whose keys, receiver's connection ID
        length and sender's transport parameters are known (and only those: whatever changes them comes here)."""
        keys, client, server = connection.keys, connection.client, connection.server
        if self.make_keys_early and (
            connection.early_keys or ONE_RTT_C2S not in keys or ONE_RTT_S2C not in keys
            or HANDSHAKE_C2S not in keys or HANDSHAKE_S2C not in keys
        ):  # fmt: skip
            connection.make_keys_early()
        state = (
            len(connection.flow_keys), keys.get(ONE_RTT_C2S), keys.get(ONE_RTT_S2C), client.cid_length,
            server.cid_length, client.transport_parameters is None, server.transport_parameters is None,
            connection.version, keys.get(INITIAL_C2S), keys.get(INITIAL_S2C), keys.get(HANDSHAKE_C2S),
            keys.get(HANDSHAKE_S2C), client.scid, server.scid, connection.client_scid,
        )  # fmt: skip
        if state == connection.lane_state:
            return  # nothing the lane depends on changed since the last offer
        connection.lane_state = state
        lane = self.lane
        for key in connection.flow_keys:
            direction = self.flows[key][1]
            one_rtt_keys = connection.keys.get(("1rtt", direction))
            cid_length = connection.receiver(direction).cid_length
            sender = connection.sender(direction)
            if one_rtt_keys is not None and cid_length is not None and sender.transport_parameters is not None:
                lane.register(
                    *key, connection, connection.odcid, direction, connection.time_origin_ns, cid_length, one_rtt_keys,
                    connection.packet_numbers, sender, **self._long_header_keys(connection, direction, sender),
                    **self._cut_datagrams(connection),
                )  # fmt: skip
            else:
                lane.unregister(*key)

    def _long_header_keys(self, connection: Connection, direction: str, sender: Endpoint) -> dict:
        """What the lane needs to decode the flow's long header packets too (quicack_core's `decode_long`): the
        connection's version, the Initial and Handshake keys, and the sender's Source Connection ID, with which
        `_add_long_header_packet` learns nothing new and `_starts_another_connection` sees no new connection.
        Without them (or with a core before it) the lane leaves long headers to this decoder."""
        initial = connection.keys.get(("initial", direction))
        scid = sender.scid
        if not self.lane_long_headers or initial is None or scid is None or sender.cid_length is None:
            return {}
        if scid and scid not in connection.cids:
            return {}
        if direction == C2S and connection.client_scid is not None and scid != connection.client_scid:
            return {}
        return {
            "version": connection.version, "initial": initial,
            "handshake": connection.keys.get(("handshake", direction)), "scid": scid,
        }  # fmt: skip

    def _cut_datagrams(self, connection: Connection) -> dict:
        """Whether the lane may add a datagram cut by the snap length inside its first (short header) packet as
        `decode._add_short_header_packet` would: only for a version read and not tentative, so that the packet is
        never one of a version refuted later (`Connection.version_refuted`); `connection.version` is part of the
        lane state, so a change re-registers the flow."""
        if not self.lane_cut_datagrams:
            return {}
        version = quic_version(connection.version)
        return {"cut_datagrams": version.supported and not version.tentative}

    def decode_through_lane(self, batch_rows: int, check_every: int) -> Iterator[CaptureBatch]:
        """Let the lane decode what it can and hand the rest to the decoder in file order, as `decode._decode_items`
        would."""
        decoder = cast("CaptureDecoder", self)  # the CaptureDecoder this is a part of
        lane, issues = decoder.lane, decoder.issues
        address_names: dict[bytes, str] = {}
        fragments = FragmentReassembly()  # the lane hands IP fragments back as records: reassembled here
        datagrams = 0
        while True:
            decoded, item = lane.next(decoder.rows, check_every - datagrams % check_every)
            kind = item[0] if type(item) is tuple else item
            if kind == "event":  # a datagram the lane decoded, with CRYPTO frames, new connection IDs or bad frames
                _, connection, direction, packet_number, record, walk = item
                decoder.after_walk(connection, direction, "1rtt", packet_number, record, walk)
                decoder._offer_to_lane(connection)
            elif kind == "events":  # the same for a datagram of long header packets: those packets in order
                _, connection, direction, record, walks = item
                for packet_type, packet_number, walk in walks:
                    decoder.after_walk(connection, direction, packet_type, packet_number, record, walk)
                decoder._offer_to_lane(connection)
            elif kind == "tcp":  # a TCP segment the lane read (`tcp.tcp_segment`'s twin)
                decoder.tcp.add(TcpSegment(*item[1:]))
                continue
            elif kind == "cut":  # a datagram cut by the snap length that the lane added: its issue
                if decoder.note_cut_datagrams(item[1]):
                    lane.cut_quiet = True  # examples enough: the lane counts the rest itself
            datagrams += decoded
            if decoded and not datagrams % check_every and decoder.batch_ready(batch_rows):
                yield decoder.take_batch()
            if kind is None:
                if quiet_cuts := getattr(lane, "cut_count", 0):
                    decoder.note_cut_datagrams(None, quiet_cuts)
                for issue in fragments.finish():
                    issues.add(issue.severity, issue.message, issue.record_number)
                return
            if kind == "datagram":
                datagram = UdpDatagram(*item[1:])
            elif kind == "record":
                converted = link_to_udp(LinkRecord(*item[1:]), address_names, fragments)
                for issue in fragments.take_issues() if fragments.issues else ():
                    issues.add(issue.severity, issue.message, issue.record_number)
                if converted is None:
                    continue
                if isinstance(converted, TcpSegment):
                    decoder.tcp.add(converted)
                    continue
                if not isinstance(converted, UdpDatagram):
                    issues.add(converted.severity, converted.message, converted.record_number)
                    continue
                datagram = converted
            elif kind == "issue":
                issues.add("error", item[2], item[1])
                continue
            elif kind == "secrets":  # a pcapng Decryption Secrets Block's key log, as `_decode_items` takes it
                source = f"{Path(decoder.path).name} (decryption secrets block)"
                decoder.keylog.add_text(item[1].decode("utf-8", "replace"), source)
                continue
            elif kind == "error":
                error = item[1]
                if not isinstance(error, READ_ERRORS):
                    raise error
                # the last record read, as read_udp names it (a core before it: none)
                issues.add("error", unreadable_message(error), item[2] if len(item) > 2 else None)
                continue
            else:
                continue  # "budget", "event", "events", "cut": nothing more to do
            if decoder.add_counted(datagram):
                datagrams += 1
                if not datagrams % check_every and decoder.batch_ready(batch_rows):
                    yield decoder.take_batch()


def _read_tcp_segments(lane) -> None:
    """Let the lane read plain TCP segments itself, where it can (a core before it hands them back as records)."""
    if hasattr(type(lane), "tcp_segments"):
        lane.tcp_segments = True


def open_lane(path: Path, engine: Engine, limits: Limits):
    """(open stream, quicack_core.PcapLane) for a classic pcap or a pcapng file (plain, gzip, zstd), else None: an
    empty, short or unreadable file, or pcapng with a core built before it reads pcapng, go through `read_udp`,
    which reports what is wrong with them."""
    try:
        stream = open_capture(path, limits)
    except READ_ERRORS:
        return None
    try:
        head = stream.read(4)
        pcapng = len(head) == 4 and int.from_bytes(head, "little") == PCAPNG_SHB
        if pcapng and getattr(engine.pcap_lane, "PCAPNG", False):
            return _lane(stream, head, path, engine, limits)  # its first 4 bytes, as read_pcapng takes them
        head += stream.read(20)
    except READ_ERRORS:  # damaged at once: read_udp reports it
        stream.close()
        return None
    magics = {int.from_bytes(head[:4], "little"), int.from_bytes(head[:4], "big")} if len(head) == 24 else set()
    if not magics & {PCAP_MAGIC_US_LE, PCAP_MAGIC_NS_LE}:
        stream.close()
        return None
    return _lane(stream, head, path, engine, limits)


def _lane(stream, head: bytes, path: Path, engine: Engine, limits: Limits):
    max_record_bytes = min(limits.max_record_bytes, 0xFFFF_FFFF)
    if type(stream) is io.BufferedReader and path.is_file():  # plain file (not a pipe): the lane reads it itself
        try:
            return stream, engine.pcap_lane(stream, head, max_record_bytes, path)
        except (OSError, TypeError):  # TypeError: a core older than the `path` argument
            pass
    return stream, engine.pcap_lane(stream, head, max_record_bytes)


def read_udp_through_lane(
    path: Path, limits: Limits = DEFAULT_LIMITS, engine: Engine | None = None
) -> Iterator[UdpDatagram | TcpSegment | ReadIssue | TlsKeylogSecrets]:
    """`capture_file.read_udp`'s items, the same in file order, read by the compiled lane (no flow registered: every
    datagram comes back) when the engine has one — about 40 % less CPU on a large pcapng —, else `read_udp` itself.
    For passes that want datagrams, not rows (`quicack.scan.identify`)."""
    from .decoder_engine import select_engine

    engine = engine or select_engine()
    opened = open_lane(path, engine, limits) if engine.pcap_lane is not None else None
    if opened is None:
        yield from read_udp(path, limits)
        return
    stream, lane = opened
    _read_tcp_segments(lane)
    rows, fragments = engine.row_buffers(), FragmentReassembly()
    names: dict[bytes, str] = {}
    number = None
    with stream:
        try:
            while True:
                _, item = lane.next(rows, 1 << 62)
                if item is None:
                    break
                kind = item[0]
                if kind == "datagram":
                    number = item[1]
                    yield UdpDatagram(*item[1:])
                elif kind == "tcp":
                    number = item[1]
                    yield TcpSegment(*item[1:])
                elif kind == "record":
                    number = item[1]
                    converted = link_to_udp(LinkRecord(*item[1:]), names, fragments)
                    if converted is not None:
                        yield converted
                    if fragments.issues:
                        yield from fragments.take_issues()
                elif kind == "issue":
                    yield ReadIssue(item[1], "error", item[2])
                elif kind == "secrets":
                    yield TlsKeylogSecrets(item[1].decode("utf-8", "replace"))
                elif kind == "error":
                    raise item[1]
        except (*READ_ERRORS, struct.error) as error:  # read_udp's
            yield ReadIssue(number, "error", unreadable_message(error))
        except Exception as error:  # noqa: BLE001 - bad input must never stop the pipeline (as read_udp)
            yield ReadIssue(
                number,
                "error",
                f"reading stopped by an unexpected {type(error).__name__}: {error}; records before kept "
                "(please report this file)",
            )
        yield from fragments.finish()
