"""ackfreq22's measured artefacts (papers/002, §4.1, §5.2–5.6): Table 1 with the emulated paths measured, Fig. 3's
return-path bytes by component, Fig. 4 with Eq. (3), Tables 4 and 5, Figs. 5 and 6, and the Eq. (1)–(5) table.

The paper measured quicly (client and server modified, NewReno, no pacing) over a real satellite, 4G and VDSL path; here
native stacks download 1 MB over emulated paths with Table 1's rates and RTTs (4G's base RTT fitted to Table 4), without
Table 1's measured loss and with
§5.6's 1 % in the -loss1 profiles (data/reference/path_profiles.csv, its loss_model column): without loss the quinn
client, asked for the policy by the quinn server's ACK_FREQUENCY frames (NewReno, paced); with loss the aioquic client
with quicack's ACK policy (D, NR and 3A from one receiver) from the same quinn server; for Fig. 5 ngtcp2 from quiche's
unpaced NewReno. Every selection is in ``quicack.metrics.selection``; the per-run numbers are ``ack_runs``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
import seaborn as sns

from quicack.figures.common import cwnd_figure, palette, setup_style
from quicack.metrics.ack_breakdown import first_rtt_end
from quicack.metrics.ackfreq22_runs import WHERE, download_times, measured_runs, ok_runs
from quicack.metrics.client_traffic import client_traffic_estimates, eq3_summary
from quicack.metrics.cwnd import cwnd_of_runs
from quicack.metrics.return_path import one_vantage_per_run
from quicack.metrics.scalars import number
from quicack.metrics.selection import (
    ACKFREQ22_ACK_RATIOS,
    ACKFREQ22_PATHS,
    ACKFREQ22_REORDERING_POLICIES,
    ACKFREQ22_SATELLITE,
    MissingData,
    ackfreq22_fig4_runs,
    ackfreq22_matrix_runs,
    ackfreq22_runs,
    default_ack_policy_runs,
    long_download_runs,
    require_runs,
)
from quicack.reference import paper_table, path_profiles
from quicack.rendered import Rendered, placeholder_when_missing
from quicack.storage.run_batches import RunRows, per_run_batches

STAND_INS = (
    "The paper's quicly client and server (NewReno, no pacing) are stood in for by native stacks, each run's sender "
    "named in its run.json: without loss the quinn client asked for the policy by the quinn server's ACK_FREQUENCY "
    "frames (NewReno, paced), with loss the aioquic client with quicack's ACK policy (D, NR and 3A from one receiver) "
    "from the same quinn server, for Fig. 5 ngtcp2 (--ack-thresh) from quiche's unpaced NewReno; over emulated paths "
    "with Table 1's rates and RTT (4G: a 48 ms base RTT fitted to Table 4, its queue bringing a full path to Table 1's "
    "95 ms). Table 1's measured loss is not emulated, §5.6's 1 % is (data/reference/path_profiles.csv, loss_model)."
)
PATH_LABELS = {"ackfreq22-4g": "4G", "ackfreq22-vdsl": "VDSL", "ackfreq22-satellite": "Satellite"}
LOSS_LABELS = {False: "no loss", True: "1 % loss"}


# -- Table 1 ---------------------------------------------------------------------------------------------------------


def _delivered(datagrams: pl.DataFrame) -> pl.DataFrame:
    """Per run at its chosen capture point: the first round trip at the client and the fastest forward second."""
    rows = one_vantage_per_run(datagrams)
    round_trip = first_rtt_end(rows).select("run_id", pl.col("first_rtt_end_ms").alias("first_round_trip_ms"))
    peak = (
        rows.filter(pl.col("direction") == "s2c")
        .with_columns((pl.col("time_ms") // 1000).alias("second"))
        .group_by("run_id", "second")
        .agg(
            (pl.col("ip_header_bytes") + pl.col("udp_header_bytes") + pl.col("udp_payload_bytes")).sum().alias("bytes")
        )
        .group_by("run_id")
        .agg((pl.col("bytes").max() * 8 / 1e6).alias("peak_forward_mbit"))
    )
    return round_trip.join(peak, on="run_id", how="full", coalesce=True)


# Table 1's columns and their headers as a paper prints them (the CSV keeps the names).
TAB01_HEADERS = {
    "profile": "Profile", "path": "Path", "s2c_rate_mbit": "Rate s→c (Mbit/s)",
    "c2s_rate_mbit": "Rate c→s (Mbit/s)", "rtt_ms": "Base RTT (ms)", "table1_rtt_ms": "Table 1 RTT (ms)",
    "s2c_loss_percent": "Loss s→c (%)", "c2s_loss_percent": "Loss c→s (%)", "ack_delay_ms": "ACK delay (ms)",
    "paper_ack_delay_vs_rtt": "Paper: ACK delay vs RTT",
    "measured_rtt_ms": "Measured RTT (ms)", "measured_s2c_loss_clusters_percent": "Measured loss clusters s→c (%)",
    "measured_peak_s2c_mbit": "Measured peak s→c (Mbit/s)", "runs": "Runs", "probe_rtt_ms": "Probed RTT (ms)",
    "probe_s2c_mbit": "Probed rate s→c (Mbit/s)", "probe_c2s_mbit": "Probed rate c→s (Mbit/s)",
    "probe_s2c_loss_percent": "Probed loss s→c (%)", "probe_c2s_loss_percent": "Probed loss c→s (%)",
}  # fmt: skip


@placeholder_when_missing
def ackfreq22_tab01_paths(
    runs: pl.DataFrame, datagrams: RunRows, ack_runs: pl.DataFrame, path_checks: pl.DataFrame | None = None
) -> Rendered:
    """Table 1's paths as configured (data/reference/path_profiles.csv) with what the emulated paths delivered in our
    runs: the first round trip at the client (its first datagram after the server's first; the server acknowledges at
    once), the forward packets the client never received (gaps in its ACK ranges; per forward data packet) and the
    fastest forward second (IP bytes in any 1 s of a download); and, where the dataset has them (table path_checks),
    what quicack.testbed.path_check's UDP probes measured of each path: RTT, rate and random loss per direction."""
    selected = require_runs(ackfreq22_runs(runs), f"of the {WHERE}")
    ok = ok_runs(selected).select("run_id", "path_profile")
    delivered = per_run_batches(_delivered, ok["run_id"], datagrams)
    per_run = ok.join(delivered, on="run_id", how="left").join(
        ack_runs.select("run_id", "loss_clusters", "forward_data_packets"), on="run_id", how="left"
    )
    measured = per_run.group_by(pl.col("path_profile").alias("profile")).agg(
        pl.col("first_round_trip_ms").median().round(1).alias("measured_rtt_ms"),
        (100.0 * pl.col("loss_clusters").sum() / pl.col("forward_data_packets").sum())
        .round(3)
        .alias("measured_s2c_loss_clusters_percent"),
        pl.col("peak_forward_mbit").median().round(2).alias("measured_peak_s2c_mbit"),
        pl.len().alias("runs"),
    )
    profiles = path_profiles().filter(pl.col("paper") == "ackfreq22")
    table = profiles.select(
        "profile", "path", "s2c_rate_mbit", "c2s_rate_mbit", "rtt_ms", "table1_rtt_ms", "s2c_loss_percent",
        "c2s_loss_percent", "ack_delay_ms",
        "paper_ack_delay_vs_rtt",
    ).join(measured, on="profile", how="left")  # fmt: skip
    probed = "Not probed (no path_checks table). "
    if path_checks is not None and not path_checks.is_empty():
        table = table.join(
            path_checks.select(
                "profile",
                pl.col("rtt_median_ms").round(1).alias("probe_rtt_ms"),
                pl.col("s2c_rate_mbit").round(2).alias("probe_s2c_mbit"),
                pl.col("c2s_rate_mbit").round(2).alias("probe_c2s_mbit"),
                pl.col("s2c_loss_percent").round(2).alias("probe_s2c_loss_percent"),
                pl.col("c2s_loss_percent").round(2).alias("probe_c2s_loss_percent"),
            ),
            on="profile",
            how="left",
        )
        probed = (
            "probe_* columns: the path itself, measured with UDP probes by quicack.testbed.path_check (median RTT of "
            "40 echoes; delivered rate under a sender 25 % above the profile's; random loss at half the rate); a 1 MB "
            "download's fastest second stays below the probed rate where it ends in slow start (ackratio-senders shows "
            "the 10 MB ones). "
        )
    note = (
        "Configured columns: data/reference/path_profiles.csv (Table 1, and §5.6's 1 % loss in the -loss1 profiles); "
        "rtt_ms is the emulated base RTT, table1_rtt_ms Table 1's median measured RTT — they differ for 4G only, whose "
        "base RTT is fitted to Table 4's loss-free times (the profile's note). Measured: "
        "median first round trip at the client-side capture; forward loss as loss clusters (runs of consecutive lost "
        "server packets, gaps in the client's ACK ranges — queue overflows in slow start count too) per forward data "
        "packet; the median over runs of the fastest 1 s of server IP bytes (1 MB downloads rarely leave slow start, "
        "so the fastest second shows what the path delivers, not the mean; a download shorter than 1 s, as over 4G and "
        "VDSL, counts all its bytes, about 8.8 Mbit). Return-path loss is not measured in the downloads: only the "
        "client "
        "side is captured. " + probed + STAND_INS
    )
    return Rendered(table, runs=selected, note=note, headers=TAB01_HEADERS)


