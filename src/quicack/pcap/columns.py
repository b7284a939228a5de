"""The capture decoder's row buffers and their assembly into batches of the contract's tables.

Rows go into plain Python lists while a capture is decoded (one object per row would cost more than the
decoding). A packet row holds the row number of its datagram and a frame row belongs to the packet row before
it, so the columns a packet shares with its datagram (direction, times, datagram index, connection) and those
a frame shares with its packet are stored once and spread by a polars gather at batch time. Column names and
types come from `quicack.schema`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from quicack.reading.issues import issue_row, issues_frame
from quicack.schema import DATAGRAMS, FRAMES, INGEST_ISSUES, PACKETS, TCP_SEGMENTS, Table, ack_ranges_from_json
from quicack.schema.engine_columns import reader_schema

from .capture_file import UDP_HEADER_BYTES
from .connection import Endpoint

SOURCE = "pcap"
EVENT = "captured"
# The default ack_delay_exponent (RFC 9000 §18.2), for ACKs whose sender's transport parameters never came.
DEFAULT_ACK_DELAY_EXPONENT = 3


@dataclass(frozen=True, slots=True)
class DatagramSeen:
    """Where and when a datagram (and so each of its packets) was seen in the capture."""

    row: int  # the datagram's row in the batch being filled (a batch never splits a datagram)
    connection_odcid: str
    direction: str
    datagram_index: int  # 1-based per direction, as the QUIC Interop Runner's droplists count
    time_ms: float
    time_abs_ns: int
    record: int  # capture record number, for issue messages


@dataclass
class CaptureBatch:
    datagrams: pl.DataFrame
    packets: pl.DataFrame
    frames: pl.DataFrame
    ingest_issues: pl.DataFrame
    tcp_segments: pl.DataFrame = field(default_factory=TCP_SEGMENTS.empty)  # filled by the decoder (pcap.tcp)


DATAGRAM_COLUMNS = (
    "connection_odcid", "direction", "datagram_index", "time_ms", "time_abs_ns", "ip_header_bytes",
    "udp_payload_bytes", "quic_packets",
)  # fmt: skip
# Not output: how many frame rows each packet has, and the sending endpoint, whose ack_delay_exponent (known only
# once its transport parameters are seen) scales the ACK delays of the packet.
PACKET_COLUMNS = (
    "datagram_row", "packet_type", "pn_space", "packet_number", "packet_bytes", "header_bytes", "aead_tag_bytes",
    "ack_eliciting", "decrypted", "frames_complete", "frame_count", "sender",
)  # fmt: skip


class RowBuffers:
    """The rows of one batch, all tables, in plain lists (the pure-Python twin of `quicack_core.RowBuffers`)."""

    def __init__(self) -> None:
        # The frame walker is imported here: the compiled engine (the default) never needs it (nor aioquic).
        from .frames import FrameColumns, walk_frames

        self._walk_frames = walk_frames
        self.datagrams: dict[str, list] = {name: [] for name in DATAGRAM_COLUMNS}
        self.packets: dict[str, list] = {name: [] for name in PACKET_COLUMNS}
        self.frames = FrameColumns()
        self._packet_types = self.packets["packet_type"]

    def lengths(self) -> tuple[int, int, int]:
        return len(self.datagrams["direction"]), len(self._packet_types), len(self.frames)

    def datagram_count(self) -> int:
        return len(self.datagrams["direction"])

    def packet_count(self) -> int:
        return len(self._packet_types)

    def frame_count(self) -> int:
        return len(self.frames)

    def last_packet_type(self) -> str | None:
        return self._packet_types[-1] if self._packet_types else None

    def truncate(self, lengths: tuple[int, int, int]) -> None:
        """Drop the rows added after `lengths` (rollback of a datagram that failed half-way)."""
        for length, columns in zip(lengths[:2], (self.datagrams, self.packets), strict=True):
            for column in columns.values():
                del column[length:]
        self.frames.truncate(lengths[2])

    def add_datagram(self, *values) -> None:
        """connection_odcid, direction, datagram_index, time_ms, time_abs_ns, ip_header_bytes, udp_payload_bytes,
        quic_packets."""
        for column, value in zip(self.datagrams.values(), values, strict=True):
            column.append(value)

    def add_packet(
        self,
        datagram_row: int,
        packet_type: str,
        packet_bytes: int,
        *,
        pn_space: str | None = None,
        packet_number: int | None = None,
        header_bytes: int | None = None,
        aead_tag_bytes: int | None = None,
        ack_eliciting: bool | None = None,
        decrypted: bool | None = False,
        frames_complete: bool | None = None,
        frame_count: int = 0,
        sender: Endpoint | None = None,
    ) -> None:
        if frames_complete is None and decrypted:
            # Version Negotiation and Retry are "decrypted" and have no frames to stop at; opaque packets: unknown.
            frames_complete = True
        for column, value in zip(
            self.packets.values(),
            (
                datagram_row,
                packet_type,
                pn_space,
                packet_number,
                packet_bytes,
                header_bytes,
                aead_tag_bytes,
                ack_eliciting,
                decrypted,
                frames_complete,
                frame_count,
                sender,
            ),  # fmt: skip
            strict=True,
        ):
            column.append(value)

    def walk(self, payload: bytes) -> tuple:
        """The frames of a decrypted payload as rows: `walk_frames`'s result and whether one is an ACK."""
        first_row = len(self.frames)
        result = self._walk_frames(payload, self.frames)
        return (*result, "ack" in self.frames.frame_type[first_row:])

    def set_tls_messages(self, row: int, names: list[str] | None) -> None:
        self.frames.tls_messages[row] = names

    def columns(self) -> dict[str, dict[str, list]]:
        """The rows as three tables of columns (lists here, Arrow arrays in quicack_core), the names and the order
        of `assemble_batch`: the packet row of each frame row and the ACK delay exponent of each packet's sender
        (known now, or never: then the default) come from the rows' counts and senders."""
        frames, packets = self.frames, self.packets
        packet_columns = {name: values for name, values in packets.items() if name not in ("frame_count", "sender")}
        packet_columns["exponent"] = [
            DEFAULT_ACK_DELAY_EXPONENT if sender is None else sender.ack_delay_exponent for sender in packets["sender"]
        ]
        return {
            "datagrams": self.datagrams,
            "packets": packet_columns,
            "frames": {
                "packet_row": [row for row, count in enumerate(packets["frame_count"]) for _ in range(count)],
                **frames.columns(),
            },
        }


