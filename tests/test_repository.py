"""The repository itself: what a clean clone holds."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_no_symbolic_link_is_tracked() -> None:
    # A worktree's convenience link (bin -> another checkout's bin) once got committed and broke
    # build.sh on a clean clone ("Too many levels of symbolic links"); links stay local.
    listing = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True, encoding="utf-8"
    ).stdout
    links = [line.split("\t", 1)[1] for line in listing.splitlines() if line.startswith("120000 ")]
    assert links == []
