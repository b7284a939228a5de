"""Exact peak RSS and wall time of rendering notebooks: each run alone under GNU time, per code version and database.

    python bench/notebook_rss.py --version before=/path/to/old/checkout --version after=. \\
        --db 1x=RESULTS_1X/quicack.duckdb --db 10x=RESULTS_10X/quicack.duckdb [--rounds 1] NOTEBOOK ...

A notebook is run as the render rule runs it (jupytext, then papermill with the database), with the checkout's
``src`` first on PYTHONPATH, under ``/usr/bin/time -f '%e %M'``: %M is the largest resident set of papermill and
every process it waited for (its Jupyter kernel), exact — unlike Snakemake's ``benchmark:`` files, which sample a
job's process tree every 30 s after its first 15 s. Versions and databases alternate within a round. Output: one
Markdown row per notebook, the peak RSS (MiB) and wall time (s) per version and database, and the ratio of the
largest database's peak to the first's per version.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def pair(text: str) -> tuple[str, Path]:
    label, _, path = text.partition("=")
    if not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, got {text!r}")
    return label, Path(path).resolve()


def render_once(checkout: Path, notebook: str, db: Path, work: Path) -> tuple[float, float]:
    """(wall s, peak RSS MiB) of one papermill run of ``notebook`` from ``checkout`` on ``db``."""
    source = checkout / "notebooks" / f"{notebook}.py"
    staged = work / f"{notebook}.in.ipynb"
    executed = work / f"{notebook}.ipynb"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(checkout / "src"), os.environ.get("PYTHONPATH")])),
    }
    subprocess.run(
        ["jupytext", "--to", "ipynb", "--output", str(staged), str(source)], check=True, capture_output=True, env=env
    )
    timing = work / "time.txt"
    command = [
        "/usr/bin/time", "-f", "%e %M", "-o", str(timing),
        "papermill", "--kernel", "python3", "--cwd", str(checkout), str(staged), str(executed),
        "-p", "db", str(db), "-p", "out_dir", str(work / "out"), "-p", "formats", "png",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, encoding="utf-8")
    if done.returncode:
        sys.exit(f"{notebook} failed with {checkout} on {db}:\n{done.stderr[-2000:]}")
    wall, kib = timing.read_text(encoding="utf-8").split()[-2:]
    return float(wall), float(kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+")
    parser.add_argument("--version", type=pair, action="append", required=True, help="LABEL=checkout")
    parser.add_argument("--db", type=pair, action="append", required=True, help="LABEL=quicack.duckdb")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    versions, databases = dict(args.version), dict(args.db)
    best: dict[tuple[str, str, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="quicack-notebook-rss-") as tmp:
        work = Path(tmp)
        for _ in range(args.rounds):
            for notebook in args.notebooks:
                for db_label, db in databases.items():
                    for version, checkout in versions.items():
                        wall, rss = render_once(checkout, notebook, db, work)
                        key = (notebook, version, db_label)
                        # the smallest over rounds: the other jobs on a shared machine only ever add to either
                        best[key] = min(best.get(key, (wall, rss)), (wall, rss), key=lambda t: t[1])
                        print(
                            f"{notebook} {version} {db_label}: {rss:,.0f} MiB, {wall:.1f} s",
                            file=sys.stderr,
                            flush=True,
                        )
    first, last = next(iter(databases)), list(databases)[-1]
    columns = [f"{version} {db_label}" for version in versions for db_label in databases]
    print("| notebook "
          "| " + " | ".join(f"{c}: MiB" for c in columns) + " | " + " | ".join(f"{v} {last}/{first}" for v in versions)
          + " | " + " | ".join(f"{c}: s" for c in columns) + " |")  # fmt: skip
    print("|---" * (1 + 2 * len(columns) + len(versions)) + "|")
    for notebook in args.notebooks:
        rss = [best[(notebook, v, d)][1] for v in versions for d in databases]
        walls = [best[(notebook, v, d)][0] for v in versions for d in databases]
        ratios = [best[(notebook, v, last)][1] / best[(notebook, v, first)][1] for v in versions]
        print(f"| {notebook} | " + " | ".join(f"{r:,.0f}" for r in rss) + " | " + " | ".join(f"{r:.2f}" for r in ratios)
              + " | " + " | ".join(f"{w:.1f}" for w in walls) + " |")  # fmt: skip


if __name__ == "__main__":
    main()