def _frame(table: Table, columns) -> pl.DataFrame:
    """Columns as a frame with the contract's types: lists (typed here, `reader_schema`) or quicack_core's Arrow
    table (typed there, from the same contract: quicack.schema.engine_columns)."""
    if not isinstance(columns, dict):
        return pl.DataFrame(columns)
    schema = reader_schema(table, columns)
    return pl.DataFrame([pl.Series(name, values, schema[name]) for name, values in columns.items()])


def assemble_batch(
    rows: RowBuffers, run_id: str, vantage: str, path: str, issue_rows: list[tuple[str, str]]
) -> CaptureBatch:
    """The buffered rows (a `RowBuffers` or `quicack_core.RowBuffers`) as contract frames."""
    # quicack_core gives the ACK ranges as lists of structs when asked (a core built before that: as text)
    columns = (
        rows.columns(ack_ranges_as_lists=True)  # type: ignore[call-arg]  # quicack_core's RowBuffers only (getattr)
        if getattr(rows, "ACK_RANGES_AS_LISTS", False)
        else rows.columns()
    )
    datagram_frame = _frame(DATAGRAMS, columns["datagrams"]).with_columns(
        run_id=pl.lit(run_id), vantage=pl.lit(vantage), udp_header_bytes=pl.lit(UDP_HEADER_BYTES)
    )
    packet_values = _frame(PACKETS, columns["packets"])
    shared_with_packets = datagram_frame.select(
        "connection_odcid", "direction", "time_ms", "time_abs_ns", "datagram_index"
    ).gather(packet_values["datagram_row"].cast(pl.UInt32))
    packet_frame = pl.concat([shared_with_packets, packet_values.drop("datagram_row")], how="horizontal").with_columns(
        run_id=pl.lit(run_id),
        source=pl.lit(SOURCE),
        vantage=pl.lit(vantage),
        event=pl.lit(EVENT),
        frames_logged=pl.col("decrypted"),
    )
    frame_values = _frame(FRAMES, columns["frames"])
    # ACK ranges come as the JSON text of the Python twin (and of quicack_core for a corrupt ACK whose values do
    # not fit 64 bits) or, from quicack_core, already as the contract's list of structs: parsing the text took
    # ~0.09 s of CPU on the large benchmark capture (bench/README.md).
    ack_ranges = (
        ack_ranges_from_json("ack_ranges") if frame_values.schema["ack_ranges"] == pl.Utf8 else pl.col("ack_ranges")
    )
    frame_frame = (
        packet_frame.select(
            "connection_odcid", "direction", "time_ms", "datagram_index", "pn_space", "packet_number", "exponent"
        )
        .gather(frame_values["packet_row"].cast(pl.UInt32))
        .hstack(frame_values.drop("packet_row"))
        .with_columns(
            ack_delay_ms=pl.col("ack_delay_raw").cast(pl.Float64)
            * pl.lit(2).pow(pl.col("exponent")).cast(pl.Float64)
            / 1000.0,
            ack_ranges=ack_ranges,
            run_id=pl.lit(run_id),
            source=pl.lit(SOURCE),
            vantage=pl.lit(vantage),
            event=pl.lit(EVENT),
        )
        .drop("exponent", "ack_delay_raw")
    )
    packet_frame = packet_frame.drop("exponent")
    issues = issues_frame(issue_row(path, run_id, "pcap", severity, message) for severity, message in issue_rows)
    return CaptureBatch(
        DATAGRAMS.conform(datagram_frame),
        PACKETS.conform(packet_frame),
        FRAMES.conform(frame_frame),
        INGEST_ISSUES.conform(issues),
    )
