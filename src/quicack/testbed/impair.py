"""The router's user-space impairment: one-way delay, random loss and drop lists, through NFQUEUE.

Runs inside the router namespace. iptables sends every forwarded UDP datagram and TCP segment to queue ``q``
(from the client side) or ``q+1`` (from the server side); this program decides per packet (indices count both):

* drop it if its 1-based per-direction index is in that direction's drop list (the QUIC Interop Runner's
  ``droplist`` scenario counts UDP datagrams the same way), or if it belongs to that direction's *finished
  flight* (``--drop-c2s-finished-flight N``: the first datagram carrying a QUIC short-header (1-RTT) packet and
  the N − 1 datagrams after it — where every client coalesces its TLS Finished with its first 1-RTT packet, so
  that the client's Finished flight is lost however many ACK-only datagrams came before it), else
* drop it if ACK thinning is on (``--thin-c2s-tcp-acks K``, c2s only) and it is a thinnable TCP ACK that is not
  the K-th of its flow (see ``TcpAckThinning``), else
* drop it with probability ``loss`` (seeded RNG, reproducible), else
* hold it and give the ACCEPT verdict ``delay`` after the kernel received it.

Timing: the kernel's receive timestamp of the packet is the reference (so user-space wake-up latency on arrival
does not add to the delay), a single thread waits in ``select`` until the next due time with timer slack
reduced to 1 µs, and verdicts for due packets are given in FIFO order per direction (constant delay per
direction keeps order). Bandwidth is not done here but by tbf on the egress interfaces.

Prints one JSON line ``{"ready": true}`` once both queues are bound; on SIGTERM/SIGINT writes a JSON summary
(per direction: datagrams seen, dropped indices, lost indices) to ``--summary`` and exits.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import random
import select
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Only the queue loop needs the binding: the pure rules (carries_short_header, thinning) import without it, so
    # tests and the ingest that read them collect on a machine without libnetfilter-queue.
    from netfilterqueue import NetfilterQueue, Packet

PR_SET_TIMERSLACK = 29
QUIC_V2 = 0x6B3343CF
IPPROTO_TCP = 6
IPPROTO_UDP = 17
TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10
TCP_OPTION_END, TCP_OPTION_NOP, TCP_OPTION_SACK = 0, 1, 5
# Bytes of a packet the queue copies to user space when a rule reads headers: IPv4 (max 60) + TCP (max 60), and the
# QUIC long headers the finished-flight rule walks.
HEADER_COPY_BYTES = 8192


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A QUIC variable-length integer at ``at``: (value, offset after it)."""
    length = 1 << (data[at] >> 6)
    return int.from_bytes(bytes([data[at] & 0x3F]) + data[at + 1 : at + length], "big"), at + length


def carries_short_header(ip_packet: bytes) -> bool:
    """Whether a UDP datagram (as an IPv4/IPv6 packet) holds a QUIC short-header packet, possibly coalesced
    after long-header ones (RFC 9000 §12.2; long-header types and lengths are not encrypted)."""
    try:
        header = (ip_packet[0] & 0x0F) * 4 if ip_packet[0] >> 4 == 4 else 40
        if ip_packet[9 if ip_packet[0] >> 4 == 4 else 6] != IPPROTO_UDP:
            return False  # a TCP segment (the queues carry TCP too) is not a QUIC packet
        data, at = ip_packet[header + 8 :], 0
        while at < len(data):
            first = data[at]
            if not first & 0x80:
                # A short header has the fixed bit set; anything else here is padding after the last packet
                # (e.g. the zero bytes some clients fill their Initial datagrams with).
                return bool(first & 0x40)
            version = int.from_bytes(data[at + 1 : at + 5], "big")
            if version == 0:
                return False  # Version Negotiation
            kind = (first & 0x30) >> 4
            at += 5
            at += 1 + data[at]  # destination connection ID
            at += 1 + data[at]  # source connection ID
            if kind == (0 if version == QUIC_V2 else 3):
                return False  # Retry: nothing coalesced after it
            if kind == (1 if version == QUIC_V2 else 0):
                token_length, at = _varint(data, at)
                at += token_length
            length, at = _varint(data, at)
            at += length
    except IndexError:
        return False
    return False


