"""Which connection each captured datagram belongs to, and who that connection was for.

A scan capture holds thousands of connections. The capture decoder (`quicack.pcap.decode_capture`) tells them
apart internally but its tables do not name them yet, and it does not read the SNI. This pass reads the same
capture beside it, with the decoder's own building blocks (`read_udp_through_lane`, `parse_long_header`, `initial_keys`,
`walk_frames`) and the decoder's rule for flows (a connection starts with a long header packet on a new
address/port 4-tuple; both directions of the 4-tuple belong to it), and yields for every datagram of a QUIC
flow ``(time_abs_ns, udp_payload_bytes, connection number)``. For each connection it keeps the client's Source
Connection ID (QScanner's ``scid``, the only key that joins packets to targets), the addresses, and the SNI of
the ClientHello, which it decrypts from the client's Initial packets (Initial keys come from the client's first
Destination Connection ID; no keylog is needed).

# contract v2: when datagrams/packets/frames carry the decoder's connection id, and the decoder reports each
# connection's client SCID and SNI, this pass and the alignment in `quicack.scan.scan_capture` go away.

`quicack_core.ScanIdentifier` (`quicack.scan.identify_core`) is this pass's compiled twin, which `quicack scan` uses
when the core is installed.

Memory: per connection a few fields (kept until the end, as the decoder keeps its per-connection state); the
ClientHello buffer and Initial keys are dropped as soon as the SNI is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from quicack.pcap.capture_file import UdpDatagram
from quicack.pcap.frames import FrameColumns, walk_frames
from quicack.pcap.lane_bridge import read_udp_through_lane
from quicack.pcap.quic import CryptoError, HeaderError, PacketKeys, initial_keys, parse_long_header

CLIENT_HELLO = 1
EXTENSION_SERVER_NAME = 0
HOST_NAME = 0
# A ClientHello larger than this (post-quantum key shares make them ~1.5–2 kB) is not read further.
MAX_CLIENT_HELLO_BYTES = 16_384
# Client Initial packets tried for the ClientHello before giving up on a connection's SNI.
MAX_HELLO_PACKETS = 8

CONNECTION_SCHEMA = {
    "connection": pl.Int64,
    "client_scid": pl.Utf8,
    "original_dcid": pl.Utf8,
    "client_address": pl.Utf8,
    "client_port": pl.Int64,
    "server_address": pl.Utf8,
    "server_port": pl.Int64,
    "first_time_abs_ns": pl.Int64,
    "client_hello_sni": pl.Utf8,
}


@dataclass(slots=True)
class CapturedConnection:
    number: int
    client: tuple[str, int]
    server: tuple[str, int]
    client_scid: bytes
    original_dcid: bytes
    first_time_abs_ns: int
    sni: str | None = None
    # ClientHello reassembly, dropped once done: the client's Initial keys, CRYPTO bytes from offset 0, pieces
    # that arrived ahead of the contiguous end, and how many client Initials were tried.
    keys: PacketKeys | None = None
    hello: bytearray | None = field(default_factory=bytearray)
    pending: dict[int, bytes] = field(default_factory=dict)
    largest_pn: int = -1
    tries: int = 0

    @property
    def reading_hello(self) -> bool:
        return self.hello is not None

    def stop_reading_hello(self) -> None:
        self.keys = None
        self.hello = None
        self.pending = {}


class ConnectionIdentifier:
    """Feed it the capture's datagrams in file order; it assigns each to a connection."""

    def __init__(self) -> None:
        self.flows: dict[tuple[str, int, str, int], CapturedConnection] = {}
        self.connections: list[CapturedConnection] = []

    def add(self, datagram: UdpDatagram) -> int | None:
        """The connection number of a datagram, or None when it starts no QUIC flow (the decoder skips it too)."""
        key = (datagram.src, datagram.src_port, datagram.dst, datagram.dst_port)
        connection = self.flows.get(key)
        if (
            connection is not None
            and key[:2] == connection.client
            and _client_initial_scid(datagram) not in (None, connection.client_scid)
        ):
            connection = None  # the client's port was reused for a new connection (the decoder's rule too)
        if connection is None:
            connection = self._new_connection(datagram)
            if connection is None:
                return None
        if connection.reading_hello and key[:2] == connection.client:
            self._read_client_hello(connection, datagram.payload)
        return connection.number

    def _new_connection(self, datagram: UdpDatagram) -> CapturedConnection | None:
        payload = datagram.payload
        if not payload or not payload[0] & 0x80:
            return None  # a short header on an unknown flow: the decoder only adopts it by a known CID (migration)
        try:
            header = parse_long_header(payload, 0, datagram.udp_payload_bytes)
        except HeaderError:
            return None  # unknown versions start flows in the decoder; they carry no SNI we could read either
        if header.packet_type == "version_negotiation":
            return None
        if header.packet_type in ("initial", "0rtt"):
            client, server = (datagram.src, datagram.src_port), (datagram.dst, datagram.dst_port)
            client_scid, original_dcid = header.scid, header.dcid
        else:  # the capture missed the client's first Initial: the client is the side with the higher port
            client_is_src = datagram.src_port > datagram.dst_port
            client = (datagram.src, datagram.src_port) if client_is_src else (datagram.dst, datagram.dst_port)
            server = (datagram.dst, datagram.dst_port) if client_is_src else (datagram.src, datagram.src_port)
            client_scid, original_dcid = (header.scid, b"") if client_is_src else (header.dcid, b"")
        connection = CapturedConnection(
            len(self.connections) + 1, client, server, client_scid, original_dcid, datagram.time_abs_ns
        )
        if header.packet_type != "initial" or (datagram.src, datagram.src_port) != client:
            connection.stop_reading_hello()
        else:
            connection.keys = initial_keys(header.dcid, header.version)[0]
        self.connections.append(connection)
        self.flows[(*client, *server)] = connection
        self.flows[(*server, *client)] = connection
        return connection

    def _read_client_hello(self, connection: CapturedConnection, payload: bytes) -> None:
        """Decrypt the client's Initial packets of this datagram until the ClientHello is whole, then read its SNI."""
        position = 0
        while position < len(payload) and payload[position] & 0x80 and connection.reading_hello:
            try:
                header = parse_long_header(payload, position)
            except HeaderError:
                return
            if header.packet_type == "initial" and connection.keys is not None:
                connection.tries += 1
                try:
                    packet = connection.keys.decrypt(
                        payload,
                        position,
                        header.pn_offset,
                        position + header.packet_bytes,
                        connection.largest_pn + 1,
                        False,
                    )
                except (CryptoError, ValueError):
                    packet = None
                if packet is not None:
                    connection.largest_pn = max(connection.largest_pn, packet.packet_number)
                    _, _, crypto, _, _ = walk_frames(packet.payload, FrameColumns())
                    for _, offset, data in crypto or ():
                        _add_crypto(connection, offset, data)
                if connection.reading_hello and connection.tries >= MAX_HELLO_PACKETS:
                    connection.stop_reading_hello()
            position += header.packet_bytes

    def connection_frame(self) -> pl.DataFrame:
        connections = self.connections
        return pl.DataFrame(
            {
                "connection": [c.number for c in connections],
                "client_scid": [c.client_scid.hex() for c in connections],
                "original_dcid": [c.original_dcid.hex() if c.original_dcid else None for c in connections],
                "client_address": [c.client[0] for c in connections],
                "client_port": [c.client[1] for c in connections],
                "server_address": [c.server[0] for c in connections],
                "server_port": [c.server[1] for c in connections],
                "first_time_abs_ns": [c.first_time_abs_ns for c in connections],
                "client_hello_sni": [c.sni for c in connections],
            },
            schema=CONNECTION_SCHEMA,
        )


