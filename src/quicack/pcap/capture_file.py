"""Capture files to UDP datagrams (and TCP segments): pcap/pcapng (plain, gzip, zstd), link layers, IPv4/IPv6, UDP.

Streams record by record; nothing is kept beyond the current record, so memory does not grow
with the file. Problems (truncation, unknown link types, fragments) are reported as
`ReadIssue`s in the same stream, never raised, so one bad record does not stop a capture.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from quicack.reading.compressed import CorruptCompressedData, open_input
from quicack.reading.limits import DEFAULT_LIMITS, InputLimitExceeded, Limits, config_key

from .capture_records import LinkRecord, ReadIssue, TlsKeylogSecrets, UdpDatagram
from .ip_fragments import FragmentReassembly
from .tcp import TcpSegment, tcp_segment

__all__ = [
    "FragmentReassembly", "LinkRecord", "ReadIssue", "TlsKeylogSecrets", "UdpDatagram", "link_to_udp", "open_capture",
    "read_link_records", "read_udp",
]  # fmt: skip

PCAP_MAGIC_US_LE = 0xA1B2C3D4
PCAP_MAGIC_NS_LE = 0xA1B23C4D
PCAPNG_SHB = 0x0A0D0D0A

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
IPPROTO_TCP = 6
IPV6_EXTENSION_HEADERS = (0, 43, 60)  # hop-by-hop, routing, destination options: skippable
IPV6_FRAGMENT = 44
IPV4_MORE_FRAGMENTS = 0x2000
IPV4_FRAGMENT_FIELDS = 0x3FFF  # more-fragments flag and fragment offset (not DF)
UDP_HEADER_BYTES = 8
CHUNK_BYTES = 1 << 20
IPV4_HEADER = struct.Struct("!BxHHHxB2x4s4s")  # version/IHL, total length, id, flags/fragment, protocol, addresses
UDP_HEADER = struct.Struct("!HHH")


def open_capture(path: Path, limits: Limits = DEFAULT_LIMITS) -> BinaryIO:
    """Open a capture, transparently decompressing gzip, zstd and xz by their magic bytes."""
    return open_input(path, limits)


def read_link_records(
    stream: BinaryIO, limits: Limits = DEFAULT_LIMITS
) -> Iterator[LinkRecord | ReadIssue | TlsKeylogSecrets]:
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
        from .pcapng import read_pcapng  # here: most captures are classic pcap

        yield from read_pcapng(stream, head, limits)
    elif PCAP_MAGIC_US_LE in (magic_le, magic_be) or PCAP_MAGIC_NS_LE in (magic_le, magic_be):
        yield from _read_pcap(stream, head, limits)
    else:
        # The bytes found are not repeated: a rejected file may be anything (a link to a secret).
        yield ReadIssue(
            None, "error", "not a pcap or pcapng file (its first 4 bytes are no pcap or pcapng magic number)"
        )


def _read_pcap(stream: BinaryIO, head: bytes, limits: Limits) -> Iterator[LinkRecord | ReadIssue]:
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
    offset = 24  # stream offset of buffer[0]
    while True:
        if position + 16 > len(buffer):
            offset += position
            buffer = buffer[position:] + read(CHUNK_BYTES)
            position = 0
            if not buffer:
                return
            if len(buffer) < 16:
                yield ReadIssue(number + 1, "error", "capture ends inside a record header (truncated file)")
                return
        seconds, fraction, caplen, wire_length = unpack_header(buffer, position)
        number += 1
        if caplen > limits.max_record_bytes:
            # pcap records carry no second length to resynchronise on: the rest of the file is unreadable.
            yield ReadIssue(
                number,
                "error",
                f"record length {caplen} exceeds {limits.max_record_bytes} bytes ({config_key('max_record_bytes')}): "
                f"file corrupt at byte {offset + position}, reading stops",
            )
            return
        end = position + 16 + caplen
        if end > len(buffer):
            offset += position
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


def link_to_udp(
    record: LinkRecord, address_names: dict[bytes, str], fragments: FragmentReassembly | None = None
) -> UdpDatagram | TcpSegment | ReadIssue | None:
    """Strip link, IP and UDP headers; a TCP segment's sizes and header fields (`tcp.tcp_segment`); None for
    anything else (not our business). An IP fragment goes to `fragments` (`ip_fragments`), and the fragment that
    completes its datagram gives the whole datagram; None for the others (without `fragments`: an issue each)."""
    data = record.data
    linktype = record.linktype
    ethertype: int | None  # None: a PPP frame that does not carry IP
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
        if flags_fragment & IPV4_FRAGMENT_FIELDS:
            return _ipv4_fragment(record, offset, address_names, fragments)
        if protocol != IPPROTO_UDP:
            if protocol != IPPROTO_TCP:
                return None
            ihl = (version_ihl & 0x0F) * 4
            src = address_names.get(src_raw) or _address_name(src_raw, address_names)
            dst = address_names.get(dst_raw) or _address_name(dst_raw, address_names)
            return tcp_segment(
                record.record_number, record.time_abs_ns, data, offset + ihl, ihl, total_length, src, dst
            )
        ihl = (version_ihl & 0x0F) * 4
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
        next_header_at = offset + 6  # the byte that names the header at `position`
        while next_header in IPV6_EXTENSION_HEADERS and len(data) >= position + 2:
            next_header, extension_length = data[position], (data[position + 1] + 1) * 8
            next_header_at, position = position, position + extension_length
        if next_header == IPV6_FRAGMENT:
            return _ipv6_fragment(record, offset, position, next_header_at, address_names, fragments)
        if next_header != IPPROTO_UDP:
            if next_header != IPPROTO_TCP:
                return None
            src, dst = _address_name(src_raw, address_names), _address_name(dst_raw, address_names)
            return tcp_segment(record.record_number, record.time_abs_ns, data, position, position - offset,
                               40 + payload_length, src, dst)  # fmt: skip
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


def _ipv4_fragment(
    record: LinkRecord, offset: int, address_names: dict[bytes, str], fragments: FragmentReassembly | None
) -> UdpDatagram | TcpSegment | ReadIssue | None:
    """An IPv4 fragment (its header at `record.data[offset]`) to `fragments`; the whole datagram when it completes
    one."""
    data = record.data
    version_ihl, total_length, identification, flags_fragment, protocol, src_raw, dst_raw = IPV4_HEADER.unpack_from(
        data, offset
    )
    if fragments is None:
        return ReadIssue(record.record_number, "warning", "fragmented IPv4 datagram skipped (no reassembly here)")
    ihl = (version_ihl & 0x0F) * 4
    if ihl < 20 or total_length < ihl or len(data) < offset + ihl:
        return ReadIssue(record.record_number, "warning", "IPv4 fragment with inconsistent header lengths: skipped")
    end = offset + total_length
    added = fragments.add(
        (4, src_raw, dst_raw, protocol, identification), record.record_number, record.time_abs_ns,
        data[offset : offset + ihl], (flags_fragment & 0x1FFF) * 8, bool(flags_fragment & IPV4_MORE_FRAGMENTS),
        data[offset + ihl : end], ihl, len(data) < end,
    )  # fmt: skip
    if not isinstance(added, tuple):
        return added
    header, whole, header_bytes = added
    packet = bytearray(header)
    packet[2:4] = (len(packet) + len(whole)).to_bytes(2, "big")
    packet[6:8] = b"\0\0"  # a whole datagram now: no more fragments, offset 0
    return _reassembled(record, LINKTYPE_IPV4, bytes(packet) + whole, header_bytes - len(packet), address_names)


def _ipv6_fragment(
    record: LinkRecord,
    offset: int,
    position: int,
    next_header_at: int,
    address_names: dict[bytes, str],
    fragments: FragmentReassembly | None,
) -> UdpDatagram | TcpSegment | ReadIssue | None:
    """An IPv6 packet whose Fragment header is at `record.data[position]` (its IPv6 header at `offset`, the byte
    naming the Fragment header at `next_header_at`) to `fragments`; the whole datagram when it completes one."""
    data = record.data
    if fragments is None:
        return ReadIssue(record.record_number, "warning", "fragmented IPv6 datagram skipped (no reassembly here)")
    if len(data) < position + 8:
        return ReadIssue(record.record_number, "warning", "IPv6 Fragment header truncated in capture")
    payload_length = (data[offset + 4] << 8) | data[offset + 5]
    end = offset + 40 + payload_length
    if end < position + 8:
        return ReadIssue(record.record_number, "warning", "IPv6 fragment whose payload length is inconsistent: skipped")
    offset_flags = (data[position + 2] << 8) | data[position + 3]
    # The reassembled packet's headers: the first fragment's unfragmentable part, the Fragment header taken out
    # (RFC 8200 §4.5): the header before it now names what the Fragment header named.
    header = bytearray(data[offset:position])
    header[next_header_at - offset] = data[position]
    added = fragments.add(
        (6, data[offset + 8 : offset + 40], data[position + 4 : position + 8]), record.record_number,
        record.time_abs_ns, bytes(header), offset_flags & 0xFFF8, bool(offset_flags & 1), data[position + 8 : end],
        position + 8 - offset, len(data) < end,
    )  # fmt: skip
    if not isinstance(added, tuple):
        return added
    first_header, whole, header_bytes = added
    packet = bytearray(first_header)
    packet[4:6] = (len(packet) - 40 + len(whole)).to_bytes(2, "big")
    return _reassembled(record, LINKTYPE_IPV6, bytes(packet) + whole, header_bytes - len(packet), address_names)


def _reassembled(
    record: LinkRecord, linktype: int, packet: bytes, extra_header_bytes: int, address_names: dict[bytes, str]
) -> UdpDatagram | TcpSegment | ReadIssue | None:
    """The datagram of a reassembled IP packet, at the record (and time) of the fragment that completed it. Its IP
    header bytes count the headers of every fragment (`extra_header_bytes`: those beyond the packet's own), so that
    IP + UDP header + payload bytes still count what went over the wire."""
    whole = LinkRecord(record.record_number, record.time_abs_ns, linktype, packet, len(packet))
    converted = link_to_udp(whole, address_names)
    if type(converted) is UdpDatagram:
        converted.ip_header_bytes += extra_header_bytes
    elif type(converted) is TcpSegment:
        converted.ip_bytes += extra_header_bytes
        converted.ip_header_bytes += extra_header_bytes
    return converted


def unreadable_message(error: BaseException) -> str:
    """The issue of a capture whose stream failed (damaged compression, a tripped limit, a read error), after the
    records before it: `read_udp`'s and the compiled lane's (`lane_bridge`) alike."""
    if isinstance(error, CorruptCompressedData):
        return f"capture unreadable after this point: {error}; records before kept"
    if isinstance(error, InputLimitExceeded):
        return f"capture unreadable after this point: {error}"
    return f"capture unreadable after this point: {type(error).__name__}: {error}"


def read_udp(
    path: Path, limits: Limits = DEFAULT_LIMITS
) -> Iterator[UdpDatagram | TcpSegment | ReadIssue | TlsKeylogSecrets]:
    """Yield every UDP datagram and TCP segment of a capture, plus issues and embedded keylog secrets, in file order.

    Never raises on bad input: damaged compression, a tripped limit or anything unforeseen ends the file with
    one issue, and everything read before it has been yielded."""
    try:
        stream = open_capture(path, limits)
    except OSError as error:
        yield ReadIssue(None, "error", f"cannot open capture: {error}")
        return
    address_names: dict[bytes, str] = {}
    fragments = FragmentReassembly()
    number: int | None = None
    with stream:
        try:
            for item in read_link_records(stream, limits):
                if isinstance(item, LinkRecord):
                    number = item.record_number
                    converted = link_to_udp(item, address_names, fragments)
                    if converted is not None:
                        yield converted
                    if fragments.issues:
                        yield from fragments.take_issues()
                else:
                    yield item
        except (CorruptCompressedData, InputLimitExceeded, OSError, EOFError, struct.error, ValueError) as error:
            yield ReadIssue(number, "error", unreadable_message(error))
        except Exception as error:  # noqa: BLE001 - bad input must never stop the pipeline
            yield ReadIssue(
                number,
                "error",
                f"reading stopped by an unexpected {type(error).__name__}: {error}; records before kept "
                "(please report this file)",
            )
        yield from fragments.finish()  # the datagrams still waiting for pieces
