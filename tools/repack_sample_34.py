"""The embedded dataset's one repacking of the round of issue 34 (the papers' conditions), kept as its record.

The re-recording under the papers' conditions (config/testbed_paper_conditions.yaml, the dataset 'paper' in
data/paper) supersedes, part by part, the embedded dataset's imc24 runs of the six library clients; data/ holds 60 MB
at most, so room for its parts is made here, once:

1. the ``*_paper_stack`` groups (the ServerHello held 2.9 ms for every client, each implementation as built) leave:
   the ``*_paper`` runs (each client held to its own delay, every implementation as the paper's) replace them;
2. of the library clients' runs in imc24's four main scenarios (noloss, amplification, drop_server_flight,
   drop_client_flight: the ones the dataset 'paper' records again), only the first repetition of each group keeps its
   server-side capture, which the sequence diagrams (Fig. 1) need; the others keep the client side, from which the
   claims and figures read them (run.json says so: ``testbed.cut_after_recording``);
3. those main-scenario groups are packed as their own archive, ``imc24-as-built.tar.xz``, beside ``raw.tar.xz``
   (everything else): when the dataset 'paper' holds every cell they are in (its parts B, C and M), the archive is
   removed whole, which adds nothing to git history, instead of the whole dataset being packed again.

    python tools/repack_sample_34.py <copy of data/sample/raw> data/sample

4. (``trim``, once part M of the dataset 'paper' held imc24's four main scenarios at 9 ms on this machine's own
   stack delay at the paper's 100 repetitions, every implementation as the paper's: the ``-this-machine`` claims read
   those) the as-built archive's 9 ms groups keep the repetitions recorded with both captures, 1–3, and their
   group.json lists those three and says where the others went; the groups at the other RTTs (imc24 Appendix F,
   Table 2) stay whole until the dataset 'paper''s parts B hold them.

    python -m quicack.layout.archive unpack data/sample/imc24-as-built.tar.xz <folder>
    python tools/repack_sample_34.py trim <folder> data/sample

5. (``filters``, 2026-11-29, to make room for the dataset 'paper''s part Q) ``raw.tar.xz`` packed again as the
   dataset 'paper''s parts are (``quicack.testbed.parts.PART_XZ_FILTERS``: xz's extreme level with lc 4 / pb 0, the
   files of one kind side by side): the same 2,794 files, checked file by file after unpacking; 30.63 -> 28.22 MB.

    python -m quicack.layout.archive unpack data/sample/raw.tar.xz <folder>
    python tools/repack_sample_34.py filters <folder> data/sample
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from quicack.layout import PAPER_STACK_SUFFIX
from quicack.layout.archive import BASE_ARCHIVE, pack
from quicack.testbed.parts import PART_XZ_FILTERS
from quicack.testbed.reduce import drop_server_side_capture

LIBRARY_CLIENTS = ("aioquic", "go-x-net", "ngtcp2", "quic-go", "quiche", "quinn")
LIBRARY_GROUPS = tuple(f"quic-go_{client}" for client in LIBRARY_CLIENTS)
MAIN_SCENARIOS = ("noloss", "amplification", "drop_server_flight", "drop_client_flight")
AS_BUILT_ARCHIVE = "imc24-as-built.tar.xz"
WHY = ("issue 34: server-side capture removed when the embedded dataset was packed again to make room for the "
       "dataset 'paper' (tools/repack_sample_34.py); the first repetition of each group keeps it")  # fmt: skip


def main(raw: Path, into: Path) -> int:
    removed = cut = 0
    as_built = []
    for pair in sorted(raw.iterdir()):
        if not pair.is_dir():
            continue
        for testcase in sorted(p for p in pair.iterdir() if p.is_dir()):
            scenario = testcase.name.split("-", 1)[0]  # quicack.layout.naming: <scenario>-<mode>-...
            if scenario.endswith(PAPER_STACK_SUFFIX):
                shutil.rmtree(testcase)
                removed += 1
                continue
            if pair.name in LIBRARY_GROUPS and scenario in MAIN_SCENARIOS:
                as_built.append(f"{pair.name}/{testcase.name}")
                for run in sorted(p for p in testcase.iterdir() if p.is_dir() and p.name.isdigit() and p.name != "1"):
                    cut += drop_server_side_capture(run, WHY)
    kept = sorted(
        path.relative_to(raw).as_posix() for path in raw.glob("*/*") if path.relative_to(raw).as_posix() not in as_built
    )
    print(f"{removed} *_paper_stack groups removed, {cut} server-side captures cut, {len(as_built)} groups apart")
    print(f"{pack(raw, into / BASE_ARCHIVE, only=kept)} files -> {into / BASE_ARCHIVE}")
    print(f"{pack(raw, into / AS_BUILT_ARCHIVE, only=as_built)} files -> {into / AS_BUILT_ARCHIVE}")
    return 0


TRIMMED_RTT = "rtt9ms"  # quicack.layout.naming: <scenario>-<mode>-rtt<RTT>ms-...
TRIMMED_KEEP = 3  # the repetitions recorded with both captures (4-10 were added client side only)
TRIM_WHY = ("issue 34: repetitions 4-10 left the embedded dataset when the dataset 'paper' recorded this cell on this "
            "machine's stack delay at imc24's 100 repetitions, every implementation as the paper's (its part M, "
            "data/paper/part-M.tar.xz; tools/repack_sample_34.py trim)")  # fmt: skip


def trim(as_built: Path, into: Path) -> int:
    """Step 4: the 9 ms groups of the unpacked as-built archive keep repetitions 1..TRIMMED_KEEP; packed again."""
    groups = sorted(path for path in as_built.glob("*/*") if path.is_dir())
    removed = 0
    for group in groups:
        if f"-{TRIMMED_RTT}-" not in group.name:
            continue
        for run in sorted(p for p in group.iterdir() if p.is_dir() and p.name.isdigit() and int(p.name) > TRIMMED_KEEP):
            shutil.rmtree(run)
            removed += 1
        summary_path = group / "group.json"
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        summary["runs"] = [run for run in summary["runs"] if run["repetition"] <= TRIMMED_KEEP]
        summary["trimmed"] = TRIM_WHY
        summary_path.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    keys = [group.relative_to(as_built).as_posix() for group in groups]
    print(f"{removed} runs of the 9 ms groups removed")
    print(f"{pack(as_built, into / AS_BUILT_ARCHIVE, only=keys)} files -> {into / AS_BUILT_ARCHIVE}")
    return 0


def filters(raw: Path, into: Path) -> int:
    """Step 5: the unpacked ``raw.tar.xz`` packed again with the parts' xz filters, files of one kind side by side."""
    print(f"{pack(raw, into / BASE_ARCHIVE, filters=PART_XZ_FILTERS, by_kind=True)} files -> {into / BASE_ARCHIVE}")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "filters":
        sys.exit(filters(Path(sys.argv[2]), Path(sys.argv[3])))
    if sys.argv[1] == "trim":
        sys.exit(trim(Path(sys.argv[2]), Path(sys.argv[3])))
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
