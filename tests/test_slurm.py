"""The workflow through a real SLURM cluster (README, "On a cluster (SLURM)"): a single-node cluster on this machine
(munged, slurmctld and slurmd started and stopped here, state in a temporary folder) and the executor plugin from
PyPI with profiles/slurm; every result identical to a local run of the same workflow."""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import REPO, SAMPLE_RAW, snakemake

SLURM_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "sinfo", "scancel")
MISSING = [program for program in SLURM_PROGRAMS if shutil.which(program) is None]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(MISSING), reason=f"SLURM not installed (missing {', '.join(MISSING)}; "
                       "Debian: apt-get install slurm-wlm munge, or bash install.sh --dev)"),
]

# The embedded dataset's results, relative to results_dir (config/config.yaml: dataset sample).
DATASET = "sample"
STARTUP_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def slurm_conf(state: Path, node: str) -> str:
    """One node (this machine) in one partition. No cgroups (a container has none to delegate): processes are
    tracked by their parent PIDs and tasks are not bound; no accounting daemon (slurmdbd), so `sacct` has
    nothing to answer and job states come from `squeue`, which keeps finished jobs for MinJobAge seconds."""
    memory_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
    user = getpass.getuser()
    return f"""\
ClusterName=quicacktest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={state / "munge.socket"}
StateSaveLocation={state / "slurmctld"}
SlurmdSpoolDir={state / "slurmd"}
SlurmctldPidFile={state / "slurmctld.pid"}
SlurmdPidFile={state / "slurmd.pid"}
SlurmctldLogFile={state / "slurmctld.log"}
SlurmdLogFile={state / "slurmd.log"}
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MinJobAge=86400
ReturnToService=2
NodeName={node} NodeAddr=127.0.0.1 CPUs={min(2, os.cpu_count() or 1)} RealMemory={memory_mb // 2} State=UNKNOWN
PartitionName=quicack Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


def wait_for(condition, what: str, logs: list[Path]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            tails = "\n".join(
                f"--- {log}\n{log.read_text(encoding='utf-8', errors='replace')[-2000:]}"
                for log in logs
                if log.exists()
            )
            raise TimeoutError(f"{what} not reached within {STARTUP_TIMEOUT_S} s\n{tails}")
        time.sleep(0.5)


def node_state(env: dict[str, str]) -> str:
    shown = subprocess.run(
        ["sinfo", "--noheader", "--Node", "--format=%T"], env=env, capture_output=True, text=True, encoding="utf-8"
    )
    return shown.stdout.strip() if shown.returncode == 0 else ""


@pytest.fixture
def slurm_cluster(monkeypatch) -> Iterator[dict[str, str]]:
    """A running single-node cluster (`single_node_cluster`), SLURM's commands pointed at it."""
    with single_node_cluster() as env:
        monkeypatch.setenv("SLURM_CONF", env["SLURM_CONF"])
        yield env


@contextlib.contextmanager
def single_node_cluster() -> Iterator[dict[str, str]]:
    """A running single-node cluster; yields the environment that points SLURM's commands at it. Every daemon is
    a child of this process, stopped by its PID at the end, and the state folder is removed. Also what
    bench/slurm_pipeline.py runs the pipeline on."""
    # Not pytest's tmp_path: munged wants every user to be able to reach its socket's folder, and pytest's base
    # folder is private to its user.
    state = Path(tempfile.mkdtemp(prefix="quicack-slurm-"))
    state.chmod(0o755)
    daemons: list[subprocess.Popen] = []
    try:
        for folder in ("slurmctld", "slurmd"):
            (state / folder).mkdir()
        key = state / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        node = socket.gethostname().split(".")[0]
        conf = state / "slurm.conf"
        conf.write_text(slurm_conf(state, node), encoding="utf-8")
        env = {**os.environ, "SLURM_CONF": str(conf)}
        logs = [state / "munged.log", state / "slurmctld.log", state / "slurmd.log", state / "daemons.out"]
        out = (state / "daemons.out").open("w", encoding="utf-8")

        def start(*command: str) -> None:
            daemons.append(subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT))

        start("munged", "--foreground", f"--key-file={key}", f"--socket={state / 'munge.socket'}",
              f"--pid-file={state / 'munged.pid'}", f"--seed-file={state / 'munged.seed'}",
              f"--log-file={state / 'munged.log'}")
        wait_for((state / "munge.socket").exists, "munged's socket", logs)
        start("slurmctld", "-D", "-f", str(conf))
        start("slurmd", "-D", "-f", str(conf), "-N", node)
        wait_for(lambda: node_state(env) == "idle", f"node {node} idle", logs)
        yield env
    finally:
        if daemons:
            # Jobs a failed run left behind end with the cluster, not after it.
            subprocess.run(["scancel", "--user", getpass.getuser()], env=env, capture_output=True)
        for daemon in reversed(daemons):
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(state, ignore_errors=True)


def slurm_jobs(env: dict[str, str]) -> dict[str, str]:
    """Every job the cluster knows (finished ones for MinJobAge): SLURM job id -> state."""
    listed = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%i|%T"], env=env,
                            capture_output=True, text=True, check=True, encoding="utf-8")
    return dict(line.split("|") for line in listed.stdout.split())


def rules_in(log_text: str) -> set[str]:
    """Rules whose jobs a Snakemake log shows starting ("rule x:", "localrule x:")."""
    return set(re.findall(r"^\s*(?:local)?rule (\w+):$", log_text, flags=re.M))