# -- Fig. 3 ----------------------------------------------------------------------------------------------------------

COMPONENT_GROUPS = {
    "ip_header": "IP",
    "udp_header": "UDP",
    "quic_header": "QUIC header",
    "aead_tag": "AEAD tag",
    "frame:ack": "ACK",
    "frame:crypto": "CRYPTO",
    "frame:stream": "STREAM",
    "frame:padding": "PADDING",
    "datagram_padding": "PADDING",
}
COMPONENT_ORDER = (
    "IP",
    "UDP",
    "QUIC header",
    "AEAD tag",
    "ACK",
    "CRYPTO",
    "STREAM",
    "PADDING",
    "other frames",
    "undecrypted",
)


def return_components(selected: pl.DataFrame, ack_breakdown: pl.DataFrame) -> pl.DataFrame:
    """Per receiver (``receiver``: client and policy) and component group: % of the return bytes, over all its runs."""
    ok = ok_runs(selected).select("run_id", "receiver")
    rows = one_vantage_per_run(ack_breakdown.join(ok, on="run_id", how="semi")).filter(pl.col("direction") == "c2s")
    grouped = rows.join(ok, on="run_id").with_columns(
        pl.when(pl.col("component") == "undecrypted")
        .then(pl.lit("undecrypted"))
        .otherwise(pl.col("component").replace_strict(COMPONENT_GROUPS, default="other frames"))
        .alias("part")
    )
    return (
        grouped.group_by("receiver", "part")
        .agg(pl.col("bytes").sum())
        .with_columns((100.0 * pl.col("bytes") / pl.col("bytes").sum().over("receiver")).alias("percent"))
        .sort("receiver", "part")
    )


