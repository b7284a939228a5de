"""Benchmark: `quicack pcap` against the way captures are often read in Python — a pyshark loop (pyshark drives
tshark and parses its PDML or JSON per packet) reading the same ten fields `bench/pcap_decode.py` asks tshark for,
on the same captures with the same keylog.

    python bench/pyshark_loop.py [--repeat 3] [--captures 300]

Inputs (the embedded dataset's client-side captures, data/sample/raw; nothing is committed):
    small       one capture (quinn → aioquic, 10 KB hq: 31 packets): start-up
    sample      the first N client-side captures of the embedded dataset's handshake runs (10 KB downloads by every
                client, IACK and WFC, the imc24 scenarios; whole packets, all decryptable: the ACK-ratio runs, whose
                captures are cut to headers, are left out), merged with mergecap (default 300), with all their keylogs
Each repetition runs the tools one after the other, each a separate process under /usr/bin/time -v: quicack
(`python -m quicack.pcap.pcap_command C --keylog K --out DIR`: decode and write the Parquet tables), the pyshark loop
(`python bench/pyshark_loop.py --worker C K`: every QUIC packet of every frame, its fields read), and
`tshark -T fields` with the same fields; CPU = user + system of the process and its children (pyshark's tshark
included). Printed: best / median wall and CPU, QUIC packets each tool saw, peak RSS, and the ratios pyshark /
quicack and tshark / quicack (> 1: quicack faster).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pcap_decode import SAMPLE, SMALL_RUN, TSHARK_FIELDS, Runs, packets_in, timed  # noqa: E402

# TSHARK_FIELDS as pyshark names them on the quic layer (the frame and UDP fields come from their own layers).
QUIC_FIELDS = ("long_packet_type", "packet_number", "frame_type", "ack_largest_acknowledged", "ack_ack_delay",
               "stream_stream_id", "stream_offset", "stream_length")  # fmt: skip


def _field(layer: object, name: str) -> object:
    """A field's value or None (pyshark's PDML layers return None for a missing field, its JSON layers raise)."""
    try:
        return layer.get_field(name)
    except AttributeError:
        return None


def worker(capture: Path, keylog: Path) -> int:
    """The pyshark loop: every QUIC packet (a datagram's coalesced packets are several quic layers), its fields read
    as a user's loop would; prints how many QUIC packets it saw. pyshark's default PDML: with use_json=True tshark's
    JSON gives one quic layer per datagram (the coalesced packets' duplicate keys collapse: 26 of 31 packets on the
    small input), so that loop would see less."""
    import pyshark

    packets = 0
    capture_file = pyshark.FileCapture(
        str(capture), override_prefs={"tls.keylog_file": str(keylog)}, display_filter="quic", keep_packets=False
    )
    try:
        for packet in capture_file:
            _ = (packet.sniff_timestamp, packet.udp.srcport)
            for layer in packet.get_multiple_layers("quic"):
                packets += 1
                _ = [_field(layer, name) for name in QUIC_FIELDS]
    finally:
        capture_file.close()
    print(packets)
    return 0


def tshark_packets(capture: Path, keylog: Path) -> int:
    """QUIC packets tshark dissects (one header form per packet). quicack's packets table also has a row for a
    datagram's padding after its last packet, and pyshark a quic layer for it: their counts are a little higher."""
    out = subprocess.run(["tshark", "-r", str(capture), "-o", f"tls.keylog_file:{keylog}", "-Y", "quic", "-T", "fields",
                          "-e", "quic.header_form"],
                         capture_output=True, text=True, check=True, encoding="utf-8").stdout  # fmt: skip
    return sum(len([v for v in line.split(",") if v]) for line in out.splitlines())


def pyshark_packets(capture: Path, keylog: Path) -> int:
    command = [sys.executable, __file__, "--worker", str(capture), str(keylog)]
    return int(subprocess.run(command, capture_output=True, text=True, check=True, encoding="utf-8").stdout.split()[-1])


def inputs(work: Path, captures: int) -> dict[str, tuple[Path, Path]]:
    import gzip

    small = work / "small.pcap"
    small.write_bytes(gzip.decompress((SMALL_RUN / "sim" / "trace_node_left.pcap.gz").read_bytes()))
    small_keys = work / "small.keys.log"
    small_keys.write_text(
        "".join(p.read_text(encoding="utf-8") for p in sorted(SMALL_RUN.glob("*/keys.log"))), encoding="utf-8"
    )
    every = sorted(SAMPLE.glob("*/*/*/sim/trace_node_left.pcap.gz"))
    chosen = [c for c in every if not c.parents[2].name.startswith("ack_ratio")][:captures]
    merged, merged_keys = work / "sample.pcap", work / "sample.keys.log"
    subprocess.run(["mergecap", "-a", "-F", "pcap", "-w", str(merged), *map(str, chosen)], check=True)
    merged_keys.write_text(
        "".join(p.read_text(encoding="utf-8") for c in chosen for p in sorted(c.parents[1].glob("*/keys.log"))),
        encoding="utf-8",
    )
    return {"small": (small, small_keys), "sample": (merged, merged_keys)}


def run(args: argparse.Namespace) -> int:
    load_before = open("/proc/loadavg", encoding="utf-8").read().split()[:3]
    rows = []
    with tempfile.TemporaryDirectory(prefix="quicack-bench-pyshark-") as tmp:
        work = Path(tmp)
        for name, (capture, keylog) in inputs(work, args.captures).items():
            out = work / f"out-{name}"
            fields = [arg for field_name in TSHARK_FIELDS for arg in ("-e", field_name)]
            tools = {
                "quicack": [sys.executable, "-m", "quicack.pcap.pcap_command", str(capture), "--keylog", str(keylog),
                            "--out", str(out)],
                "pyshark loop": [sys.executable, __file__, "--worker", str(capture), str(keylog)],
                "tshark -T fields": ["tshark", "-r", str(capture), "-o", f"tls.keylog_file:{keylog}", "-T", "fields",
                                     *fields],
            }  # fmt: skip
            results = {tool: Runs(tool) for tool in tools}
            for _ in range(args.repeat):
                for tool, command in tools.items():
                    timed(command, results[tool], dict(os.environ))
            ours, _connections = packets_in(out)
            seen = {"quicack": ours, "pyshark loop": pyshark_packets(capture, keylog),
                    "tshark -T fields": tshark_packets(capture, keylog)}  # fmt: skip
            rows.append((name, capture.stat().st_size / 1e6, seen, results))
    load_after = open("/proc/loadavg", encoding="utf-8").read().split()[:3]
    print(f"load average (1/5/15 min) before {'/'.join(load_before)}, after {'/'.join(load_after)}, "
          f"{os.cpu_count()} CPUs; best / median of {args.repeat}")  # fmt: skip
    print(
        f"{'input':<7} {'MB':>5}  {'tool':<17} {'QUIC packets':>12} {'wall best/med s':>16} {'CPU best/med s':>15} "
        f"{'peak RSS MB':>11}"
    )
    for name, size, seen, results in rows:
        for tool, runs in results.items():
            print(f"{name:<7} {size:>5.1f}  {tool:<17} {seen[tool]:>12} "
                  f"{min(runs.walls):>7.2f}/{statistics.median(runs.walls):<8.2f} "
                  f"{min(runs.cpus):>6.2f}/{statistics.median(runs.cpus):<8.2f} {runs.peak_rss_mb:>11.0f}")  # fmt: skip
        ours = results["quicack"]
        for tool in ("pyshark loop", "tshark -T fields"):
            theirs = results[tool]
            print(f"{name:<7} {tool} / quicack: wall {min(theirs.walls) / min(ours.walls):.2f}x (median "
                  f"{statistics.median(theirs.walls) / statistics.median(ours.walls):.2f}x), CPU "
                  f"{min(theirs.cpus) / min(ours.cpus):.2f}x "
                  f"(median {statistics.median(theirs.cpus) / statistics.median(ours.cpus):.2f}x)")  # fmt: skip
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--captures", type=int, default=300, help="client-side captures merged into the sample input")
    parser.add_argument("--worker", nargs=2, type=Path, metavar=("CAPTURE", "KEYLOG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(*args.worker)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
