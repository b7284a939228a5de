"""imc24's Internet-scan artefacts (§4.3, Appendices D and G): Fig. 8, 9, 10, 14, 15 and Tables 1 and 5, drawn from
``scan_connections`` (any scan in the authors' layout) with the quantities of ``quicack.metrics.scan_quantities``. On an
emulated scan (``scan_truth`` not empty) each artefact also shows what the emulation configured."""

from __future__ import annotations

from typing import cast

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from quicack.figures.common import Rendered, setup_style
from quicack.metrics import scan_quantities as metric
from quicack.reference import cdn_asn, cdn_names, paper_table

# What the scan artefacts draw (rendering.txt counts them).
SCAN_CONNECTION = "scan connection"

# The paper's Fig. 8: Sao Paulo, the first scan day, without the CDNs that send no instant ACK.
FIG08_VANTAGE_POINT = "Sao Paulo"
FIG08_LEFT_OUT = ("Fastly", "Meta", "Microsoft")
# Where the log axis of the CDFs starts: a coalesced ACK+ServerHello (0 ms) is drawn at this delay.
CDF_FLOOR_MS = 1e-3
LINE_COLORS = {"ACK": "tab:orange", "SH": "#f5b36b", "ACK,SH": "tab:blue"}
NO_SCAN = "no scan (config scan_dir)"


def _cdns(frame: pl.DataFrame) -> list[str]:
    present = set(frame["cdn"].drop_nulls().to_list())
    order = cdn_names()
    return [c for c in order if c in present] + sorted(present - set(order))


def _scan_note(scan: pl.DataFrame, what: str) -> str:
    return (
        f"{what}: {scan.height} connections in {scan['scan_id'].n_unique()} measurements from "
        f"{scan['vantage_point'].n_unique()} vantage point(s) "
        f"({', '.join(sorted(scan['vantage_point'].unique().to_list()))})."
    )


def _missing(scan: pl.DataFrame, needed: str) -> str:
    if scan.is_empty():
        return NO_SCAN
    return needed


def _cdf(ax: plt.Axes, values: np.ndarray, label: str) -> None:
    sns.ecdfplot(x=np.maximum(values, CDF_FLOOR_MS), ax=ax, label=label)


def _configured_label(scan: pl.DataFrame, truth: pl.DataFrame) -> dict[str, str]:
    """Per CDN, ' (IACK measured x %, configured y %)' for the legend of an emulated scan; '' for a real one."""
    if truth.is_empty():
        return {}
    measured = metric.iack_share_per_measurement(scan).group_by("cdn").agg(
        pl.col("iack_connections").sum() * 100.0 / pl.col("connections").sum()
    )
    configured = scan.select("scan_id", "target_id", "cdn").join(
        truth.select("scan_id", "target_id", first_datagram_class="expected_class"), on=["scan_id", "target_id"]
    )
    configured = (
        configured.with_columns(iack=metric.is_iack())
        .drop_nulls("iack")
        .group_by("cdn")
        .agg(pl.col("iack").mean() * 100.0)
    )
    both = measured.join(configured, on="cdn", how="full", coalesce=True)
    return {
        cdn: f" (IACK {m:.0f} %, configured {c:.0f} %)" if m is not None and c is not None else ""
        for cdn, m, c in both.select("cdn", "iack_connections", "iack").iter_rows()
    }


def _draw_iack_cdf(ax: plt.Axes, scan: pl.DataFrame, truth: pl.DataFrame, left_out: tuple[str, ...] = ()) -> None:
    delays = metric.iack_to_sh_delays(scan)
    labels = _configured_label(scan, truth)
    for cdn in _cdns(delays):
        if cdn in left_out:
            continue
        values = delays.filter(pl.col("cdn") == cdn)["iack_to_sh_ms"].to_numpy()
        if len(values):
            _cdf(ax, values, f"{cdn}{labels.get(cdn, '')}")
    ax.set_xscale("log")
    ax.set_xlim(CDF_FLOOR_MS / 2, 2e3)
    ax.set_ylim(-0.03, 1.03)
    ax.set_ylabel("CDF")