@placeholder_when_missing
def ackfreq22_fig03_return_components(runs: pl.DataFrame, ack_breakdown: pl.DataFrame) -> Rendered:
    """Fig. 3: the client's bytes by component as % of its bytes, per receiver implementation and AR (no added loss):
    every receiver at each configured AR over downloads of at least 10 MB (every path profile without loss), every
    other client with its default policy (≥ 1 MB transfers)."""
    set_policy = long_download_runs(runs).with_columns(
        pl.format("{} AR {}", pl.col("client_impl"), pl.col("ack_ratio")).alias("receiver")
    )
    default = default_ack_policy_runs(runs).with_columns(
        pl.format("{} (default)", pl.col("client_impl")).alias("receiver")
    )
    selected = require_runs(
        pl.concat([set_policy, default], how="diagonal_relaxed"), f"of the {WHERE} or of default-policy transfers"
    )
    shares = return_components(selected, ack_breakdown)
    if shares.is_empty():
        raise MissingData("no client-side capture of the selected runs")
    setup_style()
    receivers = sorted(shares["receiver"].unique().to_list(), key=lambda r: (r.endswith("(default)"), len(r), r))
    fig, ax = plt.subplots(figsize=(6.4, 0.35 * len(receivers) + 1.4))
    left = pl.Series([0.0] * len(receivers))
    colours = palette("tab10")
    for i, part in enumerate(COMPONENT_ORDER):
        values = (
            pl.DataFrame({"receiver": receivers})
            .join(shares.filter(pl.col("part") == part), on="receiver", how="left")["percent"]
            .fill_null(0.0)
        )
        if values.sum() == 0:
            continue
        ax.barh(receivers, values.to_list(), left=left.to_list(), color=colours[i % len(colours)], label=part)
        left = left + values
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the client's (return-path) IP bytes")
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the bars: below them is the footnote
    note = (
        "Whole connections (handshake included) at the client-side capture; components as ack_breakdown splits them. "
        "The paper split Chrome 90's and Firefox 78's HTTP/3 video traffic (AR 10 and 2); here downloads of at least "
        "10 MB over the emulated ackfreq22 and rethink paths without loss (so that the handshake's padded datagrams "
        "are a small part of the return path, as in long video sessions). Where the dataset has them, 'chromium "
        "(default)' and 'firefox (default)' are the browsers themselves (Debian's Chromium and Firefox ESR, whose QUIC "
        "is neqo; quicack.testbed.browsers) with their own ACK policies; beside them the quinn client asked for AR 2 / "
        "10 by the quinn server's ACK_FREQUENCY frames (hq-interop) and ngtcp2 with --ack-thresh, each from a native "
        "sender (run.json), and other clients with their own default policy (downloads of at least 1 MB with a "
        "client-side capture)."
    )
    return Rendered(fig, runs=selected, note=note)


