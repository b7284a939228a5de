"""rethink's measured figures and Table III (papers/003, §V–VI), and the helpers tcpquic's measured figures share:
10 MB downloads over the emulated 8.5/1.5 Mbit/s, 600 ms satellite path, the client as the receiver at AR 1:2 and
1:10, QUIC against Linux TCP. The paper's stacks were quicly (NewReno, unpaced), Chromium and picoquic; here native
ones stand in for them (the quinn pair with ACK_FREQUENCY, ngtcp2 from quiche's unpaced NewReno), and Linux TCP for
Linux TCP (its 1:10 by ACK thinning in the router, where the paper projected it)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
import seaborn as sns

from quicack.figures.common import cwnd_figure, palette, setup_style
from quicack.metrics.cwnd import cwnd_of_runs
from quicack.metrics.rethink_volume import (
    LOSS_LABELS,
    WHERE,
    loss_transfer_sizes,
    ok_with_labels,
    reduced_wire,
    volume_per_configuration,
)
from quicack.metrics.return_path import (
    counted_median,
    packets_per_second,
    return_link_rows,
    return_packet_sizes,
)
from quicack.metrics.selection import (
    BROWSER_RECEIVERS,
    BROWSERS_NOTE,
    RETHINK_FILE_BYTES,
    RETHINK_LOSS_PROFILE,
    RETHINK_PROFILE,
    RETHINK_RETURN100K_PROFILE,
    MissingData,
    require_runs,
    rethink_runs,
)
from quicack.reference import paper_table
from quicack.rendered import Rendered, placeholder_when_missing
from quicack.storage.run_batches import RunRows

STAND_INS = (
    "The paper's stacks (quicly, Chromium, picoquic) are stood in for by native ones: the quinn client asked for AR "
    "1:2 or 1:10 and a 25 ms ACK delay by the quinn server's ACK_FREQUENCY frames (quinn: NewReno, paced), and "
    "ngtcp2's client (--ack-thresh; its own delay, 25 ms on this path) from quiche's unpaced NewReno (quicly's "
    "sender); with 1 % loss also the aioquic client with quicack's ACK policy where a run says so (run.json). TCP is "
    "Linux TCP (AR 1:2 = the kernel's defaults, which on this path acknowledge nearly every segment; 1:10 = those ACKs "
    "thinned 1:5 in the emulated "
    "router, which the paper only projected). " + BROWSERS_NOTE
)
# Return packets above this size (path MTU probes, the handshake's padded Initials) leave the size axes readable;
# the figure says how many there were.
SIZE_AXIS_MAX_BYTES = 250


def labelled_return_sizes(
    runs: pl.DataFrame, datagrams: RunRows, tcp_segments: RunRows | None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the runs drawn, return-path IP packet sizes after the first RTT with each run's configuration), no loss."""
    what = f"{WHERE} at AR 1:2 or 1:10, or by a browser with its own policy"
    selected = require_runs(rethink_runs(runs, default_policy_receivers=BROWSER_RECEIVERS), what)
    ok = ok_with_labels(selected)
    sizes = reduced_wire(ok, datagrams, tcp_segments, return_packet_sizes, what)
    return selected, sizes.join(ok.select("run_id", "configuration"), on="run_id")


def return_size_cdf(sizes: pl.DataFrame, title: str) -> plt.Figure:
    """One empirical CDF of IP packet sizes per configuration (``sizes``: configuration, ip_bytes, packets of that
    size), its median in the legend."""
    setup_style()
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for (configuration,), group in sizes.sort("configuration").group_by("configuration", maintain_order=True):
        # Each row weighs as many packets as it counts: the same ECDF as one point per packet.
        sns.ecdfplot(group.select("ip_bytes", "packets").to_pandas(), x="ip_bytes", weights="packets", ax=ax,
                     label=f"{configuration} (median {counted_median(group, 'ip_bytes'):.0f} B)")  # fmt: skip
    beyond = int(sizes.filter(pl.col("ip_bytes") > SIZE_AXIS_MAX_BYTES)["packets"].sum())
    ax.set_xlim(0, SIZE_AXIS_MAX_BYTES)
    ax.set_xlabel("return-path IP packet size (bytes)"
                  + (f"; {beyond} of {int(sizes['packets'].sum())} packets above {SIZE_AXIS_MAX_BYTES} B not shown"
                     if beyond else ""))  # fmt: skip
    ax.set_ylabel("fraction of packets")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


