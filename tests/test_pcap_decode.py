"""Decoder behaviour on real captures: key updates, QUIC v2, Retry, 0-RTT, TLS names, the CLI and determinism."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from quicack.pcap.capture_file import UdpDatagram, read_udp
from quicack.pcap.decode import CaptureDecoder, decode_capture
from quicack.pcap.keylog import load_keylogs
from quicack.pcap.pcap_command import OUTPUT_TABLES, pcap_command, write_capture_parquet
from quicack.schema import TABLES

DATA = Path(__file__).parent / "data" / "pcap"


def decoder_after(capture: Path, keylog: Path | None) -> CaptureDecoder:
    """Run the decoder over a capture and return it, to look at its connection state."""
    decoder = CaptureDecoder(load_keylogs([keylog] if keylog else []), "run", "test", str(capture))
    for item in read_udp(capture):
        if isinstance(item, UdpDatagram):
            decoder.add_datagram(item)
    return decoder


def tables(capture: Path, keylog: Path | None) -> dict[str, pl.DataFrame]:
    batches = list(decode_capture(capture, keylog, run_id="run"))
    return {name: pl.concat([getattr(b, name) for b in batches]) for name in OUTPUT_TABLES}


@pytest.mark.parametrize(
    "stem, minimum_updates",
    [("aioquic_v1_keyupdate.pcap.gz", 1), ("ngtcp2_keyupdate_gso.pcap.gz", 2)],
)
def test_key_updates_are_followed(stem: str, minimum_updates: int) -> None:
    capture = DATA / stem
    decoder = decoder_after(capture, DATA / f"{stem.split('.')[0]}.keys.log")
    (connection,) = {id(c): c for c, _ in decoder.flows.values()}.values()
    updates = sum(keys.updates for (key_type, _), keys in connection.keys.items() if key_type == "1rtt" and keys)
    assert updates >= minimum_updates
    packets = tables(capture, DATA / f"{stem.split('.')[0]}.keys.log")["packets"]
    assert packets.filter(pl.col("packet_type") == "1rtt")["decrypted"].all()


def test_quic_v2_retry_and_chacha() -> None:
    decoded = tables(DATA / "aioquic_v2_chacha_retry.pcap", DATA / "aioquic_v2_chacha_retry.keys.log")
    packets = decoded["packets"]
    assert packets.filter(pl.col("packet_type") == "retry").height == 1
    assert set(packets["packet_type"]) >= {"initial", "handshake", "1rtt", "retry"}
    # After the Retry the client starts over with a new ClientHello: two client_hello CRYPTO frames.
    hellos = decoded["frames"].filter(pl.col("tls_messages").list.contains("client_hello"))
    assert hellos.height == 2


def test_zero_rtt_and_two_connections() -> None:
    decoded = tables(DATA / "aioquic_0rtt_resumption.pcap", DATA / "aioquic_0rtt_resumption.keys.log")
    packets = decoded["packets"]
    zero_rtt = packets.filter(pl.col("packet_type") == "0rtt")
    assert zero_rtt.height >= 1 and zero_rtt["decrypted"].all()
    assert (zero_rtt["pn_space"] == "appdata").all()
    # Each connection's times start at its own first client Initial.
    assert packets.filter((pl.col("packet_type") == "initial") & (pl.col("time_ms") == 0)).height == 2
    frames = decoded["frames"]
    assert (
        frames.filter(pl.col("pn_space") == "appdata").filter(pl.col("packet_number") == 1)["frame_type"].to_list()[0]
        == "stream"
    )


def test_version_negotiation() -> None:
    packets = tables(DATA / "ngtcp2_version_negotiation.pcap.gz", DATA / "ngtcp2_version_negotiation.keys.log")[
        "packets"
    ]
    types = packets["packet_type"].to_list()
    assert types[:3] == ["unknown", "version_negotiation", "initial"]  # probe, answer, the real connection
    assert packets.filter(pl.col("packet_type").is_in(["initial", "handshake", "1rtt"]))["decrypted"].all()


def test_pcapng_secrets_block_decrypts_without_keylog() -> None:
    with_block = tables(DATA / "aioquic_v2_dsb.pcapng", None)["packets"]
    with_file = tables(DATA / "aioquic_v2_chacha_retry.pcap", DATA / "aioquic_v2_chacha_retry.keys.log")["packets"]
    assert with_block.drop("run_id", "vantage").equals(with_file.drop("run_id", "vantage"))


def test_handshake_messages_and_transport_parameters() -> None:
    decoder = decoder_after(DATA / "aioquic_sll.pcap", DATA / "aioquic_sll.keys.log")
    (connection,) = {id(c): c for c, _ in decoder.flows.values()}.values()
    assert connection.client.transport_parameters is not None  # from the ClientHello
    assert connection.server.transport_parameters is not None  # from EncryptedExtensions
    assert connection.server.ack_delay_exponent == 3
    frames = tables(DATA / "aioquic_sll.pcap", DATA / "aioquic_sll.keys.log")["frames"]
    names = frames.filter(pl.col("tls_messages").is_not_null()).select("direction", "pn_space", "tls_messages").rows()
    assert ("c2s", "initial", ["client_hello"]) in names
    assert ("s2c", "initial", ["server_hello"]) in names
    assert ("s2c", "handshake", ["encrypted_extensions", "certificate", "certificate_verify", "finished"]) in names
    assert ("c2s", "handshake", ["finished"]) in names


def test_ack_frames_have_ranges_and_delay() -> None:
    frames = tables(DATA / "aioquic_v1_keyupdate.pcap.gz", DATA / "aioquic_v1_keyupdate.keys.log")["frames"]
    acks = frames.filter(pl.col("frame_type") == "ack")
    assert acks["ack_delay_ms"].null_count() == 0 and (acks["ack_delay_ms"] >= 0).all()
    for largest, first_range, ranges in acks.select("largest_acked", "first_ack_range", "ack_ranges").iter_rows():
        assert ranges[0] == {"low": largest - first_range, "high": largest}
        # highest first, disjoint, with at least one missing packet number between two ranges
        assert all(low <= high for low, high in (r.values() for r in ranges))
        assert all(lower["high"] < higher["low"] - 1 for higher, lower in zip(ranges, ranges[1:], strict=False))


def test_the_capture_point_names_the_vantage() -> None:
    """Without a vantage given, rows say where the capture was taken (quicack.layout.capture_point)."""
    batches = list(decode_capture(DATA / "aioquic_sll.pcap", DATA / "aioquic_sll.keys.log"))
    assert set(pl.concat([b.packets for b in batches])["vantage"]) == {"aioquic_sll"}


def test_cli_writes_the_contract_and_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capture, keylog = DATA / "aioquic_sll.pcap", DATA / "aioquic_sll.keys.log"
    status = pcap_command([str(capture), "--keylog", str(keylog), "--out", str(tmp_path), "--print"])
    assert status == 0
    for name in OUTPUT_TABLES:
        written = pl.read_parquet(tmp_path / f"{name}.parquet")
        assert written.schema == pl.Schema(TABLES[name].schema)
    lines = capsys.readouterr().out.splitlines()
    packets = pl.read_parquet(tmp_path / "packets.parquet")
    assert len(lines) == packets.height
    assert "initial" in lines[0] and "CRYPTO" in lines[0] and "c2s" in lines[0]


def test_module_command_flushes_its_output_and_keeps_its_status(tmp_path: Path) -> None:
    # `python -m quicack.pcap.pcap_command` leaves by os._exit (no interpreter teardown): what it printed into a pipe
    # must still arrive, the files must be in place, and the status must be the command's.
    capture, keylog = DATA / "aioquic_sll.pcap", DATA / "aioquic_sll.keys.log"
    command = [
        sys.executable, "-m", "quicack.pcap.pcap_command", str(capture), "--keylog", str(keylog), "--out", str(tmp_path)
    ]  # fmt: skip
    done = subprocess.run([*command, "--print"], capture_output=True, text=True, encoding="utf-8")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == pl.read_parquet(tmp_path / "packets.parquet").height
    assert "packets" in done.stderr and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{name}.parquet" for name in (*OUTPUT_TABLES, "connections")
    )
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all")
    failed = subprocess.run(
        [*command[:3], str(junk), "--out", str(tmp_path / "junk")], capture_output=True, text=True, encoding="utf-8"
    )
    assert failed.returncode == 1 and "not a pcap or pcapng file" in failed.stderr


def test_decoding_is_deterministic(tmp_path: Path) -> None:
    capture, keylog = DATA / "ngtcp2_keyupdate_gso.pcap.gz", DATA / "ngtcp2_keyupdate_gso.keys.log"
    for run in ("a", "b"):
        assert pcap_command([str(capture), "--keylog", str(keylog), "--out", str(tmp_path / run)]) == 0
    for name in OUTPUT_TABLES:
        assert pl.read_parquet(tmp_path / "a" / f"{name}.parquet").equals(
            pl.read_parquet(tmp_path / "b" / f"{name}.parquet")
        )


def test_small_batches_give_the_same_rows() -> None:
    capture, keylog = DATA / "aioquic_v1_keyupdate.pcap.gz", DATA / "aioquic_v1_keyupdate.keys.log"
    whole = tables(capture, keylog)
    batches = list(decode_capture(capture, keylog, run_id="run", batch_rows=10))
    assert len(batches) > 5
    for name in OUTPUT_TABLES:
        assert pl.concat([getattr(b, name) for b in batches]).equals(whole[name])


def test_parquet_writer_one_many_or_no_batches(tmp_path: Path) -> None:
    # One batch is written by polars alone, several through pyarrow's ParquetWriter: same files either way.
    capture, keylog = DATA / "aioquic_v1_keyupdate.pcap.gz", DATA / "aioquic_v1_keyupdate.keys.log"
    one = write_capture_parquet(decode_capture(capture, keylog, run_id="run"), tmp_path / "one")
    many = write_capture_parquet(decode_capture(capture, keylog, run_id="run", batch_rows=10), tmp_path / "many")
    none = write_capture_parquet(iter(()), tmp_path / "none")
    assert one == many and one["packets"] > 0 and set(none.values()) == {0}
    for name in OUTPUT_TABLES:
        written = {run: pl.read_parquet(tmp_path / run / f"{name}.parquet") for run in ("one", "many", "none")}
        assert written["one"].equals(written["many"])
        for frame in written.values():
            assert frame.schema == pl.Schema(TABLES[name].schema)


def test_help_and_registration_do_not_import_the_decoder() -> None:
    # Start-up time: `quicack pcap --help` and the `quicack` command that adds the subcommand's arguments stay light.
    code = (
        "import sys, argparse; import quicack.pcap as p; from quicack.pcap import pcap_command; "
        "pcap_command.add_arguments(argparse.ArgumentParser()); "
        "heavy = {'polars', 'pyarrow', 'numpy', 'quicack.pcap.decode', 'aioquic.tls'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_zeros_after_the_last_packet_are_datagram_padding() -> None:
    # aioquic pads each datagram carrying an Initial to 1200 bytes with zeros after its last (coalesced) packet.
    capture, keylog = DATA / "aioquic_v1_keyupdate.pcap.gz", DATA / "aioquic_v1_keyupdate.keys.log"
    out = tables(capture, keylog)
    packets, datagrams, frames = out["packets"], out["datagrams"], out["frames"]
    padding = packets.filter(pl.col("packet_type") == "datagram_padding")
    assert padding.height == 2 and set(padding["direction"]) == {"c2s", "s2c"}
    assert "unknown" not in packets["packet_type"].to_list()
    assert not padding["decrypted"].any()
    assert padding.select("pn_space", "packet_number", "header_bytes", "aead_tag_bytes").null_count().row(0) == (2,) * 4
    for row in padding.iter_rows(named=True):
        key = (pl.col("direction") == row["direction"]) & (pl.col("datagram_index") == row["datagram_index"])
        in_datagram = packets.filter(key)
        datagram = datagrams.filter(key).row(0, named=True)
        # After at least one real packet (an Initial), as the last row of its datagram, filling it exactly.
        types = in_datagram["packet_type"].to_list()
        assert types[0] == "initial" and types[-1] == "datagram_padding" and types.count("datagram_padding") == 1
        assert row["packet_bytes"] > 0
        assert in_datagram["packet_bytes"].sum() == datagram["udp_payload_bytes"] >= 1200
        assert datagram["quic_packets"] == in_datagram.height - 1  # padding is not a QUIC packet
    # No frames: frame rows start (frame_index 0) once per decrypted QUIC packet, none for the padding.
    decrypted = packets.filter(pl.col("decrypted") & pl.col("packet_number").is_not_null()).height
    assert frames.filter(pl.col("frame_index") == 0).height == decrypted


def test_ack_ecn_counts_and_frames_complete() -> None:
    # quinn marks its packets ECT(0) and its peer reports the counts in ACK_ECN frames (loopback: no CE, no ECT(1)).
    out = tables(DATA / "quinn_ackfreq.pcap.gz", DATA / "quinn_ackfreq.keys.log")
    frames, packets = out["frames"], out["packets"]
    ecn = frames.filter(pl.col("ecn_ect0").is_not_null())
    assert ecn.height > 0 and set(ecn["frame_type"]) == {"ack"}
    assert (ecn["ecn_ect1"] == 0).all() and (ecn["ecn_ce"] == 0).all()
    for direction in ("c2s", "s2c"):
        counts = ecn.filter((pl.col("direction") == direction) & (pl.col("pn_space") == "appdata"))["ecn_ect0"]
        peer = "s2c" if direction == "c2s" else "c2s"
        assert counts.len() > 0 and counts.is_sorted()  # cumulative counts never decrease
        # At most one ECT(0) packet counted per packet the peer sent.
        assert counts.max() <= packets.filter(pl.col("direction") == peer).height
    assert (
        frames.filter(pl.col("frame_type") != "ack")["ecn_ect0"].null_count()
        == frames.filter(pl.col("frame_type") != "ack").height
    )
    # Every decrypted packet's frames were read to the end; frames_complete is null only where nothing was decrypted.
    assert packets.filter(pl.col("decrypted"))["frames_complete"].all()
    assert packets.filter(~pl.col("decrypted"))["frames_complete"].null_count() == (~packets["decrypted"]).sum()


def test_snaplen_truncated_capture_blames_the_capture_not_the_keys():
    """A testbed 10 MB transfer captured with a 128-byte snap length: packets longer than the snap
    length are cut and not decrypted, the short ones (ACKs) still are, and the only issue is the
    truncation itself (not 'wrong secrets')."""
    from pathlib import Path

    from quicack.pcap.decode import decode_capture

    data = Path(__file__).resolve().parent / "data" / "pcap"
    capture = data / "aioquic_snaplen128_transfer.pcap.gz"
    batches = list(decode_capture(capture, [data / "aioquic_snaplen128_transfer.keys.log"], "run"))
    messages = [m for b in batches for m in b.ingest_issues["message"].to_list()]
    assert len(messages) == 1 and messages[0].startswith("datagram truncated by the capture")
    import polars as pl

    packets = pl.concat([b.packets for b in batches])
    assert packets.height >= 2000
    decrypted = packets.filter(pl.col("decrypted"))
    assert decrypted.height > 0 and decrypted["packet_bytes"].max() <= 128 - 20 - 8 - 14  # snap - IP - UDP - Ethernet
