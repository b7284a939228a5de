"""The server stack delay each client saw in runs recorded under imc24's (``server_stack_delay: paper``), beside the
paper's value for it (data/reference/imc24_stack_delay.csv).

Per client, from the pipeline's own tables of the raw folder: the hold the server was set to (run.json
``server_stack``), the ACK → ServerHello gap at the client-side capture in IACK
(``handshake_runs.ack_to_server_hello_ms``, median and range over the runs) and the clients' first RTT samples WFC −
IACK (their qlog: what imc24 §4.1's clients reported).

    sudo python -m quicack.testbed.run --config config/testbed_paper_conditions_check.yaml
    python bench/testbed_paper_stack_delay.py /tmp/quicack-paper-stack-check/raw

Results: bench/README.md ("imc24's stack delay per client under the paper's conditions").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl

from quicack.metrics import summary
from quicack.models import recovery
from quicack.stages.derive_stage import DERIVE_INPUTS, derive_tables
from quicack.stages.ingest import ingest_group
from quicack.testbed.conditions import stack_delay_table


def handshakes(raw: Path) -> pl.DataFrame:
    frames = []
    for folder in sorted(p.name for p in raw.iterdir() if p.is_dir()):
        tables = ingest_group(raw, folder, raw.parent.name)
        frames.append(
            derive_tables({name: tables[name] for name in DERIVE_INPUTS}, recovery.RecoveryParams())["handshake_runs"]
        )
    return pl.concat(frames, how="diagonal_relaxed")


def holds(raw: Path) -> pl.DataFrame:
    rows = {}
    for path in raw.glob("*/*/*/run.json"):
        run = json.loads(path.read_text(encoding="utf-8"))
        rows[run["client_impl"]] = (run.get("server_stack") or {}).get("hold_ms")
    return pl.DataFrame(
        {"client_impl": list(rows), "hold_ms": list(rows.values())},
        schema={"client_impl": pl.Utf8, "hold_ms": pl.Float64},
    )


def report(raw: Path) -> pl.DataFrame:
    runs = handshakes(raw)
    scenario = runs["scenario"].drop_nulls()[0]
    gaps = runs.filter(pl.col("mode") == "iack").group_by("client_impl").agg(
        pl.col("ack_to_server_hello_ms").median().alias("gap_median_ms"),
        pl.col("ack_to_server_hello_ms").min().alias("gap_min_ms"),
        pl.col("ack_to_server_hello_ms").max().alias("gap_max_ms"), pl.len().alias("iack_runs"),
    )  # fmt: skip
    first_rtt = summary.stack_delay(runs, scenario).select("client_impl", "first_rtt_wfc_minus_iack_ms")
    paper = stack_delay_table().select(
        pl.col("client").alias("client_impl"), pl.col("paper_median_ms").alias("paper_ms"), "basis"
    )
    return (
        paper.join(holds(raw), on="client_impl").join(gaps, on="client_impl", how="left")
        .join(first_rtt, on="client_impl", how="left")
        .sort("client_impl")
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", type=Path, help="raw folder recorded with server_stack_delay: paper")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, float_precision=2):
        print(report(ap.parse_args().raw))


if __name__ == "__main__":
    main()
