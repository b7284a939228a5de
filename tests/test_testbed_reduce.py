"""The cuts that keep long transfers small (quicack.testbed.reduce), on runs recorded with the testbed
(tests/data/ack_policy: the aioquic receiver with a set ACK policy downloading 1 MB): what the ACK-ratio analysis
reads must be the same after the cut."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import polars as pl

from quicack.pcap.decode import decode_capture
from quicack.qlog import read_qlog
from quicack.testbed import reduce
from quicack.testbed.reduce import cut_frames_not_from, keep_qlog_events

RUN = (
    Path(__file__).parent
    / "data"
    / "ack_policy"
    / "raw"
    / "aioquic_aioquic"
    / "ack_ratio-iack-rtt40ms-1MB-h3-ar10-d25ms-NR"
    / "1"
)
RECEIVER_EVENTS = ["transport:packet_sent", "quicack:ack_sent", "quicack:ack_policy", "transport:parameters_set"]


def _decode(capture: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    batches = list(decode_capture(capture, RUN / "client" / "keys.log", run_id="run"))
    return pl.concat([b.datagrams for b in batches]), pl.concat([b.frames for b in batches])


def test_forward_cut_keeps_sizes_and_the_return_path_frames(tmp_path: Path) -> None:
    client = json.loads((RUN / "run.json").read_text(encoding="utf-8"))["testbed"]["addresses"]["client"]
    capture = tmp_path / "trace_node_left.pcap.gz"
    shutil.copy(RUN / "sim" / "trace_node_left.pcap.gz", capture)
    before_datagrams, before_frames = _decode(capture)
    cut = cut_frames_not_from(capture, client, 48)
    after_datagrams, after_frames = _decode(capture)
    forward = before_datagrams.filter(pl.col("direction") == "s2c")
    # Every server 1-RTT datagram of the 1 MB download (they were cut to 96 bytes already), no long-header one.
    assert forward.height - 5 < cut < forward.height and cut > 700
    assert capture.stat().st_size < (RUN / "sim" / "trace_node_left.pcap.gz").stat().st_size
    sizes = ["direction", "datagram_index", "udp_payload_bytes"]
    assert after_datagrams.select(sizes).equals(before_datagrams.select(sizes))
    return_frames = before_frames.filter(pl.col("direction") == "c2s").drop("connection_odcid")
    assert after_frames.filter(pl.col("direction") == "c2s").drop("connection_odcid").equals(return_frames)
    assert return_frames.filter(pl.col("frame_type") == "ack").height > 40


def test_cut_twice_changes_nothing(tmp_path: Path) -> None:
    client = json.loads((RUN / "run.json").read_text(encoding="utf-8"))["testbed"]["addresses"]["client"]
    capture = tmp_path / "trace_node_left.pcap.gz"
    shutil.copy(RUN / "sim" / "trace_node_left.pcap.gz", capture)
    cut_frames_not_from(capture, client, 48)
    once = capture.read_bytes()
    assert cut_frames_not_from(capture, client, 48) == 0 and capture.read_bytes() == once


def test_receiver_qlog_cut_keeps_every_ack_and_its_reason(tmp_path: Path) -> None:
    (original,) = (RUN / "client" / "qlog").iterdir()
    reduced = tmp_path / original.name
    shutil.copy(original, reduced)
    dropped = keep_qlog_events(reduced, RECEIVER_EVENTS)
    assert dropped > 1000 and reduced.stat().st_size < original.stat().st_size / 2
    full, cut = (read_qlog(p, run_id="run", vantage="client").frames for p in (original, reduced))
    columns = [
        "time_ms",
        "pn_space",
        "packet_number",
        "largest_acked",
        "ack_reason",
        "ack_eliciting_since_previous_ack",
    ]
    sent_acks = [
        f.filter((pl.col("event") == "sent") & (pl.col("frame_type") == "ack")).select(columns) for f in (full, cut)
    ]
    assert sent_acks[1].equals(sent_acks[0]) and sent_acks[0]["ack_reason"].null_count() < sent_acks[0].height


def test_a_json_seq_qlog_cut_mid_record_keeps_the_cut_record_for_the_reader_hand_made_cut(tmp_path: Path) -> None:
    """A quic-go server stopped with a connection open (Firefox quits without CONNECTION_CLOSE) leaves its last
    record cut; hand-made here by cutting a real JSON-SEQ qlog inside its last record. The reduction keeps the cut
    record, so the reader still reports it (and keeps the events before it), as it would without the reduction."""
    original = Path(__file__).parent / "data" / "qlog" / "ngtcp2" / "client.sqlog"
    data = original.read_bytes()
    cut = tmp_path / "cut.sqlog"
    cut.write_bytes(data[: data.rindex(b"\x1e") + 40])
    keep_qlog_events(cut, ["transport:packet_received"])
    result = read_qlog(cut, run_id="run", vantage="client")
    assert result.packets.filter(pl.col("event") == "received").height > 10
    assert result.packets.filter(pl.col("event") == "sent").is_empty()
    assert result.ingest_issues["message"].str.contains("cut").any()


TCP_RUN = (Path(__file__).parent / "data" / "tcp" / "raw" / "linux-tcp_linux-tcp"
           / "ack_ratio-none-rtt40ms-200KB-tcp-ar2")  # fmt: skip
# A 10 MB transfer recorded without captures (the client's qlog and keylog), from the embedded dataset.
QLOG_ONLY_RUN = (Path(__file__).resolve().parents[1] / "data" / "sample" / "raw" / "quic-go_aioquic"
                 / "transfer-wfc-rtt100ms-10MB-h3" / "1")  # fmt: skip


def test_a_cut_after_recording_removes_the_file_and_says_so_leaving_hard_linked_copies_alone(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(TCP_RUN / "1", run, copy_function=os.link)  # hard links, as the repacking's copy of a dataset
    before = (run / "run.json").read_text(encoding="utf-8")
    assert reduce.drop_server_side_capture(run, "to make room") is True
    assert not (run / "sim" / "trace_node_right.pcap.gz").exists()
    assert (run / "sim" / "trace_node_left.pcap.gz").exists()
    record = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert record["testbed"]["server_side_capture"] is False
    assert record["testbed"]["cut_after_recording"] == ["to make room"]
    # the original's files are untouched: the run.json was replaced, the capture unlinked
    assert (TCP_RUN / "1" / "run.json").read_text(encoding="utf-8") == before
    assert (TCP_RUN / "1" / "sim" / "trace_node_right.pcap.gz").exists()
    assert reduce.drop_server_side_capture(run, "again") is False
    # a run with a capture keeps its keylog (TCP has none either way)
    assert reduce.drop_unused_keylog(run, "no capture") is False


def test_a_run_without_captures_loses_its_keylog_which_decrypts_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(QLOG_ONLY_RUN, run)
    assert (run / "client" / "keys.log").is_file() and not (run / "sim").exists()
    qlogs = sorted((run / "client" / "qlog").iterdir())
    assert reduce.drop_unused_keylog(run, "no capture") is True
    assert not (run / "client" / "keys.log").exists() and sorted((run / "client" / "qlog").iterdir()) == qlogs
    record = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert record["testbed"]["keylog_kept"] is False and record["testbed"]["cut_after_recording"] == ["no capture"]
    assert reduce.drop_unused_keylog(run, "again") is False


CHROMIUM_RUN = (
    Path(__file__).parent / "data" / "browsers" / "raw" / "quic-go_chromium" / "noloss-none-rtt9ms-10KB-h3" / "1"
)


def test_a_chromium_run_loses_its_netlog_which_nothing_reads_and_says_so(tmp_path: Path) -> None:
    run = tmp_path / "1"
    shutil.copytree(CHROMIUM_RUN, run)
    assert (run / "client" / "chromium_netlog.json.gz").is_file()
    kept = sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file())
    assert reduce.drop_unread_netlog(run, "nothing reads it") is True
    left = sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file())
    assert left == [p for p in kept if p != "client/chromium_netlog.json.gz"]
    testbed = json.loads((run / "run.json").read_text(encoding="utf-8"))["testbed"]
    assert testbed["netlog_kept"] is False
    assert testbed["cut_after_recording"][-1] == "nothing reads it"
    # The capture and its keylog stay: they are the run's record, and still decrypt.
    packets = pl.concat(
        b.packets for b in decode_capture(run / "sim" / "trace_node_left.pcap.gz", run / "client" / "keys.log", "run")
    )
    assert packets.height > 10 and packets["decrypted"].all()
    assert reduce.drop_unread_netlog(run, "again") is False
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))["testbed"]["cut_after_recording"][-1] == (
        "nothing reads it"
    )
