"""Raw run folders → ingest tables; every problem becomes a row in ingest_issues."""

from __future__ import annotations

import tracemalloc

import polars as pl

from quicack.stages import ingest
from tests.conftest import QLOG_FIXTURES, REPO, SAMPLE_RAW, make_run


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
    (run / "run.json").write_text("{not json", encoding="utf-8")  # hand-made malformed input
    tables = ingest.ingest_group(raw, "aioquic_quic-go", "t")
    row = tables["runs"].row(0, named=True)
    assert (row["server_impl"], row["client_impl"], row["scenario"], row["repetition"]) == (
        "aioquic",
        "quic-go",
        "noloss",
        3,
    )
    messages = tables["ingest_issues"]["message"].to_list()
    assert any(
        m.startswith("run.json is not JSON (") and m.endswith(": described from the folder name") for m in messages
    )


def test_handmade_run_without_qlog_is_reported(tmp_path):
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


def test_imc24_artifact_folder_naming_handmade_around_real_qlogs_is_read_without_run_json(tmp_path):
    """The original imc24 artifact encodes a run's settings in its folder name; real qlogs inside."""
    raw = tmp_path / "raw"
    group = (
        "logs_delay=4.5ms,c=ngtcp2,drop-to-client=,drop-to-server=2_3_4,"
        "file_size=10KB,instant-ack=1_2024-08-14T01:43:00"
    )
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


QIR_AS_FOUND = REPO / "tests/data/qir_as_found/all-interop-servers"


def test_qir_folders_as_found_are_described_and_their_status_inferred():
    """The imc24 artifact's QIR captures: <day>/<server>_<client>/handshake/ with a PPP capture and a keylog only
    (built from recorded runs by tests/tools/make_qir_as_found.py, link header rewritten). Days are repetitions in
    folder order; the outcome comes from the capture and says so."""
    groups = ingest.run_groups(QIR_AS_FOUND)
    assert groups == ["2024-05-14", "2024-05-15", "2024-05-16"]
    runs = pl.concat([ingest.ingest_group(QIR_AS_FOUND, group, "qir")["runs"] for group in groups])
    assert runs.height == 12
    assert set(runs["client_impl"]) == {"aioquic"} and set(runs["scenario"]) == {"handshake"}
    assert (
        sorted(runs.group_by("server_impl").agg(pl.col("repetition").sort())["repetition"].to_list()) == [[1, 2, 3]] * 4
    )
    assert set(runs["status_source"]) == {"inferred from capture"}
    failed = runs.filter(pl.col("status") == "failed")
    assert failed.select("run_id", "failure_reason").rows() == [
        ("2024-05-16/quinn_aioquic/handshake", "inferred: no datagram captured")
    ]
    assert runs.filter(pl.col("status") == "ok").height == 11


def test_qir_capture_as_found_decodes_and_an_empty_one_is_a_warning_not_an_error():
    tables = ingest.ingest_group(QIR_AS_FOUND, "2024-05-16", "qir")
    packets = tables["packets"].filter(pl.col("packet_type") != "datagram_padding")
    assert set(packets["vantage"]) == {"sim_left"} and packets["decrypted"].all()
    assert packets["run_id"].n_unique() == 3  # the fourth run's capture is empty
    issues = tables["ingest_issues"]
    assert issues.filter(pl.col("severity") == "error").is_empty()
    assert issues.filter(pl.col("message").str.contains("capture is empty")).height == 1


def test_malformed_run_json_fields_cost_the_field_not_the_group(tmp_path):
    """Wrongly typed run.json values (hand-made: the testbed never writes them) → null and a warning each."""
    raw = tmp_path / "raw"
    variants = {
        "1": {"status": "ok", "repetition": "first"},
        "2": {"status": "ok", "drop_to_client": ["x"], "rtt_ms": "9 ms"},
        "3": {"status": "ok", "cert_bytes": 2**70, "mode": ["iack"]},
        "4": {
            "status": "ok",
            "nested": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
            ]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
        },
    }
    for repetition, meta in variants.items():
        make_run(raw, f"aioquic_quic-go/noloss/{repetition}", QLOG_FIXTURES / "aioquic" / "client.qlog", None, meta)
    deep = make_run(raw, "aioquic_quic-go/noloss/5", QLOG_FIXTURES / "aioquic" / "client.qlog", None, None)
    (deep / "run.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    as_folder = make_run(raw, "aioquic_quic-go/noloss/6", QLOG_FIXTURES / "aioquic" / "client.qlog", None, None)
    (as_folder / "run.json").mkdir()
    tables = ingest.ingest_group(raw, "aioquic_quic-go", "t")
    runs = tables["runs"].sort("run_id")
    assert runs.height == 6 and runs["repetition"].to_list() == [1, 2, 3, 4, 5, 6]  # from the folder names
    assert runs["rtt_ms"].null_count() == 6 and runs["mode"].null_count() == 6 and runs["cert_bytes"].null_count() == 6
    assert runs["drop_to_client"].null_count() == 6
    messages = tables["ingest_issues"]["message"].to_list()
    for field in ("repetition", "drop_to_client", "rtt_ms", "cert_bytes", "mode"):
        assert any(f"'{field}'" in m for m in messages), field
    assert sum(m.endswith("described from the folder name") for m in messages) == 2
    assert not tables["packets"].is_empty()


def test_stored_paths_are_relative_to_the_raw_folder(real_raw):
    """Outputs must not depend on where the raw data sits (real_raw is an absolute temporary folder)."""
    tables = ingest.ingest_group(real_raw.resolve(), "aioquic_aioquic", "t")
    paths = tables["endpoints"]["path"].to_list()
    assert paths == [
        "aioquic_aioquic/transfer/1/client/qlog/client.qlog",
        "aioquic_aioquic/transfer/1/server/qlog/server.qlog",
    ]


def test_runs_rows_waiting_for_the_groups_end_are_held_as_frames_not_dicts():
    """The runs rows wait until a group's last run (a run's status may come from its data); as one dict per run
    (~3.5 KB of Python objects each here) they grew with the runs, ≈ 20-30 MiB at 100x the embedded data
    (bench/README.md). Python memory held after 64 runs of a real group (quic-go_go-x-net, 94 runs; polars'
    buffers are not Python objects) against after 9 (the modules a run imports once are in), per run: ~0.9 KB
    (caches filling), ~3.7-4.2 KB with a dict per run."""
    held: dict[int, int] = {}
    real_run_row = ingest.run_row

    def run_row(*args, **kwargs):
        held[len(held) + 1] = tracemalloc.get_traced_memory()[0]  # before run n: the rows of runs 1 .. n-1
        return real_run_row(*args, **kwargs)

    frames = ingest.ingest_group_frames(SAMPLE_RAW, "quic-go_go-x-net", "t")
    ingest.run_row = run_row
    tracemalloc.start()
    try:
        for _name, _frame in frames:
            if len(held) > 65:  # 64 rows appended (and converted) before run 65: enough
                break
    finally:
        tracemalloc.stop()
        ingest.run_row = real_run_row
        frames.close()
    assert len(held) > 65
    per_run = (held[65] - held[10]) / 55
    assert per_run < 2_000, per_run