@placeholder_when_missing
def rethink_fig1_return_packet_sizes(
    runs: pl.DataFrame, datagrams: RunRows, tcp_segments: RunRows | None = None
) -> Rendered:
    """rethink Fig. 1: CDF of the return-path IP packet sizes after the first RTT, 10 MB, no loss."""
    selected, sizes = labelled_return_sizes(runs, datagrams, tcp_segments)
    fig = return_size_cdf(sizes, "Return-path packet sizes after the first RTT, 10 MB, no loss")
    note = (
        f"{WHERE}, no loss; every client-to-server IP packet from the first after the server's first flight, at the "
        "client side of the link (Linux TCP: at the server side, after the router's ACK thinning). Paper medians: TCP "
        "52, Chromium 63, quicly 68, picoquic 83 B. "
        + STAND_INS
    )
    return Rendered(fig, runs=selected, note=note)


def _paper_volumes() -> pl.DataFrame:
    """rethink Table III as printed, one text per (loss, protocol, AR): 'Chromium 313 KB (3.1 %), quicly 343 KB (3.4
    %)'."""
    paper = paper_table("rethink", "tab03")
    return (
        paper.with_columns(
            (
                pl.format("{} {} KB ({} %)", pl.col("implementation"), pl.col("return_kb"), pl.col("return_percent"))
                + pl.when(pl.col("projected") == "yes").then(pl.lit(" projected")).otherwise(pl.lit(""))
            ).alias("paper_text")
        )
        .group_by(
            "loss", "protocol", pl.col("ack_ratio").cast(pl.Int64).alias("receiver_ack_ratio"), maintain_order=True
        )
        .agg(pl.col("paper_text").str.join(", ").alias("paper"))
    )


# rethink Table III's columns and their headers as a paper prints them (the CSV keeps the names).
TAB3_HEADERS = {
    "loss": "Loss", "configuration": "Configuration", "runs": "Runs", "scaled_from": "Scaled from",
    "forward_mb": "Forward (MB)", "return_kb": "Return (KB)", "return_percent_of_forward": "Return (% of forward)",
    "return_kb_per_10mb": "Return per 10 MB (KB)", "paper": "Paper",
}  # fmt: skip


@placeholder_when_missing
def rethink_tab3_return_volume(runs: pl.DataFrame, datagrams: RunRows, tcp_segments: RunRows | None = None) -> Rendered:
    """rethink Table III: return-path volume at AR 1:2 and 1:10, without and with 1 % loss, QUIC and TCP."""
    selected, table = volume_per_configuration(runs, datagrams, tcp_segments)
    paper = _paper_volumes()
    table = table.join(paper, on=["loss", "protocol", "receiver_ack_ratio"], how="left").select(list(TAB3_HEADERS))
    note = (
        f"{WHERE}; with 1 % loss {loss_transfer_sizes(ok_with_labels(selected))} (column scaled_from). Medians "
        "over runs of IP bytes at the client side (Linux TCP's return bytes at the server side, after the router's "
        "ACK thinning, which makes its AR 1:10 from the kernel's ≈ 1:1.3: ≈ 1:6.5 measured; the paper projects TCP's "
        "1:10) (the paper's TCP volumes seem to "
        "include Ethernet headers, 14 B per packet, and its percentages are KB / 10,000 truncated). " + STAND_INS
    )
    return Rendered(table, runs=selected, note=note, headers=TAB3_HEADERS)


QUIC_COMPONENTS = {
    "ip_header": "IP",
    "udp_header": "UDP",
    "quic_header": "QUIC header",
    "aead_tag": "AEAD tag",
    "frame:ack": "ACK frame",
}
TCP_COMPONENTS = {
    "ip_header": "IP",
    "tcp_header": "TCP header",
    "tcp_timestamp_option": "TCP timestamp",
    "tcp_sack_option": "TCP SACK",
    "tcp_other_options": "TCP other options",
    "tcp_payload": "TCP payload",
}


