"""quicack.testbed.parts: a whole part of a long recording packed as its own archive, on recorded Linux TCP runs."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from quicack.layout.archive import MARKER, ArchiveError, dataset_archives, unpack
from quicack.testbed.parts import pack_part, part_groups, unfinished
from quicack.testbed.run import INTERRUPTED, unfinished_reason
from quicack.testbed.run import main as run_main

RUNS = Path(__file__).parent / "data" / "tcp" / "raw"  # recorded Linux TCP runs, each group with its group.json
# The recording's config as a testbed section: part T holds the two no-loss groups that were recorded, part U also
# a lossy group at AR 10 that was not.
CONFIG = {
    "dataset": "t", "server": "linux-tcp", "clients": ["linux-tcp"], "modes": ["none"], "rtts_ms": [40],
    "file": "200KB", "app_protocol": "tcp", "repetitions": 1, "scenarios": ["ack_ratio"], "part": "T",
    "receiver_ack_policy": [{"ack_ratio": 2}, {"ack_ratio": 10}],
    "extra": [{"part": "U", "scenarios": ["ack_ratio_loss"], "receiver_ack_policy": [{"ack_ratio": 2},
                                                                                    {"ack_ratio": 10}]}],
}  # fmt: skip


def test_a_whole_part_is_packed_alone_and_unpacks_beside_the_dataset(tmp_path: Path) -> None:
    archive, files = pack_part(CONFIG, "T", RUNS, tmp_path)
    assert archive == tmp_path / "part-T.tar.xz" and dataset_archives(tmp_path) == [archive]
    raw = tmp_path / "raw"
    unpack(archive, raw)
    unpacked = sorted(p.relative_to(raw).as_posix() for p in raw.rglob("*") if p.is_file() and p.name != MARKER)
    assert len(unpacked) == files
    # only the part's two groups, every file of them (the .gz files unpack under their names)
    assert {name.split("/")[1] for name in unpacked} == {"ack_ratio-none-rtt40ms-200KB-tcp-ar2",
                                                        "ack_ratio-none-rtt40ms-200KB-tcp-ar10"}
    expected = sorted(p.relative_to(RUNS).as_posix() for key in ("ack_ratio-none-rtt40ms-200KB-tcp-ar2",
                                                                  "ack_ratio-none-rtt40ms-200KB-tcp-ar10")
                      for p in (RUNS / "linux-tcp_linux-tcp" / key).rglob("*") if p.is_file())  # fmt: skip
    assert unpacked == expected


def test_a_part_that_is_not_whole_is_not_packed(tmp_path: Path) -> None:
    groups = part_groups(CONFIG, "U")
    assert [g.key.split("/")[1] for g in groups] == ["ack_ratio_loss-none-rtt40ms-200KB-tcp-ar2",
                                                     "ack_ratio_loss-none-rtt40ms-200KB-tcp-ar10"]
    assert unfinished(groups, RUNS) == ["linux-tcp_linux-tcp/ack_ratio_loss-none-rtt40ms-200KB-tcp-ar10: not recorded "
                                        "(no group.json)"]
    with pytest.raises(ArchiveError, match="part U is not whole .1 of 2 groups.*ar10: not recorded"):
        pack_part(CONFIG, "U", RUNS, tmp_path)
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="no part 'V' in the config .parts: T, U."):
        part_groups(CONFIG, "V")


def test_a_group_with_fewer_repetitions_than_the_part_records_is_not_whole() -> None:
    more = {**CONFIG, "repetitions": 2}
    problems = unfinished(part_groups(more, "T"), RUNS)
    assert problems == [f"linux-tcp_linux-tcp/{key}: 1 of 2 repetitions" for key in
                        ("ack_ratio-none-rtt40ms-200KB-tcp-ar2", "ack_ratio-none-rtt40ms-200KB-tcp-ar10")]


def test_a_run_stopped_by_the_operator_leaves_its_group_unfinished(tmp_path: Path) -> None:
    """A recorded group whose run.json for one repetition says it was interrupted (the state SIGTERM leaves: edited
    into a copy of a recorded run, since stopping a recording cannot be recorded here) is recorded again; a run that
    failed on its own is data and counts."""
    raw = tmp_path / "raw"
    shutil.copytree(RUNS, raw)
    group = part_groups(CONFIG, "T")[0]
    assert unfinished_reason(group, raw) is None
    run_json = raw / group.key / "1" / "run.json"
    record = json.loads(run_json.read_text(encoding="utf-8"))
    for reason, whole in ((f"{INTERRUPTED}: SystemExit: 143", False), ("testbed error: SystemExit: 143", False),
                          ("no download (client exit 1): timeout", True)):
        run_json.write_text(json.dumps({**record, "status": "failed", "failure_reason": reason}), encoding="utf-8")
        assert (unfinished_reason(group, raw) is None) is whole, reason
    assert unfinished_reason(group, raw) is None
    shutil.rmtree(raw / group.key / "1")
    assert unfinished_reason(group, raw) == "0 of 1 repetitions"


def test_the_runner_skips_a_group_recorded_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Resuming a part records only what is missing: on a part whose groups are all whole, the runner records
    nothing (it would need root and the implementations otherwise) and says so."""
    if os.geteuid() != 0:
        pytest.skip("the runner refuses to start without root")
    raw = tmp_path / "raw"
    shutil.copytree(RUNS, raw)
    assert run_main(["--config-json", json.dumps(CONFIG), "--part", "T", "--out", str(raw)]) == 0
    assert "done: 0 group(s) recorded, 2 already whole, 0 failed run(s)" in capsys.readouterr().out
