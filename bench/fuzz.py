"""Long fuzz run: `python bench/fuzz.py [--inputs 100000] [--minutes 15] [--jobs 2] [--seed 1]`.

The same fuzz target as `quicack fuzz` and tests/test_fuzz.py (quicack.fuzz), with many more inputs per reader;
with --minutes the run stops starting inputs after that much time per reader and says how many ran. Crashing or
hanging inputs are saved under --findings. Prints one summary line per reader and a Markdown table row.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from quicack.fuzz import run_fuzz


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=100_000, help="inputs per reader")
    parser.add_argument("--minutes", type=float, default=None, help="time budget per reader")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1, help="1, not the tests' 0: other inputs than CI's")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--readers", nargs="+", default=["pcap", "qlog"], choices=["pcap", "qlog"])
    parser.add_argument("--findings", type=Path, default=Path("fuzz-findings"))
    args = parser.parse_args(argv)
    rows = []
    failed = 0
    for reader in args.readers:
        last_print = [time.monotonic()]

        def progress(report, last_print=last_print) -> None:
            if time.monotonic() - last_print[0] > 60:
                last_print[0] = time.monotonic()
                print(f"  ... {report.summary()}", file=sys.stderr, flush=True)

        budget = None if args.minutes is None else args.minutes * 60
        report = run_fuzz(reader, args.inputs, args.seed, args.jobs, args.timeout, findings_dir=args.findings,
                          progress=progress, stop_after_seconds=budget)
        print(report.summary(), flush=True)
        for finding in report.findings:
            print(f"  input {finding.number} ({'+'.join(finding.mutations)}): {finding.kind}: {finding.what} "
                  f"-> {finding.saved_as}")
        rows.append(f"| {reader} | {report.inputs} | {report.issue_rows} | {report.crashes} | {report.hangs} | "
                    f"{report.peak_rss_mib:.0f} MiB | {report.seconds / 60:.1f} min | "
                    f"{report.inputs / report.seconds:.0f}/s |")
        failed += report.crashes + report.hangs
    print("| reader | inputs | issue rows | crashes | hangs | peak RSS | time | rate |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