def return_components(ack_breakdown: pl.DataFrame, ok: pl.DataFrame) -> pl.DataFrame:
    """Per loss × configuration × component: the median over runs of the return-path KB per 10 MB forward (a 2 MB
    loss run scaled ×5), where each run's return link is read (return_path.return_link_rows); QUIC frames other than ACK
    as 'other frames'."""
    names = {**QUIC_COMPONENTS, **TCP_COMPONENTS}
    rows = return_link_rows(ack_breakdown.join(ok.select("run_id"), on="run_id", how="semi"))
    per_run = (
        rows.with_columns(pl.col("component").replace_strict(names, default="other frames").alias("part"))
        .group_by("run_id", "part")
        .agg(pl.col("bytes").sum())
        .join(ok.select("run_id", "configuration", "lossy", "file_bytes"), on="run_id")
        .with_columns((pl.col("bytes") / 1e3 * RETHINK_FILE_BYTES / pl.col("file_bytes")).alias("kb_per_10mb"))
    )
    return (
        per_run.group_by("lossy", "configuration", "part")
        .agg(pl.col("kb_per_10mb").median())
        .sort("lossy", "configuration", "part")
    )


@placeholder_when_missing
def rethink_fig2_return_overhead(runs: pl.DataFrame, ack_breakdown: pl.DataFrame) -> Rendered:
    """rethink Fig. 2: return-path bytes by component, QUIC vs TCP, AR 1:2 and 1:10, (a) no loss (b) 1 % loss."""
    what = f"{WHERE} (1 % loss: rethink-satellite-loss1) at AR 1:2 or 1:10"
    selected = require_runs(rethink_runs(runs, (RETHINK_PROFILE, RETHINK_LOSS_PROFILE)), what)
    parts = return_components(ack_breakdown, ok_with_labels(selected))
    if parts.is_empty():
        raise MissingData(f"no ack_breakdown rows of the {what}")
    setup_style()
    order = list(dict.fromkeys([*QUIC_COMPONENTS.values(), *TCP_COMPONENTS.values(), "other frames"]))
    colours = dict(zip(order, palette("tab20"), strict=False))
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.6), sharey=True)
    for ax, lossy in zip(axes, (False, True), strict=True):
        panel = parts.filter(pl.col("lossy") == lossy)
        configurations = sorted(panel["configuration"].unique().to_list())
        bottom = [0.0] * len(configurations)
        for part in order:
            heights = [
                float(panel.filter((pl.col("configuration") == c) & (pl.col("part") == part))["kb_per_10mb"].sum())
                for c in configurations
            ]
            if any(heights):
                ax.bar(configurations, heights, bottom=bottom, label=part, color=colours[part])
                bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        ax.set_title(f"({'b' if lossy else 'a'}) {LOSS_LABELS[lossy]}", fontsize=9)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
        if not configurations:
            ax.text(0.5, 0.5, "no runs", ha="center", va="center", transform=ax.transAxes)
    axes[0].set_ylabel("return-path KB per 10 MB forward")
    handles, labels = axes[0].get_legend_handles_labels()
    more = axes[1].get_legend_handles_labels()
    known = dict(zip(labels + more[1], handles + more[0], strict=True))
    fig.legend(known.values(), known.keys(), fontsize=7, loc="upper center", ncol=6)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    note = (
        f"{WHERE}, 1 % loss: {loss_transfer_sizes(ok_with_labels(selected))}; median over runs of each component's "
        "IP bytes on the return path (ack_breakdown, client side; Linux TCP at the server side, after the router's "
        "ACK thinning). " + STAND_INS
    )
    return Rendered(fig, runs=selected, note=note)


def _median_per_second(rates: pl.DataFrame, ok: pl.DataFrame, *keys: str) -> pl.DataFrame:
    return (
        rates.join(ok.select("run_id", "configuration", *keys), on="run_id")
        .group_by(*keys, "configuration", "second")
        .agg(pl.col("packets").median(), pl.len().alias("runs"))
        .sort(*keys, "configuration", "second")
    )


