"""The frame walker: a decrypted QUIC payload to frame rows (RFC 9000 §19, ack-frequency, DATAGRAM).

Rows go straight into column lists (`FrameColumns`), because one Python object per frame would cost
more than the decoding. Every byte of the payload ends in exactly one frame row: consecutive PADDING
bytes form one `padding` row (as tshark shows them), and an unknown or malformed frame becomes one
`unknown` row holding the rest of the payload.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aioquic.buffer import Buffer, BufferReadError

from quicack.frame_types import WIRE_NAMES

NOT_PADDING = re.compile(rb"[^\x00]")

FRAME_NAMES: dict[int, str] = WIRE_NAMES  # frame type -> name, from quicack/frame_types.csv
# Frames that do not make a packet ack-eliciting (RFC 9002 §2).
NON_ACK_ELICITING = frozenset({0x00, 0x02, 0x03, 0x1C, 0x1D})


@dataclass(frozen=True, slots=True)
class AckFrequency:
    """The fields of an ACK_FREQUENCY frame (draft-ietf-quic-ack-frequency-04 and later)."""

    sequence_number: int
    ack_eliciting_threshold: int
    request_max_ack_delay_us: int  # microseconds, unlike the max_ack_delay transport parameter (ms)
    reordering_threshold: int


@dataclass
class FrameColumns:
    """Per-frame values, one list per column; packet context columns are filled by the caller."""

    frame_index: list[int] = field(default_factory=list)
    frame_type: list[str] = field(default_factory=list)
    frame_bytes: list[int] = field(default_factory=list)
    ack_delay_raw: list[int | None] = field(default_factory=list)
    largest_acked: list[int | None] = field(default_factory=list)
    first_ack_range: list[int | None] = field(default_factory=list)
    ack_ranges: list[str | None] = field(default_factory=list)
    stream_id: list[int | None] = field(default_factory=list)
    offset: list[int | None] = field(default_factory=list)
    length: list[int | None] = field(default_factory=list)
    fin: list[bool | None] = field(default_factory=list)
    tls_messages: list[list[str] | None] = field(default_factory=list)
    # ACK_ECN counts (ECT(0), ECT(1), CE) and ACK_FREQUENCY fields by row: rare, so kept aside instead of
    # more appends per frame.
    ecn_counts: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    ack_frequency: dict[int, AckFrequency] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.frame_index)

    def truncate(self, length: int) -> None:
        """Drop the rows from `length` on (rollback of a datagram that failed half-way)."""
        for column in vars(self).values():
            if isinstance(column, list):
                del column[length:]
        for aside in (self.ecn_counts, self.ack_frequency):
            for row in [row for row in aside if row >= length]:
                del aside[row]

    def columns(self) -> dict[str, list]:
        """The rows as the contract's columns (and `ack_delay_raw`, scaled at batch time): every list above, the
        ECN counts and the ACK_FREQUENCY fields as full columns."""
        return {
            **{name: values for name, values in vars(self).items() if isinstance(values, list)},
            **{name: self.ecn_column(which) for which, name in enumerate(("ecn_ect0", "ecn_ect1", "ecn_ce"))},
            **self.ack_frequency_columns(),
        }

    def ecn_column(self, which: int) -> list[int | None]:
        """ECT(0) (0), ECT(1) (1) or CE (2) counts as a full column, null where a row has none."""
        column: list[int | None] = [None] * len(self.frame_index)
        for row, counts in self.ecn_counts.items():
            column[row] = counts[which]
        return column

    def ack_frequency_columns(self) -> dict[str, list[int | float | None]]:
        """The ACK_FREQUENCY fields as full columns (the contract's names), null where a row has none."""
        rows = len(self.frame_index)
        columns: dict[str, list[int | float | None]] = {
            name: [None] * rows
            for name in (
                "ack_frequency_sequence",
                "ack_eliciting_threshold",
                "request_max_ack_delay_ms",
                "reordering_threshold",
            )
        }
        for row, frame in self.ack_frequency.items():
            columns["ack_frequency_sequence"][row] = frame.sequence_number
            columns["ack_eliciting_threshold"][row] = frame.ack_eliciting_threshold
            columns["request_max_ack_delay_ms"][row] = frame.request_max_ack_delay_us / 1000.0
            columns["reordering_threshold"][row] = frame.reordering_threshold
        return columns

    def add(
        self,
        index: int,
        name: str,
        size: int,
        ack_delay_raw: int | None = None,
        largest_acked: int | None = None,
        first_ack_range: int | None = None,
        ack_ranges: str | None = None,
        stream_id: int | None = None,
        offset: int | None = None,
        length: int | None = None,
        fin: bool | None = None,
    ) -> None:
        self.frame_index.append(index)
        self.frame_type.append(name)
        self.frame_bytes.append(size)
        self.ack_delay_raw.append(ack_delay_raw)
        self.largest_acked.append(largest_acked)
        self.first_ack_range.append(first_ack_range)
        self.ack_ranges.append(ack_ranges)
        self.stream_id.append(stream_id)
        self.offset.append(offset)
        self.length.append(length)
        self.fin.append(fin)
        self.tls_messages.append(None)


def read_ack_frequency(buf: Buffer) -> AckFrequency:
    """Read an ACK_FREQUENCY frame's body (after its type); raises BufferReadError when it runs past the end.

    The last field was a byte of flags (Ignore Order, Ignore CE) up to draft -03 and is a varint since -04
    (quinn 0.11 sends -04); for values below 64 both encodings are the same single byte, so the size is right
    either way.
    """
    pull = buf.pull_uint_var
    return AckFrequency(pull(), pull(), pull(), pull())


# What walk_frames returns besides the rows: (frames, ack_eliciting, crypto, new connection IDs, unknown), where
# crypto is [(row in FrameColumns, stream offset, data)] or None, and unknown says why decoding stopped early.
WalkResult = tuple[int, bool, list[tuple[int, int, bytes]] | None, list[bytes] | None, str | None]


def walk_frames(payload: bytes, out: FrameColumns) -> WalkResult:
    """Append one row per frame of `payload` to `out`; never raises on malformed input."""
    buf = Buffer(data=payload)
    pull = buf.pull_uint_var
    end = len(payload)
    index = 0
    ack_eliciting = False
    crypto: list[tuple[int, int, bytes]] | None = None
    new_cids: list[bytes] = []
    unknown: str | None = None
    position = 0
    add = out.add
    while position < end:
        try:
            frame_type = pull()
            if frame_type == 0x00:
                match = NOT_PADDING.search(payload, position)
                stop = match.start() if match else end
                add(index, "padding", stop - position)
                buf.seek(stop)
                position = stop
                index += 1
                continue
            if 0x08 <= frame_type <= 0x0F:
                stream_id = pull()
                offset = pull() if frame_type & 0x04 else 0
                if frame_type & 0x02:
                    length = pull()
                    data_end = buf.tell() + length
                    if data_end > end:
                        raise BufferReadError
                else:
                    data_end = end
                    length = end - buf.tell()
                buf.seek(data_end)
                add(
                    index,
                    "stream",
                    data_end - position,
                    stream_id=stream_id,
                    offset=offset,
                    length=length,
                    fin=bool(frame_type & 0x01),
                )
                ack_eliciting = True
            elif frame_type == 0x02 or frame_type == 0x03:
                largest = pull()
                delay = pull()
                range_count = pull()
                first_range = pull()
                high = largest
                low = largest - first_range
                ranges = [f"[{low},{high}]"]
                for _ in range(range_count):
                    gap = pull()
                    range_length = pull()
                    high = low - gap - 2
                    low = high - range_length
                    ranges.append(f"[{low},{high}]")
                if frame_type == 0x03:
                    out.ecn_counts[len(out.frame_index)] = (pull(), pull(), pull())
                add(
                    index,
                    "ack",
                    buf.tell() - position,
                    ack_delay_raw=delay,
                    largest_acked=largest,
                    first_ack_range=first_range,
                    ack_ranges="[" + ",".join(ranges) + "]",
                )
            elif frame_type == 0x06:
                offset = pull()
                length = pull()
                data_start = buf.tell()
                data = buf.pull_bytes(length)
                if crypto is None:
                    crypto = []
                crypto.append((len(out.frame_index), offset, data))
                add(index, "crypto", data_start + length - position, offset=offset, length=length)
                ack_eliciting = True
            elif frame_type == 0x01 or frame_type == 0x1E or frame_type == 0x1F or frame_type == 0xAC:
                add(index, FRAME_NAMES[frame_type], buf.tell() - position)
                ack_eliciting = True
            elif frame_type == 0xAF:
                out.ack_frequency[len(out.frame_index)] = read_ack_frequency(buf)
                add(index, "ack_frequency", buf.tell() - position)
                ack_eliciting = True
            elif frame_type == 0x30 or frame_type == 0x31:
                if frame_type == 0x31:
                    length = pull()
                    if buf.tell() + length > end:
                        raise BufferReadError
                else:
                    length = end - buf.tell()
                buf.seek(buf.tell() + length)
                add(index, "datagram", buf.tell() - position, length=length)
                ack_eliciting = True
            else:
                name, other_stream_id = _skip_other_frame(frame_type, buf, new_cids)
                if name is None:
                    unknown = f"unknown frame type 0x{frame_type:x}"
                    add(index, "unknown", end - position)
                    index += 1
                    break
                add(index, name, buf.tell() - position, stream_id=other_stream_id)
                if frame_type not in NON_ACK_ELICITING:
                    ack_eliciting = True
        except BufferReadError:
            unknown = "frame runs past the end of the packet (malformed)"
            add(index, "unknown", end - position)
            index += 1
            break
        index += 1
        position = buf.tell()
    return index, ack_eliciting, crypto, new_cids or None, unknown


def _skip_other_frame(frame_type: int, buf: Buffer, new_cids: list[bytes]) -> tuple[str | None, int | None]:
    """Move past the less frequent frames; return their name (None if the type is unknown) and stream id."""
    pull = buf.pull_uint_var
    stream_id = None
    if frame_type == 0x04:  # RESET_STREAM: id, error, final size
        stream_id = pull()
        pull(), pull()
    elif frame_type == 0x05:  # STOP_SENDING: id, error
        stream_id = pull()
        pull()
    elif frame_type == 0x07:  # NEW_TOKEN
        buf.pull_bytes(pull())
    elif frame_type in (0x10, 0x12, 0x13, 0x14, 0x16, 0x17, 0x19):
        pull()
    elif frame_type in (0x11, 0x15):  # MAX_STREAM_DATA, STREAM_DATA_BLOCKED: id, value
        stream_id = pull()
        pull()
    elif frame_type == 0x18:  # NEW_CONNECTION_ID: seq, retire prior to, cid, reset token
        pull(), pull()
        cid_length = buf.pull_uint8()
        new_cids.append(buf.pull_bytes(cid_length))
        buf.pull_bytes(16)
    elif frame_type in (0x1A, 0x1B):
        buf.pull_bytes(8)
    elif frame_type == 0x1C:  # CONNECTION_CLOSE (transport): error, frame type, reason
        pull(), pull()
        buf.pull_bytes(pull())
    elif frame_type == 0x1D:  # CONNECTION_CLOSE (application): error, reason
        pull()
        buf.pull_bytes(pull())
    else:
        return None, None
    return FRAME_NAMES[frame_type], stream_id
