"""imc24 TTFB figures (Fig. 5, 6, 7 at one RTT; Fig. 12, 13 over RTTs) and the numbers behind them.

TTFB is the client-side capture's time of the first response-body byte (``ttfb_capture_ms``): it
exists for every client, also for quinn, whose qlog has no frames; for the runs under the paper's conditions, which a
dataset that has them is drawn from (``selection.as_recorded``), the client qlog's (``ttfb_ms``), as imc24's. Only
IACK/WFC runs count (the testbed's imc24 server, or any server with that knob); the scenario, RTTs and clients come
from the data.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from quicack.figures.common import Rendered, setup_style
from quicack.metrics.selection import as_recorded, require_runs, scenario_runs, ttfb_metric
from quicack.metrics.summary import (
    MODES,
    TTFB_CAPTURE,
    TTFB_LABEL,
    iack_wfc_runs,
    interval_reach,
    mode_difference,
    mode_difference_interval,
    summarize,
)
from quicack.rendered import placeholder_when_missing

MODE_LABEL = {"iack": "IACK", "wfc": "WFC"}
MODE_COLOR = {"iack": "#1f77b4", "wfc": "#d62728"}
MODE_MARKER = {"iack": "o", "wfc": "s"}


def ttfb_summary(
    handshakes: pl.DataFrame, scenario: str, rtt_ms: float | None = None, metric: str | None = None
) -> pl.DataFrame:
    """Per client, mode and RTT: ``summarize`` of ``metric`` (default: the TTFB the scenario's runs are compared on,
    ``selection.ttfb_metric``) (median, quartiles, min/max, runs, failed_runs, missing_runs) plus
    ``iack_minus_wfc_ms``, the client's IACK median minus its WFC median at that RTT (negative: IACK delivers the
    first byte sooner)."""
    metric = metric or ttfb_metric(handshakes, as_recorded(handshakes, scenario))
    runs = scenario_runs(handshakes, scenario, rtt_ms)
    summary = summarize(runs, metric, ["client_impl", "mode", "scenario", "rtt_ms"])
    difference = mode_difference(runs, metric, ["client_impl", "rtt_ms"]).select(
        "client_impl", "rtt_ms", (-pl.col("wfc_minus_iack")).alias("iack_minus_wfc_ms")
    )
    return summary.join(difference, on=["client_impl", "rtt_ms"], how="left").sort("client_impl", "rtt_ms", "mode")


def qlog_capture_difference(handshakes: pl.DataFrame) -> pl.DataFrame:
    """Per client (and 'all'): median and largest absolute difference of qlog TTFB minus
    capture TTFB over the ok IACK/WFC runs that have both."""
    both = iack_wfc_runs(handshakes).filter(
        (pl.col("status") == "ok") & pl.col("ttfb_ms").is_not_null() & pl.col(TTFB_CAPTURE).is_not_null()
    ).with_columns((pl.col("ttfb_ms") - pl.col(TTFB_CAPTURE)).alias("difference"))
    aggregations = [
        pl.col("difference").median().alias("median_qlog_minus_capture_ms"),
        pl.col("difference").abs().max().alias("max_abs_qlog_minus_capture_ms"),
        pl.len().cast(pl.Int64).alias("runs"),
    ]
    per_client = both.group_by("client_impl").agg(*aggregations).sort("client_impl")
    overall = both.select(pl.lit("all").alias("client_impl"), *aggregations)
    return pl.concat([per_client, overall])


def _clients(runs: pl.DataFrame) -> list[str]:
    return sorted(runs["client_impl"].unique().to_list())


def _offsets(count: int, width: float) -> np.ndarray:
    """Evenly spread horizontal offsets for ``count`` points (no random jitter: deterministic)."""
    if count <= 1:
        return np.zeros(count)
    return np.linspace(-width / 2, width / 2, count)


def _draw_ttfb_panel(
    ax: plt.Axes, runs: pl.DataFrame, clients: Sequence[str], annotate: bool, metric: str = TTFB_CAPTURE
) -> None:
    """Per client: IACK and WFC side by side, each a box over the ok repetitions (seaborn), the runs as
    points and the median as a black bar; optionally the IACK−WFC median difference above, with how
    far its 95 % bootstrap interval over the runs reaches."""
    ok = runs.filter((pl.col("status") == "ok") & pl.col(metric).is_not_null())
    intervals = mode_difference_interval(runs, metric, ["client_impl"])
    reach = dict(
        intervals.select(
            "client_impl", interval_reach("wfc_minus_iack", "wfc_minus_iack_low", "wfc_minus_iack_high")
        ).iter_rows()
    )
    drawn = ok.filter(pl.col("client_impl").is_in(list(clients))).select("client_impl", "mode", metric)
    if not drawn.is_empty():
        sns.boxplot(drawn.to_pandas(), x="client_impl", y=metric, hue="mode", order=list(clients),
                    hue_order=list(MODES), dodge=True, palette=MODE_COLOR, legend=False, width=0.8, gap=0.2,
                    fill=False, showfliers=False, linewidth=1.0, medianprops={"color": "black", "linewidth": 1.5},
                    ax=ax)  # fmt: skip
    half = 0.2
    for position, client in enumerate(clients):
        medians = {}
        for shift, mode in zip((-half, half), MODES, strict=True):
            values = np.sort(
                drawn.filter((pl.col("client_impl") == client) & (pl.col("mode") == mode))[metric].to_numpy()
            )
            x = position + shift
            if values.size == 0:
                ax.text(
                    x,
                    0.02,
                    "no run",
                    transform=ax.get_xaxis_transform(),
                    ha="center",
                    va="bottom",
                    fontsize=5,
                    rotation=90,
                    color="gray",
                )
                continue
            # The runs themselves, evenly spread across the box (deterministic, unlike a random jitter).
            ax.scatter(
                x + _offsets(values.size, 0.18),
                values,
                s=10,
                color=MODE_COLOR[mode],
                marker=MODE_MARKER[mode],
                zorder=3,
                linewidths=0,
            )
            medians[mode] = float(np.median(values))
        if annotate and len(medians) == 2:
            top = ok.filter(pl.col("client_impl") == client)[metric].max()
            spread = f"\n±{reach[client]:.1f}" if reach.get(client) is not None else ""
            ax.annotate(
                f"{medians['iack'] - medians['wfc']:+.1f}{spread}",
                (position, top),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=6.5,
                linespacing=0.9,
            )
    ax.set_xticks(range(len(clients)), clients, rotation=30, ha="right")
    ax.set_xlim(-0.6, len(clients) - 0.4)
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.grid(axis="x", visible=False)


def _mode_legend(ax: plt.Axes, **kwargs) -> None:
    handles = [
        plt.Line2D(
            [], [], color=MODE_COLOR[m], marker=MODE_MARKER[m], linestyle="none", markersize=5, label=MODE_LABEL[m]
        )
        for m in MODES
    ]
    handles.append(plt.Line2D([], [], color="black", linewidth=1.5, label="median"))
    ax.legend(handles=handles, fontsize=7, **kwargs)


def ttfb_by_client_figure(handshakes: pl.DataFrame, scenario: str, rtt_ms: float, title: str) -> plt.Figure:
    """One panel: TTFB per client at ``rtt_ms`` in ``scenario``, IACK beside WFC, the number
    above each client is its IACK − WFC median difference in ms."""
    setup_style()
    metric = ttfb_metric(handshakes, as_recorded(handshakes, scenario))
    runs = scenario_runs(handshakes, scenario, rtt_ms)
    clients = _clients(runs)
    fig, ax = plt.subplots(figsize=(4.6, 2.9))
    _draw_ttfb_panel(ax, runs, clients, annotate=True, metric=metric)
    ax.set_ylabel(f"TTFB ({TTFB_LABEL[metric]}) [ms]")
    ax.set_title(f"{title}, RTT {rtt_ms:g} ms\nlabels: IACK − WFC median ± 95 % bootstrap [ms]", fontsize=8)
    ax.margins(y=0.12)
    _mode_legend(ax, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def ttfb_over_rtts_figure(handshakes: pl.DataFrame, scenario: str, title: str, ncols: int = 3) -> plt.Figure:
    """One panel per RTT in the data (own y-axis each: TTFB grows with the RTT), per client
    IACK beside WFC as in the single-RTT figures."""
    setup_style()
    metric = ttfb_metric(handshakes, as_recorded(handshakes, scenario))
    runs = scenario_runs(handshakes, scenario)
    rtts = sorted(runs["rtt_ms"].unique().to_list())
    clients = _clients(runs)
    ncols = max(1, min(ncols, len(rtts)))
    nrows = max(1, -(-len(rtts) // ncols))
    fig, grid = plt.subplots(nrows, ncols, figsize=(2.4 * ncols, 2.3 * nrows), squeeze=False)
    axes = list(grid.flat)
    for ax in axes[len(rtts):]:
        fig.delaxes(ax)
    for ax, rtt in zip(axes, rtts, strict=False):
        _draw_ttfb_panel(ax, runs.filter(pl.col("rtt_ms") == rtt), clients, annotate=True, metric=metric)
        ax.set_title(f"RTT {rtt:g} ms", fontsize=8)
        ax.margins(y=0.15)
        ax.tick_params(axis="both", labelsize=7)
    for row in range(nrows):
        grid[row][0].set_ylabel(f"TTFB ({TTFB_LABEL[metric].removeprefix('client ')}) [ms]")
    if rtts:
        _mode_legend(axes[0], loc="best")
    fig.suptitle(f"{title} (labels: IACK−WFC median ± 95 % bootstrap, ms)", fontsize=9)
    fig.tight_layout()
    return fig


def _ttfb_at_rtt(handshakes: pl.DataFrame, scenario: str, rtt_ms: float, title: str) -> Rendered:
    metric = ttfb_metric(handshakes, as_recorded(handshakes, scenario))
    runs = require_runs(
        scenario_runs(handshakes, scenario, rtt_ms), f"of scenario '{scenario}' at RTT {rtt_ms:g} ms", metric
    )
    return Rendered(ttfb_by_client_figure(handshakes, scenario, rtt_ms, title), runs, metric)


def _ttfb_over_rtts(handshakes: pl.DataFrame, scenario: str, title: str) -> Rendered:
    metric = ttfb_metric(handshakes, as_recorded(handshakes, scenario))
    runs = require_runs(scenario_runs(handshakes, scenario), f"of scenario '{scenario}'", metric)
    return Rendered(ttfb_over_rtts_figure(handshakes, scenario, title), runs, metric)


@placeholder_when_missing
def imc24_fig05_ttfb_amplification(handshakes: pl.DataFrame, rtt_ms: float = 9.0) -> Rendered:
    """Fig. 5: no loss, certificate above the anti-amplification limit and Δt before the
    ServerHello (scenario 'amplification')."""
    return _ttfb_at_rtt(handshakes, "amplification", rtt_ms, "No loss, certificate > amplification limit")


@placeholder_when_missing
def imc24_fig06_ttfb_server_flight_loss(handshakes: pl.DataFrame, rtt_ms: float = 9.0) -> Rendered:
    """Fig. 6: the remaining first server flight is lost (scenario 'drop_server_flight')."""
    return _ttfb_at_rtt(handshakes, "drop_server_flight", rtt_ms, "Remaining first server flight lost")


@placeholder_when_missing
def imc24_fig07_ttfb_client_flight_loss(handshakes: pl.DataFrame, rtt_ms: float = 9.0) -> Rendered:
    """Fig. 7: the second client flight is lost (scenario 'drop_client_flight')."""
    return _ttfb_at_rtt(handshakes, "drop_client_flight", rtt_ms, "Second client flight lost")


@placeholder_when_missing
def imc24_fig12_ttfb_server_flight_loss_rtts(handshakes: pl.DataFrame) -> Rendered:
    """Fig. 12: remaining first server flight lost, every RTT in the data."""
    return _ttfb_over_rtts(handshakes, "drop_server_flight", "Remaining first server flight lost")


@placeholder_when_missing
def imc24_fig13_ttfb_client_flight_loss_rtts(handshakes: pl.DataFrame) -> Rendered:
    """Fig. 13: second client flight lost, every RTT in the data."""
    return _ttfb_over_rtts(handshakes, "drop_client_flight", "Second client flight lost")
