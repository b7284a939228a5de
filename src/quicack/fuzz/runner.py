"""Run mutated inputs through ``quicack pcap`` / ``quicack qlog`` in worker processes and count what happens.

Workers, not threads: a reader that segfaults, exhausts memory or loops must cost one worker (restarted), be
counted, and leave the run going. Each input gets ``timeout`` seconds; a worker still busy after that is killed
and the input counted as a hang. A crash is an exception escaping the entry point or a worker ended by a signal.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import resource
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from .corpus import find_seeds
from .mutate import mutated_input

DEFAULT_CORPUS = Path(__file__).resolve().parents[3] / "tests" / "data"


@dataclass
class Finding:
    number: int
    kind: str  # "crash" or "hang"
    what: str
    mutations: tuple[str, ...]
    saved_as: Path | None = None


@dataclass
class FuzzReport:
    reader: str
    seed: int
    inputs: int = 0
    issue_rows: int = 0
    crashes: int = 0
    hangs: int = 0
    peak_rss_mib: float = 0.0
    seconds: float = 0.0
    slowest_input_seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.reader}: {self.inputs} inputs (seed {self.seed}), {self.issue_rows} issue rows, "
            f"{self.crashes} crashes, {self.hangs} hangs, peak RSS {self.peak_rss_mib:.0f} MiB, "
            f"{self.seconds:.1f} s (slowest input {self.slowest_input_seconds:.2f} s)"
        )


def run_fuzz(
    reader: str,
    inputs: int,
    seed: int = 0,
    jobs: int = 2,
    timeout: float = 20.0,
    corpus: Path = DEFAULT_CORPUS,
    findings_dir: Path | None = None,
    progress: Callable[[FuzzReport], None] | None = None,
    target: str = "quicack.fuzz.runner:run_command",
    stop_after_seconds: float | None = None,
) -> FuzzReport:
    """Fuzz ``reader`` ("pcap" or "qlog") with ``inputs`` mutated inputs numbered 0 .. inputs-1.

    ``target`` ("module:function", called as ``function(reader, path, keylog, out_dir)`` and returning the issue
    rows) is what each input goes through: by default the ``quicack pcap`` / ``quicack qlog`` command. With
    ``stop_after_seconds``, no input starts after that time: the report says how many ran."""
    if not find_seeds(corpus, reader):
        raise ValueError(f"no {reader} seed files under {corpus}")
    report = FuzzReport(reader, seed)
    started = time.perf_counter()
    pool = [_Worker(reader, corpus, seed, target) for _ in range(max(1, jobs))]
    next_number = 0
    try:
        while report.inputs < inputs:
            if stop_after_seconds is not None and time.perf_counter() - started > stop_after_seconds:
                inputs = next_number  # finish the inputs in flight, start no more
            for worker in pool:
                if worker.ready and worker.number is None and next_number < inputs:
                    worker.assign(next_number, timeout)
                    next_number += 1
            busy = [w for w in pool if w.number is not None or not w.ready]
            deadline = min((w.deadline for w in busy), default=time.monotonic() + timeout)
            signalled = wait([w.connection for w in busy] + [w.process.sentinel for w in busy],
                             timeout=max(0.0, deadline - time.monotonic()))
            for worker in list(pool):
                outcome = worker.poll(signalled)
                if outcome is None:
                    continue
                number, kind, value, seconds = outcome
                if kind == "ready":
                    continue
                report.inputs += 1
                report.slowest_input_seconds = max(report.slowest_input_seconds, seconds)
                if kind == "ok":
                    report.issue_rows += value[0]
                    report.peak_rss_mib = max(report.peak_rss_mib, value[1])
                else:
                    _record(report, number, kind, str(value), corpus, findings_dir)
                if worker.process.is_alive() and kind != "hang":
                    continue
                pool[pool.index(worker)] = _Worker(reader, corpus, seed, target)
            if progress is not None:
                progress(report)
    finally:
        for worker in pool:
            worker.stop()
    report.seconds = time.perf_counter() - started
    return report


def _record(report: FuzzReport, number: int, kind: str, what: str, corpus: Path, findings_dir: Path | None) -> None:
    if kind == "hang":
        report.hangs += 1
    else:
        report.crashes += 1
        kind = "crash"
    seeds = find_seeds(corpus, report.reader)
    item = mutated_input(seeds, report.reader, report.seed, number)
    saved = None
    if findings_dir is not None:
        findings_dir.mkdir(parents=True, exist_ok=True)
        saved = findings_dir / f"{report.reader}-{report.seed}-{number}-{kind}{item.suffix}"
        saved.write_bytes(item.data)
    report.findings.append(Finding(number, kind, what, item.mutations, saved))


class _Worker:
    """One worker process and the input it is on."""

    def __init__(self, reader: str, corpus: Path, seed: int, target: str) -> None:
        context = multiprocessing.get_context("spawn")  # fork after polars is loaded can deadlock
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, reader, str(corpus), seed, target),
                                       daemon=True)
        self.process.start()
        child.close()
        self.ready = False
        self.number: int | None = None
        self.deadline = time.monotonic() + 120  # start-up: imports
        self.started = 0.0

    def assign(self, number: int, timeout: float) -> None:
        self.number = number
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.connection.send(number)

    def poll(self, signalled: list) -> tuple[int, str, Any, float] | None:
        """What happened to this worker: ("ready" | "ok" | "exception" | "signal" | "hang", ...) or None; the value
        as the worker sent it (for "ok": issue rows and peak RSS)."""
        number = -1 if self.number is None else self.number
        elapsed = time.monotonic() - self.started
        if self.connection in signalled:
            try:
                kind, value = self.connection.recv()
            except (EOFError, OSError):
                kind, value = "signal", self._exit_status()
            if kind == "ready":
                self.ready = True
                return number, "ready", None, 0.0
            self.number = None
            return number, kind, value, elapsed
        if self.process.sentinel in signalled and not self.process.is_alive():
            self.number = None
            return number, "signal", self._exit_status(), elapsed
        # An idle worker has no deadline: its last input's would otherwise count as a hang of input -1 once the
        # other workers keep the run going longer than the timeout (seen at the end of a timed run).
        if (self.number is not None or not self.ready) and time.monotonic() >= self.deadline:
            self.process.kill()
            self.process.join()
            self.number = None
            return number, "hang", f"no answer within {elapsed:.0f} s", elapsed
        return None

    def _exit_status(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        if code is not None and code < 0:
            return f"killed by {signal.Signals(-code).name}"
        return f"worker exited with status {code}"

    def stop(self) -> None:
        if self.process.is_alive():
            try:
                self.connection.send(None)
            except OSError:
                pass
            self.process.join(5)
            if self.process.is_alive():
                self.process.kill()


def peak_rss_mib() -> float:
    """This process's peak resident set size. VmHWM, not ru_maxrss: Linux keeps ru_maxrss across execve, so a
    worker started from a large process would report its parent's peak."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_command(reader: str, path: Path, keylog: Path | None, out: Path) -> int:
    """``quicack pcap`` / ``quicack qlog`` on one file; the number of issue rows it wrote. The subcommand's own
    entry point, as the ``quicack`` command calls it, not the whole command (which registers ``quicack fuzz``)."""
    import polars as pl

    if reader == "pcap":
        from quicack.pcap.pcap_command import pcap_command

        pcap_command([str(path), "--out", str(out)] + (["--keylog", str(keylog)] if keylog else []))
    else:
        from quicack.qlog.qlog_command import qlog_command

        qlog_command([str(path), "--out", str(out)])
    # Exit status 1 (nothing readable) is an answer, not a crash.
    return pl.read_parquet(out / "ingest_issues.parquet").height


def _serve(connection: Connection, reader: str, corpus: str, seed: int, target: str) -> None:
    """Worker loop: build input ``number``, run the target on it, answer (kind, value)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the commands print a line per file and the issues: not wanted here
    os.dup2(devnull, 2)
    module_name, _, function_name = target.partition(":")
    run = getattr(importlib.import_module(module_name), function_name)
    seeds = find_seeds(Path(corpus), reader)
    with tempfile.TemporaryDirectory(prefix="quicack-fuzz-") as scratch:
        workdir = Path(scratch)
        connection.send(("ready", None))
        while (number := connection.recv()) is not None:
            item = mutated_input(seeds, reader, seed, number)
            path = workdir / f"input{item.suffix}"
            path.write_bytes(item.data)
            try:
                rows = run(reader, path, item.keylog, workdir / "out")
            except BaseException as error:  # noqa: BLE001 - anything escaping the command is what we look for
                connection.send(("exception", f"{type(error).__name__}: {str(error)[:300]}"))
                continue
            connection.send(("ok", (rows, peak_rss_mib())))
