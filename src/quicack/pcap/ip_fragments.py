"""IPv4 and IPv6 fragments back into whole IP packets, as tshark reassembles them.

A sender whose datagram is larger than its route's MTU and that does not force DF (Linux's default for UDP
sockets) has its kernel cut the datagram into fragments: the first carries the UDP header, the others none. Read
one by one, the first fragment's UDP length disagrees with its IP payload and the later ones are no UDP at all,
so a connection loses its first client Initial and the decoder takes the server for the client.

`FragmentReassembly` keeps the fragments of each datagram (IPv4: source, destination, protocol and
identification, RFC 791; IPv6: source, destination and identification of the Fragment header, RFC 8200) until
every byte of it is there, and then gives the whole IP packet, which `capture_file.link_to_udp` reads as if it had
come in one record: the record number and time are those of the fragment that completed it (tshark's
"reassembled in" frame). Fragments that cannot make a datagram are named in one issue each kind (`ReadIssue`),
never dropped silently: pieces still missing when the capture ends (or after `MAX_WAIT_NS` of capture time, the
Linux kernel's `ipfrag_time`), overlapping pieces whose bytes disagree, a fragment cut by the snap length, a
datagram past 65,535 bytes. Overlaps whose bytes agree (a fragment captured twice) are reassembled, as tshark does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .capture_records import ReadIssue

MAX_WAIT_NS = 30 * 1_000_000_000  # Linux's net.ipv4.ipfrag_time: a datagram's pieces are not waited for longer
# Datagrams, and bytes of their pieces, waiting at one time; beyond either, the oldest datagram is given up
# (so a capture of many never-completed large datagrams cannot exhaust memory)
MAX_PENDING_DATAGRAMS = 4096
MAX_PENDING_BYTES = 32 << 20
MAX_IP_PAYLOAD_BYTES = 65_535  # what the 16-bit length and offset fields can describe (no jumbo fragments)

MISSING = "fragments of an IP datagram whose other pieces are not in the capture: the datagram is skipped"
CONFLICT = "overlapping IP fragments whose bytes disagree: the datagram is skipped"
CUT = "IP fragment cut by the capture's snap length: its datagram cannot be reassembled and is skipped"
TOO_LONG = "IP fragment beyond 65,535 bytes of its datagram (malformed): the datagram is skipped"


@dataclass(slots=True)
class _Pending:
    """The fragments of one datagram seen so far."""

    first_record: int
    first_time_ns: int
    header: bytes | None = None  # the first fragment's (offset 0) header, fragmentation fields not yet cleared
    total: int | None = None  # the fragmentable part's length, known from the last fragment (more-fragments clear)
    pieces: dict[int, bytes] = field(default_factory=dict)  # offset -> bytes
    header_bytes: dict[int, int] = field(default_factory=dict)  # offset -> header bytes of the fragment on the wire
    # an issue was reported: the datagram's later pieces are absorbed (for MAX_WAIT_NS), not named a second time
    failed: bool = False


class FragmentReassembly:
    """The pending fragments of one capture (see the module's docstring)."""

    def __init__(self) -> None:
        self.pending: dict[tuple, _Pending] = {}
        self.pending_bytes = 0
        # datagrams given up (waited too long, or crowded out) while another fragment was added: the caller takes
        # them after each record (`take_issues`)
        self.issues: list[ReadIssue] = []

    def add(
        self, key: tuple, record: int, time_ns: int, header: bytes, offset: int, more: bool, piece: bytes,
        header_bytes: int, cut: bool,
    ) -> tuple[bytes, bytes, int] | ReadIssue | None:  # fmt: skip
        """Add one fragment: `piece`, the bytes of its datagram's fragmentable part from `offset` on, `header` what
        the reassembled packet is to carry before them when this is the first fragment, `header_bytes` what this
        fragment carried before them on the wire, `cut` whether the capture kept less than the fragment's length.
        Returns (the first fragment's `header`, the whole fragmentable part, the header bytes of all its fragments)
        when the datagram is complete, an issue when this fragment makes it fail, else None. A fragment repeated
        (same offset, same bytes) counts once."""
        entry = self.pending.get(key)
        if entry is not None and time_ns - entry.first_time_ns > MAX_WAIT_NS:
            self._give_up(key)
            entry = None
        if entry is None:
            if len(self.pending) >= MAX_PENDING_DATAGRAMS:
                self._give_up(next(iter(self.pending)))
            entry = self.pending[key] = _Pending(record, time_ns)
        if entry.failed:
            return None
        problem = self._problem(entry, offset, more, piece, cut)
        if problem is not None:
            entry.failed = True
            self.pending_bytes -= sum(len(piece) for piece in entry.pieces.values())
            entry.pieces.clear()
            return ReadIssue(record, "warning", problem)
        self.pending_bytes += len(piece) - len(entry.pieces.get(offset, b""))
        entry.pieces[offset] = piece
        entry.header_bytes[offset] = header_bytes
        if offset == 0:
            entry.header = header
        if not more:
            entry.total = offset + len(piece)
        whole = self._whole(entry)
        if whole is None:
            while self.pending_bytes > MAX_PENDING_BYTES and len(self.pending) > 1:
                self._give_up(next(iter(self.pending)))
            return None
        self._forget(key)
        assert entry.header is not None  # _whole checked
        return entry.header, whole, sum(entry.header_bytes.values())

    def take_issues(self) -> list[ReadIssue]:
        issues, self.issues = self.issues, []
        return issues

    def finish(self) -> list[ReadIssue]:
        """The issues not taken yet, and one for each datagram still waiting for pieces when the capture ends."""
        for key in list(self.pending):
            self._give_up(key)
        return self.take_issues()

    def _forget(self, key: tuple) -> _Pending:
        entry = self.pending.pop(key)
        self.pending_bytes -= sum(len(piece) for piece in entry.pieces.values())
        return entry

    def _give_up(self, key: tuple) -> None:
        entry = self._forget(key)
        if not entry.failed:
            self.issues.append(ReadIssue(entry.first_record, "warning", MISSING))

    @staticmethod
    def _problem(entry: _Pending, offset: int, more: bool, piece: bytes, cut: bool) -> str | None:
        if cut:
            return CUT
        end = offset + len(piece)
        if end > MAX_IP_PAYLOAD_BYTES:
            return TOO_LONG
        # two last fragments that disagree on the length, or a piece beyond the last fragment's end
        if entry.total is not None and (end > entry.total or not more and end != entry.total):
            return CONFLICT
        if not more and any(start + len(other) > end for start, other in entry.pieces.items()):
            return CONFLICT
        for start, other in entry.pieces.items():
            low, high = max(start, offset), min(start + len(other), end)
            if low < high and other[low - start : high - start] != piece[low - offset : high - offset]:
                return CONFLICT
        return None

    @staticmethod
    def _whole(entry: _Pending) -> bytes | None:
        """The fragmentable part when every byte of it is there, else None."""
        if entry.total is None or entry.header is None:
            return None
        covered = 0
        for start in sorted(entry.pieces):
            if start > covered:
                return None
            covered = max(covered, start + len(entry.pieces[start]))
        if covered < entry.total:
            return None
        whole = bytearray(entry.total)
        for start, piece in entry.pieces.items():
            whole[start : start + len(piece)] = piece
        return bytes(whole)
