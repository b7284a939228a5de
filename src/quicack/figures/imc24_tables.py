"""imc24 (ReACKed QUICer) Tables 2–4 in the paper's layout, from the measurements, with the paper's
values (data/reference/imc24_tab0N.csv) beside ours. Cells are strings as printed ("-" = no ACK, "> N" = lower bound
only); the
numbers behind them stay in their own columns."""

from __future__ import annotations

import polars as pl

from quicack.figures.common import Rendered
from quicack.markup import plural
from quicack.metrics import guidelines as guidelines_metric
from quicack.metrics import summary
from quicack.metrics.selection import (
    PAPER_IMPLEMENTATION,
    second_flight_runs,
    table3_accounted_runs,
    table3_runs,
)
from quicack.metrics.server_ack_delay import SPACES, first_server_acks_of_runs
from quicack.reference import paper_table
from quicack.storage.run_batches import RunRows

# ------------------------------------------------------------------------------------------------
# Table 2: deployment guidelines


# Table 2's columns as a paper prints them (the CSV keeps the names).
TAB02_HEADERS = {
    "certificate": "Certificate", "condition": "Condition", "paper": "Paper", "ours": "Ours", "agrees": "Agrees",
    "median_iack_advantage_ms": "Median IACK advantage (ms)", "configurations": "Configurations",
    "measured_in": "Measured in",
}  # fmt: skip


def imc24_tab02_guidelines(handshakes: pl.DataFrame, runs: pl.DataFrame, datagrams: RunRows | None = None) -> Rendered:
    """Table 2's eight cells (certificate below/above the anti-amplification limit × the four
    loss / Δt columns), each with the paper's preference, ours (computed from the measured TTFB
    margins; see ``quicack.metrics.guidelines.guidelines_beside_paper``) and whether they agree."""
    table = guidelines_metric.guidelines_beside_paper(handshakes, runs, paper_table("imc24", "tab02"), datagrams)
    missing = table.filter(pl.col("configurations") == 0).select(pl.col("certificate") + " / " + pl.col("condition"))
    stack = (
        "the runs with each client's ServerHello held to the stack delay imc24 gives it (the paper's conditions)"
        if summary.holds_paper_delay(runs)
        else "the runs on this machine's own server stack delay"
    )
    sources = guidelines_metric.compared_configurations(handshakes, runs, datagrams)["ttfb_source"].unique().sort()
    ttfb = " or ".join(sources.to_list()) or "client capture or client qlog"
    note = (
        f"From {stack}. "
        f"Cell = mode with the lower median TTFB ({ttfb}) per client x RTT configuration; margin = median "
        "over the configurations of WFC - IACK median TTFB (positive: IACK faster); tie = |margin| < "
        f"{guidelines_metric.TIE_MS:g} ms. "
        "Amplification limit = 3 x the client's first flight (UDP payload). Not measured (no such configuration in the "
        "data): "
        + ("; ".join(missing.to_series().to_list()) or "none")
        + ". Only IACK/WFC runs of configurations with both modes measured enter a cell."
    )
    entered = guidelines_metric.guideline_runs(handshakes, runs, datagrams)
    return Rendered(table, entered, note=note, headers=TAB02_HEADERS)


# ------------------------------------------------------------------------------------------------
# Table 3: first ACK Delay per server

def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _paper_table3() -> dict[str, dict[str, str]]:
    """imc24 Table 3 per server and space as printed: the repetitions' ACK Delays joined by " / "."""
    paper = paper_table("imc24", "tab03").sort("server", "pn_space", "repetition")
    cells: dict[str, dict[str, str]] = {}
    for (server, space), rows in paper.group_by("server", "pn_space", maintain_order=True):
        cells.setdefault(server, {})[space] = " / ".join(_ms(v) for v in rows["ack_delay_ms"].to_list())
    return cells


def tab03_headers(repetitions: list[int]) -> dict[str, str]:
    """Table 3's columns (a cell per packet number space and repetition) and their headers as a paper prints them
    (the CSV keeps the names)."""
    return {
        "server": "Server", "mode": "Mode",
        **{f"{space}_{rep}": f"{space.capitalize()}, rep. {rep} (ms)" for space in SPACES for rep in repetitions},
        "paper_initial": "Paper: Initial (ms)", "paper_handshake": "Paper: Handshake (ms)",
        "measured_in": "Measured in",
    }  # fmt: skip


