"""pcapng blocks to link-layer records, resynchronising after a corrupt block.

A pcapng block states its total length twice, at its start and at its end. A block whose two lengths disagree,
whose length is impossible, or whose body is shorter than its type requires is corrupt: it costs one issue and
the reader searches forward for the next position where a known block type starts and both length fields
agree, so the packets after a damaged block are kept. Memory is bounded by one block (at most
``Limits.max_record_bytes``) plus one read chunk.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import BinaryIO

from quicack.reading.limits import Limits, config_key

from .capture_records import MAX_TIME_NS, LinkRecord, ReadIssue, TlsKeylogSecrets

SHB_TYPE_BYTES = b"\x0a\x0d\x0d\x0a"
BYTE_ORDER_MAGIC = 0x1A2B3C4D
IDB = 0x00000001
PB = 0x00000002  # obsolete Packet Block: an EPB with 16-bit interface id and drops count (pcapng before 2010)
SPB = 0x00000003
NRB = 0x00000004
ISB = 0x00000005
EPB = 0x00000006
DSB = 0x0000000A
CUSTOM_COPYABLE = 0x00000BAD
CUSTOM_NOT_COPYABLE = 0x40000BAD
DSB_TLS_KEYLOG = 0x544C534B
KNOWN_BLOCK_TYPES = (IDB, PB, SPB, NRB, ISB, EPB, DSB, CUSTOM_COPYABLE, CUSTOM_NOT_COPYABLE)
# Smallest body (after type and length, before the trailing length) each block type needs to be read.
MIN_BODY_BYTES = {IDB: 8, PB: 20, SPB: 4, EPB: 20, DSB: 8}
OPTION_END, OPTION_IF_TSRESOL, OPTION_IF_TSOFFSET = 0, 9, 14
CHUNK_BYTES = 1 << 20


class _Window:
    """The unread part of the stream, read a chunk at a time; ``start`` is its offset in the stream."""

    def __init__(self, stream: BinaryIO, head: bytes) -> None:
        self.read = stream.read
        self.data = head
        self.position = 0  # next unread byte in data
        self.start = 0  # stream offset of data[0]
        self.eof = False

    @property
    def offset(self) -> int:
        return self.start + self.position

    def available(self) -> int:
        return len(self.data) - self.position

    def fill(self, need: int) -> bool:
        """True when at least ``need`` unread bytes are in the window (reads more when needed)."""
        while self.available() < need and not self.eof:
            if self.position:
                self.start += self.position
                self.data = self.data[self.position :]
                self.position = 0
            chunk = self.read(max(CHUNK_BYTES, need - len(self.data)))
            if chunk:
                self.data += chunk
            else:
                self.eof = True
        return self.available() >= need


def read_pcapng(stream: BinaryIO, head: bytes, limits: Limits) -> Iterator[LinkRecord | ReadIssue | TlsKeylogSecrets]:
    window = _Window(stream, head)
    endian = "<"
    interfaces: list[tuple[int, int, int]] = []  # (linktype, ticks per second, seconds added to every timestamp)
    number = 0
    while window.fill(1):
        if not window.fill(12):
            yield ReadIssue(number or None, "error", "capture ends inside a block header (truncated file)")
            return
        data, at = window.data, window.position
        is_section = data[at : at + 4] == SHB_TYPE_BYTES
        if is_section:
            (bom,) = struct.unpack_from("<I", data, at + 8)
            endian = "<" if bom == BYTE_ORDER_MAGIC else ">"
        block_type, total_length = struct.unpack_from(endian + "II", data, at)
        problem = _framing_problem(window, endian, total_length, limits)
        if problem is None and not is_section and block_type in MIN_BODY_BYTES:
            if total_length - 12 < MIN_BODY_BYTES[block_type]:
                problem = f"block of type {block_type:#x} is {total_length} bytes, too short for its fields"
        if problem is not None:
            yield from _resynchronise(window, endian, number, problem, limits)
            continue
        at = window.position  # the framing check may have moved the window
        body = window.data[at + 8 : at + total_length - 4]
        window.position += total_length
        if is_section:
            interfaces = []
            continue
        if block_type == IDB:
            linktype = struct.unpack_from(endian + "H", body)[0]
            interfaces.append((linktype, *_timestamp_options(body[8:], endian)))
        elif block_type == EPB or block_type == PB:
            number += 1
            if block_type == EPB:
                interface_id, ts_high, ts_low, caplen, wire_length = struct.unpack_from(endian + "IIIII", body)
            else:  # the obsolete Packet Block: the same fields, but a 16-bit interface id and drops count
                interface_id, _drops, ts_high, ts_low, caplen, wire_length = struct.unpack_from(endian + "HHIIII", body)
            if interface_id >= len(interfaces):
                yield ReadIssue(number, "error", f"packet refers to unknown interface {interface_id}")
                continue
            linktype, ticks, offset_s = interfaces[interface_id]
            ticks_total = (ts_high << 32) | ts_low
            time_ns = ticks_total * 1_000_000_000 // ticks if ticks != 1_000_000_000 else ticks_total
            time_ns += offset_s * 1_000_000_000
            if abs(time_ns) > MAX_TIME_NS:  # 64-bit ticks (and offsets) can exceed the tables' int64 nanoseconds
                yield ReadIssue(number, "error", "packet time outside the years 1678-2262 (corrupt block): skipped")
                continue
            yield LinkRecord(number, time_ns, linktype, body[20 : 20 + caplen], wire_length)
        elif block_type == SPB:
            number += 1
            if not interfaces:
                yield ReadIssue(number, "error", "simple packet block without interface")
                continue
            (wire_length,) = struct.unpack_from(endian + "I", body)
            yield LinkRecord(number, 0, interfaces[0][0], body[4 : 4 + wire_length], wire_length)
        elif block_type == DSB:
            secrets_type, secrets_length = struct.unpack_from(endian + "II", body)
            if secrets_type == DSB_TLS_KEYLOG:
                yield TlsKeylogSecrets(body[8 : 8 + secrets_length].decode("utf-8", "replace"))


PAST_THE_END = "runs past the end of the file"


def _framing_problem(window: _Window, endian: str, total_length: int, limits: Limits) -> str | None:
    """Why the block at the window's position is not a well-framed block; None when it is (and is in the window)."""
    if total_length < 12 or total_length % 4:
        return f"block length {total_length} is invalid"
    if total_length > limits.max_record_bytes:
        return f"block length {total_length} exceeds {limits.max_record_bytes} bytes ({config_key('max_record_bytes')})"
    if not window.fill(total_length):
        return f"block length {total_length} {PAST_THE_END}"
    at = window.position
    (trailing,) = struct.unpack_from(endian + "I", window.data, at + total_length - 4)
    if trailing != total_length:
        return f"block length {total_length} disagrees with its trailing copy {trailing}"
    return None


