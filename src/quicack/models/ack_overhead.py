"""ACK sizes and overheads from the protocol specifications (ackfreq22 Table 3, rethink Table II, tcpquic's
anatomy and rate tables): pure functions of header sizes, ACK ratio and packet size.

Every size is built from named components, so that a cell of a paper's table can be recomputed and, where it
differs, the component that makes the difference named. Sizes are bytes of the IP packet carrying the ACK.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

IPV4_HEADER = 20
IPV6_HEADER = 40
UDP_HEADER = 8
TCP_HEADER = 20
TCP_TIMESTAMP_OPTION = 12  # 10 B option + 2 B NOP padding (RFC 7323)
TCP_MAX_OPTIONS = 40  # the TCP header's data offset allows 60 B in all
SACK_OPTION_BASE = 2  # kind + length; 8 B per block (RFC 2018), padded with NOPs to 4 B words
SACK_BLOCK = 8
# QUIC (RFC 9000): the smallest 1-RTT packet carrying only an ACK: 1 B flags, 0 B DCID, 1 B packet number,
# ACK frame of type, largest, delay, range count and first range in one byte each, 16 B AEAD tag.
QUIC_SHORT_HEADER_MIN = 2
QUIC_ACK_FRAME_MIN = 5
QUIC_AEAD_TAG = 16
QUIC_ACK_RANGE_MIN = 2  # one more range: gap and length, one byte each
SCTP_COMMON_HEADER = 12
SCTP_SACK_CHUNK = 16
SCTP_GAP_BLOCK = 4
DCCP_GENERIC_HEADER = 12  # short sequence numbers (X = 0)
DCCP_GENERIC_HEADER_EXTENDED = 16  # 48-bit sequence numbers
DCCP_ACK_SUBHEADER = 4
DCCP_ACK_SUBHEADER_EXTENDED = 8
DCCP_ACK_VECTOR_MIN = 3  # type, length, one run-length byte
# OpenVPN over UDP with AES-CBC and HMAC-SHA-256, as ackfreq22 Table 3 counts it (outer IPv4/UDP included).
OPENVPN_OVERHEAD = 68
# ROHC: compressed size of the headers it removes (ackfreq22 §5.2 "ROHC compression ratios"): an IP/UDP
# header to 3 B (UDP/IP profile), an IP/TCP header to a tenth (4 B for IPv4, 6 B for IPv6).
ROHC_UDP_IP = 3
ROHC_TCP_IP_RATIO = 0.1
# tcpquic's footnote: "Assuming 1460B TCP MSS and 1340 QUIC packet size"
TCP_MSS = 1460
QUIC_PACKET = 1340


def round_half_up(value: float) -> int:
    """The papers round 25.5 B to 26 B: half up, not Python's half to even."""
    return math.floor(value + 0.5)


@dataclass(frozen=True)
class AckPacket:
    """One ACK packet's size by component."""

    ip: int
    transport: int  # TCP header + options, or UDP header + QUIC header + ACK frame + AEAD tag
    tunnel: int = 0  # encapsulation added around it (a VPN)

    @property
    def size(self) -> int:
        return self.ip + self.transport + self.tunnel


def largest_tcp_ack(ip_header: int = IPV4_HEADER) -> AckPacket:
    """The largest TCP ACK: as many SACK blocks as the option space holds, with timestamps or without."""
    return max(
        (tcp_ack(ip_header, timestamps, max_sack_blocks(timestamps)) for timestamps in (True, False)),
        key=lambda ack: ack.size,
    )


def tcp_ack(ip_header: int = IPV4_HEADER, timestamps: bool = False, sack_blocks: int = 0) -> AckPacket:
    options = (TCP_TIMESTAMP_OPTION if timestamps else 0) + _sack_option(sack_blocks)
    if options > TCP_MAX_OPTIONS:
        raise ValueError(f"{options} B of TCP options exceed the {TCP_MAX_OPTIONS} B the header allows")
    return AckPacket(ip_header, TCP_HEADER + options)


def _sack_option(blocks: int) -> int:
    if not blocks:
        return 0
    return 4 * math.ceil((SACK_OPTION_BASE + SACK_BLOCK * blocks) / 4)


def max_sack_blocks(timestamps: bool) -> int:
    """SACK blocks that fit in the TCP option space (3 with timestamps, 4 without)."""
    room = TCP_MAX_OPTIONS - (TCP_TIMESTAMP_OPTION if timestamps else 0)
    return max(n for n in range(0, 6) if _sack_option(n) <= room)


