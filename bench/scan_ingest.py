"""Scan ingest speed and memory: ``quicack scan`` on growing prefixes of one real scan capture, against the
authors' own first step (tshark exporting the 18 fields of their ``pcap.csv``) on the same files.

    sudo python -m quicack.testbed.scan --config config/testbed_scan_bench.yaml     # 100,000 connections, ~10 min
    python bench/scan_ingest.py results/scan_bench/raw/hamburg/data/<timestamp> --fractions 0.1 0.5 1

Each prefix (the first N packets of the capture, cut with editcap, so every connection in it is a distinct real one)
is measured with /usr/bin/time -v: wall seconds, CPU seconds (user + system), peak RSS, connections classified per
second (of wall and of CPU time); "flat" memory means peak RSS grows far slower than the capture. Prints a Markdown
table and writes JSON beside it (--json).

    python bench/scan_ingest.py MEASUREMENT --fractions 0.1 1 --baseline-src OLD/src --repeat 3 --no-tshark

``--baseline-src``: also ``quicack scan`` of another version (``PYTHONPATH=OLD/src``; e.g. ``git archive main src``,
with the quicack_core installed in site-packages), alternating with this one ``--repeat`` times per prefix; the
table then has one row per version with the best and the median of the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

# The authors' tshark export (SCAN.md): pipe-separated, one row per UDP datagram, 18 fields.
AUTHORS_FIELDS = (
    "frame.time_epoch", "ip.src", "ip.dst", "udp.length", "udp.srcport", "udp.dstport", "quic.version",
    "quic.long.packet_type", "quic.scid", "quic.dcid", "quic.frame_type", "quic.ack.ack_delay", "quic.ack.ack_range",
    "quic.ack.first_ack_range", "tls.quic.parameter.ack_delay_exponent", "tls.handshake.type",
    "tls.handshake.extensions_server_name", "ip.ttl",
)  # fmt: skip


def timed(argv: list[str], stdout=subprocess.DEVNULL, env: dict | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of a command, by GNU time."""
    wall, _, rss = timed_cpu(argv, stdout, env)
    return wall, rss


