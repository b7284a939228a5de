"""What the capture readers yield: link-layer records, UDP datagrams, issues and embedded key logs."""

from __future__ import annotations

from dataclasses import dataclass

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
