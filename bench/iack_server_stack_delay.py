"""The IACK/WFC servers' stack delay, per certificate size, beside imc24's 2.9–7.8 ms (§4.1).

imc24 §4.1: "the delay difference between IACK and WFC reported by the different QUIC clients is on median 2.9 ms
(neqo) to 7.8 ms (mvfst)". This records, through the real testbed (needs root), N no-loss handshakes per server,
certificate and mode of the quic-go client (X25519 alone, a one-datagram ClientHello like the paper's clients) at
9 ms RTT, a fresh server process per run (as the dataset and the QIR: the measured connection is the server's
first), and reports from the pipeline's own tables (``handshake_runs``, ``frames``):

* at the server-side capture (sim_right): the instant ACK's and the ServerHello's delay after the client's first
  Initial arrived (IACK) — the server's own processing;
* at the client-side capture (sim_left): the ACK → ServerHello gap (IACK; ``handshake_runs.ack_to_server_hello_ms``,
  imc24's "stack delay" as the wire shows it);
* the client's first RTT sample, WFC − IACK (the client's qlog; what imc24's clients reported).

Servers: imc24's (quic-go v0.65.0 + quicack's iack.patch) and, as the reference in the same run, the aioquic
IACK/WFC server (quicack.testbed.iack_wfc_server) that served the embedded data before; the quic-go server also with
its ServerHello held to the paper's server stack delay (the *_paper_stack scenarios, 2.9 ms). Medians with the
quartiles over the N runs; the ratio quic-go ÷ aioquic per certificate.

    sudo python bench/iack_server_stack_delay.py [--runs 10] [--out /tmp/stack-delay] [--certs small large xlarge]

Results: bench/README.md ("imc24's server: stack delay").
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import polars as pl

from quicack import pipeline, store
from quicack.layout import group_key
from quicack.layout.naming import PAPER_STACK_SUFFIX
from quicack.layout.vantage import SIM_RIGHT
from quicack.models import recovery
from quicack.testbed.run import run_group
from quicack.testbed.scenarios import expand

PAPER_MS = (2.9, 7.8)
RTT_MS = 9.0


def _groups(server: str, cert: str, runs: int, scenario: str) -> list:
    # <scenario>_paper_stack: the scenario with the ServerHello held 2.9 ms for every client (server_stack_delay).
    base, held = scenario.removesuffix(PAPER_STACK_SUFFIX), scenario.endswith(PAPER_STACK_SUFFIX)
    return expand({
        "dataset": "bench", "server": server, "clients": ["quic-go"], "modes": ["iack", "wfc"], "scenarios": [base],
        "rtts_ms": [RTT_MS], "repetitions": runs, "cert_size": cert, "client_key_share": "x25519", "timeout_s": 15,
        "server_stack_delay": PAPER_MS[0] if held else "machine",
    })  # fmt: skip


def _server_side(frames: pl.DataFrame) -> pl.DataFrame:
    """Per IACK run at the server-side capture: the instant ACK's and the ServerHello's time after the client's
    first Initial (time 0 at that vantage)."""
    s2c = frames.filter(
        (pl.col("source") == "pcap") & (pl.col("vantage") == SIM_RIGHT) & (pl.col("direction") == "s2c")
    )
    return s2c.group_by("run_id").agg(
        pl.col("time_ms")
        .filter(pl.col("frame_type").is_in(["ack", "ack_ecn"]) & (pl.col("pn_space") == "initial"))
        .min()
        .alias("ack_sent_ms"),
        pl.col("time_ms").filter(pl.col("tls_messages").list.contains("server_hello")).min().alias("hello_sent_ms"),
    )


def _median_iqr(values: pl.Series) -> str:
    v = values.drop_nulls()
    if v.is_empty():
        return "–"
    return f"{v.median():.2f} ({v.quantile(0.25, 'linear'):.2f}–{v.quantile(0.75, 'linear'):.2f})"


def measure(out: Path, runs: int, certs: list[str]) -> pl.DataFrame:
    raw, parquet = out / "raw", out / "parquet"
    cases = [("aioquic", cert, "noloss") for cert in certs] + [("quic-go", cert, "noloss") for cert in certs]
    cases.append(("quic-go", "small", "noloss_paper_stack"))
    rows = []
    for server, cert, scenario in cases:
        groups = _groups(server, cert, runs, scenario)
        t0 = time.time()
        for group in groups:
            run_group(group, raw, log=lambda _m: None)
        print(
            f"{server} {cert} {scenario}: {sum(g.repetitions for g in groups)} runs in {time.time() - t0:.0f} s",
            flush=True,
        )
        folder = f"{server}_quic-go"
        shutil.rmtree(parquet, ignore_errors=True)
        pipeline.ingest_group_stage(raw, folder, "bench", parquet)
        pipeline.derive_group_stage(parquet, folder, recovery.RecoveryParams())
        part = [group_key(folder)]
        # The folder holds this case's runs alone (the previous case's are removed below).
        wanted = store.read_table(parquet, "runs", part)
        handshakes = store.read_table(parquet, "handshake_runs", part).join(
            wanted.select("run_id", "cert_bytes"), on="run_id"
        )
        frames = store.read_table(parquet, "frames", part).join(wanted.select("run_id"), on="run_id")
        ok = handshakes.filter(pl.col("status") == "ok")
        iack = ok.filter(pl.col("mode") == "iack").join(_server_side(frames), on="run_id", how="left")
        wfc = ok.filter(pl.col("mode") == "wfc")
        first_rtt = {
            mode: part_["first_rtt_ms"].drop_nulls().median() for mode, part_ in (("iack", iack), ("wfc", wfc))
        }
        rows.append({
            "server": server, "certificate": cert, "cert_bytes": int(wanted["cert_bytes"][0]), "scenario": scenario,
            "iack_runs": iack.height, "wfc_runs": wfc.height,
            "ack_sent_ms": iack["ack_sent_ms"].median(), "hello_sent_ms": iack["hello_sent_ms"].median(),
            "server_ack": _median_iqr(iack["ack_sent_ms"]), "server_hello": _median_iqr(iack["hello_sent_ms"]),
            "client_gap_ms": iack["ack_to_server_hello_ms"].median(),
            "client_gap": _median_iqr(iack["ack_to_server_hello_ms"]),
            "first_rtt_wfc_minus_iack_ms": None if None in first_rtt.values() else first_rtt["wfc"] - first_rtt["iack"],
        })  # fmt: skip
        shutil.rmtree(raw / folder, ignore_errors=True)  # the next case's runs get the folder to themselves
    return pl.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10, help="handshakes per server, certificate and mode")
    ap.add_argument("--certs", nargs="+", default=["small", "large", "xlarge"])
    ap.add_argument("--out", type=Path, default=Path("/tmp/quicack-stack-delay"))
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    table = measure(a.out, a.runs, a.certs)
    reference = table.filter(pl.col("server") == "aioquic").select(
        "certificate", pl.col("client_gap_ms").alias("aioquic_gap_ms")
    )
    table = table.join(reference, on="certificate", how="left").with_columns(
        (pl.col("client_gap_ms") / pl.col("aioquic_gap_ms")).alias("gap_ratio_to_aioquic")
    )
    print(
        f"\nIACK at {RTT_MS:g} ms RTT, quic-go client (X25519), median (quartiles) in ms; paper: "
        f"{PAPER_MS[0]}–{PAPER_MS[1]} ms"
    )
    print(
        "| server | certificate | runs IACK/WFC | ACK sent (server side) | ServerHello sent (server side) | ACK→SH gap "
        "(client side) | ÷ aioquic | first RTT sample WFC − IACK (client qlog) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in table.iter_rows(named=True):
        name = r["server"] + (" (ServerHello held 2.9 ms)" if r["scenario"].endswith("_paper_stack") else "")
        ratio = (
            "–" if r["gap_ratio_to_aioquic"] is None or r["server"] == "aioquic" else f"{r['gap_ratio_to_aioquic']:.2f}"
        )
        diff = "–" if r["first_rtt_wfc_minus_iack_ms"] is None else f"{r['first_rtt_wfc_minus_iack_ms']:.2f}"
        print(f"| {name} | {r['certificate']} ({r['cert_bytes']:,} B) | {r['iack_runs']}/{r['wfc_runs']} | "
              f"{r['server_ack']} | "
              f"{r['server_hello']} | {r['client_gap']} | {ratio} | {diff} |")  # fmt: skip
    (a.out / "stack_delay.json").write_text(json.dumps(table.to_dicts(), indent=1), encoding="utf-8")
    print(f"\n{a.out / 'stack_delay.json'}")


if __name__ == "__main__":
    main()
