"""Give the QUIC connections of one run's captures new connection IDs, re-protecting every packet.

A connection ID is in the clear in every packet header, and also inside the encrypted payload: in the transport
parameters of the ClientHello and EncryptedExtensions (original_destination_connection_id,
initial_source_connection_id, retry_source_connection_id, preferred_address) and in NEW_CONNECTION_ID frames. The
header is the AEAD's associated data and the client's first Destination Connection ID makes the Initial keys
(RFC 9001 §5.2), so a new ID means: decrypt with the old keys, substitute the IDs (same length, so that no offset
moves), encrypt with the new keys (new Initial keys; the same Handshake and 1-RTT secrets from the key log) and
re-apply header protection (RFC 9001 §5.4), then fix the UDP checksum.

`analyse_run` decrypts a run's captures once (quicack's own header parsing, key schedule and key phases from
`quicack.pcap.quic`); `write_copy` writes one copy with the IDs mapped by a `CidMap`, any number of times. The TLS
transcript changes with the transport parameters, so the Finished MACs of a copy no longer verify: no decoder of
captures checks them (they need the handshake secrets' base keys, which the key log does not hold).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from quicack.pcap.decode import GSO_MIN_BYTES, find_gso_segment_size
from quicack.pcap.keylog import (
    CLIENT_APPLICATION,
    CLIENT_EARLY,
    CLIENT_HANDSHAKE,
    SERVER_APPLICATION,
    SERVER_HANDSHAKE,
    Keylog,
)
from quicack.pcap.quic import (
    CIPHER_SUITES_TO_TRY,
    NONCE_BYTES,
    SAMPLE_BYTES,
    CryptoError,
    HeaderError,
    PacketKeys,
    Protection,
    initial_keys,
    parse_long_header,
    read_varint,
)

PCAP_HEADER = struct.Struct("<IHHiIII")
RECORD_HEADER = struct.Struct("<IIII")
PCAP_MAGICS = {0xA1B2C3D4: 1_000_000, 0xA1B23C4D: 1_000_000_000}  # little-endian classic pcap: ticks per second
LINKTYPE_ETHERNET = 1
ETHERTYPE_IPV4, ETHERTYPE_IPV6 = 0x0800, 0x86DD
IPPROTO_UDP = 17
SECRET_LABELS = {
    ("handshake", "c2s"): CLIENT_HANDSHAKE,
    ("handshake", "s2c"): SERVER_HANDSHAKE,
    ("1rtt", "c2s"): CLIENT_APPLICATION,
    ("1rtt", "s2c"): SERVER_APPLICATION,
    ("0rtt", "c2s"): CLIENT_EARLY,
}
SPACE_OF_KEYS = {"initial": "initial", "handshake": "handshake", "0rtt": "appdata", "1rtt": "appdata"}
# Transport parameters holding one connection ID (RFC 9000 §18.2) and preferred_address, whose ID follows
# an IPv4 address and port and an IPv6 address and port.
TP_CID_PARAMETERS = frozenset({0x00, 0x0F, 0x10})
TP_PREFERRED_ADDRESS = 0x0D
PREFERRED_ADDRESS_CID_AT = 4 + 2 + 16 + 2
TLS_CLIENT_HELLO, TLS_ENCRYPTED_EXTENSIONS = 1, 8
TRANSPORT_PARAMETERS_EXTENSIONS = (0x39, 0xFFA5)


class CidMap:
    """Old connection ID -> new one of the same length: a keyed hash, so the same ID maps the same way in every
    capture, qlog and file of a copy without shared state, and another key (copy) gives other IDs."""

    def __init__(self, key: bytes) -> None:
        self.key = key[:64]

    def __call__(self, cid: bytes) -> bytes:
        if not cid:
            return cid
        return hashlib.blake2b(cid, key=self.key, digest_size=len(cid), person=b"quicack-cid").digest()


@dataclass(slots=True)
class PacketPlan:
    """One QUIC packet of a datagram, as decrypted: what to substitute and how to protect it again."""

    start: int  # in the UDP payload
    end: int
    short: bool
    cid_spans: list[tuple[int, int]]  # header connection IDs, positions in the UDP payload
    pn_offset: int = 0  # from the packet start
    pn_length: int = 0
    packet_number: int = 0
    first_byte: int = 0  # unprotected
    plaintext: bytes | None = None  # None: not decrypted, only the header's IDs are substituted
    protection: Protection | None = None  # Handshake/0-RTT/1-RTT keys (unchanged in a copy)
    initial_of: tuple[tuple, str] | None = None  # (connection, direction) whose new Initial keys protect it
    cid_in_payload: list[tuple[int, int]] = field(default_factory=list)  # NEW_CONNECTION_ID IDs
    crypto_in_payload: list[tuple[int, int, tuple, int]] = field(default_factory=list)  # start, end, stream, offset


@dataclass(slots=True)
class DatagramPlan:
    udp_at: int  # offset of the UDP header in the link-layer frame
    udp_end: int  # where the UDP datagram ends (Ethernet may pad after it); beyond the frame if the capture cut it
    ip_version: int
    packets: list[PacketPlan]


@dataclass
class ConnectionState:
    """Per capture (packet numbers and key phases start again in each capture)."""

    client: tuple[bytes, int]
    version: int
    initial_dcid: bytes
    keys: dict[tuple[str, str], PacketKeys | None] = field(default_factory=dict)
    largest: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass
class RunAnalysis:
    """What a run's captures hold, decrypted: the plans per capture and record, the IDs, the CRYPTO streams."""

    captures: dict[Path, dict[int, DatagramPlan]] = field(default_factory=dict)
    cids: set[bytes] = field(default_factory=set)
    initial_dcids: dict[tuple, tuple[bytes, int]] = field(default_factory=dict)  # connection -> (DCID, version)
    streams: dict[tuple, dict[int, bytes]] = field(default_factory=dict)  # (connection, direction, space)
    # Each capture's file header and records as read, so that every copy is written without decompressing and
    # parsing the capture again (a third of a copy's time was the gzip reader's many small reads).
    records: dict[Path, tuple[bytes, list[tuple[int, int, int, bytes]]]] = field(default_factory=dict)
    secrets: dict[tuple, tuple[int, bytes]] = field(default_factory=dict)  # (connection, keys, direction)
    packets: int = 0
    decrypted: int = 0


