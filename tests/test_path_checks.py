"""path_checks: what quicack.testbed.path_check measured of the embedded dataset's emulated paths
(data/sample/path_check.csv), stored by build-db and set beside the profiles by ackfreq22-tab01."""

from __future__ import annotations

import shutil
from dataclasses import fields
from pathlib import Path

import duckdb
import polars as pl
import pytest

from quicack.reference import path_profiles
from quicack.schema import PATH_CHECKS
from quicack.storage.path_checks import PathChecksError, read_path_checks, write_path_checks
from quicack.testbed.path_check import PathMeasurement

REPO = Path(__file__).resolve().parents[1]
SAMPLE_CHECKS = REPO / "data" / "sample" / "path_check.csv"


def test_the_contract_is_what_path_check_writes() -> None:
    assert [f.name for f in fields(PathMeasurement)] == [c.name for c in PATH_CHECKS.columns]


def test_the_embedded_paths_deliver_their_profiles() -> None:
    checks = read_path_checks(SAMPLE_CHECKS).join(path_profiles(), on="profile")
    assert checks.height == path_profiles().height  # every profile of the dataset was probed
    # the token bucket lets a slow link (100 kbit/s) deliver a few % more over a few-second probe
    for row in checks.iter_rows(named=True):
        assert abs(row["rtt_median_ms"] - row["rtt_ms"]) < 2.0, row["profile"]
        assert 0.95 * row["s2c_rate_mbit_right"] <= row["s2c_rate_mbit"] <= 1.05 * row["s2c_rate_mbit_right"], row[
            "profile"
        ]
        assert 0.95 * row["c2s_rate_mbit_right"] <= row["c2s_rate_mbit"] <= 1.05 * row["c2s_rate_mbit_right"], row[
            "profile"
        ]


def test_build_db_stores_them_commented(tmp_path: Path) -> None:
    db = tmp_path / "checks.duckdb"
    assert write_path_checks(db, SAMPLE_CHECKS) == 9
    with duckdb.connect(str(db)) as con:
        comment = con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 'path_checks'").fetchone()[0]
        columns = con.execute(
            "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'path_checks' AND comment IS NOT NULL"
        ).fetchone()[0]
        rows = con.execute("SELECT profile, s2c_rate_mbit FROM path_checks ORDER BY profile").pl()
    assert comment.startswith("One row per path profile") and columns == len(PATH_CHECKS.columns)
    assert rows.height == 9 and rows.filter(pl.col("profile") == "ackfreq22-vdsl")["s2c_rate_mbit"].item() > 38


def test_tab01_sets_the_probes_beside_the_profiles(tmp_path: Path) -> None:
    """On the embedded VDSL runs (AR 2): the probed path carries 40 Mbit/s, the downloads' fastest second less."""
    from quicack.figures.ackfreq22 import ackfreq22_tab01_paths
    from quicack.metrics.ack_runs import quic_ack_runs
    from quicack.stages.ingest import ingest_group

    group = "quinn_quinn"  # the calibration's pair: the quinn server's paced NewReno, AR by ACK_FREQUENCY
    testcase = "ack_ratio-none-ackfreq22-vdsl-1MB-hq-ccnewreno-paced-ar2-d25ms-D"
    shutil.copytree(REPO / "data" / "sample" / "raw" / group / testcase, tmp_path / group / testcase)
    tables = ingest_group(tmp_path, group, "sample")
    ack_runs = quic_ack_runs(tables["runs"], tables["datagrams"], tables["packets"], tables["frames"])
    table = ackfreq22_tab01_paths(
        tables["runs"], tables["datagrams"], ack_runs, read_path_checks(SAMPLE_CHECKS)
    ).artefact
    vdsl = table.filter(pl.col("profile") == "ackfreq22-vdsl").row(0, named=True)
    # The probe's RTT: 30 ms configured plus the two links' serialisation and the impairment's release (0.7–1.0 ms).
    assert vdsl["runs"] == 5 and 0 <= vdsl["probe_rtt_ms"] - 30 < 1.5
    assert vdsl["probe_s2c_mbit"] > 38 and vdsl["measured_peak_s2c_mbit"] < vdsl["probe_s2c_mbit"]
    without = ackfreq22_tab01_paths(tables["runs"], tables["datagrams"], ack_runs).artefact
    assert "probe_s2c_mbit" not in without.columns


def test_a_file_that_is_not_a_path_check_is_refused_handmade(tmp_path: Path) -> None:
    wrong = tmp_path / "path_check.csv"
    wrong.write_text("name,rate\nx,1\n", encoding="utf-8")  # hand-made: malformed input
    with pytest.raises(PathChecksError, match="not a path-check file"):
        read_path_checks(wrong)