def imc24_tab03_server_ack_delay(runs: pl.DataFrame, frames: RunRows, repetitions: int | None = None) -> Rendered:
    """imc24 Table 3: per server implementation (and mode, for an IACK/WFC server's no-loss runs) the
    ACK Delay of the server's first ACK in the Initial and the Handshake space, per repetition
    ("-" = no ACK in that space, "no run" = no ok run with that repetition), the median over the
    runs that share a repetition index (different clients/RTTs), and the paper's values beside
    ours for the servers both have. Works on any dataset in QIR layout (a QIR folder without
    repetitions is repetition 1)."""
    selected = table3_runs(runs).with_columns(pl.col("repetition").fill_null(1))
    acks = first_server_acks_of_runs(selected, frames)
    keys = ["server_impl", "mode", "repetition"]
    per_repetition = (
        selected.select("run_id", *keys)
        .join(acks, on="run_id", how="left")
        .group_by(*keys, "pn_space")
        .agg(pl.col("ack_delay_ms").median())
    )
    reps = sorted(selected["repetition"].unique().to_list()) if repetitions is None else list(range(1, repetitions + 1))
    describe = selected.group_by("server_impl", "mode").agg(
        pl.col("table3_scenario").first(),
        pl.len().alias("runs"),
        pl.col("client_impl").unique().sort().str.join(", ").alias("clients"),
        pl.col("rtt_ms").unique().sort().cast(pl.Utf8).str.replace(r"\.0$", "").str.join(", ").alias("rtts"),
    )
    present = set(selected.select("server_impl", "mode", "repetition").unique().iter_rows())
    papers = _paper_table3()
    values = {
        (r["server_impl"], r["mode"], r["repetition"], r["pn_space"]): r["ack_delay_ms"]
        for r in per_repetition.iter_rows(named=True)
    }
    rows = []
    for info in describe.sort("server_impl", "mode", nulls_last=True).iter_rows(named=True):
        server, mode = info["server_impl"], info["mode"]
        row: dict[str, object] = {"server": server, "mode": mode.upper() if mode else "-"}
        for space in SPACES:
            for rep in reps:
                if (server, mode, rep) not in present:
                    row[f"{space}_{rep}"] = "no run"
                else:
                    row[f"{space}_{rep}"] = _ms(values.get((server, mode, rep, space)))
        paper = papers.get(server, {})
        row["paper_initial"] = paper.get("initial", "not in paper")
        row["paper_handshake"] = paper.get("handshake", "not in paper")
        rtt = f"RTT {info['rtts']} ms" if info["rtts"] else "RTT not recorded"
        runs_in = plural(info["runs"], "run")
        row["measured_in"] = f"{info['table3_scenario'] or 'all'}: {runs_in}, client {info['clients']}, {rtt}"
        rows.append(row)
    note = (
        "ACK Delay [ms] of the server's first ACK frame per packet number space, read from the captures; '-' = no ACK "
        "in that space; several runs with one repetition index (clients, RTTs): their median. Paper: public QIR "
        "handshake captures, quic-go client, August 2024."
    )
    headers = tab03_headers(reps)
    table = pl.DataFrame(rows, schema=dict.fromkeys(headers, pl.String))
    return Rendered(table, table3_accounted_runs(runs), note=note, headers=headers)


# ------------------------------------------------------------------------------------------------
# Table 4: default PTO and second client flight

def _indices(calibration: str | None) -> str | None:
    return None if calibration is None else calibration.replace("_", ",")


# Table 4's columns and their headers as a paper prints them (the CSV keeps the names).
TAB04_HEADERS = {
    "client": "Client", "default_pto_ms": "Default PTO (ms)", "paper_default_pto_ms": "Paper: default PTO (ms)",
    "default_pto_from": "Default PTO from", "second_flight": "Second flight (datagrams)",
    "paper_second_flight": "Paper: second flight (datagrams)", "second_flight_at_rtt_ms": "Second flight at RTT (ms)",
    "second_flight_other_rtts": "Second flight at other RTTs",
}  # fmt: skip


