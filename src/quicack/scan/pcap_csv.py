"""The imc24 authors' intermediate ``pcap.csv``: their tshark export of a scan capture, for when the capture itself
is absent. One row per UDP datagram, ``|``-separated, no header, multi-valued fields comma-joined, 18 fields::

    tshark -2 -d udp.port==443,quic -r capture.pcap -T fields -o tls.keylog_file:key.log -e _ws.col.Time -t ud
        -e ip.src -e ip.dst -e udp.length -e udp.srcport -e udp.dstport -e quic.version -e quic.long.packet_type
        -e quic.scid -e quic.dcid -e quic.frame_type -e quic.ack.ack_delay -e quic.ack.ack_range
        -e quic.ack.first_ack_range -e tls.quic.parameter.ack_delay_exponent -e tls.handshake.type
        -e tls.handshake.extensions_server_name -e ip.ttl -E separator=|

It is reduced to the same facts as a decoded capture (`quicack.scan.scan_capture.CaptureFacts`), with what the format
loses: frames are listed per datagram, not per packet, so "an Initial ACK" is "an ACK frame in a datagram with
an Initial packet" (a server's first datagrams carry no Handshake-space ACK, so this holds for the classes); the
Largest Acknowledged and packet numbers are not exported, so there is no RTT estimate; the ACK Delay is tshark's
raw field value. Connections are told apart by their address/port 4-tuple; the client is the side whose port is
not 443 (the authors' ``kind`` rule), its Source Connection ID the one of its first long header packet.
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl

from quicack.schema import INGEST_ISSUES

from .classify import DEFAULT_ACK_DELAY_EXPONENT
from .identify import CONNECTION_SCHEMA
from .qscanner_files import Issues, read_text_bytes
from .scan_capture import (
    CLIENT_INITIAL_SCHEMA,
    COUNT_SCHEMA,
    ENCRYPTED_EXTENSIONS_SCHEMA,
    SERVER_DATAGRAM_SCHEMA,
    CaptureFacts,
)

PCAP_CSV_FIELDS = (
    "ts", "ip_src", "ip_dst", "udp_length", "udp_srcport", "udp_dstport", "quic_version", "long_packet_type",
    "scid", "dcid", "frame_type", "ack_delay", "ack_range", "first_ack_range", "ack_delay_exponent",
    "handshake_type", "server_name", "ip_ttl",
)  # fmt: skip
SERVER_PORT = 443
UDP_HEADER_BYTES = 8
INITIAL = "0"  # quic.long.packet_type of an Initial (version 1)
ACK_TYPES = ("2", "3")
PADDING = "0"
SERVER_HELLO = "2"


def read_pcap_csv_facts(path: Path, issues: Issues) -> CaptureFacts:
    empty = CaptureFacts(
        pl.DataFrame(schema=CONNECTION_SCHEMA),
        pl.DataFrame(schema=SERVER_DATAGRAM_SCHEMA),
        pl.DataFrame(schema=CLIENT_INITIAL_SCHEMA),
        pl.DataFrame(schema=COUNT_SCHEMA),
        pl.DataFrame(schema=ENCRYPTED_EXTENSIONS_SCHEMA),
        INGEST_ISSUES.empty(),
    )
    try:
        data = read_text_bytes(path)
        rows = pl.read_csv(
            io.BytesIO(data),
            separator="|",
            has_header=False,
            new_columns=list(PCAP_CSV_FIELDS),
            infer_schema=False,
            quote_char=None,
        )
    except Exception as error:  # noqa: BLE001 - a broken file costs the classification, not the measurement
        issues.add(path, "error", f"pcap.csv not readable ({type(error).__name__}: {error}); no classification")
        return empty
    if rows.width != len(PCAP_CSV_FIELDS):
        issues.add(
            path,
            "error",
            f"pcap.csv has {rows.width} fields per row, expected {len(PCAP_CSV_FIELDS)}; no classification",
        )
        return empty
    listed = {
        name: pl.col(name).fill_null("").str.split(",")
        for name in ("long_packet_type", "frame_type", "handshake_type", "scid", "dcid", "ack_delay", "first_ack_range")
    }
    time_text = pl.col("ts").str.strip_chars()
    datagrams = rows.with_row_index("datagram_index", offset=1).select(
        pl.col("datagram_index").cast(pl.Int64),
        # `-t ud` prints UTC "YYYY-MM-DD hh:mm:ss.fffffffff"; epoch seconds are accepted too.
        time_abs_ns=pl.coalesce(
            time_text.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="ns", time_zone="UTC", strict=False).dt.epoch(
                "ns"
            ),
            (time_text.cast(pl.Float64, strict=False) * 1e9).cast(pl.Int64),
        ),
        udp_payload_bytes=pl.col("udp_length").cast(pl.Int64, strict=False) - UDP_HEADER_BYTES,
        from_client=pl.col("udp_dstport").cast(pl.Int64, strict=False) == SERVER_PORT,
        src=pl.col("ip_src"),
        dst=pl.col("ip_dst"),
        src_port=pl.col("udp_srcport").cast(pl.Int64, strict=False),
        dst_port=pl.col("udp_dstport").cast(pl.Int64, strict=False),
        has_initial=listed["long_packet_type"].list.contains(INITIAL),
        has_ack=listed["frame_type"].list.eval(pl.element().is_in(ACK_TYPES)).list.any(),
        padding_frames=listed["frame_type"].list.contains(PADDING),
        has_server_hello=listed["handshake_type"].list.contains(SERVER_HELLO),
        first_scid=listed["scid"].list.first().replace("", None),
        first_dcid=listed["dcid"].list.first().replace("", None),
        ack_delay_raw=listed["ack_delay"].list.first().cast(pl.Int64, strict=False),
        first_ack_range=listed["first_ack_range"].list.first().cast(pl.Int64, strict=False),
        server_name=pl.col("server_name").str.split(",").list.first(),
    )
    bad_times = datagrams["time_abs_ns"].null_count()
    if bad_times:
        issues.add(path, "warning", f"{bad_times} row(s) with a time that is not understood; left out")
        datagrams = datagrams.drop_nulls("time_abs_ns")
    client = pl.col("from_client")
    datagrams = datagrams.with_columns(
        client_address=pl.when(client).then("src").otherwise("dst"),
        client_port=pl.when(client).then("src_port").otherwise("dst_port"),
        server_address=pl.when(client).then("dst").otherwise("src"),
        server_port=pl.when(client).then("dst_port").otherwise("src_port"),
    )
    flow = ["client_address", "client_port", "server_address", "server_port"]
    connections = (
        datagrams.group_by(flow, maintain_order=True)
        .agg(
            client_scid=pl.col("first_scid").filter(client & pl.col("has_initial")).first(),
            original_dcid=pl.col("first_dcid").filter(client & pl.col("has_initial")).first(),
            first_time_abs_ns=pl.col("time_abs_ns").min(),
            client_hello_sni=pl.col("server_name").filter(client).drop_nulls().first(),
            client_datagrams=client.sum().cast(pl.Int64),
            server_datagrams=(~client).sum().cast(pl.Int64),
        )
        .with_row_index("connection", offset=1)
        .with_columns(pl.col("connection").cast(pl.Int64))
    )
    server = (
        datagrams.filter(~client & pl.col("has_initial") & (pl.col("has_ack") | pl.col("has_server_hello")))
        .join(connections.select(*flow, "connection"), on=flow)
        .select(
            "connection",
            "datagram_index",
            "time_abs_ns",
            "udp_payload_bytes",
            has_initial_ack=pl.col("has_ack"),
            has_server_hello="has_server_hello",
            padded="padding_frames",
            # As the capture decoder reports it before it knows the server's parameters (exponent 3).
            ack_delay_ms=pl.col("ack_delay_raw") * 2**DEFAULT_ACK_DELAY_EXPONENT / 1000.0,
            largest_acked=pl.lit(None, pl.Int64),
            first_ack_range="first_ack_range",
            batch=pl.lit(0, pl.Int64),
        )
    )
    return CaptureFacts(
        # cast()'s Mapping keys are typed str | Selector | dtype: a dict[str, ...] is not one (also below)
        connections=connections.select(list(CONNECTION_SCHEMA)).cast(CONNECTION_SCHEMA),  # type: ignore[arg-type]
        server_datagrams=server.cast(SERVER_DATAGRAM_SCHEMA),  # type: ignore[arg-type]  # (the same)
        client_initials=pl.DataFrame(schema=CLIENT_INITIAL_SCHEMA),
        counts=connections.select(list(COUNT_SCHEMA)),
        encrypted_extensions=pl.DataFrame(schema=ENCRYPTED_EXTENSIONS_SCHEMA),
        issues=INGEST_ISSUES.empty(),
    )
