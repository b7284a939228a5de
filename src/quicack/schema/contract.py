"""What a table of the data contract is (its columns, types, descriptions and the stages that write it), and the
columns and types several tables share. The tables themselves are in the modules beside this one, by stage."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import polars as pl

# The pipeline's stages that write tables (workflow/rules/<stage>.smk).
INGEST, DERIVE, SCAN, DATABASE = "ingest", "derive", "scan", "database"
STAGES = (INGEST, DERIVE, SCAN, DATABASE)


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType | type[pl.DataType]
    comment: str


@dataclass(frozen=True)
class Table:
    name: str
    comment: str
    columns: tuple[Column, ...]
    # The pipeline stages that write the table (STAGES): the rules' outputs and each stage's writer read it here.
    written_by: tuple[str, ...] = ()

    @property
    def schema(self) -> dict[str, pl.DataType | type[pl.DataType]]:
        return {c.name: c.dtype for c in self.columns}

    def empty(self) -> pl.DataFrame:
        return pl.DataFrame(schema=self.schema)

    @cached_property
    def polars_schema(self) -> pl.Schema:
        return pl.Schema(self.schema)

    def conform(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Return ``frame`` with exactly this table's columns, in order and cast.

        Missing columns become nulls, so a reader that cannot know a value says so
        with a null instead of inventing one. Extra columns are an error: the
        contract grows here first. A frame that conforms already is returned as it is
        (the capture decoder's batches are conformed once more by the writer).
        """
        if frame.schema == self.polars_schema:
            return frame
        extra = set(frame.columns) - set(self.schema)
        if extra:
            raise ValueError(f"{self.name}: columns not in the data contract: {sorted(extra)}")
        return frame.select(
            [
                (pl.col(c.name) if c.name in frame.columns else pl.lit(None)).cast(c.dtype).alias(c.name)
                for c in self.columns
            ]
        )


S = pl.Utf8
F = pl.Float64
I = pl.Int64  # noqa: E741 - short alias keeps the table definitions readable
B = pl.Boolean

# frames.ack_ranges: every acknowledged range of an ACK frame, highest first, as SQL can unnest it.
ACK_RANGE = pl.Struct({"low": I, "high": I})
ACK_RANGES = pl.List(ACK_RANGE)


def ack_ranges_from_json(column: str) -> pl.Expr:
    """The producers' text form of ACK ranges, JSON ``[[low, high], ...]``, as the contract's ACK_RANGES.

    Both readers (captures and qlogs) build the text per frame, which costs far less in Python than
    building structs; polars turns it into lists of structs for a whole batch at once.
    """
    pairs = pl.col(column).str.json_decode(pl.List(pl.List(I)))
    return pairs.list.eval(pl.struct(low=pl.element().list.get(0), high=pl.element().list.get(1))).alias(column)


RUN_ID = Column(
    "run_id", S, "Identifier of the measured connection: <server>_<client>/<testcase>/<repetition> within the dataset."
)
SOURCE = Column("source", S, "Where the row comes from: 'pcap' (packet capture) or 'qlog' (implementation log).")
VANTAGE_PKT = Column(
    "vantage",
    S,
    "Observation point: 'client' or 'server' for qlogs; the capture point for captures ('sim_left' = client side of "
    "the emulated link, 'sim_right' = server side, else the capture file's stem).",
)
DIRECTION = Column("direction", S, "'c2s' (client to server) or 's2c' (server to client).")
CONNECTION_ODCID = Column(
    "connection_odcid",
    S,
    "pcap: the connection the row belongs to, named by the Destination Connection ID of its first client Initial "
    "(hex; the first long header's DCID when the capture missed that Initial); tells apart connections of one capture, "
    "which share packet numbers. qlog: null (the trace is the connection).",
)
TIME_MS = Column("time_ms", F, "Milliseconds since the first client Initial of this connection at this vantage point.")
PN_SPACE = Column("pn_space", S, "Packet number space: 'initial', 'handshake' or 'appdata' (0-RTT and 1-RTT).")
PACKET_NUMBER = Column("packet_number", I, "QUIC packet number (full, decoded).")