def imc24_fig08_iack_sh_cdf(
    scan: pl.DataFrame, truth: pl.DataFrame, vantage_point: str = FIG08_VANTAGE_POINT, day: str | None = None
) -> Rendered:
    """imc24 Fig. 8: CDF of the delay between the first Initial ACK and the ServerHello per CDN, one vantage point
    on one top-list day (the paper: Sao Paulo, 2024-08-07; Fastly, Meta, Microsoft left out). A coalesced
    ACK+ServerHello is 0 ms, drawn at the axis' left end."""
    top = metric.toplist(scan)
    if top.is_empty():
        return Rendered(
            None, missing=_missing(scan, "no top-list measurement (every measurement sends all targets to one address)")
        )
    places = {metric.place_key(vp): vp for vp in top["vantage_point"].unique().to_list()}
    chosen = places.get(metric.place_key(vantage_point)) or sorted(places.values())[0]
    at_vp = top.filter(pl.col("vantage_point") == chosen)
    day = day or cast(str | None, at_vp["scan_date"].drop_nulls().min())  # a text column (schema.scan_tables)
    drawn = at_vp.filter(pl.col("scan_date") == day)
    setup_style()
    fig, ax = plt.subplots(figsize=(6, 2.6))
    _draw_iack_cdf(ax, drawn, truth, FIG08_LEFT_OUT)
    ax.set_xlabel("Delay between ACK and SH [ms]")
    ax.set_title(f"{chosen}, {day}", fontsize=9)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    swapped = (
        ""
        if metric.place_key(chosen) == metric.place_key(vantage_point)
        else f" The paper's vantage point {vantage_point} is not in this scan; drawn: {chosen}."
    )
    note = (
        _scan_note(drawn, f"Top-list measurement of {chosen} on {day}")
        + f" Connections with an Initial ACK and a ServerHello; coalesced = 0 ms at {CDF_FLOOR_MS:g} ms; ServerHello "
          "before the ACK "
        f"({drawn.filter(pl.col('first_datagram_class') == metric.SH_FIRST).height} here) left out (the authors count "
        f"them as IACK). Left out as in the paper: {', '.join(FIG08_LEFT_OUT)}.{swapped}"
    )
    return Rendered(fig, note=note, drawn_from=(drawn.height, SCAN_CONNECTION))


def imc24_fig14_iack_sh_cdf_per_vantage_point(scan: pl.DataFrame, truth: pl.DataFrame) -> Rendered:
    """imc24 Fig. 14: Fig. 8 for every vantage point (one panel each), all top-list days."""
    top = metric.toplist(scan)
    if top.is_empty():
        return Rendered(None, missing=_missing(scan, "no top-list measurement"))
    vantage_points = sorted(top["vantage_point"].unique().to_list())
    setup_style()
    fig, axes = plt.subplots(
        len(vantage_points), 1, figsize=(6, 1.9 * len(vantage_points) + 0.6), sharex=True, squeeze=False
    )
    for ax, vp in zip(axes[:, 0], vantage_points, strict=True):
        _draw_iack_cdf(ax, top.filter(pl.col("vantage_point") == vp), truth)
        ax.text(
            0.99,
            0.05,
            vp,
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=8,
            bbox={"facecolor": "lightgrey", "edgecolor": "none"},
        )
        ax.legend(fontsize=6, ncol=2, loc="upper left")
    axes[-1, 0].set_xlabel("Delay between ACK and SH [ms]")
    fig.tight_layout()
    note = _scan_note(top, "Top-list measurements, every day") + " Coalesced = 0 ms, drawn at the left end."
    return Rendered(fig, note=note, drawn_from=(top.height, SCAN_CONNECTION))


