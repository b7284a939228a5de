"""The ``ack_breakdown`` table: the bytes each direction of a capture spent, by component (ackfreq22 Fig. 3,
rethink Fig. 2 / Table 3, tcpquic's anatomy).

Components of a QUIC direction: ``ip_header``, ``udp_header``, ``quic_header``, ``aead_tag``, one ``frame:<type>``
per frame type (``frame:ack``, ``frame:stream``, ``frame:padding``, ...), ``datagram_padding`` (zeros after a
datagram's last packet) and ``undecrypted`` (whole packets that could not be read: no keys, cut by the snap length,
not QUIC). They add up exactly to the IP bytes of the direction, because the decoder's byte accounting does
(ip + udp + packets = datagram; header + tag + frames = packet; tested on every capture).

Components of a TCP direction (Linux TCP runs, from ``tcp_segments``): ``ip_header``, ``tcp_header`` (the 20-byte
fixed part), ``tcp_timestamp_option``, ``tcp_sack_option``, ``tcp_other_options`` (each option with its NOP
padding) and ``tcp_payload``; they add up exactly to the IP bytes, because a segment's do (tested on every capture).
A component's ``packets`` counts the segments that carried it (bytes > 0).

``after_first_rtt`` splits each direction at the end of the first round trip as seen at the capture point: the
first client datagram after the first server datagram (at the client side one RTT after the first Initial; at the
server side the client's answer to the server's first flight). That datagram and all later ones are after it;
rethink counts the return path from there, leaving out the handshake's padded Initials. TCP likewise: the first
client segment after the server's first (the SYN-ACK), i.e. the client's ACK completing the handshake.
"""

from __future__ import annotations

import polars as pl

from quicack.schema import ACK_BREAKDOWN

KEYS = ["run_id", "vantage", "direction", "after_first_rtt"]
# ack_breakdown component of each tcp_segments size column; together they are the segment's IP bytes.
TCP_COMPONENTS = {
    "ip_header": "ip_header_bytes",
    "tcp_header": "tcp_header_bytes",
    "tcp_timestamp_option": "timestamp_option_bytes",
    "tcp_sack_option": "sack_option_bytes",
    "tcp_other_options": "other_option_bytes",
    "tcp_payload": "payload_bytes",
}


def first_rtt_end(datagrams: pl.DataFrame) -> pl.DataFrame:
    """Per (run_id, vantage): time of the first c2s datagram after the first s2c datagram (null when none). Works on
    tcp_segments alike (the same run_id, vantage, direction and time_ms columns)."""
    first_server = (
        datagrams.filter(pl.col("direction") == "s2c")
        .group_by("run_id", "vantage")
        .agg(pl.col("time_ms").min().alias("first_server_ms"))
    )
    return (
        datagrams.filter(pl.col("direction") == "c2s")
        .join(first_server, on=["run_id", "vantage"])
        .filter(pl.col("time_ms") > pl.col("first_server_ms"))
        .group_by("run_id", "vantage")
        .agg(pl.col("time_ms").min().alias("first_rtt_end_ms"))
    )


def _with_phase(rows: pl.DataFrame, ends: pl.DataFrame) -> pl.DataFrame:
    return rows.join(ends, on=["run_id", "vantage"], how="left").with_columns(
        after_first_rtt=(pl.col("time_ms") >= pl.col("first_rtt_end_ms")).fill_null(False)
    )


