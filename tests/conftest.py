"""Shared fixtures: small QIR-layout datasets assembled from real recorded files; the workflow as the tests run it."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from quicack.storage.database import connect

REPO = Path(__file__).resolve().parent.parent
# The shared folder beside the project (../shared, as in CI): the papers' texts and real files of other tools;
# QUICACK_SHARED names another place.
SHARED = Path(os.environ.get("QUICACK_SHARED", REPO.parent / "shared"))
QLOG_FIXTURES = REPO / "tests" / "data" / "qlog"


# tests/run_all.sh runs the tests on two pytest-xdist workers, so two workflows can run in the repository at once,
# each into its own results folder. Snakemake's file locks live in one folder per working directory
# (.snakemake/locks) that every locked run deletes whole when it ends, so concurrent locked runs race on it (a lock
# file opened after the other run removed it). The tests run unlocked, except where locking is what they test.
UNLOCKED = "--nolock"


def snakemake(*args: str, timeout_s: float = 600, locked: bool = False) -> subprocess.CompletedProcess:
    """The workflow from the repository root on two cores, as the README's commands run it (unlocked unless
    ``locked``: see ``UNLOCKED``)."""
    lock = [] if locked else [UNLOCKED]
    return subprocess.run(["snakemake", "--cores", "2", *lock, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout_s, encoding="utf-8")


def published(db: Path) -> str:
    """The Snakemake target that builds the database ``db``: its receipt (the rule never declares the database
    itself, which Snakemake would remove before rebuilding it)."""
    return f"{db}.published"


def config_for(raw: Path, results: Path, *extra: str, scan: bool = False) -> list[str]:
    """The workflow's config for dataset ``t`` from ``raw`` into ``results``; with the embedded scan only when
    ``scan`` (its 12 scan_part jobs double a small dataset's run and are what the scan's own tests test)."""
    return [
        "--config",
        "dataset=t",
        f"raw_dir={raw}",
        f"results_dir={results}",
        *([] if scan else ["scan_dir="]),
        *extra,
    ]


def runs_in(db: Path) -> list[str]:
    """The run IDs the database ``db`` holds, sorted."""
    with connect(db) as con:
        return sorted(r[0] for r in con.execute("SELECT run_id FROM runs").fetchall())


def make_run(raw: Path, run_id: str, client_qlog: Path | None, server_qlog: Path | None, meta: dict | None) -> Path:
    """A run folder in the QUIC Interop Runner layout holding copies of real qlogs."""
    run = raw / run_id
    for vantage, source in (("client", client_qlog), ("server", server_qlog)):
        (run / vantage).mkdir(parents=True, exist_ok=True)
        if source is not None:
            (run / vantage / "qlog").mkdir(exist_ok=True)
            shutil.copy(source, run / vantage / "qlog" / source.name)
    if meta is not None:
        (run / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    return run


# Recorded on loopback: no emulated path, no IACK/WFC server mode, no file size recorded. Said as null: a key a
# run.json leaves out is an ingest_issues row (issue 39), which the workflow tests on this fixture do not expect.
LOOPBACK_UNSAID = {"mode": None, "rtt_ms": None, "file_bytes": None}


@pytest.fixture
def real_raw(tmp_path: Path) -> Path:
    """Two run groups recorded on loopback: aioquic↔aioquic and ngtcp2↔ngtcp2 (real qlogs)."""
    raw = tmp_path / "raw"
    make_run(
        raw,
        "aioquic_aioquic/transfer/1",
        QLOG_FIXTURES / "aioquic" / "client.qlog",
        QLOG_FIXTURES / "aioquic" / "server.qlog",
        {
            "client_impl": "aioquic",
            "server_impl": "aioquic",
            "scenario": "transfer",
            "repetition": 1,
            "status": "ok",
            "app_protocol": "h3",
            **LOOPBACK_UNSAID,
        },
    )
    make_run(
        raw,
        "ngtcp2_ngtcp2/transfer/1",
        QLOG_FIXTURES / "ngtcp2" / "client.sqlog",
        QLOG_FIXTURES / "ngtcp2" / "server.sqlog",
        {
            "client_impl": "ngtcp2",
            "server_impl": "ngtcp2",
            "scenario": "transfer",
            "repetition": 1,
            "status": "ok",
            "app_protocol": "h3",
            **LOOPBACK_UNSAID,
        },
    )
    return raw


ACK_POLICY_RAW = Path(__file__).resolve().parent / "data" / "ack_policy" / "raw"


@pytest.fixture(scope="session")
def ack_policy_tables() -> dict:
    """The ingest tables of the recorded ACK-policy runs (tests/data/ack_policy), every group, ingested once."""
    import polars as pl

    from quicack.layout import run_groups
    from quicack.stages.ingest import ingest_group

    parts: dict[str, list[pl.DataFrame]] = {}
    for group in run_groups(ACK_POLICY_RAW):
        for name, frame in ingest_group(ACK_POLICY_RAW, group, "ack_policy_fixture").items():
            parts.setdefault(name, []).append(frame)
    return {name: pl.concat(frames, how="vertical_relaxed") for name, frames in parts.items()}


SAMPLE_RAW = REPO / "data" / "sample" / "raw"


def _shared_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every pytest-xdist worker of this test run shares (each worker's base folder is popen-gw<N> in the
    run's own), or the run's base folder without workers."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _tables_of(raw: Path, dataset: str, parquet: Path) -> Callable[[Iterable[str], Iterable[str]], dict]:
    """``read(groups, names)``: tables ``names`` of the run ``groups`` of ``raw``, each group ingested and derived
    (the pipeline's ingest and derive stages) into ``parquet`` once per test run, whichever test file or worker asks
    first."""
    from quicack.layout import group_key
    from quicack.models import recovery
    from quicack.stages import derive_stage, ingest_stage
    from quicack.storage import parquet_store

    parquet.mkdir(exist_ok=True)

    def ingested(group: str) -> str:
        key = group_key(group)
        with (parquet / f"{key}.lock").open("w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits for a group being ingested, then reads it
            done = parquet / f"{key}.done"
            if not done.exists():
                ingest_stage.ingest_group_stage(raw, group, dataset, parquet)
                derive_stage.derive_group_stage(parquet, group, recovery.RecoveryParams())
                done.touch()
        return key

    def read(groups: Iterable[str], names: Iterable[str]) -> dict:
        parts = sorted({ingested(group) for group in groups})  # in file-name order, as read_table reads a folder
        return {name: parquet_store.read_table(parquet, name, parts) for name in names}

    return read


@pytest.fixture(scope="session")
def sample_tables(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Iterable[str], Iterable[str]], dict]:
    """``sample_tables(groups, names)``: tables ``names`` of the embedded dataset's run ``groups``, each group ingested
    and derived once per test run; six test files read the imc24 groups, which took a minute each to ingest again."""
    return _tables_of(SAMPLE_RAW, "sample", _shared_temp(tmp_path_factory) / "sample_parquet")


# The dataset recorded under the papers' conditions (config/paper.yaml), unpacked by install.sh like the sample.
PAPER_RAW = REPO / "data" / "paper" / "raw"


@pytest.fixture(scope="session")
def paper_tables(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Iterable[str], Iterable[str]], dict]:
    """``paper_tables(groups, names)``: as ``sample_tables``, of the dataset 'paper'."""
    return _tables_of(PAPER_RAW, "paper", _shared_temp(tmp_path_factory) / "paper_parquet")


# The longest test files, longest first (pytest --durations in CI's log: SLURM 5 min, the default pipeline 4 min, the
# handshake-only dataset 2 min, ...).
LONGEST_FILES = ("test_slurm.py", "test_workflow.py", "test_workflow_partial_datasets.py",
                 "test_results_follow_code.py", "test_workflow_rebuilds.py")  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest test files first, then the other files with tests marked slow, then the rest; each file's tests in
    their order. pytest-xdist hands out test files in this order (tests/run_all.sh: --no-loadscope-reorder), so the
    long ones start at once and none is left to run alone at the end while the other worker idles."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> int:
        if item.path.name in LONGEST_FILES:
            return LONGEST_FILES.index(item.path.name)
        return len(LONGEST_FILES) + (item.path not in slow_files)

    items.sort(key=rank)