# -- Fig. 4 and the Eq. (1)–(5) table ---------------------------------------------------------------------------------

@placeholder_when_missing
def ackfreq22_fig04_client_bytes(
    runs: pl.DataFrame, ack_runs: pl.DataFrame, datagrams: RunRows, packets: RunRows, frames: RunRows
) -> Rendered:
    """Fig. 4: the client's bytes as % of the server's per ACK policy on the satellite path (1 MB, no added loss):
    measured per run (boxes) and Eq. (3)'s median estimate (bars; α fitted per policy from the receiver's timer
    ACKs)."""
    what = f"{WHERE}: satellite, no added loss"
    selected = require_runs(ackfreq22_fig4_runs(runs), f"of the {what}")
    per_run = client_traffic_estimates(selected, ack_runs, datagrams, packets, frames)
    if per_run.filter(pl.col("client_percent").is_not_null()).is_empty():
        raise MissingData(f"no ok run with a client-side capture of the {what}")
    summary = eq3_summary(per_run).sort("ack_ratio", "policy")
    policies = summary["policy"].to_list()
    setup_style()
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    positions = list(range(len(policies)))
    ax.bar(
        positions, summary["eq3_percent"].to_list(), width=0.6, color="lightsteelblue", label="Eq. (3), median estimate"
    )
    sns.boxplot(per_run.select("policy", "client_percent").drop_nulls().to_pandas(), x="policy", y="client_percent",
                order=policies, width=0.3, fill=False, color="black", linewidth=0.8, fliersize=3, ax=ax)  # fmt: skip
    ax.set_xticks(positions, policies, rotation=20, fontsize=7)
    ax.set_xlabel("")
    ax.set_ylabel("client bytes, % of server bytes")
    ax.legend(fontsize=7)
    worst = number(summary["eq3_difference_pp"].abs().max())
    note = (
        "Boxes: every run's client IP bytes / server IP bytes at the client-side capture; bars: Eq. (2)+(3)+(5) per "
        "run (A_total = Serv_p/AR + (1 − α)·A_del, S_bm the run's median ACK-only packet, V_crypt its handshake "
        f"datagrams), median; α fitted per policy (the paper: 0.5). Largest |Eq. (3) − measured median|: {worst:.2f} "
        "percentage points (the paper: "
        "0.19 and 0.07 for Firefox and Chrome). d = 25 ms unless the label says otherwise. " + STAND_INS
    )
    return Rendered(fig, runs=selected, note=note)


