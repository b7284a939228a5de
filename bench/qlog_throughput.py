"""qlog ingest throughput and peak memory (not a test: run by hand, prints a table).

Builds large JSON-SEQ inputs in a temporary folder (never committed) by concatenating the real JSON-SEQ traces
of the repository (tests/data/loopback/**/qlog/*.sqlog and tests/data/qlog/**/*.sqlog) until each reaches the
requested size, so the input holds thousands of real connections. For each size a fresh child process:

1. runs ``quicack.qlog.write_qlog_parquet`` on it and reads its peak RSS (``resource.getrusage``) right after;
2. runs the reference in the same process: plain line iteration + ``json.loads`` per record, no normalization
   (and the same with ``orjson.loads``).

It prints MB/s, events/s, peak RSS and the ratio ingest time / reference time. Wall-clock numbers depend on the
machine's load; the ratio to the reference run in the same process is the number to compare.

    python bench/qlog_throughput.py                 # 100 MB and 500 MB, compiled and Python reader alternating
    python bench/qlog_throughput.py --sizes 50 200  # other sizes (MB)
    python bench/qlog_throughput.py --engines python --repeat 3

``--engines`` picks the readers (``QUICACK_QLOG_ENGINE`` of the child; "compiled" needs quicack_core with its
QlogLane); with several, each size runs them alternately, ``--repeat`` times. The child keeps the caller's
PYTHONPATH after the repository's src (a privately built quicack_core stays importable).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def real_traces() -> list[bytes]:
    """Contents of the real JSON-SEQ traces, read once (the testbed may re-record files meanwhile)."""
    out = []
    for p in sorted((REPO / "tests" / "data").rglob("*.sqlog")):
        try:
            data = p.read_bytes()
        except OSError:
            continue
        if data[:1] == b"\x1e":
            out.append(data)
    return out


def build_input(path: Path, size_mb: float, sources: list[bytes]) -> Path:
    """Concatenate ``sources`` round-robin into ``path`` until it holds at least ``size_mb`` MB."""
    target = int(size_mb * 1e6)
    if path.exists() and path.stat().st_size >= target:
        return path
    blobs = sources
    written = 0
    with open(path, "wb") as f:
        while written < target:
            for b in blobs:
                f.write(b)
                written += len(b)
    return path


def reference(path: Path, loads) -> tuple[float, float, int]:  # noqa: ANN001
    """Plain iteration: one JSON record per line (RS stripped), parsed and dropped."""
    wall, cpu, n = time.perf_counter(), time.process_time(), 0
    with open(path, "rb") as f:
        for line in f:
            if line[:1] == b"\x1e":
                line = line[1:]
            if line.strip():
                loads(line)
                n += 1
    return time.perf_counter() - wall, time.process_time() - cpu, n


def child(path: Path, out_dir: Path) -> None:
    sys.path.insert(0, str(REPO / "src"))
    from quicack.qlog import write_qlog_parquet
    from quicack.qlog.reader_engine import lane_class

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall, cpu = time.perf_counter(), time.process_time()
    summary = write_qlog_parquet([path], out_dir, run_id_for=lambda p: p.stem)
    ingest_wall, ingest_cpu = time.perf_counter() - wall, time.process_time() - cpu
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    ref_wall, ref_cpu, records = reference(path, json.loads)
    try:
        import orjson

        or_wall, or_cpu, _ = reference(path, orjson.loads)
    except ImportError:
        or_wall = or_cpu = float("nan")
    print(
        json.dumps(
            {
                "engine": "compiled" if lane_class() else "python",
                "bytes": path.stat().st_size,
                "events": summary.events,
                "records": records,
                "rows": summary.rows,
                "ingest_wall_s": ingest_wall,
                "ingest_cpu_s": ingest_cpu,
                "ref_json_wall_s": ref_wall,
                "ref_json_cpu_s": ref_cpu,
                "ref_orjson_wall_s": or_wall,
                "ref_orjson_cpu_s": or_cpu,
                "rss_start_mib": rss_before / 1024,
                "rss_peak_mib": rss_peak / 1024,
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=float, nargs="+", default=[100, 500], help="input sizes in MB")
    ap.add_argument("--engines", nargs="+", default=["compiled", "python"], choices=["compiled", "python"],
                    help="qlog readers to measure, alternately (QUICACK_QLOG_ENGINE)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size and engine")
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "quicack_qlog_bench")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.out)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    sources = real_traces()
    print(
        f"{len(sources)} real JSON-SEQ traces, {sum(len(b) for b in sources) / 1e3:.0f} kB, "
        f"concatenated into {args.workdir}"
    )
    print(
        f"{'engine':>8} {'load':>5} {'input MB':>9} {'events':>10} {'conns':>7} {'MB/s':>7} {'ev/s':>9} "
        f"{'cpu MB/s':>8} {'peak RSS MiB':>12} "
        f"{'ref json MB/s':>13} {'ratio wall':>10} {'ratio cpu':>9} {'orjson-only MB/s':>16}"
    )
    python_path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)
    for size in args.sizes:
        path = build_input(args.workdir / f"qlog_{int(size)}MB.sqlog", size, sources)
        for _ in range(args.repeat):
            for engine in args.engines:
                env = {**os.environ, "PYTHONPATH": python_path, "QUICACK_QLOG_ENGINE": engine}
                run_child(path, args.workdir / f"out_{int(size)}_{engine}", env)


def run_child(path: Path, out_dir: Path, env: dict[str, str]) -> None:
    load = Path("/proc/loadavg").read_text(encoding="utf-8").split()[0] if Path("/proc/loadavg").exists() else "?"
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--out", str(out_dir)],
        check=True, capture_output=True, text=True, env=env, encoding="utf-8",
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    mb = r["bytes"] / 1e6
    print(
        f"{r['engine']:>8} {load:>5} {mb:9.0f} {r['events']:10d} {r['rows']['endpoints']:7d} "
        f"{mb / r['ingest_wall_s']:7.1f} "
        f"{r['events'] / r['ingest_wall_s']:9.0f} {mb / r['ingest_cpu_s']:8.1f} {r['rss_peak_mib']:12.0f} "
        f"{mb / r['ref_json_wall_s']:13.1f} {r['ingest_wall_s'] / r['ref_json_wall_s']:10.2f} "
        f"{r['ingest_cpu_s'] / r['ref_json_cpu_s']:9.2f} {mb / r['ref_orjson_wall_s']:16.1f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