def _candidate_pattern(endian: str) -> re.Pattern[bytes]:
    types = [struct.pack(endian + "I", t) for t in KNOWN_BLOCK_TYPES] + [SHB_TYPE_BYTES]
    return re.compile(b"|".join(re.escape(t) for t in types))


def _resynchronise(
    window: _Window, endian: str, number: int, problem: str, limits: Limits
) -> Iterator[ReadIssue]:
    """Skip forward to the next well-framed block of a known type; one issue for the bytes skipped."""
    corrupt_at = window.offset
    pattern = _candidate_pattern(endian)
    window.position += 1
    while True:
        match = pattern.search(window.data, window.position)
        if match is None:
            # Keep the last 3 bytes: a block type may straddle the chunk boundary.
            window.position = max(window.position, len(window.data) - 3)
            if window.eof or not window.fill(window.available() + 1):
                window.position = len(window.data)
                yield _rest_skipped(number, corrupt_at, problem)
                return
            continue
        window.position = match.start()
        if not window.fill(12):  # fewer than a block header's bytes are left
            window.position = len(window.data)
            yield _rest_skipped(number, corrupt_at, problem)
            return
        data, at = window.data, window.position
        candidate_endian = endian
        if data[at : at + 4] == SHB_TYPE_BYTES:
            (bom,) = struct.unpack_from("<I", data, at + 8)
            if bom not in (BYTE_ORDER_MAGIC, 0x4D3C2B1A):
                window.position += 1
                continue
            candidate_endian = "<" if bom == BYTE_ORDER_MAGIC else ">"
        (total_length,) = struct.unpack_from(candidate_endian + "I", data, at + 4)
        if _framing_problem(window, candidate_endian, total_length, limits) is None:
            yield ReadIssue(
                number or None,
                "error",
                f"corrupt pcapng block at byte {corrupt_at} ({problem}); skipped {window.offset - corrupt_at} "
                f"bytes to the next valid block at byte {window.offset}",
            )
            return
        window.position += 1


def _rest_skipped(number: int, corrupt_at: int, problem: str) -> ReadIssue:
    if problem.endswith(PAST_THE_END):
        # no well-framed block follows a block that runs past the end: the file was cut (a capture stopped
        # mid-write), the common case, and worth its own words
        return ReadIssue(
            number or None, "error", f"capture ends inside the block at byte {corrupt_at} (truncated file): {problem}"
        )
    return ReadIssue(
        number or None,
        "error",
        f"corrupt pcapng block at byte {corrupt_at} ({problem}); no valid block after it: the rest of the file "
        "is skipped",
    )


def _timestamp_options(options: bytes, endian: str) -> tuple[int, int]:
    """(ticks per second, seconds to add) of an interface description block's timestamps: its if_tsresol (option
    9; default microseconds) and if_tsoffset (option 14: a signed 64-bit number of seconds; default 0)."""
    ticks, offset_s = 1_000_000, 0
    position = 0
    while position + 4 <= len(options):
        code, length = struct.unpack_from(endian + "HH", options, position)
        if code == OPTION_END:
            break
        value = options[position + 4 : position + 4 + length]
        if code == OPTION_IF_TSRESOL and len(value) >= 1:
            resolution = value[0]
            ticks = 2 ** (resolution & 0x7F) if resolution & 0x80 else 10**resolution
        elif code == OPTION_IF_TSOFFSET and len(value) == 8:
            (offset_s,) = struct.unpack(endian + "q", value)
        position += 4 + ((length + 3) & ~3)
    return ticks, offset_s
