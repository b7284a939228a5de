"""TCP segments of a capture: their header, options and payload sizes, for the `tcp_segments` table.

`reader.link_to_udp` hands TCP segments here (`tcp_segment`) once it has stripped the link and IP layers, so TCP
goes through the same record path as UDP (every link type, pcap and pcapng, compressed files). `TcpRows` gives each
segment its connection, direction, per-direction index and time, and turns a batch of them into a frame.

Sizes come from the IP total length and the TCP data offset, never from the captured length, so a capture cut by
its snap length still gives them (only the options must be captured to be told apart). Option bytes are split into
the Timestamps option, the SACK option and the rest, each with the NOP/EOL bytes that pad it: a NOP counts with
the option after it (Linux writes NOP NOP TS and NOP NOP SACK), trailing NOP/EOL bytes after the last option with
that last option, so that the parts add up to the data offset exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from quicack.schema import TCP_SEGMENTS

from .capture_records import ReadIssue

TCP_FIXED_HEADER_BYTES = 20
TCP_FIN, TCP_SYN, TCP_RST, TCP_ACK = 0x01, 0x02, 0x04, 0x10
OPTION_END, OPTION_NOP, OPTION_SACK, OPTION_TIMESTAMPS = 0, 1, 5, 8
TIMESTAMPS, SACK, OTHER = 0, 1, 2  # where option bytes go
SACK_BLOCK_BYTES = 8


@dataclass(slots=True)  # built per segment: not frozen (slow to build)
class TcpSegment:
    """One TCP segment as it went over the wire."""

    record_number: int
    time_abs_ns: int
    src: str
    dst: str
    src_port: int
    dst_port: int
    ip_bytes: int
    ip_header_bytes: int
    header_bytes: int  # TCP data offset: fixed header and options
    timestamp_option_bytes: int
    sack_option_bytes: int
    other_option_bytes: int
    sack_blocks: int
    seq: int
    ack: int
    flags: int
    window: int


def split_options(options: bytes, length: int) -> tuple[int, int, int, int] | None:
    """(timestamp, SACK, other option bytes, SACK blocks) of an options area of `length` bytes, of which `options`
    were captured; None when the captured bytes end inside the area or an option's length is impossible."""
    if len(options) < length:
        return None
    sizes = [0, 0, 0]
    blocks = 0
    padding = 0  # NOPs waiting for the option they pad
    last = OTHER
    at = 0
    while at < length:
        kind = options[at]
        if kind == OPTION_NOP:
            padding += 1
            at += 1
            continue
        if kind == OPTION_END:
            padding += length - at  # the end-of-list byte and the zeros after it pad the last option
            break
        if at + 1 >= length or options[at + 1] < 2 or at + options[at + 1] > length:
            return None
        size = options[at + 1]
        last = TIMESTAMPS if kind == OPTION_TIMESTAMPS else SACK if kind == OPTION_SACK else OTHER
        if last == SACK:
            blocks = (size - 2) // SACK_BLOCK_BYTES
        sizes[last] += padding + size
        padding = 0
        at += size
    sizes[last] += padding
    return sizes[TIMESTAMPS], sizes[SACK], sizes[OTHER], blocks


def tcp_segment(
    record_number: int, time_abs_ns: int, data: bytes, at: int, ip_header_bytes: int, ip_bytes: int, src: str, dst: str
) -> TcpSegment | ReadIssue:
    """The TCP segment whose header starts at ``data[at]`` in an IP packet of ``ip_bytes`` bytes on the wire."""
    if len(data) < at + TCP_FIXED_HEADER_BYTES:
        return ReadIssue(
            record_number, "warning", "TCP header truncated in capture (snap length too small): segment skipped"
        )
    header = data[at : at + TCP_FIXED_HEADER_BYTES]
    header_bytes = (header[12] >> 4) * 4
    if header_bytes < TCP_FIXED_HEADER_BYTES or ip_header_bytes + header_bytes > ip_bytes:
        return ReadIssue(record_number, "warning", "TCP data offset inconsistent with the IP length: segment skipped")
    options_length = header_bytes - TCP_FIXED_HEADER_BYTES
    split = (
        split_options(data[at + TCP_FIXED_HEADER_BYTES : at + header_bytes], options_length)
        if options_length
        else (0, 0, 0, 0)
    )
    if split is None:
        return ReadIssue(record_number, "warning", "TCP options cut by the capture or malformed: segment skipped")
    timestamps, sack, other, blocks = split
    return TcpSegment(
        record_number, time_abs_ns, src, dst, int.from_bytes(header[0:2], "big"), int.from_bytes(header[2:4], "big"),
        ip_bytes, ip_header_bytes, header_bytes, timestamps, sack, other, blocks,
        int.from_bytes(header[4:8], "big"), int.from_bytes(header[8:12], "big"), header[13],
        int.from_bytes(header[14:16], "big"),
    )  # fmt: skip


