"""The imc24 scan results (§4.3, Appendices D and G) from ``scan_connections``: pure functions, one per quantity.

Where the authors' code computes something other than what the paper says (``../shared/SCAN.md``, points 1–6),
the function computes the paper's quantity and, with ``definition="authors"``, the authors' version, so that a
paper number can be explained by the code that made it:

* IACK (Table 1): ours = an Initial ACK in a datagram *before* the ServerHello's, among connections with both;
  the authors' = "not (first ACK datagram is the first SH datagram)" over connections with an ACK or an SH, which
  also counts a ServerHello sent first (point 3) and an ACK without any ServerHello.
* IACK→SH delay (Fig. 8, 14): ours = sh_time − ack_time of IACK connections (coalesced: 0); the authors' take the
  absolute gap (a ServerHello first counts) and lose padded instant ACKs to a string sort (point 2).
* Fig. 10: ours compares the first ACK Delay with the connection's RTT estimate; the authors' subtract it from the
  ACK→SH gap (point 1: for coalesced ACK+SH that is just −ACK Delay).
"""

from __future__ import annotations

import re
from typing import Literal

import polars as pl

Definition = Literal["paper", "authors"]

TOPLIST = "toplist"
SERIES = "series"
# Kinds of a connection's first server datagrams (scan_connections.first_datagram_class).
IACK, COALESCED, SH_FIRST, NO_SH = "iack", "coalesced", "sh_first", "no_sh"
# The lines of Fig. 9 / 15: the instant ACK, the ServerHello that follows it, and a coalesced ACK+ServerHello.
SERIES_LINES = {"ACK": "instant ACK", "SH": "ServerHello after an instant ACK", "ACK,SH": "coalesced ACK+ServerHello"}


def place_key(name: str) -> str:
    """A vantage point's name reduced to letters: 'Sao Paulo' (the paper), 'sao-paulo' and 'saopaulo' are one place."""
    return re.sub(r"[^a-z]", "", name.lower())


def measurement_kinds(scan: pl.DataFrame) -> pl.DataFrame:
    """Per measurement (scan_id): 'series' when every target went to one address (the authors' Cloudflare series
    sends all its names to one Cloudflare address), else 'toplist' (a top list resolves to many addresses)."""
    return scan.group_by("scan_id").agg(
        measurement_kind=pl.when(pl.col("server_address").drop_nulls().n_unique() == 1)
        .then(pl.lit(SERIES))
        .otherwise(pl.lit(TOPLIST))
    )


def with_measurement_kind(scan: pl.DataFrame) -> pl.DataFrame:
    return scan.join(measurement_kinds(scan), on="scan_id", how="left")


def toplist(scan: pl.DataFrame) -> pl.DataFrame:
    """Connections of the top-list measurements (Table 1, Fig. 8, 10, 14)."""
    return with_measurement_kind(scan).filter(pl.col("measurement_kind") == TOPLIST)


def series(scan: pl.DataFrame) -> pl.DataFrame:
    """Connections of the single-address time series (Fig. 9, 15)."""
    return with_measurement_kind(scan).filter(pl.col("measurement_kind") == SERIES)


def is_iack(definition: Definition = "paper") -> pl.Expr:
    """Whether a connection counts as instant ACK; null where it is not counted at all (see the module doc)."""
    kind = pl.col("first_datagram_class")
    if definition == "paper":
        return pl.when(kind.is_in([IACK, COALESCED, SH_FIRST])).then(kind == IACK)
    answered = pl.col("ack_time_ms").is_not_null() | pl.col("sh_time_ms").is_not_null()
    return pl.when(answered).then(kind != COALESCED)


def iack_share_per_measurement(scan: pl.DataFrame, definition: Definition = "paper") -> pl.DataFrame:
    """Per vantage point, day and CDN: domains (distinct SNI counted), IACK connections and share in percent."""
    counted = scan.with_columns(iack=is_iack(definition)).drop_nulls("iack")
    return (
        counted.group_by("vantage_point", "scan_date", "cdn")
        .agg(domains=pl.col("sni").n_unique(), connections=pl.len(), iack_connections=pl.col("iack").sum())
        .with_columns(iack_share_percent=100.0 * pl.col("iack_connections") / pl.col("connections"))
        .sort("cdn", "vantage_point", "scan_date")
    )


