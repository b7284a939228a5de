"""Shared fixtures: small QIR-layout datasets assembled from real recorded files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
QLOG_FIXTURES = REPO / "tests" / "data" / "qlog"


def snakemake(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    """The workflow from the repository root on two cores, as the README's commands run it."""
    return subprocess.run(["snakemake", "--cores", "2", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout_s)


def make_run(raw: Path, run_id: str, client_qlog: Path | None, server_qlog: Path | None, meta: dict | None) -> Path:
    """A run folder in the QUIC Interop Runner layout holding copies of real qlogs."""
    run = raw / run_id
    for vantage, source in (("client", client_qlog), ("server", server_qlog)):
        (run / vantage).mkdir(parents=True, exist_ok=True)
        if source is not None:
            (run / vantage / "qlog").mkdir(exist_ok=True)
            shutil.copy(source, run / vantage / "qlog" / source.name)
    if meta is not None:
        (run / "run.json").write_text(json.dumps(meta))
    return run


@pytest.fixture
def real_raw(tmp_path: Path) -> Path:
    """Two run groups recorded on loopback: aioquic↔aioquic and ngtcp2↔ngtcp2 (real qlogs)."""
    raw = tmp_path / "raw"
    make_run(
        raw,
        "aioquic_aioquic/transfer/1",
        QLOG_FIXTURES / "aioquic" / "client.qlog",
        QLOG_FIXTURES / "aioquic" / "server.qlog",
        {"client_impl": "aioquic", "server_impl": "aioquic", "scenario": "transfer", "repetition": 1, "status": "ok", "app_protocol": "h3"},
    )
    make_run(
        raw,
        "ngtcp2_ngtcp2/transfer/1",
        QLOG_FIXTURES / "ngtcp2" / "client.sqlog",
        QLOG_FIXTURES / "ngtcp2" / "server.sqlog",
        {"client_impl": "ngtcp2", "server_impl": "ngtcp2", "scenario": "transfer", "repetition": 1, "status": "ok", "app_protocol": "h3"},
    )
    return raw


ACK_POLICY_RAW = Path(__file__).resolve().parent / "data" / "ack_policy" / "raw"


@pytest.fixture(scope="session")
def ack_policy_tables() -> dict:
    """The ingest tables of the recorded ACK-policy runs (tests/data/ack_policy), every group, ingested once."""
    import polars as pl

    from quicack.ingest import ingest_group
    from quicack.layout import run_groups

    parts: dict[str, list[pl.DataFrame]] = {}
    for group in run_groups(ACK_POLICY_RAW):
        for name, frame in ingest_group(ACK_POLICY_RAW, group, "ack_policy_fixture").items():
            parts.setdefault(name, []).append(frame)
    return {name: pl.concat(frames, how="vertical_relaxed") for name, frames in parts.items()}
