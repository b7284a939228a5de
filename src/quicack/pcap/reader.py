"""Capture files to UDP datagrams: pcap/pcapng (plain, gzip, zstd), link layers, IPv4/IPv6, UDP.

Streams record by record; nothing is kept beyond the current record, so memory does not grow
with the file. Problems (truncation, unknown link types, fragments) are reported as
`ReadIssue`s in the same stream, never raised, so one bad record does not stop a capture.
"""

from __future__ import annotations

import gzip
import io
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

PCAP_MAGIC_US_LE = 0xA1B2C3D4
PCAP_MAGIC_NS_LE = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_IDB = 0x00000001
PCAPNG_SPB = 0x00000003
PCAPNG_EPB = 0x00000006
PCAPNG_DSB = 0x0000000A
PCAPNG_BYTE_ORDER_MAGIC = 0x1A2B3C4D
DSB_TLS_KEYLOG = 0x544C534B

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
LINKTYPE_RAW_OPENBSD = 12
LINKTYPE_LOOP = 108
# Point-to-point links: ns-3's PointToPointNetDevice (the QUIC Interop Runner's simulator) writes PPP (9).
LINKTYPE_PPP = 9
LINKTYPE_PPP_HDLC = 50
LINKTYPE_C_HDLC = 104
PPP_ADDRESS_CONTROL = b"\xff\x03"
PPP_PROTOCOL_IPV4 = 0x0021
PPP_PROTOCOL_IPV6 = 0x0057

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
ETHERTYPE_VLAN = (0x8100, 0x88A8, 0x9100)
IPPROTO_UDP = 17
IPV6_EXTENSION_HEADERS = (0, 43, 60)  # hop-by-hop, routing, destination options: skippable
IPV6_FRAGMENT = 44
UDP_HEADER_BYTES = 8
CHUNK_BYTES = 1 << 20
IPV4_HEADER = struct.Struct("!BxHHHxB2x4s4s")  # version/IHL, total length, id, flags/fragment, protocol, addresses
UDP_HEADER = struct.Struct("!HHH")

MAX_TIME_NS = 2**63 - 1  # time_abs_ns is int64 in the tables


@dataclass(slots=True)  # not frozen: frozen dataclasses are slow to build, and this is built per datagram
class UdpDatagram:
    """One UDP datagram as it went over the wire."""

    record_number: int  # 1-based record (frame) number in the file, as tshark numbers frames
    time_abs_ns: int
    src: str
    dst: str
    src_port: int
    dst_port: int
    ip_header_bytes: int
    udp_payload_bytes: int  # from the UDP length field: the wire size even if the capture cut the record
    payload: bytes  # captured payload bytes (shorter than udp_payload_bytes when truncated)


@dataclass(frozen=True, slots=True)
class ReadIssue:
    record_number: int | None
    severity: str  # 'error' or 'warning'
    message: str


@dataclass(frozen=True, slots=True)
class TlsKeylogSecrets:
    """Keylog text found in a pcapng Decryption Secrets Block."""

    text: str


@dataclass(slots=True)
class LinkRecord:
    record_number: int
    time_abs_ns: int
    linktype: int
    data: bytes
    wire_length: int


class _SalvagingReader(io.RawIOBase):
    """A decompressing stream that, when the compressed data is cut or corrupt, first returns what it could
    decompress and raises only on the next read, so the records before the damage are not lost."""

    PIECE_BYTES = 1 << 13  # what a damaged stream can lose at most

    def __init__(self, inner: BinaryIO) -> None:
        self.inner = inner
        self.error: Exception | None = None

    def read(self, size: int = -1) -> bytes:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        pieces = []
        remaining = size if size >= 0 else 1 << 62
        while remaining > 0:
            try:
                piece = self.inner.read(min(remaining, self.PIECE_BYTES))
            except (OSError, EOFError, ValueError) as error:
                self.error = error
                break
            if not piece:
                break
            pieces.append(piece)
            remaining -= len(piece)
        return b"".join(pieces)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.inner.close()
        super().close()