def parquet_tables(results: Path) -> dict[str, pl.DataFrame]:
    """Every Parquet part of the working set, rows in a canonical order (the order of rows in a part is not part
    of its content)."""
    parts = {}
    for path in sorted((results / "parquet").rglob("*.parquet")):
        frame = pl.read_parquet(path)
        parts[str(path.relative_to(results))] = frame.sort(frame.columns, nulls_last=True)
    return parts


# What both runs make, on three of the embedded run groups (the Table 3 handshakes of two servers, quiche's unpaced
# ACK-ratio downloads to ngtcp2) and one part of the embedded scan (one vantage point's measurement of one day):
# every ingest, scan, derive and database job, and the notebooks of a testbed table, a scan figure and an ACK-ratio
# figure. Every rule kind goes through SLURM; the whole dataset and all 50 notebooks twice cost ~13 minutes of the
# suite, the whole scan 11 more scan_part jobs (≈ 1.5 min through SLURM), for more jobs of the same rules.
GROUPS_HERE = ("aioquic_aioquic", "ngtcp2_aioquic", "quiche_ngtcp2")
SCAN_HERE = ("sao-paulo", "2024-08-09")
RENDERED_HERE = ("imc24-tab03", "imc24-fig14", "ackfreq22-fig05")
SAMPLE_SCAN = REPO / "data" / "scan"


def raw_subset(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    for group in GROUPS_HERE:
        shutil.copytree(SAMPLE_RAW / group, raw / group)
    return raw


def scan_subset(tmp_path: Path) -> Path:
    """SCAN_HERE's measurement folders in the scan's layout, with the scan's description beside them."""
    scan = tmp_path / "scan"
    vantage_point, day = SCAN_HERE
    for folder in sorted((SAMPLE_SCAN / "raw" / vantage_point / "data").glob(f"{day}T*")):
        shutil.copytree(folder, scan / "raw" / vantage_point / "data" / folder.name)
    shutil.copy(SAMPLE_SCAN / "dataset.yaml", scan / "dataset.yaml")
    return scan / "raw"


def targets(results: Path) -> list[str]:
    out = results / DATASET
    return [
        str(out / "quicack.duckdb.published"),
        *(str(out / "notebooks" / f"{name}.ipynb") for name in RENDERED_HERE),
    ]


def test_pipeline_through_slurm_gives_the_results_of_a_local_run(slurm_cluster, tmp_path):
    raw, scan = raw_subset(tmp_path), scan_subset(tmp_path)
    slurm_results = tmp_path / "through_slurm"
    slurm_logs = tmp_path / "slurm_logs"
    started = time.monotonic()
    through_slurm = snakemake(
        *targets(slurm_results),
        "--workflow-profile", "profiles/slurm",
        # This cluster has no accounting daemon for the plugin's default `sacct`.
        "--slurm-status-command", "squeue",
        # An idle one-node cluster starts a job within a second; the profile's 40 s suit a shared cluster.
        "--slurm-init-seconds-before-status-checks", "1",
        "--slurm-logdir", str(slurm_logs), "--slurm-keep-successful-logs",
        "--config", f"results_dir={slurm_results}", f"raw_dir={raw}", f"scan_dir={scan}",
        # Each job pays two Snakemake start-ups and a status check (≈ 5 s idle, 20 s at load 6 on 2 cores); a hang
        # still ends the test.
        timeout_s=1800,
    )
    slurm_seconds = time.monotonic() - started
    assert through_slurm.returncode == 0, through_slurm.stderr[-4000:]
    # Asked now, not after the local run: slurmctld forgets a finished job MinJobAge seconds after it ended.
    jobs = slurm_jobs(slurm_cluster)

    local_results = tmp_path / "local"
    started = time.monotonic()
    local = snakemake(*targets(local_results), "--config", f"results_dir={local_results}", f"raw_dir={raw}",
                      f"scan_dir={scan}", timeout_s=1200)
    local_seconds = time.monotonic() - started
    assert local.returncode == 0, local.stderr[-4000:]
    print(f"wall time: through SLURM {slurm_seconds:.0f} s, local {local_seconds:.0f} s")

    # Every job ran in a SLURM allocation: each finished SLURM job left its log (named by its SLURM job id), and
    # the jobs those logs show are every job of the local run.
    assert jobs and set(jobs.values()) == {"COMPLETED"}, jobs
    job_logs = sorted(slurm_logs.rglob("*.log"))
    assert {log.stem for log in job_logs} == set(jobs)
    rules_through_slurm = set().union(*(rules_in(log.read_text(encoding="utf-8")) for log in job_logs))
    local_rules = rules_in(local.stderr)
    rendered_rules = {f"render_{name.replace('-', '_')}" for name in RENDERED_HERE}
    assert {"ingest_group", "scan_part", "derive_group", "database", *rendered_rules} <= local_rules
    assert rules_through_slurm == local_rules

    # Identical results. Run-specific, so not compared: the snapshot folder's name (a hash of the Parquet files'
    # modification times and inodes) and the database that points into it, logs, executed notebooks (timings)
    # and figure files (creation dates).
    slurm_out, local_out = slurm_results / DATASET, local_results / DATASET
    tables = sorted(p.name for p in (local_out / "tables").glob("*.csv"))
    assert tables and tables == sorted(p.name for p in (slurm_out / "tables").glob("*.csv"))
    for name in [*(f"tables/{table}" for table in tables), "summary.txt", "ingest_issues.csv"]:
        assert (slurm_out / name).read_bytes() == (local_out / name).read_bytes(), name
    slurm_parquet, local_parquet = parquet_tables(slurm_out), parquet_tables(local_out)
    assert local_parquet and slurm_parquet.keys() == local_parquet.keys()
    for part, frame in local_parquet.items():
        assert slurm_parquet[part].equals(frame, null_equal=True), part