def read_pcap(stream: BinaryIO) -> tuple[bytes, Iterator[tuple[int, int, int, bytes]]]:
    """The file header and (seconds, fraction, original length, bytes) per record of a little-endian classic pcap."""
    head = stream.read(PCAP_HEADER.size)
    magic, _major, _minor, _zone, _sigfigs, _snaplen, linktype = PCAP_HEADER.unpack(head)
    if magic not in PCAP_MAGICS or linktype != LINKTYPE_ETHERNET:
        raise ValueError(f"only little-endian classic pcap of Ethernet frames (magic 0x{magic:08x}, link {linktype})")

    def records() -> Iterator[tuple[int, int, int, bytes]]:
        while header := stream.read(RECORD_HEADER.size):
            seconds, fraction, captured, original = RECORD_HEADER.unpack(header)
            yield seconds, fraction, original, stream.read(captured)

    return head, records()


def udp_payload_at(frame: bytes) -> tuple[int, int, int, tuple[bytes, int], tuple[bytes, int]] | None:
    """(UDP header offset, UDP end, IP version, source, destination) of an Ethernet/IP/UDP frame; the UDP end is
    beyond the frame when the snap length cut it."""
    if len(frame) < 14:
        return None
    ethertype = int.from_bytes(frame[12:14], "big")
    if ethertype == ETHERTYPE_IPV4 and len(frame) >= 34:
        header_bytes = (frame[14] & 0x0F) * 4
        fragment = int.from_bytes(frame[20:22], "big") & 0x3FFF
        if frame[23] != IPPROTO_UDP or fragment:
            return None
        udp_at, version, source, destination = 14 + header_bytes, 4, frame[26:30], frame[30:34]
    elif ethertype == ETHERTYPE_IPV6 and len(frame) >= 62:
        if frame[20] != IPPROTO_UDP:
            return None
        udp_at, version, source, destination = 54, 6, frame[22:38], frame[38:54]
    else:
        return None
    if udp_at + 8 > len(frame):
        return None
    udp_end = udp_at + int.from_bytes(frame[udp_at + 4 : udp_at + 6], "big")
    if udp_end < udp_at + 8:
        return None
    ports = struct.unpack_from("!HH", frame, udp_at)
    return udp_at, udp_end, version, (source, ports[0]), (destination, ports[1])