def open_capture(path: Path) -> BinaryIO:
    """Open a capture, transparently decompressing gzip and zstd by their magic bytes."""
    raw = open(path, "rb")  # noqa: SIM115 - returned to the caller, closed by it
    magic = raw.peek(4)[:4]
    if magic[:2] == b"\x1f\x8b":
        return _SalvagingReader(gzip.GzipFile(fileobj=raw, mode="rb"))  # type: ignore[return-value]
    if magic == b"\x28\xb5\x2f\xfd":
        import zstandard

        stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
        return _SalvagingReader(stream)  # type: ignore[return-value]
    return raw


def read_link_records(stream: BinaryIO) -> Iterator[LinkRecord | ReadIssue | TlsKeylogSecrets]:
    """Yield link-layer records (and DSB secrets) from a pcap or pcapng stream."""
    head = stream.read(4)
    if not head:
        # What a failed run leaves behind (the QUIC Interop Runner keeps the file): nothing was captured.
        yield ReadIssue(None, "warning", "capture is empty (0 bytes): nothing was captured")
        return
    if len(head) < 4:
        yield ReadIssue(None, "error", "file is shorter than a capture header")
        return
    (magic_le,) = struct.unpack("<I", head)
    (magic_be,) = struct.unpack(">I", head)
    if magic_le == PCAPNG_SHB:
        yield from _read_pcapng(stream, head)
    elif PCAP_MAGIC_US_LE in (magic_le, magic_be) or PCAP_MAGIC_NS_LE in (magic_le, magic_be):
        yield from _read_pcap(stream, head)
    else:
        yield ReadIssue(None, "error", f"not a pcap or pcapng file (magic {head.hex()})")


def _read_pcap(stream: BinaryIO, head: bytes) -> Iterator[LinkRecord | ReadIssue]:
    (magic,) = struct.unpack("<I", head)
    endian = "<" if magic in (PCAP_MAGIC_US_LE, PCAP_MAGIC_NS_LE) else ">"
    (magic,) = struct.unpack(endian + "I", head)
    nanoseconds = magic == PCAP_MAGIC_NS_LE
    rest = stream.read(20)
    if len(rest) < 20:
        yield ReadIssue(None, "error", "truncated pcap file header")
        return
    _major, _minor, _zone, _sigfigs, _snaplen, linktype_field = struct.unpack(endian + "HHiIII", rest)
    linktype = linktype_field & 0x0FFFFFFF  # upper bits may carry FCS information
    record_header = struct.Struct(endian + "IIII")
    unpack_header = record_header.unpack_from
    read = stream.read
    scale = 1 if nanoseconds else 1000
    number = 0
    # Read in large chunks and cut records out of them: two small reads per record cost more than decoding.
    buffer = b""
    position = 0
    while True:
        if position + 16 > len(buffer):
            buffer = buffer[position:] + read(CHUNK_BYTES)
            position = 0
            if not buffer:
                return
            if len(buffer) < 16:
                yield ReadIssue(number + 1, "error", "capture ends inside a record header (truncated file)")
                return
        seconds, fraction, caplen, wire_length = unpack_header(buffer, position)
        number += 1
        if caplen > 0x4000000:
            yield ReadIssue(number, "error", f"record length {caplen} is implausible: file corrupt, reading stops")
            return
        end = position + 16 + caplen
        if end > len(buffer):
            buffer = buffer[position:] + read(max(CHUNK_BYTES, caplen + 16))
            position = 0
            end = 16 + caplen
            if end > len(buffer):
                yield ReadIssue(number, "error", "capture ends inside a record (truncated file)")
                return
        yield LinkRecord(
            number, seconds * 1_000_000_000 + fraction * scale, linktype, buffer[position + 16 : end], wire_length
        )
        position = end


