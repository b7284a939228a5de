"""The compiled core's hand-off of rows to polars (Arrow C data interface), timed alone, between two builds of
quicack_core (not a test: run by hand, prints a table).

The export is a small part of an ingest (bench/README.md: ~0.15 s of a 100 MB qlog, ~0.27 s of the 707 MB
capture), so on a shared machine the whole-command benchmarks (qlog_throughput.py, pcap_decode.py) cannot tell a
few per cent of it from load. Here each run is a child process that ingests a real input with one core build and
adds up the CPU time of the export steps only: for the qlog lane `take_arrow` + `pl.DataFrame` of each batch
(`qlog.lane.LaneMerged.frame`), for the capture decoder `RowBuffers.columns()` + the three `pl.DataFrame`s of each
batch (`pcap.columns.assemble_batch`). The builds alternate; best and median CPU seconds of each are printed.

    python bench/core_export.py --core old=/tmp/old-site --core new=/tmp/new-site [--repeat 5] \\
        [--qlog FILE.sqlog] [--capture FILE.pcap --keylog KEYS]

A --core folder holds a `quicack_core` package (e.g. `pip install --no-deps --target DIR ./rust/quicack_core`);
the quicack package is this checkout's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def child_qlog(path: Path) -> float:
    import polars as pl

    from quicack.qlog import lane as lane_module
    from quicack.qlog.qlog_file import iter_qlog

    spent = [0.0]
    original = lane_module.LaneMerged.frame

    def frame(self, table):  # noqa: ANN001, ANN202
        # the Arrow path of LaneMerged.frame, its export steps timed
        lane, number = self.lane, self.table
        for conn, flat in self.parts:
            if flat and lane.absorb(conn.cid, number, flat):
                flat.clear()
        if any(flat for _, flat in self.parts):
            return original(self, table)
        started = time.process_time()
        columns, lengths = lane.take_arrow(number, [conn.cid for conn, _ in self.parts])
        frame_ = pl.DataFrame(columns)
        spent[0] += time.process_time() - started
        self.conns = [conn for (conn, _), n in zip(self.parts, lengths, strict=True) if n]
        self.lengths = [n for n in lengths if n]
        if not self.conns:
            return table.empty()
        return self.finish(frame_, table)

    lane_module.LaneMerged.frame = frame
    for _ in iter_qlog(path, "r", engine="compiled"):
        pass
    return spent[0]


def child_pcap(capture: Path, keylog: Path) -> float:
    from quicack.pcap import columns as columns_module
    from quicack.pcap import decode as decode_module

    spent = [0.0]
    original_frame = columns_module._frame

    def timed_frame(table, columns):  # noqa: ANN001, ANN202
        started = time.process_time()
        out = original_frame(table, columns)
        spent[0] += time.process_time() - started
        return out

    class TimedRows:
        def __init__(self, rows) -> None:  # noqa: ANN001
            self._rows = rows

        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(self._rows, name)

        def columns(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            started = time.process_time()
            out = self._rows.columns(*args, **kwargs)
            spent[0] += time.process_time() - started
            return out

    original_assemble = columns_module.assemble_batch

    def assemble(rows, *args):  # noqa: ANN001, ANN002, ANN202
        return original_assemble(TimedRows(rows), *args)

    columns_module._frame = timed_frame
    decode_module.assemble_batch = assemble
    for _ in decode_module.decode_capture(capture, [keylog], "r", "client", engine="compiled"):
        pass
    return spent[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--core", action="append", default=[], help="NAME=FOLDER holding a quicack_core build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--qlog", type=Path)
    ap.add_argument("--capture", type=Path)
    ap.add_argument("--keylog", type=Path)
    ap.add_argument("--child", choices=["qlog", "pcap"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "qlog":
        print(json.dumps(child_qlog(args.qlog)))
        return 0
    if args.child == "pcap":
        print(json.dumps(child_pcap(args.capture, args.keylog)))
        return 0
    cores = dict(item.split("=", 1) for item in args.core)
    inputs = []
    if args.qlog:
        inputs.append(("qlog", ["--qlog", str(args.qlog)]))
    if args.capture:
        inputs.append(("pcap", ["--capture", str(args.capture), "--keylog", str(args.keylog)]))
    print(f"load before {open('/proc/loadavg', encoding='utf-8').read().split()[0]}")
    for kind, input_args in inputs:
        spent: dict[str, list[float]] = {name: [] for name in cores}
        for _ in range(args.repeat):
            for name, folder in cores.items():  # alternating, so that load changes hit each build alike
                env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "src"), folder]))
                command = [sys.executable, __file__, "--child", kind, *input_args]
                spent[name].append(json.loads(subprocess.run(command, env=env, check=True, capture_output=True,
                                                             text=True, encoding="utf-8").stdout))
        first = next(iter(cores))
        for name, times in spent.items():
            ratio_best = min(times) / min(spent[first])
            ratio_median = statistics.median(times) / statistics.median(spent[first])
            print(f"{kind} export CPU s  {name:<10} best {min(times):.3f}  median {statistics.median(times):.3f}  "
                  f"/ {first}: {ratio_best:.2f} best, {ratio_median:.2f} median  (runs: "
                  f"{', '.join(f'{t:.3f}' for t in times)})")
    print(f"load after {open('/proc/loadavg', encoding='utf-8').read().split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