def udp_checksum(frame: bytearray, udp_at: int, udp_end: int, ip_version: int) -> int:
    """RFC 768 / RFC 8200 §8.1 checksum over the pseudo-header and the UDP datagram (its checksum field zeroed)."""
    length = udp_end - udp_at
    if ip_version == 4:
        pseudo = bytes(frame[26:34]) + struct.pack("!BBH", 0, IPPROTO_UDP, length)
    else:
        pseudo = bytes(frame[22:54]) + struct.pack("!IxxxB", length, IPPROTO_UDP)
    data = pseudo + bytes(frame[udp_at : udp_at + 6]) + b"\x00\x00" + bytes(frame[udp_at + 8 : udp_end])
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    checksum = ~total & 0xFFFF
    return checksum or 0xFFFF


def frame_spans(payload: bytes) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    """Where the NEW_CONNECTION_ID frames' IDs and the CRYPTO frames' data (with their stream offset) are in a
    decrypted payload (RFC 9000 §19); an unknown frame type ends the walk, as nothing after it can be found."""
    cids: list[tuple[int, int]] = []
    crypto: list[tuple[int, int, int]] = []
    position, end = 0, len(payload)
    try:
        while position < end:
            frame_type, position = read_varint(payload, position)
            if frame_type in (0x00, 0x01, 0x1E, 0x1F, 0xAC):  # PADDING, PING, HANDSHAKE_DONE, IMMEDIATE_ACK
                continue
            if frame_type in (0x02, 0x03):  # ACK: largest, delay, range count, first range, ranges (, ECN)
                _, position = read_varint(payload, position)
                _, position = read_varint(payload, position)
                ranges, position = read_varint(payload, position)
                for _ in range(1 + 2 * ranges + (3 if frame_type == 0x03 else 0)):
                    _, position = read_varint(payload, position)
            elif frame_type == 0x06:  # CRYPTO
                offset, position = read_varint(payload, position)
                length, position = read_varint(payload, position)
                crypto.append((position, position + length, offset))
                position += length
            elif 0x08 <= frame_type <= 0x0F:  # STREAM
                _, position = read_varint(payload, position)
                if frame_type & 0x04:
                    _, position = read_varint(payload, position)
                if frame_type & 0x02:
                    length, position = read_varint(payload, position)
                    position += length
                else:
                    position = end
            elif frame_type == 0x18:  # NEW_CONNECTION_ID: sequence, retire prior to, length, ID, reset token
                _, position = read_varint(payload, position)
                _, position = read_varint(payload, position)
                length = payload[position]
                cids.append((position + 1, position + 1 + length))
                position += 1 + length + 16
            elif frame_type in (0x04,):  # RESET_STREAM
                for _ in range(3):
                    _, position = read_varint(payload, position)
            elif frame_type in (0x05, 0x11, 0x15):  # two varints
                for _ in range(2):
                    _, position = read_varint(payload, position)
            elif frame_type in (0x10, 0x12, 0x13, 0x14, 0x16, 0x17, 0x19):  # one varint
                _, position = read_varint(payload, position)
            elif frame_type in (0x07,):  # NEW_TOKEN
                length, position = read_varint(payload, position)
                position += length
            elif frame_type in (0x1A, 0x1B):  # PATH_CHALLENGE, PATH_RESPONSE
                position += 8
            elif frame_type in (0x1C, 0x1D):  # CONNECTION_CLOSE
                _, position = read_varint(payload, position)
                if frame_type == 0x1C:
                    _, position = read_varint(payload, position)
                length, position = read_varint(payload, position)
                position += length
            elif frame_type in (0x30, 0x31):  # DATAGRAM
                if frame_type == 0x31:
                    length, position = read_varint(payload, position)
                    position += length
                else:
                    position = end
            elif frame_type == 0xAF:  # ACK_FREQUENCY: sequence, threshold, max ack delay, reordering threshold
                for _ in range(4):
                    _, position = read_varint(payload, position)
            else:
                break
    except (HeaderError, IndexError):
        pass  # a malformed frame: the spans found before it stand
    return [span for span in cids if span[1] <= end], [span for span in crypto if span[1] <= end]