def iack_deployment(scan: pl.DataFrame, definition: Definition = "paper") -> pl.DataFrame:
    """imc24 Table 1 over the top-list measurements: per CDN the most domains seen in one (vantage point, day),
    the largest IACK share and its variation (max − min over all vantage point × day combinations)."""
    per = iack_share_per_measurement(toplist(scan), definition)
    return (
        per.group_by("cdn")
        .agg(
            domains=pl.col("domains").max(),
            iack_share_percent=pl.col("iack_share_percent").max(),
            variation_percent=pl.col("iack_share_percent").max() - pl.col("iack_share_percent").min(),
            measurements=pl.len(),
            connections=pl.col("connections").sum(),
        )
        .sort("cdn")
    )


def configured_iack_share(scan: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """Per CDN, the IACK share (paper's definition, max over vantage point × day) the emulation *configured*:
    the same computation on scan_truth's expected classes (empty for a real scan)."""
    if truth.is_empty():
        return pl.DataFrame(schema={"cdn": pl.Utf8, "configured_iack_share_percent": pl.Float64})
    configured = toplist(scan).select("scan_id", "target_id", "vantage_point", "scan_date", "cdn", "sni").join(
        truth.select("scan_id", "target_id", first_datagram_class="expected_class"), on=["scan_id", "target_id"]
    )
    per = iack_share_per_measurement(configured)
    return per.group_by("cdn").agg(configured_iack_share_percent=pl.col("iack_share_percent").max()).sort("cdn")


def iack_to_sh_delays(scan: pl.DataFrame, definition: Definition = "paper") -> pl.DataFrame:
    """One row per connection with an ACK and a ServerHello: its IACK→SH delay (ms; 0 when coalesced).

    The authors' version: |SH − ACK| (a ServerHello first counts as IACK) and no padded instant ACK (their row
    choice drops it, SCAN.md point 2)."""
    both = scan.filter(pl.col("first_datagram_class").is_in([IACK, COALESCED, SH_FIRST]))
    if definition == "paper":
        return both.filter(pl.col("first_datagram_class") != SH_FIRST).with_columns(
            iack_to_sh_ms=pl.when(pl.col("first_datagram_class") == COALESCED)
            .then(0.0)
            .otherwise(pl.col("ack_to_sh_ms"))
        )
    return both.filter(~pl.col("iack_padded").fill_null(False)).with_columns(
        iack_to_sh_ms=pl.when(pl.col("first_datagram_class") == COALESCED)
        .then(0.0)
        .otherwise(pl.col("ack_to_sh_ms").abs())
    )


def median_iack_ahead(scan: pl.DataFrame, definition: Definition = "paper") -> pl.DataFrame:
    """Per CDN, the median time an instant ACK arrives ahead of the ServerHello (IACK connections only)."""
    delays = iack_to_sh_delays(toplist(scan), definition).filter(pl.col("first_datagram_class") != COALESCED)
    return (
        delays.group_by("cdn")
        .agg(median_iack_to_sh_ms=pl.col("iack_to_sh_ms").median(), connections=pl.len())
        .sort("cdn")
    )


def ack_delay_vs_rtt(scan: pl.DataFrame) -> pl.DataFrame:
    """imc24 Fig. 10 / Appendix D, per connection with a first Initial ACK: ours = RTT estimate − first ACK Delay
    (negative: the server held its ACK longer than a round trip); the authors' = ACK→SH gap − ACK Delay."""
    kinds = {IACK: "instant ACK", COALESCED: "coalesced ACK+SH"}
    return (
        toplist(scan)
        .filter(pl.col("first_datagram_class").is_in(list(kinds)) & pl.col("first_ack_delay_ms").is_not_null())
        .with_columns(
            panel=pl.col("first_datagram_class").replace_strict(kinds),
            rtt_minus_ack_delay_ms=pl.col("rtt_estimate_ms") - pl.col("first_ack_delay_ms"),
            authors_gap_minus_ack_delay_ms=pl.col("ack_to_sh_ms").abs().fill_null(0.0) - pl.col("first_ack_delay_ms"),
        )
    )


def ack_delay_exceeds_rtt(scan: pl.DataFrame, definition: Definition = "paper") -> pl.DataFrame:
    """Per CDN and panel: share (%) of connections whose ACK Delay exceeds the RTT (ours) or whose authors'
    difference is negative (for coalesced connections: an ACK Delay above 0)."""
    column = "rtt_minus_ack_delay_ms" if definition == "paper" else "authors_gap_minus_ack_delay_ms"
    return (
        ack_delay_vs_rtt(scan)
        .drop_nulls(column)
        .group_by("cdn", "first_datagram_class")
        .agg(share_percent=100.0 * (pl.col(column) < 0).mean(), connections=pl.len())
        .sort("cdn", "first_datagram_class")
    )


def home_pops(scan: pl.DataFrame) -> pl.DataFrame:
    """Per vantage point, the PoP of its own city: the Cf-Ray PoP that answers most of its series connections
    (the authors keep only responses from that PoP)."""
    answered = series(scan).drop_nulls("cf_ray_pop")
    return (
        answered.group_by("vantage_point", "cf_ray_pop")
        .len()
        .sort("vantage_point", "len", "cf_ray_pop", descending=[False, True, False])
        .group_by("vantage_point", maintain_order=True)
        .agg(home_pop=pl.col("cf_ray_pop").first())
    )


def series_from_home_pop(scan: pl.DataFrame, keep_unknown_pop: bool = False) -> pl.DataFrame:
    """Series connections answered by the vantage point's own PoP (Cloudflare only when CDNs are known); with
    ``keep_unknown_pop`` also those without a Cf-Ray (no HTTP response: e.g. an instant ACK, then no ServerHello)."""
    rows = series(scan)
    if rows["cdn"].drop_nulls().len():
        rows = rows.filter(pl.col("cdn") == "Cloudflare")
    home = pl.col("cf_ray_pop") == pl.col("home_pop")
    return rows.join(home_pops(scan), on="vantage_point").filter(
        home | pl.col("cf_ray_pop").is_null() if keep_unknown_pop else home
    )


def series_latency(scan: pl.DataFrame) -> pl.DataFrame:
    """imc24 Fig. 9 / 15: per vantage point, hour and line ('ACK', 'SH', 'ACK,SH'), the median time from the
    client's first Initial to that datagram, with the 25th and 75th percentiles (the 50 % interval)."""
    rows = series_from_home_pop(scan).with_columns(
        hour=pl.from_epoch(pl.col("measurement_time_ns"), time_unit="ns").dt.truncate("1h")
    )
    lines = pl.concat(
        [
            rows.filter(pl.col("first_datagram_class") == IACK).select(
                "vantage_point", "hour", line=pl.lit("ACK"), time_ms=pl.col("ack_time_ms")
            ),
            rows.filter(pl.col("first_datagram_class") == IACK).select(
                "vantage_point", "hour", line=pl.lit("SH"), time_ms=pl.col("sh_time_ms")
            ),
            rows.filter(pl.col("first_datagram_class") == COALESCED).select(
                "vantage_point", "hour", line=pl.lit("ACK,SH"), time_ms=pl.col("sh_time_ms")
            ),
        ]
    ).drop_nulls("time_ms")
    return (
        lines.group_by("vantage_point", "hour", "line")
        .agg(
            median_ms=pl.col("time_ms").median(),
            p25_ms=pl.col("time_ms").quantile(0.25, "linear"),
            p75_ms=pl.col("time_ms").quantile(0.75, "linear"),
            connections=pl.len(),
        )
        .sort("vantage_point", "line", "hour")
    )


def coalesced_share_per_domain(scan: pl.DataFrame) -> pl.DataFrame:
    """Series connections per domain (SNI): share coalesced (%) among those with a ServerHello, and how many
    had an instant ACK but no ServerHello (imc24 §4.3: udemy, kickstarter)."""
    rows = series_from_home_pop(scan, keep_unknown_pop=True)
    return (
        rows.group_by("sni")
        .agg(
            connections=pl.len(),
            with_sh=pl.col("first_datagram_class").is_in([IACK, COALESCED, SH_FIRST]).sum(),
            coalesced=(pl.col("first_datagram_class") == COALESCED).sum(),
            iack_without_sh=((pl.col("first_datagram_class") == NO_SH) & pl.col("ack_time_ms").is_not_null()).sum(),
        )
        .with_columns(
            coalesced_share_percent=pl.when(pl.col("with_sh") > 0).then(100.0 * pl.col("coalesced") / pl.col("with_sh"))
        )
        .sort("sni")
    )


def series_iack_to_sh(scan: pl.DataFrame) -> pl.DataFrame:
    """Per vantage point: median IACK→SH delay of the series' instant ACKs from the home PoP."""
    rows = series_from_home_pop(scan).filter(pl.col("first_datagram_class") == IACK)
    return (
        rows.group_by("vantage_point")
        .agg(median_iack_to_sh_ms=pl.col("ack_to_sh_ms").median(), connections=pl.len())
        .sort("vantage_point")
    )