# The Eq. (1)–(5) table's columns as a paper prints them (the CSV keeps the names).
EQ_HEADERS = {
    "path": "Path", "loss": "Loss", "policy": "ACK policy", "ack_ratio": "AR", "ack_reordering": "Reordering policy",
    "runs": "Runs", "alpha": "α", "serv_p": "Server packets", "a_total_measured": "A_total measured",
    "a_del": "A_del measured", "a_total_eq3": "A_total Eq. (3)", "a_total_eq4": "A_total Eq. (4)",
    "loss_clusters_l": "Loss clusters L", "a_loss_eq5": "A_loss Eq. (5)", "s_bm": "S_bm (bytes)",
    "v_crypt": "V_crypt (bytes)", "measured_percent": "Client traffic measured (%)",
    "eq3_percent": "Client traffic Eq. (3) (%)", "eq4_percent": "Client traffic Eq. (4) (%)",
    "eq3_difference_pp": "Eq. (3) − measured (pp)", "eq3_relative_error": "Eq. (3) relative error",
    "eq4_relative_error": "Eq. (4) relative error",
}  # fmt: skip


@placeholder_when_missing
def ackfreq22_eq_table(
    runs: pl.DataFrame, ack_runs: pl.DataFrame, datagrams: RunRows, packets: RunRows, frames: RunRows
) -> Rendered:
    """Eq. (1)–(5) against the measurement: per path, loss, policy and reordering policy the measured A_total and A_del,
    α fitted, Eq. (3) / Eq. (4) ACKs, Eq. (5)'s loss ACKs and the client traffic each gives beside the measured one."""
    selected = require_runs(ackfreq22_runs(runs, paced=True), f"of the {WHERE}")
    per_run = client_traffic_estimates(selected, ack_runs, datagrams, packets, frames)
    if per_run.is_empty():
        raise MissingData(f"no ok run with ack_runs of the {WHERE}")
    table = eq3_summary(per_run).with_columns(
        pl.col("path").replace_strict(PATH_LABELS, default=pl.col("path")),
        pl.col("lossy").replace_strict(LOSS_LABELS, return_dtype=pl.Utf8).alias("loss"),
    ).drop("lossy")
    table = table.select("path", "loss", *[c for c in table.columns if c not in ("path", "loss")]).with_columns(
        pl.selectors.float().round(4)
    )
    note = (
        "A_total measured: the receiver's application-data ACKs (its qlog's reasons; handshake ACKs left out); A_del: "
        "those the delay timer sent; α: packets the timer ACKs covered (the receiver's own count) / AR; Eq. (4) as for "
        "Chrome (AR 2 for the first 100 packets, then the run's AR — our receiver uses one AR, so Eq. (4) shows what "
        "the two phases would add); Eq. (5): k = 1 (D), 3 (3A), 0 (NR) times the loss clusters L; percentages are "
        "client IP bytes / server IP bytes (Eq. (2) with S_bm the median ACK-only packet and V_crypt the client's "
        "handshake datagrams). "
        + STAND_INS
    )
    return Rendered(table, runs=selected, note=note, headers=EQ_HEADERS)


# -- Table 4, Fig. 6: download times ----------------------------------------------------------------------------------


def _paper_beside_ours(
    paper: pl.DataFrame, paper_value: str, ours: pl.DataFrame, ours_value: str, unit: str
) -> pl.DataFrame:
    """Tables 4 and 5: one row per (condition, AR), per path the paper's cell, ours and our run count side by side."""
    keys = ["path", "condition", "ack_ratio"]
    long = paper.rename({paper_value: "paper_value"}).join(
        ours.rename({ours_value: "ours_value"}), on=keys, how="full", coalesce=True
    )
    columns = []
    for path in ACKFREQ22_PATHS:
        label, here = PATH_LABELS[path], pl.col("path") == path
        columns += [pl.col("paper_value").filter(here).first().alias(f"{label} paper ({unit})"),
                    pl.col("ours_value").filter(here).first().alias(f"{label} ours ({unit})"),
                    pl.col("runs").filter(here).first().alias(f"{label} runs")]  # fmt: skip
    return long.group_by("condition", "ack_ratio").agg(columns)


