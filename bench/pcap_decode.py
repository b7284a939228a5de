"""Benchmark: capture decoding speed and peak memory of quicack.pcap vs pyshark and `tshark -T fields`.

    python bench/pcap_decode.py                      # records a 10 MB aioquic transfer in /tmp if needed
    python bench/pcap_decode.py --capture C --keylog K [--concat 100] [--skip-pyshark] [--tshark-concat]

All tools run as separate processes under /usr/bin/time -v on the same capture with the same keylog, in
this run, so the ratios compare like with like. Packets/s counts QUIC packets (our packets table; pyshark
and tshark see the same ones). --concat N concatenates N copies (mergecap -a) into /tmp to show that our
peak RSS does not grow with the file size. Nothing is written outside /tmp.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORDER = REPO / "tests" / "data" / "pcap" / "record_aioquic.py"
DEFAULT_DIR = Path("/tmp/quicack-bench/transfer10m")
TSHARK_FIELDS = [
    "frame.time_epoch",
    "udp.srcport",
    "quic.long.packet_type",
    "quic.packet_number",
    "quic.frame_type",
    "quic.ack.largest_acknowledged",
    "quic.ack.ack_delay",
    "quic.stream.stream_id",
    "quic.stream.offset",
    "quic.stream.length",
]
PYSHARK_SCRIPT = """
import sys, pyshark
capture = pyshark.FileCapture(sys.argv[1], override_prefs={"tls.keylog_file": sys.argv[2]})
packets = 0
for record in capture:
    for layer in record.layers:
        if layer.layer_name == "quic":
            packets += 1
            getattr(layer, "packet_number", None), getattr(layer, "frame_type", None), getattr(layer, "ack_ack_delay", None)