def _has_sack_option(options: bytes) -> bool:
    at = 0
    while at < len(options):
        kind = options[at]
        if kind == TCP_OPTION_END:
            return False
        if kind == TCP_OPTION_SACK:
            return True
        if kind == TCP_OPTION_NOP:
            at += 1
            continue
        if at + 1 >= len(options) or options[at + 1] < 2:
            return False  # malformed: treat as no SACK (the packet is then thinned like any pure ACK)
        at += options[at + 1]
    return False


@dataclass
class TcpAckThinning:
    """ACK thinning in the router (RFC 3449 §5.2.1, "ACK filtering"): of the *thinnable* TCP ACKs of each flow,
    forward every ``every``-th and drop the others. Thinning the kernel's ACK ratio 2 with ``every = N / 2`` gives
    ACK ratio N on the far side of the router.

    Thinnable (exact rule): an IPv4 TCP segment with the ACK flag, no SYN, FIN or RST, no payload (IP total length
    = IP header + TCP data offset), no SACK option, and not a duplicate ACK (its acknowledgment number differs from
    that of the flow's previous pure ACK). Everything else passes: data, handshake and teardown segments, ACKs with
    SACK blocks and duplicate ACKs (fast retransmit and SACK loss recovery need them all, RFC 5681 §3.2). A
    thinnable ACK is cumulative, so the next forwarded one acknowledges what a dropped one did; a pure window
    update is thinned like any pure ACK (the next ACK carries the newer window).
    """

    every: int
    counts: dict[bytes, int] = field(default_factory=dict)  # thinnable ACKs seen per flow (addresses and ports)
    last_ack: dict[bytes, int] = field(default_factory=dict)  # acknowledgment number of the flow's last pure ACK
    thinned: int = 0

    def drops(self, ip_packet: bytes) -> bool:
        """Whether to drop this packet (only pure, thinnable TCP ACKs of a flow are ever dropped)."""
        if len(ip_packet) < 40 or ip_packet[0] >> 4 != 4 or ip_packet[9] != IPPROTO_TCP:
            return False
        ihl = (ip_packet[0] & 0x0F) * 4
        tcp = ip_packet[ihl:]
        if len(tcp) < 20:
            return False
        offset = (tcp[12] >> 4) * 4
        flags = tcp[13]
        total_length = int.from_bytes(ip_packet[2:4], "big")
        if not flags & TCP_ACK or flags & (TCP_SYN | TCP_FIN | TCP_RST) or total_length != ihl + offset:
            return False
        flow = ip_packet[12:20] + tcp[:4]
        ack = int.from_bytes(tcp[8:12], "big")
        duplicate = self.last_ack.get(flow) == ack
        self.last_ack[flow] = ack
        if duplicate or _has_sack_option(tcp[20:offset]):
            return False
        count = self.counts.get(flow, 0) + 1
        self.counts[flow] = count
        if count % self.every == 0:
            return False
        self.thinned += 1
        return True


@dataclass
class Direction:
    """Impairment state of one direction (c2s or s2c)."""

    name: str
    delay_s: float
    loss: float
    droplist: frozenset[int]
    rng: random.Random
    finished_flight: int = 0  # drop the first datagram with a short-header packet and the next N − 1
    finished_flight_left: int | None = None
    thinning: TcpAckThinning | None = None  # c2s only: the router's TCP ACK thinning
    seen: int = 0
    dropped: list[int] = field(default_factory=list)
    lost: list[int] = field(default_factory=list)
    max_lateness_s: float = 0.0
    lateness_s: list[float] = field(default_factory=list)  # per released packet: how late its verdict left
    held: deque[tuple[float, Packet]] = field(default_factory=deque)

    def on_packet(self, pkt: Packet) -> None:
        self.seen += 1
        idx = self.seen
        if idx in self.droplist or self._in_finished_flight(pkt):
            self.dropped.append(idx)
            pkt.drop()
            return
        if self.thinning is not None and self.thinning.drops(pkt.get_payload()):
            pkt.drop()
            return
        if self.loss > 0 and self.rng.random() < self.loss:
            self.lost.append(idx)
            pkt.drop()
            return
        if self.delay_s <= 0:
            pkt.accept()
            return
        ts = pkt.get_timestamp()
        # The kernel stamps the skb on receive when any socket wants timestamps (tcpdump does); else now.
        arrived = ts if ts > 0 else time.time()
        self.held.append((arrived + self.delay_s, pkt))

    def _in_finished_flight(self, pkt: Packet) -> bool:
        if not self.finished_flight or self.finished_flight_left == 0:
            return False
        if self.finished_flight_left is None:
            if not carries_short_header(pkt.get_payload()):
                return False
            self.finished_flight_left = self.finished_flight
        self.finished_flight_left -= 1
        return True

    def release_due(self, now: float) -> None:
        while self.held and self.held[0][0] <= now:
            due, pkt = self.held.popleft()
            self.max_lateness_s = max(self.max_lateness_s, now - due)
            self.lateness_s.append(now - due)
            pkt.accept()

    def next_due(self) -> float | None:
        return self.held[0][0] if self.held else None

    def summary(self) -> dict[str, Any]:
        return {
            "delay_ms": self.delay_s * 1000,
            "loss": self.loss,
            "droplist": sorted(self.droplist),
            "finished_flight": self.finished_flight,
            "thin_tcp_acks_every": self.thinning.every if self.thinning else 0,
            "thinned_tcp_acks": self.thinning.thinned if self.thinning else 0,
            "datagrams_seen": self.seen,
            "dropped_indices": self.dropped,
            "lost_indices": self.lost,
            "max_release_lateness_ms": round(self.max_lateness_s * 1000, 4),
            "release_lateness_ms": _percentiles_ms(self.lateness_s),
        }