def imc24_fig10_ack_delay_vs_rtt(scan: pl.DataFrame) -> Rendered:
    """imc24 Fig. 10 (Appendix D): per CDN, the connection's RTT estimate minus the first ACK Delay (negative: the
    ACK Delay exceeds a round trip), (a) coalesced ACK+SH and (b) instant ACK; the authors' quantity (ACK→SH gap
    minus ACK Delay, SCAN.md point 1) as hollow boxes beside it."""
    rows = metric.ack_delay_vs_rtt(scan)
    if rows.is_empty():
        return Rendered(None, missing=_missing(scan, "no top-list connection with a decoded first Initial ACK"))
    setup_style()
    panels = [("coalesced", "(a) coalesced ACK and ServerHello"), ("iack", "(b) instant ACK")]
    cdns = _cdns(rows)
    fig, axes = plt.subplots(1, 2, figsize=(9, 0.45 * len(cdns) + 1.4), sharey=True)
    # One long frame per panel: ours (filled boxes) and the authors' quantity (hollow) per CDN.
    long = pl.concat(
        [rows.select("first_datagram_class", "cdn", pl.col(column).alias("ms"), pl.lit(label).alias("quantity"))
         for column, label in (("authors_gap_minus_ack_delay_ms", "authors"), ("rtt_minus_ack_delay_ms", "ours"))]
    ).drop_nulls("ms")  # fmt: skip
    for ax, (kind, title) in zip(axes, panels, strict=True):
        part = long.filter(pl.col("first_datagram_class") == kind)
        if not part.is_empty():
            sns.boxplot(part.to_pandas(), x="ms", y="cdn", hue="quantity", order=cdns, hue_order=["authors", "ours"],
                        orient="h", palette={"authors": "white", "ours": "tab:blue"}, width=0.7, linecolor="black",
                        linewidth=0.8, fliersize=2, legend=False, ax=ax)  # fmt: skip
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_title(title, fontsize=9)
        ax.set_yticks(range(len(cdns)), cdns)
        ax.set_ylabel("")
        ax.set_ylim(len(cdns) - 0.5, -0.5)
        ax.set_xlabel("RTT − ACK Delay [ms]  (filled: ours; hollow: authors' ACK→SH − ACK Delay)", fontsize=7)
    fig.tight_layout()
    note = (
        _scan_note(metric.toplist(scan), "Top-list measurements")
        + " RTT = capture time of the first server Initial ACK minus that of the client Initial it acknowledges, minus "
          "its ACK Delay; "
        "ACK Delay decoded with exponent 3 (the server's exponent arrives later, in EncryptedExtensions). The authors' "
        "quantity for a coalesced ACK+SH is just −ACK Delay, so 'ACK Delay > RTT' there means 'ACK Delay > 0' (SCAN.md "
        "point 1)."
    )
    return Rendered(fig, note=note, drawn_from=(rows.height, SCAN_CONNECTION))


def _draw_series(ax: plt.Axes, lines: pl.DataFrame) -> None:
    for line in metric.SERIES_LINES:
        part = lines.filter(pl.col("line") == line).sort("hour")
        if part.is_empty():
            continue
        hours = part["hour"].to_list()
        ax.plot(hours, part["median_ms"].to_numpy(), color=LINE_COLORS[line], label=line, linewidth=1.4)
        ax.fill_between(
            hours, part["p25_ms"].to_numpy(), part["p75_ms"].to_numpy(), color=LINE_COLORS[line], alpha=0.2, linewidth=0
        )
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H"))


def _configured_series_note(scan: pl.DataFrame, truth: pl.DataFrame) -> str:
    if truth.is_empty():
        return ""
    rows = metric.series_from_home_pop(scan).join(
        truth.select("scan_id", "target_id", "expected_class"), on=["scan_id", "target_id"]
    )
    agree = rows.filter(pl.col("expected_class") == pl.col("first_datagram_class")).height
    return f" Configured vs measured first-datagram kind (scan_truth): {agree} of {rows.height} connections agree."