def quic_ack(
    ip_header: int = IPV4_HEADER,
    extra_ranges: int = 0,
    connection_id_bytes: int = 0,
    packet_number_bytes: int = 1,
    largest_acked_bytes: int = 1,
    ack_delay_bytes: int = 1,
) -> AckPacket:
    """An ACK-only 1-RTT packet; the defaults give the smallest (51 B over IPv4)."""
    header = QUIC_SHORT_HEADER_MIN + connection_id_bytes + packet_number_bytes - 1
    frame = QUIC_ACK_FRAME_MIN + (largest_acked_bytes - 1) + (ack_delay_bytes - 1) + QUIC_ACK_RANGE_MIN * extra_ranges
    return AckPacket(ip_header, UDP_HEADER + header + frame + QUIC_AEAD_TAG)


def quic_ack_largest_without_loss(ip_header: int = IPV4_HEADER) -> AckPacket:
    """The largest ACK-only packet RFC 9000 allows without gaps: a 20 B connection ID, a 4 B packet number,
    a 4 B largest acknowledged (packet numbers up to 2^30) and a 2 B ACK Delay."""
    return quic_ack(ip_header, connection_id_bytes=20, packet_number_bytes=4, largest_acked_bytes=4, ack_delay_bytes=2)


def sctp_ack(ip_header: int = IPV4_HEADER, gap_blocks: int = 0) -> AckPacket:
    return AckPacket(ip_header, SCTP_COMMON_HEADER + SCTP_SACK_CHUNK + SCTP_GAP_BLOCK * gap_blocks)


def dccp_ack(ip_header: int = IPV4_HEADER, extended: bool = False, ack_vector: bool = False) -> AckPacket:
    header = DCCP_GENERIC_HEADER_EXTENDED if extended else DCCP_GENERIC_HEADER
    subheader = DCCP_ACK_SUBHEADER_EXTENDED if extended else DCCP_ACK_SUBHEADER
    return AckPacket(ip_header, header + subheader + (DCCP_ACK_VECTOR_MIN if ack_vector else 0))


def over_vpn(ack: AckPacket) -> AckPacket:
    return AckPacket(ack.ip, ack.transport, OPENVPN_OVERHEAD)


def rohc(ack: AckPacket, protocol: str) -> int:
    """Size after ROHC on the link: the outermost IP and transport (TCP, or UDP) headers compressed."""
    if ack.tunnel:  # only the VPN's outer IPv4/UDP header is visible to the link
        return ack.size - (IPV4_HEADER + UDP_HEADER) + ROHC_UDP_IP
    if protocol == "tcp":
        headers = ack.ip + TCP_HEADER
        return ack.size - headers + round_half_up(headers * ROHC_TCP_IP_RATIO)
    return ack.size - (ack.ip + UDP_HEADER) + ROHC_UDP_IP


def bytes_per_received_packet(ack_size: float, ack_ratio: float) -> float:
    """Return-path bytes per data packet received: one ACK of ``ack_size`` every ``ack_ratio`` packets."""
    return ack_size / ack_ratio


def overhead_share(ack_size: float, ack_ratio: float, data_packet_bytes: float) -> float:
    """Return bytes as a share of forward bytes (tcpquic's 'ACK size / (AR × packet size)')."""
    return ack_size / (ack_ratio * data_packet_bytes)


def ack_rate_to_fill(forward_bit_rate: float, share: float) -> float:
    """Return-path bit rate the ACKs need while the forward path runs full (tcpquic's rate table)."""
    return forward_bit_rate * share


def anatomy_cells() -> pl.DataFrame:
    """tcpquic's anatomy: per case (cumulative AR 2 / with loss, TCP / QUIC) and bound, the ACK size, the data
    packets it covers and its share of the forward bytes (null size: unlimited)."""
    cases = {
        ("tcp_cumulative", "min"): (tcp_ack().size, 2, TCP_MSS),
        ("tcp_cumulative", "max"): (tcp_ack(timestamps=True).size, 2, TCP_MSS),
        ("quic_cumulative", "min"): (quic_ack().size, 2, QUIC_PACKET),
        ("quic_cumulative", "max"): (quic_ack_largest_without_loss().size, 2, QUIC_PACKET),
        ("tcp_loss", "min"): (tcp_ack(sack_blocks=1).size, 1, TCP_MSS),
        ("tcp_loss", "max"): (largest_tcp_ack().size, 1, TCP_MSS),
        ("quic_loss", "min"): (quic_ack(extra_ranges=1).size, 1, QUIC_PACKET),
        ("quic_loss", "max"): (None, 1, QUIC_PACKET),
    }
    return pl.DataFrame(
        [
            {
                "case": case,
                "bound": bound,
                "ack_bytes": size,
                "ack_ratio": ratio,
                "data_packet_bytes": packet,
                "share_percent": None if size is None else 100 * overhead_share(size, ratio, packet),
            }
            for (case, bound), (size, ratio, packet) in cases.items()
        ],
        schema_overrides={"ack_bytes": pl.Int64, "share_percent": pl.Float64},
    )
