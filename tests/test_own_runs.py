"""A researcher's own runs (issue 39): plain real files copied from the embedded dataset, with no run.json or a
partial one. Missing parameters degrade (status inferred, the rest from the folder name, the key that is missing
named), wrong inputs fail with their reason, and the README's "Your own runs" table is the schema's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from quicack import ingest, recovery
from quicack.layout.run_json import markdown_table
from quicack.metrics.selection import MissingData, require_runs
from tests.conftest import REPO, SAMPLE_RAW

GROUP = "quic-go_ngtcp2"
SWEEP = ("noloss-iack-rtt9ms-10KB-h3/1", "noloss-wfc-rtt9ms-10KB-h3/1", "noloss_delay_50ms-iack-rtt9ms-10KB-h3/1")


def copy_runs(raw: Path, testcases=SWEEP, run_json: bool | dict = False) -> Path:
    """Copies of recorded runs (their qlogs, captures and keylog), without the testbed's run.json; with
    ``run_json`` a partial one: the keys the issue's reporter wrote (mode, scenario, rtt_ms, file_bytes)."""
    if not (SAMPLE_RAW / GROUP).is_dir():
        pytest.skip("data/sample/raw is not unpacked (install.sh unpacks it)")
    for testcase in testcases:
        run = raw / GROUP / testcase
        shutil.copytree(SAMPLE_RAW / GROUP / testcase, run)
        (run / "run.json").unlink()
        if run_json:
            scenario, mode, *_ = testcase.split("-")
            keys = {"mode": mode, "scenario": scenario, "rtt_ms": 9.0, "file_bytes": 10240}
            (run / "run.json").write_text(
                json.dumps({**keys, **(run_json if isinstance(run_json, dict) else {})}), encoding="utf-8"
            )
    return raw


def test_a_partial_run_json_keeps_status_inference_and_names_the_missing_key(tmp_path):
    """Before: a run.json with mode/scenario/rtt_ms/file_bytes switched status inference off (every run 'without
    status') and nothing said cert_delay_ms was missing. After: status inferred from the data, client and server from
    the folder name, and one issue row per missing key naming the study that needs it."""
    tables = ingest.ingest_group(copy_runs(tmp_path / "raw", run_json=True), GROUP, "t")
    runs = tables["runs"].sort("run_id")
    assert runs["status"].to_list() == ["ok"] * 3
    assert set(runs["status_source"]) == {"inferred from capture"}
    assert set(runs["client_impl"]) == {"ngtcp2"} and set(runs["server_impl"]) == {"quic-go"}
    discover = tables["ingest_issues"].filter(pl.col("stage") == "discover")
    assert discover.select("path", "severity").rows() == [(GROUP, "warning")]
    assert discover["message"][0].startswith("3 of 3 run(s) (3 of them with a run.json) do not say 'cert_delay_ms'")
    assert "imc24 Δt sweep" in discover["message"][0]


def test_runs_without_run_json_say_the_key_that_would_fill_them(tmp_path):
    tables = ingest.ingest_group(copy_runs(tmp_path / "raw"), GROUP, "t")
    assert tables["runs"].select("mode", "rtt_ms").unique().height == 2  # from the folder names
    discover = tables["ingest_issues"].filter(pl.col("stage") == "discover")
    assert discover.select("severity").rows() == [("info",)]  # their layout has no run.json: not a fault
    assert "do not say 'cert_delay_ms'" in discover["message"][0]


def test_a_selection_needing_a_key_the_runs_lack_says_which(tmp_path):
    """Before: imc24-fig04-measured crashed (TypeError float + None in first_pto_reduction_ms); after: MissingData
    naming the run.json key, and the model function answers None for an unknown Δt."""
    runs = ingest.ingest_group(copy_runs(tmp_path / "raw", run_json={"status": "ok"}), GROUP, "t")["runs"]
    with pytest.raises(MissingData, match=r"says its 'cert_delay_ms': the 3 ok run\(s\) of it lack run.json key"):
        require_runs(runs, "of the Δt sweep", keys=("cert_delay_ms", "rtt_ms"))
    assert require_runs(runs, "of the Δt sweep", keys=("rtt_ms",)) is runs
    assert recovery.first_pto_reduction_ms(9.0, None) is None
    assert recovery.first_pto_reduction_ms(9.0, 50.0) == pytest.approx(150.0)


def test_readme_run_json_table_is_the_schema():
    """The README's table of run.json keys is generated from quicack.layout.run_json (one schema)."""
    assert markdown_table() in (REPO / "README.md").read_text(encoding="utf-8")
