"""Benchmark: capture decoding speed and peak memory of `quicack pcap` against `tshark -T fields`, on captures of
many distinct real connections (a concatenation of copies of one connection flatters us: tshark decrypts only
the first copy).

    python bench/pcap_decode.py build [--connections 10000 --bulk-every 100 --bulk-bytes 5000000]   # root, once
    python bench/pcap_decode.py run [--repeat 3] [--inputs small handshakes prefix large] [--python-engine]
                                    [--baseline-src OLD_CHECKOUT/src] [--pcapng]

`build` records the large input with the testbed's recorder (tests/data/pcap/record_aioquic.py --connections):
aioquic client and server on loopback, N connections from N distinct client ports, 8 at a time so that their
packets interleave; every 100th downloads 5 MB (bulk transfer), the others 10 KB (handshake-sized); every 10th
offers only ChaCha20-Poly1305 (the rest use AES-256-GCM). Written to /tmp/quicack-bench/many/ (never committed).

`run` decodes, alternating the tools within each repetition (ours, tshark, ours, tshark, ...), each a separate
process under /usr/bin/time -v, with the same keylog:
    small       one capture of the embedded dataset (a 10 KB hq transfer, ~30 KB uncompressed): start-up
    handshakes  the embedded dataset's client-side captures (390 distinct connections, 7 implementations) merged
                with mergecap, with all their keylogs
    prefix      the first eighth of the large input's records (distinct connections, the last ones cut)
    large       the large input
and prints wall and CPU time (user + system: all cores a tool uses, so CPU time is the per-core cost), best and
median of the repetitions, QUIC packets per CPU second (our packets table), peak RSS (the largest of the runs),
and the ratio tshark / quicack (> 1: quicack faster) for wall and CPU. `--python-engine` adds quicack forced to
its pure-Python engine (QUICACK_PCAP_ENGINE=python). `--pcapng` gives both tools each input as pcapng instead
(`editcap -F pcapng`: one Section Header, one Interface Description and an Enhanced Packet Block per record, as
Wireshark and dumpcap write them; the key log stays a separate file). Temporary outputs go to /tmp.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RECORDER = REPO / "tests" / "data" / "pcap" / "record_aioquic.py"
SAMPLE = REPO / "data" / "sample" / "raw"
WORK = Path("/tmp/quicack-bench")
LARGE = WORK / "many"
SMALL_RUN = SAMPLE / "quinn_aioquic" / "handshake-none-rtt30ms-10KB-hq" / "2"
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


@dataclass
class Runs:
    tool: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0


def timed(command: list[str], runs: Runs, env: dict[str, str] | None = None) -> None:
    """One run under /usr/bin/time -v: wall, user + system CPU and peak RSS go into `runs`."""
    result = subprocess.run(
        ["/usr/bin/time", "-v", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        encoding="utf-8",
    )
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {result.stderr[-2000:]}")
    text = result.stderr
    hours, minutes, seconds = (
        float(g) if g else 0.0
        for g in re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", text).groups()
    )
    runs.walls.append(hours * 3600 + minutes * 60 + seconds)
    runs.cpus.append(
        sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", text).group(1)) for kind in ("User", "System"))
    )
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
    runs.peak_rss_mb = max(runs.peak_rss_mb, rss)


def build(args: argparse.Namespace) -> int:
    LARGE.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, str(RECORDER), str(LARGE), "--port", "5498", "--bytes", str(args.bytes),
        "--connections", str(args.connections), "--parallel", "8", "--bulk-every", str(args.bulk_every),
        "--bulk-bytes", str(args.bulk_bytes), "--chacha-every", "10",
    ]  # fmt: skip
    return subprocess.run(command, check=False).returncode


def sample_inputs(work: Path) -> dict[str, tuple[Path, Path]]:
    """The small capture (uncompressed) and the merged embedded dataset, each with one keylog file."""
    inputs = {}
    small = work / "small.pcap"
    small.write_bytes(gzip.decompress((SMALL_RUN / "sim" / "trace_node_left.pcap.gz").read_bytes()))
    small_keys = work / "small.keys.log"
    small_keys.write_text(
        "".join(p.read_text(encoding="utf-8") for p in sorted(SMALL_RUN.glob("*/keys.log"))), encoding="utf-8"
    )
    inputs["small"] = (small, small_keys)
    captures = sorted(SAMPLE.glob("*/*/*/sim/trace_node_left.pcap.gz"))
    merged, merged_keys = work / "handshakes.pcap", work / "handshakes.keys.log"
    subprocess.run(["mergecap", "-a", "-F", "pcap", "-w", str(merged), *map(str, captures)], check=True)
    merged_keys.write_text(
        "".join(p.read_text(encoding="utf-8") for p in sorted(SAMPLE.glob("*/*/*/*/keys.log"))), encoding="utf-8"
    )
    inputs["handshakes"] = (merged, merged_keys)
    return inputs


def prefix_input(work: Path, fraction: int) -> tuple[Path, Path]:
    """The first 1/fraction of the large input's records (editcap), with its whole keylog."""
    capture = LARGE / "capture.pcap"
    listing = subprocess.run(
        ["capinfos", "-M", "-c", str(capture)], capture_output=True, text=True, check=True, encoding="utf-8"
    ).stdout
    count = int(re.search(r"Number of packets:\s+(\d+)", listing).group(1))
    prefix = work / f"prefix{fraction}.pcap"
    subprocess.run(["editcap", "-F", "pcap", "-r", str(capture), str(prefix), f"1-{count // fraction}"], check=True)
    return prefix, LARGE / "keys.log"