def _read_pcapng(stream: BinaryIO, head: bytes) -> Iterator[LinkRecord | ReadIssue | TlsKeylogSecrets]:
    read = stream.read
    endian = "<"
    interfaces: list[tuple[int, int]] = []  # (linktype, ticks per second)
    number = 0
    pending_head: bytes | None = head
    while True:
        block_type_bytes = pending_head if pending_head is not None else read(4)
        pending_head = None
        if not block_type_bytes:
            return
        length_bytes = read(4)
        if len(block_type_bytes) < 4 or len(length_bytes) < 4:
            yield ReadIssue(number or None, "error", "capture ends inside a block header (truncated file)")
            return
        if block_type_bytes == b"\x0a\x0d\x0d\x0a":
            # Section header: the byte-order magic decides how everything after it is read.
            bom = read(4)
            if len(bom) < 4:
                yield ReadIssue(None, "error", "truncated pcapng section header")
                return
            endian = "<" if struct.unpack("<I", bom)[0] == PCAPNG_BYTE_ORDER_MAGIC else ">"
            (total_length,) = struct.unpack(endian + "I", length_bytes)
            body = read(total_length - 12)
            if total_length < 28 or len(body) < total_length - 12:
                yield ReadIssue(None, "error", "truncated pcapng section header")
                return
            interfaces = []
            continue
        (block_type,) = struct.unpack(endian + "I", block_type_bytes)
        (total_length,) = struct.unpack(endian + "I", length_bytes)
        if total_length < 12 or total_length % 4 or total_length > 0x4000000:
            yield ReadIssue(
                number or None, "error", f"pcapng block length {total_length} is invalid: file corrupt, reading stops"
            )
            return
        body = read(total_length - 8)
        if len(body) < total_length - 8:
            yield ReadIssue(number or None, "error", "capture ends inside a block (truncated file)")
            return
        body = body[:-4]  # trailing copy of the block length
        if block_type == PCAPNG_IDB:
            linktype = struct.unpack(endian + "H", body[:2])[0]
            interfaces.append((linktype, _pcapng_ticks_per_second(body[8:], endian)))
        elif block_type == PCAPNG_EPB:
            number += 1
            interface_id, ts_high, ts_low, caplen, wire_length = struct.unpack(endian + "IIIII", body[:20])
            if interface_id >= len(interfaces):
                yield ReadIssue(number, "error", f"packet refers to unknown interface {interface_id}")
                continue
            linktype, ticks = interfaces[interface_id]
            ticks_total = (ts_high << 32) | ts_low
            time_ns = ticks_total * 1_000_000_000 // ticks if ticks != 1_000_000_000 else ticks_total
            if time_ns > MAX_TIME_NS:  # 64-bit ticks can exceed the int64 nanoseconds of the tables
                yield ReadIssue(number, "error", "packet timestamp after the year 2262 (corrupt block): skipped")
                continue
            yield LinkRecord(number, time_ns, linktype, body[20 : 20 + caplen], wire_length)
        elif block_type == PCAPNG_SPB:
            number += 1
            if not interfaces:
                yield ReadIssue(number, "error", "simple packet block without interface")
                continue
            (wire_length,) = struct.unpack(endian + "I", body[:4])
            yield LinkRecord(number, 0, interfaces[0][0], body[4 : 4 + wire_length], wire_length)
        elif block_type == PCAPNG_DSB:
            secrets_type, secrets_length = struct.unpack(endian + "II", body[:8])
            if secrets_type == DSB_TLS_KEYLOG:
                yield TlsKeylogSecrets(body[8 : 8 + secrets_length].decode("utf-8", "replace"))


def _pcapng_ticks_per_second(options: bytes, endian: str) -> int:
    """Read if_tsresol (option 9) of an interface description block; default microseconds."""
    position = 0
    while position + 4 <= len(options):
        code, length = struct.unpack(endian + "HH", options[position : position + 4])
        if code == 0:
            break
        if code == 9 and length >= 1:
            resolution = options[position + 4]
            return 2 ** (resolution & 0x7F) if resolution & 0x80 else 10**resolution
        position += 4 + ((length + 3) & ~3)
    return 1_000_000