def tcp_breakdown(tcp_segments: pl.DataFrame) -> pl.DataFrame:
    """``ack_breakdown`` rows (protocol 'tcp') of the TCP segments of every capture."""
    segments = _with_phase(tcp_segments, first_rtt_end(tcp_segments))
    rows = (
        segments.group_by(KEYS)
        .agg(
            *(pl.col(column).sum().alias(component) for component, column in TCP_COMPONENTS.items()),
            *(
                ((pl.col(column) > 0).sum()).alias(f"{component}#packets")
                for component, column in TCP_COMPONENTS.items()
            ),
        )
        .unpivot(index=KEYS, variable_name="component", value_name="value")
        .with_columns(
            kind=pl.col("component").str.ends_with("#packets"),
            component=pl.col("component").str.strip_suffix("#packets"),
        )
    )
    rows = (
        rows.filter(~pl.col("kind")).drop("kind").rename({"value": "bytes"})
        .join(rows.filter(pl.col("kind")).drop("kind").rename({"value": "packets"}), on=[*KEYS, "component"])
        .filter(pl.col("packets") > 0)
    )  # fmt: skip
    return rows.select(*KEYS, "component", "bytes", "packets").with_columns(
        protocol=pl.lit("tcp"), direction_bytes=pl.col("bytes").sum().over(KEYS)
    )


def ack_breakdown(
    datagrams: pl.DataFrame, packets: pl.DataFrame, frames: pl.DataFrame, tcp_segments: pl.DataFrame | None = None
) -> pl.DataFrame:
    """``ack_breakdown`` rows of every capture in the tables (qlog rows are left out: a log has no wire bytes), QUIC
    from datagrams/packets/frames and TCP from ``tcp_segments`` (when given)."""
    captured = pl.col("source") == "pcap"
    ends = first_rtt_end(datagrams)
    datagrams = _with_phase(datagrams, ends)
    packets = _with_phase(packets.filter(captured), ends)
    frames = _with_phase(frames.filter(captured), ends)
    packet_key = ["connection_odcid", "direction", "datagram_index", "pn_space", "packet_number"]
    decrypted = pl.col("decrypted").fill_null(False)
    parts = [
        datagrams.group_by(KEYS).agg(
            pl.lit("ip_header").alias("component"),
            pl.col("ip_header_bytes").sum().alias("bytes"),
            pl.len().alias("packets"),
        ),
        datagrams.group_by(KEYS).agg(
            pl.lit("udp_header").alias("component"),
            pl.col("udp_header_bytes").sum().alias("bytes"),
            pl.len().alias("packets"),
        ),
        packets.filter(decrypted).group_by(KEYS).agg(
            pl.lit("quic_header").alias("component"),
            pl.col("header_bytes").sum().alias("bytes"),
            pl.len().alias("packets"),
        ),
        packets.filter(decrypted & (pl.col("aead_tag_bytes") > 0)).group_by(KEYS).agg(
            pl.lit("aead_tag").alias("component"),
            pl.col("aead_tag_bytes").sum().alias("bytes"),
            pl.len().alias("packets"),
        ),
        packets.filter(~decrypted)
        .with_columns(
            component=pl.when(pl.col("packet_type") == "datagram_padding")
            .then(pl.lit("datagram_padding"))
            .otherwise(pl.lit("undecrypted"))
        )
        .group_by(*KEYS, "component")
        .agg(pl.col("packet_bytes").sum().alias("bytes"), pl.len().alias("packets")),
        frames.with_columns(component="frame:" + pl.col("frame_type"))
        .group_by(*KEYS, "component")
        .agg(
            pl.col("frame_bytes").sum().alias("bytes"),
            # packets that carried the component: a packet is its connection, datagram and packet number
            pl.struct(packet_key).n_unique().alias("packets"),
        ),
    ]
    rows = pl.concat([part.select(*KEYS, "component", "bytes", "packets") for part in parts], how="vertical")
    rows = rows.with_columns(protocol=pl.lit("quic"), direction_bytes=pl.col("bytes").sum().over(KEYS))
    if tcp_segments is not None and not tcp_segments.is_empty():
        rows = pl.concat([ACK_BREAKDOWN.conform(rows), ACK_BREAKDOWN.conform(tcp_breakdown(tcp_segments))])
    return ACK_BREAKDOWN.conform(rows.sort(*KEYS, "protocol", "component"))
