"""`quicack fuzz`: mutated copies of real captures and qlogs through `quicack pcap` and `quicack qlog`; counts
crashes and hangs (exit status 1 when there is any)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--reader", choices=["pcap", "qlog", "both"], default="both")
    parser.add_argument("--inputs", type=int, default=2000, help="inputs per reader (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="the run is a function of the seed (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per input before it counts as a hang")
    parser.add_argument("--corpus", type=Path, default=None, help="folder of seed files (default: tests/data)")
    parser.add_argument("--findings", type=Path, default=None, help="save the inputs that crash or hang here")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from quicack.fuzz.runner import DEFAULT_CORPUS, run_fuzz

    failed = 0
    for reader in ("pcap", "qlog") if args.reader == "both" else (args.reader,):
        report = run_fuzz(reader, args.inputs, args.seed, args.jobs, args.timeout, args.corpus or DEFAULT_CORPUS,
                          args.findings)
        print(report.summary())
        for finding in report.findings:
            print(f"  input {finding.number} ({'+'.join(finding.mutations)}): {finding.kind}: {finding.what}"
                  + (f" -> {finding.saved_as}" if finding.saved_as else ""))
        failed += report.crashes + report.hangs
    return 1 if failed else 0
