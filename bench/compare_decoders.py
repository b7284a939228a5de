"""Compare the capture decoder's output between versions and engines: every table of every capture, row by row.

    python bench/compare_decoders.py --old-src OLD_CHECKOUT/src [--batch-rows 32768] [--capture C --keylog K ...]

Decodes every capture under tests/data and data/sample/raw (with their keylogs, as tests/test_pcap_support.py
finds them, the snap-length-cut and empty ones included) three times, each in its own process: with the old
version's package (`--old-src`, e.g. a checkout of main; its default engine), and with this checkout's package
forced to the pure-Python engine and to the compiled one (QUICACK_PCAP_ENGINE). The tables are written as
Parquet into a temporary folder and compared (`DataFrame.equals`: values, nulls, types, row order). Exit status 1
when anything differs. `--batch-rows` small (e.g. 50) also checks that batch boundaries change nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TABLES = ("datagrams", "packets", "frames", "tcp_segments", "ingest_issues")


def all_captures(extra: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    sys.path.insert(0, str(REPO / "tests"))
    from test_pcap_support import find_captures

    found = []
    for root in (REPO / "tests" / "data", REPO / "data" / "sample" / "raw"):
        found += [(str(c.path), [str(k) for k in c.keylogs]) for c in find_captures(True, root, include_empty=True)]
    return found + extra


def write_all(out: Path, captures: list[tuple[str, list[str]]], batch_rows: int) -> None:
    """Worker: decode each capture with the package on sys.path into out/<n>/<table>.parquet."""
    from quicack.pcap.decode import decode_capture
    from quicack.pcap.pcap_command import write_capture_parquet

    started = time.process_time()
    for number, (capture, keylogs) in enumerate(captures):
        batches = decode_capture(
            Path(capture), [Path(k) for k in keylogs] or None, run_id=f"c{number}", batch_rows=batch_rows
        )
        write_capture_parquet(batches, out / str(number))
    print(f"{out.name}: {len(captures)} captures in {time.process_time() - started:.1f} s CPU", file=sys.stderr)


def compare(old: Path, new: Path, captures: list[tuple[str, list[str]]]) -> list[str]:
    import polars as pl

    problems = []
    for number, (capture, _) in enumerate(captures):
        for table in TABLES:
            a, b = (pl.read_parquet(root / str(number) / f"{table}.parquet") for root in (old, new))
            if not a.equals(b):
                columns = [c for c in a.columns if a.height == b.height and c in b.columns and not a[c].equals(b[c])]
                problems.append(f"{capture} {table}: rows {a.height} vs {b.height}, columns differing {columns}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--old-src", type=Path, help="the old version's src folder (e.g. a checkout of main: git worktree add)"
    )
    parser.add_argument("--batch-rows", type=int, default=32_768)
    parser.add_argument("--capture", action="append", default=[], help="another capture (with --keylog after it)")
    parser.add_argument("--keylog", action="append", default=[], help="keylog of the --capture before it")
    parser.add_argument("--write", type=Path, help=argparse.SUPPRESS)  # worker mode
    parser.add_argument("--captures-json", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write_all(args.write, json.loads(args.captures_json.read_text(encoding="utf-8")), args.batch_rows)
        return 0
    if args.old_src is None:  # required, but not of the workers (which get --write)
        parser.error("the following arguments are required: --old-src")
    extra = [
        (capture, [args.keylog[index]] if index < len(args.keylog) else [])
        for index, capture in enumerate(args.capture)
    ]
    captures = all_captures(extra)
    with tempfile.TemporaryDirectory(prefix="quicack-compare-") as tmp:
        work = Path(tmp)
        listing = work / "captures.json"
        listing.write_text(json.dumps(captures), encoding="utf-8")
        ours = str(REPO / "src")
        runs = {"old": (str(args.old_src.resolve()), None), "python": (ours, "python"), "compiled": (ours, "compiled")}
        for name, (source, engine) in runs.items():
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([source, *filter(None, [os.environ.get("PYTHONPATH")])]))
            env.pop("QUICACK_PCAP_ENGINE", None)
            if engine:
                env["QUICACK_PCAP_ENGINE"] = engine
            command = [sys.executable, __file__, "--write", str(work / name), "--captures-json", str(listing)]
            subprocess.run([*command, "--batch-rows", str(args.batch_rows)], env=env, check=True, cwd=tmp)
        failed = False
        for name in ("python", "compiled"):
            problems = compare(work / "old", work / name, captures)
            print(
                f"old vs {name}: {len(captures)} captures, {len(captures) * len(TABLES)} tables, "
                f"{'all identical' if not problems else f'{len(problems)} differ'}"
            )
            for problem in problems[:20]:
                print("  ", problem)
            failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