def _percentiles_ms(values_s: list[float]) -> dict[str, float] | None:
    """Median, p99 and max of the released packets' lateness (ms), or None when nothing was held."""
    if not values_s:
        return None
    ordered = sorted(values_s)

    def rank(q: float) -> float:  # nearest rank
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 4)

    return {"p50": rank(0.5), "p99": rank(0.99), "max": round(ordered[-1] * 1000, 4), "packets": len(ordered)}


def parse_indices(text: str) -> frozenset[int]:
    """'2,3' or '2_3' or '' -> {2, 3}."""
    parts = [p for p in text.replace("_", ",").split(",") if p.strip()]
    idx = frozenset(int(p) for p in parts)
    if any(i < 1 for i in idx):
        raise ValueError(f"drop indices are 1-based: {text!r}")
    return idx


def _reduce_timer_slack() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except OSError:
        pass  # default 50 µs slack is still well inside the fidelity target


def _realtime_priority(priority: int) -> bool:
    """SCHED_FIFO: other busy processes on the host must not delay a due verdict by a scheduler tick."""
    if priority <= 0:
        return False
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return True
    except (OSError, AttributeError):
        return False


def serve(
    queue: int,
    c2s: Direction,
    s2c: Direction,
    summary_path: Path | None,
    rt_priority: int = 50,
    spin_s: float = 0.00015,
) -> None:
    serve_pairs([(queue, c2s, s2c)], summary_path, rt_priority, spin_s)


def serve_pairs(
    pairs: list[tuple[int, Direction, Direction]],
    summary_path: Path | None,
    rt_priority: int = 50,
    spin_s: float = 0.00015,
) -> None:
    """Impair several paths at once: pair (q, c2s, s2c) serves queue q (c2s) and q+1 (s2c).

    One process for all paths of a router (the emulated scan's vantage point × PoP links): separate processes
    would each wake and spin on their own, on a machine with few cores."""
    _reduce_timer_slack()
    realtime = _realtime_priority(rt_priority)
    # The loop allocates little; a collection pause would show up as added delay.
    gc.disable()
    stop = False

    def _stop(signum: int, frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)

    from netfilterqueue import COPY_META, COPY_PACKET, NetfilterQueue

    directions = [d for _, c2s, s2c in pairs for d in (c2s, s2c)]
    bound: list[NetfilterQueue] = []
    fds: dict[int, NetfilterQueue] = {}
    for queue, c2s, s2c in pairs:
        for num, direction in ((queue, c2s), (queue + 1, s2c)):
            q = NetfilterQueue()
            # Metadata only: verdicts do not need the payload, and copying it would cost time per packet; the
            # finished-flight rule reads the QUIC headers, ACK thinning the TCP headers.
            reads_headers = direction.finished_flight or direction.thinning is not None
            mode, copy = (COPY_PACKET, HEADER_COPY_BYTES) if reads_headers else (COPY_META, 0)
            q.bind(num, direction.on_packet, max_len=8192, mode=mode, range=copy)
            bound.append(q)
            fds[q.get_fd()] = q
    queues = sorted(n for queue, _, _ in pairs for n in (queue, queue + 1))
    print(json.dumps({"ready": True, "queues": queues, "realtime": realtime}), flush=True)
    try:
        while not stop:
            dues = [d for d in (direction.next_due() for direction in directions) if d is not None]
            # Timer wake-ups on a loaded VM come up to ~0.7 ms late (p99, measured even from C with SCHED_FIFO):
            # wake `spin_s` early and spin the rest, so that the verdict leaves on time.
            timeout = max(0.0, min(dues) - time.time() - spin_s) if dues else 0.2
            try:
                readable, _, _ = select.select(list(fds), [], [], timeout)
            except InterruptedError:
                continue
            for fd in readable:
                fds[fd].run(block=False)
            if spin_s > 0 and dues and not readable:
                target = min(dues)
                while time.time() < target:
                    pass
            now = time.time()
            for direction in directions:
                direction.release_due(now)
    finally:
        for q in bound:
            q.unbind()
        if summary_path is not None:
            if len(pairs) == 1:
                _, c2s, s2c = pairs[0]
                summary: dict[str, Any] = {"c2s": c2s.summary(), "s2c": s2c.summary()}
            else:
                summary = {str(q): {"c2s": c2s.summary(), "s2c": s2c.summary()} for q, c2s, s2c in pairs}
            summary_path.write_text(json.dumps(summary, indent=1), encoding="utf-8")


