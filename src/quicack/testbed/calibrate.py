"""Drop-list calibration: which datagrams carry a flight, found in a no-loss baseline capture.

imc24 compares *equal information loss* (Appendix E, Table 4): implementations coalesce differently, so the
datagram indices to drop differ per client and mode. From a baseline run of the same client and mode we find

* the **remaining first server flight** (``drop_to_client``): the burst of server datagrams from the first one
  that carries a Handshake packet (ending at a gap > 10 ms or when the client's Handshake flight reaches the
  server, so PTO retransmissions are not included), minus datagram 1 — in WFC
  datagram 1 carries the coalesced ACK+ServerHello and is kept; in IACK datagram 1 is the instant ACK and the
  whole ServerHello flight is dropped (imc24 §4.2: WFC 2, IACK 2_3);
* the **second client flight** (``drop_to_server``): the client's datagrams sent after the first server
  Handshake packet arrived, up to and including the first datagram with a 1-RTT packet (the request) and the
  rest of that burst (sent within 1 ms, before any further server datagram arrived).

Only the QUIC long-header packet types are needed, which are visible without decryption. Indices are 1-based
per direction at the router, as the impairment program counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address
from pathlib import Path

from quicack.testbed.pcapio import read_udp

_BURST_NS = 1_000_000
_FLIGHT_GAP_NS = 10_000_000  # the server sends its first flight at once; PTO retransmissions come ≥ 100 ms later


@dataclass(frozen=True)
class Datagram:
    index: int  # 1-based per direction
    time_ns: int
    size: int
    kinds: tuple[str, ...]  # per coalesced packet: initial, 0rtt, handshake, retry, 1rtt


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    n = 1 << (first >> 6)
    v = first & 0x3F
    for i in range(1, n):
        v = (v << 8) | buf[pos + i]
    return v, pos + n


def packet_kinds(payload: bytes) -> tuple[str, ...]:
    """Types of the coalesced QUIC packets in a datagram (v1 long-header types; short header = 1rtt)."""
    kinds: list[str] = []
    pos = 0
    try:
        while pos < len(payload):
            b = payload[pos]
            if not b & 0x80:
                # A short-header packet (fixed bit set) runs to the end of the datagram; zeros are padding.
                if b & 0x40:
                    kinds.append("1rtt")
                break
            version = int.from_bytes(payload[pos + 1 : pos + 5], "big")
            if version == 0:
                kinds.append("version_negotiation")
                break
            t = (b >> 4) & 0x03
            if version == 0x6B3343CF:  # QUIC v2 rotates the type bits (RFC 9369)
                t = {1: 0, 2: 1, 3: 2, 0: 3}[t]
            kind = ("initial", "0rtt", "handshake", "retry")[t]
            kinds.append(kind)
            if kind == "retry":
                break
            p = pos + 5
            dcid_len = payload[p]
            p += 1 + dcid_len
            scid_len = payload[p]
            p += 1 + scid_len
            if kind == "initial":
                tok_len, p = _varint(payload, p)
                p += tok_len
            length, p = _varint(payload, p)
            pos = p + length
            if pos > len(payload):
                kinds.append("malformed")  # the length field runs past the datagram
                break
    except IndexError:
        kinds.append("malformed")
    return tuple(kinds)


def _split(pcap: Path, client: IPv4Address) -> tuple[list[Datagram], list[Datagram]]:
    c2s: list[Datagram] = []
    s2c: list[Datagram] = []
    for d in read_udp(pcap):
        lst = c2s if d.src == client else s2c
        lst.append(Datagram(len(lst) + 1, d.time_ns, len(d.payload), packet_kinds(d.payload)))
    return c2s, s2c


@dataclass(frozen=True)
class Calibration:
    drop_to_client: tuple[int, ...]
    drop_to_server: tuple[int, ...]
    server_flight: tuple[int, ...]  # all datagrams of the first server flight (incl. index 1 when it is part)
    client_flight: tuple[int, ...]
    note: str

    def as_dict(self) -> dict[str, object]:
        return {
            "drop_to_client": list(self.drop_to_client),
            "drop_to_server": list(self.drop_to_server),
            "first_server_flight": list(self.server_flight),
            "second_client_flight": list(self.client_flight),
            "note": self.note,
        }


def calibrate(left_pcap: Path, right_pcap: Path, client: IPv4Address) -> Calibration:
    """Find both drop lists in a baseline run's captures (left = client side, right = server side)."""
    notes = []
    # Server flight, seen where the server sends (right capture).
    r_c2s, r_s2c = _split(right_pcap, client)
    t_client_hs = next((d.time_ns for d in r_c2s if "handshake" in d.kinds), None)
    first_hs = next((d for d in r_s2c if "handshake" in d.kinds), None)
    server_flight: list[int] = []
    if first_hs is None:
        notes.append("no server Handshake packet in baseline")
    else:
        prev_t = first_hs.time_ns
        for d in r_s2c:
            if d.index < first_hs.index:
                continue
            if t_client_hs is not None and d.time_ns >= t_client_hs:
                break
            # One burst: a later datagram (e.g. a PTO retransmission when the RTT exceeds the server's PTO)
            # is not part of the first flight.
            if d.time_ns - prev_t > _FLIGHT_GAP_NS:
                break
            prev_t = d.time_ns
            if d.kinds and d.kinds[0] in ("initial", "handshake"):
                server_flight.append(d.index)
    drop_to_client = tuple(i for i in server_flight if i != 1)

    # Client flight, seen where the client sends (left capture).
    l_c2s, l_s2c = _split(left_pcap, client)
    t_sh = next((d.time_ns for d in l_s2c if "handshake" in d.kinds), None)
    client_flight: list[int] = []
    if t_sh is None:
        notes.append("client never received a server Handshake packet in baseline")
    else:
        after = [d for d in l_c2s if d.time_ns > t_sh]
        req = next((d for d in after if "1rtt" in d.kinds), None)
        if req is None:
            notes.append("no 1-RTT client datagram in baseline")
        else:
            # Next server datagram arriving after the request bounds the burst.
            t_next_s2c = next((d.time_ns for d in l_s2c if d.time_ns > req.time_ns), None)
            prev_t = req.time_ns
            for d in after:
                if d.index <= req.index:
                    client_flight.append(d.index)
                    continue
                if d.time_ns - prev_t > _BURST_NS or (t_next_s2c is not None and d.time_ns >= t_next_s2c):
                    break
                client_flight.append(d.index)
                prev_t = d.time_ns
    return Calibration(
        drop_to_client=drop_to_client,
        drop_to_server=tuple(client_flight),
        server_flight=tuple(server_flight),
        client_flight=tuple(client_flight),
        note="; ".join(notes),
    )