def packets_in(out: Path) -> tuple[int, int]:
    import polars as pl

    packets = pl.read_parquet(out / "packets.parquet", columns=["connection_odcid"])
    return packets.height, packets["connection_odcid"].n_unique()


def run(args: argparse.Namespace) -> int:
    if shutil.which("tshark") is None:
        print("tshark not found", file=sys.stderr)
        return 1
    load_before = open("/proc/loadavg", encoding="utf-8").read().split()[:3]
    with tempfile.TemporaryDirectory(prefix="quicack-bench-") as tmp:
        work = Path(tmp)
        inputs = sample_inputs(work) if {"small", "handshakes"} & set(args.inputs) else {}
        if "prefix" in args.inputs or "large" in args.inputs:
            if not (LARGE / "capture.pcap").exists():
                print(f"{LARGE}/capture.pcap missing: run `python {sys.argv[0]} build` first (root)", file=sys.stderr)
                return 1
            if "prefix" in args.inputs:
                inputs["prefix"] = prefix_input(work, 8)
            if "large" in args.inputs:
                inputs["large"] = (LARGE / "capture.pcap", LARGE / "keys.log")
        rows = []
        for name in args.inputs:
            capture, keylog = inputs[name]
            if args.pcapng:
                converted = work / f"{name}.pcapng"
                subprocess.run(["editcap", "-F", "pcapng", str(capture), str(converted)], check=True)
                capture = converted
            out = work / f"out-{name}"
            ours = [
                sys.executable,
                "-m",
                "quicack.pcap.pcap_command",
                str(capture),
                "--keylog",
                str(keylog),
                "--out",
                str(out),
            ]
            fields = [arg for field_name in TSHARK_FIELDS for arg in ("-e", field_name)]
            tshark = ["tshark", "-r", str(capture), "-o", f"tls.keylog_file:{keylog}", "-T", "fields", *fields]
            tools = {"quicack": (ours, None), "tshark -T fields": (tshark, None)}
            if args.python_engine:
                tools["quicack (Python engine)"] = (ours, dict(os.environ, QUICACK_PCAP_ENGINE="python"))
            if args.baseline_src:
                # The same command on another checkout's package (e.g. `git archive <commit> src | tar -x`),
                # with the same quicack_core: old against new in the same run.
                path = os.pathsep.join([str(args.baseline_src.resolve()), os.environ.get("PYTHONPATH", "")])
                tools["quicack (baseline)"] = (ours, dict(os.environ, PYTHONPATH=path))
            results = {tool: Runs(tool) for tool in tools}
            repeat = args.repeat if name != "small" else max(args.repeat, 10)
            for _ in range(repeat):  # alternate the tools, so that load changes hit them alike
                for tool, (command, env) in tools.items():
                    timed(command, results[tool], env)
            packets, connections = packets_in(out)
            rows.append((name, capture.stat().st_size / 1e6, connections, packets, results))
        load_after = open("/proc/loadavg", encoding="utf-8").read().split()[:3]
    print(
        f"load average (1/5/15 min) before {'/'.join(load_before)}, after {'/'.join(load_after)}, {os.cpu_count()} CPUs"
    )
    print(
        f"{'input':<11} {'MB':>6} {'conns':>6} {'packets':>8}  {'tool':<24} {'wall best/med s':>16} "
        f"{'CPU best/med s':>15} {'packets/CPU s':>13} {'peak RSS MB':>11}"
    )
    for name, size, connections, packets, results in rows:
        for runs in results.values():
            print(
                f"{name:<11} {size:>6.1f} {connections:>6} {packets:>8}  {runs.tool:<24} "
                f"{min(runs.walls):>7.2f}/{statistics.median(runs.walls):<8.2f} "
                f"{min(runs.cpus):>6.2f}/{statistics.median(runs.cpus):<8.2f} {packets / min(runs.cpus):>13.0f} "
                f"{runs.peak_rss_mb:>11.0f}"
            )
        ours, theirs = results["quicack"], results["tshark -T fields"]
        print(
            f"{name:<11} tshark / quicack: wall {min(theirs.walls) / min(ours.walls):.2f}x (median "
            f"{statistics.median(theirs.walls) / statistics.median(ours.walls):.2f}x), CPU "
            f"{min(theirs.cpus) / min(ours.cpus):.2f}x (median "
            f"{statistics.median(theirs.cpus) / statistics.median(ours.cpus):.2f}x)"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="record the large input (root)")
    build_parser.add_argument("--connections", type=int, default=10_000)
    build_parser.add_argument("--bytes", type=int, default=10_000, help="download of most connections")
    build_parser.add_argument("--bulk-every", type=int, default=100)
    build_parser.add_argument("--bulk-bytes", type=int, default=5_000_000)
    run_parser = commands.add_parser("run", help="measure quicack and tshark, alternating")
    run_parser.add_argument("--repeat", type=int, default=3, help="repetitions per input (small: at least 10)")
    run_parser.add_argument(
        "--inputs", nargs="+", default=["small", "handshakes", "prefix", "large"],
        choices=["small", "handshakes", "prefix", "large"],
    )  # fmt: skip
    run_parser.add_argument("--python-engine", action="store_true", help="also quicack's pure-Python engine")
    run_parser.add_argument("--pcapng", action="store_true", help="each input converted to pcapng (editcap)")
    run_parser.add_argument("--baseline-src", type=Path, help="also quicack from this src folder (old vs new)")
    args = parser.parse_args()
    return build(args) if args.command == "build" else run(args)


if __name__ == "__main__":
    raise SystemExit(main())
