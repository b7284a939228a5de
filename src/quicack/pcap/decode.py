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

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from quicack.layout import capture_point
from quicack.reading.limits import DEFAULT_LIMITS, Limits

from .capture_file import (
    ReadIssue,
    TlsKeylogSecrets,
    UdpDatagram,
    read_udp,
)
from .columns import CaptureBatch, DatagramSeen, assemble_batch
from .connection import C2S, S2C, Connection
from .decoder_engine import Engine, select_engine
from .flows import FlowTracking
from .keylog import Keylog, load_keylogs
from .lane_bridge import LaneBridge, open_lane
from .quic import (
    AEAD_TAG_BYTES,
    CryptoError,
    HeaderError,
    LongHeader,
    UnknownVersionError,
    parse_long_header,
)
from .tcp import TcpSegment
from .versions import VERSION_1, VERSION_2, quic_version

PN_SPACE = {"initial": "initial", "handshake": "handshake", "0rtt": "appdata", "1rtt": "appdata"}
# packet_type of the zero bytes some implementations (aioquic) put after the last QUIC packet of a datagram
# (RFC 9000 §12.2 lets a receiver ignore them): one row, decrypted null, no frames, pn_space / header /
# tag null, packet_bytes = the zeros, so the datagram's bytes still add up; not counted in quic_packets.
DATAGRAM_PADDING = "datagram_padding"
DEFAULT_BATCH_ROWS = 32_768
# An ACK's delay needs its sender's ack_delay_exponent, which the server sends only in EncryptedExtensions,
# after its first Initial ACK. Batches wait for it, up to this many times the batch size.
MAX_DEFERRAL = 8
MAX_ISSUE_EXAMPLES = 3
BATCH_CHECK_DATAGRAMS = 256  # how often to look at the batch size
# Capture time a connection's state is kept after a CONNECTION_CLOSE was seen: the closing and draining periods
# (RFC 9000 §10.2: three PTOs) with a wide margin. Then its keys, flows and connection IDs are dropped, so that a
# capture of a million short connections (a scan) keeps the state of the open ones only.
CLOSED_CONNECTION_LINGER_NS = 30 * 1_000_000_000
GSO_MIN_BYTES = 1500  # no single QUIC packet of the implementations we study is larger on loopback
CUT_DATAGRAM = "datagram truncated by the capture (snap length): the cut packet is not decrypted"


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

    def examples_full(self, severity: str, message: str) -> bool:
        """Whether the issue has as many examples as its row shows (more are only counted)."""
        return len(self.examples.get((severity, message), ())) >= MAX_ISSUE_EXAMPLES

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


