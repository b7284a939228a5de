"""The fuzz target as CI runs it: 500 mutated inputs per reader, zero crashes and zero hangs (the one-file commands
also write `connections`: ~50 ms CPU per input, so 2,000 per reader cost the suite over four minutes of its 15, and
1,000 per reader took two of them, 52 s and 70 s, in the CI run of 2026-11-29; bench/fuzz.py runs 10⁵ per reader).

Inputs are mutated copies of the real captures and qlogs in tests/data (byte flips, truncations, splices of two
files, damaged gzip/zstd, crafted numbers, deep nesting), fixed seed; see quicack.fuzz.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quicack.fuzz import run_fuzz
from quicack.fuzz.corpus import find_seeds
from quicack.fuzz.mutate import mutated_input
from quicack.fuzz.runner import DEFAULT_CORPUS

INPUTS_PER_READER = 500


@pytest.mark.parametrize("reader", ["pcap", "qlog"])
def test_fuzz_readers_never_crash_or_hang(reader: str, tmp_path: Path):
    report = run_fuzz(reader, INPUTS_PER_READER, seed=0, jobs=2, timeout=30, findings_dir=tmp_path)
    print(report.summary())
    assert report.inputs == INPUTS_PER_READER
    assert report.crashes == 0 and report.hangs == 0, [
        (f.number, f.kind, f.what, f.mutations) for f in report.findings
    ]
    assert report.issue_rows > INPUTS_PER_READER // 2  # the inputs were damaged, and the damage was reported


def test_fuzz_counts_crashes_signals_and_hangs(tmp_path: Path, monkeypatch):
    # A fuzzer that cannot see a crash would pass forever: the misbehaving target must be caught each way.
    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # the spawned workers import the target from here
    report = run_fuzz("qlog", 40, seed=3, jobs=2, timeout=3, findings_dir=tmp_path,
                      target="fuzz_misbehaving_targets:misbehave_by_input")
    seeds = find_seeds(DEFAULT_CORPUS, "qlog")
    sizes = [len(mutated_input(seeds, "qlog", 3, n).data) % 7 for n in range(40)]
    assert report.inputs == 40
    assert report.crashes == sizes.count(1) + sizes.count(2) > 0
    assert report.hangs == sizes.count(3) > 0
    assert {f.what for f in report.findings if f.kind == "crash"} >= {
        "RuntimeError: uncaught, as a reader bug would be", "killed by SIGSEGV"}
    assert all(f.saved_as is not None and f.saved_as.is_file() for f in report.findings)


def test_an_idle_worker_is_not_a_hang(monkeypatch):
    # At the end of a timed run one worker waits while another finishes a slow input; the waiting one's last
    # deadline passing must not kill it as a hang of "input -1" (a timed qlog run reported one such).
    from multiprocessing.connection import wait

    from quicack.fuzz.runner import _Worker

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    seeds = find_seeds(DEFAULT_CORPUS, "qlog")
    number = next(n for n in range(100) if len(mutated_input(seeds, "qlog", 3, n).data) % 7 in (0, 4, 5, 6))
    worker = _Worker("qlog", DEFAULT_CORPUS, 3, "fuzz_misbehaving_targets:misbehave_by_input")
    try:
        while not worker.ready:
            assert worker.poll(wait([worker.connection], timeout=120)) is not None or worker.ready
        worker.assign(number, timeout=0.5)
        outcome = worker.poll(wait([worker.connection], timeout=30))
        assert outcome is not None and outcome[1] == "ok"
        time.sleep(0.6)  # past the finished input's deadline
        assert worker.poll([]) is None
        assert worker.process.is_alive()
    finally:
        worker.stop()


def test_fuzz_inputs_are_a_function_of_seed_and_number():
    seeds = find_seeds(DEFAULT_CORPUS, "pcap")
    assert len(seeds) >= 10 and len(find_seeds(DEFAULT_CORPUS, "qlog")) >= 10
    here = mutated_input(seeds, "pcap", 7, 123)
    # Another process, with another hash seed, makes the same input: nothing in it depends on the process (a call
    # compared with itself in one process would not show that).
    code = (
        "import hashlib; from quicack.fuzz.corpus import find_seeds; from quicack.fuzz.mutate import mutated_input; "
        "from quicack.fuzz.runner import DEFAULT_CORPUS; i = mutated_input(find_seeds(DEFAULT_CORPUS, 'pcap'), 'pcap', "
        "7, 123); print(repr((hashlib.sha256(i.data).hexdigest(), i.suffix, i.mutations)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    there = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, encoding="utf-8"
    )
    assert there.stdout.strip() == repr((hashlib.sha256(here.data).hexdigest(), here.suffix, here.mutations))
    assert here.data != mutated_input(seeds, "pcap", 8, 123).data


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
