"""tcpquic's measured figures (papers/004, the slides' "CDF of ACK sizes" and "Volume of ACKs"): the same testbed
runs as rethink's Fig. 1 and Table III (quicack.figures.rethink), drawn as the slides draw them."""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl

from quicack.figures.common import setup_style
from quicack.figures.rethink import STAND_INS, labelled_return_sizes, return_size_cdf
from quicack.metrics.rethink_volume import LOSS_LABELS, WHERE, volume_per_configuration
from quicack.rendered import Rendered, placeholder_when_missing
from quicack.storage.run_batches import RunRows


@placeholder_when_missing
def tcpquic_fig_cdf_ack_sizes(runs: pl.DataFrame, datagrams: RunRows, tcp_segments: RunRows | None = None) -> Rendered:
    """tcpquic "CDF of ACK sizes (no loss)": return-path IP packet sizes after the first RTT, 10 MB, 600 ms."""
    selected, sizes = labelled_return_sizes(runs, datagrams, tcp_segments)
    fig = return_size_cdf(sizes, "CDF of ACK sizes (return-path packets after the first RTT), no loss")
    note = f"{WHERE}, no loss; client-to-server IP packets after the first RTT, client side of the link. " + STAND_INS
    return Rendered(fig, runs=selected, note=note)


@placeholder_when_missing
def tcpquic_fig_volume_acks(runs: pl.DataFrame, datagrams: RunRows, tcp_segments: RunRows | None = None) -> Rendered:
    """tcpquic "Volume of ACKs": return KB per 10 MB forward per configuration, no loss and 1 % loss."""
    selected, table = volume_per_configuration(runs, datagrams, tcp_segments)
    setup_style()
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.4), sharey=True)
    for ax, lossy in zip(axes, (False, True), strict=True):
        panel = table.filter(pl.col("lossy") == lossy)
        ax.bar(panel["configuration"].to_list(), panel["return_kb_per_10mb"].to_list(), color="tab:blue")
        for x, (kb, percent) in enumerate(panel.select("return_kb_per_10mb", "return_percent_of_forward").iter_rows()):
            ax.annotate(f"{kb:.0f} KB\n{percent:.1f} %", (x, kb), ha="center", va="bottom", fontsize=7)
        scaled = panel["scaled_from"].unique().sort().to_list() if lossy else []
        ax.set_title(LOSS_LABELS[lossy] + (f" ({', '.join(scaled)})" if scaled else ""), fontsize=9)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        if panel.is_empty():
            ax.text(0.5, 0.5, "no runs", ha="center", va="center", transform=ax.transAxes)
    axes[0].set_ylabel("return-path KB per 10 MB forward")
    fig.tight_layout()
    note = (
        f"{WHERE}; medians over runs of the client-to-server IP bytes (the % is of the forward IP bytes). " + STAND_INS
    )
    return Rendered(fig, runs=selected, note=note)