def _series_note(scan: pl.DataFrame) -> str:
    pops = metric.home_pops(scan)
    named = ", ".join(f"{vp} → {pop}" for vp, pop in pops.iter_rows())
    return (
        _scan_note(metric.series(scan), "Single-address series measurements")
        + " Only responses of the vantage point's own PoP (the Cf-Ray PoP answering most of its connections: "
          f"{named}). "
        "Hourly median and 25–75th percentiles of the time from the client's first Initial to: ACK = the instant ACK, "
        "SH = the ServerHello after it, ACK,SH = a coalesced ACK+ServerHello. Hours are UTC (SCAN.md point 7)."
    )


def imc24_fig09_cloudflare_series(
    scan: pl.DataFrame, truth: pl.DataFrame, vantage_point: str = FIG08_VANTAGE_POINT
) -> Rendered:
    """imc24 Fig. 9: the Cloudflare series at one vantage point (the paper: Sao Paulo): hourly median reception
    time of the instant ACK, the ServerHello after it, and a coalesced ACK+ServerHello."""
    lines = metric.series_latency(scan)
    if lines.is_empty():
        return Rendered(None, missing=_missing(scan, "no single-address series measurement with Cf-Ray PoPs"))
    places = {metric.place_key(vp): vp for vp in lines["vantage_point"].unique().to_list()}
    chosen = places.get(metric.place_key(vantage_point)) or sorted(places.values())[0]
    setup_style()
    fig, ax = plt.subplots(figsize=(6, 2.4))
    _draw_series(ax, lines.filter(pl.col("vantage_point") == chosen))
    ax.set_ylabel("Median time since\nClientHello [ms]")
    ax.set_xlabel("Date MM-DD HH (UTC)")
    ax.set_title(chosen, fontsize=9)
    ax.legend(ncol=3, fontsize=7, loc="upper left")
    fig.tight_layout()
    at_vp = scan.filter(pl.col("vantage_point") == chosen)
    return Rendered(fig, note=_series_note(at_vp) + _configured_series_note(scan, truth),
                    drawn_from=(metric.series(at_vp).height, SCAN_CONNECTION))


def imc24_fig15_cloudflare_series_per_vantage_point(scan: pl.DataFrame, truth: pl.DataFrame) -> Rendered:
    """imc24 Fig. 15: Fig. 9 for every vantage point, one panel each, shared axes."""
    lines = metric.series_latency(scan)
    if lines.is_empty():
        return Rendered(None, missing=_missing(scan, "no single-address series measurement with Cf-Ray PoPs"))
    vantage_points = sorted(lines["vantage_point"].unique().to_list())
    setup_style()
    fig, axes = plt.subplots(
        len(vantage_points), 1, figsize=(6, 1.6 * len(vantage_points) + 0.8), sharex=True, sharey=True, squeeze=False
    )
    for ax, vp in zip(axes[:, 0], vantage_points, strict=True):
        _draw_series(ax, lines.filter(pl.col("vantage_point") == vp))
        ax.text(
            0.99,
            0.08,
            vp,
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=8,
            bbox={"facecolor": "lightgrey", "edgecolor": "none"},
        )
    axes[0, 0].legend(ncol=3, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0))
    axes[-1, 0].set_xlabel("Date MM-DD HH (UTC)")
    fig.supylabel("Median time since ClientHello [ms]", fontsize=9)
    fig.tight_layout()
    return Rendered(fig, note=_series_note(scan) + _configured_series_note(scan, truth),
                    drawn_from=(metric.series(scan).height, SCAN_CONNECTION))


# Table 1's columns and their headers as a paper prints them (the CSV keeps the names).
TAB01_HEADERS = {
    "cdn": "CDN", "domains": "Domains", "iack_share_percent": "IACK share (%)", "variation_percent": "Variation (%)",
    "authors_iack_share_percent": "IACK share, authors' code (%)",
    "configured_iack_share_percent": "IACK share configured (%)", "measurements": "Measurements",
    "connections": "Connections", "paper_domains": "Paper: domains",
    "paper_iack_share_percent": "Paper: IACK share (%)",
    "paper_variation_percent": "Paper: variation (%)",
}  # fmt: skip