def _flow(source: tuple[bytes, int], destination: tuple[bytes, int]) -> tuple:
    return tuple(sorted((source, destination)))


class _Analyser:
    def __init__(self, keylog: Keylog, analysis: RunAnalysis) -> None:
        self.keylog = keylog
        self.run = analysis
        self.connections: dict[tuple, ConnectionState] = {}

    def datagram(
        self, payload: bytes, wire_bytes: int, source: tuple[bytes, int], destination: tuple[bytes, int]
    ) -> list[PacketPlan]:
        """Plans of a UDP payload's QUIC packets (`wire_bytes`: its size on the wire, more if the capture cut it)."""
        self.wire_bytes = wire_bytes
        flow = _flow(source, destination)
        connection = self.connections.get(flow)
        plans: list[PacketPlan] = []
        position = 0
        while position < len(payload):
            if payload[position] & 0x80:
                plan = self._long(payload, position, flow, connection, source)
                connection = self.connections.get(flow)
            elif connection is not None and (position == 0 or any(payload[position:])):
                # A short header (its fixed bit may be greased, RFC 9287); zeros after a packet are padding.
                segment = self._gso_segment(payload) if position == 0 else None
                if segment:
                    # A UDP GSO super-datagram captured before segmentation: one short header packet per segment.
                    plans.extend(
                        self._short(payload, at, min(at + segment, len(payload)), flow, connection, source)
                        for at in range(0, len(payload), segment)
                    )
                    break
                plan = self._short(payload, position, len(payload), flow, connection, source)
            else:
                break  # zeros after the last packet, or not QUIC: kept as they are
            if plan is None:
                break
            plans.append(plan)
            position = plan.end
        return plans

    def _long(self, data, start, flow, connection, source) -> PacketPlan | None:
        try:
            header = parse_long_header(data, start, self.wire_bytes)
        except HeaderError:
            return None
        dcid_at = start + 6
        scid_at = dcid_at + len(header.dcid) + 1
        spans = [(dcid_at, dcid_at + len(header.dcid)), (scid_at, scid_at + len(header.scid))]
        self.run.cids.update(c for c in (header.dcid, header.scid) if c)
        plan = PacketPlan(start, min(start + header.packet_bytes, len(data)), False, spans)
        if header.packet_type not in SPACE_OF_KEYS:
            return plan  # Version Negotiation (and Retry, whose integrity tag would need the new ODCID: none here)
        if connection is None:
            if header.packet_type != "initial":
                return plan
            connection = self.connections[flow] = ConnectionState(source, header.version, header.dcid)
            self.run.initial_dcids.setdefault(flow, (header.dcid, header.version))
        direction = "c2s" if source == connection.client else "s2c"
        keys = self._keys(connection, flow, header.packet_type, direction, data, start, header.pn_offset, plan.end)
        if keys is not None:
            self._decrypt(plan, keys, connection, flow, header.packet_type, direction, data, header.pn_offset)
        return plan

    def _gso_segment(self, payload: bytes) -> int | None:
        """The segment size of a super-datagram (quicack's decoder's test), for the DCID lengths that fit."""
        if len(payload) <= GSO_MIN_BYTES or len(payload) != self.wire_bytes:
            return None
        lengths = sorted({len(c) for c in self.run.cids if payload.startswith(c, 1)}, reverse=True)
        return next((size for n in lengths if (size := find_gso_segment_size(payload, n))), None)

    def _short(self, data, start, end, flow, connection, source) -> PacketPlan:
        direction = "c2s" if source == connection.client else "s2c"
        candidates = sorted({len(c) for c in self.run.cids if data.startswith(c, start + 1)}, reverse=True) + [0]
        for length in candidates:
            plan = PacketPlan(start, end, True, [(start + 1, start + 1 + length)])
            keys = self._keys(connection, flow, "1rtt", direction, data, start, 1 + length, end)
            if keys is not None and self._decrypt(plan, keys, connection, flow, "1rtt", direction, data, 1 + length):
                return plan
        return PacketPlan(start, end, True, [(start + 1, start + 1 + candidates[0])])

    def _keys(self, connection, flow, key_type, direction, data, start, pn_offset, end) -> PacketKeys | None:
        key = (key_type, direction)
        if key in connection.keys:
            return connection.keys[key]
        if key_type == "initial":
            client, server = initial_keys(connection.initial_dcid, connection.version)
            connection.keys[("initial", "c2s")], connection.keys[("initial", "s2c")] = client, server
            return connection.keys[key]
        known = self.run.secrets.get((flow, key_type, direction))
        if known is not None:
            keys = connection.keys[key] = PacketKeys.from_secret(known[0], known[1], connection.version)
            return keys
        # The first packet of these keys in this run: the key log's secret and the cipher suite that decrypt it.
        label = SECRET_LABELS.get(key)
        expected = connection.largest.get((direction, SPACE_OF_KEYS[key_type]), -1) + 1
        for secrets in self.keylog.secrets.values():
            secret = secrets.get(label) if label else None
            if secret is None:
                continue
            for suite in CIPHER_SUITES_TO_TRY:
                if (len(secret) == 48) != (suite == 0x1302):
                    continue
                keys = PacketKeys.from_secret(suite, secret, connection.version)
                try:
                    keys.decrypt(data, start, pn_offset, end, expected, key_type == "1rtt")
                except (CryptoError, ValueError):
                    continue
                self.run.secrets[(flow, key_type, direction)] = (suite, secret)
                connection.keys[key] = PacketKeys.from_secret(suite, secret, connection.version)
                return connection.keys[key]
        return None  # not cached: a later packet (another DCID length) may still find them

    def _decrypt(self, plan, keys, connection, flow, key_type, direction, data, pn_offset) -> bool:
        space = SPACE_OF_KEYS[key_type]
        expected = connection.largest.get((direction, space), -1) + 1
        try:
            packet = keys.decrypt(data, plan.start, pn_offset, plan.end, expected, plan.short)
        except (CryptoError, ValueError):
            return False
        protection = keys.current if packet.key_phase == keys.key_phase else keys.previous
        sample_at = plan.start + pn_offset + 4
        mask = protection.mask(data[sample_at : sample_at + SAMPLE_BYTES])
        plan.first_byte = data[plan.start] ^ (mask[0] & (0x1F if plan.short else 0x0F))
        plan.pn_offset, plan.pn_length = pn_offset, packet.header_bytes - pn_offset
        plan.packet_number, plan.plaintext = packet.packet_number, packet.payload
        if key_type == "initial":
            plan.initial_of = (flow, direction)
        else:
            plan.protection = protection
        connection.largest[(direction, space)] = max(expected - 1, packet.packet_number)
        cids, crypto = frame_spans(packet.payload)
        plan.cid_in_payload = cids
        self.run.cids.update(packet.payload[a:b] for a, b in cids if b > a)
        stream = (flow, direction, space)
        fragments = self.run.streams.setdefault(stream, {})
        for a, b, offset in crypto:
            plan.crypto_in_payload.append((a, b, stream, offset))
            if len(fragments.get(offset, b"")) < b - a:
                fragments[offset] = packet.payload[a:b]
        return True


