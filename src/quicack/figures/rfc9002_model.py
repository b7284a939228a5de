"""The imc24 figures drawn from the RFC 9002 model alone (quicack.models.recovery), no measurement: Fig. 2
(PTO evolution over RTT samples) and Fig. 4 (the instant ACK's numerical sweet spot)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm

from quicack.figures.common import Rendered, setup_style
from quicack.models import recovery


def imc24_fig02_pto_evolution(
    rtt_ms: float = 20.0,
    cert_delay_ms: float = 20.0,
    samples: int = 40,
    params: recovery.RecoveryParams = recovery.RecoveryParams(),
) -> Rendered:
    """PTO after each RTT sample in a static setting: the first sample is RTT + Δt with
    wait-for-certificate and RTT with an instant ACK; every later sample is the RTT."""
    setup_style()
    wfc = recovery.pto_evolution(rtt_ms + cert_delay_ms, rtt_ms, samples, params=params)
    iack = recovery.pto_evolution(rtt_ms, rtt_ms, samples, params=params)
    floor = rtt_ms + params.granularity_ms
    index = np.arange(1, samples + 1)
    fig, ax = plt.subplots(figsize=(4.5, 2.8))
    ax.plot(index, wfc, marker="o", markersize=3, label=f"WFC: first sample RTT + Δt = {rtt_ms + cert_delay_ms:g} ms")
    ax.plot(index, iack, marker="s", markersize=3, label=f"IACK: first sample RTT = {rtt_ms:g} ms")
    ax.axhline(
        floor,
        color="black",
        linestyle=":",
        linewidth=1,
        label=f"client–frontend PTO limit (RTT + kGranularity = {floor:g} ms)",
    )
    ax.set_xlabel("RTT sample [#]")
    ax.set_ylabel("PTO [ms]")
    ax.set_title(f"PTO evolution, static RTT {rtt_ms:g} ms, Δt {cert_delay_ms:g} ms", fontsize=9)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return Rendered(fig, model=True)


def sweet_spot_grid(
    cert_delays_ms: Sequence[float] | np.ndarray,
    rtts_ms: Sequence[float] | np.ndarray,
    params: recovery.RecoveryParams = recovery.RecoveryParams(),
) -> tuple[np.ndarray, np.ndarray]:
    """First-PTO reduction relative to the RTT, and whether the instant ACK causes spurious
    probes, on a (RTT × Δt) grid (rows: RTT, columns: Δt)."""
    reduction = np.array([[recovery.first_pto_reduction_ms(r, d, params) / r for d in cert_delays_ms] for r in rtts_ms])
    spurious = np.array([[recovery.instant_ack_is_spurious(r, d, params) for d in cert_delays_ms] for r in rtts_ms])
    return reduction, spurious


def imc24_fig04_sweet_spot(
    max_cert_delay_ms: float = 300.0,
    rtt_range_ms: tuple[float, float] = (1.0, 300.0),
    resolution: int = 120,
    params: recovery.RecoveryParams = recovery.RecoveryParams(),
) -> Rendered:
    """Theoretical first-PTO reduction of IACK over WFC relative to the RTT over (Δt, RTT), with
    the region where the instant ACK causes no spurious retransmission (Δt < 3·RTT)."""
    setup_style()
    cert_delays = np.linspace(0.0, max_cert_delay_ms, resolution)
    rtts = np.geomspace(*rtt_range_ms, resolution)
    reduction, spurious = sweet_spot_grid(cert_delays, rtts, params)
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    shown = np.where(reduction > 0, reduction, np.nan)
    # Rasterized inside the vector PDF, as in imc24_sweet_spot: a grid of vector cells is slow to write and to view.
    mesh = ax.pcolormesh(
        cert_delays,
        rtts,
        shown,
        shading="auto",
        cmap="viridis",
        norm=LogNorm(vmin=0.01, vmax=np.nanmax(shown)),
        rasterized=True,
    )
    fig.colorbar(mesh, ax=ax, label="first-PTO reduction / RTT")
    ax.contourf(cert_delays, rtts, spurious.astype(float), levels=[0.5, 1.5], colors="none", hatches=["////"])
    ax.plot(
        cert_delays,
        cert_delays / 3,
        color="red",
        linestyle="--",
        linewidth=1.2,
        label="Δt = 3·RTT (client PTO from the IACK)",
    )
    ax.set_yscale("log")
    ax.set_ylim(*rtt_range_ms)
    ax.set_xlabel("Δt frontend ↔ certificate store [ms]")
    ax.set_ylabel("client–frontend RTT [ms]")
    ax.text(
        0.97,
        0.04,
        "hatched: spurious\nretransmissions",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize=7,
        color="white",
    )
    ax.text(
        0.03,
        0.96,
        "no spurious\nretransmissions",
        transform=ax.transAxes,
        ha="left",
        va="top",
        fontsize=7,
        color="white",
    )
    ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0))
    fig.tight_layout()
    return Rendered(fig, model=True)
