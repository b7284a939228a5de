"""A run.json that cannot be read describes the run as a run without one: from its folder name, its status from
its data, and the issue says what was wrong with the file. The run is a recorded run of the embedded dataset
(quic-go both sides, iack, 9 ms), its run.json modified here as each test's name says."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from quicack.stages import ingest
from tests.conftest import REPO

GROUP = "quic-go_quic-go"
RUN = f"{GROUP}/noloss-iack-rtt9ms-10KB-h3/1"
RECORDED = REPO / "data" / "sample" / "raw" / RUN


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    if not (RECORDED / "run.json").is_file():
        pytest.fail(f"recording missing: {RECORDED / 'run.json'} (install.sh unpacks data/sample/raw)")
    shutil.copytree(RECORDED, tmp_path / "raw" / RUN)
    return tmp_path / "raw"


def ingested(raw: Path) -> tuple[dict, list[str]]:
    tables = ingest.ingest_group(raw, GROUP, "t")
    issues = tables["ingest_issues"].filter(pl.col("stage") == "discover")
    return tables["runs"].row(0, named=True), issues["message"].to_list()


def test_recorded_run_json_describes_the_run(raw):
    row, messages = ingested(raw)
    assert (row["rtt_ms"], row["mode"], row["status"], row["status_source"]) == (9.0, "iack", "ok", "run.json")
    assert messages == []


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"", "run.json is empty (0 bytes): described from the folder name"),
        (b"\n  \n", "run.json is empty (4 bytes, whitespace only): described from the folder name"),
        (
            b'{"status": "ok", "rtt_ms": 9.0',
            "run.json is not JSON (Expecting ',' delimiter: line 1 column 31 (char 30)): "
            "described from the folder name",
        ),
        (b'["ok"]', "run.json holds a list, not an object: described from the folder name"),
    ],
    ids=["emptied_to_0_bytes", "whitespace_only", "cut", "a_list"],
)
def test_damaged_run_json_is_described_as_a_run_without_one(raw, content, said):
    run_json = raw / RUN / "run.json"
    run_json.unlink()
    without, without_messages = ingested(raw)
    assert without_messages == []
    run_json.write_bytes(content)
    damaged, messages = ingested(raw)
    # From the folder name and the capture, as without run.json (the RTT, the mode and the status were null).
    assert (damaged["rtt_ms"], damaged["mode"], damaged["repetition"]) == (9.0, "iack", 1)
    assert (damaged["status"], damaged["status_source"]) == ("ok", "inferred from capture")
    assert damaged == without
    assert messages == [said]