def open_maybe_gzip(path: Path) -> BinaryIO:
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115 - returned open


def analyse_run(captures: list[Path], keylog: Keylog) -> RunAnalysis:
    """Decrypt every QUIC packet of a run's captures (each from its start: packet numbers and key phases are per
    capture) and collect the connection IDs and CRYPTO streams."""
    analysis = RunAnalysis()
    for path in captures:
        analyser = _Analyser(keylog, analysis)
        plans: dict[int, DatagramPlan] = {}
        # Decompressed whole first: the records are then read from memory, not by a gzip reader call each.
        with open_maybe_gzip(path) as stream:
            head, reader = read_pcap(io.BytesIO(stream.read()))
            records = list(reader)
        analysis.records[path] = (head, records)
        for index, (_seconds, _fraction, _original, frame) in enumerate(records):
            found = udp_payload_at(frame)
            if found is None:
                continue
            udp_at, udp_end, version, source, destination = found
            packets = analyser.datagram(frame[udp_at + 8 : udp_end], udp_end - udp_at - 8, source, destination)
            if packets:
                plans[index] = DatagramPlan(udp_at, udp_end, version, packets)
                analysis.packets += len(packets)
                analysis.decrypted += sum(p.plaintext is not None for p in packets)
        analysis.captures[path] = plans
    return analysis


