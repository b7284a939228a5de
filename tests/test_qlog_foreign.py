"""qlogs of other projects, read as they are (tests/data/foreign/qlog, SOURCES.md): vantage points spelled otherwise
give directions, every draft's time_units are honoured, implausible values are flagged (never rescaled), a trace
with ACK frames and no RTT sample says why, frames keep their names. Each file is asserted against counts taken
from the raw file or against the capture recorded with it; the engines agree on them (test_qlog_engines.py reads
every JSON-SEQ file of tests/data, these too)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from quicack.metrics.connections import connections_table
from quicack.metrics.rtt import recompute_rtt_samples
from quicack.pcap.decode import decode_capture
from quicack.qlog.qlog_file import read_qlog
from quicack.schema import RUNS

FOREIGN = Path(__file__).parent / "data" / "foreign"
QLOG = FOREIGN / "qlog"
ENGINES = ("python", "compiled")


def _read(name: str, engine: str = "python"):
    return read_qlog(QLOG / name, "r", engine=engine)


def _messages(result) -> list[str]:
    return result.ingest_issues["message"].to_list()


def test_quic_trace_converter_server_in_capitals() -> None:
    """quictrace2qlog's vantage_point {"type": "SERVER"}, event_fields in capitals, time_units "us": every packet has
    a direction, times and RTTs in ms (the raw file's first sample: 126536 us)."""
    r = _read("quictrace2qlog_example_github_prefix.qlog")
    text = (QLOG / "quictrace2qlog_example_github_prefix.qlog").read_text(encoding="utf-8")
    assert r.packets.height == text.count('"PACKET_SENT"') + text.count('"PACKET_RECEIVED"')
    assert r.packets["direction"].null_count() == 0
    sent = r.packets.filter(pl.col("event") == "sent")
    assert (sent["direction"] == "s2c").all() and sent.height == text.count('"PACKET_SENT"')
    endpoint = r.endpoints.row(0, named=True)
    assert (endpoint["vantage"], endpoint["vantage_point_type"], endpoint["implementation"]) == ("server", "SERVER",
                                                                                                 "quic-trace")
    first = r.metrics_logged.row(0, named=True)
    assert first["latest_rtt_ms"] == pytest.approx(126.536) and first["min_rtt_ms"] == pytest.approx(126.536)
    assert endpoint["plausibility_flags"] == []


def test_pcap2qlog_network_vantage_takes_its_flow_and_raw_ack_delay_is_said() -> None:
    """pcap2qlog's {"type": "network", "flow": "client"} (a capture of a draft-22 connection, cut after 16,000
    characters): 'sent' is the client's; its ack_delay is tshark's raw field (308 -> 308 x 8 us), and an issue says
    so."""
    r = _read("pcap2qlog_new_cid_first16k.qlog")
    assert r.packets["direction"].null_count() == 0
    assert (r.packets.filter(pl.col("event") == "sent")["direction"] == "c2s").all()
    assert r.packets["packet_type"].to_list()[:3] == ["initial", "initial", "handshake"]
    endpoint = r.endpoints.row(0, named=True)
    assert (endpoint["vantage"], endpoint["vantage_point_type"], endpoint["implementation"]) == ("client", "network",
                                                                                                 "pcap2qlog")
    raw = [int(v) for v in pl.Series(_raw_ack_delays(QLOG / "pcap2qlog_new_cid_first16k.qlog"))]
    delays = r.frames.filter(pl.col("frame_type") == "ack")["ack_delay_ms"].to_list()
    assert delays == pytest.approx([value * 8 / 1000 for value in raw]) and 308 in raw
    assert any("raw ACK Delay field" in m for m in _messages(r))
    assert any("cut while being written" in m for m in _messages(r))  # the 16,000 characters end mid-event


def _raw_ack_delays(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [part.split('"', 1)[0] for part in text.split('"ack_delay": "')[1:]]


@pytest.mark.parametrize("engine", ENGINES)
def test_quicx_microseconds_under_ms_are_flagged_not_rescaled(engine: str) -> None:
    """quicX logs RTTs in microseconds under time_units "ms" (min_rtt 5000 in an 11 ms trace): two issues with the
    numbers, the flags in endpoints, the values kept as logged."""
    r = _read("quicx_hello_world_client.sqlog", engine)
    endpoint = r.endpoints.row(0, named=True)
    assert endpoint["plausibility_flags"] == ["rtt_sample_longer_than_trace", "rtt_longer_than_trace"]
    messages = _messages(r)
    assert any("latest_rtt up to 5000 ms in a trace whose rows span 10 ms" in m for m in messages)
    assert any("min_rtt up to 5000 ms" in m for m in messages)
    assert r.metrics_logged["latest_rtt_ms"].to_list() == [5000.0]
    assert r.packets["direction"].null_count() == 0


def test_quicx_ack_frames_without_rtt_sample_say_why() -> None:
    """quicX logs its sent packets with empty frames lists: no packet is known to be ack-eliciting, so its five ACKs
    give no RTT sample, and connections says so."""
    r = _read("quicx_hello_world_client.sqlog")
    rtt = recompute_rtt_samples(r.packets, r.frames, r.endpoints)
    assert rtt.height == 0
    connections = connections_table(r.packets, r.frames, r.metrics_logged, r.endpoints, rtt,
                                    RUNS.conform(pl.DataFrame({"run_id": ["r"]})))
    text = (QLOG / "quicx_hello_world_client.sqlog").read_text(encoding="utf-8")
    received_acks = sum('"frame_type":"ack"' in line for line in text.splitlines() if "packet_received" in line)
    assert connections["no_rtt_sample_reason"].to_list() == [
        f"{received_acks} ACK frames received, but none of its 5 sent packets is known to be ack-eliciting (their "
        "frames lists are empty)"
    ]


@pytest.mark.parametrize(
    ("stem", "units"), [("aioquic0914_draft29_keyupdate", "us"), ("aioquic084_draft23_keyupdate", None)]
)
def test_old_aioquic_qlog_units_match_its_capture(stem: str, units: str | None) -> None:
    """aioquic 0.9.14 (qlog draft-01, time_units "us") and 0.8.4 (whole milliseconds, no time_units): the client's
    ACK delays are those of the capture recorded with it (tests/data/foreign/<stem>.pcap), to the unit logged."""
    path = QLOG / f"{stem}.client.qlog"
    header = json.loads(path.read_text(encoding="utf-8"))["traces"][0].get("configuration", {})
    assert header.get("time_units") == units
    r = read_qlog(path, "r")
    assert r.ingest_issues.height == 0, _messages(r)
    capture = list(decode_capture(FOREIGN / f"{stem}.pcap", FOREIGN / f"{stem}.keys.log"))
    frames = pl.concat([b.frames for b in capture])
    key = ["direction", "pn_space", "packet_number", "largest_acked"]
    ours = r.frames.filter(pl.col("frame_type") == "ack").select(*key, "ack_delay_ms")
    wire = frames.filter(pl.col("frame_type") == "ack").select(*key, pl.col("ack_delay_ms").alias("wire_ms"))
    both = ours.join(wire, on=key, how="inner")
    assert both.height >= 5
    # the wire field counts 2^3 us (the exponent); 0.8.4 logs whole milliseconds, truncated
    resolution = 0.008 if units == "us" else 1.0
    assert ((both["ack_delay_ms"] - both["wire_ms"]).abs() <= resolution).all()
    # and its RTT samples are those of a loopback connection, not a thousand times more
    assert r.metrics_logged["latest_rtt_ms"].drop_nulls().max() < 100


def test_unknown_frames_keep_their_names_handmade_picoquic_and_multipath_names(tmp_path: Path) -> None:
    """Hand-made (picoquic's and the multipath draft's extension frames cannot be recorded here): frames the reader
    does not know keep their names or type numbers in raw_frame_type, with one issue counting them; ACK_FREQUENCY
    and IMMEDIATE_ACK under other names and numbers are known."""
    frames = [{"frame_type": "path_ack", "path_id": 0, "acked_ranges": [[0, 3]]}, {"frame_type": "bdp"},
              {"frame_type": "BDP"}, {"frame_type": "unknown", "raw_frame_type": 0x42},
              {"frame_type": "unknown", "frame_type_value": 0xAF}, {"frame_type": "ACK_FREQUENCY"},
              {"frame_type": "ImmediateAck"}, {"frame_type": "unknown"}]
    records = [{"qlog_version": "0.3", "qlog_format": "JSON-SEQ", "trace": {"vantage_point": {"type": "Client"}}},
               {"time": 0.0, "name": "transport:packet_sent",
                "data": {"header": {"packet_type": "initial", "packet_number": 0}, "frames": [{"frame_type": "ping"}]}},
               {"time": 1.0, "name": "transport:packet_received",
                "data": {"header": {"packet_type": "1RTT", "packet_number": 7}, "frames": frames}}]
    path = tmp_path / "handmade.sqlog"
    path.write_text("".join("\x1e" + json.dumps(record) + "\n" for record in records), encoding="utf-8")
    for engine in ENGINES:
        r = read_qlog(path, "r", engine=engine)
        received = r.frames.filter(pl.col("event") == "received")
        assert received["frame_type"].to_list() == ["unknown", "unknown", "unknown", "unknown", "ack_frequency",
                                                    "ack_frequency", "immediate_ack", "unknown"]
        assert received["raw_frame_type"].to_list() == ["path_ack", "bdp", "BDP", "0x42", None, None, None, None]
        assert r.packets["direction"].to_list() == ["c2s", "s2c"]  # vantage "Client"
        (message,) = [m for m in _messages(r) if "does not know" in m]
        assert "5 frames of types the reader does not know" in message
        assert message.endswith(
            "raw_frame_type: (no name or number logged) (1), 0x42 (1), BDP (1), bdp (1), path_ack (1)"
        )
