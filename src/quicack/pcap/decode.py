"""A capture to columnar batches of the `datagrams`, `packets`, `frames`, `tcp_segments` and `ingest_issues` tables.

`decode_capture` streams: it reads one datagram at a time, appends rows to column lists and yields a
`CaptureBatch` of polars frames every `batch_rows` frames, so memory depends on the batch size, not on
the capture. Rows of one datagram are never split across batches.

Byte accounting (checked by the tests on every capture):
    ip_header_bytes + udp_header_bytes + sum(packet_bytes) == IP datagram bytes on the wire, and
    header_bytes + aead_tag_bytes + sum(frame_bytes) == packet_bytes for every decrypted packet.
TCP segments (`pcap.tcp`) go beside the QUIC rows, one `tcp_segments` row each.
Zero bytes after a datagram's last QUIC packet are a row of packet_type 'datagram_padding' (see
DATAGRAM_PADDING), so the first sum holds for padded datagrams too; quic_packets does not count that row.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from quicack.compressed import CorruptCompressedData
from quicack.layout import capture_point
from quicack.limits import DEFAULT_LIMITS, InputLimitExceeded, Limits

from .columns import CaptureBatch, DatagramSeen, assemble_batch
from .connection import C2S, S2C, Connection, Endpoint
from .engine import Engine, select_engine
from .keylog import Keylog, load_keylogs
from .quic import (
    AEAD_TAG_BYTES,
    CryptoError,
    HeaderError,
    LongHeader,
    UnknownVersionError,
    parse_long_header,
)
from .reader import (
    PCAP_MAGIC_NS_LE,
    PCAP_MAGIC_US_LE,
    LinkRecord,
    ReadIssue,
    TlsKeylogSecrets,
    UdpDatagram,
    link_to_udp,
    open_capture,
    read_udp,
)
from .tcp import TcpRows, TcpSegment
from .versions import VERSION_1, VERSION_2, quic_version

PN_SPACE = {"initial": "initial", "handshake": "handshake", "0rtt": "appdata", "1rtt": "appdata"}
# packet_type of the zero bytes some implementations (aioquic) put after the last QUIC packet of a datagram
# (RFC 9000 §12.2 lets a receiver ignore them): one row, decrypted null, no frames, pn_space / header /
# tag null, packet_bytes = the zeros, so the datagram's bytes still add up; not counted in quic_packets.
DATAGRAM_PADDING = "datagram_padding"
DEFAULT_BATCH_ROWS = 32_768
ONE_RTT_C2S, ONE_RTT_S2C = ("1rtt", C2S), ("1rtt", S2C)  # keys of Connection.keys
INITIAL_C2S, INITIAL_S2C, HANDSHAKE_C2S, HANDSHAKE_S2C = (
    ("initial", C2S), ("initial", S2C), ("handshake", C2S), ("handshake", S2C)
)
# An ACK's delay needs its sender's ack_delay_exponent, which the server sends only in EncryptedExtensions,
# after its first Initial ACK. Batches wait for it, up to this many times the batch size.
MAX_DEFERRAL = 8
MAX_ISSUE_EXAMPLES = 3
BATCH_CHECK_DATAGRAMS = 256  # how often to look at the batch size
# Capture time a connection's state is kept after a CONNECTION_CLOSE was seen: the closing and draining periods
# (RFC 9000 §10.2: three PTOs) with a wide margin. Then its keys, flows and connection IDs are dropped, so that a
# capture of a million short connections (a scan) keeps the state of the open ones only.
CLOSED_CONNECTION_LINGER_NS = 30 * 1_000_000_000
GSO_MIN_BYTES = 1500
# no single QUIC packet of the implementations we study is larger on loopback


def find_gso_segment_size(payload: bytes, cid_length: int | None) -> int | None:
    """Segment size of a GSO super-datagram of short header packets, found by where the same DCID recurs.

    Every segment but the last has the same size and starts with a short header carrying the same
    Destination Connection ID, so the smallest offset where that pattern repeats to the end is the size.
    """
    if not cid_length or cid_length < 4:
        return None
    dcid = payload[1 : 1 + cid_length]
    position = payload.find(dcid, 2)
    while position > 0:
        size = position - 1
        if size >= 21 and all(
            not payload[offset] & 0x80 and payload[offset + 1 : offset + 1 + cid_length] == dcid
            for offset in range(size, len(payload), size)
        ):
            return size
        position = payload.find(dcid, position + 1)
    return None


@dataclass
class _Issues:
    """Aggregates repeated problems into one row each, so a broken capture gives a few rows, not millions."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    examples: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def add(self, severity: str, message: str, record: int | None) -> None:
        key = (severity, message)
        self.counts[key] = self.counts.get(key, 0) + 1
        if record is not None:
            examples = self.examples.setdefault(key, [])
            if len(examples) < MAX_ISSUE_EXAMPLES:
                examples.append(record)

    def rows(self) -> list[tuple[str, str]]:
        out = []
        for (severity, message), count in self.counts.items():
            examples = self.examples.get((severity, message))
            where = (
                f" (capture frame {', '.join(map(str, examples))}{', ...' if count > len(examples) else ''})"
                if examples
                else ""
            )
            times = f" [{count} times]" if count > 1 else ""
            out.append((severity, f"{message}{times}{where}"))
        return out