def imc24_tab04_client_defaults(handshakes: pl.DataFrame) -> Rendered:
    """imc24 Table 4 per client: default PTO (the median first probe sent before any server
    datagram arrived; "> N" when every run was answered first, N the largest such wait) and the
    datagram indices of the second client flight (the calibrated drop list of the
    second-client-flight loss runs that most RTTs agree on; "IACK … / WFC …" when the modes
    differ; the other RTTs' lists where they differ), beside the paper's values."""
    # The clients of the IACK/WFC experiments, as the claims read them (Linux TCP and runs against other servers
    # have no place in this table).
    handshakes = summary.iack_wfc_runs(handshakes)
    defaults = summary.default_pto_by_client(handshakes)
    lost_flight = second_flight_runs(handshakes)
    calibrated = lost_flight.filter(pl.col("calibrated_second_client_flight").is_not_null())
    flights_by_rtt = {
        rtt: summary.second_flight_by_client(calibrated, rtt_ms=rtt)
        for rtt in sorted(calibrated["rtt_ms"].unique().to_list())
    }

    def per_mode(client: str, rtt: float) -> dict[str, str]:
        frame = flights_by_rtt[rtt].filter(pl.col("client_impl") == client)
        return {
            r["mode"]: indices
            for r in frame.iter_rows(named=True)
            if (indices := _indices(r["second_flight_datagrams"]))
        }

    def text(by_mode: dict[str, str]) -> str:
        if len(set(by_mode.values())) == 1:
            return next(iter(by_mode.values()))
        return " / ".join(f"{m.upper()} {v}" for m, v in sorted(by_mode.items()))

    def flights(client: str) -> tuple[str | None, str, str]:
        """The indices most RTTs agree on (per mode; ties: the lower RTT), the RTTs behind them and
        the other RTTs' indices where they differ."""
        seen = {rtt: per_mode(client, rtt) for rtt in flights_by_rtt}
        seen = {rtt: by_mode for rtt, by_mode in seen.items() if by_mode}
        if not seen:
            return None, "-", "-"
        texts = {rtt: text(by_mode) for rtt, by_mode in seen.items()}
        votes: dict[str, list[float]] = {}
        for rtt, value in sorted(texts.items()):
            votes.setdefault(value, []).append(rtt)
        chosen = max(votes, key=lambda v: (len(votes[v]), -min(votes[v])))
        others = "; ".join(f"{v} at {', '.join(f'{r:g}' for r in rtts)} ms" for v, rtts in votes.items() if v != chosen)
        return chosen, ", ".join(f"{r:g}" for r in votes[chosen]), others or "-"

    papers = {r["client"]: r for r in paper_table("imc24", "tab04").iter_rows(named=True)}
    rows = []
    for row in defaults.iter_rows(named=True):
        client = row["client_impl"]
        if row["default_pto_ms"] is not None:
            ours_pto = f"{row['default_pto_ms']:.0f}"
            how = f"probe before any server datagram in {plural(row['runs_with_probe'], 'run')} (median)"
        elif row["default_pto_lower_bound_ms"] is not None:
            ours_pto = f"> {row['default_pto_lower_bound_ms']:.0f}"
            how = "lower bound only: in every run the server answered before the client probed"
        else:
            ours_pto, how = "not measured", "no ok run"
        paper = papers.get(PAPER_IMPLEMENTATION.get(client, client))
        second, second_rtts, others = flights(client)
        rows.append(
            {
                "client": client,
                "default_pto_ms": ours_pto,
                "paper_default_pto_ms": f"{paper['default_pto_ms']:.0f}" if paper else "not in paper",
                "default_pto_from": how,
                "second_flight": second or "not measured",
                "paper_second_flight": paper["second_flight"] if paper else "not in paper",
                "second_flight_at_rtt_ms": second_rtts,
                "second_flight_other_rtts": others,
            }
        )
    note = (
        "Default PTO: first client datagram after its first flight, sent before any server datagram arrived (median "
        "over such runs); '> N': no run had such a probe, N = the longest wait seen before the server answered (a "
        "lower bound). Second flight: c2s datagram indices the second-client-flight loss runs dropped (the testbed "
        "maps the flight once per client, as imc24 does; other datasets may differ per mode or RTT, shown beside)."
    )
    # (its columns also without a row: a dataset without IACK/WFC runs)
    table = pl.DataFrame(rows, schema=dict.fromkeys(TAB04_HEADERS, pl.String))
    return Rendered(table, handshakes, note=note, headers=TAB04_HEADERS)
