"""Raw run folders → ingest tables; every problem becomes a row in ingest_issues."""

from __future__ import annotations

import polars as pl

from quicack import ingest
from tests.conftest import QLOG_FIXTURES, make_run


def test_ingest_group_reads_runs_and_both_vantages(real_raw):
    tables = ingest.ingest_group(real_raw, "aioquic_aioquic", "t")
    runs = tables["runs"]
    assert runs.select("run_id", "client_impl", "server_impl", "status", "repetition").row(0) == (
        "aioquic_aioquic/transfer/1", "aioquic", "aioquic", "ok", 1,
    )
    packets = tables["packets"]
    assert set(packets["vantage"].unique()) == {"client", "server"}
    assert set(packets["run_id"].unique()) == {"aioquic_aioquic/transfer/1"}
    # The client's first sent Initial is the time origin of the client vantage.
    first = packets.filter(pl.col("vantage") == "client").sort("time_ms").row(0, named=True)
    assert (first["time_ms"], first["packet_type"], first["event"]) == (0.0, "initial", "sent")
    assert tables["ingest_issues"].is_empty()


def test_malformed_run_json_is_an_issue_and_the_folder_name_is_used(tmp_path):
    raw = tmp_path / "raw"
    run = make_run(raw, "aioquic_quic-go/noloss/3", QLOG_FIXTURES / "aioquic" / "client.qlog", None, None)
    (run / "run.json").write_text("{not json")  # hand-made malformed input
    tables = ingest.ingest_group(raw, "aioquic_quic-go", "t")
    row = tables["runs"].row(0, named=True)
    assert (row["server_impl"], row["client_impl"], row["scenario"], row["repetition"]) == ("aioquic", "quic-go", "noloss", 3)
    messages = tables["ingest_issues"]["message"].to_list()
    assert any("run.json unreadable" in m for m in messages)


def test_run_without_qlog_is_reported(tmp_path):
    raw = tmp_path / "raw"
    make_run(raw, "aioquic_ngtcp2/noloss/1", None, None, {"status": "failed", "failure_reason": "client timed out"})
    tables = ingest.ingest_group(raw, "aioquic_ngtcp2", "t")
    assert tables["runs"].row(0, named=True)["status"] == "failed"
    issues = tables["ingest_issues"]
    assert issues.filter(pl.col("message").str.contains("no qlog files")).height == 1


def test_malformed_truncated_qlog_keeps_good_events_and_reports(tmp_path):
    raw = tmp_path / "raw"
    run = make_run(raw, "ngtcp2_ngtcp2/noloss/1", None, None, {"status": "ok"})
    text = (QLOG_FIXTURES / "ngtcp2" / "client.sqlog").read_bytes()
    (run / "client" / "qlog").mkdir()
    (run / "client" / "qlog" / "cut.sqlog").write_bytes(text[: len(text) // 2])  # cut mid-file by hand
    tables = ingest.ingest_group(raw, "ngtcp2_ngtcp2", "t")
    assert tables["packets"].height > 0
    assert tables["ingest_issues"].filter(pl.col("stage") == "qlog").height >= 1


def test_empty_group_and_empty_dataset_are_reported(tmp_path):
    raw = tmp_path / "raw"
    (raw / "aioquic_aioquic").mkdir(parents=True)
    tables = ingest.ingest_group(raw, "aioquic_aioquic", "t")
    assert tables["runs"].is_empty()
    assert tables["ingest_issues"].row(0, named=True)["severity"] == "error"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no run group" in ingest.dataset_issues(empty)["message"][0]
    assert "does not exist" in ingest.dataset_issues(tmp_path / "missing")["message"][0]


def test_imc24_artifact_folder_naming_is_read_without_run_json(tmp_path):
    """The original imc24 artifact encodes a run's settings in its folder name; real qlogs inside."""
    raw = tmp_path / "raw"
    group = "logs_delay=4.5ms,c=ngtcp2,drop-to-client=,drop-to-server=2_3_4,file_size=10KB,instant-ack=1_2024-08-14T01:43:00"
    make_run(
        raw, f"{group}/quic-go_ngtcp2/transfer/2",
        QLOG_FIXTURES / "ngtcp2" / "client.sqlog", QLOG_FIXTURES / "ngtcp2" / "server.sqlog", None,
    )
    tables = ingest.ingest_group(raw, group, "imc24")
    row = tables["runs"].row(0, named=True)
    assert (row["server_impl"], row["client_impl"], row["mode"], row["scenario"], row["repetition"]) == (
        "quic-go", "ngtcp2", "iack", "transfer", 2,
    )
    assert row["rtt_ms"] == 9.0 and row["file_bytes"] == 10240
    assert tables["packets"].height > 0
    assert tables["ingest_issues"].is_empty()