def _rate_lines(ax: plt.Axes, lines: pl.DataFrame) -> None:
    for (configuration,), group in lines.group_by("configuration", maintain_order=True):
        ax.step(group["second"].to_list(), group["packets"].to_list(), where="post", label=configuration)


@placeholder_when_missing
def rethink_fig3_return_packet_rate(
    runs: pl.DataFrame, datagrams: RunRows, tcp_segments: RunRows | None = None
) -> Rendered:
    """rethink Fig. 3: return-path packets per second (1 s bins), TCP and QUIC at AR 1:2 and 1:10, no loss."""
    what = f"{WHERE} at AR 1:2 or 1:10"
    selected = require_runs(rethink_runs(runs), what)
    ok = ok_with_labels(selected)
    rates = reduced_wire(ok, datagrams, tcp_segments, lambda wire: packets_per_second(wire, "c2s"), what)
    lines = _median_per_second(rates, ok)
    setup_style()
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    _rate_lines(ax, lines)
    ax.set_xlabel("time since the first packet (s)")
    ax.set_ylabel("return packets per second")
    ax.legend(fontsize=7)
    note = f"{WHERE}, no loss; median over runs of the client-to-server packets in each 1 s bin. " + STAND_INS
    return Rendered(fig, runs=selected, note=note)


@placeholder_when_missing
def rethink_fig4_cwnd(runs: pl.DataFrame, metrics_logged: RunRows) -> Rendered:
    """rethink Fig. 4: the server's congestion window over time, AR 1:2 vs 1:10 (QUIC, from the server's qlog)."""
    what = f"QUIC {WHERE} at AR 1:2 or 1:10"
    selected = require_runs(rethink_runs(runs).filter(pl.col("protocol") == "quic"), what)
    ok = ok_with_labels(selected)
    cwnd = cwnd_of_runs(ok, metrics_logged)
    if cwnd.is_empty():
        raise MissingData(f"no congestion window in the server qlogs of the {what}")
    fig = cwnd_figure(cwnd, ok)
    note = (
        f"{WHERE}, no loss; every run's window as its sender's qlog logged it (the runs that keep it: quiche's unpaced "
        "NewReno, as the paper's quicly without pacing). " + STAND_INS
    )
    return Rendered(fig, runs=selected, note=note)


RETURN_LABELS = {RETHINK_PROFILE: "return unconstrained (1.5 Mbit/s)", RETHINK_RETURN100K_PROFILE: "return 100 kbit/s"}


@placeholder_when_missing
def rethink_fig5_forward_rate(runs: pl.DataFrame, datagrams: RunRows, tcp_segments: RunRows | None = None) -> Rendered:
    """rethink Fig. 5: forward data packets per second, return path unconstrained vs 100 kbit/s, AR 1:2 vs 1:10."""
    what = f"{WHERE} and its 100 kbit/s-return variant at AR 1:2 or 1:10"
    selected = require_runs(rethink_runs(runs, tuple(RETURN_LABELS)), what)
    ok = ok_with_labels(selected)
    rates = reduced_wire(
        ok, datagrams, tcp_segments, lambda wire: packets_per_second(wire, "s2c", data_only=True), what
    )
    lines = _median_per_second(rates, ok, "path_profile")
    setup_style()
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.4), sharey=True)
    for ax, (profile, label) in zip(axes, RETURN_LABELS.items(), strict=True):
        _rate_lines(ax, lines.filter(pl.col("path_profile") == profile))
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("time since the first packet (s)")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "no runs", ha="center", va="center", transform=ax.transAxes)
    axes[0].set_ylabel("forward data packets per second")
    fig.tight_layout()
    note = (
        f"{WHERE} (rethink-satellite) and with a 100 kbit/s return (rethink-satellite-return100k), no loss; median "
        "over runs of the server's data packets in each 1 s bin at the client side (QUIC: every server datagram after "
        "the first RTT). Paper: AR 1:2 falls from about 800 to 400 packets/s, 1:10 keeps the full rate. " + STAND_INS
    )
    return Rendered(fig, runs=selected, note=note)