class CaptureDecoder(FlowTracking, LaneBridge):
    """Stateful decoder of one capture; feed datagrams in file order, take batches. Which connection a datagram
    belongs to is `FlowTracking`'s part (`quicack.pcap.flows`), what the compiled lane may decode itself
    `LaneBridge`'s (`quicack.pcap.lane_bridge`); this class decodes the datagrams, packets and frames into rows."""

    def __init__(
        self, keylog: Keylog, run_id: str, vantage: str, path: str, engine: Engine | None = None,
        closed_linger_ns: int = CLOSED_CONNECTION_LINGER_NS,
    ) -> None:  # fmt: skip
        self.engine = engine or select_engine()
        self.keylog = keylog
        self.run_id = run_id
        self.vantage = vantage
        self.path = path
        self._init_flows(closed_linger_ns)
        self.datagram_counts = {C2S: 0, S2C: 0}
        self.issues = _Issues()
        # packets of versions this decoder does not read, by version: one issue each at the end (versions.py)
        self.unsupported_packets: dict[int, int] = {}
        self.tentative_versions: set[int] = set()  # drafts before -22 whose packets authenticated as draft-22's
        self.tcp = self.engine.tcp_rows()
        self._init_lane()
        # quicack_core's RowBuffers.decrypt_and_add (None for the Python engine, or a core built before it)
        self.decrypt_and_add = getattr(self.engine.row_buffers, "decrypt_and_add", None)
        self._reset_columns()

    def note_cut_datagrams(self, record: int | None, count: int = 1) -> bool:
        """Report datagrams cut by the capture's snap length (`count` of them, `record` the first); True once the
        issue has all the examples it shows, after which the lane may only count the ones it adds."""
        self.issues.add("warning", CUT_DATAGRAM, record)
        self.issues.counts["warning", CUT_DATAGRAM] += count - 1
        return self.issues.examples_full("warning", CUT_DATAGRAM)

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

    def add_counted(self, datagram: UdpDatagram) -> bool:
        """Add one datagram; False when the decoder failed on it (reported, skipped)."""
        try:
            self.add_datagram(datagram)
        except Exception as error:  # noqa: BLE001 - one undecodable datagram must not stop a capture
            self.issues.add(
                "error",
                f"internal decoder error on this datagram, skipped: {type(error).__name__}: {error}",
                datagram.record_number,
            )
            return False
        return True

    def _add_datagram(self, datagram: UdpDatagram) -> None:
        flow = self.flows.get((datagram.src, datagram.src_port, datagram.dst, datagram.dst_port))
        if (
            flow is not None
            and datagram.payload[:1]
            and datagram.payload[0] & 0x80
            and self._starts_another_connection(flow, datagram)
        ):
            flow = None
        if flow is None:
            flow = self._new_flow(datagram)
            if flow is None:
                self.issues.add(
                    "warning",
                    "UDP datagrams that are not QUIC (or of a connection whose start is not in the capture) were "
                    "skipped",
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
            self.note_cut_datagrams(datagram.record_number)
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
                f"{seen.direction} short header packet before any long header: connection ID length unknown, not "
                "decrypted",
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
                    packet_number, walk = self.rows.decrypt_and_add(  # type: ignore[attr-defined]  # compiled only
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
                f"{direction} {packet_type} packet {packet_number}: {unknown}; the rest of the packet is counted as "
                "'unknown'",
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
                f"{direction} {packet_type} packets not decrypted: the keylog has no secrets for this connection's "
                "client random",
                record,
            )
        else:
            self.issues.add(
                "warning",
                f"{direction} {packet_type} packets not decrypted: the keylog secrets do not decrypt them (wrong "
                "secrets?)",
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

    def _final_issue_rows(self) -> list[tuple[str, str]]:
        if self.connection_count == 0 and self.tcp.total == 0:
            self.issues.add("warning", "no QUIC connection (and no TCP segment) found in the capture", None)
        unsupported = [
            ("warning", quic_version(version).unsupported_message(packets))
            for version, packets in sorted(self.unsupported_packets.items())
        ]
        tentative = [
            ("warning", quic_version(version).tentative_message()) for version in sorted(self.tentative_versions)
        ]
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
    `engine` is "compiled" or "python" (see `quicack.pcap.decoder_engine`; default: compiled when installed).
    `closed_linger_ns`: capture time a connection's state outlives its CONNECTION_CLOSE (memory of long captures).
    """
    path = Path(path)
    keylog_paths = (
        [] if keylog is None else [Path(keylog)] if isinstance(keylog, (str, Path)) else [Path(p) for p in keylog]
    )
    secrets = load_keylogs(keylog_paths)
    chosen = select_engine(engine)
    decoder = CaptureDecoder(
        secrets, run_id or path.stem, vantage or capture_point(path), str(path), chosen, closed_linger_ns
    )
    for problem in secrets.problems:
        decoder.issues.add("warning", f"keylog: {problem}", None)
    check_every = max(1, min(BATCH_CHECK_DATAGRAMS, batch_rows // 4))
    lane = open_lane(path, chosen, limits) if chosen.pcap_lane is not None else None
    if lane is None:
        yield from _decode_items(decoder, read_udp(path, limits), secrets, path, batch_rows, check_every)
    else:
        with lane[0]:
            decoder.use_lane(lane[1])
            yield from decoder.decode_through_lane(batch_rows, check_every)
    yield decoder.take_batch(final=True)


def _decode_items(
    decoder: CaptureDecoder, items, secrets: Keylog, path: Path, batch_rows: int, check_every: int
) -> Iterator[CaptureBatch]:
    """The datagrams, issues and secrets of `reader.read_udp`, one by one."""
    issues = decoder.issues
    datagrams = 0
    for item in items:
        if type(item) is UdpDatagram:
            if not decoder.add_counted(item):
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