class CaptureDecoder:
    """Stateful decoder of one capture; feed datagrams in file order, take batches."""

    def __init__(
        self, keylog: Keylog, run_id: str, vantage: str, path: str, engine: Engine | None = None,
        closed_linger_ns: int = CLOSED_CONNECTION_LINGER_NS,
    ) -> None:  # fmt: skip
        self.engine = engine or select_engine()
        self.closed_linger_ns = closed_linger_ns
        self.keylog = keylog
        self.run_id = run_id
        self.vantage = vantage
        self.path = path
        self.flows: dict[tuple[str, int, str, int], tuple[Connection, str]] = {}
        self.connections_by_cid: dict[bytes, Connection] = {}
        # Connections by the name their rows carry (connection_odcid), and those seen closing, with the capture time.
        self.connections_by_odcid: dict[str, Connection] = {}
        self.closing: dict[str, tuple[Connection, int]] = {}
        self.evicted_connections = 0
        self.connection_count = 0
        self.datagram_counts = {C2S: 0, S2C: 0}
        self.issues = _Issues()
        # packets of versions this decoder does not read, by version: one issue each at the end (versions.py)
        self.unsupported_packets: dict[int, int] = {}
        self.tentative_versions: set[int] = set()  # drafts before -22 whose packets authenticated as draft-22's
        self.tcp = TcpRows()
        # The compiled engine's pcap reader, which decodes the 1-RTT datagrams of the flows offered to it.
        self.lane = None
        self.make_keys_early = False
        self.lane_long_headers = False  # whether the lane decodes long header packets too (decode_long)
        # quicack_core's RowBuffers.decrypt_and_add (None for the Python engine, or a core built before it)
        self.decrypt_and_add = getattr(self.engine.row_buffers, "decrypt_and_add", None)
        self._reset_columns()

    def use_lane(self, lane) -> None:
        """Read through `lane` (a quicack_core.PcapLane): it counts datagrams per direction from now on."""
        self.lane = lane
        self.next_datagram_index = lane.next_datagram_index
        # Keys made before their space's first packet let the lane decode that packet too (Connection.make_keys_early)
        self.make_keys_early = hasattr(self.engine.packet_keys, "used")
        self.lane_long_headers = getattr(lane, "LONG_HEADERS", False)

    def next_datagram_index(self, direction: str) -> int:
        self.datagram_counts[direction] += 1
        return self.datagram_counts[direction]

    def _reset_columns(self) -> None:
        self.rows = self.engine.row_buffers()
        # ids of endpoints whose ACKs are in this batch without their ack_delay_exponent
        self.waiting_for_parameters: set[int] = set()

    # ----------------------------------------------------------------------------------------------
    # datagrams

    def add_datagram(self, datagram: UdpDatagram) -> None:
        """Add the rows of one datagram, all or nothing: an internal error rolls its rows back and re-raises."""
        lengths = self.rows.lengths()
        try:
            self._add_datagram(datagram)
        except Exception:
            self.rows.truncate(lengths)
            raise

    def _add_datagram(self, datagram: UdpDatagram) -> None:
        flow = self.flows.get((datagram.src, datagram.src_port, datagram.dst, datagram.dst_port))
        if flow is not None and datagram.payload[:1] and datagram.payload[0] & 0x80 and self._starts_another_connection(flow, datagram):
            flow = None
        if flow is None:
            flow = self._new_flow(datagram)
            if flow is None:
                self.issues.add(
                    "warning",
                    "UDP datagrams that are not QUIC (or of a connection whose start is not in the capture) were skipped",
                    datagram.record_number,
                )
                return
        connection, direction = flow
        if self.lane is not None:
            try:
                self._add_flow_datagram(connection, direction, datagram)
            finally:
                self._offer_to_lane(connection)
            return
        self._add_flow_datagram(connection, direction, datagram)

    def _starts_another_connection(self, flow: tuple[Connection, str], datagram: UdpDatagram) -> bool:
        """A client Initial on a known 4-tuple whose Source Connection ID is not the connection's: the client's port
        was reused for a new connection (a scan of a million targets from one address reuses every port)."""
        connection, direction = flow
        if direction != C2S:
            return False
        payload = datagram.payload
        if connection.client_scid is None and not quic_version(connection.version).supported:
            # after a Version Negotiation the client may try again from the same port, in a version we read
            try:
                return parse_long_header(payload, 0, datagram.udp_payload_bytes).packet_type == "initial"
            except HeaderError:
                return False
        if connection.client_scid is None:
            return False
        # Only an Initial can start one (its type bits: 0 in version 1 and the drafts, 1 in version 2). Most client
        # datagrams of a handshake (Handshake packets) are not, and need no parse.
        types = quic_version(int.from_bytes(payload[1:5], "big")).long_types
        if types[(payload[0] >> 4) & 0x03] != "initial":
            return False
        try:
            header = parse_long_header(datagram.payload, 0, datagram.udp_payload_bytes)
        except (HeaderError, UnknownVersionError):
            return False
        return header.packet_type == "initial" and header.scid != connection.client_scid

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
            keys = connection.keys.get(("1rtt", direction))
            cid_length = connection.receiver(direction).cid_length
            sender = connection.sender(direction)
            if keys is not None and cid_length is not None and sender.transport_parameters is not None:
                lane.register(
                    *key, connection, connection.odcid, direction, connection.time_origin_ns, cid_length, keys,
                    connection.packet_numbers, sender, **self._long_header_keys(connection, direction, sender),
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

    def _add_flow_datagram(self, connection: Connection, direction: str, datagram: UdpDatagram) -> None:
        payload = datagram.payload
        if len(payload) > GSO_MIN_BYTES and not payload[0] & 0x80 and len(payload) == datagram.udp_payload_bytes:
            segment = find_gso_segment_size(payload, connection.receiver(direction).cid_length)
            if segment:
                # A UDP GSO super-datagram captured before segmentation (loopback): one row per real datagram.
                self.issues.add(
                    "warning",
                    f"UDP GSO super-datagrams split into segments (segment size {segment})",
                    datagram.record_number,
                )
                for start in range(0, len(payload), segment):
                    piece = payload[start : start + segment]
                    self._add_one_datagram(
                        connection, direction, replace(datagram, payload=piece, udp_payload_bytes=len(piece))
                    )
                return
        self._add_one_datagram(connection, direction, datagram)

    def _add_one_datagram(self, connection: Connection, direction: str, datagram: UdpDatagram) -> None:
        payload = datagram.payload
        datagram_index = self.next_datagram_index(direction)
        time_abs_ns = datagram.time_abs_ns
        wire_bytes = datagram.udp_payload_bytes
        if len(payload) < wire_bytes:
            self.issues.add(
                "warning",
                "datagram truncated by the capture (snap length): the cut packet is not decrypted",
                datagram.record_number,
            )
        rows = self.rows
        seen = DatagramSeen(
            row=rows.datagram_count(),
            connection_odcid=connection.odcid,
            direction=direction,
            datagram_index=datagram_index,
            time_ms=(time_abs_ns - connection.time_origin_ns) / 1e6,
            time_abs_ns=time_abs_ns,
            record=datagram.record_number,
        )
        packets_before = rows.packet_count()
        self._add_packets(connection, seen, payload, wire_bytes)
        quic_packets = rows.packet_count() - packets_before
        if quic_packets and rows.last_packet_type() == DATAGRAM_PADDING:  # padding is not a QUIC packet
            quic_packets -= 1
        rows.add_datagram(
            seen.connection_odcid, direction, datagram_index, seen.time_ms, time_abs_ns, datagram.ip_header_bytes,
            wire_bytes, quic_packets,
        )  # fmt: skip

    def _new_flow(self, datagram: UdpDatagram) -> tuple[Connection, str] | None:
        """Recognise QUIC on a flow not seen before: a long header of a known version, or a known connection ID."""
        payload = datagram.payload
        if not payload:
            return None
        forward = (datagram.src, datagram.src_port, datagram.dst, datagram.dst_port)
        backward = (datagram.dst, datagram.dst_port, datagram.src, datagram.src_port)
        if payload[0] & 0x80:
            try:
                header = parse_long_header(payload, 0, datagram.udp_payload_bytes)
            except UnknownVersionError as unknown:
                # A client trying a version the server may not support (it answers with Version Negotiation):
                # keep the flow so that both show up, as 'unknown' and 'version_negotiation' packets.
                header = LongHeader("unknown", unknown.version, unknown.dcid, unknown.scid, 0, len(payload))
            except HeaderError:
                return None
            if header.packet_type == "version_negotiation":
                return None  # only meaningful on a flow we already know
            known = self.connections_by_cid.get(header.dcid) if header.dcid else None
            if known is not None:  # the connection moved to a new address (migration, NAT rebinding)
                direction = C2S if known.server.cid_length == len(header.dcid) else S2C
                return self._register_flow(known, direction, forward, backward)
            if header.packet_type in ("initial", "0rtt", "unknown"):  # only clients send these first
                client, server = (datagram.src, datagram.src_port), (datagram.dst, datagram.dst_port)
            else:
                # Capture started after the client's Initial: guess the client by its (ephemeral, higher) port.
                client_is_src = datagram.src_port > datagram.dst_port
                self.issues.add(
                    "warning",
                    "connection seen without its first Initial: client guessed from the ports, times are relative to the first packet",
                    datagram.record_number,
                )
                client = (datagram.src, datagram.src_port) if client_is_src else (datagram.dst, datagram.dst_port)
                server = (datagram.dst, datagram.dst_port) if client_is_src else (datagram.src, datagram.src_port)
            self.connection_count += 1
            connection = Connection(
                number=self.connection_count,
                client=Endpoint(client),
                server=Endpoint(server),
                version=header.version,
                initial_secret_dcid=header.dcid,
                time_origin_ns=datagram.time_abs_ns,
                keylog=self.keylog,
                odcid=header.dcid.hex(),
                keys_class=self.engine.packet_keys,
                crypto_stream_class=self.engine.crypto_stream,
                packet_numbers=self.engine.packet_numbers(),
            )
            connection.cids.add(header.dcid)
            if header.dcid:
                self.connections_by_cid[header.dcid] = connection
            if header.packet_type == "initial" and client == (datagram.src, datagram.src_port):
                connection.client_scid = header.scid
            self.connections_by_odcid[connection.odcid] = connection
            direction = C2S if client == (datagram.src, datagram.src_port) else S2C
            return self._register_flow(connection, direction, forward, backward)
        # Short header on an unknown flow: QUIC only if its DCID is one we know.
        for connection in {id(c): c for c in self.connections_by_cid.values()}.values():
            for direction in (C2S, S2C):
                length = connection.receiver(direction).cid_length
                if length and payload[1 : 1 + length] in connection.cids:
                    return self._register_flow(connection, direction, forward, backward)
        return None

    def _register_flow(self, connection: Connection, direction: str, forward, backward) -> tuple[Connection, str]:
        self.flows[forward] = (connection, direction)
        self.flows[backward] = (connection, S2C if direction == C2S else C2S)
        connection.flow_keys += [forward, backward]
        return connection, direction

    # ----------------------------------------------------------------------------------------------
    # packets

    def _add_packets(self, connection: Connection, seen: DatagramSeen, payload: bytes, wire_bytes: int) -> None:
        position = 0
        captured = len(payload)
        direction = seen.direction
        while position < wire_bytes:
            if position >= captured:
                self._add_opaque_packet(seen, "unknown", None, wire_bytes - position)
                return
            first = payload[position]
            if first & 0x80:
                try:
                    header = parse_long_header(payload, position, wire_bytes)
                except UnknownVersionError as unsupported:
                    # its Length field (if it has one) is unknown: the rest of the datagram is this packet
                    self._add_unsupported_packet(seen, unsupported.version, "unknown", None, wire_bytes - position)
                    return
                except HeaderError as error:
                    self.issues.add("warning", f"{direction} bytes that are not a QUIC packet: {error}", seen.record)
                    self._add_opaque_packet(seen, "unknown", None, wire_bytes - position)
                    return
                self._add_long_header_packet(connection, seen, header, payload, position)
                position += header.packet_bytes
            elif position and captured == wire_bytes and not any(payload[position:]):
                # Zeros after the last packet: datagram padding outside any QUIC packet (aioquic pads datagrams
                # carrying an Initial to 1200 bytes this way). A short header always has the fixed bit (0x40)
                # set unless greased (RFC 9287), and a greased 1-RTT packet is not all zeros, so this cannot
                # swallow a packet. Only after a packet (`position`), only when the capture holds all the bytes.
                self.rows.add_packet(seen.row, DATAGRAM_PADDING, wire_bytes - position, decrypted=None)
                return
            else:
                self._add_short_header_packet(connection, seen, payload, position, wire_bytes)
                return

    def _add_long_header_packet(
        self, connection: Connection, seen: DatagramSeen, header: LongHeader, payload: bytes, start: int
    ) -> None:
        packet_type = header.packet_type
        packets = self.rows
        if packet_type == "version_negotiation":
            packets.add_packet(
                seen.row, packet_type, header.packet_bytes, header_bytes=header.packet_bytes, aead_tag_bytes=0,
                ack_eliciting=False, decrypted=True,
            )  # fmt: skip
            return
        if packet_type == "retry":
            connection.on_retry(header.scid)
            self.connections_by_cid[header.scid] = connection
            tag = quic_version(header.version).retry_tag_bytes  # none up to draft-24
            packets.add_packet(
                seen.row, packet_type, header.packet_bytes, header_bytes=header.packet_bytes - tag,
                aead_tag_bytes=tag, ack_eliciting=False, decrypted=True,
            )  # fmt: skip
            return
        # Learn the connection IDs: a long header carries the sender's own ID as its Source Connection ID.
        sender = connection.sender(seen.direction)
        if sender.cid_length is None or (header.scid and header.scid not in connection.cids):
            sender.cid_length = len(header.scid)
            connection.cids.add(header.scid)
            if header.scid:
                self.connections_by_cid[header.scid] = connection
        sender.scid = header.scid
        if header.version in (VERSION_1, VERSION_2) and header.version != connection.version:
            connection.version = header.version  # compatible version negotiation (RFC 9368)
        self._decrypt_and_walk(
            connection, seen, packet_type, payload, start, header.pn_offset, start + header.packet_bytes,
            header.packet_bytes, short=False,
        )  # fmt: skip

    def _add_short_header_packet(
        self, connection: Connection, seen: DatagramSeen, payload: bytes, start: int, wire_bytes: int
    ) -> None:
        if not quic_version(connection.version).supported or connection.version_refuted:
            self._add_unsupported_packet(seen, connection.version, "1rtt", "appdata", wire_bytes - start)
            return
        cid_length = connection.receiver(seen.direction).cid_length
        if cid_length is None:
            self.issues.add(
                "warning",
                f"{seen.direction} short header packet before any long header: connection ID length unknown, not decrypted",
                seen.record,
            )
            self._add_opaque_packet(seen, "1rtt", "appdata", wire_bytes - start)
            return
        self._decrypt_and_walk(
            connection, seen, "1rtt", payload, start, 1 + cid_length, len(payload), wire_bytes - start, short=True
        )

    def _decrypt_and_walk(
        self,
        connection: Connection,
        seen: DatagramSeen,
        packet_type: str,
        payload: bytes,
        start: int,
        pn_offset: int,
        end: int,
        packet_bytes: int,
        *,
        short: bool,
    ) -> None:
        pn_space = PN_SPACE[packet_type]
        if start + packet_bytes > len(payload):
            # Cut by the capture's snap length (reported once per datagram): there is nothing to
            # decrypt, and trying would blame the keys for what the capture left out.
            self._add_opaque_packet(seen, packet_type, pn_space, packet_bytes)
            return
        if connection.version_refuted:
            self._add_unsupported_packet(seen, connection.version, packet_type, pn_space, packet_bytes)
            return
        direction = seen.direction
        if self.decrypt_and_add is not None:
            keys = connection.packet_keys(packet_type, direction)
            if keys is not None:
                # The compiled engine: decrypt, packet numbers, frames and the packet's row in one call.
                try:
                    packet_number, walk = self.rows.decrypt_and_add(
                        keys, connection.packet_numbers, direction, packet_type, pn_space, payload, start, pn_offset,
                        end, short, seen.row, packet_bytes, connection.sender(direction),
                    )  # fmt: skip
                except ValueError:
                    self._decryption_failed(connection, seen, packet_type, pn_space, packet_bytes)
                    return
                self._decrypted(connection)
                self.after_walk(connection, direction, packet_type, packet_number, seen.record, walk)
                return
        expected = connection.packet_numbers.largest(direction, pn_space) + 1
        keys = connection.packet_keys(packet_type, direction)
        packet = None
        try:
            if keys is not None:
                packet = keys.decrypt(payload, start, pn_offset, end, expected, short)
            elif packet_type != "initial":
                packet = connection.decrypt_with_keylog(
                    packet_type, direction, payload, start, pn_offset, end, expected, short
                )
                if packet is None:
                    self._report_missing_keys(connection, packet_type, direction, seen.record)
        except (CryptoError, ValueError):
            self._decryption_failed(connection, seen, packet_type, pn_space, packet_bytes)
            return
        if packet is None:
            self._add_opaque_packet(seen, packet_type, pn_space, packet_bytes)
            return
        self._decrypted(connection)
        packet_number = packet.packet_number
        if packet_number >= expected:
            connection.packet_numbers.update(direction, pn_space, packet_number)
        walk = self.rows.walk(packet.payload)
        count, ack_eliciting, _, _, unknown, _ = walk
        sender = connection.sender(direction)
        self.after_walk(connection, direction, packet_type, packet_number, seen.record, walk)
        self.rows.add_packet(
            seen.row, packet_type, packet_bytes, pn_space=pn_space, packet_number=packet_number,
            header_bytes=packet.header_bytes, aead_tag_bytes=AEAD_TAG_BYTES, ack_eliciting=ack_eliciting,
            decrypted=True, frames_complete=unknown is None, frame_count=count, sender=sender,
        )  # fmt: skip

    def _decryption_failed(
        self, connection: Connection, seen: DatagramSeen, packet_type: str, pn_space: str, packet_bytes: int
    ) -> None:
        """A packet whose keys did not open it: corrupt or wrong keys, or (a draft before -22 read tentatively, before
        any of its packets authenticated) a version not read after all."""
        if quic_version(connection.version).tentative and not connection.version_confirmed:
            connection.version_refuted = True
            self._add_unsupported_packet(seen, connection.version, packet_type, pn_space, packet_bytes)
            return
        self.issues.add(
            "warning", f"{seen.direction} {packet_type} packet failed to decrypt (corrupt, or wrong keys)", seen.record
        )
        self._add_opaque_packet(seen, packet_type, pn_space, packet_bytes)

    def _decrypted(self, connection: Connection) -> None:
        if not connection.version_confirmed and quic_version(connection.version).tentative:
            connection.version_confirmed = True
            self.tentative_versions.add(connection.version)

    def after_walk(
        self, connection: Connection, direction: str, packet_type: str, packet_number: int, record: int, walk: tuple
    ) -> None:
        """What a packet's frames tell beyond its rows: ACKs waiting for their sender's ack_delay_exponent, a frame
        that could not be read, CRYPTO data (TLS messages, keys, transport parameters), new connection IDs. Also
        for the packets the lane decoded (its "event" items)."""
        _, _, crypto, new_cids, unknown, has_ack = walk
        sender = connection.sender(direction)
        if sender.transport_parameters is None and has_ack:
            self.waiting_for_parameters.add(id(sender))
        if unknown is not None:
            self.issues.add(
                "warning",
                f"{direction} {packet_type} packet {packet_number}: {unknown}; the rest of the packet is counted as 'unknown'",
                record,
            )
        if crypto:
            pn_space = PN_SPACE[packet_type]
            for row, offset, data in crypto:
                stream = connection.crypto_stream(direction, pn_space)
                self.rows.set_tls_messages(row, stream.add(offset, data))
                connection.learn_from_crypto(direction, stream)
        if new_cids:
            for cid in new_cids:
                connection.cids.add(cid)
                self.connections_by_cid[cid] = connection

    def _report_missing_keys(self, connection: Connection, packet_type: str, direction: str, record: int) -> None:
        if not self.keylog.secrets:
            self.issues.add(
                "warning", f"{direction} {packet_type} packets not decrypted: {self.keylog.without_secrets()}", record
            )
        elif (
            connection.client_random is not None
            and connection.keylog.get(connection.client_random, "CLIENT_HANDSHAKE_TRAFFIC_SECRET") is None
        ):
            self.issues.add(
                "warning",
                f"{direction} {packet_type} packets not decrypted: the keylog has no secrets for this connection's client random",
                record,
            )
        else:
            self.issues.add(
                "warning",
                f"{direction} {packet_type} packets not decrypted: the keylog secrets do not decrypt them (wrong secrets?)",
                record,
            )

    def _add_unsupported_packet(
        self, seen: DatagramSeen, version: int, packet_type: str, pn_space: str | None, packet_bytes: int
    ) -> None:
        """A packet of a version this decoder does not read: a row claiming nothing, counted for the version's issue."""
        self.unsupported_packets[version] = self.unsupported_packets.get(version, 0) + 1
        self._add_opaque_packet(seen, packet_type, pn_space, packet_bytes)

    def _add_opaque_packet(self, seen: DatagramSeen, packet_type: str, pn_space: str | None, packet_bytes: int) -> None:
        """A packet whose payload could not be read (no keys, cut by the snap length, not QUIC)."""
        tag = AEAD_TAG_BYTES if packet_type in PN_SPACE else None
        self.rows.add_packet(seen.row, packet_type, packet_bytes, pn_space=pn_space, aead_tag_bytes=tag)

    # ----------------------------------------------------------------------------------------------
    # batches

    def batch_ready(self, batch_rows: int) -> bool:
        rows = max(self.rows.frame_count(), self.rows.packet_count())
        if rows < batch_rows:
            return False
        if rows >= batch_rows * MAX_DEFERRAL:
            return True
        # Newest first: a connection still in its handshake is the likely one without parameters.
        return not self.waiting_for_parameters or all(
            connection.client.transport_parameters is not None and connection.server.transport_parameters is not None
            for connection, _ in reversed(self.flows.values())
        )

    def take_batch(self, final: bool = False) -> CaptureBatch:
        issue_rows = self._final_issue_rows() if final else []
        batch = assemble_batch(self.rows, self.run_id, self.vantage, self.path, issue_rows)
        batch.tcp_segments = self.tcp.take(self.run_id, self.vantage)
        self._reset_columns()
        if not final:
            self._forget_closed_connections(batch)
        return batch

    def _forget_closed_connections(self, batch: CaptureBatch) -> None:
        """Note the connections whose CONNECTION_CLOSE is in ``batch`` and drop the state of those closed longer
        than ``closed_linger_ns`` before the batch's last datagram (memory then follows open connections)."""
        if batch.datagrams.is_empty():
            return
        now_ns = batch.datagrams["time_abs_ns"].max()
        # the two columns only: filtering the whole frame first gathered its 25 columns (~2 ms per batch)
        frames = batch.frames
        closed = frames["connection_odcid"].filter(frames["frame_type"] == "connection_close").unique().to_list()
        for odcid in closed:
            connection = self.connections_by_odcid.get(odcid)
            if connection is not None and odcid not in self.closing:
                self.closing[odcid] = (connection, now_ns)
        expired = [odcid for odcid, (_, closed_ns) in self.closing.items() if now_ns - closed_ns > self.closed_linger_ns]
        for odcid in expired:
            connection, _ = self.closing.pop(odcid)
            self._forget(connection)

    def _forget(self, connection: Connection) -> None:
        """Drop a closed connection's state; a later datagram of it is reported like any datagram of an unknown flow."""
        for key in connection.flow_keys:
            if self.flows.get(key, (None,))[0] is connection:
                del self.flows[key]
                if self.lane is not None:
                    self.lane.unregister(*key)
        for cid in connection.cids:
            if self.connections_by_cid.get(cid) is connection:
                del self.connections_by_cid[cid]
        if self.connections_by_odcid.get(connection.odcid) is connection:
            del self.connections_by_odcid[connection.odcid]
        self.evicted_connections += 1

    def _final_issue_rows(self) -> list[tuple[str, str]]:
        if self.connection_count == 0 and self.tcp.total == 0:
            self.issues.add("warning", "no QUIC connection (and no TCP segment) found in the capture", None)
        unsupported = [
            ("warning", quic_version(version).unsupported_message(packets))
            for version, packets in sorted(self.unsupported_packets.items())
        ]
        tentative = [("warning", quic_version(version).tentative_message()) for version in sorted(self.tentative_versions)]
        return self.issues.rows() + unsupported + tentative


def decode_capture(
    path: Path,
    keylog: Path | list[Path] | None = None,
    run_id: str = "",
    vantage: str | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    limits: Limits = DEFAULT_LIMITS,
    engine: str | None = None,
    closed_linger_ns: int = CLOSED_CONNECTION_LINGER_NS,
) -> Iterator[CaptureBatch]:
    """Decode one capture into batches of table rows; never raises on bad input (problems go to ingest_issues).

    `keylog` is one or more NSS keylog files; secrets in a pcapng Decryption Secrets Block are used too.
    `vantage` defaults to the capture point named by the file (sim_left / sim_right / the stem).
    `engine` is "compiled" or "python" (see `quicack.pcap.engine`; default: compiled when installed).
    `closed_linger_ns`: capture time a connection's state outlives its CONNECTION_CLOSE (memory of long captures).
    """
    path = Path(path)
    keylog_paths = (
        [] if keylog is None else [Path(keylog)] if isinstance(keylog, (str, Path)) else [Path(p) for p in keylog]
    )
    secrets = load_keylogs(keylog_paths)
    chosen = select_engine(engine)
    decoder = CaptureDecoder(secrets, run_id or path.stem, vantage or capture_point(path), str(path), chosen, closed_linger_ns)
    for problem in secrets.problems:
        decoder.issues.add("warning", f"keylog: {problem}", None)
    check_every = max(1, min(BATCH_CHECK_DATAGRAMS, batch_rows // 4))
    lane = _open_lane(path, chosen, limits) if chosen.pcap_lane is not None else None
    if lane is None:
        yield from _decode_items(decoder, read_udp(path, limits), secrets, path, batch_rows, check_every)
    else:
        with lane[0]:
            decoder.use_lane(lane[1])
            yield from _decode_through_lane(decoder, batch_rows, check_every)
    yield decoder.take_batch(final=True)


def _add_counted(decoder: CaptureDecoder, datagram: UdpDatagram) -> bool:
    """Add one datagram; False when the decoder failed on it (reported, skipped)."""
    try:
        decoder.add_datagram(datagram)
    except Exception as error:  # noqa: BLE001 - one undecodable datagram must not stop a capture
        decoder.issues.add(
            "error",
            f"internal decoder error on this datagram, skipped: {type(error).__name__}: {error}",
            datagram.record_number,
        )
        return False
    return True


def _decode_items(
    decoder: CaptureDecoder, items, secrets: Keylog, path: Path, batch_rows: int, check_every: int
) -> Iterator[CaptureBatch]:
    """The datagrams, issues and secrets of `reader.read_udp`, one by one."""
    issues = decoder.issues
    datagrams = 0
    for item in items:
        if type(item) is UdpDatagram:
            if not _add_counted(decoder, item):
                continue
            datagrams += 1
            if not datagrams % check_every and decoder.batch_ready(batch_rows):
                yield decoder.take_batch()
        elif type(item) is TcpSegment:
            decoder.tcp.add(item)
        elif isinstance(item, ReadIssue):
            issues.add(item.severity, item.message, item.record_number)
        elif isinstance(item, TlsKeylogSecrets):
            secrets.add_text(item.text, f"{path.name} (decryption secrets block)")


def _open_lane(path: Path, engine: Engine, limits: Limits):
    """(open stream, quicack_core.PcapLane) for a classic pcap file (plain, gzip, zstd), else None: pcapng, an
    empty, short or unreadable file go through `read_udp`, which reports what is wrong with them."""
    try:
        stream = open_capture(path, limits)
    except READ_ERRORS:
        return None
    try:
        head = stream.read(24)
    except READ_ERRORS:  # damaged at once: read_udp reports it
        stream.close()
        return None
    magics = {int.from_bytes(head[:4], "little"), int.from_bytes(head[:4], "big")} if len(head) == 24 else set()
    if not magics & {PCAP_MAGIC_US_LE, PCAP_MAGIC_NS_LE}:
        stream.close()
        return None
    max_record_bytes = min(limits.max_record_bytes, 0xFFFF_FFFF)
    if type(stream) is io.BufferedReader and path.is_file():  # plain file (not a pipe): the lane reads it itself
        try:
            return stream, engine.pcap_lane(stream, head, max_record_bytes, path)
        except (OSError, TypeError):  # TypeError: a core older than the `path` argument
            pass
    return stream, engine.pcap_lane(stream, head, max_record_bytes)


# as read_udp: a damaged gzip/zstd stream, or a decompression limit that tripped (quicack.compressed)
READ_ERRORS = (OSError, EOFError, ValueError, CorruptCompressedData, InputLimitExceeded)


def _decode_through_lane(decoder: CaptureDecoder, batch_rows: int, check_every: int) -> Iterator[CaptureBatch]:
    """Let the lane decode what it can and hand the rest to the decoder in file order, as `_decode_items` would."""
    lane, issues = decoder.lane, decoder.issues
    address_names: dict[bytes, str] = {}
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
        datagrams += decoded
        if decoded and not datagrams % check_every and decoder.batch_ready(batch_rows):
            yield decoder.take_batch()
        if kind is None:
            return
        if kind == "datagram":
            datagram = UdpDatagram(*item[1:])
        elif kind == "record":
            converted = link_to_udp(LinkRecord(*item[1:]), address_names)
            if converted is None:
                continue
            if type(converted) is TcpSegment:
                decoder.tcp.add(converted)
                continue
            if type(converted) is not UdpDatagram:
                issues.add(converted.severity, converted.message, converted.record_number)
                continue
            datagram = converted
        elif kind == "issue":
            issues.add("error", item[2], item[1])
            continue
        elif kind == "error":
            error = item[1]
            if not isinstance(error, READ_ERRORS):
                raise error
            issues.add("error", f"capture unreadable after this point: {type(error).__name__}: {error}", None)
            continue
        else:
            continue  # "budget", "event", "events": nothing more to do
        if _add_counted(decoder, datagram):
            datagrams += 1
            if not datagrams % check_every and decoder.batch_ready(batch_rows):
                yield decoder.take_batch()
