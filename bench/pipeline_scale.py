"""Peak RSS and wall time of every pipeline rule on a raw folder and on one N times as large.

    PYTHONPATH=src python bench/pipeline_scale.py RAW_1X RAW_NX [--label-n 10x] [--cores 2] [--out DIR] [--rounds 1]
        [--only 1x|nx] [--summary]

Runs the whole default pipeline (`snakemake all`) cold on each raw folder into DIR/<round>/ (a temporary folder,
never results/), alternating 1x, Nx per round, and tabulates per rule, from Snakemake's `benchmark:` files
(results/<dataset>/benchmarks/<rule>/<wildcards>.tsv): the jobs, the largest peak RSS of one job (max_rss: the
job's whole process tree, sampled every 0.5 s for its first 15 s and every 30 s after that), the longest job and
the sum of the jobs' wall times and CPU times (cpu_time); then the whole run's wall time, its CPU time (Snakemake and
every job: the children's rusage) and the 1-minute load average while it ran.
RAW_NX is made by bench/scale_dataset.py. The render rules (one per notebook) are shown per notebook.

A run of hours can be read while it runs: Snakemake writes each job's benchmark file when the job ends, and each
finished pipeline run's wall, CPU and load go to DIR/<round>/timings.json at once. `--summary` (with --out DIR)
prints the table of what DIR holds so far and starts nothing; `--only 1x` / `--only nx` runs one half (the 1x half
can run while the Nx data is still being made; a later `--only nx` into the same DIR completes the table).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# This checkout's quicack, whatever else the environment has installed (the rules call the `quicack` command).
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))}


def run_pipeline(raw: Path, dataset: str, results: Path, cores: int) -> tuple[float, float, float]:
    """(wall seconds, mean 1-minute load average, CPU seconds of Snakemake and every job) of one cold run of the
    default pipeline."""
    loads: list[float] = []
    done = threading.Event()

    def sample_load() -> None:
        while not done.wait(5):
            loads.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample_load, daemon=True)
    sampler.start()
    log = results / f"{dataset}.snakemake.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [
        "snakemake", "all", "--cores", str(cores), "--quiet",
        "--config", f"dataset={dataset}", f"raw_dir={raw}", f"results_dir={results}",
    ]  # fmt: skip
    started, children = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with log.open("w", encoding="utf-8") as out:
        status = subprocess.run(command, cwd=REPO, env=ENV, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - children.ru_utime + after.ru_stime - children.ru_stime
    done.set()
    sampler.join()
    if status:
        sys.exit(f"snakemake failed on {raw}: see {log}")
    return wall, sum(loads) / len(loads) if loads else os.getloadavg()[0], cpu


def read_benchmarks(folder: Path) -> dict[str, list[tuple[float, float, float]]]:
    """rule (render: render/<notebook>) -> [(wall s, max_rss MiB, cpu_time s)] per job."""
    jobs: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for path in sorted(folder.rglob("*.tsv")):
        relative = path.relative_to(folder)
        rule = relative.with_suffix("").as_posix() if relative.parts[0] == "render" else relative.parts[0]
        rule = rule.removesuffix(".tsv")
        with path.open(encoding="utf-8") as stream:
            for row in csv.DictReader(stream, delimiter="\t"):
                rss, cpu = (
                    float(row[k]) if row.get(k) not in (None, "", "NA", "-") else float("nan")
                    for k in ("max_rss", "cpu_time")
                )
                jobs[rule].append((float(row["s"]), rss, cpu))
    return jobs


def summarise(jobs: list[tuple[float, float, float]]) -> tuple[int, float, float, float, float]:
    """(jobs, largest peak RSS, longest wall, sum of walls, sum of CPU); zeros for a rule with no finished job."""
    if not jobs:
        return 0, 0.0, 0.0, 0.0, 0.0
    return (len(jobs), max(r for _, r, _ in jobs), max(s for s, _, _ in jobs), sum(s for s, _, _ in jobs),
            sum(c for _, _, c in jobs))  # fmt: skip


def table(one: dict, many: dict, label: str) -> list[str]:
    lines = [
        f"| rule | jobs 1x / {label} | peak RSS of a job, MiB: 1x | {label} | ratio "
        f"| longest job, s: 1x | {label} | all jobs, s: 1x | {label} | CPU of all jobs, s: 1x | {label} | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for rule in sorted(set(one) | set(many), key=lambda r: (r.startswith("render/"), r)):
        a, b = summarise(one.get(rule, [])), summarise(many.get(rule, []))
        ratio = b[1] / a[1] if a[1] else float("nan")
        cpu_ratio = b[4] / a[4] if a[4] else float("nan")
        lines.append(
            f"| {rule} | {a[0]} / {b[0]} | {a[1]:,.0f} | {b[1]:,.0f} | {ratio:.2f} "
            f"| {a[2]:,.1f} | {b[2]:,.1f} | {a[3]:,.1f} | {b[3]:,.1f} | {a[4]:,.1f} | {b[4]:,.1f} | {cpu_ratio:.1f} |"
        )
    return lines


def load_timings(results: Path) -> dict[str, list[float]]:
    """label -> [wall s, mean load, CPU s] of the pipeline runs finished so far in one round's folder."""
    path = results / "timings.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def save_timing(results: Path, label: str, timing: tuple[float, float, float]) -> None:
    """Adds one finished pipeline run to the round's timings.json (rewritten whole, so a reader never sees half)."""
    timings = {**load_timings(results), label: list(timing)}
    partial = results / "timings.json.partial"
    partial.write_text(json.dumps(timings, indent=1), encoding="utf-8")
    partial.replace(results / "timings.json")


