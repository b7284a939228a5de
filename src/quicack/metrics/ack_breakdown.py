"""The ``ack_breakdown`` table: the bytes each direction of a capture spent, by component (ackfreq22 Fig. 3,
rethink Fig. 2 / Table 3, tcpquic's anatomy).

Components of a QUIC direction: ``ip_header``, ``udp_header``, ``quic_header``, ``aead_tag``, one ``frame:<type>``
per frame type (``frame:ack``, ``frame:stream``, ``frame:padding``, ...), ``datagram_padding`` (zeros after a
datagram's last packet) and ``undecrypted`` (whole packets that could not be read: no keys, cut by the snap length,
not QUIC). They add up exactly to the IP bytes of the direction, because the decoder's byte accounting does
(ip + udp + packets = datagram; header + tag + frames = packet; tested on every capture).

``after_first_rtt`` splits each direction at the end of the first round trip as seen at the capture point: the
first client datagram after the first server datagram (at the client side one RTT after the first Initial; at the
server side the client's answer to the server's first flight). That datagram and all later ones are after it;
rethink counts the return path from there, leaving out the handshake's padded Initials.
"""

from __future__ import annotations

import polars as pl

from quicack.schema import ACK_BREAKDOWN

KEYS = ["run_id", "vantage", "direction", "after_first_rtt"]


def first_rtt_end(datagrams: pl.DataFrame) -> pl.DataFrame:
    """Per (run_id, vantage): time of the first c2s datagram after the first s2c datagram (null when none)."""
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


def ack_breakdown(datagrams: pl.DataFrame, packets: pl.DataFrame, frames: pl.DataFrame) -> pl.DataFrame:
    """``ack_breakdown`` rows of every capture in the tables (qlog rows are left out: a log has no wire bytes)."""
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
    rows = rows.with_columns(
        protocol=pl.lit("quic"), direction_bytes=pl.col("bytes").sum().over(KEYS)
    ).sort(*KEYS, "component")
    return ACK_BREAKDOWN.conform(rows)