def _rewrite_transport_parameters(data: bytearray, start: int, end: int, cid_map: CidMap) -> None:
    position = start
    while position < end:
        parameter, position = read_varint(data, position)
        length, position = read_varint(data, position)
        if parameter in TP_CID_PARAMETERS and length:
            data[position : position + length] = cid_map(bytes(data[position : position + length]))
        elif parameter == TP_PREFERRED_ADDRESS and length > PREFERRED_ADDRESS_CID_AT:
            at = position + PREFERRED_ADDRESS_CID_AT
            cid_length = data[at]
            data[at + 1 : at + 1 + cid_length] = cid_map(bytes(data[at + 1 : at + 1 + cid_length]))
        position += length


def rewrite_crypto_stream(fragments: dict[int, bytes], cid_map: CidMap) -> bytearray:
    """The reassembled CRYPTO stream with the transport parameters' connection IDs mapped (ClientHello and
    EncryptedExtensions; a message with a gap is left as it is)."""
    size = max((offset + len(data) for offset, data in fragments.items()), default=0)
    stream, seen = bytearray(size), bytearray(size)
    for offset, data in fragments.items():
        stream[offset : offset + len(data)] = data
        seen[offset : offset + len(data)] = b"\x01" * len(data)
    position = 0
    while position + 4 <= size and all(seen[position : position + 4]):
        message_type, length = stream[position], int.from_bytes(stream[position + 1 : position + 4], "big")
        body, end = position + 4, position + 4 + length
        if end > size or not all(seen[body:end]):
            break
        if message_type in (TLS_CLIENT_HELLO, TLS_ENCRYPTED_EXTENSIONS):
            at = body
            if message_type == TLS_CLIENT_HELLO:
                at += 2 + 32  # legacy version, random
                at += 1 + stream[at]  # session id
                at += 2 + int.from_bytes(stream[at : at + 2], "big")  # cipher suites
                at += 1 + stream[at]  # compression methods
            extensions_end = at + 2 + int.from_bytes(stream[at : at + 2], "big")
            at += 2
            while at + 4 <= min(extensions_end, end):
                extension, extension_length = struct.unpack_from("!HH", stream, at)
                if extension in TRANSPORT_PARAMETERS_EXTENSIONS:
                    _rewrite_transport_parameters(stream, at + 4, at + 4 + extension_length, cid_map)
                at += 4 + extension_length
        position = end
    return stream


