"""imc24 Fig. 4 measured: the instant ACK's sweet spot from the testbed's Δt sweep, on the axes of the
model figure (``rfc9002_model.imc24_fig04_sweet_spot``), each measured (Δt, RTT) cell beside the model."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from matplotlib.colors import LogNorm

from quicack.figures.common import Rendered, setup_style
from quicack.figures.rfc9002_model import sweet_spot_grid
from quicack.metrics import sweet_spot
from quicack.metrics.scalars import number
from quicack.metrics.selection import delay_sweep_runs, require_runs
from quicack.rendered import placeholder_when_missing

# Δt axis: symmetric log, linear below this, so that Δt = 0 and 5 ms stay apart from 400 ms.
DELAY_LINEAR_BELOW_MS = 5.0


def _model_grid(
    max_delay_ms: float, rtt_range_ms: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Δt (dense where the symmetric-log axis is linear), RTT, and the model's reduction / spurious grids."""
    delays = np.concatenate(
        [np.linspace(0.0, DELAY_LINEAR_BELOW_MS, 40), np.geomspace(DELAY_LINEAR_BELOW_MS, max_delay_ms, 300)[1:]]
    )
    rtts = np.geomspace(*rtt_range_ms, 300)
    reduction, spurious = sweet_spot_grid(delays, rtts)
    return delays, rtts, reduction, spurious


def _model_spurious_region(
    ax: plt.Axes, delays: np.ndarray, rtts: np.ndarray, spurious: np.ndarray, label: str
) -> None:
    ax.contourf(delays, rtts, spurious.astype(float), levels=[0.5, 1.5], colors="none", hatches=["////"])
    ax.plot(delays, delays / 3, color="red", linestyle="--", linewidth=1.0, label=label)


def _axes(ax: plt.Axes, max_delay_ms: float, rtt_range_ms: tuple[float, float]) -> None:
    ax.set_xscale("symlog", linthresh=DELAY_LINEAR_BELOW_MS)
    ax.set_yscale("log")
    ax.set_xlim(-0.5, max_delay_ms * 1.15)
    ax.set_ylim(*rtt_range_ms)
    ax.set_xlabel("Δt frontend ↔ certificate store [ms]")


