"""CI end to end: the small testbed matrix (config/testbed_ci.yaml) recorded, then ingested by the pipeline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from quicack.testbed.clients import client_executable
from quicack.testbed.run import load_config, run_group
from quicack.testbed.scenarios import expand
from quicack.testbed.server_programs import server_executable

REPO = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.testbed,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root (network namespaces, NFQUEUE, tc)"),
]


def test_ci_matrix_records_and_ingests(tmp_path: Path) -> None:
    cfg = load_config(REPO / "config" / "testbed_ci.yaml")
    groups = expand(cfg)
    missing = [g.client for g in groups if client_executable(g.client) is None]
    missing += [g.server for g in groups if server_executable(g.server) is None]
    if missing:
        pytest.skip(f"clients/servers not built: {sorted(set(missing))} (src/implementations/build.sh)")
    raw = tmp_path / "raw"
    results = [r for g in groups for r in run_group(g, raw, log=lambda _msg: None)]
    assert len(results) == sum(g.repetitions for g in groups)
    assert all(r.status == "ok" for r in results), [r.failure_reason for r in results]
    # Loss scenario: the calibrated datagrams were really dropped.
    for r in results:
        imp = r.run_json["impairment"]
        assert imp["c2s"]["dropped_indices"] == r.run_json["drop_to_server"]
        assert imp["s2c"]["dropped_indices"] == r.run_json["drop_to_client"]
        if r.run_json["scenario"] == "drop_client_flight":
            assert r.run_json["drop_to_server"] or r.run_json["drop_to_client"]
        elif r.run_json["scenario"] == "ack_ratio":
            from quicack.reference import path_profile

            assert r.run_json["path_profile"] == "ackfreq22-4g"
            assert r.run_json["queue_c2s_packets"] == path_profile("ackfreq22-4g")["c2s_queue_packets"] == 80
        else:  # the handshake run against quic-go: no loss, no IACK/WFC
            assert r.run_json["server_impl"] == "quic-go" and r.run_json["mode"] is None

    from quicack.layout import run_groups
    from quicack.metrics.ack_policy import captured_ack_ratio_per_run
    from quicack.stages.ingest import ingest_group


    ingested = 0
    for group in run_groups(raw):
        tables = ingest_group(raw, group, cfg["dataset"])
        runs = tables["runs"]
        if "ack_ratio" in group:
            # The path profile's settings reach the runs table, and the receiver's AR 10 is what the wire shows.
            (run,) = runs.iter_rows(named=True)
            assert (run["bandwidth_s2c_mbit"], run["bandwidth_c2s_mbit"], run["loss_s2c"]) == (20.0, 10.0, 0.001)
            (wire,) = captured_ack_ratio_per_run(tables["frames"]).iter_rows(named=True)
            assert wire["ack_ratio_median"] == 10 and wire["acks_captured"] > 50
        assert runs.height >= 1 and set(runs["status"].to_list()) == {"ok"}
        for scenario, mode in runs.select("scenario", "mode").iter_rows():
            # imc24's server in its modes; quic-go as released (Table 3's handshake) has none.
            assert mode in ("iack", "wfc") if scenario != "handshake" else mode is None
        assert tables["datagrams"].height > 0 and tables["packets"].height > 0
        ingested += runs.height
    assert ingested == len(results)
