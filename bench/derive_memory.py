"""Peak RSS of one run group's ingest and derive jobs on one very long connection, against the qlog's size.

    python bench/derive_memory.py [--events 1000000] [--source QLOG] [--src SRC ...] [--work DIR]

Makes a raw folder holding one run whose client qlog has ``--events`` events: the events of a real JSON-SEQ qlog
(default: the quic-go client of one embedded 10 MB download, 14,944 events) repeated back to back, each copy's
times shifted by the trace's duration and its packet numbers (in headers and ACK ranges) by the largest packet
number + 1, so that the long trace stays one consistent connection to the RFC 9002 recomputation. Then, per package
given with ``--src`` (a ``src`` folder: this checkout's by default, an older copy to compare), runs the pipeline
commands the rules run, ``quicack ingest-group`` and ``quicack derive-group``, each under ``/usr/bin/time -v``, and
prints per job the peak RSS (maximum resident set size), the wall time and the peak RSS per MB of qlog. Peak RSS
does not depend on the machine's load; wall times do (the load average is printed beside them).
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
SOURCE = next(
    iter(
        sorted(
            (REPO / "data" / "sample" / "raw" / "aioquic_quic-go" / "transfer-wfc-rtt100ms-10MB-h3" / "1").glob(
                "client/qlog/*.sqlog*"
            )
        )
    ),
    None,
)
GROUP = "aioquic_quic-go"
RUN = "transfer-wfc-rtt100ms-10MB-h3/1"


def _records(path: Path) -> list[dict]:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return [orjson.loads(part) for part in data.split(b"\x1e") if part.strip()]


def _shifted(event: dict, dt: float, dpn: int) -> dict:
    data = event.get("data")
    if not isinstance(data, dict):
        return {**event, "time": event["time"] + dt}
    data = dict(data)
    header = data.get("header")
    if isinstance(header, dict) and isinstance(header.get("packet_number"), int):
        data["header"] = {**header, "packet_number": header["packet_number"] + dpn}
    frames = data.get("frames")
    if isinstance(frames, list):
        data["frames"] = [
            {**f, "acked_ranges": [[n + dpn for n in r] for r in f["acked_ranges"]]}
            if isinstance(f, dict) and "acked_ranges" in f
            else f
            for f in frames
        ]
    return {**event, "time": event["time"] + dt, "data": data}


def make_long_qlog(source: Path, events: int, out: Path) -> int:
    """Write a JSON-SEQ qlog of ``events`` events made from ``source``; returns its size in bytes."""
    records = _records(source)
    header, body = records[0], [r for r in records[1:] if isinstance(r.get("time"), int | float)]
    span = max(r["time"] for r in body) - min(r["time"] for r in body) + 1.0
    largest = max(
        (r["data"]["header"]["packet_number"] for r in body
         if isinstance(r.get("data"), dict) and isinstance(r["data"].get("header"), dict)
         and isinstance(r["data"]["header"].get("packet_number"), int)),
        default=0,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with out.open("wb") as f:
        f.write(b"\x1e" + orjson.dumps(header) + b"\n")
        copy = 0
        while written < events:
            for event in body:
                if written == events:
                    break
                f.write(b"\x1e" + orjson.dumps(_shifted(event, copy * span, copy * (largest + 1))) + b"\n")
                written += 1
            copy += 1
    return out.stat().st_size


def timed(command: list[str], src: Path) -> dict[str, float]:
    """Peak RSS (MiB) and wall seconds of ``command`` under /usr/bin/time -v, with ``src`` first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        ["/usr/bin/time", "-v", *command], env=env, capture_output=True, text=True, check=False, encoding="utf-8"
    )
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", done.stderr).group(1)
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(wall.split(":"))))
    return {"rss_mib": rss_kb / 1024, "wall_s": seconds, "load": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--source", type=Path, default=SOURCE, help="a real JSON-SEQ qlog (optionally .gz)")
    parser.add_argument("--src", type=Path, action="append", help="a package's src folder (default: this checkout's)")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one, removed)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="quicack-derive-memory-"))
    try:
        raw = work / "raw"
        run = raw / GROUP / RUN
        size = make_long_qlog(args.source, args.events, run / "client" / "qlog" / "long_client.sqlog")
        run_json = args.source.parents[2] / "run.json"
        if run_json.is_file():
            shutil.copy(run_json, run / "run.json")
        print(
            f"qlog: {args.events:,} events, {size / 1e6:.1f} MB (from {args.source.name}, "
            f"{len(_records(args.source)) - 1:,} events)"
        )
        print("| package | job | peak RSS (MiB) | per MB of qlog | wall (s) | load |")
        print("|---|---|---|---|---|---|")
        for src in args.src or [REPO / "src"]:
            parquet = work / f"parquet-{abs(hash(str(src)))}"
            jobs = {
                "ingest-group": [
                    "quicack",
                    "ingest-group",
                    "--raw",
                    str(raw),
                    "--group",
                    GROUP,
                    "--dataset",
                    "bench",
                    "--parquet",
                    str(parquet),
                ],
                "derive-group": ["quicack", "derive-group", "--parquet", str(parquet), "--group", GROUP],
            }
            for name, command in jobs.items():
                m = timed(command, src)
                print(
                    f"| {src} | {name} | {m['rss_mib']:.0f} | {m['rss_mib'] / (size / 1e6):.2f} | {m['wall_s']:.1f} | "
                    f"{m['load']:.1f} |",
                    flush=True,
                )
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