@placeholder_when_missing
def imc24_fig04_measured_sweet_spot(handshakes: pl.DataFrame, runs: pl.DataFrame) -> Rendered:
    """Left: measured first-PTO reduction of IACK over WFC relative to the RTT per (Δt, RTT) cell (squares,
    median over clients of the logged first PTO) on the model's colour scale (background, faded), with
    measured ÷ model printed in each cell. Right: spurious retransmissions — share of IACK runs in which
    the client sent a PTO probe (nothing was lost, so every probe is spurious): filled where most did,
    open where none or few did, over the model's hatched region Δt ≥ 3·RTT."""
    selected = require_runs(
        delay_sweep_runs(handshakes, runs),
        "of the Δt sweep (scenarios noloss, noloss_delay_<Δt>ms)",
        keys=sweet_spot.CELL,
    )
    cells = sweet_spot.sweet_spot_cells(selected)
    require_runs(selected.filter(pl.col("mode") == "iack"), "of the Δt sweep with IACK")
    summary = sweet_spot.agreement_summary(cells)
    setup_style()
    max_delay = max(number(cells["cert_delay_ms"].max()), 300.0)
    rtts = cells["rtt_ms"]
    rtt_range = (min(1.0, number(rtts.min()) / 1.5), max(300.0, number(rtts.max()) * 1.5))
    shown = cells.filter(pl.col("measured_reduction_per_rtt") > 0)["measured_reduction_per_rtt"]
    model_max = float(np.nanmax(sweet_spot_grid([max_delay], [rtt_range[0]])[0]))
    norm = LogNorm(vmin=0.01, vmax=max(model_max, number(shown.max()) if shown.len() else 1.0))
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.6), sharey=True)

    delays, rtt_grid, reduction, spurious = _model_grid(max_delay, rtt_range)
    # Rasterized (at savefig.dpi) inside the otherwise vector PDF: the model grid as ~100,000 vector cells made a
    # 2.5 MB PDF that took 9 s to write.
    mesh = left.pcolormesh(
        delays,
        rtt_grid,
        np.where(reduction > 0, reduction, np.nan),
        shading="auto",
        cmap="viridis",
        norm=norm,
        alpha=0.45,
        rasterized=True,
    )
    _model_spurious_region(left, delays, rtt_grid, spurious, "model: Δt = 3·RTT")
    measured = cells.filter(pl.col("measured_reduction_ms").is_not_null())
    positive = measured.filter(pl.col("measured_reduction_per_rtt") > 0)
    left.scatter(
        positive["cert_delay_ms"],
        positive["rtt_ms"],
        c=positive["measured_reduction_per_rtt"],
        cmap="viridis",
        norm=norm,
        marker="s",
        s=70,
        edgecolors="black",
        linewidths=0.8,
        label="measured (median over clients)",
    )
    not_positive = measured.filter(pl.col("measured_reduction_per_rtt") <= 0)
    left.scatter(not_positive["cert_delay_ms"], not_positive["rtt_ms"], marker="s", s=70, facecolors="white",
                 edgecolors="black",
                 linewidths=0.8, label="measured ≤ 0")  # fmt: skip
    for row in measured.select("cert_delay_ms", "rtt_ms", "reduction_ratio").iter_rows(named=True):
        if row["reduction_ratio"] is not None:
            left.annotate(f"{row['reduction_ratio']:.2f}", (row["cert_delay_ms"], row["rtt_ms"]), textcoords="offset "
                                                                                                             "points",
                          xytext=(0, 7), ha="center", fontsize=5.5)  # fmt: skip
    fig.colorbar(mesh, ax=left, label="first-PTO reduction / RTT")
    _axes(left, max_delay, rtt_range)
    left.set_ylabel("client–frontend RTT [ms]")
    left.set_title("first-PTO reduction (label: measured ÷ model)", fontsize=8)
    left.legend(fontsize=6, loc="lower left", bbox_to_anchor=(0.0, 1.08))

    _model_spurious_region(right, delays, rtt_grid, spurious, "model: Δt = 3·RTT (hatched: spurious)")
    with_iack = cells.filter(pl.col("iack_runs") > 0)
    probed = with_iack.filter(pl.col("measured_spurious"))
    quiet = with_iack.filter(~pl.col("measured_spurious"))
    right.scatter(probed["cert_delay_ms"], probed["rtt_ms"], marker="o", s=60, color="crimson", edgecolors="black",
                  linewidths=0.6,
                  label="measured: most IACK runs probed")  # fmt: skip
    right.scatter(quiet["cert_delay_ms"], quiet["rtt_ms"], marker="o", s=60, facecolors="white", edgecolors="black",
                  linewidths=0.8,
                  label="measured: most IACK runs did not probe")  # fmt: skip
    for row in with_iack.select("cert_delay_ms", "rtt_ms", "iack_runs_probed", "iack_runs").iter_rows(named=True):
        right.annotate(f"{row['iack_runs_probed']}/{row['iack_runs']}", (row["cert_delay_ms"], row["rtt_ms"]),
                       textcoords="offset points",
                       xytext=(0, 7), ha="center", fontsize=5.5)  # fmt: skip
    _axes(right, max_delay, rtt_range)
    right.set_title(
        "spurious client probes with IACK (label: runs probed / IACK runs); agree "
        f"{summary['spurious_agree']}/{summary['spurious_cells']}",
        fontsize=8,
    )
    right.legend(fontsize=6, loc="lower left", bbox_to_anchor=(0.0, 1.08))
    fig.tight_layout()
    ratio = summary["ratio_median"]
    note = (
        "Δt and RTT emulated by this testbed (no loss, 1,212 B certificate; scenarios noloss and noloss_delay_<Δt>ms). "
        "First PTO: the one the client logged after its first RTT sample (first_pto_logged_ms), median per client and "
        "mode, WFC − IACK per client, median over the clients of a cell; model: RFC 9002 (quicack.models.recovery), as "
        "in imc24-fig04. Spurious: every client PTO probe in these lossless runs (client_pto_expiries, from the "
        f"client-side capture); WFC runs probed too in {int(cells['wfc_runs_probed'].sum())} of "
        f"{int(cells['wfc_runs'].sum())} (Δt beyond the client's default PTO). Measured ÷ model first-PTO reduction "
        f"over {summary['ratio_cells']} cells with Δt > 0: median "
        + ("n/a" if ratio is None else f"{ratio:.2f} (quartiles {summary['ratio_q25']:.2f}–{summary['ratio_q75']:.2f})")
        + f"; spurious probes where the model predicts them: {summary['spurious_agree']} of "
        f"{summary['spurious_cells']} cells."
    )
    return Rendered(fig, selected, metric=sweet_spot.PTO_COLUMN, note=note)