# Table 4's row columns; the path columns are named as printed (_paper_beside_ours).
TAB04_HEADERS = {"condition": "Condition", "ack_ratio": "AR"}  # fmt: skip


@placeholder_when_missing
def ackfreq22_tab04_download_time(runs: pl.DataFrame, ack_runs: pl.DataFrame) -> Rendered:
    """Table 4: median time to download 1 MB (s) per AR and condition (no loss; 1 % loss with D, NR, 3A), per path, ours
    beside the paper's."""
    selected, drawn = download_times(runs, ack_runs)
    ours = drawn.group_by("path", "condition", "ack_ratio").agg(
        pl.col("download_s").median().round(2).alias("ours_s"), pl.len().alias("runs")
    )
    paper = paper_table("ackfreq22", "tab04").with_columns(
        pl.col("ack_ratio").cast(pl.Int64), pl.col("download_s").cast(pl.Float64)
    )
    order = {c: i for i, c in enumerate(["no loss", *[f"1 % loss {p}" for p in ACKFREQ22_REORDERING_POLICIES]])}
    table = (
        _paper_beside_ours(paper, "download_s", ours, "ours_s", "s")
        .with_columns(
            pl.col("condition").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("order")
        )
        .sort("order", "ack_ratio")
        .drop("order")
    )
    note = (
        "Download time: the client's first datagram to the last server datagram before its CONNECTION_CLOSE, at the "
        "client-side capture; median over runs (the paper: N = 50). 1 % loss: §5.6's random loss in both directions; "
        "the loss-free rows are the calibration of the path model (Table 1's measured loss is not emulated: "
        "path_profiles.csv, loss_model). "
        + STAND_INS
    )
    metric = "download_time_ms" if "download_time_ms" in selected.columns else None
    return Rendered(table, runs=selected, metric=metric, note=note, headers=TAB04_HEADERS)


@placeholder_when_missing
def ackfreq22_fig06_download_time(runs: pl.DataFrame, ack_runs: pl.DataFrame) -> Rendered:
    """Fig. 6: distribution of the 1 MB download time on the satellite path per AR, no loss vs 1 % loss (policy D)."""
    selected_all, drawn_all = download_times(runs, ack_runs)
    keep = (pl.col("path") == ACKFREQ22_SATELLITE) & (~pl.col("lossy") | (pl.col("ack_reordering") == "D"))
    selected = require_runs(selected_all.filter(keep), f"of the {WHERE}: satellite, AR 2/10/20")
    drawn = drawn_all.filter(keep)
    if drawn.is_empty():
        raise MissingData("no satellite download with a download time")
    setup_style()
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.0), sharey=False)
    for ax, lossy in zip(axes, (False, True), strict=True):
        part = drawn.filter(pl.col("lossy") == lossy)
        ratios = [r for r in ACKFREQ22_ACK_RATIOS if not part.filter(pl.col("ack_ratio") == r).is_empty()]
        if ratios:
            boxes = part.filter(pl.col("ack_ratio").is_in(ratios)).select(
                pl.format("AR {}", "ack_ratio").alias("ratio"), "download_s"
            )
            sns.boxplot(boxes.to_pandas(), x="ratio", y="download_s", order=[f"AR {r}" for r in ratios], width=0.5,
                        fill=False, color="black", linewidth=0.8, fliersize=3, ax=ax)  # fmt: skip
        ax.set_xlabel("")
        ax.set_title(f"satellite, {LOSS_LABELS[lossy]}" + (" (D)" if lossy else ""), fontsize=8)
        ax.set_ylabel("time to download 1 MB (s)")
    fig.tight_layout()  # the right panel's axis label clear of the left panel
    note = (
        "Download time as in Table 4; 1 % loss with the default reordering policy D (an ACK at once on reordering). "
        + STAND_INS
    )
    return Rendered(fig, runs=selected, note=note)


