"""imc24 first-PTO improvement across RTTs (Fig. 16), RTT samples exposed vs possible (Fig. 11) and the logged
estimators' agreement with RFC 9002 beside App. E's findings, with the numbers behind them as polars frames.

Only IACK/WFC runs count (any server with that knob); RTTs and clients come from the data.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.artist import Artist

from quicack.figures.common import Rendered, palette, setup_style
from quicack.markup import plural
from quicack.metrics import summary
from quicack.metrics.selection import (
    FIRST_SAMPLE_UNAFFECTED,
    MissingData,
    as_recorded,
    pto_runs,
    require_runs,
    rtt_sample_runs,
)
from quicack.reference import paper_claim_range, paper_table
from quicack.rendered import placeholder_when_missing

PTO_SOURCES = {"logged": "first_pto_logged_ms", "recomputed": "first_pto_ms"}
# The paper's median improvement range over clients and RTTs (§4.1), drawn as a band behind ours.
PTO_IMPROVEMENT_CLAIM = "imc24-4.1-pto-improvement"


def pto_improvement_table(handshakes: pl.DataFrame, scenarios: Sequence[str] = FIRST_SAMPLE_UNAFFECTED) -> pl.DataFrame:
    """Per client, RTT and PTO source ('logged': the first PTO from the client's own logged
    smoothed RTT/rttvar, what the paper used; 'recomputed': RFC 9002 from the first RTT sample
    in the client qlog): median first PTO in IACK and WFC over the pooled ``scenarios`` and their
    difference (WFC − IACK; positive = IACK's first PTO is shorter). Each scenario as the dataset holds it
    (``selection.as_recorded``: under the paper's conditions where it has them)."""
    scenarios = tuple(as_recorded(handshakes, scenario) for scenario in scenarios)
    runs = pto_runs(handshakes, scenarios)
    frames = [
        summary.pto_improvement(runs, column, scenarios).with_columns(pl.lit(source).alias("pto_source"))
        for source, column in PTO_SOURCES.items()
    ]
    return (
        pl.concat(frames)
        .with_columns(pl.lit(",".join(scenarios)).alias("scenarios"))
        .sort("pto_source", "client_impl", "rtt_ms")
    )


def first_sample_shift(
    handshakes: pl.DataFrame, scenario: str = "drop_client_flight", reference: str = "noloss"
) -> pl.DataFrame:
    """Per client, mode and RTT present in both: median first RTT sample (client qlog) in
    ``scenario`` minus that in ``reference``; near zero when the loss does not touch the first
    sample (what pooling them in Fig. 16 relies on)."""
    runs = summary.iack_wfc_runs(handshakes)
    scenario, reference = as_recorded(handshakes, scenario), as_recorded(handshakes, reference)
    by = ["client_impl", "mode", "rtt_ms"]
    medians = {
        name: summary.summarize(runs.filter(pl.col("scenario") == name), "first_rtt_ms", by).select(
            *by, pl.col("median").alias(name)
        )
        for name in (scenario, reference)
    }
    return (
        medians[scenario]
        .join(medians[reference], on=by, how="inner")
        .with_columns((pl.col(scenario) - pl.col(reference)).alias("first_rtt_shift_ms"))
        .sort(by)
    )


@placeholder_when_missing
def imc24_fig16_pto_improvement(
    handshakes: pl.DataFrame, scenarios: Sequence[str] = FIRST_SAMPLE_UNAFFECTED
) -> Rendered:
    """Fig. 16: median first-PTO improvement (WFC − IACK) per client over the RTTs in the data, with
    its 95 % bootstrap interval over the repetitions; left the PTO the clients logged, right the one
    recomputed from their first RTT sample."""
    scenarios = tuple(as_recorded(handshakes, scenario) for scenario in scenarios)
    runs = require_runs(
        pto_runs(handshakes, scenarios), "of scenarios " + ", ".join(f"'{s}'" for s in scenarios), PTO_SOURCES["logged"]
    )
    setup_style()
    table = pto_improvement_table(handshakes, scenarios)
    if table.filter(pl.col("pto_improvement_ms").is_not_null()).is_empty():
        # WFC − IACK needs both: panels of clients with runs in one mode only would be empty.
        raise MissingData(f"no client with ok runs in both modes (IACK and WFC) at one RTT "
                          f"({plural(runs.height, 'run')} of it in the dataset)")
    paper_low, paper_high = paper_claim_range("imc24", PTO_IMPROVEMENT_CLAIM)
    clients = sorted(table["client_impl"].unique().to_list())
    markers = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]
    colors = palette("tab10")
    fig, axes = plt.subplots(1, 2, figsize=(6.8, 2.8), sharey=True)
    style = {client: (markers[i % len(markers)], colors[i % len(colors)]) for i, client in enumerate(clients)}
    for ax, source in zip(axes, PTO_SOURCES, strict=True):
        part = table.filter(pl.col("pto_source") == source)
        ax.axhspan(paper_low, paper_high, color="gray", alpha=0.12, linewidth=0)
        ax.axhline(0.0, color="black", linewidth=0.8)
        without = []
        for client in clients:
            rows = part.filter((pl.col("client_impl") == client) & pl.col("pto_improvement_ms").is_not_null()).sort(
                "rtt_ms"
            )
            if rows.is_empty():
                without.append(client)
                continue
            marker, color = style[client]
            median = rows["pto_improvement_ms"].to_numpy()
            # The run-to-run spread: each median's 95 % bootstrap interval over the repetitions.
            spread = np.vstack(
                [
                    median - rows["pto_improvement_low_ms"].to_numpy(),
                    rows["pto_improvement_high_ms"].to_numpy() - median,
                ]
            )
            # Clients side by side around each RTT (a small factor: the axis is logarithmic), so the intervals do not
            # hide each other.
            dodge = 1.0 + 0.08 * (clients.index(client) - (len(clients) - 1) / 2)
            ax.errorbar(
                rows["rtt_ms"].to_numpy() * dodge,
                median,
                yerr=spread,
                marker=marker,
                markersize=4,
                linewidth=1,
                color=color,
                capsize=2,
                elinewidth=0.8,
            )
        if without:
            ax.text(
                0.03,
                0.97,
                "no value (needs IACK and WFC runs): " + ", ".join(without),
                transform=ax.transAxes,
                ha="left",
                va="top",
                fontsize=6.5,
                color="dimgray",
            )
        ax.set_xscale("log")
        rtts = sorted(part["rtt_ms"].unique().to_list())
        ax.set_xticks(rtts, [f"{r:g}" for r in rtts])
        ax.minorticks_off()
        ax.set_xlabel("RTT [ms]")
        ax.set_title(f"first PTO {source} ({PTO_SOURCES[source]})", fontsize=8)
    handles: list[Artist] = [
        plt.Line2D([], [], marker=style[c][0], color=style[c][1], markersize=4, linewidth=1, label=c) for c in clients
    ]
    handles.append(
        plt.Line2D([], [], color="black", linewidth=0.8, marker="|", markersize=6, label="95 % bootstrap interval")
    )
    handles.append(
        plt.Rectangle((0, 0), 1, 1, color="gray", alpha=0.12, label=f"paper: {paper_low:g}–{paper_high:g} ms")
    )
    axes[0].set_ylabel("median first PTO, WFC − IACK [ms]")
    axes[1].legend(handles=handles, fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    return Rendered(fig, runs, PTO_SOURCES["logged"])


def rtt_sample_table(
    handshakes: pl.DataFrame, rtt_ms: float = 100.0, scenario: str = "transfer", mode: str = "wfc"
) -> pl.DataFrame:
    """Fig. 11's numbers per client: RTT samples RFC 9002 allows (newly acknowledging ACKs of
    ack-eliciting packets, recomputed from the client qlog) and samples the implementation
    exposed (distinct logged smoothed RTT/rttvar), medians over the ok runs, and their share."""
    return summary.rtt_sample_exposure(rtt_sample_runs(handshakes, rtt_ms, scenario, mode), scenario)


def runs_per_client_note(handshakes: pl.DataFrame, rtt_ms: float = 100.0) -> str:
    """'ok runs per client: aioquic 1, …' for Fig. 11's footnote (the paper has repetitions)."""
    table = rtt_sample_table(handshakes, rtt_ms)
    return (
        "ok runs per client (n): "
        + ", ".join(f"{c} {n}" for c, n in table.select("client_impl", "runs").iter_rows())
        + "."
    )


@placeholder_when_missing
def imc24_fig11_rtt_samples(handshakes: pl.DataFrame, rtt_ms: float = 100.0) -> Rendered:
    """Fig. 11: per client, RTT samples possible (newly acknowledging ACKs) beside the ones the
    implementation exposed in its qlog, 10 MB transfer, WFC."""
    runs = require_runs(
        rtt_sample_runs(handshakes, rtt_ms),
        f"of the 10 MB transfers (scenario 'transfer', WFC) at RTT {rtt_ms:g} ms",
        "rtt_samples_logged",
    )
    setup_style()
    table = rtt_sample_table(handshakes, rtt_ms)
    clients = table["client_impl"].to_list()
    x = np.arange(len(clients))
    width = 0.38
    fig, ax = plt.subplots(figsize=(4.6, 2.8))
    series = (
        ("rtt_samples_rfc9002", "newly acknowledging ACKs (RFC 9002)", "#7f7f7f", -width / 2),
        ("rtt_samples_logged", "exposed in qlog (smoothed RTT/rttvar updates)", "#2ca02c", width / 2),
    )
    for column, label, color, shift in series:
        values = table[column].to_list()
        heights = [v if v is not None else 0.0 for v in values]
        bars = ax.bar(x + shift, heights, width, color=color, label=label)
        for bar, value in zip(bars, values, strict=True):
            text = "n/a" if value is None else f"{value:g}"
            y = bar.get_height() if value is not None else 1.0
            ax.annotate(
                text,
                (bar.get_x() + bar.get_width() / 2, y),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=6.5,
            )
    ax.set_yscale("log")
    ax.set_ylim(
        bottom=1.0,
        top=max(
            [v for v in table["rtt_samples_rfc9002"].to_list() + table["rtt_samples_logged"].to_list() if v] or [10]
        )
        * 40,
    )
    ax.set_xticks(x, clients, rotation=30, ha="right")
    ax.grid(axis="x", visible=False)
    ax.set_ylabel("RTT samples per connection")
    ax.set_title(f"10 MB transfer, RTT {rtt_ms:g} ms, WFC", fontsize=8)
    ax.legend(fontsize=6.5, loc="upper left")
    fig.tight_layout()
    return Rendered(fig, runs, "rtt_samples_logged", runs_per_client_note(handshakes, rtt_ms))


def appendix_e_findings() -> pl.DataFrame:
    """imc24 App. E's (and §4.1's) findings on each implementation's qlog and estimator, one line per implementation
    (data/reference/imc24_appendix_e.csv, each finding with its quote)."""
    return (
        paper_table("imc24", "appendix_e")
        .group_by("implementation", maintain_order=True)
        .agg(pl.col("finding").str.join("; ").alias("imc24_appendix_e"))
    )


# The agreement table's columns and their headers as a paper prints them (the CSV keeps the names).
AGREEMENT_HEADERS = {
    "implementation": "Implementation", "vantage": "Vantage", "endpoints": "Endpoints",
    "samples_compared": "RTT samples compared",
    **{f"{quantity}_abs_dev_{stat}_ms": f"{label}, {stat} abs. deviation (ms)"
       for quantity, label in (("smoothed_rtt", "Smoothed RTT"), ("rttvar", "RTT variation"), ("pto", "PTO"))
       for stat in ("median", "max")},
    "logging_resolution_ms": "Logging resolution (ms)", "within_resolution": "Within resolution",
    "explanation": "Explanation", "imc24_appendix_e": "imc24 App. E",
}  # fmt: skip


@placeholder_when_missing
def imc24_rfc9002_agreement_table(agreement: pl.DataFrame) -> Rendered:
    """How far each implementation's logged estimator state (qlog recovery:metrics_updated) lies from RFC 9002
    recomputed from the same qlog's packets (the database's rfc9002_agreement), per implementation and vantage,
    with the cause of every deviation beyond the logging resolution, beside imc24 App. E's own findings on the
    implementation (beyond the paper: App. E reports what qlogs expose; this measures it)."""
    if agreement.is_empty():
        raise MissingData("no qlog with RTT samples in this dataset (rfc9002_agreement is empty)")
    ms = [
        f"{quantity}_abs_dev_{stat}_ms" for quantity in ("smoothed_rtt", "rttvar", "pto") for stat in ("median", "max")
    ]
    table = (
        agreement.join(appendix_e_findings(), on="implementation", how="left")
        .with_columns(pl.col(ms).round(2), pl.col("imc24_appendix_e").fill_null("not among the paper's clients"))
        .select(list(AGREEMENT_HEADERS))
        .sort("implementation", "vantage")
    )
    note = (
        f"|logged − recomputed| over {int(table['samples_compared'].sum())} compared RTT samples of "
        f"{int(table['endpoints'].sum())} qlog endpoints; 'explanation' is the recorded cause of each deviation "
        "beyond the logging resolution (src/quicack/metrics/rfc9002_deviations.csv, with its evidence)."
    )
    endpoints = (int(table["endpoints"].sum()), "qlog endpoint")
    return Rendered(table, note=note, drawn_from=endpoints, headers=AGREEMENT_HEADERS)
