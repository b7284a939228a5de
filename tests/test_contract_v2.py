"""Data contract v2 on real captures: connection ids, datagram_index in frames, padding not 'undecrypted', list
columns that DuckDB queries as lists."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from test_pcap_decode import tables

from quicack.pcap.decode import decode_capture
from quicack.pcap.pcap_command import OUTPUT_TABLES, write_capture_parquet
from quicack.storage import database

DATA = Path(__file__).parent / "data" / "pcap"
TWO_CONNECTIONS = (DATA / "aioquic_0rtt_resumption.pcap", DATA / "aioquic_0rtt_resumption.keys.log")
PADDED = (DATA / "aioquic_sll.pcap", DATA / "aioquic_sll.keys.log")  # aioquic pads Initial datagrams with zeros


def test_two_connections_in_one_capture_are_told_apart() -> None:
    decoded = tables(*TWO_CONNECTIONS)
    packets = decoded["packets"]
    odcids = packets["connection_odcid"].unique().to_list()
    assert len(odcids) == 2 and all(len(odcid) == 16 for odcid in odcids)  # aioquic's 8-byte first DCID
    key = ["direction", "pn_space", "packet_number"]
    numbered = packets.filter(pl.col("packet_number").is_not_null())
    assert numbered.select(key).is_duplicated().any()  # packet numbers repeat across the two connections ...
    assert not numbered.select("connection_odcid", *key).is_duplicated().any()  # ... not within one
    # each connection's first row is its client Initial at time 0; every table names the same connections
    firsts = packets.group_by("connection_odcid", maintain_order=True).first()
    assert firsts["packet_type"].to_list() == ["initial"] * 2 and firsts["time_ms"].to_list() == [0.0] * 2
    for name in ("datagrams", "frames"):
        assert set(decoded[name]["connection_odcid"]) == set(odcids)


def test_frames_carry_their_datagram_index() -> None:
    decoded = tables(*TWO_CONNECTIONS)
    key = ["connection_odcid", "direction", "pn_space", "packet_number"]
    joined = decoded["frames"].join(
        decoded["packets"].filter(pl.col("decrypted")).select(*key, pl.col("datagram_index").alias("packet_datagram")),
        on=key,
    )
    assert joined.height == decoded["frames"].height
    assert (joined["datagram_index"] == joined["packet_datagram"]).all()


def test_datagram_padding_is_not_an_undecrypted_packet() -> None:
    packets = tables(*PADDED)["packets"]
    padding = packets.filter(pl.col("packet_type") == "datagram_padding")
    assert padding.height > 0 and padding["decrypted"].null_count() == padding.height
    # with the keylog every real packet decrypts: `NOT decrypted` finds nothing, padding included
    assert packets.filter(~pl.col("decrypted")).height == 0


def test_list_columns_are_lists_in_the_database(tmp_path: Path) -> None:
    out = tmp_path / "capture"
    write_capture_parquet(decode_capture(*PADDED, run_id="run"), out)
    files = {name: [out / f"{name}.parquet"] for name in OUTPUT_TABLES}
    database.build_database(tmp_path / "db.duckdb", files, tmp_path)
    with database.connect(tmp_path / "db.duckdb", tmp_path) as con:
        types = dict(
            con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'frames'"
                " AND column_name IN ('ack_ranges', 'tls_messages')"
            ).fetchall()
        )
        assert types == {"ack_ranges": "STRUCT(low BIGINT, high BIGINT)[]", "tls_messages": "VARCHAR[]"}
        hellos = con.execute(
            "SELECT direction, pn_space FROM frames WHERE list_contains(tls_messages, 'server_hello')"
        ).fetchall()
        assert hellos == [("s2c", "initial")]
        ranges = con.execute(
            "SELECT count(*), bool_and(r.low <= r.high) FROM (SELECT unnest(ack_ranges) AS r FROM frames)"
        ).fetchone()
        acks = con.execute("SELECT sum(len(ack_ranges)) FROM frames WHERE frame_type = 'ack'").fetchone()[0]
        assert ranges == (acks, True) and acks > 0
