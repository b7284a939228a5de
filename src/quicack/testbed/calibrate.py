"""Drop-list calibration: which datagrams carry a flight, found in a no-loss baseline capture.

imc24 compares *equal information loss* (Appendix E, Table 4): implementations coalesce differently, so the
datagram indices to drop differ per client and mode. From a baseline run of the same client and mode we find

* the **remaining first server flight** (``drop_to_client``): the burst of server datagrams from the first one
  that carries a Handshake packet, and the Initial-only datagrams the server sent within 10 ms before it (a
  ServerHello in an Initial of its own), ending at a gap > 10 ms or when the client's Handshake flight reaches the
  server (so PTO retransmissions are not included), minus datagram 1 — in WFC
  datagram 1 carries the coalesced ACK+ServerHello and is kept; in IACK datagram 1 is the instant ACK and the
  whole ServerHello flight is dropped (imc24 §4.2: WFC 2, IACK 2_3);
* the **second client flight** (``drop_to_server``): the client's datagrams sent after the first server
  Handshake packet arrived, up to and including the first datagram with a 1-RTT packet (the request) and the
  rest of that burst (sent within 1 ms, before any further server datagram arrived);
* the **client's Finished flight** (for the ``*_large`` / ``*_xlarge`` client-flight scenarios): the tail of the
  second client flight from its first 1-RTT datagram on — every client coalesces its TLS Finished with its first
  1-RTT packet. With a certificate above the amplification limit the server sends its flight in rounds, each
  released by the client's ACKs, and how many ACK-only datagrams come first varies from run to run; so this
  flight is dropped by content (``impair.py --drop-c2s-finished-flight N``, N = its length here), not by index.

Only the QUIC long-header packet types are needed, which are visible without decryption; they come from the
package's capture decoder (``quicack.pcap``), whose directions follow the sender of the first Initial. Indices
are 1-based per direction at the router, as the impairment program counts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_BURST_NS = 1_000_000
_FLIGHT_GAP_NS = 10_000_000  # the server sends its first flight at once; PTO retransmissions come ≥ 100 ms later


@dataclass(frozen=True)
class Datagram:
    index: int  # 1-based per direction
    time_ns: int
    size: int  # UDP payload bytes
    kinds: tuple[str, ...]  # per coalesced packet, as quicack.pcap names them: initial, handshake, 1rtt, ...


def split_datagrams(pcap: Path) -> tuple[list[Datagram], list[Datagram]]:
    """Client→server and server→client datagrams of a capture, each with the types of its QUIC
    packets, from the package's capture decoder (no keys needed: long-header types are visible,
    a short header is 1rtt)."""
    from quicack.pcap.decode import decode_capture

    kinds: dict[tuple[str, int], list[str]] = {}
    facts: dict[tuple[str, int], tuple[int, int]] = {}
    for batch in decode_capture(pcap):
        for direction, index, time_ns, size in batch.datagrams.select(
            "direction", "datagram_index", "time_abs_ns", "udp_payload_bytes"
        ).iter_rows():
            facts[(direction, index)] = (time_ns, size)
        for direction, index, packet_type in batch.packets.select(
            "direction", "datagram_index", "packet_type"
        ).iter_rows():
            kinds.setdefault((direction, index), []).append(packet_type)
    by_direction: dict[str, list[Datagram]] = {"c2s": [], "s2c": []}
    for (direction, index), (time_ns, size) in sorted(facts.items()):
        by_direction[direction].append(Datagram(index, time_ns, size, tuple(kinds.get((direction, index), ()))))
    return by_direction["c2s"], by_direction["s2c"]


@dataclass(frozen=True)
class Calibration:
    drop_to_client: tuple[int, ...]
    drop_to_server: tuple[int, ...]
    server_flight: tuple[int, ...]  # all datagrams of the first server flight (incl. index 1 when it is part)
    client_flight: tuple[int, ...]
    note: str
    client_finished_flight: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {
            "drop_to_client": list(self.drop_to_client),
            "drop_to_server": list(self.drop_to_server),
            "first_server_flight": list(self.server_flight),
            "second_client_flight": list(self.client_flight),
            "client_finished_flight": list(self.client_finished_flight),
            "note": self.note,
        }


def calibrate(left_pcap: Path, right_pcap: Path) -> Calibration:
    """Find both drop lists in a baseline run's captures (left = client side, right = server side)."""
    notes = []
    # Server flight, seen where the server sends (right capture).
    r_c2s, r_s2c = split_datagrams(right_pcap)
    t_client_hs = next((d.time_ns for d in r_c2s if "handshake" in d.kinds), None)
    first_hs = next((d for d in r_s2c if "handshake" in d.kinds), None)
    server_flight: list[int] = []
    if first_hs is None:
        notes.append("no server Handshake packet in baseline")
    else:
        # The flight begins before its first Handshake datagram where the server sent its ServerHello in an
        # Initial of its own just before it (quic-go answering a two-datagram ClientHello: instant ACK, ServerHello,
        # then Handshake): those Initials of the same burst belong to it, datagram 1 included (left out below).
        server_flight = [d.index for d in r_s2c if d.index < first_hs.index and d.kinds[:1] == ("initial",)
                         and first_hs.time_ns - d.time_ns <= _FLIGHT_GAP_NS]  # fmt: skip
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
    l_c2s, l_s2c = split_datagrams(left_pcap)
    t_sh = next((d.time_ns for d in l_s2c if "handshake" in d.kinds), None)
    client_flight: list[int] = []
    finished_flight: list[int] = []
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
            finished_flight = [i for i in client_flight if i >= req.index]
    return Calibration(
        drop_to_client=drop_to_client,
        drop_to_server=tuple(client_flight),
        server_flight=tuple(server_flight),
        client_flight=tuple(client_flight),
        note="; ".join(notes),
        client_finished_flight=tuple(finished_flight),
    )