# -- Table 5: timer ACKs ----------------------------------------------------------------------------------------------


# Table 5's row columns; the path columns are named as printed (_paper_beside_ours).
TAB05_HEADERS = {"condition": "Condition", "ack_ratio": "AR"}  # fmt: skip


@placeholder_when_missing
def ackfreq22_tab05_timer_acks(runs: pl.DataFrame, ack_runs: pl.DataFrame) -> Rendered:
    """Table 5: median per-connection % of the receiver's application-data ACKs sent because the ACK-delay timer fired,
    per AR × loss × path (loss with policy D), ours beside the paper's."""
    selected = require_runs(
        ackfreq22_matrix_runs(runs).filter(~pl.col("lossy") | (pl.col("ack_reordering") == "D")),
        f"of the {WHERE} at AR 2, 10, 20",
    )
    drawn = measured_runs(selected, ack_runs, "acks_by_delay_timer", WHERE)
    application = (
        pl.col("acks_by_packet_threshold") + pl.col("acks_by_delay_timer") + pl.col("acks_by_reordering").fill_null(0)
    )
    ours = (
        drawn.with_columns(
            (100.0 * pl.col("acks_by_delay_timer") / application).alias("timer_percent"),
            pl.col("lossy").replace_strict(LOSS_LABELS, return_dtype=pl.Utf8).alias("condition"),
        )  # fmt: skip
        .group_by("path", "condition", "ack_ratio")
        .agg(pl.col("timer_percent").median().round(1).alias("ours_percent"), pl.len().alias("runs"))
    )
    paper = paper_table("ackfreq22", "tab05").with_columns(
        pl.col("ack_ratio").cast(pl.Int64), pl.col("timer_percent").cast(pl.Float64)
    )
    table = _paper_beside_ours(paper, "timer_percent", ours, "ours_percent", "%").sort(
        pl.col("condition") != "no loss", "ack_ratio"
    )
    note = (
        "Timer share: ACKs the receiver's qlog says the delay timer sent (d = 25 ms) over its application-data ACKs "
        "(the "
        "handshake's left out), per connection, median over runs; 1 % loss with policy D. " + STAND_INS
    )
    return Rendered(table, runs=selected, note=note, headers=TAB05_HEADERS)


# -- Fig. 5: cwnd ---------------------------------------------------------------------------------------------------

FIG5_ACK_RATIOS = (2, 10)


@placeholder_when_missing
def ackfreq22_fig05_cwnd(runs: pl.DataFrame, metrics_logged: RunRows) -> Rendered:
    """Fig. 5: the server's congestion window over time, AR 2 vs AR 10, satellite, no loss, an unpaced sender (the
    paper's quicly without pacing shows one step per round trip)."""
    what = f"{WHERE}: satellite, no loss, AR 2 or 10, an unpaced sender (runs.pacing = false)"
    if "pacing" not in runs.columns:
        raise MissingData(f"no runs.pacing column, so no run of the {what}")
    # Any receiver: the unpaced sender (quiche's NewReno) sends to ngtcp2, whose ACK delay is its own default
    # (ack_delay_ms null: ngtcp2's max_ack_delay, 25 ms, the paper's d).
    candidates = ackfreq22_runs(runs, receivers=None, paced=False).filter(
        (pl.col("path") == ACKFREQ22_SATELLITE) & ~pl.col("lossy") & pl.col("ack_ratio").is_in(list(FIG5_ACK_RATIOS))
        & pl.col("ack_delay_ms").fill_null(25.0).eq(25.0)
    )  # fmt: skip
    selected = require_runs(candidates, f"of the {what}")
    ok = ok_runs(selected).with_columns(pl.format("AR {}", pl.col("ack_ratio")).alias("configuration"))
    cwnd = cwnd_of_runs(ok, metrics_logged)
    if cwnd.is_empty():
        raise MissingData(f"no congestion window in the server qlogs of the {what}")
    fig = cwnd_figure(cwnd, ok)
    note = "Every run's window as the sender's qlog logged it (its recovery metrics updates), no pacing. " + STAND_INS
    return Rendered(fig, runs=selected, note=note)
