"""A configuration that cannot work is refused with a message before any job runs: no figure format, numbers that
are not finite, a YAML alias bomb (hand-made configuration files: malformed configuration is what is tested)."""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

from quicack.config_check import config_problems
from tests.conftest import REPO

# The limits the alias-bomb run gets: before, it grew until the machine's memory was gone.
MEMORY_BYTES = 3 * 2**30
TIMEOUT_S = 120


def dry_run(tmp_path: Path, config_text: str) -> subprocess.CompletedProcess:
    """The workflow's plan (``-n``) with ``config_text`` as the user's --configfile, bounded in memory and time."""
    config = tmp_path / "mine.yaml"
    config.write_text(config_text, encoding="utf-8")

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))

    return subprocess.run(
        ["snakemake", "-n", "--cores", "1", "--nolock", "--configfile", str(config),
         "--config", f"results_dir={tmp_path / 'results'}", "scan_dir="],
        cwd=REPO, capture_output=True, encoding="utf-8", errors="replace", timeout=TIMEOUT_S, preexec_fn=bounded,
    )  # fmt: skip


def test_handmade_config_without_figure_formats_is_refused(tmp_path):
    """Before: accepted; every figure job then drew nothing."""
    done = dry_run(tmp_path, "figures:\n  formats: []\n")
    assert done.returncode != 0
    assert "[] should be non-empty" in done.stdout + done.stderr, done.stdout[-2000:]


def test_handmade_config_with_numbers_that_are_not_finite_is_refused_by_place(tmp_path):
    """Before: accepted (NaN passes every bound a schema states); a NaN compression-ratio limit switched the
    decompression-bomb check off."""
    done = dry_run(tmp_path, "limits:\n  max_compression_ratio: .nan\nrecovery:\n  initial_rtt_ms: .inf\n")
    assert done.returncode != 0
    assert (
        "configuration: limits.max_compression_ratio: nan is not a finite number; "
        "recovery.initial_rtt_ms: inf is not a finite number"
    ) in done.stdout + done.stderr, done.stdout[-2000:]


def test_handmade_yaml_alias_bomb_config_costs_a_message(tmp_path):
    """Nine lists of nine aliases of the one before: 9**10 strings written out. Before: the schema's error message
    printed them all (killed by the memory limit or the timeout)."""
    lines = ["lol0: &lol0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 9) + "]" for i in range(1, 10)]
    done = dry_run(tmp_path, "\n".join(lines) + "\n")
    assert done.returncode != 0
    assert (
        "configuration: more than 100,000 values once its YAML aliases are written out" in done.stdout + done.stderr
    ), done.stdout[-2000:]


def test_config_check_walks_no_further_than_its_bound():
    shared: list = ["lol"] * 10
    for _ in range(30):  # 10**31 values written out
        shared = [shared] * 10
    assert config_problems({"a": shared}, max_values=1000) == [
        "more than 1,000 values once its YAML aliases are written out (aliases repeating a list or mapping inside one "
        "another, a 'billion laughs' file?): refused before it is validated"
    ]
    assert config_problems({"limits": {"x": float("-inf"), "y": 1.5}, "l": [float("nan")]}) == [
        "l[0]: nan is not a finite number",
        "limits.x: -inf is not a finite number",
    ]
