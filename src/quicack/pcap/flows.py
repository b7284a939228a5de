"""Which connection and direction a datagram belongs to: the capture decoder's flows (4-tuples), connection IDs and
connections by name, a new connection recognised on a flow not seen before, a client port reused for a new
connection, and the state of closed connections dropped once they have been closed long enough.

`FlowTracking` is a part of `quicack.pcap.decode.CaptureDecoder`, which calls `_init_flows` in its constructor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from .connection import C2S, S2C, Connection, Endpoint
from .quic import HeaderError, LongHeader, UnknownVersionError, parse_long_header
from .versions import quic_version

if TYPE_CHECKING:
    from .capture_file import UdpDatagram
    from .columns import CaptureBatch
    from .decode import _Issues
    from .decoder_engine import Engine
    from .keylog import Keylog

Flow = tuple[str, int, str, int]  # source address and port, destination address and port
MIN_CLIENT_INITIAL_DATAGRAM_BYTES = 1200  # RFC 9000 §14.1 (the drafts asked for as much or more)


class FlowTracking:
    """The decoder's flows and connections (see the module's docstring)."""

    # The decoder's, of which this is a part (quicack.pcap.decode.CaptureDecoder, quicack.pcap.lane_bridge.LaneBridge)
    engine: Engine
    keylog: Keylog
    issues: _Issues
    lane: Any  # a quicack_core.PcapLane (compiled, untyped), or None

    def _init_flows(self, closed_linger_ns: int) -> None:
        self.closed_linger_ns = closed_linger_ns
        self.flows: dict[Flow, tuple[Connection, str]] = {}
        self.connections_by_cid: dict[bytes, Connection] = {}
        # Connections by the name their rows carry (connection_odcid), and those seen closing, with the capture time.
        self.connections_by_odcid: dict[str, Connection] = {}
        self.closing: dict[str, tuple[Connection, int]] = {}
        self.evicted_connections = 0
        self.connection_count = 0

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
            if header.packet_type in ("0rtt", "unknown") or (
                # only clients send these first; a client pads every datagram with an Initial to 1200 bytes (RFC
                # 9000 §14.1), so a shorter one is the server's (the client's first Initial is not in the capture)
                header.packet_type == "initial" and datagram.udp_payload_bytes >= MIN_CLIENT_INITIAL_DATAGRAM_BYTES
            ):
                client, server = (datagram.src, datagram.src_port), (datagram.dst, datagram.dst_port)
            else:
                # Capture started after the client's Initial: guess the client by its (ephemeral, higher) port.
                client_is_src = datagram.src_port > datagram.dst_port
                self.issues.add(
                    "warning",
                    "connection seen without its first Initial: client guessed from the ports, times are relative to "
                    "the first packet",
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

    def _forget_closed_connections(self, batch: CaptureBatch) -> None:
        """Note the connections whose CONNECTION_CLOSE is in ``batch`` and drop the state of those closed longer
        than ``closed_linger_ns`` before the batch's last datagram (memory then follows open connections)."""
        if batch.datagrams.is_empty():
            return
        now_ns = cast(int, batch.datagrams["time_abs_ns"].max())  # an integer column, not empty here
        # the two columns only: filtering the whole frame first gathered its 25 columns (~2 ms per batch)
        frames = batch.frames
        closed = frames["connection_odcid"].filter(frames["frame_type"] == "connection_close").unique().to_list()
        for odcid in closed:
            connection = self.connections_by_odcid.get(odcid)
            if connection is not None and odcid not in self.closing:
                self.closing[odcid] = (connection, now_ns)
        expired = [
            odcid for odcid, (_, closed_ns) in self.closing.items() if now_ns - closed_ns > self.closed_linger_ns
        ]
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
