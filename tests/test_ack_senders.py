"""The ACK-ratio study's senders per scenario (quicack.figures.ack_senders) on the embedded dataset's recorded runs:
every QUIC download has a native sender with its congestion control and pacing recorded, the rate once a long
download is under way is read from the capture and set beside the probed path, and each run's CPU is there."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from quicack.figures.ack_senders import ackratio_senders
from quicack.metrics.ack_runs import quic_ack_runs
from quicack.stages.ingest import ingest_group
from quicack.storage.path_checks import read_path_checks
from tests.conftest import SAMPLE_RAW

REPO = Path(__file__).resolve().parents[1]
# One long and one short download per sender of the embedded ACK-ratio runs.
TESTCASES = (
    "quinn_quinn/ack_ratio-none-ackfreq22-satellite-10MB-hq-ccnewreno-paced-ar2-d25ms-D",
    "quinn_quinn/ack_ratio-none-ackfreq22-satellite-1MB-hq-ccnewreno-paced-ar2-d25ms-D",
    "quiche_ngtcp2/ack_ratio-none-rethink-satellite-10MB-h3-ccreno-unpaced-ar2-dimpl-D",
)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pl.DataFrame]:
    raw = tmp_path_factory.mktemp("senders") / "raw"
    for testcase in TESTCASES:
        shutil.copytree(SAMPLE_RAW / testcase, raw / testcase)
    parts: dict[str, list[pl.DataFrame]] = {}
    for group in sorted({t.split("/")[0] for t in TESTCASES}):
        for name, frame in ingest_group(raw, group, "sample").items():
            parts.setdefault(name, []).append(frame)
    views = {name: pl.concat(frames, how="diagonal_relaxed") for name, frames in parts.items()}
    views["ack_runs"] = quic_ack_runs(views["runs"], views["datagrams"], views["packets"], views["frames"])
    return views


def test_runs_record_the_native_sender_and_the_cpu_it_used(tables: dict[str, pl.DataFrame]) -> None:
    runs = tables["runs"]
    senders = set(runs.select("server_impl", "congestion_control", "pacing").unique().iter_rows())
    assert senders == {("quinn", "newreno", True), ("quiche", "reno", False)}
    # every process's CPU seconds and the machine's load were recorded; the native endpoints use a fraction of a core
    assert (
        runs.select("client_cpu_s", "server_cpu_s", "impairment_cpu_s", "host_load_1min")
        .null_count()
        .sum_horizontal()[0]
        == 0
    )
    assert (runs["server_cpu_s"] < 5).all() and (runs["impairment_cpu_s"] > 0).all()


def test_a_long_download_fills_the_probed_path_and_a_short_one_ends_in_slow_start(
    tables: dict[str, pl.DataFrame],
) -> None:
    table = ackratio_senders(
        tables["runs"], tables["ack_runs"], read_path_checks(REPO / "data" / "sample" / "path_check.csv")
    ).artefact
    rows = {(r["sender"], r["path_profile"], r["file_bytes"]): r for r in table.iter_rows(named=True)}
    long = rows[("quinn (newreno, paced)", "ackfreq22-satellite", 10 * 1024 * 1024)]
    short = rows[("quinn (newreno, paced)", "ackfreq22-satellite", 1024 * 1024)]
    unpaced = rows[("quiche (reno, unpaced)", "rethink-satellite", 10 * 1024 * 1024)]
    # 10 MB over 10 Mbit/s and 638 ms: the second half runs at the path's own rate; 1 MB is still in slow start
    assert long["second_half_percent_of_path"] >= 90 and unpaced["second_half_percent_of_path"] >= 90
    assert short["second_half_percent_of_path"] < 80
    assert long["probed_s2c_mbit"] == pytest.approx(long["profile_s2c_mbit"], rel=0.05)
    assert long["goodput_mbit"] < long["forward_mbit_second_half"]  # slow start and the handshake cost time