def parse_pair(text: str, seed: int) -> tuple[int, Direction, Direction]:
    """'Q:C2S_MS:S2C_MS' -> queue Q with those one-way delays (no loss)."""
    queue, c2s_ms, s2c_ms = text.split(":")
    q = int(queue)
    return (
        q,
        Direction("c2s", float(c2s_ms) / 1000, 0.0, frozenset(), random.Random(seed + q)),
        Direction("s2c", float(s2c_ms) / 1000, 0.0, frozenset(), random.Random(seed + q + 1)),
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="NFQUEUE delay/loss/droplist impairment (router namespace)")
    ap.add_argument("--queue", type=int, default=0, help="c2s queue; s2c uses queue+1")
    ap.add_argument("--delay-c2s-ms", type=float, default=0.0)
    ap.add_argument("--delay-s2c-ms", type=float, default=0.0)
    ap.add_argument("--loss-c2s", type=float, default=0.0, help="random loss probability 0..1")
    ap.add_argument("--loss-s2c", type=float, default=0.0)
    ap.add_argument("--drop-c2s", default="", help="1-based datagram indices, e.g. 2,3")
    ap.add_argument("--drop-s2c", default="")
    ap.add_argument("--drop-c2s-finished-flight", type=int, default=0, metavar="N",
                    help="drop the first c2s datagram with a QUIC short-header packet and the N-1 after it")
    ap.add_argument("--thin-c2s-tcp-acks", type=int, default=0, metavar="K",
                    help="forward only every K-th thinnable pure TCP ACK per flow c2s (TcpAckThinning; 0 = off)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--summary", type=Path)
    ap.add_argument("--spin-ms", type=float, default=0.15, help="wake this early and spin until due")
    ap.add_argument("--rt-priority", type=int, default=50, help="SCHED_FIFO priority; 0 = normal scheduling")
    ap.add_argument("--pair", action="append", default=[], metavar="Q:C2S_MS:S2C_MS",
                    help="serve several paths (queues Q and Q+1 each) instead of --queue/--delay-*; repeatable")
    a = ap.parse_args(argv)
    if a.pair:
        pairs = [parse_pair(text, a.seed) for text in a.pair]
        serve_pairs(pairs, a.summary, a.rt_priority, a.spin_ms / 1000)
        return
    c2s = Direction("c2s", a.delay_c2s_ms / 1000, a.loss_c2s, parse_indices(a.drop_c2s), random.Random(a.seed),
                    finished_flight=a.drop_c2s_finished_flight,
                    thinning=TcpAckThinning(a.thin_c2s_tcp_acks) if a.thin_c2s_tcp_acks > 1 else None)  # fmt: skip
    s2c = Direction("s2c", a.delay_s2c_ms / 1000, a.loss_s2c, parse_indices(a.drop_s2c), random.Random(a.seed + 1))
    serve(a.queue, c2s, s2c, a.summary, a.rt_priority, a.spin_ms / 1000)


if __name__ == "__main__":
    main()