def timed_cpu(argv: list[str], stdout=subprocess.DEVNULL, env: dict | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds = user + system, peak RSS MiB) of a command, by GNU time."""
    done = subprocess.run(
        ["/usr/bin/time", "-v", *argv], stdout=stdout, stderr=subprocess.PIPE, text=True, check=True, encoding="utf-8",
        env=env,
    )  # fmt: skip
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", done.stderr)
    hours, minutes, seconds = (float(g) if g else 0.0 for g in wall.groups())
    rss_kb = float(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    cpu = sum(
        float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", done.stderr).group(1)) for kind in ("User", "System")
    )
    return hours * 3600 + minutes * 60 + seconds, cpu, rss_kb / 1024


def plain_file(folder: Path, name: str, work: Path) -> Path | None:
    """``name`` or ``name.zst`` of a measurement folder as a plain file (editcap and tshark read no zstd; quicack
    reads both), or None."""
    for candidate in (folder / name, folder / f"{name}.zst"):
        if candidate.is_file():
            if candidate.suffix != ".zst":
                return candidate
            out = work / name
            subprocess.run(["zstd", "-d", "-q", "-f", str(candidate), "-o", str(out)], check=True)
            return out
    return None


def packet_count(capture: Path) -> int:
    out = subprocess.run(
        ["capinfos", "-c", "-M", str(capture)], capture_output=True, text=True, check=True, encoding="utf-8"
    ).stdout
    return int(re.search(r"Number of packets:\s+(\d+)", out).group(1))


def measurement_prefix(folder: Path, capture: Path, packets: int, work: Path) -> Path:
    """A measurement folder whose capture is the first ``packets`` packets; the scanner's files as they are."""
    cut = work / f"prefix-{packets}" / "vp" / "data" / folder.name
    cut.mkdir(parents=True)
    subprocess.run(["editcap", "-r", str(capture), str(cut / "capture.pcap"), f"1-{packets}"], check=True)
    for path in folder.iterdir():
        if path.is_file() and not path.name.startswith("capture."):
            (cut / path.name).symlink_to(path.resolve())
    return cut


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measurement", type=Path, help="one measurement folder (<vp>/data/<timestamp>/)")
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    parser.add_argument("--prefix-to-asn", type=Path)
    parser.add_argument("--json", type=Path, default=Path("bench/results/scan_ingest.json"))
    parser.add_argument("--no-tshark", action="store_true")
    parser.add_argument("--baseline-src", type=Path, help="also quicack from this src folder, alternating (old vs new)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each version per prefix (best and median)")
    args = parser.parse_args()
    rows = []
    versions = {"quicack": os.environ.get("PYTHONPATH")}
    if args.baseline_src:
        versions["quicack before"] = str(args.baseline_src.resolve())
    with tempfile.TemporaryDirectory(prefix="quicack-scan-bench-") as tmp:
        work = Path(tmp)
        capture = plain_file(args.measurement, "capture.pcap", work)
        if capture is None:
            raise SystemExit(f"{args.measurement}: no capture.pcap[.zst]")
        total = packet_count(capture)
        keylog = plain_file(args.measurement, "key.log", work)
        for fraction in args.fractions:
            packets = max(1, int(total * fraction))
            folder = measurement_prefix(args.measurement, capture, packets, work)
            asn = ["--prefix-to-asn", str(args.prefix_to_asn)] if args.prefix_to_asn else []
            runs: dict[str, list[tuple[float, float, float, float, float, float]]] = {name: [] for name in versions}
            for _ in range(args.repeat):
                for name, pythonpath in versions.items():  # alternating, so that both see the same load
                    env = dict(os.environ)
                    if pythonpath:
                        env["PYTHONPATH"] = pythonpath
                    else:
                        env.pop("PYTHONPATH", None)
                    out = work / f"out-{packets}-{len(runs[name])}-{name.replace(' ', '_')}"
                    wall, cpu, rss = timed_cpu(["quicack", "scan", str(folder), "--out", str(out), *asn], env=env)
                    wall_only, cpu_only, rss_only = timed_cpu(
                        ["quicack", "scan", str(folder), "--out", str(out / "only"), "--no-capture-tables", *asn],
                        env=env,
                    )
                    runs[name].append((wall, cpu, rss, wall_only, cpu_only, rss_only))
                    connections = (
                        pl.scan_parquet(out / "scan_connections.parquet")
                        .filter(pl.col("captured"))
                        .select(pl.len())
                        .collect()
                        .item()
                    )
                    shutil.rmtree(out)
            for name, measured in runs.items():
                best = [min(values) for values in zip(*measured, strict=True)]
                median = [statistics.median(values) for values in zip(*measured, strict=True)]
                row = {
                    "version": name,
                    "packets": packets,
                    "capture_mib": round((folder / "capture.pcap").stat().st_size / 2**20, 1),
                    "connections": connections,
                    "quicack_s": round(best[0], 2),
                    "quicack_cpu_s": round(best[1], 2),
                    "quicack_cpu_s_median": round(median[1], 2),
                    "quicack_peak_rss_mib": round(max(run[2] for run in measured), 1),
                    "quicack_connections_per_s": round(connections / best[0], 1),
                    "quicack_connections_per_cpu_s": round(connections / best[1], 1),
                    "quicack_scan_only_s": round(best[3], 2),
                    "quicack_scan_only_cpu_s": round(best[4], 2),
                    "quicack_scan_only_peak_rss_mib": round(max(run[5] for run in measured), 1),
                }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
            wall = min(run[0] for run in runs["quicack"])
            row = rows[-len(runs)]
            if not args.no_tshark and shutil.which("tshark"):
                fields = [arg for field in AUTHORS_FIELDS for arg in ("-e", field)]
                keys = ["-o", f"tls.keylog_file:{keylog}"] if keylog else []
                with (work / "pcap.csv").open("w", encoding="utf-8") as sink:
                    t_wall, t_rss = timed(
                        ["tshark", "-n", "-r", str(folder / "capture.pcap"), *keys, "-Y", "quic", "-T", "fields",
                         "-E", "separator=|", "-E", "aggregator=,", *fields],
                        stdout=sink,
                    )  # fmt: skip
                row |= {
                    "tshark_fields_s": round(t_wall, 2),
                    "tshark_peak_rss_mib": round(t_rss, 1),
                    "tshark_over_quicack": round(t_wall / wall, 2),
                }
    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        tbl_cols=-1,
        tbl_width_chars=400,
    ):
        print(pl.DataFrame(rows))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"measurement": str(args.measurement), "packets_total": total, "rows": rows}, indent=1),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