capture.close()
print(packets)
"""


@dataclass
class Measurement:
    tool: str
    capture: Path
    seconds: float  # best wall-clock time of the runs
    peak_rss_mb: float
    command: str
    cpu_seconds: float = 0.0  # best user + system CPU time of the runs: less sensitive to other jobs' load


REPEAT = 1  # set from --repeat: best of N runs, because a shared machine's load makes single runs noisy


def timed(
    tool: str, command: list[str], capture: Path, stdout=subprocess.DEVNULL, repeat: int | None = None
) -> Measurement:
    """Best wall time and best CPU time of `repeat` runs under /usr/bin/time -v, with the largest peak RSS seen."""
    best: Measurement | None = None
    peak = 0.0
    best_cpu = float("inf")
    for _ in range(repeat or REPEAT):
        result = subprocess.run(
            ["/usr/bin/time", "-v", *command], stdout=stdout, stderr=subprocess.PIPE, text=True, check=True
        )
        elapsed = re.search(
            r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", result.stderr
        )
        hours, minutes, seconds = (float(g) if g else 0.0 for g in elapsed.groups())
        peak = max(peak, int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr).group(1)) / 1024)
        cpu = sum(
            float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", result.stderr).group(1))
            for kind in ("User", "System")
        )
        best_cpu = min(best_cpu, cpu)
        run = Measurement(tool, capture, hours * 3600 + minutes * 60 + seconds, peak, " ".join(command))
        if best is None or run.seconds < best.seconds:
            best = run
    best.peak_rss_mb = peak
    best.cpu_seconds = best_cpu
    return best


def ours(capture: Path, keylog: Path, out: Path, repeat: int | None = None) -> tuple[Measurement, int]:
    measurement = timed(
        "quicack",
        [sys.executable, "-m", "quicack.pcap.cli", str(capture), "--keylog", str(keylog), "--out", str(out)],
        capture,
        repeat=repeat,
    )
    import polars as pl

    packets = pl.scan_parquet(out / "packets.parquet").select(pl.len()).collect().item()
    return measurement, packets


def tshark(capture: Path, keylog: Path, repeat: int | None = None) -> Measurement:
    fields = [arg for field in TSHARK_FIELDS for arg in ("-e", field)]
    return timed(
        "tshark -T fields",
        ["tshark", "-r", str(capture), "-o", f"tls.keylog_file:{keylog}", "-T", "fields", *fields],
        capture,
    )


def pyshark(capture: Path, keylog: Path, script: Path) -> Measurement:
    return timed("pyshark", [sys.executable, str(script), str(capture), str(keylog)], capture, repeat=1)


def ensure_capture(directory: Path) -> tuple[Path, Path]:
    capture, keylog = directory / "capture.pcap", directory / "keys.log"
    if not capture.exists():
        subprocess.run(
            [sys.executable, str(RECORDER), str(directory), "--port", "5499", "--bytes", "10000000"], check=True
        )
    return capture, keylog


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capture", type=Path)
    parser.add_argument("--keylog", type=Path)
    parser.add_argument(
        "--concat", type=int, default=0, help="also decode N concatenated copies (peak RSS vs file size)"
    )
    parser.add_argument("--skip-pyshark", action="store_true", help="pyshark takes ~1 min on the 10 MB capture")
    parser.add_argument("--tshark-concat", action="store_true", help="also run tshark on the concatenation (minutes)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs for quicack and tshark (pyshark: 1)")
    args = parser.parse_args()
    global REPEAT
    REPEAT = args.repeat
    capture, keylog = (args.capture, args.keylog) if args.capture else ensure_capture(DEFAULT_DIR)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="quicack-bench-") as tmp:
        work = Path(tmp)
        script = work / "pyshark_iterate.py"
        script.write_text(PYSHARK_SCRIPT)
        measurements: list[tuple[Measurement, int]] = []
        our_run, packets = ours(capture, keylog, work / "out1")
        measurements.append((our_run, packets))
        measurements.append((tshark(capture, keylog), packets))
        if not args.skip_pyshark:
            measurements.append((pyshark(capture, keylog, script), packets))
        if args.concat:
            big = work / f"concat{args.concat}.pcap"
            subprocess.run(["mergecap", "-a", "-F", "pcap", "-w", str(big), *[str(capture)] * args.concat], check=True)
            measurements.append(ours(big, keylog, work / "outN", repeat=1))  # large: one run each
            if args.tshark_concat:
                measurements.append((tshark(big, keylog, repeat=1), measurements[-1][1]))
        load_after = os.getloadavg()
        print(
            f"load average (1/5/15 min) before {'/'.join(f'{v:.2f}' for v in load_before)}, "
            f"after {'/'.join(f'{v:.2f}' for v in load_after)} on {os.cpu_count()} CPUs; best of {REPEAT} runs"
        )
        print(
            f"{'tool':<18} {'capture':<28} {'MB':>7} {'packets':>9} {'wall s':>8} {'CPU s':>7} {'packets/s':>10} "
            f"{'peak RSS MB':>12}"
        )
        for measurement, count in measurements:
            size_mb = measurement.capture.stat().st_size / 1e6
            rate = count / measurement.seconds
            print(
                f"{measurement.tool:<18} {measurement.capture.name:<28} {size_mb:>7.0f} {count:>9} "
                f"{measurement.seconds:>8.2f} {measurement.cpu_seconds:>7.2f} {rate:>10.0f} {measurement.peak_rss_mb:>12.0f}"
            )
        if args.concat and args.tshark_concat:
            # Per-packet rate without start-up (interpreter, libraries, dissector tables): from the two file sizes.
            for tool in ("quicack", "tshark -T fields"):
                small = next(m for m, _ in measurements if m.tool == tool and m.capture == capture)
                large = next(m for m, _ in measurements if m.tool == tool and m.capture != capture)
                marginal = packets * (args.concat - 1) / (large.seconds - small.seconds)
                print(
                    f"{tool:<18} steady-state {marginal:>10.0f} packets/s, start-up {small.seconds - packets / marginal:.2f} s"
                )
        base = {m.tool: m for m, _ in measurements if m.capture == capture}
        for other in ("tshark -T fields", "pyshark"):
            if other in base:
                ratio_wall = base[other].seconds / base["quicack"].seconds
                ratio_cpu = base[other].cpu_seconds / base["quicack"].cpu_seconds
                print(
                    f"quicack vs {other}: {ratio_wall:.2f}x wall, {ratio_cpu:.2f}x CPU (>1 = quicack faster; same capture)"
                )
        if shutil.which("tshark") is None:
            print("tshark not found: its numbers are missing", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
