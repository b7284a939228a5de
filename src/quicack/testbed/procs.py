"""Child processes of a run: started in their own process group, always stopped by their own PID."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType


@dataclass
class Managed:
    """One started process with its log files."""

    name: str
    popen: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system, its waited-for children included) the running process used so far, from
        /proc; None once it has exited. ``ip netns exec`` execs the program, so this is the program itself."""
        try:
            fields = Path(f"/proc/{self.popen.pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        # fields[0] is the state (field 3 of proc(5)); utime, stime, cutime, cstime are fields 14–17.
        ticks = sum(int(x) for x in fields[11:15])
        return round(ticks / os.sysconf("SC_CLK_TCK"), 3)

    def stop(self, sig: int = signal.SIGTERM, grace_s: float = 5.0) -> int | None:
        """Send `sig` to the process group, wait, then SIGKILL. Returns the exit code."""
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.popen.wait(timeout=5)
        return self.popen.returncode


@dataclass
class ProcessSet:
    """Processes started for one run, stopped in reverse order of start on cleanup."""

    log_dir: Path
    procs: list[Managed] = field(default_factory=list)

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Managed:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        out = self.log_dir / f"{name}.stdout"
        err = self.log_dir / f"{name}.stderr"
        full_env = os.environ | (env or {})
        with out.open("wb") as fo, err.open("wb") as fe:
            # A new session: the process (and `ip netns exec`'s child) form a group we can signal as one.
            popen = subprocess.Popen(argv, stdout=fo, stderr=fe, env=full_env, start_new_session=True)
        m = Managed(name, popen, out, err)
        self.procs.append(m)
        return m

    def stop_all(self) -> None:
        for m in reversed(self.procs):
            m.stop(signal.SIGTERM, grace_s=3.0)


def wait_until(pred: Callable[[], bool], timeout_s: float, proc: Managed | None = None, what: str = "") -> None:
    """Poll `pred` until true; fail early if `proc` exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return
        if proc is not None and not proc.alive():
            tail = proc.stderr_path.read_text(encoding="utf-8", errors="replace")[-2000:]
            raise RuntimeError(f"{proc.name} exited ({proc.popen.returncode}) before {what}: {tail}")
        time.sleep(0.01)
    raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}")


def raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # SystemExit unwinds through every `finally`, so namespaces and processes are cleaned up.
    raise SystemExit(128 + signum)


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Within the block, SIGTERM raises SystemExit (128 + 15) instead of ending the process where it stands, so the
    callers' ``finally`` blocks delete what they created (a test run stopped by its CI, a recorder stopped by
    ``kill``). Only the main thread can set a handler: elsewhere the block runs as it is. The previous handler comes
    back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, raise_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
