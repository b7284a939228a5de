"""The default pipeline through SLURM (profiles/slurm) on a one-node cluster started here, on any raw folder.

    PYTHONPATH=src python bench/slurm_pipeline.py RAW --out RESULTS [--dataset scaled] [--scan-dir DIR] [--until RULE]

The cluster is tests/test_slurm.py's (munged, slurmctld and slurmd as children of this process, 2 CPUs, state in
a temporary folder, stopped at the end). Prints the run's wall time, the SLURM jobs (one per run group for ingest and
derive together: the profile's `groups`, and one per other job), their states, how many ran at once at most, and per
rule the jobs' peak RSS and CPU from the benchmark files (as bench/pipeline_scale.py tabulates them).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from pipeline_scale import ENV, read_benchmarks, summarise  # noqa: E402

from tests.test_slurm import single_node_cluster  # noqa: E402


def slurm_job_times(env: dict[str, str]) -> list[tuple[str, datetime, datetime]]:
    """(state, start, end) of every job the cluster knows (finished ones are kept: MinJobAge)."""
    listed = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%T|%S|%e"], env=env,
                            capture_output=True, text=True, check=True, encoding="utf-8")  # fmt: skip
    jobs = []
    for line in listed.stdout.split():
        state, start, end = line.split("|")
        try:
            jobs.append((state, datetime.fromisoformat(start), datetime.fromisoformat(end)))
        except ValueError:  # not started (N/A)
            jobs.append((state, datetime.max, datetime.max))
    return jobs


def most_at_once(jobs: list[tuple[str, datetime, datetime]]) -> int:
    events = sorted([(start, 1) for _, start, _ in jobs] + [(end, -1) for _, _, end in jobs])
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="results folder")
    parser.add_argument("--dataset", default="scaled")
    parser.add_argument("--scan-dir", default="data/scan/raw", help="'' for none")
    parser.add_argument("--until", metavar="RULE", help="only the jobs up to this rule's (snakemake --until)")
    args = parser.parse_args()
    command = [
        "snakemake", "all", "--workflow-profile", "profiles/slurm", "--slurm-status-command", "squeue",
        # An idle one-node cluster starts a job within a second; the profile's 40 s suit a shared cluster.
        "--slurm-init-seconds-before-status-checks", "1", "--slurm-logdir", str(args.out / "slurm_logs"),
        "--config", f"raw_dir={args.raw.resolve()}", f"dataset={args.dataset}", f"results_dir={args.out.resolve()}",
        f"scan_dir={args.scan_dir}", *(["--until", args.until] if args.until else []),
    ]  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    with single_node_cluster() as cluster:
        log = args.out / f"{args.dataset}.snakemake.log"
        started = time.monotonic()
        with log.open("w", encoding="utf-8") as out:
            status = subprocess.run(command, cwd=REPO, env={**ENV, "SLURM_CONF": cluster["SLURM_CONF"]}, stdout=out,
                                    stderr=subprocess.STDOUT).returncode  # fmt: skip
        wall = time.monotonic() - started
        jobs = slurm_job_times(cluster)
    states = sorted({state for state, _, _ in jobs})
    print(f"through SLURM: {wall:.0f} s wall, exit {status}; {len(jobs)} SLURM jobs ({', '.join(states)}), "
          f"at most {most_at_once(jobs)} at once; log {log}")  # fmt: skip
    for rule, rows in sorted(read_benchmarks(args.out / args.dataset / "benchmarks").items()):
        count, rss, longest, _total, cpu = summarise(rows)
        print(f"{rule}: {count} jobs, peak RSS {rss:,.0f} MiB, longest {longest:,.1f} s, CPU {cpu:,.1f} s")
    sys.exit(status)


if __name__ == "__main__":
    main()
