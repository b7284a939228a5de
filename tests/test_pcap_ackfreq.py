"""The ACK frequency extension on a real capture: quinn client <-> quinn server, both asking for it.

tests/data/pcap/quinn_ackfreq.pcap.gz (record_quinn.sh): quinn-proto 0.11.19 implements
draft-ietf-quic-ack-frequency-04 (ACK_FREQUENCY 0xaf, IMMEDIATE_ACK 0x1f, min_ack_delay 0xff04de1b) and
sends min_ack_delay always, so two quinn endpoints negotiate it. tshark 4.0 knows only the -01..-03 forms:
it reads ACK_FREQUENCY's last field as Ignore Order / Ignore CE flags and reports 0x1f as an unknown frame.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from test_pcap_decode import decoder_after, tables

DATA = Path(__file__).parent / "data" / "pcap"
CAPTURE = DATA / "quinn_ackfreq.pcap.gz"
KEYLOG = DATA / "quinn_ackfreq.keys.log"
TSHARK = shutil.which("tshark")


def test_both_quinn_endpoints_offer_min_ack_delay() -> None:
    decoder = decoder_after(CAPTURE, KEYLOG)
    (connection,) = {id(c): c for c, _ in decoder.flows.values()}.values()
    for endpoint in (connection.client, connection.server):
        assert endpoint.transport_parameters is not None
        # quinn sends its timer granularity, 1 ms; without it on both sides no ACK_FREQUENCY may be sent.
        assert endpoint.transport_parameters.min_ack_delay_us == 1000


def test_ack_frequency_and_immediate_ack_are_decoded() -> None:
    out = tables(CAPTURE, KEYLOG)
    frames, packets = out["frames"], out["packets"]
    assert out["ingest_issues"].filter(pl.col("severity") != "info").height == 0
    assert packets["decrypted"].all()
    assert "unknown" not in frames["frame_type"].to_list()
    ack_frequency = frames.filter(pl.col("frame_type") == "ack_frequency")
    # Each side asks the other once, early, in 1-RTT; 9 bytes = 2-byte type 0x40af + 4 one-byte varints + a
    # 4-byte varint of the delay in µs.
    assert sorted(ack_frequency["direction"].to_list()) == ["c2s", "s2c"]
    assert set(ack_frequency["pn_space"]) == {"appdata"}
    assert set(ack_frequency["frame_bytes"]) == {9}
    # quinn's AckFrequencyConfig::default(): threshold 1 (ACK every other ack-eliciting packet), reordering
    # threshold 2 (packet_threshold - 1), max_ack_delay = the peer's own (25 ms), clamped to
    # [peer min_ack_delay, max(RTT, 25 ms)].
    fields = ["ack_frequency_sequence", "ack_eliciting_threshold", "request_max_ack_delay_ms", "reordering_threshold"]
    assert ack_frequency.select(fields).rows() == [(0, 1, 25.0, 2)] * 2
    # the columns are null on every other frame
    assert frames.filter(pl.col("frame_type") != "ack_frequency").select(fields).null_count().row(0) == (
        frames.height - 2,
    ) * 4
    # IMMEDIATE_ACK: quinn puts one after the PING of each MTU probe (a padded, ack-eliciting packet).
    immediate = frames.filter(pl.col("frame_type") == "immediate_ack")
    assert immediate.height >= 2 and set(immediate["direction"]) == {"c2s", "s2c"}
    assert set(immediate["frame_bytes"]) == {1}
    keys = ["direction", "pn_space", "packet_number"]
    probes = frames.join(immediate.select(keys), on=keys)
    for _, group in probes.group_by(keys):
        types = group.sort("frame_index")["frame_type"].to_list()
        assert types[types.index("immediate_ack") - 1] == "ping"
    assert packets.join(immediate.select(keys), on=keys)["ack_eliciting"].all()


@pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (the reference dissector)")
def test_tshark_4_0_does_not_know_the_draft_04_frames() -> None:
    version = subprocess.run([TSHARK, "-v"], capture_output=True, text=True, check=True, encoding="utf-8").stdout
    if "TShark (Wireshark) 4.0." not in version:
        pytest.skip("this documents tshark 4.0's dissector")
    result = subprocess.run(
        [TSHARK, "-r", str(CAPTURE), "-o", f"tls.keylog_file:{KEYLOG}", "-Y", "quic", "-T", "fields",
         "-E", "occurrence=a", "-e", "quic.frame_type", "-e", "quic.af.ignore_order", "-e", "_ws.expert.message"],
        capture_output=True, text=True, check=True, encoding="utf-8",
    )  # fmt: skip
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    unknown_0x1f = sum(message.count("Unknown Frame Type 0x1f") for _, _, message in rows)
    out = tables(CAPTURE, KEYLOG)
    ours_immediate = out["frames"].filter(pl.col("frame_type") == "immediate_ack").height
    # Every IMMEDIATE_ACK is an undecoded frame to tshark 4.0 ...
    assert unknown_0x1f == ours_immediate
    # ... and ACK_FREQUENCY is read with the -01..-03 layout: the reordering threshold 2 becomes "Ignore Order".
    assert [flag for _, flag, _ in rows if flag] == ["1", "1"]
    # Ours still accounts for every byte of those packets.
    packets = out["packets"].filter(pl.col("decrypted"))
    per_packet = out["frames"].group_by("direction", "pn_space", "packet_number").agg(pl.col("frame_bytes").sum())
    joined = packets.join(per_packet, on=["direction", "pn_space", "packet_number"])
    assert joined.height == packets.height
    assert (joined["header_bytes"] + joined["aead_tag_bytes"] + joined["frame_bytes"] == joined["packet_bytes"]).all()
