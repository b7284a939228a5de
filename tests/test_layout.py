"""The raw layout has one home (quicack.layout): the analysis takes its path rules from there, never from the
testbed, and each Snakemake stage depends on the code it runs, not on all of it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from quicack.layout import (
    CLIENT,
    SERVER,
    SIM_LEFT,
    SIM_RIGHT,
    capture_files,
    capture_point,
    discover_runs,
    endpoint_from_path,
    keylog_files,
    qlog_files,
    run_groups,
)
from tests.conftest import REPO, SAMPLE_RAW, UNLOCKED
from tests.test_module_structure import imports_of, module_name

PACKAGE = REPO / "src" / "quicack"
ANALYSIS_PACKAGES = ("qlog", "pcap", "metrics", "claims", "figures", "layout", "storage", "stages", "reading", "models")


def quicack_imports(path: Path) -> set[str]:
    """Every quicack module a file imports, at the top or inside a function (the package's import graph)."""
    return imports_of(module_name(path))


def analysis_files() -> list[Path]:
    files = []
    for name in ANALYSIS_PACKAGES:
        target = PACKAGE / name
        files.extend(sorted(target.rglob("*.py")) if target.is_dir() else [target])
    return files


def test_the_analysis_never_imports_the_testbed():
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(
            name for name in quicack_imports(path) if name.startswith("quicack.testbed")
        )
        for path in analysis_files()
    }
    assert analysis_files() and not {k: v for k, v in offenders.items() if v}


def test_the_layout_depends_on_nothing_else_of_the_package():
    # (but quicack.lazy_names, the loader of its names on first use)
    for path in (PACKAGE / "layout").glob("*.py"):
        assert all(
            name.startswith("quicack.layout") or name == "quicack.lazy_names" for name in quicack_imports(path)
        ), path


def test_no_other_module_names_the_simulator_capture_files():
    """The simulator's capture names live in quicack.layout only (the testbed's docstrings may mention them)."""
    outside = [
        p
        for p in PACKAGE.rglob("*.py")
        if not {"layout", "testbed"} & set(p.parts) and "trace_node_" in p.read_text(encoding="utf-8")
    ]
    assert [str(p.relative_to(PACKAGE)) for p in outside] == []


@pytest.mark.parametrize(
    ("name", "point"),
    [
        ("run/sim/trace_node_left.pcap", SIM_LEFT),
        ("run/sim/trace_node_right.pcap.gz", SIM_RIGHT),
        ("run/sim/trace_node_left.pcapng.zst", SIM_LEFT),
        ("run/sim/loopback.pcap", "loopback"),
    ],
)
def test_capture_point_from_the_file_name(name: str, point: str):
    assert capture_point(Path(name)) == point


def test_endpoint_from_the_qir_folders_or_the_file_name():
    assert endpoint_from_path(Path("a/client/qlog/x.sqlog")) == CLIENT
    assert endpoint_from_path(Path("a/server/qlog/client.sqlog")) == SERVER  # the folder wins over the name
    assert endpoint_from_path(Path("a/qlog/abc_server.sqlog")) == SERVER
    assert endpoint_from_path(Path("a/qlog/abc.sqlog")) is None


def test_a_recorded_run_is_found_with_all_its_files():
    group = "quic-go_aioquic"
    assert group in run_groups(SAMPLE_RAW)
    runs = list(discover_runs(SAMPLE_RAW / group, SAMPLE_RAW))
    first = next(r for r in runs if r.run_id == f"{group}/noloss-iack-rtt9ms-10KB-h3/1")
    assert [capture_point(p) for p in capture_files(first)] == [SIM_LEFT, SIM_RIGHT]
    # The server's keylog held the client's secrets only, so the testbed's tidy step removed it.
    assert [p.parent.name for p in keylog_files(first)] == [CLIENT]
    other_server = next(discover_runs(SAMPLE_RAW / "ngtcp2_aioquic", SAMPLE_RAW))
    assert [p.parent.name for p in keylog_files(other_server)] == [CLIENT, SERVER]
    assert sorted(endpoint for _, endpoint in qlog_files(first.path)) == [CLIENT, SERVER]
    # run.json, the calibration file beside the test cases and the sim/ folder are not qlogs or runs
    assert all(r.path.parent.parent.name == group for r in runs)


def stage_inputs() -> dict[str, set[str]]:
    """The package files each stage rule of the default pipeline lists as inputs (from a dry run)."""
    done = subprocess.run(
        ["snakemake", "-n", "--forceall", "--cores", "1", UNLOCKED],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        encoding="utf-8",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    inputs: dict[str, set[str]] = {}
    rule = None
    for line in (done.stdout + done.stderr).splitlines():
        match = re.match(r"^(?:local)?rule (\w+):", line)
        if match:
            rule = match.group(1)
        elif rule and line.strip().startswith("input:"):
            files = {f.strip() for f in line.split(":", 1)[1].split(",") if "src/quicack/" in f}
            inputs.setdefault(rule, set()).update(files)
    return inputs


def test_each_stage_depends_on_the_code_it_runs_and_no_other():
    inputs = stage_inputs()
    ingest, derive, render = inputs["ingest_group"], inputs["derive_group"], inputs["render_imc24_fig05"]
    assert "src/quicack/layout/runs.py" in ingest and "src/quicack/pcap/decode.py" in ingest
    assert not any("/figures/" in f or "/claims/" in f or "/testbed/" in f or "/metrics/" in f for f in ingest)
    assert "src/quicack/models/recovery.py" in derive and not any("/pcap/" in f or "/figures/" in f for f in derive)
    assert "src/quicack/figures/common.py" in render and not any("/pcap/" in f or "/testbed/" in f for f in render)