def _client_initial_scid(datagram: UdpDatagram) -> bytes | None:
    """The Source Connection ID of a datagram's first packet if it is an Initial, else None."""
    payload = datagram.payload
    if not payload or not payload[0] & 0x80:
        return None
    try:
        header = parse_long_header(payload, 0, datagram.udp_payload_bytes)
    except HeaderError:
        return None
    return header.scid if header.packet_type == "initial" else None


def _add_crypto(connection: CapturedConnection, offset: int, data: bytes) -> None:
    hello = connection.hello
    if hello is None:
        return
    end = offset + len(data)
    if offset > len(hello):
        if len(connection.pending) < MAX_HELLO_PACKETS:
            connection.pending[offset] = data
        return
    if end > len(hello):
        hello += data[len(hello) - offset :]
    for pending_offset in sorted(connection.pending):
        if pending_offset <= len(hello):
            piece = connection.pending.pop(pending_offset)
            if pending_offset + len(piece) > len(hello):
                hello += piece[len(hello) - pending_offset :]
    if len(hello) >= 4:
        if hello[0] != CLIENT_HELLO:
            connection.stop_reading_hello()
            return
        length = int.from_bytes(hello[1:4], "big")
        if len(hello) >= 4 + length:
            connection.sni = client_hello_sni(bytes(hello[4 : 4 + length]))
            connection.stop_reading_hello()
        elif length > MAX_CLIENT_HELLO_BYTES:
            connection.stop_reading_hello()


def client_hello_sni(body: bytes) -> str | None:
    """The host name of a ClientHello's server_name extension (RFC 6066 §3), or None."""
    try:
        position = 2 + 32  # legacy_version, random
        position += 1 + body[position]  # legacy_session_id
        position += 2 + int.from_bytes(body[position : position + 2], "big")  # cipher_suites
        position += 1 + body[position]  # legacy_compression_methods
        end = position + 2 + int.from_bytes(body[position : position + 2], "big")
        position += 2
        while position + 4 <= min(end, len(body)):
            extension_type = int.from_bytes(body[position : position + 2], "big")
            length = int.from_bytes(body[position + 2 : position + 4], "big")
            position += 4
            if extension_type == EXTENSION_SERVER_NAME:
                names = body[position : position + length]
                cursor = 2  # server_name_list length
                while cursor + 3 <= len(names):
                    name_type = names[cursor]
                    name_length = int.from_bytes(names[cursor + 1 : cursor + 3], "big")
                    name = names[cursor + 3 : cursor + 3 + name_length]
                    if name_type == HOST_NAME:
                        return name.decode("ascii", errors="replace")
                    cursor += 3 + name_length
                return None
            position += length
    except IndexError:
        return None
    return None


@dataclass(frozen=True, slots=True)
class DatagramOwner:
    time_abs_ns: int
    udp_payload_bytes: int
    connection: int


def datagram_owners(path: Path, identifier: ConnectionIdentifier) -> Iterator[DatagramOwner]:
    """Every QUIC datagram of the capture with its connection, in file order (read problems are the decoder's
    to report: it reads the same file)."""
    for item in read_udp_through_lane(path):
        if type(item) is UdpDatagram:
            number = identifier.add(item)
            if number is not None:
                yield DatagramOwner(item.time_abs_ns, item.udp_payload_bytes, number)