def _protect(plan: PacketPlan, packet: bytearray, protection: Protection, plaintext: bytes) -> None:
    """Encrypt the plaintext after the (already substituted) header and apply header protection, in place."""
    header_end = plan.pn_offset + plan.pn_length
    packet[0] = plan.first_byte
    truncated = plan.packet_number & ((1 << (8 * plan.pn_length)) - 1)
    packet[plan.pn_offset : header_end] = truncated.to_bytes(plan.pn_length, "big")
    nonce = (protection.iv ^ plan.packet_number).to_bytes(NONCE_BYTES, "big")
    packet[header_end:] = protection.aead.encrypt(nonce, plaintext, bytes(packet[:header_end]))
    sample_at = plan.pn_offset + 4
    mask = protection.mask(bytes(packet[sample_at : sample_at + SAMPLE_BYTES]))
    packet[0] ^= mask[0] & (0x1F if plan.short else 0x0F)
    for index in range(plan.pn_length):
        packet[plan.pn_offset + index] ^= mask[1 + index]


def write_copy(
    analysis: RunAnalysis, source: Path, destination: Path, cid_map: CidMap, shift_seconds: int, gzip_level: int = 6
) -> None:
    """Write `source` (one of the analysed captures) to `destination` with every connection ID mapped, every
    decrypted packet re-protected, UDP checksums fixed and every timestamp `shift_seconds` later."""
    streams = {key: rewrite_crypto_stream(fragments, cid_map) for key, fragments in analysis.streams.items()}
    new_initial: dict[tuple, Protection] = {}
    for flow, (dcid, version) in analysis.initial_dcids.items():
        client, server = initial_keys(cid_map(dcid), version)
        new_initial[(flow, "c2s")], new_initial[(flow, "s2c")] = client.current, server.current
    plans = analysis.captures[source]
    head, records = analysis.records[source]
    # One write of the whole capture: the same deflate stream as record by record, at a fraction of the calls.
    chunks = [head]
    for index, (seconds, fraction, original, frame) in enumerate(records):
        datagram = plans.get(index)
        if datagram is not None:
            frame = bytes(_rewrite_datagram(bytearray(frame), datagram, cid_map, streams, new_initial))
        chunks.append(RECORD_HEADER.pack(seconds + shift_seconds, fraction, len(frame), original))
        chunks.append(frame)
    with gzip.open(destination, "wb", compresslevel=gzip_level) as out:
        out.write(b"".join(chunks))


def _rewrite_datagram(frame: bytearray, datagram: DatagramPlan, cid_map, streams, new_initial) -> bytearray:
    payload_at = datagram.udp_at + 8
    for plan in datagram.packets:
        packet = bytearray(frame[payload_at + plan.start : payload_at + plan.end])
        for a, b in plan.cid_spans:
            if b > a:
                packet[a - plan.start : b - plan.start] = cid_map(bytes(packet[a - plan.start : b - plan.start]))
        if plan.plaintext is not None:
            plaintext = bytearray(plan.plaintext)
            for a, b in plan.cid_in_payload:
                plaintext[a:b] = cid_map(bytes(plaintext[a:b]))
            for a, b, key, offset in plan.crypto_in_payload:
                plaintext[a:b] = streams[key][offset : offset + b - a]
            protection = new_initial[plan.initial_of] if plan.initial_of is not None else plan.protection
            _protect(plan, packet, protection, bytes(plaintext))
        frame[payload_at + plan.start : payload_at + plan.end] = packet
    if datagram.udp_end > len(frame):
        return frame  # cut by the snap length: the checksum cannot be computed (nor checked)
    if frame[datagram.udp_at + 6 : datagram.udp_at + 8] != b"\x00\x00" or datagram.ip_version == 6:
        frame[datagram.udp_at + 6 : datagram.udp_at + 8] = udp_checksum(
            frame, datagram.udp_at, datagram.udp_end, datagram.ip_version
        ).to_bytes(2, "big")
    return frame