def _address_name(address: bytes, names: dict[bytes, str]) -> str:
    """Text form of an IPv4/IPv6 address, cached: a capture has few addresses and many datagrams."""
    name = names.get(address)
    if name is None:
        family = socket.AF_INET if len(address) == 4 else socket.AF_INET6
        name = names[address] = socket.inet_ntop(family, address)
    return name


def _ppp_header(data: bytes) -> tuple[int | None, int] | None:
    """(ethertype of the payload or None when it is not IP, header length) of a PPP frame (RFC 1661), with or
    without the HDLC address and control bytes ff 03 (RFC 1662) and with a one-byte protocol field when it is
    compressed (an odd first byte); None when the frame is shorter than its header."""
    offset = 2 if data[:2] == PPP_ADDRESS_CONTROL else 0
    if len(data) <= offset:
        return None
    if data[offset] & 1:
        protocol, offset = data[offset], offset + 1
    elif len(data) < offset + 2:
        return None
    else:
        protocol, offset = (data[offset] << 8) | data[offset + 1], offset + 2
    ethertype = {PPP_PROTOCOL_IPV4: ETHERTYPE_IPV4, PPP_PROTOCOL_IPV6: ETHERTYPE_IPV6}.get(protocol)
    return ethertype, offset


def link_to_udp(record: LinkRecord, address_names: dict[bytes, str]) -> UdpDatagram | ReadIssue | None:
    """Strip link, IP and UDP headers; None for anything that is not UDP (not our business)."""
    data = record.data
    linktype = record.linktype
    if linktype == LINKTYPE_ETHERNET:
        if len(data) < 14:
            return ReadIssue(record.record_number, "warning", "Ethernet frame shorter than its header")
        ethertype = (data[12] << 8) | data[13]
        offset = 14
        while ethertype in ETHERTYPE_VLAN and len(data) >= offset + 4:
            ethertype = (data[offset + 2] << 8) | data[offset + 3]
            offset += 4
    elif linktype == LINKTYPE_LINUX_SLL:
        if len(data) < 16:
            return ReadIssue(record.record_number, "warning", "Linux cooked (SLL) frame shorter than its header")
        ethertype = (data[14] << 8) | data[15]
        offset = 16
    elif linktype == LINKTYPE_LINUX_SLL2:
        if len(data) < 20:
            return ReadIssue(record.record_number, "warning", "Linux cooked (SLL2) frame shorter than its header")
        ethertype = (data[0] << 8) | data[1]
        offset = 20
    elif linktype in (LINKTYPE_RAW, LINKTYPE_RAW_OPENBSD, LINKTYPE_IPV4, LINKTYPE_IPV6):
        if not data:
            return None
        ethertype = ETHERTYPE_IPV4 if data[0] >> 4 == 4 else ETHERTYPE_IPV6
        offset = 0
    elif linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        if len(data) < 4:
            return None
        family = int.from_bytes(data[:4], "little") if linktype == LINKTYPE_NULL else int.from_bytes(data[:4], "big")
        if family in (2,):
            ethertype = ETHERTYPE_IPV4
        elif family in (10, 24, 28, 30):
            ethertype = ETHERTYPE_IPV6
        else:
            return None
        offset = 4
    elif linktype in (LINKTYPE_PPP, LINKTYPE_PPP_HDLC):
        header = _ppp_header(data)
        if header is None:
            return ReadIssue(record.record_number, "warning", "PPP frame shorter than its header")
        ethertype, offset = header
    elif linktype == LINKTYPE_C_HDLC:
        if len(data) < 4:
            return ReadIssue(record.record_number, "warning", "Cisco HDLC frame shorter than its header")
        ethertype = (data[2] << 8) | data[3]
        offset = 4
    else:
        return ReadIssue(record.record_number, "error", f"unsupported link type {linktype}")

    if ethertype == ETHERTYPE_IPV4:
        if len(data) < offset + 20:
            return ReadIssue(record.record_number, "warning", "IPv4 header truncated in capture")
        version_ihl, total_length, _id, flags_fragment, protocol, src_raw, dst_raw = IPV4_HEADER.unpack_from(
            data, offset
        )
        if protocol != IPPROTO_UDP:
            return None
        ihl = (version_ihl & 0x0F) * 4
        if flags_fragment & 0x3FFF:
            return ReadIssue(
                record.record_number, "warning", "fragmented IPv4 UDP datagram skipped (reassembly not supported)"
            )
        src = address_names.get(src_raw) or _address_name(src_raw, address_names)
        dst = address_names.get(dst_raw) or _address_name(dst_raw, address_names)
        ip_header_bytes = ihl
        udp_offset = offset + ihl
        ip_payload_length = total_length - ihl
    elif ethertype == ETHERTYPE_IPV6:
        if len(data) < offset + 40:
            return ReadIssue(record.record_number, "warning", "IPv6 header truncated in capture")
        payload_length = (data[offset + 4] << 8) | data[offset + 5]
        next_header = data[offset + 6]
        src_raw = data[offset + 8 : offset + 24]
        dst_raw = data[offset + 24 : offset + 40]
        position = offset + 40
        while next_header in IPV6_EXTENSION_HEADERS and len(data) >= position + 2:
            next_header, extension_length = data[position], (data[position + 1] + 1) * 8
            position += extension_length
        if next_header == IPV6_FRAGMENT:
            return ReadIssue(
                record.record_number, "warning", "fragmented IPv6 UDP datagram skipped (reassembly not supported)"
            )
        if next_header != IPPROTO_UDP:
            return None
        src = _address_name(src_raw, address_names)
        dst = _address_name(dst_raw, address_names)
        ip_header_bytes = position - offset
        udp_offset = position
        ip_payload_length = payload_length - (ip_header_bytes - 40)
    else:
        return None

    if len(data) < udp_offset + UDP_HEADER_BYTES:
        return ReadIssue(record.record_number, "warning", "UDP header truncated in capture")
    src_port, dst_port, udp_length = UDP_HEADER.unpack_from(data, udp_offset)
    if udp_length < UDP_HEADER_BYTES or udp_length > ip_payload_length:
        if udp_length == 0 and ethertype == ETHERTYPE_IPV6:
            udp_length = ip_payload_length  # jumbogram convention
        else:
            return ReadIssue(
                record.record_number,
                "warning",
                f"UDP length {udp_length} inconsistent with IP payload {ip_payload_length}",
            )
    payload_start = udp_offset + UDP_HEADER_BYTES
    payload_length = udp_length - UDP_HEADER_BYTES
    # Slicing by the UDP length drops Ethernet padding of short frames.
    payload = data[payload_start : payload_start + payload_length]
    return UdpDatagram(
        record.record_number,
        record.time_abs_ns,
        src,
        dst,
        src_port,
        dst_port,
        ip_header_bytes,
        payload_length,
        payload,
    )


def read_udp(path: Path) -> Iterator[UdpDatagram | ReadIssue | TlsKeylogSecrets]:
    """Yield every UDP datagram of a capture, plus issues and embedded keylog secrets, in file order."""
    try:
        stream = open_capture(path)
    except OSError as error:
        yield ReadIssue(None, "error", f"cannot open capture: {error}")
        return
    address_names: dict[bytes, str] = {}
    with stream:
        try:
            for item in read_link_records(stream):
                if isinstance(item, LinkRecord):
                    converted = link_to_udp(item, address_names)
                    if converted is not None:
                        yield converted
                else:
                    yield item
        except (OSError, EOFError, struct.error, ValueError) as error:
            # gzip/zstd raise on a truncated or corrupt compressed stream: keep what was read.
            yield ReadIssue(None, "error", f"capture unreadable after this point: {type(error).__name__}: {error}")