def report(results: Path, label_n: str) -> None:
    """Prints the per-rule table and the whole runs' figures of what one round's folder holds so far."""
    one = read_benchmarks(results / "sample" / "benchmarks")
    many = read_benchmarks(results / "scaled" / "benchmarks")
    print("\n".join(table(one, many, label_n)))
    for label, (wall, load, cpu) in load_timings(results).items():
        jobs_cpu = sum(c for jobs in (one if label == "1x" else many).values() for _, _, c in jobs)
        print(
            f"whole pipeline {label}: {wall:.0f} s wall, {cpu:.0f} CPU-s (the jobs' cpu_time {jobs_cpu:.0f} s,"
            f" Snakemake's own share the rest), mean 1-min load average {load:.2f}"
        )
    timings = load_timings(results)
    if "1x" in timings and label_n in timings:
        print(f"whole pipeline CPU {label_n} / 1x: {timings[label_n][2] / timings['1x'][2]:.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw_1x", type=Path)
    parser.add_argument("raw_nx", type=Path)
    parser.add_argument("--label-n", default="10x")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, help="results folder (default: a temporary one, removed afterwards)")
    parser.add_argument("--only", choices=("1x", "nx"), help="run one half only (into --out, beside the other)")
    parser.add_argument("--summary", action="store_true", help="print what --out holds so far; run nothing")
    args = parser.parse_args()
    if args.summary and args.out is None:
        parser.error("--summary needs --out")
    out = args.out or Path(tempfile.mkdtemp(prefix="quicack-scale-"))
    halves = (("1x", args.raw_1x, "sample"), (args.label_n, args.raw_nx, "scaled"))
    for round_number in range(1, args.rounds + 1):
        results = out / str(round_number)
        if args.summary:
            if results.exists():
                print(f"round {round_number}:")
                report(results, args.label_n)
            continue
        for label, raw, dataset in halves:
            if args.only and args.only != ("1x" if label == "1x" else "nx"):
                continue
            timing = run_pipeline(raw.resolve(), dataset, results, args.cores)
            save_timing(results, label, timing)
            print(
                f"round {round_number}, {label}: {timing[0]:.0f} s wall, {timing[2]:.0f} CPU-s, load {timing[1]:.2f}",
                flush=True,
            )
        report(results, args.label_n)
    if args.out is None:
        subprocess.run(["rm", "-rf", str(out)], check=True)


if __name__ == "__main__":
    main()
