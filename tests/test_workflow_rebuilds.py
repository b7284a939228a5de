"""Rebuilds of the database on real recorded runs: results follow a changed raw folder (removed and renamed groups),
readers during a rebuild see the old dataset or the new one, and a rebuild killed midway leaves the old one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from quicack.storage.database import connect
from tests.conftest import REPO, config_for, published, runs_in, snakemake

pytestmark = pytest.mark.slow


def test_removed_and_renamed_groups_leave_every_output(real_raw, tmp_path):
    """Results follow the dataset: a removed group's runs disappear, a renamed group counts once."""
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    assert runs_in(db) == ["aioquic_aioquic/transfer/1", "ngtcp2_ngtcp2/transfer/1"]

    shutil.rmtree(real_raw / "ngtcp2_ngtcp2")
    done = snakemake(published(db), *config_for(real_raw, results))
    assert done.returncode == 0, done.stderr[-2000:]
    assert runs_in(db) == ["aioquic_aioquic/transfer/1"]
    assert "runs: 1 (1 ok" in (results / "t" / "summary.txt").read_text(encoding="utf-8")
    assert not list((results / "t" / "parquet").rglob("ngtcp2_ngtcp2.parquet"))

    (real_raw / "aioquic_aioquic").rename(real_raw / "aioquic_aioquic-renamed")
    done = snakemake(published(db), *config_for(real_raw, results))
    assert done.returncode == 0, done.stderr[-2000:]
    assert runs_in(db) == ["aioquic_aioquic-renamed/transfer/1"]
    assert "runs: 1 (1 ok" in (results / "t" / "summary.txt").read_text(encoding="utf-8")


def test_a_reader_during_a_rebuild_sees_the_old_dataset_or_the_new_one(real_raw, tmp_path):
    """The database is renamed into place and its views name a snapshot of the Parquet set: a connection
    opened before a rebuild keeps answering from the old dataset while the rebuild replaces every file."""
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    old = connect(db)
    before = old.execute("SELECT count(*), (SELECT count(*) FROM packets) FROM runs").fetchone()
    # The rebuild rewrites the aioquic group's files in place of the old ones (one more run in it).
    shutil.copytree(real_raw / "aioquic_aioquic/transfer/1", real_raw / "aioquic_aioquic/transfer/2")
    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    assert old.execute("SELECT count(*), (SELECT count(*) FROM packets) FROM runs").fetchone() == before
    old.close()
    assert len(runs_in(db)) == 3


# A user querying the database in a loop, in a process of its own, while the workflow rebuilds it.
QUERY_LOOP = """
import json, sys, time
from pathlib import Path
from quicack.storage.database import connect
db, stop = Path(sys.argv[1]), Path(sys.argv[2])
answered, failures, seen = 0, [], set()
while not stop.exists():
    try:
        with connect(db) as con:
            seen.add(con.execute("SELECT count(*) FROM runs").fetchone()[0])
        answered += 1
    except Exception as error:
        failures.append(f"{type(error).__name__}: {error}")
    time.sleep(0.01)
print(json.dumps({"answered": answered, "failures": failures[:3], "failed": len(failures), "seen": sorted(seen)}))
"""


def test_queries_in_a_loop_during_a_rebuild_never_fail(real_raw, tmp_path):
    """A rebuild forced by new content (a run added): queries from another process answer from the old dataset or
    the new one all along; none finds no database (Snakemake removed the declared database before rebuilding it:
    120 of 306 such queries failed)."""
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    assert snakemake(published(db), *config_for(real_raw, results)).returncode == 0
    stop = tmp_path / "stop"
    loop = subprocess.Popen([sys.executable, "-c", QUERY_LOOP, str(db), str(stop)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        shutil.copytree(real_raw / "aioquic_aioquic/transfer/1", real_raw / "aioquic_aioquic/transfer/2")
        rebuilt = snakemake(published(db), *config_for(real_raw, results))
        assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
        assert "rule database:" in rebuilt.stdout + rebuilt.stderr
    finally:
        stop.touch()
        out, err = loop.communicate(timeout=120)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["failed"] == 0, result["failures"] + [err]
    assert result["answered"] > 10 and result["seen"] == [2, 3]


def test_a_rebuild_killed_while_building_the_database_leaves_the_old_one(real_raw, tmp_path):
    """The workflow killed (SIGKILL, the whole process group) while build-db writes the new database: the old one
    answers, and the next run publishes the new one."""
    results = tmp_path / "results"
    db = results / "t" / "quicack.duckdb"
    config = config_for(real_raw, results)
    # Locked, as a user's runs are: the killed run leaves its locks, which --unlock removes.
    assert snakemake(published(db), *config, locked=True).returncode == 0
    shutil.copytree(real_raw / "aioquic_aioquic/transfer/1", real_raw / "aioquic_aioquic/transfer/2")
    building = db.with_name(db.name + ".building")
    run = subprocess.Popen(["snakemake", "--cores", "2", published(db), *config], cwd=REPO, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not building.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert building.exists(), "the kill should land while build-db writes the new database"
    assert runs_in(db) == ["aioquic_aioquic/transfer/1", "ngtcp2_ngtcp2/transfer/1"]
    assert snakemake("--unlock", *config, locked=True).returncode == 0
    again = snakemake(published(db), *config, locked=True)
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(runs_in(db)) == 3 and not building.exists()
