"""A run group's raw files reach the workflow as one stamp (quicack.layout.group_stamp): it lists what a walk of
the group lists, and its content and modification time change exactly when a file changes, appears or goes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from quicack.layout.group_stamp import group_files, write_group_stamp
from tests.conftest import SAMPLE_RAW, snakemake

GROUP = "quiche_ngtcp2"  # the embedded dataset's: 8 runs, captures, qlogs, key logs, run.json and group.json


def rglob_listing(group_root: Path) -> list[str]:
    """What the ingest rule took as inputs before the stamp: every file below the group but group.json."""
    return sorted(
        p.relative_to(group_root).as_posix() for p in group_root.rglob("*") if p.is_file() and p.name != "group.json"
    )


def test_the_stamp_covers_every_file_a_walk_of_the_group_finds():
    groups = sorted(p for p in SAMPLE_RAW.iterdir() if p.is_dir())
    assert len(groups) >= 10  # the embedded dataset's run groups: a loop over none would pass
    for group in groups:
        assert [path for path, _size, _mtime in group_files(group)] == rglob_listing(group), group.name


@pytest.fixture
def group(tmp_path: Path) -> Path:
    copy = tmp_path / "raw" / GROUP
    shutil.copytree(SAMPLE_RAW / GROUP, copy)
    return copy


def stamped(group: Path, stamp: Path) -> tuple[str, int]:
    write_group_stamp(group, stamp)
    return stamp.read_text(encoding="utf-8"), stamp.stat().st_mtime_ns


def age(stamp: Path) -> None:
    """Set the stamp's time back, so that a rewrite shows even within the file system's time resolution."""
    os.utime(stamp, ns=(stamp.stat().st_atime_ns, stamp.stat().st_mtime_ns - 10**9))


def test_the_stamp_is_rewritten_only_when_a_file_changes_appears_or_goes(group: Path, tmp_path: Path):
    stamp = tmp_path / "stamps" / f"{GROUP}.sha256"
    first, _ = stamped(group, stamp)
    assert first.endswith(f" {len(rglob_listing(group))} files\n")
    age(stamp)
    _, aged = stamped(group, stamp)
    assert stamped(group, stamp) == (first, aged), "nothing changed: the stamp is left as it is"

    run_json = next(group.rglob("run.json"))
    capture = next(group.rglob("*.pcap*"))
    (group / "group.json").write_text("{}", encoding="utf-8")  # the testbed's marker is not the group's data
    assert stamped(group, stamp) == (first, aged)

    seen = {first}
    for change in (
        lambda: run_json.write_bytes(run_json.read_bytes() + b" "),  # content and size
        lambda: os.utime(capture, ns=(capture.stat().st_atime_ns, capture.stat().st_mtime_ns + 1)),  # time alone
        lambda: (run_json.parent / "client" / "extra.qlog").write_text("{}", encoding="utf-8"),  # a file added
        lambda: capture.unlink(),  # a file removed
    ):
        change()
        content, mtime = stamped(group, stamp)
        assert content not in seen and mtime > aged
        seen.add(content)
        age(stamp)
        aged = stamp.stat().st_mtime_ns


def test_links_to_folders_below_the_group_are_not_followed_but_the_group_link_is(group: Path, tmp_path: Path):
    before = group_files(group)
    run = next(group.rglob("run.json")).parent
    (run / "again").symlink_to(run, target_is_directory=True)  # would list the run twice, and loop
    (run / "gone.qlog").symlink_to(run / "nothing")  # a link to nothing is no file
    assert group_files(group) == before
    link = tmp_path / "elsewhere"
    link.symlink_to(group, target_is_directory=True)
    assert group_files(link) == before


def test_the_ingest_job_takes_the_stamp_not_every_raw_file(group: Path, tmp_path: Path):
    results = tmp_path / "results"
    done = snakemake("-n", "--config", f"raw_dir={group.parent}", "scan_dir=", f"results_dir={results}", timeout_s=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = (done.stdout + done.stderr).splitlines()
    at = lines.index("rule ingest_group:")
    inputs = lines[at + 1].strip().removeprefix("input: ").split(", ")
    stamp = results / "sample" / "raw_stamps" / f"{GROUP}.sha256"
    assert inputs[0] == str(stamp) and not any(str(group) in path for path in inputs)
    assert stamp.read_text(encoding="utf-8").endswith(f" {len(rglob_listing(group))} files\n")