@dataclass(slots=True)
class _Flow:
    connection: str
    direction: str
    origin_ns: int  # the connection's first segment in this capture


# Columns TcpRows fills per segment, in TCP_SEGMENTS' order where they are its columns.
_ROW_COLUMNS = (
    "connection", "direction", "segment_index", "time_ms", "time_abs_ns", "ip_bytes", "ip_header_bytes",
    "option_bytes", "timestamp_option_bytes", "sack_option_bytes", "other_option_bytes", "seq", "ack", "flags",
    "sack_blocks", "window",
)  # fmt: skip


class TcpRows:
    """TCP segments of one capture as rows: which connection and direction each belongs to, its index and time."""

    def __init__(self) -> None:
        self.flows: dict[tuple[str, int, str, int], _Flow] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.total = 0
        self.columns: dict[str, list] = {name: [] for name in _ROW_COLUMNS}

    def _flow(self, segment: TcpSegment) -> _Flow:
        forward = (segment.src, segment.src_port, segment.dst, segment.dst_port)
        flow = self.flows.get(forward)
        if flow is not None:
            return flow
        syn = segment.flags & TCP_SYN
        # The SYN's sender is the client; a capture that starts later: the side with the higher (ephemeral) port.
        client_is_src = not segment.flags & TCP_ACK if syn else segment.src_port > segment.dst_port
        client = f"{segment.src}:{segment.src_port}" if client_is_src else f"{segment.dst}:{segment.dst_port}"
        backward = (segment.dst, segment.dst_port, segment.src, segment.src_port)
        flow = self.flows[forward] = _Flow(client, "c2s" if client_is_src else "s2c", segment.time_abs_ns)
        self.flows[backward] = _Flow(client, "s2c" if client_is_src else "c2s", segment.time_abs_ns)
        return flow

    def add(self, segment: TcpSegment) -> None:
        flow = self._flow(segment)
        key = (flow.connection, flow.direction)
        index = self.counts.get(key, 0) + 1
        self.counts[key] = index
        self.total += 1
        values = (
            flow.connection, flow.direction, index, (segment.time_abs_ns - flow.origin_ns) / 1e6, segment.time_abs_ns,
            segment.ip_bytes, segment.ip_header_bytes, segment.header_bytes - TCP_FIXED_HEADER_BYTES,
            segment.timestamp_option_bytes, segment.sack_option_bytes, segment.other_option_bytes, segment.seq,
            segment.ack, segment.flags, segment.sack_blocks, segment.window,
        )  # fmt: skip
        for column, value in zip(self.columns.values(), values, strict=True):
            column.append(value)

    def take(self, run_id: str, vantage: str) -> pl.DataFrame:
        """The rows added since the last take, as a `tcp_segments` frame."""
        columns, self.columns = self.columns, {name: [] for name in _ROW_COLUMNS}
        if not columns["direction"]:
            return TCP_SEGMENTS.empty()
        frame = pl.DataFrame(
            columns, schema_overrides={name: pl.Int64 for name in _ROW_COLUMNS[2:] if name != "time_ms"}
        )
        return _segments_frame(frame, run_id, vantage)


class CompiledTcpRows:
    """`TcpRows` with the rows in quicack_core's `TcpRows` (its twin), which the compiled pcap lane fills with the
    segments it reads itself (`core`), the Python reader's going there too, in file order."""

    def __init__(self) -> None:
        import quicack_core

        self.core = quicack_core.TcpRows()

    @property
    def total(self) -> int:
        return self.core.total

    def add(self, segment: TcpSegment) -> None:
        self.core.add(segment)

    def take(self, run_id: str, vantage: str) -> pl.DataFrame:
        """The rows added since the last take, as a `tcp_segments` frame."""
        frame = pl.DataFrame(self.core.take())  # the Arrow table of `_ROW_COLUMNS`, typed as `TcpRows.take`'s
        if not frame.height:
            return TCP_SEGMENTS.empty()
        return _segments_frame(frame, run_id, vantage)


def _segments_frame(frame: pl.DataFrame, run_id: str, vantage: str) -> pl.DataFrame:
    """A `tcp_segments` frame from the rows of `_ROW_COLUMNS`."""
    flags = pl.col("flags")
    return TCP_SEGMENTS.conform(
        frame.with_columns(
            run_id=pl.lit(run_id),
            vantage=pl.lit(vantage),
            tcp_header_bytes=pl.lit(TCP_FIXED_HEADER_BYTES),
            payload_bytes=pl.col("ip_bytes")
            - pl.col("ip_header_bytes")
            - TCP_FIXED_HEADER_BYTES
            - pl.col("option_bytes"),
            pure_ack=((flags & TCP_ACK) != 0) & ((flags & (TCP_SYN | TCP_FIN | TCP_RST)) == 0),
        )
        .with_columns(pure_ack=pl.col("pure_ack") & (pl.col("payload_bytes") == 0))
        .drop("option_bytes")
    )
