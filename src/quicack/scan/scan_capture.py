"""A scan capture, decoded by the capture decoder, reduced to what the classification needs per connection.

`decode_capture` streams batches of datagram, packet and frame rows (memory bounded by its batch size; it keeps
per-connection state — addresses, connection IDs, keys, CRYPTO stream positions — for every connection until the
end of the capture, so memory grows with connections, not with packets). Its tables do not yet name the
connection of a row, so each batch is tied to connections here:

* datagram rows ↔ the `identify` pass over the same file, in file order, matched by (capture time, UDP size)
  within a small look-ahead window (the two passes see the same datagrams in the same order; the window only
  absorbs a datagram one side skips). With the compiled core both the pass and the matching run there
  (`identify_core`), else in Python (`identify.ConnectionIdentifier`, `_Matcher`);
* packet rows ↔ datagram rows by (direction, datagram_index): the decoder numbers datagrams per direction over
  the whole capture, so the pair is unique;
* frame rows ↔ packet rows by position: the decoder writes a packet's frames in packet order, ``frame_index``
  restarting at 0, and every decrypted QUIC packet has at least one frame (checked: a mismatch is an issue).

# contract v2: with a connection id in datagrams/packets/frames and datagram_index in frames, the three joins
# above become plain columns and this module keeps only `server_datagram_facts`.

Kept per batch, and so for the whole capture, are only the rows the classification reads: server datagrams
holding an Initial ACK or a ServerHello, the client's Initial packets (for the RTT sample), and counts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

import polars as pl

from quicack.metrics.scalars import integer
from quicack.pcap import CaptureBatch, decode_capture
from quicack.reading.issues import issue_row, issues_frame
from quicack.schema import INGEST_ISSUES

from .identify import ConnectionIdentifier, DatagramOwner, datagram_owners
from .identify_core import CompiledIdentify, compiled_identify

# How far ahead in the identify pass a decoder datagram is looked for.
MATCH_WINDOW = 64
FRAME_CARRYING_TYPES = ("initial", "handshake", "0rtt", "1rtt")

SERVER_DATAGRAM_SCHEMA = {
    "connection": pl.Int64,
    "datagram_index": pl.Int64,
    "time_abs_ns": pl.Int64,
    "udp_payload_bytes": pl.Int64,
    "has_initial_ack": pl.Boolean,
    "has_server_hello": pl.Boolean,
    "padded": pl.Boolean,
    "ack_delay_ms": pl.Float64,
    "largest_acked": pl.Int64,
    "first_ack_range": pl.Int64,
    "batch": pl.Int64,
}
CLIENT_INITIAL_SCHEMA = {"connection": pl.Int64, "packet_number": pl.Int64, "time_abs_ns": pl.Int64}
COUNT_SCHEMA = {"connection": pl.Int64, "client_datagrams": pl.Int64, "server_datagrams": pl.Int64}
ENCRYPTED_EXTENSIONS_SCHEMA = {"connection": pl.Int64, "batch": pl.Int64}


@dataclass
class CaptureFacts:
    """What a scan capture says per connection, as frames (see the schemas above)."""

    connections: pl.DataFrame
    server_datagrams: pl.DataFrame
    client_initials: pl.DataFrame
    counts: pl.DataFrame
    # First batch in which the decoder read the server's EncryptedExtensions (its transport parameters): from
    # then on it decodes that server's ACK Delays with the server's ack_delay_exponent, before with 3.
    encrypted_extensions: pl.DataFrame
    issues: pl.DataFrame


@dataclass
class _Parts:
    server_datagrams: list[pl.DataFrame] = field(default_factory=list)
    client_initials: list[pl.DataFrame] = field(default_factory=list)
    counts: list[pl.DataFrame] = field(default_factory=list)
    encrypted_extensions: list[pl.DataFrame] = field(default_factory=list)
    issues: list[pl.DataFrame] = field(default_factory=list)


class _Matcher:
    """Pairs the decoder's datagram rows with the identify pass's datagrams, both in file order (the Python twin of
    `identify_core.CompiledIdentify`)."""

    def __init__(self, owners: Iterator[DatagramOwner], identifier: ConnectionIdentifier) -> None:
        self.owners = owners
        self.connection_frame = identifier.connection_frame
        self.window: deque[DatagramOwner] = deque()
        self.unmatched = 0

    def connections_of(self, times: list[int], sizes: list[int]) -> list[int | None]:
        found: list[int | None] = []
        window = self.window
        for time_abs_ns, size in zip(times, sizes, strict=True):
            if len(window) < MATCH_WINDOW:
                window.extend(islice(self.owners, MATCH_WINDOW - len(window)))
            for position, owner in enumerate(window):
                if owner.time_abs_ns == time_abs_ns and owner.udp_payload_bytes == size:
                    for _ in range(position + 1):  # datagrams before the match are ones the decoder skipped
                        window.popleft()
                    found.append(owner.connection)
                    break
            else:
                self.unmatched += 1
                found.append(None)
        return found


def read_capture_facts(
    capture: Path,
    keylogs: list[Path],
    run_id: str,
    vantage: str,
    on_batch: Callable[[CaptureBatch], None] | None = None,
) -> CaptureFacts:
    """Decode a scan capture (``on_batch`` receives the decoder's tables, e.g. to write them) and reduce it."""
    matcher = _identify_pass(capture)
    parts = _Parts()
    try:
        for number, batch in enumerate(decode_capture(capture, keylogs, run_id, vantage)):
            if on_batch is not None:
                on_batch(batch)
            parts.issues.append(batch.ingest_issues)
            if batch.datagrams.is_empty():
                continue
            _reduce_batch(batch, number, matcher, parts, capture, run_id)
    finally:
        if isinstance(matcher, CompiledIdentify):
            matcher.close()
    issues = [frame for frame in parts.issues if not frame.is_empty()]
    if matcher.unmatched:
        issues.append(
            _issue(
                capture,
                run_id,
                "warning",
                f"{matcher.unmatched} decoded datagram(s) could not be tied to a connection; they are left out of the "
                "classification",
            )
        )
    return CaptureFacts(
        connections=matcher.connection_frame(),
        server_datagrams=_concat(parts.server_datagrams, SERVER_DATAGRAM_SCHEMA),
        client_initials=_concat(parts.client_initials, CLIENT_INITIAL_SCHEMA),
        counts=_concat(parts.counts, COUNT_SCHEMA).group_by("connection").agg(pl.all().sum()),
        encrypted_extensions=_concat(parts.encrypted_extensions, ENCRYPTED_EXTENSIONS_SCHEMA)
        .group_by("connection")
        .agg(pl.col("batch").min()),
        issues=pl.concat(issues, how="vertical") if issues else INGEST_ISSUES.empty(),
    )


def _identify_pass(capture: Path) -> _Matcher | CompiledIdentify:
    """The identify pass in the compiled core where it can read the capture, else the Python one."""
    compiled = compiled_identify(capture)
    if compiled is not None:
        return compiled
    identifier = ConnectionIdentifier()
    return _Matcher(datagram_owners(capture, identifier), identifier)


def _reduce_batch(
    batch: CaptureBatch, number: int, matcher: _Matcher | CompiledIdentify, parts: _Parts, capture: Path, run_id: str
) -> None:
    datagrams = batch.datagrams.select("direction", "datagram_index", "time_abs_ns", "udp_payload_bytes")
    owners = matcher.connections_of(datagrams["time_abs_ns"].to_list(), datagrams["udp_payload_bytes"].to_list())
    datagrams = datagrams.with_columns(connection=pl.Series(owners, dtype=pl.Int64)).filter(
        pl.col("connection").is_not_null()
    )
    parts.counts.append(
        datagrams.group_by("connection").agg(
            client_datagrams=(pl.col("direction") == "c2s").sum().cast(pl.Int64),
            server_datagrams=(pl.col("direction") == "s2c").sum().cast(pl.Int64),
        )
    )
    packets = (
        batch.packets.select("direction", "datagram_index", "packet_type", "pn_space", "packet_number", "decrypted")
        .with_row_index("packet_row")
        .join(
            datagrams.select("direction", "datagram_index", "connection", "time_abs_ns"),
            on=["direction", "datagram_index"],
            how="left",
        )
    )
    parts.client_initials.append(
        packets.filter((pl.col("direction") == "c2s") & (pl.col("pn_space") == "initial") & pl.col("decrypted"))
        .select("connection", "packet_number", "time_abs_ns")
        .drop_nulls("connection")
    )
    frames = _frames_with_packets(batch.frames, packets, capture, run_id, parts)
    if frames is None:
        return
    server = frames.filter(pl.col("direction") == "s2c")
    parts.encrypted_extensions.append(
        server.filter(pl.col("tls_messages").list.contains("encrypted_extensions"))
        .select("connection", batch=pl.lit(number, pl.Int64))
        .unique()
    )
    parts.server_datagrams.append(server_datagram_facts(server, datagrams, packets, number))


def _frames_with_packets(
    frames: pl.DataFrame, packets: pl.DataFrame, capture: Path, run_id: str, parts: _Parts
) -> pl.DataFrame | None:
    """Frame rows with their packet's connection, datagram index and time, matched by position (see above)."""
    owners = packets.filter(pl.col("decrypted") & pl.col("packet_type").is_in(FRAME_CARRYING_TYPES)).with_row_index(
        "owner"
    )
    frames = frames.with_columns(owner=(pl.col("frame_index") == 0).cum_sum().cast(pl.UInt32) - 1)
    joined = frames.join(
        owners.select(
            "owner",
            "connection",
            "datagram_index",
            "time_abs_ns",
            owner_direction="direction",
            owner_space="pn_space",
            owner_number="packet_number",
        ),
        on="owner",
        how="left",
    )
    consistent = (
        (pl.col("owner_direction") == pl.col("direction"))
        & (pl.col("owner_space") == pl.col("pn_space"))
        & (pl.col("owner_number") == pl.col("packet_number"))
    ).fill_null(False)
    if frames.height != 0 and (
        owners.height != integer(frames["owner"].max()) + 1 or not joined.select(consistent.all()).item()
    ):
        parts.issues.append(
            _issue(
                capture,
                run_id,
                "error",
                "frame rows do not line up with packet rows in a decoder batch; that batch is left out of the "
                "classification",
            )
        )
        return None
    return joined.drop("owner", "owner_direction", "owner_space", "owner_number")


def server_datagram_facts(
    server_frames: pl.DataFrame, datagrams: pl.DataFrame, packets: pl.DataFrame, batch: int
) -> pl.DataFrame:
    """One row per server datagram that carries an Initial ACK or a ServerHello: the facts the classes use.

    ``padded``: the datagram carries PADDING frames or zero bytes after its last packet (how a padded instant ACK
    reaches 1200 bytes); the first Initial ACK frame's fields are the datagram's ACK fields."""
    initial = pl.col("pn_space") == "initial"
    is_ack = initial & (pl.col("frame_type") == "ack")
    server = pl.col("direction") == "s2c"
    trailing_zeros = (
        packets.filter(server & (pl.col("packet_type") == "datagram_padding")).select("datagram_index").unique()
    )
    return (
        server_frames.drop_nulls("connection")
        .group_by("connection", "datagram_index", maintain_order=True)
        .agg(
            time_abs_ns=pl.col("time_abs_ns").first(),
            has_initial_ack=is_ack.any(),
            has_server_hello=(initial & pl.col("tls_messages").list.contains("server_hello").fill_null(False)).any(),
            padding_frames=(pl.col("frame_type") == "padding").any(),
            ack_delay_ms=pl.col("ack_delay_ms").filter(is_ack).first(),
            largest_acked=pl.col("largest_acked").filter(is_ack).first(),
            first_ack_range=pl.col("first_ack_range").filter(is_ack).first(),
        )
        .filter(pl.col("has_initial_ack") | pl.col("has_server_hello"))
        .join(datagrams.filter(server).select("datagram_index", "udp_payload_bytes"), on="datagram_index", how="left")
        .with_columns(
            padded=pl.col("padding_frames")
            | pl.col("datagram_index").is_in(trailing_zeros["datagram_index"].implode()),
            batch=pl.lit(batch, pl.Int64),
        )
        .select(list(SERVER_DATAGRAM_SCHEMA))
    )


def _issue(path: Path, run_id: str, severity: str, message: str) -> pl.DataFrame:
    return issues_frame([issue_row(str(path), run_id, "scan", severity, message)])


def _concat(frames: list[pl.DataFrame], schema: dict) -> pl.DataFrame:
    frames = [frame.cast(schema) for frame in frames if not frame.is_empty()]
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=schema)