def imc24_tab01_iack_deployment(scan: pl.DataFrame, truth: pl.DataFrame) -> Rendered:
    """imc24 Table 1: per CDN the domains, the largest IACK share over vantage point × day and its variation; ours
    by the paper's definition and by the authors' code (SCAN.md point 3), the configured share on an emulated
    scan, and the paper's values (data/reference/imc24_tab01.csv)."""
    if metric.toplist(scan).is_empty():
        return Rendered(None, missing=_missing(scan, "no top-list measurement"))
    ours = metric.iack_deployment(scan)
    authors = metric.iack_deployment(scan, "authors").select("cdn", authors_iack_share_percent="iack_share_percent")
    order = cdn_names()
    paper = paper_table("imc24", "tab01").with_columns(
        pl.col("paper_domains", "paper_iack_share_percent", "paper_variation_percent").cast(pl.Float64)
    )
    table = (
        paper.join(ours, on="cdn", how="full", coalesce=True)
        .join(authors, on="cdn", how="left")
        .join(metric.configured_iack_share(scan, truth), on="cdn", how="left")
        .with_columns(pl.col("iack_share_percent", "variation_percent", "authors_iack_share_percent",
                             "configured_iack_share_percent").round(1))
        .select(list(TAB01_HEADERS))
        .sort(pl.col("cdn").replace_strict({c: i for i, c in enumerate(order)}, default=len(order)), "cdn")
    )  # fmt: skip
    note = (
        _scan_note(metric.toplist(scan), "Top-list measurements")
        + " IACK share = instant ACK (ACK datagram before the ServerHello's) among connections with both, per vantage "
          "point × "
        "day; largest over them; variation = largest − smallest. authors_iack_share_percent: their 'not (first ACK "
        "datagram = first SH datagram)' over answered connections (a ServerHello first, or an ACK without ServerHello, "
        "counts as IACK). configured: what the emulation set up (empty for a real scan). CDN by origin AS (Table 5). "
        "Empty cells: no connection of that CDN with an Initial ACK and a ServerHello in this scan (e.g. a host that "
        "closes before its ServerHello)."
    )
    return Rendered(table, note=note, drawn_from=(metric.toplist(scan).height, SCAN_CONNECTION), headers=TAB01_HEADERS)


# Table 5's columns and their headers as a paper prints them (the CSV keeps the names).
TAB05_HEADERS = {
    "cdn": "CDN", "asn": "AS number", "connections": "Connections", "domains": "Domains", "source": "Source",
}  # fmt: skip


def imc24_tab05_cdn_asn(scan: pl.DataFrame) -> Rendered:
    """imc24 Table 5: the CDN → origin AS mapping used to name CDNs (data/reference/cdn_asn.csv), with the
    connections of this scan per AS."""
    mapping = cdn_asn()
    seen = (
        scan.drop_nulls("origin_asn").group_by("origin_asn").agg(connections=pl.len(), domains=pl.col("sni").n_unique())
        if not scan.is_empty()
        else pl.DataFrame(schema={"origin_asn": pl.Int64, "connections": pl.UInt32, "domains": pl.UInt32})
    )
    table = (
        mapping.join(seen, left_on="asn", right_on="origin_asn", how="left")
        .with_columns(pl.col("connections", "domains").fill_null(0))
        .select(list(TAB05_HEADERS))
    )
    unmapped = seen.join(mapping, left_on="origin_asn", right_on="asn", how="anti")
    note = (
        "AS numbers as printed in imc24 Table 5; any other AS is 'Others' (the authors' code also maps AS 19527 to "
        "Google, which the table does not list; we follow the table). connections / domains: this scan's connections "
        f"to that AS. Other ASes in this scan: {unmapped.height} "
        f"({unmapped['connections'].sum() if unmapped.height else 0} connections)."
    )
    return Rendered(table, note=note, drawn_from=(scan.height, SCAN_CONNECTION), headers=TAB05_HEADERS)
